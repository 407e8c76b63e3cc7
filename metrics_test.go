package ttldb

import (
	"context"
	"fmt"
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
			_, err1 := c.UpdateOne(Document{"_id": "x-00000"}, Document{"$currentDate": Document{"lastModifiedDate": true}})
			_, err2 := c.UpdateOne(Document{"_id": "x-00001"}, Document{"$unset": Document{"lastModifiedDate": ""}})
			_, err3 := c.DeleteOne(Document{"_id": "x-00002"})
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
	_, err := a.CreateIndex(IndexModel{Keys: []IndexKey{Asc("seen")}, ExpireAfterSeconds: Seconds(0)})
	require.NoError(t, err)
	insertDated(t, a, "a", 4, t0)
	_, err = a.InsertMany([]Document{
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
	_, err := a.InsertMany([]Document{
		{"_id": 1, "lastModifiedDate": t0},                       // expires t0+10s
		{"_id": 2, "lastModifiedDate": t0.Add(10 * time.Second)}, // t0+20s
		{"_id": 3, "lastModifiedDate": t0.Add(20 * time.Second)}, // t0+30s
	})
	require.NoError(t, err)
	m := db.Metrics().TTL
	assert.Zero(t, m.Backlog)
	assert.Zero(t, m.OldestBacklogAge)

	clk.Advance(25 * time.Second)
	m = db.Metrics().TTL
	assert.Equal(t, int64(2), m.Backlog)
	assert.Equal(t, 15*time.Second, m.OldestBacklogAge)

	// Another collection, two TTL indexes on one document, and many
	// entries.
	_, err = b.CreateIndex(IndexModel{Keys: []IndexKey{Asc("other")}, ExpireAfterSeconds: Seconds(0)})
	require.NoError(t, err)
	_, err = b.InsertOne(Document{"_id": "both", "lastModifiedDate": t0.Add(-time.Hour), "other": t0})
	require.NoError(t, err)
	insertDated(t, b, "bulk", 8209, t0)
	m = db.Metrics().TTL
	assert.Equal(t, int64(2+2+8209), m.Backlog)
	assert.Equal(t, time.Hour+25*time.Second, m.OldestBacklogAge)

	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	m = db.Metrics().TTL
	assert.Zero(t, m.Backlog)
	assert.Zero(t, m.OldestBacklogAge)
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
	assert.Equal(t, Metrics{TTL: TTLMetrics{DeletedByCollection: map[string]int64{}, DeletedByIndex: map[IndexRef]int64{},
		LastPassStart: after.TTL.LastPassStart, Backlog: 1, OldestBacklogAge: after.TTL.OldestBacklogAge,
		FailedDeliveries: failed}, Storage: after.Storage}, after.Sub(after))
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
				_, err := c.InsertOne(Document{"_id": fmt.Sprintf("%d-%d", w, i), "lastModifiedDate": clk.Now()})
				if !assert.NoError(t, err) {
					return
				}
				_, _ = c.UpdateOne(Document{"_id": fmt.Sprintf("%d-%d", w, i/2)}, Document{"$currentDate": Document{"lastModifiedDate": true}})
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
