package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Rule 11: an idle pass is one pass and one sub-pass, as in MongoDB; with
// or without TTL indexes, by RunTTLPass or by the background monitor.
func TestMetricsIdlePass(t *testing.T) {
	t.Run("RunTTLPass, no collection", func(t *testing.T) {
		db, _ := openMon(t, quiet(MonitorOptions{}))
		res, err := db.RunTTLPass(context.Background())
		require.NoError(t, err)
		assert.Equal(t, PassResult{Now: t0, SubPasses: 1, Complete: true}, res)
		m := db.Metrics().TTL
		assert.Equal(t, int64(1), m.Passes)
		assert.Equal(t, int64(1), m.SubPasses)
		assert.Zero(t, m.DeletedDocuments)
	})
	t.Run("RunTTLPass, nothing expired", func(t *testing.T) {
		db, _ := openMon(t, quiet(MonitorOptions{}))
		insertDated(t, ttlColl(t, db, "c", 60), "x", 5, t0)
		_, err := db.RunTTLPass(context.Background())
		require.NoError(t, err)
		m := db.Metrics().TTL
		assert.Equal(t, int64(1), m.Passes)
		assert.Equal(t, int64(1), m.SubPasses)
		assert.Zero(t, m.DeletedDocuments)
		assert.Empty(t, m.DeletedByCollection)
	})
	t.Run("background", func(t *testing.T) {
		db, clk := openMon(t)
		insertDated(t, ttlColl(t, db, "c", 3600), "x", 5, t0)
		for i := 1; i <= 3; i++ {
			clk.BlockUntilWaiters(1)
			clk.Advance(time.Minute)
			require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == int64(i) }, 5*time.Second, time.Millisecond)
			assert.Equal(t, int64(i), db.Metrics().TTL.SubPasses)
		}
		assert.Zero(t, db.Metrics().TTL.DeletedDocuments)
	})
}

// Rule 11: only committed deletions count: documents that fail the
// re-check at delete are not counted anywhere.
func TestMetricsCountOnlyCommittedDeletions(t *testing.T) {
	var db *DB
	var once sync.Once
	var herr error
	hook := func(ctx context.Context, b ExpiredBatch) error {
		once.Do(func() {
			c := db.Collection(b.Collection)
			_, err1 := c.UpdateOne(context.Background(), Document{"_id": "x-00000"}, Document{"$currentDate": Document{"lastModifiedDate": true}})
			_, err2 := c.UpdateOne(context.Background(), Document{"_id": "x-00001"}, Document{"$unset": Document{"lastModifiedDate": ""}})
			_, err3 := c.DeleteOne(context.Background(), Document{"_id": "x-00002"})
			herr = fmt.Errorf("%v %v %v", err1, err2, err3)
			if err1 == nil && err2 == nil && err3 == nil {
				herr = nil
			}
		})
		return nil
	}
	log := &eventLog{}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook), WithDeleteObserver(log.observe))
	c := ttlColl(t, db, "c", 60)
	insertDated(t, c, "x", 10, t0)
	clk.Advance(time.Hour)
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	require.NoError(t, herr)
	assert.Equal(t, 7, res.Deleted)
	m := db.Metrics().TTL
	assert.Equal(t, int64(7), m.DeletedDocuments)
	assert.Equal(t, map[string]int64{"c": 7}, m.DeletedByCollection)
	assert.Equal(t, map[IndexRef]int64{{"c", "lastModifiedDate_1"}: 7}, m.DeletedByIndex)
	assert.Len(t, log.ids(), 7)
	assert.Equal(t, 2, count(t, c))
}

// Rule 11: deletions per collection and per index; a document expired
// under two TTL indexes is deleted (and counted) once, by the first.
func TestMetricsPerCollectionAndIndex(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}))
	a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
	_, err := a.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("seen")}, ExpireAfterSeconds: Seconds(0)})
	require.NoError(t, err)
	insertDated(t, a, "a", 4, t0)
	_, err = a.InsertMany(context.Background(), []Document{
		{"_id": "both", "lastModifiedDate": t0, "seen": t0},
		{"_id": "s1", "seen": t0},
		{"_id": "s2", "seen": t0},
	})

	require.NoError(t, err)
	insertDated(t, b, "b", 6, t0)
	clk.Advance(time.Second)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	m := db.Metrics().TTL
	assert.Equal(t, int64(13), m.DeletedDocuments)
	assert.Equal(t, map[string]int64{"a": 7, "b": 6}, m.DeletedByCollection)
	assert.Equal(t, map[IndexRef]int64{
		{"a", "lastModifiedDate_1"}: 5,
		{"a", "seen_1"}:             2,
		{"b", "lastModifiedDate_1"}: 6,
	}, m.DeletedByIndex)
	// The snapshot is a value: changing it changes nothing recorded.
	m.DeletedByCollection["a"] = 100
	assert.Equal(t, int64(7), db.Metrics().TTL.DeletedByCollection["a"])
}

// Rule 11: the last pass's start (its now) and duration, on the DB clock.
func TestMetricsLastPass(t *testing.T) {
	var advance func(time.Duration)
	var once sync.Once
	hook := func(context.Context, ExpiredBatch) error {
		once.Do(func() { advance(3 * time.Second) })
		return nil
	}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook))
	advance = clk.Advance
	assert.True(t, db.Metrics().TTL.LastPassStart.IsZero())
	insertDated(t, ttlColl(t, db, "c", 0), "x", 5, t0)
	clk.Advance(time.Minute)
	_, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	m := db.Metrics().TTL
	assert.Equal(t, t0.Add(time.Minute), m.LastPassStart)
	assert.Equal(t, 3*time.Second, m.LastPassDuration)

	clk.Advance(time.Minute)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	m = db.Metrics().TTL
	assert.Equal(t, t0.Add(2*time.Minute+3*time.Second), m.LastPassStart)
	assert.Zero(t, m.LastPassDuration)
}

// Rule 11: the backlog is the number of documents expired but not yet
// deleted (a document expired under two indexes counts twice), and the age
// of the oldest is how long ago it expired.
func TestMetricsBacklog(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}))
	a := ttlColl(t, db, "a", 10)
	b := ttlColl(t, db, "b", 0)
	_, err := a.InsertMany(context.Background(), []Document{
		{"_id": 1, "lastModifiedDate": t0},
		{"_id": 2, "lastModifiedDate": t0.Add(10 * time.Second)},
		{"_id": 3, "lastModifiedDate": t0.Add(20 * time.Second)},
	})

	require.NoError(t, err)
	m := db.Metrics().TTL
	assert.Zero(t, m.Backlog)
	assert.Zero(t, m.OldestBacklogAge)
	aRef := IndexRef{"a", "lastModifiedDate_1"}
	bRef := IndexRef{"b", "lastModifiedDate_1"}
	assert.Equal(t, map[IndexRef]IndexBacklog{aRef: {}, bRef: {}}, m.BacklogByIndex, "every TTL index, also with nothing expired")

	clk.Advance(25 * time.Second)
	m = db.Metrics().TTL
	assert.Equal(t, int64(2), m.Backlog)
	assert.Equal(t, 15*time.Second, m.OldestBacklogAge)
	assert.Equal(t, map[IndexRef]IndexBacklog{aRef: {2, 15 * time.Second}, bRef: {}}, m.BacklogByIndex)

	// Another collection, two TTL indexes on one document, and many
	// entries.
	_, err = b.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("other")}, ExpireAfterSeconds: Seconds(0)})
	require.NoError(t, err)
	_, err = b.InsertOne(context.Background(), Document{"_id": "both", "lastModifiedDate": t0.Add(-time.Hour), "other": t0})
	require.NoError(t, err)
	insertDated(t, b, "bulk", 8209, t0)
	m = db.Metrics().TTL
	assert.Equal(t, int64(2+2+8209), m.Backlog)
	assert.Equal(t, time.Hour+25*time.Second, m.OldestBacklogAge)
	assert.Equal(t, map[IndexRef]IndexBacklog{
		aRef:             {2, 15 * time.Second},
		bRef:             {1 + 8209, time.Hour + 25*time.Second},
		{"b", "other_1"}: {1, 25 * time.Second},
	}, m.BacklogByIndex)

	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	m = db.Metrics().TTL
	assert.Zero(t, m.Backlog)
	assert.Zero(t, m.OldestBacklogAge)
	assert.Len(t, m.BacklogByIndex, 3)
	for ref, b := range m.BacklogByIndex {
		assert.Zero(t, b, ref)
	}
}

// Rule: PassDurations counts every ended pass's duration in cumulative
// buckets (a bound is inclusive; longer than the last bound is only in
// Count), not only the last pass's; Sub subtracts it bucket by bucket.
func TestMetricsPassDurations(t *testing.T) {
	var advance func(time.Duration)
	var step atomic.Int64 // how long the next pass's hook takes
	hook := func(context.Context, ExpiredBatch) error {
		advance(time.Duration(step.Load()))
		return nil
	}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook))
	advance = clk.Advance
	c := ttlColl(t, db, "c", 0)
	pass := func(d time.Duration) {
		t.Helper()
		step.Store(int64(d))
		insertDated(t, c, fmt.Sprint(d), 1, clk.Now())
		_, err := db.RunTTLPass(context.Background())
		require.NoError(t, err)
	}
	h := db.Metrics().TTL.PassDurations
	assert.Zero(t, h.Count)
	require.Len(t, h.Buckets, 15)
	assert.Equal(t, time.Millisecond, h.Buckets[0].UpperBound)
	assert.Equal(t, time.Minute, h.Buckets[14].UpperBound)

	pass(0) // an instant pass: in every bucket
	before := db.Metrics()
	pass(time.Second)      // on a bound: in its bucket
	pass(3 * time.Second)  // between 2.5 s and 5 s
	pass(2 * time.Minute)  // past the last bound: only in Count
	pass(time.Millisecond) // the first bound
	m := db.Metrics()
	h = m.TTL.PassDurations
	assert.Equal(t, int64(5), h.Count)
	assert.Equal(t, m.TTL.Passes, h.Count)
	assert.Equal(t, time.Second+3*time.Second+2*time.Minute+time.Millisecond, h.Sum)
	want := map[time.Duration]int64{
		time.Millisecond: 2, 2500 * time.Microsecond: 2, 5 * time.Millisecond: 2, 10 * time.Millisecond: 2,
		25 * time.Millisecond: 2, 50 * time.Millisecond: 2, 100 * time.Millisecond: 2, 250 * time.Millisecond: 2,
		500 * time.Millisecond: 2, time.Second: 3, 2500 * time.Millisecond: 3, 5 * time.Second: 4,
		10 * time.Second: 4, 30 * time.Second: 4, time.Minute: 4,
	}
	for _, b := range h.Buckets {
		assert.Equal(t, want[b.UpperBound], b.Count, b.UpperBound)
	}
	assert.Equal(t, time.Millisecond, m.TTL.LastPassDuration)

	d := m.Sub(before).TTL.PassDurations
	assert.Equal(t, int64(4), d.Count)
	assert.Equal(t, h.Sum, d.Sum)
	assert.Equal(t, int64(1), d.Buckets[0].Count)
	assert.Equal(t, int64(3), d.Buckets[14].Count)
	assert.Equal(t, int64(2), h.Buckets[0].Count, "Sub leaves its operands alone")
	assert.Equal(t, h, m.TTL.PassDurations.Sub(DurationHistogram{}), "a zero histogram subtracts nothing")
}

// Rule 11: Sub gives the change between two snapshots; gauges keep the
// later snapshot's values.
func TestMetricsSub(t *testing.T) {
	var fail atomic.Bool
	hook := func(ctx context.Context, b ExpiredBatch) error {
		if fail.Load() {
			panic("no")
		}
		return nil
	}
	db, clk := openMon(t, quiet(MonitorOptions{PerIndexMaxDeletes: 2}), WithOnExpire(hook))
	a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
	insertDated(t, a, "a", 3, t0)
	clk.Advance(time.Second)
	_, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	before := db.Metrics()

	insertDated(t, b, "b", 5, t0)
	insertDated(t, a, "a2", 1, t0)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	fail.Store(true)
	insertDated(t, a, "a3", 1, t0)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	after := db.Metrics()

	d := after.Sub(before)
	assert.Equal(t, int64(2), d.TTL.Passes)
	assert.Equal(t, int64(1+1), d.TTL.SubPasses) // rounds b: 2, 2, 1 with a: 1 in one; then the failing pass
	assert.Equal(t, int64(6), d.TTL.DeletedDocuments)
	assert.Equal(t, map[string]int64{"a": 1, "b": 5}, d.TTL.DeletedByCollection)
	assert.Equal(t, map[IndexRef]int64{{"a", "lastModifiedDate_1"}: 1, {"b", "lastModifiedDate_1"}: 5}, d.TTL.DeletedByIndex)
	assert.Equal(t, int64(1), d.TTL.HookPanics)
	assert.Equal(t, int64(1), d.TTL.HookErrors)
	assert.Equal(t, int64(0), d.TTL.IndexErrors, "a failing hook fails no index visit")
	assert.Equal(t, after.TTL.LastPassStart, d.TTL.LastPassStart)
	assert.Equal(t, int64(1), d.TTL.Backlog) // a3, kept by the panicking hook
	assert.Equal(t, after.TTL.OldestBacklogAge, d.TTL.OldestBacklogAge)
	failed := map[IndexRef]FailedDeliveries{{"a", "lastModifiedDate_1"}: {Count: 1}}
	assert.Equal(t, failed, d.TTL.FailedDeliveries, "a gauge")
	assert.Equal(t, int64(2), d.TTL.PassDurations.Count)
	assert.Equal(t, after.TTL.BacklogByIndex, d.TTL.BacklogByIndex, "a gauge")
	zeroHist := after.TTL.PassDurations
	zeroHist.Buckets = slices.Clone(zeroHist.Buckets)
	zeroHist.Count, zeroHist.Sum = 0, 0
	for i := range zeroHist.Buckets {
		zeroHist.Buckets[i].Count = 0
	}
	assert.Equal(t, int64(1), d.TTL.ExpiryByIndex[IndexRef{"a", "lastModifiedDate_1"}].Lag.Count, "the lags are a counter")
	assert.Equal(t, int64(5), d.TTL.ExpiryByIndex[IndexRef{"b", "lastModifiedDate_1"}].Lag.Count)
	zeroLags := map[IndexRef]IndexExpiry{}
	for ref, x := range after.TTL.ExpiryByIndex {
		x.Lag = (&lagCounts{}).histogram()
		zeroLags[ref] = x
	}
	assert.Equal(t, Metrics{TTL: TTLMetrics{DeletedByCollection: map[string]int64{}, DeletedByIndex: map[IndexRef]int64{}, DeletedMeasurementsByCollection: map[string]int64{},
		LastPassStart: after.TTL.LastPassStart, PassDurations: zeroHist, Backlog: 1, OldestBacklogAge: after.TTL.OldestBacklogAge,
		BacklogByIndex: after.TTL.BacklogByIndex, FailedDeliveries: failed, ExpiryByIndex: zeroLags}, Storage: after.Storage, Documents: after.Documents,
		DocumentBytes: after.DocumentBytes, Transactions: TransactionMetrics{Aborted: map[string]int64{}, CommitLatency: (&txnManager{}).metrics().CommitLatency}}, after.Sub(after))
	assert.Equal(t, after.Storage, d.Storage, "gauges")
}

// Rule 11: reading metrics while writers and passes run is race-free, and
// the counters only grow.
func TestMetricsConcurrentWithWrites(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 16}))
	c := ttlColl(t, db, "c", 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		goWG(&wg, func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := c.InsertOne(context.Background(), Document{"_id": fmt.Sprintf("%d-%d", w, i), "lastModifiedDate": clk.Now()})
				if !assert.NoError(t, err) {
					return
				}
				_, _ = c.UpdateOne(context.Background(), Document{"_id": fmt.Sprintf("%d-%d", w, i/2)}, Document{"$currentDate": Document{"lastModifiedDate": true}})
			}
		})
	}
	goWG(&wg, func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			clk.Advance(700 * time.Millisecond)
			_, err := db.RunTTLPass(context.Background())
			if !assert.NoError(t, err) {
				return
			}
		}
	})
	var prev Metrics
	// At least 300 reads, and on until passes have run alongside them.
	for i := 0; i < 300 || prev.TTL.Passes < 2; i++ {
		m := db.Metrics()
		assert.GreaterOrEqual(t, m.TTL.Passes, prev.TTL.Passes)
		assert.GreaterOrEqual(t, m.TTL.SubPasses, m.TTL.Passes)
		assert.GreaterOrEqual(t, m.TTL.DeletedDocuments, prev.TTL.DeletedDocuments)
		assert.GreaterOrEqual(t, m.TTL.DeletedByCollection["c"], prev.TTL.DeletedByCollection["c"])
		assert.GreaterOrEqual(t, m.TTL.Backlog, int64(0))
		prev = m
	}
	close(stop)
	wg.Wait()
	final := db.Metrics().TTL
	assert.Positive(t, final.Passes)
	assert.Equal(t, final.DeletedDocuments, final.DeletedByCollection["c"])
}

// Rule: Metrics.Documents has every collection's stored documents (expired
// ones not yet deleted included), kept by the writes themselves: inserts,
// upserts, deletes, TTL deletions, capped evictions and drops move it; an
// update does not. It is still read after Close.
func TestMetricsDocuments(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}))
	assert.Empty(t, db.Metrics().Documents)
	a := ttlColl(t, db, "a", 0)
	assert.Equal(t, map[string]int64{"a": 0}, db.Metrics().Documents, "an empty collection")
	insertDated(t, a, "x", 5, t0)
	_, err := a.UpdateOne(context.Background(), Document{"_id": "x-00000"}, Document{"$set": Document{"n": 9}})
	require.NoError(t, err)
	_, err = a.UpdateOne(context.Background(), Document{"_id": "new"}, Document{"$set": Document{"n": 1}}, UpdateOptions{Upsert: true})
	require.NoError(t, err)
	_, err = a.DeleteOne(context.Background(), Document{"_id": "x-00001"})
	require.NoError(t, err)
	capped, err := db.CreateCollection(context.Background(), "capped", CollectionOptions{Capped: true, MaxDocuments: 3})
	require.NoError(t, err)
	for i := range 5 {
		_, err := capped.InsertOne(context.Background(), Document{"_id": i})
		require.NoError(t, err)
	}
	assert.Equal(t, map[string]int64{"a": 5, "capped": 3}, db.Metrics().Documents)

	clk.Advance(time.Second)
	_, err = db.RunTTLPass(context.Background()) // deletes x-00000, 2, 3, 4 (not "new": no date)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"a": 1, "capped": 3}, db.Metrics().Documents)
	require.NoError(t, db.DropCollection(context.Background(), "capped"))
	assert.Equal(t, map[string]int64{"a": 1}, db.Metrics().Documents)

	// A time-series collection counts its measurements, not its buckets.
	ts, err := db.CreateCollection(context.Background(), "weather", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "sensor"}})
	require.NoError(t, err)
	for i := range 7 {
		_, err := ts.InsertOne(context.Background(), Document{"t": t0.Add(time.Duration(i) * time.Second), "sensor": i % 2, "temp": 20})
		require.NoError(t, err)
	}
	info, _, err := ts.TimeSeriesInfo(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, info.Buckets)
	assert.Equal(t, map[string]int64{"a": 1, "weather": 7}, db.Metrics().Documents)

	d := db.Metrics().Sub(db.Metrics())
	assert.Equal(t, map[string]int64{"a": 1, "weather": 7}, d.Documents, "a gauge: Sub keeps it")
	require.NoError(t, db.Close())
	assert.Equal(t, map[string]int64{"a": 1, "weather": 7}, db.Metrics().Documents, "after Close")
}
