package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
)

// Issue 20 item 15: with a hook that fails every document, each batch
// walked again the documents parked at the head of the expiry tree, so one
// pass visited O(n²/BatchSize) entries. A pass now visits each expired
// entry once: at most n steps (plus one per batch) for n expired
// documents, at every size; and the parked documents are all retried, and
// deleted, in a later pass once the hook recovers.
func TestFailingHookPassIsLinear(t *testing.T) {
	for _, n := range []int{1000, 4000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var failing atomic.Bool
			failing.Store(true)
			hook := func(ctx context.Context, b ExpiredBatch) error {
				if failing.Load() {
					return errors.New("archive down")
				}
				return nil
			}
			const batch = 32
			db, clk := openMon(t, quiet(MonitorOptions{BatchSize: batch}), WithOnExpire(hook))
			c := ttlColl(t, db, "c", 0)
			insertDated(t, c, "x", n, t0)
			clk.Advance(time.Second)

			steps := db.monitor.delivery.steps
			res, err := db.RunTTLPass(context.Background())
			require.NoError(t, err)
			steps = db.monitor.delivery.steps - steps
			t.Logf("n=%d: %d entries visited", n, steps)
			assert.Equal(t, 0, res.Deleted)
			assert.False(t, res.Complete)
			assert.Equal(t, (n+batch-1)/batch, res.Errors, "one failed call per batch")
			assert.Equal(t, int64(n), db.Metrics().TTL.FailedDeliveries[IndexRef{"c", "lastModifiedDate_1"}].Count)
			assert.LessOrEqual(t, steps, n+n/batch+1, "a pass visits each expired entry once")

			// The rules hold on: every parked document is retried (and
			// here delivered and deleted) once its backoff is due.
			failing.Store(false)
			clk.Advance(time.Hour)
			res, err = db.RunTTLPass(context.Background())
			require.NoError(t, err)
			assert.Equal(t, n, res.Deleted)
			assert.True(t, res.Complete)
			assert.Empty(t, db.Metrics().TTL.FailedDeliveries)
			assert.Equal(t, 0, count(t, c))
		})
	}
}

// A pass resumes its offers after the entries it already walked; an entry
// that a write puts behind that point meanwhile (a new document with an
// earlier date, or one re-dated) must still be offered in the same pass,
// as a walk from the head finds it. Here every document of the first
// batch fails; while the second batch's hook runs, a writer adds documents
// dated before everything walked (one of them deleted again at once),
// changes one of the batch and one of the failed ones, and re-dates one not
// yet walked to before the walked ones. The pass
// offers and deletes all of them, and only the failed ones stay. Random
// dates and sizes: the seed is printed.
func TestHookWalkOffersEntriesAddedBehind(t *testing.T) {
	seed := testutil.Seed(t)
	r := rand.New(rand.NewPCG(seed, seed))
	for round := range 20 {
		var (
			db      *DB
			mu      sync.Mutex
			calls   int
			offered = map[any]int{}
			failed  = map[any]bool{}
			added   []any
			touched any
			redated any
		)
		const batch = 4
		n := batch*2 + r.IntN(4*batch)
		hook := func(ctx context.Context, b ExpiredBatch) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			for _, d := range b.Docs {
				offered[d["_id"]]++
			}
			switch calls {
			case 1:
				var ids []any
				for _, d := range b.Docs {
					ids = append(ids, d["_id"])
					failed[d["_id"]] = true
				}
				return &ExpireHookError{Failed: ids}
			case 2:
				c := db.Collection(b.Collection)
				// Changed while its hook runs: offered again, still expired.
				touched = b.Docs[0]["_id"]
				if _, err := c.UpdateOne(context.Background(), Document{"_id": touched}, Document{"$set": Document{"note": 1}}); err != nil {
					return err
				}
				// Not yet walked, re-dated before everything walked.
				for i := n - 1; i >= 0 && redated == nil; i-- {
					if id := fmt.Sprintf("x-%02d", i); offered[id] == 0 {
						redated = id
						if _, err := c.UpdateOne(context.Background(), Document{"_id": id}, Document{"$set": Document{"lastModifiedDate": t0.Add(-time.Hour)}}); err != nil {
							return err
						}
					}
				}
				for i := range 1 + r.IntN(3) {
					id := fmt.Sprintf("behind-%d", i)
					// Dated before every document the pass has walked.
					_, err := c.InsertOne(context.Background(), Document{"_id": id, "lastModifiedDate": t0.Add(-time.Duration(1+r.IntN(100)) * time.Minute)})
					if err != nil {
						return err
					}
					added = append(added, id)
				}
				// Added behind the walk and deleted again: nothing to offer.
				if _, err := c.InsertOne(context.Background(), Document{"_id": "gone", "lastModifiedDate": t0.Add(-time.Hour)}); err != nil {
					return err
				}
				if _, err := c.DeleteOne(context.Background(), Document{"_id": "gone"}); err != nil {
					return err
				}
				// A parked document changed: still parked, not offered
				// again in this pass.
				for id := range failed {
					if _, err := c.UpdateOne(context.Background(), Document{"_id": id}, Document{"$set": Document{"note": 2}}); err != nil {
						return err
					}
					break
				}
			}
			return nil
		}
		var clk interface{ Advance(time.Duration) }
		db, clk = openMon(t, quiet(MonitorOptions{BatchSize: batch}), WithOnExpire(hook))
		c := ttlColl(t, db, "c", 0)
		for i := range n {
			_, err := c.InsertOne(context.Background(), Document{"_id": fmt.Sprintf("x-%02d", i), "lastModifiedDate": t0.Add(time.Duration(r.IntN(10)) * time.Second)})
			require.NoError(t, err)
		}
		clk.Advance(time.Minute)
		res, err := db.RunTTLPass(context.Background())
		require.NoError(t, err)
		mu.Lock()
		for _, id := range added {
			assert.Equal(t, 1, offered[id], "round %d: %v, added behind the walk, is offered once in the same pass", round, id)
		}
		assert.Equal(t, 2, offered[touched], "round %d: %v, changed while its hook ran, is offered again in the same pass", round, touched)
		if redated != nil {
			assert.Equal(t, 1, offered[redated], "round %d: %v, re-dated behind the walk, is offered once", round, redated)
		}
		assert.Zero(t, offered["gone"], "round %d: deleted before its turn", round)
		assert.Equal(t, n+len(added)-batch, res.Deleted, "round %d", round)
		assert.Len(t, failed, batch, "round %d", round)
		for id := range failed {
			assert.Equal(t, 1, offered[id], "round %d: %v, parked, is not offered again in the pass", round, id)
		}
		mu.Unlock()
		assert.Equal(t, batch, count(t, c), "round %d: only the failed documents stay", round)
		require.NoError(t, db.Close())
	}
}

// BenchmarkFailingHookPass is one RunTTLPass over n expired documents
// whose hook fails every one (each iteration on a fresh DB, set up with the
// timer stopped).
func BenchmarkFailingHookPass(b *testing.B) {
	for _, n := range []int{64 << 10, 128 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("n=%dk", n>>10), func(b *testing.B) {
			hook := func(ctx context.Context, b ExpiredBatch) error { return errors.New("archive down") }
			for range b.N {
				b.StopTimer()
				db, clk := openMon(b, quiet(MonitorOptions{}), WithOnExpire(hook))
				insertDated(b, ttlColl(b, db, "c", 0), "x", n, t0)
				clk.Advance(time.Second)
				b.StartTimer()
				if _, err := db.RunTTLPass(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				require.NoError(b, db.Close())
				b.StartTimer()
			}
		})
	}
}

// The entries noted behind a walk are bounded by the tree's size (at
// least 1024): past it the walk starts again at the head, which visits no
// more entries than were noted. Entries after the walk's point, and any
// while no walk has started, are not noted.
func TestHookWalkBehindIsBounded(t *testing.T) {
	w := hookWalk{pass: 1}
	w.added(expiryEntry{sec: 1}, 10)
	assert.Empty(t, w.behind, "no walk started")
	w.started, w.after = true, expiryEntry{sec: 100, seq: 5}
	w.added(expiryEntry{sec: 100, seq: 6}, 10)
	w.added(expiryEntry{sec: 101}, 10)
	assert.Empty(t, w.behind, "after the walk's point: the walk gets there")
	w.added(expiryEntry{sec: 100, seq: 5}, 10)
	assert.Len(t, w.behind, 1, "the walk's own point, changed")
	for i := 1; i < 1024; i++ {
		w.added(expiryEntry{sec: 50, seq: uint64(i)}, 10)
	}
	assert.Len(t, w.behind, 1024)
	w.added(expiryEntry{sec: 0}, 10)
	assert.Equal(t, hookWalk{pass: 1}, w, "past the bound: start again at the head")
}
