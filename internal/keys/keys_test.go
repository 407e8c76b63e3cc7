package keys

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

func mustKey(t testing.TB, v any) []byte {
	t.Helper()
	k, err := Append(nil, v)
	if err != nil {
		t.Fatalf("Append(%#v): %v", v, err)
	}
	return k
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// checkPair asserts that the keys of a and b order as query.Compare orders
// a and b: ascending, descending (inverted), and as the first field of a
// compound key followed by a second field that would order the other way.
func checkPair(t testing.TB, a, b any) {
	t.Helper()
	want := sign(query.Compare(a, b))
	if back := sign(query.Compare(b, a)); back != -want {
		t.Fatalf("query.Compare is not antisymmetric for %#v, %#v", a, b)
	}
	ka, kb := mustKey(t, a), mustKey(t, b)
	if got := sign(bytes.Compare(ka, kb)); got != want {
		t.Fatalf("keys of %#v and %#v compare %d, query.Compare says %d\n% x\n% x", a, b, got, want, ka, kb)
	}
	da, _ := AppendDesc(nil, a)
	db, _ := AppendDesc(nil, b)
	if got := sign(bytes.Compare(da, db)); got != -want {
		t.Fatalf("descending keys of %#v and %#v compare %d, want %d", a, b, got, -want)
	}
	// Compound (a, "z") vs (b, "a"), each direction: the first field
	// decides unless equal.
	for _, desc := range []bool{false, true} {
		ca, cb := compound(t, desc, a, "z"), compound(t, desc, b, "a")
		w := want
		if desc {
			w = -w
		}
		if w == 0 {
			w = 1 // "z" > "a"
		}
		if got := sign(bytes.Compare(ca, cb)); got != w {
			t.Fatalf("compound keys (%#v, z) and (%#v, a), first field descending %v: compare %d, want %d", a, b, desc, got, w)
		}
		wf := want
		if desc {
			wf = -want
		}
		if got := CompareFirst(string(ca), string(firstOf(t, desc, b))); got != wf {
			t.Fatalf("CompareFirst((%#v, z), %#v) = %d, want %d (descending %v)", a, b, got, wf, desc)
		}
	}
	if want == 0 && !bytes.Equal(ka, kb) {
		t.Fatalf("equal values %#v and %#v have different keys", a, b)
	}
}

func firstOf(t testing.TB, desc bool, v any) []byte {
	t.Helper()
	if desc {
		k, err := AppendDesc(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	return mustKey(t, v)
}

func compound(t testing.TB, desc bool, first, second any) []byte {
	t.Helper()
	k := firstOf(t, desc, first)
	k, err := Append(k, second)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)

// The tricky pairs: each must order as query.Compare orders it.
func TestKeyOrderTable(t *testing.T) {
	oid1 := codec.ObjectID{1, 2, 3}
	oid2 := codec.ObjectID{1, 2, 4}
	paris, _ := time.LoadLocation("Europe/Paris")
	if paris == nil {
		paris = time.FixedZone("CET", 3600)
	}
	pairs := [][2]any{
		// Type order.
		{query.MinKey, nil}, {nil, math.NaN()}, {math.NaN(), math.Inf(-1)}, {math.Inf(1), ""},
		{"zzz", map[string]any{}}, {map[string]any{"a": 1}, []any{}}, {[]any{1}, []byte{}},
		{[]byte{0xff}, oid1}, {oid2, false}, {false, true}, {true, time.Time{}}, {t0, query.MaxKey},
		{query.MinKey, query.MinKey}, {query.MaxKey, query.MaxKey},
		// Numbers across kinds.
		{0, math.Copysign(0, -1)}, {int8(0), uint64(0)}, {float32(0), 0.0},
		{3, 3.0}, {int8(-1), -1.0}, {uint8(255), 255.0}, {float32(0.5), 0.5},
		{2.5, 2}, {2.5, 3}, {-2.5, -2}, {-2.5, -3},
		{int64(math.MaxInt64), uint64(math.MaxInt64) + 1}, {uint64(math.MaxUint64), math.Inf(1)},
		{uint64(math.MaxUint64), 18446744073709551616.0}, {uint64(1 << 63), 9223372036854775808.0},
		{int64(math.MinInt64), -9223372036854775808.0}, {int64(math.MinInt64), math.Inf(-1)},
		{int64(math.MinInt64) + 1, int64(math.MinInt64)},
		{int64(1<<53 + 1), float64(1 << 53)}, {int64(1<<53 + 1), float64(1<<53 + 2)},
		{math.SmallestNonzeroFloat64, 0}, {-math.SmallestNonzeroFloat64, 0},
		{math.SmallestNonzeroFloat64, 2 * math.SmallestNonzeroFloat64}, {math.MaxFloat64, math.Inf(1)},
		{-math.MaxFloat64, math.Inf(-1)}, {math.NaN(), float32(math.NaN())}, {math.NaN(), -math.MaxFloat64},
		{float32(0.1), 0.1}, {1e300, uint64(math.MaxUint64)}, {-1e-300, -1e-301},
		// Strings: prefixes, NULs, high bytes.
		{"", "a"}, {"a", "a\x00"}, {"a\x00", "a\x01"}, {"a\x00", "a"}, {"a\x00\x00", "a\x00"},
		{"a\xff", "b"}, {"ab", "a\x00b"}, {"é", "z"}, {"a", "a"},
		// Documents: sorted names, value before name, length last.
		{map[string]any{"a": "x b string:y"}, map[string]any{"a": "x", "b": "y"}},
		{map[string]any{"a": 1, "b": 2}, map[string]any{"b": 2, "a": 1}},
		{map[string]any{"a": 1}, map[string]any{"b": 1}}, {map[string]any{"b": 1}, map[string]any{"a": 2}},
		{map[string]any{"a": 1}, map[string]any{"a": 1.0}}, {map[string]any{"a": 1}, map[string]any{"a": 1, "b": nil}},
		{map[string]any{"a": map[string]any{}}, map[string]any{"a": []any{}}},
		{map[string]any{"ab": 1}, map[string]any{"a": map[string]any{"b": 1}}},
		{map[string]any{"a\x00": 1}, map[string]any{"a": 1}},
		// Arrays: typed and untyped, element by element, length last.
		{[]int{1, 2}, []any{1, 2}}, {[]any{1}, []any{"1"}}, {[]string{"7"}, []int{7}},
		{[]any{}, []any{nil}}, {[]any{1}, []any{1, 2}}, {[]any{2}, []any{1, 2}},
		{[]float32{1, 2}, []uint8{1, 2}}, {[]map[string]any{{"x": 1}}, []any{map[string]any{"x": uint64(1)}}},
		{[]any{[]any{1}}, []any{[]int{1}}}, {[]bool{true}, []any{false}}, {[]time.Time{t0}, []any{t0}},
		{[]codec.ObjectID{oid1}, []any{oid2}}, {[]any{"a"}, []any{"a", nil}},
		// Binary: length first.
		{[]byte{0xff}, []byte{0, 0}}, {[]byte{}, []byte{0}}, {[]byte{1, 2}, []byte{1, 3}},
		{make([]byte, 256), make([]byte, 255)}, {[]byte(nil), []byte{}},
		// ObjectIDs, bools, dates by instant.
		{oid1, oid2}, {oid1, oid1}, {t0, t0.In(paris)}, {t0, t0.Add(1)}, {t0.Add(-time.Second), t0},
		{time.Unix(-1, 999_999_999), time.Unix(0, 0)}, {time.Time{}, time.Unix(0, 0)},
		{time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, p := range pairs {
		checkPair(t, p[0], p[1])
		checkPair(t, p[1], p[0])
	}
}

// Equal numbers of every kind share one key; so do equal arrays and
// documents of any representation.
func TestKeyEqualValuesShareKey(t *testing.T) {
	groups := [][]any{
		{0, int8(0), int16(0), int32(0), int64(0), uint(0), uint8(0), uint16(0), uint32(0), uint64(0), float32(0), 0.0, math.Copysign(0, -1)},
		{7, int8(7), uint64(7), float32(7), 7.0},
		{-7, int8(-7), int64(-7), float32(-7), -7.0},
		{math.NaN(), float32(math.NaN()), -math.NaN()},
		{[]int{1, 2}, []any{1, 2.0}, []float32{1, 2}, []uint16{1, 2}},
		{map[string]any{"a": 1, "b": []string{"x"}}, map[string]any{"b": []any{"x"}, "a": uint16(1)}},
		{t0, t0.In(time.FixedZone("X", -7200))},
	}
	for _, g := range groups {
		want := mustKey(t, g[0])
		for _, v := range g[1:] {
			if got := mustKey(t, v); !bytes.Equal(got, want) {
				t.Errorf("key of %#v (%T) = % x, of %#v (%T) = % x", v, v, got, g[0], g[0], want)
			}
		}
	}
}

// A bad value is an error, never a panic or a stack overflow; dst is left
// as it was.
func TestKeyRefusesBadValues(t *testing.T) {
	cyc := map[string]any{}
	cyc["self"] = cyc
	arr := []any{1, nil}
	arr[1] = arr
	deep := any(1)
	for range 100_000 {
		deep = map[string]any{"d": deep}
	}
	deepArr := any(1)
	for range codec.MaxDepth + 1 {
		deepArr = []any{deepArr}
	}
	var tt *time.Time
	for name, v := range map[string]any{
		"cyclic document": cyc, "cyclic array": arr, "100k-deep document": deep, "too deep array": deepArr,
		"pointer": tt, "struct": struct{}{}, "channel": make(chan int), "func in an array": []any{func() {}},
	} {
		dst := []byte("prefix")
		out, err := Append(dst, v)
		if !errors.Is(err, errs.ErrInvalidDocument) {
			t.Errorf("%s: err = %v, want ErrInvalidDocument", name, err)
		}
		if string(out) != "prefix" {
			t.Errorf("%s: dst changed to %q", name, out)
		}
	}
	// A value nested codec.MaxDepth levels deep (the most a stored
	// document's field may hold) is accepted; reused map siblings are not a cycle.
	ok := any(1)
	for range codec.MaxDepth {
		ok = []any{ok}
	}
	shared := map[string]any{"x": 1}
	for _, v := range []any{ok, map[string]any{"a": shared, "b": shared}, []any{shared, shared}} {
		if _, err := Append(nil, v); err != nil {
			t.Errorf("Append: %v", err)
		}
	}
}

// The type byte's high nibble is query.RankOf + 1, for every type.
func TestKeyTypeByteIsRank(t *testing.T) {
	for _, v := range []any{query.MinKey, nil, math.NaN(), -1, 0, 1, "", map[string]any{}, []any{}, []int{},
		[]byte{}, codec.ObjectID{}, false, true, t0, query.MaxKey} {
		k := mustKey(t, v)
		if got, want := int(k[0]>>4)-1, int(query.RankOf(v)); got != want {
			t.Errorf("%#v: type byte %#x, rank %d", v, k[0], want)
		}
		if k[0] == 0x00 || k[0] == 0xFF || ^k[0] == 0xFF {
			t.Errorf("%#v: type byte %#x collides with an end marker", v, k[0])
		}
	}
}

// Scalar keys cost no allocation beyond the destination.
func TestKeyScalarAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	for _, v := range []any{42, -3.5, "hello", t0, codec.ObjectID{}, nil, true, uint64(math.MaxUint64)} {
		if n := testing.AllocsPerRun(100, func() { _, _ = Append(buf[:0], v) }); n != 0 {
			t.Errorf("Append(%T) allocates %.0f times", v, n)
		}
	}
}

// After bounds every key with the prefix from above, in both directions.
func TestKeyAfterBoundsPrefix(t *testing.T) {
	for _, lead := range []any{nil, 5, "a", map[string]any{"a": 1}, []any{"x"}, query.MaxKey} {
		for _, desc := range []bool{false, true} {
			p := string(firstOf(t, desc, lead))
			for _, next := range []any{query.MinKey, nil, math.Inf(-1), "\xff\xff", true, query.MaxKey} {
				for _, nd := range []bool{false, true} {
					k := p + string(firstOf(t, nd, next))
					if !(k > p && k < After(p)) {
						t.Errorf("key (%v, %v) not within (%q, After)", lead, next, p)
					}
				}
			}
			if !strings.HasPrefix(After(p), p) {
				t.Error("After must extend the prefix")
			}
		}
	}
}
