package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 9 item 9, the reproduction: a hook that archives by InsertOne into
// another collection fails with a duplicate key when a document is offered
// again (here: changed while its hook ran). That document must not block
// the other expired documents of its index, pass after pass.
func TestHookFailureDoesNotBlockIndex(t *testing.T) {
	var (
		db      *DB
		mu      sync.Mutex
		touched bool
	)
	hook := func(ctx context.Context, b ExpiredBatch) error {
		mu.Lock()
		defer mu.Unlock()
		if !touched {
			touched = true
			// Changed while its hook runs: offered again, still expired.
			if _, err := db.Collection(b.Collection).UpdateOne(context.Background(), Document{"_id": "x-00000"}, Document{"$set": Document{"note": "touched"}}); err != nil {
				return err
			}
		}
		for _, d := range b.Docs {
			if _, err := db.Collection("archive").InsertOne(context.Background(), d); err != nil {
				return err // not idempotent: the second offer of x-00000 fails
			}
		}
		return nil
	}
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 4}), WithOnExpire(hook))
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "x", 3, t0)
	clk.Advance(time.Second)

	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.False(t, res.Complete, "a failed delivery leaves the pass incomplete")
	assert.GreaterOrEqual(t, res.Errors, 1)
	assert.Equal(t, 2, res.Deleted, "x-00001 and x-00002 go; x-00000 is set aside")

	for pass := range 5 {
		insertDated(t, c, fmt.Sprintf("new%d", pass), 3, clk.Now())
		clk.Advance(time.Minute)
		res, err = db.RunTTLPass(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 3, res.Deleted, "pass %d: the newer expired documents go", pass)
		assert.False(t, res.Complete)
		assert.GreaterOrEqual(t, res.Errors, 1, "pass %d: the retry of x-00000 failed again", pass)
	}
	assert.Equal(t, 1, count(t, c), "only the failing document is kept")
	_, err = c.FindOne(context.Background(), Document{"_id": "x-00000"}).Document()
	assert.NoError(t, err, "nothing is lost: the failing document stays")
}

// Issue 9 item 9: a hook reports failure per document with an
// *ExpireHookError: the documents it names stay (and are retried alone,
// same delivery identity), the others go; a later hook never sees a
// document an earlier one failed. An ExpireHookError naming no document of
// the batch fails the whole batch.
func TestExpireHookErrorPerDocument(t *testing.T) {
	type delivery struct {
		hook int
		id   any
		ver  uint64
	}
	var (
		mu   sync.Mutex
		seen []delivery
		fail = map[any]int{"x-00001": 1} // _id -> failures left
	)
	hook := func(n int) ExpireHook {
		return func(ctx context.Context, b ExpiredBatch) error {
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, b.Versions, len(b.Docs))
			var failed []any
			for i, d := range b.Docs {
				seen = append(seen, delivery{n, d["_id"], b.Versions[i]})
				if n == 1 && fail[d["_id"]] > 0 {
					fail[d["_id"]]--
					failed = append(failed, d["_id"])
				}
			}
			if len(failed) > 0 {
				return &ExpireHookError{Failed: failed, Err: errors.New("archive refused")}
			}
			return nil
		}
	}
	log := &eventLog{}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook(1)), WithOnExpire(hook(2)), WithDeleteObserver(log.observe))
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "x", 3, t0)
	clk.Advance(time.Second)

	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, res.Deleted)
	assert.Equal(t, 1, res.Errors)
	assert.False(t, res.Complete)
	assert.Equal(t, []any{"x-00000", "x-00002"}, log.ids())
	_, err = c.FindOne(context.Background(), Document{"_id": "x-00001"}).Document()
	require.NoError(t, err, "the failed document stays")
	mu.Lock()
	var first delivery
	for _, d := range seen {
		if d.id == "x-00001" {
			assert.Equal(t, 1, d.hook, "the second hook never saw the document the first failed")
			first = d
		}
	}
	seen = nil
	mu.Unlock()

	clk.Advance(time.Second)
	res, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, res.Deleted)
	assert.True(t, res.Complete)
	assert.Zero(t, res.Errors)
	mu.Lock()
	assert.Equal(t, []delivery{{1, "x-00001", first.ver}, {2, "x-00001", first.ver}}, seen,
		"retried alone, with the same delivery identity")
	mu.Unlock()
	assert.Equal(t, 0, count(t, c))

	// Naming no document of the batch fails all of it.
	db2, clk2 := openMon(t, quiet(MonitorOptions{}), WithOnExpire(func(ctx context.Context, b ExpiredBatch) error {
		return &ExpireHookError{Failed: []any{"not-in-batch"}}
	}))
	c2 := ttlColl(t, db2, "c", 0)
	insertDated(t, c2, "x", 3, t0)
	clk2.Advance(time.Second)
	res, err = db2.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Zero(t, res.Deleted)
	assert.Equal(t, 3, count(t, c2))
	assert.Equal(t, int64(3), db2.Metrics().TTL.FailedDeliveries[IndexRef{"c", "lastModifiedDate_1"}].Count)
}

// Issue 9 item 9: a delivery's identity is (_id, version). The version
// stays while the stored document does not change (a re-offer after a
// failure, a no-op update), and changes with every change, also across a
// delete and an insert of the same _id, so an archive keyed by the pair
// stores each version once.
func TestExpiredBatchVersions(t *testing.T) {
	var (
		mu       sync.Mutex
		versions []uint64
		failNext = true
	)
	hook := func(ctx context.Context, b ExpiredBatch) error {
		mu.Lock()
		defer mu.Unlock()
		versions = append(versions, b.Versions...)
		if failNext {
			failNext = false
			return errors.New("once")
		}
		return nil
	}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook))
	c := ttlColl(t, db, "c", 0)
	pass := func() {
		t.Helper()
		clk.Advance(time.Second)
		_, err := db.RunTTLPass(context.Background())
		require.NoError(t, err)
	}
	doc := Document{"_id": 1, "lastModifiedDate": t0}
	_, err := c.InsertOne(context.Background(), doc)
	require.NoError(t, err)
	pass() // fails
	pass() // retried: same version
	require.Len(t, versions, 2)
	assert.Equal(t, versions[0], versions[1], "not changed: same version")
	assert.NotZero(t, versions[0])

	// Inserted again after its deletion: a new version.
	_, err = c.InsertOne(context.Background(), doc)
	require.NoError(t, err)
	// A no-op update keeps it; a change makes a new one.
	res, err := c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$set": Document{"lastModifiedDate": t0}})
	require.NoError(t, err)
	require.Zero(t, res.ModifiedCount)
	mu.Lock()
	failNext = true
	mu.Unlock()
	pass() // fails: offered version v3
	_, err = c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$set": Document{"note": "x"}})
	require.NoError(t, err)
	pass() // retried: version v4
	require.Len(t, versions, 4)
	assert.NotEqual(t, versions[1], versions[2], "deleted and inserted again: a new version")
	assert.NotEqual(t, versions[2], versions[3], "changed: a new version")
	assert.Equal(t, 0, count(t, c))
}

// Issue 9 item 9: PassResult is not Complete and counts the error when an
// index visit fails (here: its collection is dropped by a hook).
func TestPassIncompleteWhenVisitFails(t *testing.T) {
	var db *DB
	var once sync.Once
	hook := func(ctx context.Context, b ExpiredBatch) error {
		once.Do(func() { require.NoError(t, db.DropCollection(context.Background(), "a")) })
		return nil
	}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook))
	insertDated(t, ttlColl(t, db, "a", 0), "a", 3, t0)
	insertDated(t, ttlColl(t, db, "b", 0), "b", 3, t0)
	clk.Advance(time.Second)
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, res.Errors)
	assert.False(t, res.Complete, "an index visit failed")
	assert.Equal(t, 3, res.Deleted)
}

// Issue 9 item 9: Metrics shows failed deliveries per index: how many, and
// the age of the oldest failure (DB clock); a delivered or deleted document
// leaves the count, and a dropped index's failures are forgotten.
func TestFailedDeliveriesMetrics(t *testing.T) {
	var (
		mu   sync.Mutex
		fail = map[any]bool{}
	)
	hook := func(ctx context.Context, b ExpiredBatch) error {
		mu.Lock()
		defer mu.Unlock()
		var failed []any
		for _, d := range b.Docs {
			if fail[d["_id"]] {
				failed = append(failed, d["_id"])
			}
		}
		if len(failed) > 0 {
			return &ExpireHookError{Failed: failed}
		}
		return nil
	}
	setFail := func(ids ...any) {
		mu.Lock()
		defer mu.Unlock()
		clear(fail)
		for _, id := range ids {
			fail[id] = true
		}
	}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook))
	a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
	pass := func(advance time.Duration) PassResult {
		t.Helper()
		clk.Advance(advance)
		res, err := db.RunTTLPass(context.Background())
		require.NoError(t, err)
		return res
	}
	refA, refB := IndexRef{"a", "lastModifiedDate_1"}, IndexRef{"b", "lastModifiedDate_1"}
	assert.Empty(t, db.Metrics().TTL.FailedDeliveries)

	insertDated(t, a, "a", 3, t0)
	setFail("a-00000", "a-00001")
	pass(time.Second) // fails at t0+1s
	insertDated(t, b, "b", 2, clk.Now())
	setFail("a-00000", "a-00001", "b-00000")
	pass(time.Minute) // a retried and failed again; b-00000 fails at t0+61s
	clk.Advance(time.Minute)
	m := db.Metrics().TTL
	assert.Equal(t, map[IndexRef]FailedDeliveries{
		refA: {Count: 2, OldestAge: 2 * time.Minute},
		refB: {Count: 1, OldestAge: time.Minute},
	}, m.FailedDeliveries)

	setFail("a-00001")
	_, err := b.DeleteOne(context.Background(), Document{"_id": "b-00000"})
	require.NoError(t, err)
	pass(time.Minute)
	m = db.Metrics().TTL
	assert.Equal(t, map[IndexRef]FailedDeliveries{refA: {Count: 1, OldestAge: 3 * time.Minute}}, m.FailedDeliveries,
		"a-00000 delivered, b-00000 deleted by a write")

	require.NoError(t, a.DropIndex(context.Background(), "lastModifiedDate_1"))
	pass(time.Minute)
	assert.Empty(t, db.Metrics().TTL.FailedDeliveries, "a dropped index's failures are forgotten")
}

// Issue 9 item 10: with DeadlineWake and a hook that always fails, the
// monitor backs the index off: the retries come the wake floor after the
// failure, then twice as long each time, up to Interval, instead of at
// every wake floor. The monitor's loop is replayed on the fake clock (its
// own sleepFor, then a pass), so the count is exact: 26 calls in ten
// minutes where 600,000 were made before. A fresh document of the same
// index still wakes the monitor at its threshold and goes at once.
func TestHookFailureBackoff(t *testing.T) {
	const floor, interval = time.Millisecond, time.Minute
	var (
		mu    sync.Mutex
		calls []time.Time // of the failing document
	)
	var clk interface{ Now() time.Time }
	hook := func(ctx context.Context, b ExpiredBatch) error {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range b.Docs {
			if d["_id"] == "poison" {
				calls = append(calls, clk.Now())
				return errors.New("archive refuses it")
			}
		}
		return nil
	}
	db, fake := openMon(t, quiet(MonitorOptions{DeadlineWake: true, DeadlineWakeFloor: floor, Interval: interval}), WithOnExpire(hook))
	clk = fake
	c := ttlColl(t, db, "c", 0)
	_, err := c.InsertOne(context.Background(), Document{"_id": "poison", "lastModifiedDate": t0})
	require.NoError(t, err)

	end := t0.Add(10 * time.Minute)
	freshAt := t0.Add(5*time.Minute + 30*time.Second)
	inserted := false
	for i := 0; fake.Now().Before(end); i++ {
		require.Less(t, i, 10000, "the monitor keeps waking: %d hook calls", len(calls))
		if !inserted && !fake.Now().Before(freshAt) {
			inserted = true
			_, err := c.InsertOne(context.Background(), Document{"_id": "fresh", "lastModifiedDate": fake.Now().Add(10 * time.Second)})
			require.NoError(t, err)
			d := db.monitor.sleepFor(fake.Now())
			assert.Equal(t, 10*time.Second, d, "a fresh document wakes the monitor at its threshold")
		}
		fake.Advance(db.monitor.sleepFor(fake.Now()))
		_, err := db.RunTTLPass(context.Background())
		require.NoError(t, err)
	}
	require.True(t, inserted)
	_, err = c.FindOne(context.Background(), Document{"_id": "fresh"}).Document()
	assert.ErrorIs(t, err, ErrNotFound, "the fresh document went while the failing one backs off")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 26)
	assert.Equal(t, t0.Add(floor), calls[0], "the first offer is at the threshold (plus the floor)")
	for i := 1; i < len(calls); i++ {
		want := min(floor<<(i-1), interval)
		assert.Equal(t, want, calls[i].Sub(calls[i-1]), "gap %d", i)
	}
	f := db.Metrics().TTL.FailedDeliveries[IndexRef{"c", "lastModifiedDate_1"}]
	assert.Equal(t, int64(1), f.Count)
}
