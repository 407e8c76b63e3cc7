package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
)

func TestWithMemoryLimitRejectsNegative(t *testing.T) {
	_, err := Open(WithMemoryLimit(-1))
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// A write that would pass the memory limit fails with ErrMemoryLimit and
// changes nothing; deleting makes room again; Metrics reports the bytes.
func TestMemoryLimit(t *testing.T) {
	const limit = 256 << 10
	db, clk := openMon(t, quiet(MonitorOptions{}), WithMemoryLimit(limit))
	c := db.Collection("c")
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("g")}})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("t")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	doc := func(i int) Document {
		return Document{"_id": i, "g": i % 10, "t": t0, "s": fmt.Sprintf("%0100d", i)}
	}
	n := 0
	var lastErr error
	for ; n < 10_000; n++ {
		if _, lastErr = c.InsertOne(context.Background(), doc(n)); lastErr != nil {
			break
		}
	}
	require.ErrorIs(t, lastErr, ErrMemoryLimit)
	require.Greater(t, n, 100)
	m := db.Metrics().Storage
	assert.LessOrEqual(t, m.Bytes, int64(limit))
	assert.Greater(t, m.Bytes, int64(limit)*8/10, "the limit was reached, not far below")
	assert.Equal(t, int64(limit), m.Limit)
	assert.Equal(t, m.Bytes, m.ByCollection["c"])
	t.Logf("%d documents fit in %d bytes (%d accounted)", n, limit, m.Bytes)

	// Nothing of a refused write is stored: InsertMany and UpdateMany are
	// atomic.
	_, err = c.InsertMany(context.Background(), []Document{{"_id": "small"}, doc(n + 1), doc(n + 2)})
	require.ErrorIs(t, err, ErrMemoryLimit)
	assert.Equal(t, n, count(t, c))
	_, err = c.FindOne(context.Background(), Document{"_id": "small"}).Document()
	require.ErrorIs(t, err, ErrNotFound)
	res, err := c.UpdateMany(context.Background(), nil, Document{"$set": Document{"s": fmt.Sprintf("%0500d", 1)}})
	require.ErrorIs(t, err, ErrMemoryLimit)
	assert.Zero(t, res.ModifiedCount)
	got, err := c.FindOne(context.Background(), Document{"_id": 3}).Document()
	require.NoError(t, err)
	assert.Equal(t, doc(3)["s"], got["s"])
	assert.Equal(t, m, db.Metrics().Storage, "a refused write changes no byte")

	// Deleting (here: TTL expiry) gives the room back.
	clk.Advance(time.Hour)
	pass, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, n, pass.Deleted)
	after := db.Metrics().Storage
	assert.Less(t, after.Bytes, m.Bytes/4)
	_, err = c.InsertMany(context.Background(), []Document{doc(1), doc(2)})
	require.NoError(t, err)

	// Dropping the collection releases all of it.
	require.NoError(t, db.DropCollection(context.Background(), "c"))
	assert.Zero(t, db.Metrics().Storage.Bytes)
}

// An index build that would pass the limit fails and leaves no index.
func TestMemoryLimitIndexBuild(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}), WithMemoryLimit(200<<10))
	c := db.Collection("c")
	n := 0
	for ; ; n++ {
		if _, err := c.InsertOne(context.Background(), Document{"_id": n, "k": fmt.Sprintf("key-%08d", n)}); err != nil {
			require.ErrorIs(t, err, ErrMemoryLimit)
			break
		}
	}
	// Make a little room, not enough for an index of every key.
	_, err := c.DeleteMany(context.Background(), Document{"_id": Document{"$lt": n / 20}})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("k")}})
	require.ErrorIs(t, err, ErrMemoryLimit)
	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	assert.Len(t, specs, 1, "only _id_")
}

// The bytes a collection accounts stay within 25% of the heap it takes, for
// 200k documents under a TTL index and a secondary index.
func TestMemoryAccountingMatchesHeap(t *testing.T) {
	if testing.Short() || testutil.RaceEnabled {
		t.Skip("measures 200k documents")
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	db, err := Open(WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	c := db.Collection("events")
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("user")}})
	require.NoError(t, err)
	const n = 200_000
	users := make([]string, 1000)
	for i := range users {
		users[i] = fmt.Sprintf("user-%04d", i)
	}
	batch := make([]Document, 0, 10_000)
	for i := range n {
		batch = append(batch, Document{"_id": i, "user": users[i%len(users)], "kind": "click", "bytes": i % 4096,
			"lastModifiedDate": t0.Add(time.Duration(i) * time.Microsecond)})
		if len(batch) == cap(batch) {
			_, err := c.InsertMany(context.Background(), batch)
			require.NoError(t, err)
			batch = batch[:0]
		}
	}
	batch = nil
	var after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	acct := float64(db.Metrics().Storage.Bytes)
	t.Logf("%d documents: heap +%.1f MiB (%.0f B/doc), accounted %.1f MiB (%.0f B/doc): %.3f", n,
		heap/(1<<20), heap/n, acct/(1<<20), acct/n, acct/heap)
	assert.InDelta(t, 1, acct/heap, 0.25)
	runtime.KeepAlive(users)
}
