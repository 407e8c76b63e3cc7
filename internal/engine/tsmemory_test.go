package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// tsMemDoc is a measurement of about 1 KB.
func tsMemDoc(i int) Document {
	return Document{"t": t0.Add(time.Duration(i) * time.Second), "m": fmt.Sprintf("sensor-%d", i%4), "v": strings.Repeat("x", 1000)}
}

// tsBucketsState describes every bucket of a time-series collection: a
// refused write must leave it unchanged.
func tsBucketsState(ts *tsColl) string {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	var sb strings.Builder
	fmt.Fprintf(&sb, "next %d count %d bytes %d\n", ts.nextSeq, ts.count, ts.bytesLen)
	ts.buckets.Ascend(func(b *bucket) bool {
		fmt.Fprintf(&sb, "%d %q %v %v-%v n=%d open=%v %x %v\n", b.seq, b.metaKey, b.start, b.min, b.max, b.len(), ts.open[b.metaKey] == b, b.data, b.offs)
		return true
	})
	for _, e := range ts.expiries() {
		e.tree.Ascend(func(en tsExpEntry) bool {
			fmt.Fprintf(&sb, "expiry %s %d.%d %d\n", e.name, en.sec, en.nsec, en.b.seq)
			return true
		})
	}
	for _, ix := range ts.indexes {
		fmt.Fprintf(&sb, "index %s multikey %v\n", ix.name, ix.multikey)
		ix.tree.Ascend(func(en tsEntry) bool { fmt.Fprintf(&sb, " %x %d\n", en.key, en.b.seq); return true })
		if ix.measured != nil {
			ix.measured.byMax.Ascend(func(en tsEntry) bool { fmt.Fprintf(&sb, " max %x %d\n", en.key, en.b.seq); return true })
		}
	}
	if ts.reopen != nil {
		ts.reopen.Ascend(func(b *bucket) bool { fmt.Fprintf(&sb, "reopen %d\n", b.seq); return true })
	}
	return sb.String()
}

// Rule: an insert refused for the memory limit takes back everything it
// did, also when it added late measurements to existing buckets (their
// bounds, PreciseExpiry keys and measurement-field index bounds) and
// opened new ones.
func TestTimeSeriesMemoryLimitRollback(t *testing.T) {
	const limit = 512 << 10
	db, _ := openMon(t, quiet(MonitorOptions{}), WithMemoryLimit(limit))
	exp := int32(3600)
	c, err := db.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m", PreciseExpiry: true}, ExpireAfterSeconds: &exp})
	require.NoError(t, err)
	ctx := context.Background()
	for _, k := range []IndexKey{Asc("v"), Asc("m")} {
		_, err = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{k}})
		require.NoError(t, err)
	}
	doc := func(i int, at time.Duration, v any) Document {
		return Document{"_id": i, "t": t0.Add(at), "m": i % 3, "v": v, "pad": strings.Repeat("p", 200)}
	}
	for i := range 600 {
		// Times interleaved from both ends of two hours: half of them late.
		at := time.Duration(i) * 6 * time.Second
		if i%2 == 1 {
			at = 2*time.Hour - at
		}
		_, err := c.InsertOne(context.Background(), doc(i, at, i))
		require.NoError(t, err)
	}
	ts := c.timeSeries()
	state := tsBucketsState(ts)
	before := ts.buckets.Len()
	storage := db.Metrics().Storage
	batch := []Document{
		doc(1000, 3*time.Second, -5),                                    // late: lowers an existing bucket's min
		doc(1001, 30*time.Minute, []any{1e9}),                           // into an existing bucket, widening its bounds, multikey
		doc(1002, 5*time.Hour, "new"),                                   // opens a bucket
		{"_id": 1003, "t": t0, "m": 7, "v": strings.Repeat("x", limit)}, // past the limit
	}
	_, err = c.InsertMany(context.Background(), batch)
	require.ErrorIs(t, err, ErrMemoryLimit)
	assert.Equal(t, state, tsBucketsState(ts))
	assert.Equal(t, storage, db.Metrics().Storage)

	// Without the last one, the same batch goes in.
	_, err = c.InsertMany(context.Background(), batch[:3])
	require.NoError(t, err)
	assert.NotEqual(t, state, tsBucketsState(ts))
	requireBucketsSound(t, ts)
	assert.Equal(t, before+1, ts.buckets.Len(), "only the measurement 5 hours on opened a bucket")
	lowered := false
	ts.buckets.Ascend(func(b *bucket) bool {
		lowered = lowered || (b.seq <= uint64(before) && b.min.Equal(t0.Add(3*time.Second)))
		return true
	})
	assert.True(t, lowered, "the late measurement lowered an existing bucket's min")
}

// Rule: a time-series collection's buckets count against the memory
// budget on every write path: inserts (one, many, one too large) past the
// limit fail with ErrMemoryLimit and change nothing; the bytes show in
// Metrics().Storage.ByCollection; deletion, expiry and drop give them back.
func TestTimeSeriesMemoryLimit(t *testing.T) {
	const limit = 1 << 20
	db, clk := openMon(t, quiet(MonitorOptions{}), WithMemoryLimit(limit))
	exp := int32(3600)
	c, err := db.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m"}, ExpireAfterSeconds: &exp})
	require.NoError(t, err)
	ts := c.timeSeries()

	_, err = c.InsertOne(context.Background(), Document{"t": t0, "v": strings.Repeat("y", 4<<20)})
	require.ErrorIs(t, err, ErrMemoryLimit, "one 4 MB measurement under a 1 MiB limit")
	assert.Zero(t, db.Metrics().Storage.Bytes)

	n := 0
	var lastErr error
	for ; n < 50_000; n++ {
		if _, lastErr = c.InsertOne(context.Background(), tsMemDoc(n)); lastErr != nil {
			break
		}
	}
	require.ErrorIs(t, lastErr, ErrMemoryLimit)
	m := db.Metrics().Storage
	t.Logf("%d measurements of 1 KB fit in %d bytes (%d accounted)", n, limit, m.Bytes)
	assert.Greater(t, n, 100)
	assert.Less(t, n, limit/1000, "each measurement costs at least its bytes")
	assert.LessOrEqual(t, m.Bytes, int64(limit))
	assert.Greater(t, m.Bytes, int64(limit)*8/10, "the limit was reached, not far below")
	assert.Equal(t, m.Bytes, m.ByCollection["ts"])

	// A refused InsertMany stores none of its measurements; a refused
	// write changes no byte.
	state := tsBucketsState(ts)
	_, err = c.InsertMany(context.Background(), []Document{{"t": t0, "m": "sensor-0", "v": 1}, tsMemDoc(n), tsMemDoc(n + 1), tsMemDoc(n + 2)})
	require.ErrorIs(t, err, ErrMemoryLimit)
	assert.Equal(t, state, tsBucketsState(ts))
	assert.Equal(t, m, db.Metrics().Storage)
	got, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	assert.EqualValues(t, n, got)

	// A meta update that would grow past the limit is refused too.
	_, err = c.UpdateMany(context.Background(), Document{"m": "sensor-1"}, Document{"$set": Document{"m": strings.Repeat("z", 300<<10)}})
	require.ErrorIs(t, err, ErrMemoryLimit)
	assert.Equal(t, state, tsBucketsState(ts))

	// Deleting gives the room back.
	_, err = c.DeleteMany(context.Background(), Document{"m": "sensor-0"})
	require.NoError(t, err)
	afterDelete := db.Metrics().Storage.Bytes
	assert.Less(t, afterDelete, m.Bytes*9/10)
	_, err = c.InsertOne(context.Background(), tsMemDoc(n))
	require.NoError(t, err)

	// Expiry gives it back, and drop releases all.
	clk.Advance(24 * time.Hour)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Less(t, db.Metrics().Storage.Bytes, afterDelete/10)
	_, err = c.InsertOne(context.Background(), tsMemDoc(n))
	require.NoError(t, err)
	require.NoError(t, db.DropCollection(context.Background(), "ts"))
	assert.Zero(t, db.Metrics().Storage.Bytes)
}

// Rule: DB.Apply of time-series inserts counts against the replica's
// memory limit: the op past it fails with ErrMemoryLimit and applies none
// of its measurements.
func TestTimeSeriesMemoryLimitApply(t *testing.T) {
	src, _, sink := openRecorded(t)
	dst, _ := openMon(t, quiet(MonitorOptions{}), WithMemoryLimit(256<<10))
	c, err := src.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m"}})
	require.NoError(t, err)
	for i := range 1000 {
		_, err := c.InsertOne(context.Background(), tsMemDoc(i))
		require.NoError(t, err)
	}
	applied := 0
	for _, op := range sink.take() {
		if err = dst.Apply(context.Background(), op); err != nil {
			break
		}
		applied++
	}
	require.ErrorIs(t, err, ErrMemoryLimit)
	info, ok, err2 := dst.Collection("ts").TimeSeriesInfo(context.Background())
	require.NoError(t, err2)
	require.True(t, ok)
	assert.Equal(t, applied-1, info.Measurements, "the ops before the refused one (after the create)")
	assert.LessOrEqual(t, dst.Metrics().Storage.Bytes, int64(256<<10))
	assert.Positive(t, dst.Metrics().Storage.ByCollection["ts"])
}

// Rule: a DB reloaded (snapshot and log) accounts its time-series
// collections as the live one did, and, reopened with a limit below them,
// loads them whole and refuses the next insert.
func TestTimeSeriesMemoryReload(t *testing.T) {
	for _, snap := range []bool{false, true} {
		clk := ttltest.NewClock(t0)
		dir := t.TempDir()
		db := mustOpenDurable(t, clk, dir)
		c, err := db.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m"}})
		require.NoError(t, err)
		for i := range 2000 {
			_, err := c.InsertOne(context.Background(), tsMemDoc(i))
			require.NoError(t, err)
			if snap && i == 1000 {
				require.NoError(t, db.Snapshot(context.Background()))
			}
		}
		used := db.Metrics().Storage.ByCollection["ts"]
		require.Positive(t, used)
		require.NoError(t, db.Close())

		db = mustOpenDurable(t, clk, dir, WithMemoryLimit(used/2))
		got := db.Metrics().Storage.ByCollection["ts"]
		// A snapshot's buckets reload with other spare capacity than the
		// live DB's grew: close, not equal.
		assert.InEpsilon(t, used, got, 0.1, "snapshot %v", snap)
		assert.Positive(t, got)
		t.Logf("snapshot %v: %d bytes accounted live, %d reloaded; total %d", snap, used, got, db.Metrics().Storage.Bytes)
		_, err = db.Collection("ts").InsertOne(context.Background(), tsMemDoc(5000))
		require.ErrorIs(t, err, ErrMemoryLimit)
		require.NoError(t, db.Close())
	}
}

// The bytes a time-series collection accounts stay within 25% of the heap
// it takes: 50k measurements of 1 KB.
func TestTimeSeriesMemoryAccountingMatchesHeap(t *testing.T) {
	if testing.Short() || testutil.RaceEnabled {
		t.Skip("measures 50k measurements")
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	db, err := Open(WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	c, err := db.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m"}})
	require.NoError(t, err)
	const n = 50_000
	v := strings.Repeat("x", 1000)
	for i := range n {
		_, err := c.InsertOne(context.Background(), Document{"t": t0.Add(time.Duration(i) * time.Second), "m": i % 16, "v": v})
		require.NoError(t, err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	acct := float64(db.Metrics().Storage.ByCollection["ts"])
	t.Logf("%d measurements: heap +%.1f MiB (%.0f B/measurement), accounted %.1f MiB (%.0f B): %.3f", n,
		heap/(1<<20), heap/n, acct/(1<<20), acct/n, acct/heap)
	assert.InEpsilon(t, heap, acct, 0.25)
	runtime.KeepAlive(db)
}
