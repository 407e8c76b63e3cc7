package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
)

// buildWatch installs an index build hook for the test: it records the
// figures of every build that ends and, if pause is set, holds the first
// build of coll at the scanning stage until the returned release is
// called. paused is closed once that build is held.
type buildWatch struct {
	mu     sync.Mutex
	ended  []endedBuild
	paused chan struct{}
	resume chan struct{}
	once   sync.Once
}

func watchBuilds(t *testing.T, coll string, pause bool) *buildWatch {
	w := &buildWatch{paused: make(chan struct{}), resume: make(chan struct{})}
	hook := func(stage buildStage, b *indexBuild) {
		if b.s.name != coll {
			return
		}
		switch stage {
		case buildScanning:
			if pause {
				w.once.Do(func() {
					close(w.paused)
					<-w.resume
				})
			}
		case buildEnded:
			w.mu.Lock()
			w.ended = append(w.ended, endedBuild{name: b.ix.name, buildFigures: b.figures})
			w.mu.Unlock()
		}
	}
	indexBuildHook.Store(&hook)
	t.Cleanup(func() {
		indexBuildHook.Store(nil)
		w.release()
	})
	return w
}

func (w *buildWatch) release() {
	select {
	case <-w.resume:
	default:
		close(w.resume)
	}
}

// endedBuild is what a test learns of a build that ended.
type endedBuild struct {
	name string
	buildFigures
}

func (w *buildWatch) endedBuilds() []endedBuild {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ended)
}

// completes runs fn and fails the test if it has not returned after d: a
// write that waits for a paused build would never return.
func completes(t *testing.T, d time.Duration, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(d):
		t.Fatalf("%s did not complete in %v: it waits for the index build", what, d)
	}
}

// requireIndexLikeFresh checks that the published index name of c holds
// exactly the entries (index and expiry trees) that an index of the same
// specification built now, from the documents as they are, holds. Call
// with no writer running.
func requireIndexLikeFresh(t *testing.T, c *Collection, name string) {
	t.Helper()
	s, built := internalIndex(t, c, name)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	spec := built.spec()
	m := IndexModel{Keys: spec.Keys, Name: spec.Name, Unique: spec.Unique, Sparse: spec.Sparse,
		PartialFilterExpression: spec.PartialFilterExpression, ExpireAfterSeconds: spec.ExpireAfterSeconds, TTLValueForms: spec.TTLValueForms}
	fresh, err := newIndex(s.name, m, s.opts.Capped)
	require.NoError(t, err)
	fb := &indexBuild{s: s, ix: fresh}
	s.natural.Ascend(func(it natItem) bool {
		r := s.rec(it.slot)
		require.NoError(t, fb.add(&r))
		return true
	})
	entries := func(ix *index) []indexEntry {
		var out []indexEntry
		if ix.tree != nil {
			ix.tree.Ascend(func(e indexEntry) bool { out = append(out, e); return true })
		}
		return out
	}
	got, want := entries(built), entries(fresh)
	require.Equal(t, len(want), len(got), "index %q: entries", name)
	for i := range want {
		require.Equal(t, want[i].key, got[i].key, "index %q entry %d: key", name, i)
		require.Equal(t, [2]uint64{want[i].seq, uint64(want[i].slot)}, [2]uint64{got[i].seq, uint64(got[i].slot)},
			"index %q entry %d (key %v): a stale or missing record", name, i, want[i].key)
	}
	if fresh.multikey {
		require.True(t, built.multikey, "index %q: multikey", name)
	}
	if fresh.ttl != nil {
		var ge, we []expiryEntry
		built.ttl.expiry.Ascend(func(e expiryEntry) bool { ge = append(ge, e); return true })
		fresh.ttl.expiry.Ascend(func(e expiryEntry) bool { we = append(we, e); return true })
		require.Equal(t, we, ge, "index %q: expiry entries", name)
		require.Equal(t, [2]int{fresh.ttl.exact, fresh.ttl.multi}, [2]int{built.ttl.exact, built.ttl.multi}, "index %q: counts", name)
	}
}

// TestIndexBuildWritersDoNotWaitForTheScan checks issue item 13's
// mechanism: while a build is held in its scan, inserts, updates of the
// indexed field, replacements and deletes complete; the writes made
// meanwhile are applied from the side table, most of them without the
// write lock, so that the final catch-up under the lock is at most
// finalCatchUpMax changes; and the built index equals a fresh one.
func TestIndexBuildWritersDoNotWaitForTheScan(t *testing.T) {
	db, _ := newTTLDB(t)
	c := db.Collection("c")
	docs := make([]Document, 3000)
	for i := range docs {
		docs[i] = Document{"_id": i, "v": i % 50, "at": ttlT0.Add(time.Duration(i) * time.Second)}
	}
	mustInsert(t, c, docs...)
	w := watchBuilds(t, "c", true)
	type result struct {
		name string
		err  error
	}
	built := make(chan result, 1)
	go func() {
		name, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}})
		built <- result{name, err}
	}()
	<-w.paused

	const d = 10 * time.Second
	completes(t, d, "InsertMany", func() error {
		more := make([]Document, 2*finalCatchUpMax)
		for i := range more {
			more[i] = Document{"_id": 10_000 + i, "v": i % 7}
		}
		_, err := c.InsertMany(context.Background(), more)
		return err
	})
	completes(t, d, "UpdateOne of the indexed field", func() error {
		_, err := c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$set": Document{"v": 999}})
		return err
	})
	completes(t, d, "UpdateMany to arrays", func() error {
		_, err := c.UpdateMany(context.Background(), Document{"v": 3}, Document{"$set": Document{"v": []any{3, 1000, "x"}}})
		return err
	})
	completes(t, d, "ReplaceOne", func() error {
		_, err := c.ReplaceOne(context.Background(), Document{"_id": 2}, Document{"w": 1})
		return err
	})
	completes(t, d, "DeleteMany", func() error {
		_, err := c.DeleteMany(context.Background(), Document{"v": 4})
		return err
	})
	completes(t, d, "an update of a document inserted during the build", func() error {
		_, err := c.UpdateOne(context.Background(), Document{"_id": 10_001}, Document{"$set": Document{"v": 1001}})
		return err
	})
	// The index is not there yet: reads do not use it.
	ex, err := c.Explain(context.Background(), Document{"v": 999})
	require.NoError(t, err)
	assert.Equal(t, "COLLSCAN", ex.Stage)
	w.release()
	r := <-built
	require.NoError(t, r.err)
	assert.Equal(t, "v_1", r.name)

	ended := w.endedBuilds()
	require.Len(t, ended, 1)
	b := ended[0]
	t.Logf("scanned %d, drained %d in %d rounds, final catch-up %d", b.scanned, b.drained, b.drainRounds, b.finalCatchUp)
	stillThere, err := c.CountDocuments(context.Background(), Document{"_id": Document{"$lt": 3000}})
	require.NoError(t, err)
	require.Less(t, stillThere, int64(3000), "the writes deleted some of the snapshot")
	assert.EqualValues(t, stillThere, b.scanned, "the scan reads the snapshot's documents still stored, not those inserted since")
	assert.Positive(t, b.drained, "the side table was drained without the lock")
	assert.LessOrEqual(t, b.finalCatchUp, finalCatchUpMax)
	requireIndexLikeFresh(t, c, "v_1")
	for _, f := range []Document{{"v": 999}, {"v": 1000}, {"v": 3}, {"v": 4}, {"v": 1001}, {"v": Document{"$gte": 40}}} {
		ex, err := c.Explain(context.Background(), f)
		require.NoError(t, err)
		assert.Equal(t, "IXSCAN", ex.Stage, "%v", f)
		viaIndex, err := findDocs(c, f)
		require.NoError(t, err)
		all, err := findDocs(c, nil)
		require.NoError(t, err)
		q, err := c.compileQuery(f, nil)
		require.NoError(t, err)
		var want []any
		for _, d := range all {
			if q.filter.Matches(d) {
				want = append(want, d["_id"])
			}
		}
		assert.ElementsMatch(t, want, ids(viaIndex), "%v", f)
	}
}

// ids returns the _id values of docs.
func ids(docs []Document) []any {
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d["_id"]
	}
	return out
}

// TestIndexBuildWithConcurrentWriters checks issue item 13 under load:
// while writers insert, update the indexed fields (arrays included),
// replace and delete, and TTL passes delete expired documents, indexes of
// every kind are built; each equals an index built afresh once the
// writers stop, and every build's final catch-up under the write lock is
// at most finalCatchUpMax changes.
func TestIndexBuildWithConcurrentWriters(t *testing.T) {
	n := 20_000
	if testutil.RaceEnabled || testing.Short() {
		n = 4_000
	}
	db, clk := newTTLDB(t)
	c := db.Collection("c")
	mustCreateIndex(t, c, ttlModel("at", 0))
	value := func(r *rand.Rand) any {
		switch r.IntN(8) {
		case 0:
			return []any{r.IntN(100), r.IntN(100)}
		case 1:
			return nil
		case 2:
			return fmt.Sprint(r.IntN(100))
		}
		return r.IntN(100)
	}
	doc := func(r *rand.Rand, id int) Document {
		d := Document{"_id": id, "v": value(r), "w": r.IntN(10), "at": clk.Now().Add(time.Duration(r.IntN(3600)) * time.Second)}
		if r.IntN(4) == 0 {
			delete(d, "v")
		}
		return d
	}
	r0 := rand.New(rand.NewPCG(1, 2))
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = doc(r0, i)
	}
	mustInsert(t, c, docs...)
	w := watchBuilds(t, "c", false)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes, ttlDeleted atomic.Int64
	var nextID atomic.Int64
	nextID.Store(int64(n))
	errs := make(chan error, 8)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch r.IntN(5) {
				case 0:
					_, err = c.InsertOne(context.Background(), doc(r, int(nextID.Add(1))))
				case 1, 2:
					_, err = c.UpdateOne(context.Background(), Document{"_id": r.IntN(int(nextID.Load()))}, Document{"$set": Document{"v": value(r), "w": r.IntN(10)}})
				case 3:
					_, err = c.ReplaceOne(context.Background(), Document{"_id": r.IntN(int(nextID.Load()))}, Document{"v": value(r), "at": clk.Now()})
				case 4:
					_, err = c.DeleteOne(context.Background(), Document{"_id": r.IntN(int(nextID.Load()))})
				}
				if err != nil {
					errs <- err
					return
				}
				writes.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // TTL deletions
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			clk.Advance(30 * time.Second)
			res, err := db.RunTTLPass(context.Background())
			if err != nil {
				errs <- err
				return
			}
			ttlDeleted.Add(int64(res.Deleted))
		}
	}()

	models := []IndexModel{
		{Keys: []IndexKey{Asc("v")}},
		{Keys: []IndexKey{Desc("w"), Asc("v")}},
		{Keys: []IndexKey{Desc("v")}, Name: "v_sparse", Sparse: true},
		{Keys: []IndexKey{Asc("w")}, Name: "w_partial", PartialFilterExpression: Document{"v": Document{"$gte": 50}}},
		{Keys: []IndexKey{Desc("at")}, Name: "at_ttl", ExpireAfterSeconds: Seconds(60)},
	}
	var names []string
	for _, m := range models {
		names = append(names, mustCreateIndex(t, c, m))
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		require.NoError(t, err)
	default:
	}
	ended := w.endedBuilds()
	require.Len(t, ended, len(models))
	overlapped := 0
	for _, b := range ended {
		t.Logf("index %s: scanned %d, drained %d in %d rounds, final catch-up %d", b.name, b.scanned, b.drained, b.drainRounds, b.finalCatchUp)
		assert.LessOrEqual(t, b.finalCatchUp, finalCatchUpMax, b.name)
		overlapped += b.drained + b.finalCatchUp
	}
	t.Logf("%d writes and %d TTL deletions during the builds", writes.Load(), ttlDeleted.Load())
	require.Positive(t, overlapped, "no write happened during any build")
	require.Positive(t, ttlDeleted.Load())
	for _, name := range names {
		requireIndexLikeFresh(t, c, name)
	}
}

// TestIndexBuildUniqueDuplicates checks that a unique build fails with
// ErrDuplicateKey when two documents share a key at its end, whether the
// duplicate was there before the build or written during it, that it
// succeeds when a write during the build removes the duplicate, and that
// a failed build leaves nothing behind.
func TestIndexBuildUniqueDuplicates(t *testing.T) {
	unique := IndexModel{Keys: []IndexKey{Asc("u")}, Unique: true}
	for _, tc := range []struct {
		name    string
		docs    []Document
		during  func(c *Collection) error
		wantErr error
	}{
		{"introduced during the build", []Document{{"_id": 1, "u": 1}, {"_id": 2, "u": 2}},
			func(c *Collection) error {
				_, err := c.InsertOne(context.Background(), Document{"_id": 3, "u": 2})
				return err
			}, ErrDuplicateKey},
		{"introduced by an update during the build", []Document{{"_id": 1, "u": 1}, {"_id": 2, "u": 2}},
			func(c *Collection) error {
				_, err := c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$set": Document{"u": []any{5, 2}}})
				return err
			}, ErrDuplicateKey},
		{"there before the build", []Document{{"_id": 1, "u": 1}, {"_id": 2, "u": 1}},
			func(c *Collection) error {
				_, err := c.InsertOne(context.Background(), Document{"_id": 3, "u": 3})
				return err
			}, ErrDuplicateKey},
		{"two missing fields are two nulls", []Document{{"_id": 1}, {"_id": 2, "u": 1}},
			func(c *Collection) error {
				_, err := c.UpdateOne(context.Background(), Document{"_id": 2}, Document{"$unset": Document{"u": ""}})
				return err
			}, ErrDuplicateKey},
		{"removed during the build", []Document{{"_id": 1, "u": 1}, {"_id": 2, "u": 1}},
			func(c *Collection) error { _, err := c.DeleteOne(context.Background(), Document{"_id": 2}); return err }, nil},
		{"changed during the build", []Document{{"_id": 1, "u": 1}, {"_id": 2, "u": 1}},
			func(c *Collection) error {
				_, err := c.UpdateOne(context.Background(), Document{"_id": 2}, Document{"$set": Document{"u": 2}})
				return err
			}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := newTTLDB(t)
			c := db.Collection("c")
			mustInsert(t, c, tc.docs...)
			w := watchBuilds(t, "c", true)
			built := make(chan error, 1)
			go func() {
				_, err := c.CreateIndex(context.Background(), unique)
				built <- err
			}()
			<-w.paused
			completes(t, 10*time.Second, "the write during the build", func() error { return tc.during(c) })
			w.release()
			err := <-built
			before := all(t, c)
			if tc.wantErr == nil {
				require.NoError(t, err)
				requireIndexLikeFresh(t, c, "u_1")
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			specs, err := c.Indexes(context.Background())
			require.NoError(t, err)
			require.Len(t, specs, 1, "a failed build left an index: %v", specs)
			s, _ := c.read()
			s.writeMu.Lock()
			assert.Empty(t, s.builds, "a failed build is still registered")
			s.writeMu.Unlock()
			assert.Equal(t, before, all(t, c), "the failed build changed the documents")
			// Writes go on unconstrained, and once the duplicates are gone
			// the index builds.
			_, err = c.DeleteMany(context.Background(), nil)
			require.NoError(t, err)
			mustInsert(t, c, Document{"_id": 1, "u": 1})
			mustCreateIndex(t, c, unique)
			_, err = c.InsertOne(context.Background(), Document{"_id": 2, "u": 1})
			require.ErrorIs(t, err, ErrDuplicateKey)
		})
	}
}

// all returns every document of c sorted by _id.
func all(t *testing.T, c *Collection) []Document {
	t.Helper()
	docs, err := findDocs(c, nil, FindOptions{Sort: []IndexKey{Asc("_id")}})
	require.NoError(t, err)
	return docs
}

// TestIndexBuildEndings checks the other ways a build can end: a document
// written during a compound build that no index can hold (parallel
// arrays) fails it (ErrInvalidDocument) leaving nothing; CreateIndex of the
// same index during a build waits for it and returns its name; dropping
// the collection or closing the DB during a build fails it.
func TestIndexBuildEndings(t *testing.T) {
	pausedBuild := func(t *testing.T, m IndexModel) (*DB, *Collection, *buildWatch, chan error) {
		db, _ := newTTLDB(t)
		c := db.Collection("c")
		mustInsert(t, c, Document{"_id": 1, "a": []any{1, 2}, "b": 1})
		w := watchBuilds(t, "c", true)
		built := make(chan error, 1)
		go func() {
			_, err := c.CreateIndex(context.Background(), m)
			built <- err
		}()
		<-w.paused
		return db, c, w, built
	}
	compound := IndexModel{Keys: []IndexKey{Asc("a"), Asc("b")}}

	t.Run("parallel arrays", func(t *testing.T) {
		_, c, w, built := pausedBuild(t, compound)
		mustInsert(t, c, Document{"_id": 2, "a": []any{1}, "b": []any{2, 3}})
		w.release()
		require.ErrorIs(t, <-built, ErrInvalidDocument)
		specs, err := c.Indexes(context.Background())
		require.NoError(t, err)
		require.Len(t, specs, 1)
	})
	t.Run("same index twice", func(t *testing.T) {
		_, c, w, built := pausedBuild(t, compound)
		second := make(chan error, 1)
		go func() {
			name, err := c.CreateIndex(context.Background(), compound)
			if err == nil && name != "a_1_b_1" {
				err = fmt.Errorf("name %q", name)
			}
			second <- err
		}()
		select {
		case err := <-second:
			t.Fatalf("the second CreateIndex returned (%v) while the first was building", err)
		case <-time.After(20 * time.Millisecond):
		}
		w.release()
		require.NoError(t, <-built)
		require.NoError(t, <-second)
		specs, err := c.Indexes(context.Background())
		require.NoError(t, err)
		require.Len(t, specs, 2)
	})
	t.Run("collection dropped", func(t *testing.T) {
		db, c, w, built := pausedBuild(t, compound)
		require.NoError(t, db.DropCollection(context.Background(), "c"))
		w.release()
		require.ErrorIs(t, <-built, ErrNotFound)
		specs, err := c.Indexes(context.Background())
		require.NoError(t, err)
		require.Empty(t, specs)
	})
	t.Run("DB closed", func(t *testing.T) {
		db, _, w, built := pausedBuild(t, compound)
		require.NoError(t, db.Close())
		w.release()
		require.ErrorIs(t, <-built, ErrClosed)
	})
}
