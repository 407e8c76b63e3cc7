package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// Rule 2, MongoDB's own example ("Deletion Process"): two TTL indexes, the
// per-index cap lowered to 20, 59 and 1 expired documents: the first round
// deletes 20 + 1, the second 20, the third 19 and finds the index drained:
// 3 rounds, 60 deleted, 1 pass. An exact multiple of the cap costs one more
// round, which finds nothing. The rounds are one sub-pass, as MongoDB's
// monitor counts them (its code repeats rounds within a sub-pass until its
// 60 s target, where the manual's prose calls each round a sub-pass); with
// SubPassEveryRound each round is a sub-pass.
func TestSubPassesMongoDBCase(t *testing.T) {
	for _, tc := range []struct {
		a, b   int
		rounds int
	}{
		{59, 1, 3},
		{60, 1, 4},
		{40, 1, 3},
		{20, 20, 2},
		{19, 1, 1},
		{0, 0, 1},
	} {
		for _, target := range []time.Duration{0, SubPassEveryRound} {
			subPasses := 1
			if target == SubPassEveryRound {
				subPasses = tc.rounds
			}
			t.Run(fmt.Sprintf("%d+%d/%s", tc.a, tc.b, targetName(target)), func(t *testing.T) {
				testSubPassesMongoDBCase(t, tc.a, tc.b, target, subPasses)
			})
		}
	}
}

func testSubPassesMongoDBCase(t *testing.T, na, nb int, target time.Duration, subPasses int) {
	db, clk := openMon(t, quiet(MonitorOptions{PerIndexMaxDeletes: 20, SubPassMaxTime: target}))
	a, b := ttlColl(t, db, "a", 60), ttlColl(t, db, "b", 60)
	if na > 0 {
		insertDated(t, a, "a", na, t0)
	}
	if nb > 0 {
		insertDated(t, b, "b", nb, t0)
	}
	insertDated(t, a, "alive", 5, t0.Add(time.Hour))
	clk.Advance(time.Minute)

	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, subPasses, res.SubPasses, "sub-passes")
	assert.Equal(t, na+nb, res.Deleted)
	assert.True(t, res.Complete)
	assert.Equal(t, t0.Add(time.Minute), res.Now)
	m := db.Metrics().TTL
	assert.Equal(t, int64(1), m.Passes)
	assert.Equal(t, int64(subPasses), m.SubPasses)
	assert.Equal(t, int64(na+nb), m.DeletedDocuments)
	assert.Equal(t, 5, count(t, a))
	assert.Equal(t, 0, count(t, b))
}

// Rule 2: an index (or collection) created mid-pass is visited at the next
// sub-pass of the same pass, if there is one: each sub-pass re-reads the
// list of TTL indexes, its rounds do not. The index is created from an
// expire hook in the first round, while a capped index needs more rounds:
// with SubPassEveryRound they are sub-passes and the new index is visited
// in the second; with the default target they are one sub-pass, which ends
// the pass, and the new index waits for the next pass.
func TestNewIndexPickedUpAtNextSubPass(t *testing.T) {
	for _, tc := range []struct {
		newCollection bool
		target        time.Duration
	}{{true, SubPassEveryRound}, {false, SubPassEveryRound}, {true, 0}, {false, 0}} {
		newCollection := tc.newCollection
		t.Run(fmt.Sprintf("newCollection=%v/%s", newCollection, targetName(tc.target)), func(t *testing.T) {
			var (
				db   *DB
				once sync.Once
				herr error
			)
			hook := func(ctx context.Context, b ExpiredBatch) error {
				once.Do(func() {
					// "late" exists with expired documents but no TTL index
					// until now (or does not exist at all).
					late := db.Collection("late")
					if newCollection {
						insertDatedErr(late, "late", 5, t0, &herr)
					}
					_, err := late.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(0)})
					if err != nil {
						herr = err
					}
				})
				return nil
			}
			var clk interface{ Advance(time.Duration) }
			db, clk = openMon(t, quiet(MonitorOptions{PerIndexMaxDeletes: 20, SubPassMaxTime: tc.target}), WithOnExpire(hook))
			a := ttlColl(t, db, "a", 0)
			insertDated(t, a, "a", 50, t0)
			if !newCollection {
				insertDated(t, db.Collection("late"), "late", 5, t0)
			}
			clk.Advance(time.Second)

			res, err := db.RunTTLPass(context.Background())
			require.NoError(t, err)
			require.NoError(t, herr)
			if tc.target == 0 {
				assert.Equal(t, 50, res.Deleted)
				assert.Equal(t, 1, res.SubPasses) // rounds: a 20, 20, 10
				assert.Equal(t, 5, count(t, db.Collection("late")))
				res, err = db.RunTTLPass(context.Background())
				require.NoError(t, err)
				assert.Equal(t, 5, res.Deleted)
			} else {
				assert.Equal(t, 55, res.Deleted)
				assert.Equal(t, 3, res.SubPasses) // a: 20, 20 (+late: 5), 10
			}
			assert.Equal(t, 0, count(t, db.Collection("late")))
			assert.Equal(t, int64(5), db.Metrics().TTL.DeletedByCollection["late"])
		})
	}
}

func insertDatedErr(c *Collection, prefix string, n int, date time.Time, errp *error) {
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = Document{"_id": fmt.Sprintf("%s-%05d", prefix, i), "lastModifiedDate": date}
	}
	if _, err := c.InsertMany(context.Background(), docs); err != nil {
		*errp = err
	}
}

// Rule 2: a pass ends when a sub-pass ends with no index cut short, as
// MongoDB's does. Documents added to an already drained index (expired at
// the pass's now) go in the same pass when a later sub-pass visits the
// index again (with SubPassEveryRound, the second); the rounds of one
// sub-pass visit only the indexes cut short, so with the default target
// they wait for the next pass.
func TestDocumentsAddedToDrainedIndex(t *testing.T) {
	for _, target := range []time.Duration{SubPassEveryRound, 0} {
		t.Run(targetName(target), func(t *testing.T) {
			var (
				db   *DB
				once sync.Once
				ierr error
			)
			obs := func(ev DeleteEvent) {
				if ev.Collection == "b" {
					once.Do(func() { insertDatedErr(db.Collection("b"), "b2", 4, t0, &ierr) })
				}
			}
			db, clk := openMon(t, quiet(MonitorOptions{PerIndexMaxDeletes: 20, SubPassMaxTime: target}), WithDeleteObserver(obs))
			a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
			insertDated(t, a, "a", 50, t0)
			insertDated(t, b, "b", 3, t0)
			clk.Advance(time.Second)

			res, err := db.RunTTLPass(context.Background())
			require.NoError(t, err)
			require.NoError(t, ierr)
			if target == 0 {
				assert.Equal(t, 53, res.Deleted)
				assert.Equal(t, 1, res.SubPasses)
				assert.Equal(t, 4, count(t, b))
				res, err = db.RunTTLPass(context.Background())
				require.NoError(t, err)
				assert.Equal(t, 4, res.Deleted)
			} else {
				assert.Equal(t, 57, res.Deleted)
				assert.Equal(t, 3, res.SubPasses)
			}
			assert.Equal(t, 0, count(t, b))
			assert.Equal(t, int64(7), db.Metrics().TTL.DeletedByCollection["b"])
		})
	}
}

// visit is one index visit as observed from a DeleteObserver: the deletions
// reported while CurrentOp showed the same visit.
type visit struct {
	Index   string
	Deleted int
}

// visitRecorder groups DeleteEvents by index visit, telling visits apart by
// CurrentOp's RunningSince (the clock time at the visit's start, distinct
// for every visit when the clock auto-advances).
type visitRecorder struct {
	db     *DB
	mu     sync.Mutex
	visits []visit
	since  []time.Time
}

func (r *visitRecorder) observe(ev DeleteEvent) {
	ops := r.db.CurrentOp()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(ops) != 1 {
		r.visits = append(r.visits, visit{"?no current op", len(ev.IDs)})
		r.since = append(r.since, time.Time{})
		return
	}
	n := len(r.visits)
	if n > 0 && r.since[n-1].Equal(ops[0].RunningSince) && r.visits[n-1].Index == ev.Collection {
		r.visits[n-1].Deleted += len(ev.IDs)
		return
	}
	r.visits = append(r.visits, visit{ev.Collection, len(ev.IDs)})
	r.since = append(r.since, ops[0].RunningSince)
}

// Rules 2 and 16: the 1 s per-index budget, on the injected clock. Every
// batch takes 100 ms (an observer advances the clock; counting the
// monitor's own clock reads would tie the test to them). The budget is
// checked after each batch, so with batches of 10 the 10th batch sees 1 s
// spent: 100 documents per visit, and the index is visited again in the
// next round of the same sub-pass (the 60 s target is far). The other
// index, not cut, is drained in the first round.
func TestPerIndexTimeBudget(t *testing.T) {
	rec := &visitRecorder{}
	var clk *ttltest.Clock
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 10}), WithDeleteObserver(func(ev DeleteEvent) {
		rec.observe(ev)
		clk.Advance(100 * time.Millisecond)
	}))
	rec.db = db
	a, b := ttlColl(t, db, "a", 60), ttlColl(t, db, "b", 60)
	insertDated(t, a, "a", 250, t0.Add(-time.Hour))
	insertDated(t, b, "b", 30, t0.Add(-time.Hour))

	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 280, res.Deleted)
	assert.Equal(t, 1, res.SubPasses)
	assert.Equal(t, t0, res.Now, "the pass reads now once, at its start")
	assert.Equal(t, []visit{{"a", 100}, {"b", 30}, {"a", 100}, {"a", 50}}, rec.visits)
	assert.Equal(t, int64(1), db.Metrics().TTL.SubPasses)
}

// Rules 2 and 16: the 60 s sub-pass target, checked between rounds. Time
// moves 1 s per batch of 1 (an observer advances the clock); a visit ends
// after 10 s. The first round deletes a 10, b 5 (t = 15 s), then rounds
// over a alone end at 25, 35, ... 65 s: past the target, the sub-pass ends
// after a's sixth visit. The second sub-pass re-reads the indexes and
// rounds over a: four visits of 10, and a fifth finds it drained.
func TestSubPassTimeCutoff(t *testing.T) {
	rec := &visitRecorder{}
	var clk *ttltest.Clock
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 1, PerIndexMaxTime: 10 * time.Second}), WithDeleteObserver(func(ev DeleteEvent) {
		rec.observe(ev)
		clk.Advance(time.Second)
	}))
	rec.db = db
	a, b := ttlColl(t, db, "a", 60), ttlColl(t, db, "b", 60)
	insertDated(t, a, "a", 100, t0.Add(-time.Hour))
	insertDated(t, b, "b", 5, t0.Add(-time.Hour))

	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 105, res.Deleted)
	assert.Equal(t, 2, res.SubPasses)
	want := []visit{{"a", 10}, {"b", 5}}
	for range 5 + 4 {
		want = append(want, visit{"a", 10})
	}
	assert.Equal(t, want, rec.visits)
	assert.Equal(t, 105*time.Second, res.Duration)
}

// Rule 2: the per-index cap is PerIndexMaxDeletes deletions per visit,
// counted over batches (here 7 batches of at most 3).
func TestPerIndexMaxDeletesAcrossBatches(t *testing.T) {
	rec := &visitRecorder{}
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 3, PerIndexMaxDeletes: 20}), WithDeleteObserver(rec.observe))
	rec.db = db
	a := ttlColl(t, db, "a", 0)
	insertDated(t, a, "a", 45, t0.Add(-time.Second))
	clk.SetAutoAdvance(time.Millisecond) // distinct RunningSince per visit
	res, err := db.RunTTLPass(context.Background())
	clk.SetAutoAdvance(0)
	require.NoError(t, err)
	assert.Equal(t, 45, res.Deleted)
	assert.Equal(t, 1, res.SubPasses) // three rounds
	assert.Equal(t, []visit{{"a", 20}, {"a", 20}, {"a", 5}}, rec.visits)
}

// Rule 2: "now" is read once, at the pass's start: documents that expire
// while the pass runs wait for the next pass.
func TestPassNowReadOnce(t *testing.T) {
	var clkAdvance func(time.Duration)
	var once sync.Once
	hook := func(ctx context.Context, b ExpiredBatch) error {
		once.Do(func() { clkAdvance(time.Hour) })
		return nil
	}
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 5}), WithOnExpire(hook))
	clkAdvance = clk.Advance
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "old", 20, t0.Add(-time.Second))
	insertDated(t, c, "soon", 7, t0.Add(time.Minute))
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, t0, res.Now)
	assert.Equal(t, 20, res.Deleted)
	assert.Equal(t, time.Hour, res.Duration)
	assert.Equal(t, 7, count(t, c))

	res, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 7, res.Deleted)
}

// Rule 3: MaxTotalRemoves caps a pass's deletions over all collections; the
// rest goes at the next pass.
func TestMaxTotalRemoves(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{MaxTotalRemoves: 25, BatchSize: 4}))
	a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
	insertDated(t, a, "a", 20, t0)
	insertDated(t, b, "b", 20, t0)
	clk.Advance(time.Second)

	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 25, res.Deleted)
	assert.False(t, res.Complete)
	assert.Equal(t, 15, count(t, a)+count(t, b))

	res, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 15, res.Deleted)
	assert.True(t, res.Complete)
	assert.Equal(t, int64(40), db.Metrics().TTL.DeletedDocuments)
	assert.Equal(t, int64(2), db.Metrics().TTL.Passes)
}

// Rule 3: MaxCollectionRemoves caps a pass's deletions in any one collection
// (over all its TTL indexes); other collections are not held back.
func TestMaxCollectionRemoves(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{MaxCollectionRemoves: 10, BatchSize: 3}))
	a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
	_, err := a.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("other")}, ExpireAfterSeconds: Seconds(0)})
	require.NoError(t, err)
	insertDated(t, a, "a", 12, t0)
	_, err = a.InsertMany(context.Background(), []Document{{"_id": "o1", "other": t0}, {"_id": "o2", "other": t0}})
	require.NoError(t, err)
	insertDated(t, b, "b", 5, t0)
	clk.Advance(time.Second)

	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 15, res.Deleted)
	assert.Equal(t, 4, count(t, a))
	assert.Equal(t, 0, count(t, b))
	m := db.Metrics().TTL
	assert.Equal(t, int64(10), m.DeletedByCollection["a"])
	assert.Equal(t, int64(5), m.DeletedByCollection["b"])

	res, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 4, res.Deleted)
	assert.Equal(t, 0, count(t, a))
}

// Rule 4: the monitor holds a collection's locks for one bounded batch at a
// time. Observers run between batches, with no lock held: a writer and a
// reader of the same collection get through from inside one.
func TestBatchedDeletesReleaseLocksBetweenBatches(t *testing.T) {
	var (
		db    *DB
		mu    sync.Mutex
		sizes []int
		werr  error
	)
	obs := func(ev DeleteEvent) {
		c := db.Collection(ev.Collection)
		_, err := c.InsertOne(context.Background(), Document{"lastModifiedDate": t0.Add(time.Hour)})
		if err == nil {
			_, err = c.FindOne(context.Background(), nil).Document()
		}
		mu.Lock()
		sizes = append(sizes, len(ev.IDs))
		werr = errors.Join(werr, err)
		mu.Unlock()
	}
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 100}), WithDeleteObserver(obs))
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "x", 1050, t0)
	clk.Advance(time.Second)
	within(t, 10*time.Second, "RunTTLPass", func() {
		res, err := db.RunTTLPass(context.Background())
		assert.NoError(t, err)
		assert.Equal(t, 1050, res.Deleted)
	})
	require.NoError(t, werr)
	assert.Len(t, sizes, 11)
	for _, n := range sizes {
		assert.LessOrEqual(t, n, 100)
	}
	assert.Equal(t, 11, count(t, c)) // the documents the observer inserted
}

// Rule 5, deterministically: the document a hook is shown may change before
// its batch commits. A date pushed forward, an unset date, a deletion and a
// longer ExpireAfterSeconds all make it survive (and not be counted); a
// change that leaves it expired does not save it, and the hook sees the new
// version before it goes.
func TestRecheckAtDelete(t *testing.T) {
	type step struct {
		name   string
		change func(c *Collection) error
		// survives: the changed document x-00000 is still there after the
		// pass; counted: deletions in the pass.
		survives bool
		counted  int
	}
	setDate := func(d time.Time) func(c *Collection) error {
		return func(c *Collection) error {
			_, err := c.UpdateOne(context.Background(), Document{"_id": "x-00000"}, Document{"$set": Document{"lastModifiedDate": d}})
			return err
		}
	}
	for _, st := range []step{
		{"date pushed forward", setDate(t0.Add(time.Hour)), true, 4},
		{"$currentDate", func(c *Collection) error {
			_, err := c.UpdateOne(context.Background(), Document{"_id": "x-00000"}, Document{"$currentDate": Document{"lastModifiedDate": true}})
			return err
		}, true, 4},
		{"date unset", func(c *Collection) error {
			_, err := c.UpdateOne(context.Background(), Document{"_id": "x-00000"}, Document{"$unset": Document{"lastModifiedDate": ""}})
			return err
		}, true, 4},
		{"deleted by the application", func(c *Collection) error {
			_, err := c.DeleteOne(context.Background(), Document{"_id": "x-00000"})
			return err
		}, false, 4},
		{"ExpireAfterSeconds raised", func(c *Collection) error {
			_, err := c.CollMod(context.Background(), CollModIndex{Name: "lastModifiedDate_1", ExpireAfterSeconds: Seconds(3600)})
			return err
		}, true, 0},
		{"changed but still expired", func(c *Collection) error {
			_, err := c.UpdateOne(context.Background(), Document{"_id": "x-00000"}, Document{"$set": Document{"note": "touched"}})
			return err
		}, false, 5},
		{"date moved but still expired", setDate(t0.Add(-time.Minute)), false, 5},
	} {
		t.Run(st.name, func(t *testing.T) {
			var (
				db      *DB
				calls   int
				herr    error
				touched []Document
			)
			hook := func(ctx context.Context, b ExpiredBatch) error {
				calls++
				if calls == 1 {
					herr = st.change(db.Collection(b.Collection))
				} else {
					touched = append(touched, b.Docs...)
				}
				return nil
			}
			db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook))
			c := ttlColl(t, db, "c", 60)
			insertDated(t, c, "x", 5, t0)
			clk.Advance(2 * time.Minute)
			res, err := db.RunTTLPass(context.Background())
			require.NoError(t, err)
			require.NoError(t, herr)
			assert.Equal(t, st.counted, res.Deleted)
			assert.Equal(t, int64(st.counted), db.Metrics().TTL.DeletedDocuments)
			_, err = c.FindOne(context.Background(), Document{"_id": "x-00000"}).Document()
			if st.survives {
				assert.NoError(t, err, "the changed document must survive")
			} else {
				assert.ErrorIs(t, err, ErrNotFound)
			}
			if st.name == "changed but still expired" {
				require.Len(t, touched, 1, "the new version is offered to the hook in the same pass")
				assert.Equal(t, "touched", touched[0]["note"])
			}
		})
	}
}

// Rule 6: a collection dropped mid-pass (here from an expire hook) is
// logged and counted, and the pass goes on to the other collections.
func TestCollectionDroppedMidPass(t *testing.T) {
	for _, drop := range []string{"a", "b"} {
		t.Run("drop "+drop, func(t *testing.T) {
			var (
				db   *DB
				once sync.Once
				derr error
			)
			hook := func(ctx context.Context, b ExpiredBatch) error {
				if b.Collection == "a" {
					once.Do(func() { derr = db.DropCollection(context.Background(), drop) })
				}
				return nil
			}
			logger, logs := bufferLogger()
			db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook), WithLogger(logger))
			for _, n := range []string{"a", "b", "c"} {
				insertDated(t, ttlColl(t, db, n, 0), n, 10, t0)
			}
			clk.Advance(time.Second)
			res, err := db.RunTTLPass(context.Background())
			require.NoError(t, err)
			require.NoError(t, derr)
			assert.Equal(t, 1, res.Errors)
			assert.Equal(t, 0, count(t, db.Collection("c")), "the pass went on to c")
			m := db.Metrics().TTL
			assert.Equal(t, int64(1), m.IndexErrors)
			assert.Equal(t, int64(1), m.Passes)
			assert.Contains(t, logs.String(), "ttl index visit failed")
			assert.Contains(t, logs.String(), "collection="+drop)
			if drop == "b" {
				assert.Equal(t, int64(10), m.DeletedByCollection["a"])
			}
			assert.Equal(t, int64(0), m.DeletedByCollection[drop])
		})
	}
}

// Rule 6: a TTL index dropped mid-pass ends its visit (counted, logged);
// its documents no longer expire, and the pass ends even on a clock that
// does not move (a stale expiry tree once made the visit spin).
func TestIndexDroppedMidPass(t *testing.T) {
	var (
		db   *DB
		once sync.Once
		derr error
	)
	hook := func(ctx context.Context, b ExpiredBatch) error {
		once.Do(func() { derr = db.Collection("b").DropIndex(context.Background(), "lastModifiedDate_1") })
		return nil
	}
	logger, logs := bufferLogger()
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook), WithLogger(logger))
	insertDated(t, ttlColl(t, db, "a", 0), "a", 10, t0)
	insertDated(t, ttlColl(t, db, "b", 0), "b", 10, t0)
	insertDated(t, ttlColl(t, db, "c", 0), "c", 10, t0)
	clk.Advance(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.NoError(t, derr)
	assert.Equal(t, 20, res.Deleted)
	assert.Equal(t, 1, res.Errors)
	assert.Equal(t, 10, count(t, db.Collection("b")))
	assert.Equal(t, int64(1), db.Metrics().TTL.IndexErrors)
	assert.Contains(t, logs.String(), "index dropped")
}

// Rule 7 and rule 1: a disabled monitor and a secondary run no pass and
// move no metric while the clock runs past many intervals; re-enabling (or
// becoming primary) resumes.
func TestMonitorIdleWhenDisabledOrSecondary(t *testing.T) {
	type setup struct {
		name   string
		opts   func(primary *atomic.Bool) []Option
		stop   func(db *DB, primary *atomic.Bool) // make the monitor idle; nil: idle from Open
		resume func(db *DB, primary *atomic.Bool)
		// pokes: 1 if stop and resume poke the monitor, which then stops
		// its timer and arms a new one.
		pokes int
	}
	for _, s := range []setup{
		{
			name:   "MonitorOptions.Disabled",
			opts:   func(*atomic.Bool) []Option { return []Option{WithMonitor(MonitorOptions{Disabled: true})} },
			resume: func(db *DB, _ *atomic.Bool) { db.SetTTLMonitorEnabled(true) },
			pokes:  1,
		},
		{
			name:   "SetTTLMonitorEnabled(false)",
			opts:   func(*atomic.Bool) []Option { return nil },
			stop:   func(db *DB, _ *atomic.Bool) { db.SetTTLMonitorEnabled(false) },
			resume: func(db *DB, _ *atomic.Bool) { db.SetTTLMonitorEnabled(true) },
			pokes:  1,
		},
		{
			name:   "SetPrimary(false)",
			opts:   func(*atomic.Bool) []Option { return nil },
			stop:   func(db *DB, _ *atomic.Bool) { db.SetPrimary(false) },
			resume: func(db *DB, _ *atomic.Bool) { db.SetPrimary(true) },
			pokes:  1,
		},
		{
			name:   "WithPrimary(func)",
			opts:   func(p *atomic.Bool) []Option { return []Option{WithPrimary(p.Load)} },
			stop:   func(_ *DB, p *atomic.Bool) { p.Store(false) },
			resume: func(_ *DB, p *atomic.Bool) { p.Store(true) },
			pokes:  0,
		},
	} {
		t.Run(s.name, func(t *testing.T) {
			primary := &atomic.Bool{}
			primary.Store(true)
			events := make(chan DeleteEvent, 100)
			db, clk := openMon(t, append(s.opts(primary), WithDeleteObserver(func(ev DeleteEvent) { events <- ev }))...)
			c := ttlColl(t, db, "c", 0)
			insertDated(t, c, "x", 10, t0)
			clk.BlockUntilWaiters(1)
			if s.stop != nil {
				armed := clk.Armed()
				s.stop(db, primary)
				waitRearmed(t, clk, armed+s.pokes)
			}
			for range 20 {
				clk.Advance(DefaultMonitorInterval)
				clk.BlockUntilWaiters(1) // the monitor woke, looked and went back to sleep
			}
			m := db.Metrics().TTL
			assert.Zero(t, m.Passes)
			assert.Zero(t, m.SubPasses)
			assert.Zero(t, m.DeletedDocuments)
			assert.Equal(t, 10, count(t, c))
			assert.Len(t, events, 0)
			if s.name != "MonitorOptions.Disabled" && s.name != "SetTTLMonitorEnabled(false)" {
				_, err := db.RunTTLPass(context.Background())
				assert.ErrorIs(t, err, ErrNotPrimary)
			}

			armed := clk.Armed()
			s.resume(db, primary)
			waitRearmed(t, clk, armed+s.pokes)
			clk.Advance(DefaultMonitorInterval)
			<-events
			require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 1 }, 5*time.Second, time.Millisecond)
			assert.Equal(t, 0, count(t, c))
		})
	}
}

// Rule 1: RunTTLPass still runs on request when the monitor is disabled.
func TestRunTTLPassWhenDisabled(t *testing.T) {
	db, clk := openMon(t, WithMonitor(MonitorOptions{Disabled: true}))
	insertDated(t, ttlColl(t, db, "c", 0), "x", 3, t0)
	clk.Advance(time.Second)
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, res.Deleted)
}

// Rule 1: the background monitor sleeps the interval (60 s by default) on
// the injected clock, then runs a pass; SetTTLMonitorInterval takes effect
// at once.
func TestBackgroundMonitorSchedule(t *testing.T) {
	assert.Equal(t, 60*time.Second, DefaultMonitorOptions().Interval)
	events := make(chan DeleteEvent, 10)
	db, clk := openMon(t, WithDeleteObserver(func(ev DeleteEvent) { events <- ev }))
	c := ttlColl(t, db, "c", 30)
	insertDated(t, c, "x", 3, t0)

	clk.BlockUntilWaiters(1)
	wake, ok := clk.NextWake()
	require.True(t, ok)
	assert.Equal(t, t0.Add(60*time.Second), wake, "default interval")

	clk.Advance(59 * time.Second)
	assert.Zero(t, db.Metrics().TTL.Passes)
	clk.Advance(time.Second)
	ev := <-events
	assert.Equal(t, t0.Add(60*time.Second), ev.PassNow)
	assert.Len(t, ev.IDs, 3)
	require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 1 }, 5*time.Second, time.Millisecond)

	// An idle pass at the next interval still counts.
	clk.BlockUntilWaiters(1)
	clk.Advance(60 * time.Second)
	require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int64(2), db.Metrics().TTL.SubPasses)

	// A shorter interval re-arms the sleep from now.
	clk.BlockUntilWaiters(1)
	db.SetTTLMonitorInterval(10 * time.Second)
	now := t0.Add(120 * time.Second)
	require.Eventually(t, func() bool {
		w, ok := clk.NextWake()
		return ok && w.Equal(now.Add(10*time.Second))
	}, 5*time.Second, time.Millisecond)
	insertDated(t, c, "y", 2, now.Add(-30*time.Second))
	clk.Advance(10 * time.Second)
	ev = <-events
	assert.Equal(t, now.Add(10*time.Second), ev.PassNow)
	require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 3 }, 5*time.Second, time.Millisecond)

	// A longer one too, from now: after the 10 s pass the monitor sleeps
	// 10 s; set to 5 min it stops that timer and sleeps 5 min from now.
	// Only the live timer counts as a waiter.
	now = now.Add(10 * time.Second)
	require.Eventually(t, func() bool {
		w, ok := clk.NextWake()
		return ok && w.Equal(now.Add(10*time.Second))
	}, 5*time.Second, time.Millisecond)
	armed := clk.Armed()
	db.SetTTLMonitorInterval(5 * time.Minute)
	waitRearmed(t, clk, armed+1)
	assert.Equal(t, 1, clk.Waiters())
	clk.Advance(50 * time.Second)
	w, _ := clk.NextWake()
	assert.Equal(t, now.Add(5*time.Minute), w)
	assert.Equal(t, 1, clk.Waiters())
	assert.Equal(t, int64(3), db.Metrics().TTL.Passes)
	db.SetTTLMonitorInterval(0) // ignored
	db.SetTTLMonitorInterval(-time.Second)
	assert.Equal(t, 5*time.Minute, db.monitor.opts.Load().Interval)
}

// Rule 14: an expire hook's error keeps its batch, whose documents are set
// aside and retried after the backoff: nothing is lost, the batches after
// it go in the same pass, and the error is counted.
func TestHookErrorRetriedNextPass(t *testing.T) {
	var (
		mu       sync.Mutex
		calls    int
		failOn   = map[int]bool{2: true}
		archived []any
	)
	hook := func(ctx context.Context, b ExpiredBatch) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if failOn[calls] {
			return errors.New("archive unavailable")
		}
		for _, d := range b.Docs {
			archived = append(archived, d["_id"])
		}
		return nil
	}
	log := &eventLog{}
	logger, logs := bufferLogger()
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 10}), WithOnExpire(hook), WithDeleteObserver(log.observe), WithLogger(logger))
	c := ttlColl(t, db, "c", 0)
	ids := insertDated(t, c, "x", 30, t0)
	clk.Advance(time.Second)

	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 20, res.Deleted, "the first and third batches went, the second failed")
	assert.Equal(t, 1, res.Errors)
	assert.False(t, res.Complete)
	assert.Equal(t, 10, count(t, c))
	m := db.Metrics().TTL
	assert.Equal(t, int64(1), m.HookErrors)
	assert.Equal(t, int64(0), m.HookPanics)
	assert.Equal(t, int64(0), m.IndexErrors)
	assert.Equal(t, int64(10), m.FailedDeliveries[IndexRef{"c", "lastModifiedDate_1"}].Count)
	assert.Contains(t, logs.String(), "archive unavailable")

	res, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 0, res.Deleted, "the retry waits for its backoff")
	clk.Advance(time.Second)
	res, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 10, res.Deleted)
	assert.True(t, res.Complete)
	assert.Equal(t, 0, count(t, c))
	assert.ElementsMatch(t, ids, archived, "every deleted document was archived once")
	assert.ElementsMatch(t, ids, log.ids())
	assert.Empty(t, db.Metrics().TTL.FailedDeliveries)
}

// Rule 14: a panicking hook is recovered, logged through slog, counted,
// treated as an error; the pass goes on with the other indexes, and the
// batch is retried after its backoff.
func TestHookPanicRecovered(t *testing.T) {
	var panicked atomic.Bool
	hook := func(ctx context.Context, b ExpiredBatch) error {
		if b.Collection == "a" && panicked.CompareAndSwap(false, true) {
			panic("archive exploded")
		}
		return nil
	}
	logger, logs := bufferLogger()
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook), WithLogger(logger))
	a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
	insertDated(t, a, "a", 5, t0)
	insertDated(t, b, "b", 5, t0)
	clk.Advance(time.Second)

	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, res.Errors)
	assert.Equal(t, 5, res.Deleted)
	assert.Equal(t, 5, count(t, a))
	assert.Equal(t, 0, count(t, b))
	m := db.Metrics().TTL
	assert.Equal(t, int64(1), m.HookPanics)
	assert.Equal(t, int64(1), m.HookErrors)
	assert.Contains(t, logs.String(), "ttl expire hook panicked")
	assert.Contains(t, logs.String(), "archive exploded")

	clk.Advance(time.Second)
	res, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5, res.Deleted)
	assert.Equal(t, 0, count(t, a))
}

// Rule 14: the background monitor survives a panicking hook and goes on
// with its next pass.
func TestHookPanicMonitorGoesOn(t *testing.T) {
	var calls atomic.Int64
	hook := func(ctx context.Context, b ExpiredBatch) error {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		return nil
	}
	db, clk := openMon(t, WithOnExpire(hook))
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "x", 5, t0)
	clk.BlockUntilWaiters(1)
	clk.Advance(time.Minute)
	require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int64(1), db.Metrics().TTL.HookPanics)
	assert.Equal(t, 5, count(t, c))
	clk.BlockUntilWaiters(1)
	clk.Advance(time.Minute)
	require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 0, count(t, c))
}

// Rule 14: a hook receives copies, outside every lock: it can read and
// write the same collection, and changing what it received changes nothing
// stored.
func TestHookGetsCopiesOutsideLocks(t *testing.T) {
	var (
		db    *DB
		herr  error
		batch ExpiredBatch
	)
	hook := func(ctx context.Context, b ExpiredBatch) error {
		batch = b
		c := db.Collection(b.Collection)
		_, err := c.FindOne(context.Background(), Document{"_id": b.Docs[0]["_id"]}).Document()
		herr = errors.Join(herr, err)
		_, err = c.InsertOne(context.Background(), Document{"_id": "from-hook", "lastModifiedDate": t0.Add(time.Hour)})
		herr = errors.Join(herr, err)
		_, err = c.CountDocuments(context.Background(), nil)
		herr = errors.Join(herr, err)
		for _, d := range b.Docs {
			d["lastModifiedDate"] = t0.Add(100 * time.Hour)
			d["nested"].(map[string]any)["k"] = "changed"
		}
		return errors.New("keep them")
	}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook))
	c := ttlColl(t, db, "c", 0)
	_, err := c.InsertOne(context.Background(), Document{"_id": 1, "lastModifiedDate": t0, "nested": Document{"k": "v"}})
	require.NoError(t, err)
	clk.Advance(time.Second)
	within(t, 10*time.Second, "RunTTLPass", func() {
		_, err := db.RunTTLPass(context.Background())
		assert.NoError(t, err)
	})
	require.NoError(t, herr)
	assert.Equal(t, "c", batch.Collection)
	assert.Equal(t, "lastModifiedDate_1", batch.Index)
	require.Len(t, batch.Docs, 1)
	got, err := c.FindOne(context.Background(), Document{"_id": 1}).Document()
	require.NoError(t, err)
	assert.Equal(t, t0, got["lastModifiedDate"])
	assert.Equal(t, "v", got["nested"].(map[string]any)["k"])
	_, err = c.FindOne(context.Background(), Document{"_id": "from-hook"}).Document()
	assert.NoError(t, err)
}

// Rule 14: observers see committed deletions with their _id values, after
// the commit.
func TestDeleteObserverSeesCommittedDeletions(t *testing.T) {
	var (
		db      *DB
		visible []error
	)
	log := &eventLog{}
	obs := func(ev DeleteEvent) {
		log.observe(ev)
		for _, id := range ev.IDs {
			_, err := db.Collection(ev.Collection).FindOne(context.Background(), Document{"_id": id}).Document()
			visible = append(visible, err)
		}
	}
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 4}), WithDeleteObserver(obs))
	c := ttlColl(t, db, "c", 10)
	ids := insertDated(t, c, "x", 10, t0)
	insertDated(t, c, "alive", 3, t0.Add(time.Hour))
	clk.Advance(time.Minute)
	_, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, ids, log.ids())
	for _, ev := range log.events() {
		assert.Equal(t, "c", ev.Collection)
		assert.Equal(t, "lastModifiedDate_1", ev.Index)
		assert.Equal(t, t0.Add(time.Minute), ev.PassNow)
		assert.LessOrEqual(t, len(ev.IDs), 4)
	}
	for _, err := range visible {
		assert.ErrorIs(t, err, ErrNotFound, "an observer sees the deletion committed")
	}
	// A panicking observer does not stop the monitor.
	db2, clk2 := openMon(t, quiet(MonitorOptions{}), WithDeleteObserver(func(DeleteEvent) { panic("observer") }))
	insertDated(t, ttlColl(t, db2, "c", 0), "x", 3, t0)
	clk2.Advance(time.Second)
	res, err := db2.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, res.Deleted)
}

// Rule 12: CurrentOp shows the TTL deletion in progress: collection, index,
// deleted so far, running since. Nothing when idle.
func TestCurrentOpDuringPass(t *testing.T) {
	var (
		db  *DB
		ops [][]CurrentOp
	)
	hook := func(ctx context.Context, b ExpiredBatch) error {
		ops = append(ops, db.CurrentOp())
		return nil
	}
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 4}), WithOnExpire(hook))
	insertDated(t, ttlColl(t, db, "c", 0), "x", 10, t0)
	clk.Advance(time.Second)
	assert.Empty(t, db.CurrentOp())
	_, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	require.Len(t, ops, 3)
	for i, o := range ops {
		require.Len(t, o, 1)
		assert.Equal(t, CurrentOp{Collection: "c", Index: "lastModifiedDate_1", Deleted: 4 * i, RunningSince: t0.Add(time.Second)}, o[0])
	}
	assert.Empty(t, db.CurrentOp())
}

// Rule 10: Close during a long RunTTLPass (its hook blocked until the DB
// closes) returns, and RunTTLPass returns the cancellation.
func TestCloseDuringRunTTLPass(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	hook := func(ctx context.Context, b ExpiredBatch) error {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return ctx.Err()
	}
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 100}), WithOnExpire(hook))
	insertDated(t, ttlColl(t, db, "c", 0), "x", 5000, t0)
	clk.Advance(time.Second)
	errc := make(chan error, 1)
	go func() {
		_, err := db.RunTTLPass(context.Background())
		errc <- err
	}()
	<-started
	within(t, 5*time.Second, "Close", func() { assert.NoError(t, db.Close()) })
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("RunTTLPass did not return after Close")
	}
	_, err := db.RunTTLPass(context.Background())
	assert.ErrorIs(t, err, ErrClosed)
	assertMonitorExited(t, db)
}

// Rule 10: Close during a long pass of the background monitor returns only
// once the monitor goroutine has exited.
func TestCloseDuringBackgroundPass(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	var batches atomic.Int64
	hook := func(ctx context.Context, b ExpiredBatch) error {
		if batches.Add(1) == 3 {
			once.Do(func() { close(started) })
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	db, clk := openMon(t, WithMonitor(MonitorOptions{BatchSize: 100}), WithOnExpire(hook))
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "x", 5000, t0)
	clk.BlockUntilWaiters(1)
	clk.Advance(time.Minute)
	<-started
	within(t, 5*time.Second, "Close", func() { assert.NoError(t, db.Close()) })
	assertMonitorExited(t, db)
	assert.Equal(t, int64(1), db.Metrics().TTL.Passes, "a pass cut short by Close still counts")
	assert.Equal(t, int64(200), db.Metrics().TTL.DeletedDocuments)
}

// Rule 10: Close from inside a pass stops it between two batches.
func TestCloseStopsPassBetweenBatches(t *testing.T) {
	var db *DB
	var once sync.Once
	obs := func(DeleteEvent) { once.Do(func() { _ = db.Close() }) }
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 100}), WithDeleteObserver(obs))
	insertDated(t, ttlColl(t, db, "c", 0), "x", 20000, t0)
	clk.Advance(time.Second)
	res, err := db.RunTTLPass(context.Background())
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, res.Complete)
	assert.GreaterOrEqual(t, res.Deleted, 100)
	assert.Less(t, res.Deleted, 20000)
	assertMonitorExited(t, db)
}

func assertMonitorExited(t *testing.T, db *DB) {
	t.Helper()
	select {
	case <-db.monitor.done:
	default:
		t.Fatal("the monitor goroutine is still running after Close returned")
	}
}

// Rule 8: RunTTLPass honours its context between batches.
func TestRunTTLPassContext(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}))
	insertDated(t, ttlColl(t, db, "c", 0), "x", 10, t0)
	clk.Advance(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := db.RunTTLPass(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, res.Deleted)
	assert.Equal(t, 10, count(t, db.Collection("c")))
	assert.Zero(t, db.Metrics().TTL.Passes)
}

// Rule 9: with DeadlineWake the monitor sleeps until the earliest threshold
// of any TTL index, and a write that brings it forward re-arms the sleep.
func TestDeadlineWakeSleepsUntilEarliestThreshold(t *testing.T) {
	events := make(chan DeleteEvent, 10)
	db, clk := openMon(t, WithMonitor(MonitorOptions{DeadlineWake: true, Interval: time.Hour}),
		WithDeleteObserver(func(ev DeleteEvent) { events <- ev }))
	nextWakeIs := func(want time.Time) {
		t.Helper()
		require.Eventually(t, func() bool {
			w, ok := clk.NextWake()
			return ok && w.Equal(want)
		}, 5*time.Second, time.Millisecond, "next wake %v", want)
	}
	clk.BlockUntilWaiters(1)
	nextWakeIs(t0.Add(time.Hour)) // nothing to expire: the interval caps the sleep
	c := ttlColl(t, db, "c", 10)
	_, err := c.InsertOne(context.Background(), Document{"_id": "late", "lastModifiedDate": t0.Add(20 * time.Second)})
	require.NoError(t, err)
	nextWakeIs(t0.Add(30 * time.Second))
	_, err = c.InsertOne(context.Background(), Document{"_id": "early", "lastModifiedDate": t0.Add(-5 * time.Second)})
	require.NoError(t, err)
	nextWakeIs(t0.Add(5 * time.Second))
	// An update that brings a threshold forward re-arms too.
	_, err = c.UpdateOne(context.Background(), Document{"_id": "late"}, Document{"$set": Document{"lastModifiedDate": t0.Add(-8 * time.Second)}})
	require.NoError(t, err)
	nextWakeIs(t0.Add(2 * time.Second))

	// Each re-arm stopped the timer it replaced: only the 2 s one is live.
	assert.Equal(t, 1, clk.Waiters())
	clk.Advance(2 * time.Second)
	ev := <-events
	assert.Equal(t, []any{"late"}, ev.IDs)
	assert.Equal(t, t0.Add(2*time.Second), ev.PassNow)
	// Re-armed for "early", at 5 s.
	nextWakeIs(t0.Add(5 * time.Second))
	assert.Equal(t, 1, clk.Waiters())
	clk.Advance(3 * time.Second)
	ev = <-events
	assert.Equal(t, []any{"early"}, ev.IDs)
	assert.Equal(t, t0.Add(5*time.Second), ev.PassNow)
	// Pass semantics are unchanged: one pass, one sub-pass each.
	require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int64(2), db.Metrics().TTL.SubPasses)
	// Nothing left: the interval caps the sleep.
	nextWakeIs(t0.Add(5*time.Second + time.Hour))
	assert.Equal(t, 1, clk.Waiters())
	// A threshold already past (or closer than the floor) sleeps the floor.
	_, err = c.InsertOne(context.Background(), Document{"_id": "past", "lastModifiedDate": t0.Add(-time.Minute)})
	require.NoError(t, err)
	nextWakeIs(t0.Add(5*time.Second + DefaultDeadlineWakeFloor))
}

// Rule 9, lag: on the fake clock, with the monitor woken at each wake time
// it asks for, every document goes at its threshold, or within the floor
// of it when thresholds are closer together than the floor.
func TestDeadlineWakeLag(t *testing.T) {
	const floor = 5 * time.Millisecond
	type del struct {
		id      int
		passNow time.Time
	}
	var mu sync.Mutex
	var dels []del
	db, clk := openMon(t, WithMonitor(MonitorOptions{DeadlineWake: true, Interval: 24 * time.Hour, DeadlineWakeFloor: floor}),
		WithDeleteObserver(func(ev DeleteEvent) {
			mu.Lock()
			for _, id := range ev.IDs {
				dels = append(dels, del{id.(int), ev.PassNow})
			}
			mu.Unlock()
		}))
	c := ttlColl(t, db, "c", 1)
	gaps := []time.Duration{7 * time.Millisecond, time.Millisecond, 3 * time.Millisecond, 250 * time.Millisecond,
		2 * time.Second, 5 * time.Millisecond, 40 * time.Millisecond, 2 * time.Millisecond, time.Second}
	var thresholds []time.Time
	th := t0
	for i := range 45 {
		th = th.Add(gaps[i%len(gaps)])
		thresholds = append(thresholds, th)
		// Inserted in threshold order: only the first insert re-arms.
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "lastModifiedDate": th.Add(-time.Second)})
		require.NoError(t, err)
	}
	// Drive the clock: whenever the monitor sleeps until a time before the
	// far interval, jump there. A re-arm shows as a new waiter after the
	// last jump, and the monitor re-arms only after its pass is over.
	far := t0.Add(23 * time.Hour)
	last := t0
	var wakes []time.Time
	deleted := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(dels)
	}
	for deleted() < len(thresholds) {
		var w time.Time
		var ok bool
		require.Eventually(t, func() bool {
			w, ok = clk.NextWake()
			ok = ok && w.Before(far) && w.After(last)
			return ok || deleted() == len(thresholds)
		}, 5*time.Second, time.Millisecond, "no wake after %v; %d of %d deleted", last.Sub(t0), deleted(), len(thresholds))
		if !ok {
			break
		}
		clk.Advance(w.Sub(last))
		last = w
		wakes = append(wakes, w)
	}
	onTime := 0
	for _, d := range dels {
		lag := d.passNow.Sub(thresholds[d.id])
		assert.GreaterOrEqual(t, lag, time.Duration(0), "document %d deleted before its threshold", d.id)
		assert.LessOrEqual(t, lag, floor, "document %d deleted %v after its threshold", d.id, lag)
		assert.Contains(t, wakes, d.passNow)
		if lag == 0 {
			onTime++
		}
	}
	// Every gap of at least the floor gives a wake exactly on the next
	// threshold (the very first may be lost to a re-arm racing the wake:
	// still within the floor).
	exact := 0
	for i := range thresholds {
		if i == 0 || thresholds[i].Sub(thresholds[i-1]) >= floor {
			exact++
		}
	}
	assert.GreaterOrEqual(t, onTime, exact-1)
	t.Logf("%d documents, %d wakes, %d deleted exactly at their threshold, the rest within %v", len(dels), len(wakes), onTime, floor)
}

// Rule 15: HideExpired (per collection or per DB) hides expired documents
// from every read path before the monitor deletes them; by default they
// stay visible.
func TestHideExpired(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		coll CollectionOptions
		hide bool
	}{
		{"default", nil, CollectionOptions{}, false},
		{"CollectionOptions.HideExpired", nil, CollectionOptions{HideExpired: true}, true},
		{"WithHideExpired", []Option{WithHideExpired()}, CollectionOptions{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, clk := openMon(t, append(tc.opts, quiet(MonitorOptions{}))...)
			c, err := db.CreateCollection(context.Background(), "s", tc.coll)
			require.NoError(t, err)
			_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(60)})
			require.NoError(t, err)
			_, err = c.InsertMany(context.Background(), []Document{
				{"_id": "old", "lastModifiedDate": t0.Add(-2 * time.Minute)},
				{"_id": "edge", "lastModifiedDate": t0.Add(-time.Minute)},
				{"_id": "new", "lastModifiedDate": t0},
				{"_id": "nodate"},
			})

			require.NoError(t, err)

			visible := []any{"old", "edge", "new", "nodate"}
			if tc.hide {
				visible = []any{"new", "nodate"}
			}
			check := func(visible []any) {
				t.Helper()
				docs, err := findDocs(c, nil)
				require.NoError(t, err)
				var ids []any
				for _, d := range docs {
					ids = append(ids, d["_id"])
				}
				assert.Equal(t, visible, ids, "Find")
				n, err := c.CountDocuments(context.Background(), nil)
				require.NoError(t, err)
				assert.EqualValues(t, len(visible), n, "CountDocuments")
				ex, err := c.Explain(context.Background(), nil)
				require.NoError(t, err)
				assert.Equal(t, len(visible), ex.NReturned, "Explain")
				for _, id := range []any{"old", "edge", "new"} {
					_, err := c.FindOne(context.Background(), Document{"_id": id}).Document()
					if slices.Contains(visible, id) {
						assert.NoError(t, err, "FindOne %v", id)
					} else {
						assert.ErrorIs(t, err, ErrNotFound, "FindOne %v", id)
					}
				}
			}
			check(visible)
			clk.Advance(time.Minute)
			if tc.hide {
				check([]any{"nodate"})
			} else {
				check([]any{"old", "edge", "new", "nodate"})
			}
			_, err = db.RunTTLPass(context.Background())
			require.NoError(t, err)
			check([]any{"nodate"})
		})
	}
}

// Rule 13: ExplainTTLDelete shows the BATCHED_DELETE stage a TTL deletion
// runs, with the counts a pass at the clock's now would delete, and
// deletes nothing.
func TestExplainTTLDelete(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 100, PerIndexMaxDeletes: 200}))
	c := ttlColl(t, db, "c", 60)
	insertDated(t, c, "old", 150, t0.Add(-2*time.Minute))
	insertDated(t, c, "new", 10, t0)
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("n")}})
	require.NoError(t, err)

	ex, err := c.ExplainTTLDelete(context.Background(), "lastModifiedDate_1")
	require.NoError(t, err)
	assert.Equal(t, "BATCHED_DELETE", ex.Stage)
	assert.Equal(t, "c", ex.Collection)
	assert.Equal(t, "lastModifiedDate_1", ex.IndexName)
	assert.Equal(t, []IndexKey{Asc("lastModifiedDate")}, ex.IndexKeys)
	cutoff := t0.Add(-time.Minute)
	assert.Equal(t, []string{"[MinDate, " + cutoff.Format(time.RFC3339Nano) + "]"}, ex.IndexBounds)
	assert.Equal(t, Document{"lastModifiedDate": Document{"$lte": cutoff}}, ex.Filter)
	assert.Equal(t, 150, ex.KeysExamined)
	assert.Equal(t, 150, ex.DocsExamined)
	assert.Equal(t, 100, ex.BatchSize)
	assert.Equal(t, 2, ex.Batches)
	require.NotNil(t, ex.ExpireAfterSecs)
	assert.Equal(t, int32(60), *ex.ExpireAfterSecs)
	assert.Zero(t, ex.Deleted)
	assert.Equal(t, 160, count(t, c), "explain deletes nothing")

	// Capped at PerIndexMaxDeletes, as the first visit of a pass is.
	clk.Advance(time.Minute)
	ex, err = c.ExplainTTLDelete(context.Background(), "lastModifiedDate_1")
	require.NoError(t, err)
	assert.Equal(t, 160, count(t, c))
	assert.Equal(t, 160, ex.KeysExamined)
	assert.Equal(t, 2, ex.Batches)
	insertDated(t, c, "more", 100, t0)
	ex, err = c.ExplainTTLDelete(context.Background(), "lastModifiedDate_1")
	require.NoError(t, err)
	assert.Equal(t, 200, ex.KeysExamined)
	assert.Equal(t, 2, ex.Batches)
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 260, res.Deleted)

	_, err = c.ExplainTTLDelete(context.Background(), "n_1")
	assert.ErrorIs(t, err, ErrInvalidIndex)
	_, err = c.ExplainTTLDelete(context.Background(), "nope")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = db.Collection("missing").ExplainTTLDelete(context.Background(), "lastModifiedDate_1")
	assert.ErrorIs(t, err, ErrNotFound)
}

// Options: negative values are refused, zero values take MongoDB's
// defaults.
func TestMonitorOptionsDefaultsAndValidation(t *testing.T) {
	d := DefaultMonitorOptions()
	assert.Equal(t, MonitorOptions{
		Interval: 60 * time.Second, PerIndexMaxDeletes: 50000, PerIndexMaxTime: time.Second,
		SubPassMaxTime: 60 * time.Second, BatchSize: 1024, ProposalBatchSize: 4096, DeadlineWakeFloor: time.Millisecond,
	}, d)
	assert.Equal(t, 40, MonitorOptions{BatchSize: 10}.withDefaults().ProposalBatchSize, "4 × BatchSize")
	assert.Equal(t, 7, MonitorOptions{BatchSize: 10, ProposalBatchSize: 7}.withDefaults().ProposalBatchSize)
	for _, o := range []MonitorOptions{
		{Interval: -1}, {PerIndexMaxTime: -1}, {SubPassMaxTime: -2}, {DeadlineWakeFloor: -1},
		{PerIndexMaxDeletes: -1}, {MaxTotalRemoves: -1}, {MaxCollectionRemoves: -1}, {BatchSize: -1}, {ProposalBatchSize: -1}, {BatchPause: -2},
	} {
		_, err := Open(WithMonitor(o))
		assert.ErrorIs(t, err, ErrInvalidOptions, "%+v", o)
	}
	for _, o := range []Option{WithPrimary(nil), WithOnExpire(nil), WithDeleteObserver(nil)} {
		_, err := Open(o)
		assert.ErrorIs(t, err, ErrInvalidOptions)
	}
}
