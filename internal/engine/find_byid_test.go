package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
)

// The read primitive under FindOne (findID, then codec.DecodeInto) decodes
// into memory the caller owns: into a reused map it allocates only for the
// document's boxed values and strings, nothing for the map, the lookup or
// the field names; and what it returns shares no memory with the store.
func TestFindIDAllocatesOnlyValues(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("c")
	_, err := c.InsertOne(context.Background(), Document{"_id": 1000, "flag": true, "small": 7, "s": "hello", "bin": []byte{1, 2, 3}})
	require.NoError(t, err)
	s := collStateOf(t, c)
	key, err := appendIDKey(nil, 1000)
	require.NoError(t, err)
	dst := map[string]any{}
	allocs := testing.AllocsPerRun(100, func() {
		var buf [16]byte
		k := append(buf[:0], key...)
		enc, ok := s.findID(k)
		if !ok {
			t.Fatal("not found")
		}
		if err := codec.DecodeInto(enc, &dst); err != nil {
			t.Fatal(err)
		}
	})
	// 1000 boxed; "hello" bytes and box; the []byte copy and its box.
	assert.Equal(t, float64(5), allocs)
	assert.Equal(t, map[string]any{"_id": 1000, "flag": true, "small": 7, "s": "hello", "bin": []byte{1, 2, 3}}, dst)

	// The result is the caller's: changing it changes nothing stored.
	dst["bin"].([]byte)[0] = 99
	dst["s"] = "changed"
	got, err := c.FindOne(context.Background(), Document{"_id": 1000}).Document()
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2, 3}, got["bin"])
	assert.Equal(t, "hello", got["s"])
}

// BenchmarkFindByIDInto is FindOneByID's read into a reused map: the
// allocations are the document's own values only.
func BenchmarkFindByIDInto(b *testing.B) {
	for _, size := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("docs=%d", size), func(b *testing.B) {
			db, err := Open(WithMonitor(MonitorOptions{Disabled: true}))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			c := db.Collection("bench")
			batch := make([]Document, 0, 10_000)
			for i := range size {
				batch = append(batch, Document{"_id": i, "g": i % (size / 10), "n": i, "s": "payload"})
				if len(batch) == cap(batch) {
					if _, err := c.InsertMany(context.Background(), batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			s, _ := c.read()
			dst := map[string]any{}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var buf [16]byte
				k, _ := appendIDKey(buf[:0], (i*7919)%size)
				enc, ok := s.findID(k)
				if !ok {
					b.Fatal("missing")
				}
				if err := codec.DecodeInto(enc, &dst); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
