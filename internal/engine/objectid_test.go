package engine

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/query"
)

// objectIDCount returns the 3-byte counter part of id.
func objectIDCount(id ObjectID) uint32 {
	return uint32(id[9])<<16 | uint32(id[10])<<8 | uint32(id[11])
}

func TestObjectIDHexRoundTrip(t *testing.T) {
	id := NewObjectIDFromTime(time.Date(2019, 2, 14, 17, 39, 33, 0, time.UTC))
	s := id.Hex()
	require.Len(t, s, 24)
	assert.Equal(t, `ObjectID("`+s+`")`, id.String(), "the driver's String form")
	assert.Equal(t, strings.ToLower(s), s, "lower case")
	assert.Equal(t, "5c65a7d5", s[:8], "big-endian timestamp first")

	back, err := ObjectIDFromHex(s)
	require.NoError(t, err)
	assert.Equal(t, id, back)

	upper, err := ObjectIDFromHex(strings.ToUpper(s))
	require.NoError(t, err)
	assert.Equal(t, id, upper, "upper-case hex is read too")

	text, err := id.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, s, string(text))
	var un ObjectID
	require.NoError(t, un.UnmarshalText(text))
	assert.Equal(t, id, un)

	zero, err := ObjectIDFromHex(strings.Repeat("0", 24))
	require.NoError(t, err)
	assert.True(t, zero.IsZero())
	assert.False(t, id.IsZero())
}

func TestObjectIDFromHexErrors(t *testing.T) {
	bad := map[string]string{
		"empty":         "",
		"23 digits":     strings.Repeat("a", 23),
		"25 digits":     strings.Repeat("a", 25),
		"48 digits":     strings.Repeat("a", 48),
		"non-hex":       "zz" + strings.Repeat("0", 22),
		"non-hex last":  strings.Repeat("0", 23) + "g",
		"spaces":        " " + strings.Repeat("0", 22) + " ",
		"0x prefix":     "0x" + strings.Repeat("0", 22),
		"12 raw bytes":  "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b",
		"multibyte":     "é" + strings.Repeat("0", 22),
		"sign":          "-" + strings.Repeat("0", 23),
		"dashed (uuid)": "01234567-89ab-cdef-0123-",
	}
	for name, s := range bad {
		t.Run(name, func(t *testing.T) {
			id, err := ObjectIDFromHex(s)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidDocument), "%v", err)
			assert.Contains(t, err.Error(), "ObjectID")
			assert.True(t, id.IsZero(), "no partial result")

			// UnmarshalText is the driver's (ObjectID is bson.ObjectID):
			// it refuses the same text, but with the driver's errors, and
			// takes empty text as no change.
			orig := NewObjectIDFromTime(time.Unix(1, 0))
			un := orig
			err = un.UnmarshalText([]byte(s))
			if s != "" {
				assert.Error(t, err)
			}
			assert.Equal(t, orig, un, "UnmarshalText leaves the ID unchanged on error")
		})
	}
}

func TestObjectIDTimestamp(t *testing.T) {
	cases := []struct {
		in   time.Time
		want time.Time
	}{
		{time.Unix(0, 0), time.Unix(0, 0)},
		{time.Date(2019, 2, 14, 17, 39, 33, 999999999, time.UTC), time.Date(2019, 2, 14, 17, 39, 33, 0, time.UTC)},
		{time.Date(2019, 2, 14, 18, 39, 33, 5, time.FixedZone("CET", 3600)), time.Date(2019, 2, 14, 17, 39, 33, 0, time.UTC)},
		{time.Unix(1<<32-1, 0), time.Date(2106, 2, 7, 6, 28, 15, 0, time.UTC)}, // the last second 4 bytes hold
	}
	for _, c := range cases {
		got := NewObjectIDFromTime(c.in).Timestamp()
		assert.True(t, c.want.Equal(got), "%v: got %v, want %v", c.in, got, c.want)
		assert.Equal(t, time.UTC, got.Location())
	}
}

func TestObjectIDOrderByTime(t *testing.T) {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := NewObjectIDFromTime(base)
	for i := 1; i <= 1000; i++ {
		id := NewObjectIDFromTime(base.Add(time.Duration(i) * time.Second))
		require.Equal(t, -1, bytes.Compare(prev[:], id[:]), "ID at +%ds sorts after the one before", i)
		require.Equal(t, -1, query.Compare(prev, id))
		require.Equal(t, prev[4:9], id[4:9], "same process part")
		prev = id
	}
}

// TestObjectIDOrderWithinSecond: IDs of one second differ only in the
// counter, which increases with every ID, so they sort by creation except
// where the 3-byte counter wraps around (at most once here).
func TestObjectIDOrderWithinSecond(t *testing.T) {
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := make([]ObjectID, 10000)
	for i := range ids {
		ids[i] = NewObjectIDFromTime(at.Add(time.Duration(i) * time.Microsecond)) // all in one second
	}
	wraps := 0
	for i := 1; i < len(ids); i++ {
		prev, id := ids[i-1], ids[i]
		require.Equal(t, prev[:9], id[:9], "same timestamp and process part")
		step := (objectIDCount(id) - objectIDCount(prev)) & 0xFFFFFF
		// Other tests generating IDs concurrently can only add to the step.
		require.True(t, step >= 1 && step < 1<<20, "counter step %d", step)
		if objectIDCount(id) < objectIDCount(prev) {
			wraps++
			continue
		}
		require.Equal(t, -1, bytes.Compare(prev[:], id[:]), "ID %d sorts after ID %d", i, i-1)
	}
	assert.LessOrEqual(t, wraps, 1)
}

func TestObjectIDUniqueAcrossGoroutines(t *testing.T) {
	const goroutines, perGoroutine = 16, 2000
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	results := make([][]ObjectID, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		goWG(&wg, func() {
			ids := make([]ObjectID, perGoroutine)
			for i := range ids {
				ids[i] = NewObjectIDFromTime(at)
			}
			results[g] = ids
		})
	}
	wg.Wait()
	seen := make(map[ObjectID]bool, goroutines*perGoroutine)
	for _, ids := range results {
		for _, id := range ids {
			require.False(t, seen[id], "duplicate %s", id)
			seen[id] = true
		}
	}
	assert.Len(t, seen, goroutines*perGoroutine)
}

func TestObjectIDProcessPart(t *testing.T) {
	a, b := NewObjectIDFromTime(time.Unix(1, 0)), NewObjectIDFromTime(time.Unix(2, 0))
	assert.Equal(t, a[4:9], b[4:9])
	assert.Equal(t, hex.EncodeToString(a[4:9]), a.Hex()[8:18])
}
