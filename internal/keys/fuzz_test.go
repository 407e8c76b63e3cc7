package keys

import (
	"math"
	"testing"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// gen builds values from fuzz bytes. Its alphabets are small on purpose, so
// that two generated values are often equal or differ late.
type gen struct {
	b []byte
	i int
}

func (g *gen) byte() byte {
	if g.i >= len(g.b) {
		return 0
	}
	c := g.b[g.i]
	g.i++
	return c
}

var numbers = []any{
	0, math.Copysign(0, -1), 1, -1, 1.0, -1.0, 2, 2.5, -2.5, int8(-128), uint8(255), float32(0.1), 0.1,
	float32(math.NaN()), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64,
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	int64(math.MaxInt64), int64(math.MinInt64), uint64(math.MaxUint64), uint64(1 << 63), 9223372036854775808.0,
	-9223372036854775808.0, 18446744073709551616.0, int64(1<<53 + 1), float64(1 << 53), uint32(7), int16(7),
	1e-300, 3.0e20, float32(3.0e20),
}

var strs = []string{"", "a", "a\x00", "a\x00\x00", "a\x01", "ab", "b", "\xff", "\x00", "é"}

var times = []time.Time{
	time.Unix(0, 0), time.Unix(-1, 999_999_999), time.Unix(0, 1), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 1, 1, 1, 0, 0, 0, time.FixedZone("X", 3600)), {},
}

func (g *gen) value(depth int) any {
	c := g.byte()
	kind := c % 16
	if depth >= 4 && kind >= 11 {
		kind %= 11
	}
	pick := int(c >> 4)
	switch kind {
	case 0:
		return nil
	case 1, 2, 3:
		return numbers[(pick+16*int(g.byte()))%len(numbers)]
	case 4, 5:
		return strs[pick%len(strs)]
	case 6:
		return pick%2 == 1
	case 7:
		return times[pick%len(times)]
	case 8:
		return codec.ObjectID{byte(pick % 3), 9: byte(pick / 3)}
	case 9:
		b := make([]byte, pick%3)
		for i := range b {
			b[i] = g.byte() % 3 * 0x7f
		}
		return b
	case 10:
		return []int{pick % 3, pick / 8}[:pick%3]
	case 11, 12:
		m := map[string]any{}
		for range pick % 4 {
			m[strs[int(g.byte())%len(strs)]] = g.value(depth + 1)
		}
		return m
	case 13, 14:
		a := make([]any, pick%4)
		for i := range a {
			a[i] = g.value(depth + 1)
		}
		return a
	}
	// A typed slice of documents or strings.
	if pick%2 == 0 {
		out := make([]map[string]any, pick%3)
		for i := range out {
			out[i] = map[string]any{strs[pick%len(strs)]: g.value(depth + 1)}
		}
		return out
	}
	return []string{strs[pick%len(strs)], strs[int(g.byte())%len(strs)]}[:pick%3]
}

// FuzzKeyOrder checks that keys order exactly as query.Compare orders
// values, for pairs of random nested values (and their descending and
// compound forms, see checkPair), and that equal values share a key.
func FuzzKeyOrder(f *testing.F) {
	f.Add([]byte{0, 1})
	f.Add([]byte{0x11, 0x01, 0x21, 0x02})
	f.Add([]byte{0x1b, 0x04, 0x11, 0x00, 0x1b, 0x04, 0x11, 0x10})
	f.Add([]byte{0x2d, 0x11, 0x04, 0x2d, 0x14, 0x11})
	f.Add([]byte{0x3f, 0x04, 0x00, 0x2a, 0x05, 0x15})
	f.Add([]byte{0x04, 0x14})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		a := g.value(0)
		b := g.value(0)
		if g.byte()%8 == 0 {
			a = []any{query.MinKey, query.MaxKey}[g.byte()%2]
		}
		checkPair(t, a, b)
		checkPair(t, b, a)
		checkPair(t, a, a)
	})
}
