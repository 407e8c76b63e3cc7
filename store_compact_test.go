package ttldb_test

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Rule 8: after a mass deletion, Compact gives the memory of the maps and
// trees back: the live heap drops clearly.
func TestStoreCompactReleasesMemory(t *testing.T) {
	n := 100_000 // 200_000 with TTLDB_SOAK set
	switch {
	case os.Getenv("TTLDB_SOAK") != "" && !raceEnabled:
		n = 200_000
	case testing.Short() || raceEnabled:
		n = 30_000
	}
	fill := func(c *ttldb.Collection, n int) {
		_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("k")}})
		require.NoError(t, err)
		_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("t")}, ExpireAfterSeconds: ttldb.Seconds(3600)})
		require.NoError(t, err)
		batch := make([]ttldb.Document, 0, 1000)
		for i := range n {
			batch = append(batch, ttldb.Document{"_id": i, "k": i % 1000, "t": time.Unix(int64(i), 0)})
			if len(batch) == cap(batch) || i == n-1 {
				mustInsert(t, c, batch...)
				batch = batch[:0]
			}
		}
	}
	base := heapAlloc()
	db, _ := openStore(t)
	c := db.Collection("big")
	fill(c, n)
	full := heapAlloc()
	deleted, err := c.DeleteMany(context.Background(), ttldb.Document{"_id": ttldb.Document{"$gte": n / 10}})
	require.NoError(t, err)
	require.Equal(t, n-n/10, deleted)
	before := heapAlloc()
	require.NoError(t, c.Compact())
	after := heapAlloc()
	t.Logf("%d docs: heap full %d KiB, after deleting 90%% %d KiB, after Compact %d KiB", n, full>>10, before>>10, after>>10)
	// Go maps never shrink: the _id map alone keeps the buckets of n
	// documents until Compact rebuilds it at a tenth of the size.
	assert.Less(t, float64(after), 0.8*float64(before), "Compact must release a clear share of the heap")

	// The collection still works, indexes included.
	assert.Equal(t, n/10, count(t, c, nil))
	ex, err := c.Explain(ttldb.Document{"k": 7})
	require.NoError(t, err)
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, n/10/1000, ex.NReturned)
	_, err = c.InsertOne(ttldb.Document{"_id": n, "k": 7})
	require.NoError(t, err)
	assert.Equal(t, n/10/1000+1, count(t, c, ttldb.Document{"k": 7}))

	// Within 1.3x of a fresh DB holding what is left.
	compacted := after - base
	require.NoError(t, db.Close())
	base = heapAlloc()
	fresh, _ := openStore(t)
	fill(fresh.Collection("big"), n/10)
	freshHeap := heapAlloc() - base
	t.Logf("compacted %d KiB, fresh %d KiB: %.2fx", compacted>>10, freshHeap>>10, float64(compacted)/float64(freshHeap))
	assert.LessOrEqual(t, float64(compacted), 1.3*float64(freshHeap))
	runtime.KeepAlive(fresh)
}
