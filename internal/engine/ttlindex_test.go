package engine

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// Tests of issue 3 (TTL indexes), one test (or table) per numbered rule.
// The date parser itself is tested in datetime_test.go; these tests go
// through the store: CreateIndex, writes, Find, ExpiresAt, CollMod and
// RunTTLPass on a fake clock with the monitor goroutine disabled.

// ttlT0 is the fake clock's start in these tests.
var ttlT0 = t0

// newTTLDB opens a DB on a fake clock at ttlT0 with the monitor disabled
// (passes run only through RunTTLPass) and closes it when the test ends.
func newTTLDB(t testing.TB, opts ...Option) (*DB, *ttltest.Clock) {
	t.Helper()
	return openMon(t, append([]Option{WithMonitor(MonitorOptions{Disabled: true})}, opts...)...)
}

// ttlModel is a single-field ascending TTL index model.
func ttlModel(field string, secs int32) IndexModel {
	return IndexModel{Keys: []IndexKey{Asc(field)}, ExpireAfterSeconds: Seconds(secs)}
}

func mustCreateIndex(t testing.TB, c *Collection, m IndexModel) string {
	t.Helper()
	name, err := c.CreateIndex(context.Background(), m)
	require.NoError(t, err)
	return name
}

func mustInsert(t testing.TB, c *Collection, docs ...Document) {
	t.Helper()
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
}

// pass runs one TTL pass and returns how many documents it deleted.
func pass(t testing.TB, db *DB) int {
	t.Helper()
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	require.True(t, res.Complete)
	require.Zero(t, res.Errors)
	return res.Deleted
}

// remainingIDs returns the _id values left in c, sorted.
func remainingIDs(t testing.TB, c *Collection) []any {
	t.Helper()
	docs, err := findDocs(c, nil, FindOptions{Sort: []IndexKey{Asc("_id")}})
	require.NoError(t, err)
	ids := make([]any, len(docs))
	for i, d := range docs {
		ids[i] = d["_id"]
	}
	return ids
}

// internalIndex returns the collection's secondary index called name.
func internalIndex(t testing.TB, c *Collection, name string) (*collState, *index) {
	t.Helper()
	s, err := c.read()
	require.NoError(t, err)
	require.NotNil(t, s, "collection %q does not exist", c.Name())
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, ix := range s.indexes {
		if ix.name == name {
			return s, ix
		}
	}
	t.Fatalf("collection %q has no index %q", c.Name(), name)
	return nil, nil
}

// expiryLen returns the number of entries in a TTL index's expiry tree.
func expiryLen(t testing.TB, c *Collection, name string) int {
	t.Helper()
	s, ix := internalIndex(t, c, name)
	s.mu.RLock()
	defer s.mu.RUnlock()
	require.NotNil(t, ix.ttl, "index %q is not a TTL index", name)
	return ix.ttl.expiry.Len()
}

// indexSpec returns Indexes()'s entry for name.
func indexSpec(t testing.TB, c *Collection, name string) IndexSpec {
	t.Helper()
	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	for _, s := range specs {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no index %q in %v", name, specs)
	return IndexSpec{}
}

// requireExpiresAt checks ExpiresAt(id).
func requireExpiresAt(t testing.TB, c *Collection, id any, want time.Time) {
	t.Helper()
	at, ok, err := c.ExpiresAt(context.Background(), id)
	require.NoError(t, err)
	require.True(t, ok, "document %v should expire", id)
	require.True(t, at.Equal(want), "document %v expires at %v, want %v", id, at, want)
}

func requireNeverExpires(t testing.TB, c *Collection, id any) {
	t.Helper()
	at, ok, err := c.ExpiresAt(context.Background(), id)
	require.NoError(t, err)
	require.False(t, ok, "document %v should never expire, but expires at %v", id, at)
}

// farFuture is a clock setting past every threshold these tests make
// (except year-9000 dates, which set their own).
var farFuture = time.Date(8000, 1, 1, 0, 0, 0, 0, time.UTC)

// Rule 1: ExpireAfterSeconds is a *int32: 0 is "expire at the date itself",
// distinct from nil (no TTL); 0..MaxInt32 valid; negative is ErrInvalidTTL
// naming the index and the value.
func TestTTLRule01_ExpireAfterSeconds(t *testing.T) {
	t.Run("zero expires at the date itself", func(t *testing.T) {
		db, clk := newTTLDB(t)
		c := db.Collection("c")
		name := mustCreateIndex(t, c, ttlModel("at", 0))
		spec := indexSpec(t, c, name)
		require.NotNil(t, spec.ExpireAfterSeconds)
		require.EqualValues(t, 0, *spec.ExpireAfterSeconds)
		mustInsert(t, c, Document{"_id": 1, "at": ttlT0}, Document{"_id": 2, "at": ttlT0.Add(time.Second)})
		requireExpiresAt(t, c, 1, ttlT0)
		require.Equal(t, 1, pass(t, db))
		require.Equal(t, []any{2}, remainingIDs(t, c))
		clk.Advance(time.Second)
		require.Equal(t, 1, pass(t, db))
	})
	t.Run("nil is no TTL", func(t *testing.T) {
		db, clk := newTTLDB(t)
		c := db.Collection("c")
		name := mustCreateIndex(t, c, IndexModel{Keys: []IndexKey{Asc("at")}})
		require.Nil(t, indexSpec(t, c, name).ExpireAfterSeconds)
		mustInsert(t, c, Document{"_id": 1, "at": ttlT0.Add(-time.Hour)})
		requireNeverExpires(t, c, 1)
		clk.Set(farFuture)
		require.Equal(t, 0, pass(t, db))
		require.Equal(t, []any{1}, remainingIDs(t, c))
	})
	t.Run("MaxInt32 is valid", func(t *testing.T) {
		db, clk := newTTLDB(t)
		c := db.Collection("c")
		name := mustCreateIndex(t, c, ttlModel("at", math.MaxInt32))
		require.EqualValues(t, math.MaxInt32, *indexSpec(t, c, name).ExpireAfterSeconds)
		date := ttlT0.Add(-math.MaxInt32 * time.Second).Add(time.Nanosecond)
		mustInsert(t, c, Document{"_id": 1, "at": date})
		requireExpiresAt(t, c, 1, ttlT0.Add(time.Nanosecond))
		require.Equal(t, 0, pass(t, db))
		clk.Advance(time.Nanosecond)
		require.Equal(t, 1, pass(t, db))
	})
	for _, secs := range []int32{-1, -3600, math.MinInt32} {
		t.Run(fmt.Sprintf("negative %d", secs), func(t *testing.T) {
			db, _ := newTTLDB(t)
			c := db.Collection("c")
			_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("at")}, Name: "expiry", ExpireAfterSeconds: Seconds(secs)})
			require.ErrorIs(t, err, ErrInvalidTTL)
			assert.Contains(t, err.Error(), `"expiry"`, "the message names the index")
			assert.Contains(t, err.Error(), fmt.Sprint(secs), "the message names the value")
			// Default name too.
			_, err = c.CreateIndex(context.Background(), ttlModel("at", secs))
			require.ErrorIs(t, err, ErrInvalidTTL)
			assert.Contains(t, err.Error(), `"at_1"`)
			specs, err := c.Indexes(context.Background())
			require.NoError(t, err)
			require.Len(t, specs, 1, "nothing was created")
		})
	}
}

// Rule 2: TTL only on a single field other than _id, outside capped
// collections.
func TestTTLRule02_RefusedSpecs(t *testing.T) {
	cases := []struct {
		name   string
		capped bool
		model  IndexModel
	}{
		{"compound", false, IndexModel{Keys: []IndexKey{Asc("at"), Asc("user")}, ExpireAfterSeconds: Seconds(60)}},
		{"compound with zero", false, IndexModel{Keys: []IndexKey{Desc("user"), Asc("at")}, ExpireAfterSeconds: Seconds(0)}},
		{"_id ascending", false, ttlModel("_id", 60)},
		{"_id descending", false, IndexModel{Keys: []IndexKey{Desc("_id")}, ExpireAfterSeconds: Seconds(60)}},
		{"_id named _id_", false, IndexModel{Keys: []IndexKey{Asc("_id")}, Name: "_id_", ExpireAfterSeconds: Seconds(60)}},
		{"capped collection", true, ttlModel("at", 60)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := newTTLDB(t)
			var c *Collection
			if tc.capped {
				var err error
				c, err = db.CreateCollection(context.Background(), "c", CollectionOptions{Capped: true, MaxDocuments: 10})
				require.NoError(t, err)
			} else {
				c = db.Collection("c")
			}
			mustInsert(t, c, Document{"_id": 1, "at": ttlT0.Add(-time.Hour), "user": "u"})
			_, err := c.CreateIndex(context.Background(), tc.model)
			require.ErrorIs(t, err, ErrInvalidTTL)
			specs, err := c.Indexes(context.Background())
			require.NoError(t, err)
			require.Len(t, specs, 1, "nothing was created")
			require.Equal(t, 0, pass(t, db))
			// The same keys without TTL are fine (except _id_, which
			// is the implicit index).
			m := tc.model
			m.ExpireAfterSeconds = nil
			_, err = c.CreateIndex(context.Background(), m)
			require.NoError(t, err)
		})
	}
}

// Rule 3: options conflicts, idempotent re-creation, and CreateIndex never
// changing ExpireAfterSeconds.
func TestTTLRule03_OptionsConflict(t *testing.T) {
	db, _ := newTTLDB(t)
	c := db.Collection("c")
	name := mustCreateIndex(t, c, ttlModel("at", 3600))
	require.Equal(t, "at_1", name)

	again, err := c.CreateIndex(context.Background(), ttlModel("at", 3600))
	require.NoError(t, err, "the same specification again is a no-op")
	require.Equal(t, name, again)
	named, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("at")}, Name: "at_1", ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	require.Equal(t, name, named)

	conflicts := map[string]IndexModel{
		"other seconds":   ttlModel("at", 7200),
		"zero seconds":    ttlModel("at", 0),
		"non-TTL":         {Keys: []IndexKey{Asc("at")}},
		"strict forms":    {Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(3600), TTLValueForms: TTLValuesDatesOnly},
		"other name":      {Keys: []IndexKey{Asc("at")}, Name: "expiry", ExpireAfterSeconds: Seconds(3600)},
		"same name, keys": {Keys: []IndexKey{Asc("other")}, Name: "at_1", ExpireAfterSeconds: Seconds(3600)},
	}
	for what, m := range conflicts {
		_, err := c.CreateIndex(context.Background(), m)
		require.ErrorIs(t, err, ErrIndexOptionsConflict, what)
	}
	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	require.Len(t, specs, 2)
	require.EqualValues(t, 3600, *specs[1].ExpireAfterSeconds, "CreateIndex never changes ExpireAfterSeconds")

	// After CollMod, the original specification conflicts too, and the
	// CollMod value stays.
	_, err = c.CollMod(context.Background(), CollModIndex{Name: name, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), ttlModel("at", 3600))
	require.ErrorIs(t, err, ErrIndexOptionsConflict)
	again, err = c.CreateIndex(context.Background(), ttlModel("at", 60))
	require.NoError(t, err)
	require.Equal(t, name, again)
	require.EqualValues(t, 60, *indexSpec(t, c, name).ExpireAfterSeconds)

	// A non-TTL index first: a TTL index on the same key conflicts (use
	// CollMod to convert), and the index stays non-TTL.
	d := db.Collection("d")
	plain := mustCreateIndex(t, d, IndexModel{Keys: []IndexKey{Asc("at")}})
	_, err = d.CreateIndex(context.Background(), ttlModel("at", 0))
	require.ErrorIs(t, err, ErrIndexOptionsConflict)
	require.Nil(t, indexSpec(t, d, plain).ExpireAfterSeconds)
	again, err = d.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("at")}})
	require.NoError(t, err)
	require.Equal(t, plain, again)
}

// Rule 4: with a PartialFilterExpression only matching documents expire.
func TestTTLRule04_PartialFilter(t *testing.T) {
	db, clk := newTTLDB(t)
	c := db.Collection("sessions")
	m := ttlModel("at", 60)
	m.PartialFilterExpression = Document{"kind": "guest"}
	name := mustCreateIndex(t, c, m)
	old := ttlT0.Add(-time.Hour)
	mustInsert(t, c,
		Document{"_id": 1, "kind": "guest", "at": old},
		Document{"_id": 2, "kind": "member", "at": old},
		Document{"_id": 3, "at": old},
		Document{"_id": 4, "kind": "guest", "at": ttlT0},
	)
	require.Equal(t, 2, expiryLen(t, c, name))
	requireExpiresAt(t, c, 1, old.Add(time.Minute))
	requireNeverExpires(t, c, 2)
	requireNeverExpires(t, c, 3)

	require.Equal(t, 1, pass(t, db))
	require.Equal(t, []any{2, 3, 4}, remainingIDs(t, c))

	// A document that comes to match the filter comes into expiry, one
	// that stops matching leaves it.
	_, err := c.UpdateOne(context.Background(), Document{"_id": 2}, Document{"$set": Document{"kind": "guest"}})
	require.NoError(t, err)
	_, err = c.UpdateOne(context.Background(), Document{"_id": 4}, Document{"$set": Document{"kind": "member"}})
	require.NoError(t, err)
	requireNeverExpires(t, c, 4)
	require.Equal(t, 1, expiryLen(t, c, name))
	clk.Advance(time.Hour)
	require.Equal(t, 1, pass(t, db))
	require.Equal(t, []any{3, 4}, remainingIDs(t, c))
}

// Rule 5: several TTL indexes on one collection, each expiring documents.
func TestTTLRule05_SeveralTTLIndexes(t *testing.T) {
	db, clk := newTTLDB(t)
	c := db.Collection("c")
	created := mustCreateIndex(t, c, ttlModel("createdAt", 3600))
	expires := mustCreateIndex(t, c, ttlModel("expireAt", 0))
	seen := mustCreateIndex(t, c, ttlModel("seenAt", 60))
	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	require.Len(t, specs, 4)
	for _, s := range specs[1:] {
		require.NotNil(t, s.ExpireAfterSeconds, s.Name)
	}

	mustInsert(t, c,
		Document{"_id": "created", "createdAt": ttlT0.Add(-2 * time.Hour)},
		Document{"_id": "expires", "expireAt": ttlT0.Add(-time.Second)},
		Document{"_id": "seen", "seenAt": ttlT0.Add(-2 * time.Minute)},
		// Alive under createdAt, expired under expireAt: the earliest wins.
		Document{"_id": "both", "createdAt": ttlT0, "expireAt": ttlT0.Add(-time.Minute)},
		Document{"_id": "alive", "createdAt": ttlT0, "expireAt": ttlT0.Add(time.Hour), "seenAt": ttlT0},
	)
	requireExpiresAt(t, c, "both", ttlT0.Add(-time.Minute))
	requireExpiresAt(t, c, "alive", ttlT0.Add(time.Minute))

	before := db.Metrics().TTL
	require.Equal(t, 4, pass(t, db))
	require.Equal(t, []any{"alive"}, remainingIDs(t, c))
	diff := db.Metrics().Sub(Metrics{TTL: before}).TTL
	require.EqualValues(t, 1, diff.DeletedByIndex[IndexRef{"c", created}])
	require.EqualValues(t, 1, diff.DeletedByIndex[IndexRef{"c", seen}])
	require.EqualValues(t, 2, diff.DeletedByIndex[IndexRef{"c", expires}])

	clk.Advance(time.Minute)
	require.Equal(t, 1, pass(t, db))
	require.Empty(t, remainingIDs(t, c))
}

// Rule 6a: a TTL index built on a populated collection holds every document
// already there.
func TestTTLRule06_BuildIndexesExistingDocuments(t *testing.T) {
	db, clk := newTTLDB(t)
	c := db.Collection("c")
	const n = 5000
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = Document{"_id": i, "at": ttlT0.Add(time.Duration(i) * time.Second)}
	}
	mustInsert(t, c, docs...)
	mustInsert(t, c, Document{"_id": "no date"})
	name := mustCreateIndex(t, c, ttlModel("at", 0))
	require.Equal(t, n, expiryLen(t, c, name))
	for _, i := range []int{0, 1234, n - 1} {
		requireExpiresAt(t, c, i, ttlT0.Add(time.Duration(i)*time.Second))
	}
	clk.Advance(999 * time.Second)
	require.Equal(t, 1000, pass(t, db))
	clk.Advance(time.Duration(n) * time.Second)
	require.Equal(t, n-1000, pass(t, db))
	require.Equal(t, []any{"no date"}, remainingIDs(t, c))
}

// Rule 6b: documents written by other goroutines while the index builds are
// not missed.
func TestTTLRule06_WritesDuringBuildAreIndexed(t *testing.T) {
	db, clk := newTTLDB(t)
	c := db.Collection("c")
	const pre = 20000
	docs := make([]Document, pre)
	for i := range docs {
		docs[i] = Document{"_id": i, "at": ttlT0}
	}
	mustInsert(t, c, docs...)

	const writers, afterBuild = 4, 20
	var (
		wg       sync.WaitGroup
		inserted atomic.Int64
		started  = make(chan struct{}, writers)
		built    = make(chan struct{})
		errs     = make(chan error, writers)
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := 0
			for i := 0; ; i++ {
				select {
				case <-built:
					after++
				default:
				}
				if after > afterBuild {
					return
				}
				if _, err := c.InsertOne(context.Background(), Document{"_id": fmt.Sprintf("w%d-%d", w, i), "at": ttlT0}); err != nil {
					errs <- err
					return
				}
				inserted.Add(1)
				if i == 0 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range writers {
		<-started // every writer is inserting
	}
	name := mustCreateIndex(t, c, ttlModel("at", 60))
	close(built)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	total := pre + int(inserted.Load())
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, total, n)
	require.Equal(t, total, expiryLen(t, c, name), "every document, written before, during or after the build, is in the TTL index")
	clk.Advance(time.Minute)
	require.Equal(t, total, pass(t, db))
	n, err = c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.Zero(t, n)
}

// Rule 6c: a large build does not stop readers: FindOne calls start and
// complete while the build holds the collection's write lock.
func TestTTLRule06_BuildDoesNotBlockReaders(t *testing.T) {
	n := 200_000
	if testutil.RaceEnabled {
		n = 50_000 // the race detector slows the build down about tenfold
	}
	testBuildDoesNotBlockReaders(t, n)
}

// TestTTLRule06_BuildDoesNotBlockReadersSoak is the 1,000,000-document form
// of TestTTLRule06_BuildDoesNotBlockReaders (TTLDB_SOAK set).
func TestTTLRule06_BuildDoesNotBlockReadersSoak(t *testing.T) {
	if os.Getenv("TTLDB_SOAK") == "" {
		t.Skip("set TTLDB_SOAK to build a TTL index over 1,000,000 documents")
	}
	testBuildDoesNotBlockReaders(t, 1_000_000)
}

func testBuildDoesNotBlockReaders(t *testing.T, n int) {
	db, clk := newTTLDB(t)
	c := db.Collection("big")
	const chunk = 50_000
	for lo := 0; lo < n; lo += chunk {
		docs := make([]Document, 0, chunk)
		for i := lo; i < min(lo+chunk, n); i++ {
			docs = append(docs, Document{"_id": i, "at": ttlT0.Add(time.Duration(i) * time.Millisecond)})
		}
		mustInsert(t, c, docs...)
	}
	s, _ := c.read()

	// The build's hook says when it is scanning (no lock held) and when
	// it has ended.
	var scanning atomic.Bool
	hook := func(stage buildStage, b *indexBuild) {
		if b.s == s {
			scanning.Store(stage == buildScanning)
		}
	}
	indexBuildHook.Store(&hook)
	defer indexBuildHook.Store(nil)
	buildRunning := scanning.Load
	buildDone := make(chan struct{})
	readsDuringBuild := make(chan int, 1)
	readErr := make(chan error, 1)
	go func() {
		reads := 0
		defer func() { readsDuringBuild <- reads }()
		for i := 0; ; i++ {
			select {
			case <-buildDone:
				return
			default:
			}
			if !buildRunning() {
				continue
			}
			id := (i * 7919) % n
			doc, err := c.FindOne(context.Background(), Document{"_id": id}).Document()
			if err != nil {
				readErr <- err
				return
			}
			if doc["_id"] != id {
				readErr <- fmt.Errorf("FindOne(%d) returned %v", id, doc["_id"])
				return
			}
			// The read began and ended while the build was scanning.
			if buildRunning() {
				reads++
			}
		}
	}()
	start := time.Now()
	name := mustCreateIndex(t, c, ttlModel("at", 0))
	took := time.Since(start)
	close(buildDone)
	reads := <-readsDuringBuild
	select {
	case err := <-readErr:
		require.NoError(t, err)
	default:
	}
	t.Logf("build over %d documents took %v; %d FindOne calls completed during it", n, took, reads)
	require.Positive(t, reads, "no read completed while the index was building")
	require.Equal(t, n, expiryLen(t, c, name))
	clk.Advance(time.Duration(n/2) * time.Millisecond)
	require.Equal(t, n/2+1, pass(t, db))
}

// Rule 7: threshold = date + ExpireAfterSeconds, expired when threshold <=
// now.
func TestTTLRule07_ThresholdIsInclusive(t *testing.T) {
	type tc struct {
		name    string
		date    time.Time
		secs    int32
		offset  time.Duration // now - threshold
		expired bool
	}
	var cases []tc
	for _, base := range []struct {
		name string
		date time.Time
		secs int32
	}{
		{"3600s", ttlT0.Add(-time.Hour), 3600},
		{"0s", ttlT0, 0},
		{"1s fractional date", ttlT0.Add(-time.Second + 123456789), 1},
		{"pre-1970", time.Date(1969, 12, 31, 23, 59, 59, 500, time.UTC), 30},
	} {
		for _, o := range []struct {
			d       time.Duration
			expired bool
		}{{-time.Nanosecond, false}, {0, true}, {time.Nanosecond, true}} {
			cases = append(cases, tc{fmt.Sprintf("%s/%+dns", base.name, o.d), base.date, base.secs, o.d, o.expired})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, clk := newTTLDB(t)
			c := db.Collection("c")
			name := mustCreateIndex(t, c, ttlModel("at", tc.secs))
			mustInsert(t, c, Document{"_id": 1, "at": tc.date})
			threshold := tc.date.Add(time.Duration(tc.secs) * time.Second)
			requireExpiresAt(t, c, 1, threshold)
			clk.Set(threshold.Add(tc.offset))
			s, ix := internalIndex(t, c, name)
			s.mu.RLock()
			chosen := len(s.appendExpired(nil, ix, clk.Now(), 10))
			s.mu.RUnlock()
			want := 0
			if tc.expired {
				want = 1
			}
			require.Equal(t, want, chosen, "appendExpired")
			require.Equal(t, want, pass(t, db), "pass")
		})
	}
}

// Rule 8: time.Time, *time.Time, arrays of dates (the earliest counts),
// dates before 1970 and far in the future.
func TestTTLRule08_DateValues(t *testing.T) {
	early := ttlT0.Add(-2 * time.Hour)
	late := ttlT0.Add(time.Hour)
	pre1970 := time.Date(1901, 2, 3, 4, 5, 6, 7, time.UTC)
	y9000 := time.Date(9000, 6, 1, 12, 0, 0, 0, time.UTC)
	tokyo := time.FixedZone("JST", 9*3600)
	cases := []struct {
		name  string
		value any
		date  time.Time // the date the document is keyed by
	}{
		{"time.Time", early, early},
		{"time.Time in another zone", early.In(tokyo), early},
		{"time.Time with monotonic reading", time.Now(), time.Time{}}, // date filled in below
		{"*time.Time", &early, early},
		{"[]time.Time", []time.Time{late, early, late.Add(time.Hour)}, early},
		{"[]any of dates", []any{late, early}, early},
		{"[]any with non-dates", []any{"x", late, nil, true, early.Add(time.Second), Document{"a": early}}, early.Add(time.Second)},
		{"[]any with *time.Time", []any{late, &early}, early},
		{"nested document path array", nil, early}, // see below
		{"before 1970", pre1970, pre1970},
		{"the zero time", time.Time{}, time.Time{}},
		{"year 9000", y9000, y9000},
		{"[]time.Time pre-1970 and 9000", []time.Time{y9000, pre1970}, pre1970},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, clk := newTTLDB(t)
			c := db.Collection("c")
			field := "at"
			doc := Document{"_id": 1, "at": tc.value}
			if tc.name == "nested document path array" {
				field = "sessions.at"
				doc = Document{"_id": 1, "sessions": []any{Document{"at": late}, Document{"at": early}}}
			}
			date := tc.date
			if mono, ok := tc.value.(time.Time); ok && tc.name == "time.Time with monotonic reading" {
				date = mono.Round(0)
			}
			mustCreateIndex(t, c, ttlModel(field, 600))
			mustInsert(t, c, doc)
			threshold := date.Add(10 * time.Minute)
			requireExpiresAt(t, c, 1, threshold)
			clk.Set(threshold.Add(-time.Nanosecond))
			require.Equal(t, 0, pass(t, db))
			clk.Set(threshold)
			require.Equal(t, 1, pass(t, db))
		})
	}
}

// Rule 9: ArangoDB's forms, on by default: numbers are Unix seconds, ISO
// 8601 strings as reference 003 has them; anything else is not indexed and
// raises no error; TTLValuesDatesOnly reads dates only.
func TestTTLRule09_ArangoValueForms(t *testing.T) {
	unix := func(sec int64, nsec int64) time.Time { return time.Unix(sec, nsec).UTC() }
	dated := []struct {
		name  string
		value any
		date  time.Time
	}{
		{"int", int(1550165973), unix(1550165973, 0)},
		{"int8", int8(100), unix(100, 0)},
		{"int16", int16(30000), unix(30000, 0)},
		{"int32", int32(1550165973), unix(1550165973, 0)},
		{"int64", int64(1550165973), unix(1550165973, 0)},
		{"int zero", 0, unix(0, 0)},
		{"uint", uint(1550165973), unix(1550165973, 0)},
		{"uint8", uint8(200), unix(200, 0)},
		{"uint16", uint16(60000), unix(60000, 0)},
		{"uint32", uint32(4000000000), unix(4000000000, 0)},
		{"uint64", uint64(1550165973), unix(1550165973, 0)},
		{"float32 with fraction", float32(1000.25), unix(1000, 250_000_000)},
		{"float64 with fraction", 1550165973.5, unix(1550165973, 500_000_000)},
		{"float64 with millis", 1550165973.125, unix(1550165973, 125_000_000)},
		{"float64 negative zero", math.Copysign(0, -1), unix(0, 0)},
		{"millisecond timestamp reads as seconds", int64(1550165973000), unix(1550165973000, 0)},
		// Reference 003's table.
		{"2019-05-27", "2019-05-27", time.Date(2019, 5, 27, 0, 0, 0, 0, time.UTC)},
		{"2019-05-27T21:20:00", "2019-05-27T21:20:00", time.Date(2019, 5, 27, 21, 20, 0, 0, time.UTC)},
		{"2019-05-27T21:20:00Z", "2019-05-27T21:20:00Z", time.Date(2019, 5, 27, 21, 20, 0, 0, time.UTC)},
		{"2019-05-27T21:20:00.123Z", "2019-05-27T21:20:00.123Z", time.Date(2019, 5, 27, 21, 20, 0, 123e6, time.UTC)},
		{"2019-05-27T21:20:00.123+01:30", "2019-05-27T21:20:00.123+01:30", time.Date(2019, 5, 27, 19, 50, 0, 123e6, time.UTC)},
		{"2019-05-27T21:20:00.123-02:00", "2019-05-27T21:20:00.123-02:00", time.Date(2019, 5, 27, 23, 20, 0, 123e6, time.UTC)},
		// Reference 003's examples.
		{"creationDate string", "2019-02-14T17:39:33.000Z", unix(1550165973, 0)},
		{"expireDate string", "2019-03-28T01:06:00Z", time.Date(2019, 3, 28, 1, 6, 0, 0, time.UTC)},
		{"[]any of forms: earliest", []any{"2019-05-27", int64(1550165973), ttlT0}, unix(1550165973, 0)},
		{"[]float64", []float64{2e9, 1.5e9}, unix(1_500_000_000, 0)},
		{"[]string", []string{"2019-05-28", "bad", "2019-05-27"}, time.Date(2019, 5, 27, 0, 0, 0, 0, time.UTC)},
		{"the epoch as a string", "1970-01-01T00:00:00Z", unix(0, 0)},
		{"the epoch by its offset", "1969-12-31T23:00:00-01:00", unix(0, 0)},
		{"[]any: a string before 1970 is skipped", []any{"1969-12-31", "2019-05-27", -5}, time.Date(2019, 5, 27, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range dated {
		t.Run("dated/"+tc.name, func(t *testing.T) {
			db, clk := newTTLDB(t)
			c := db.Collection("c")
			mustCreateIndex(t, c, ttlModel("at", 600))
			mustInsert(t, c, Document{"_id": 1, "at": tc.value})
			threshold := tc.date.Add(10 * time.Minute)
			requireExpiresAt(t, c, 1, threshold)
			clk.Set(threshold.Add(-time.Nanosecond))
			require.Equal(t, 0, pass(t, db))
			clk.Set(threshold)
			require.Equal(t, 1, pass(t, db))

			// Strict mode ignores every number and string (the []any
			// case still holds a time.Time, ttlT0).
			strict := db.Collection("strict")
			m := ttlModel("at", 600)
			m.TTLValueForms = TTLValuesDatesOnly
			mustCreateIndex(t, strict, m)
			mustInsert(t, strict, Document{"_id": 1, "at": tc.value})
			if tc.name == "[]any of forms: earliest" {
				requireExpiresAt(t, strict, 1, ttlT0.Add(10*time.Minute))
				return
			}
			requireNeverExpires(t, strict, 1)
			clk.Set(farFuture)
			require.Equal(t, 0, pass(t, db))
			require.Equal(t, []any{1}, remainingIDs(t, strict))
		})
	}

	notDated := []struct {
		name  string
		value any
	}{
		{"negative int", -1},
		{"negative int64", int64(-1550165973)},
		{"negative float", -0.5},
		{"NaN", math.NaN()},
		{"+Inf", math.Inf(1)},
		{"-Inf", math.Inf(-1)},
		{"float32 NaN", float32(math.NaN())},
		{"uint64 beyond int64", uint64(math.MaxUint64)},
		{"month 13", "2019-13-01"},
		{"day 32", "2019-05-32"},
		{"Feb 29 in a common year", "2019-02-29"},
		{"hour 24", "2019-05-27T24:00:00"},
		{"offset without colon", "2019-05-27T21:20:00+0130"},
		{"trailing text", "2019-05-27T21:20:00Zjunk"},
		{"slashes", "2019/05/27"},
		{"empty", ""},
		{"no seconds", "2019-05-27T21:20"},
		{"lowercase t", "2019-05-27t21:20:00"},
		{"words", "tomorrow"},
		{"[]any of invalid", []any{"2019/05/27", -1, math.NaN()}},
		// ArangoDB converts a string to Unix seconds and never indexes a
		// negative timestamp: strings before 1970 never expire, as
		// negative numbers do not.
		{"string a second before 1970", "1969-12-31T23:59:59Z"},
		{"string a nanosecond before 1970", "1969-12-31T23:59:59.999999999Z"},
		{"string before 1970 by its offset", "1970-01-01T00:30:00+01:00"},
		{"date-only string before 1970", "1901-02-03"},
		{"year 0000 string", "0000-01-01"},
		{"[]string before 1970", []string{"1969-07-20", "1950-01-01T00:00:00Z"}},
	}
	for _, tc := range notDated {
		t.Run("not dated/"+tc.name, func(t *testing.T) {
			db, clk := newTTLDB(t)
			c := db.Collection("c")
			name := mustCreateIndex(t, c, ttlModel("at", 0))
			_, err := c.InsertOne(context.Background(), Document{"_id": 1, "at": tc.value})
			require.NoError(t, err, "an invalid value raises no error")
			require.Zero(t, expiryLen(t, c, name))
			requireNeverExpires(t, c, 1)
			clk.Set(farFuture)
			require.Equal(t, 0, pass(t, db))
			_, err = c.FindOne(context.Background(), Document{"_id": 1}).Document()
			require.NoError(t, err)
		})
	}

	t.Run("strict mode still reads dates", func(t *testing.T) {
		db, _ := newTTLDB(t)
		c := db.Collection("c")
		m := ttlModel("at", 0)
		m.TTLValueForms = TTLValuesDatesOnly
		name := mustCreateIndex(t, c, m)
		require.Equal(t, TTLValuesDatesOnly, indexSpec(t, c, name).TTLValueForms)
		mustInsert(t, c, Document{"_id": 1, "at": ttlT0}, Document{"_id": 2, "at": []any{"2019-05-27", ttlT0.Add(time.Hour)}})
		requireExpiresAt(t, c, 2, ttlT0.Add(time.Hour))
		require.Equal(t, 1, pass(t, db))
	})
	t.Run("unknown forms refused", func(t *testing.T) {
		db, _ := newTTLDB(t)
		m := ttlModel("at", 0)
		m.TTLValueForms = 7
		_, err := db.Collection("c").CreateIndex(context.Background(), m)
		require.ErrorIs(t, err, ErrInvalidTTL)
	})
}

// Rule 10: values that are not dates keep a document out of expiry, with no
// error, and the document is stored and findable as usual.
func TestTTLRule10_NonDatesNeverExpire(t *testing.T) {
	db, clk := newTTLDB(t)
	c := db.Collection("c")
	name := mustCreateIndex(t, c, ttlModel("at", 0))
	docs := []Document{
		{"_id": "missing"},
		{"_id": "nil", "at": nil},
		{"_id": "nil *time.Time", "at": (*time.Time)(nil)},
		{"_id": "bool", "at": true},
		{"_id": "nested document", "at": Document{"date": ttlT0}},
		{"_id": "unparseable", "at": "2019-05-27 21:20:00"},
		{"_id": "binary", "at": []byte("2019-05-27")},
		{"_id": "ObjectID", "at": NewObjectIDFromTime(ttlT0)},
		{"_id": "empty array", "at": []any{}},
		{"_id": "nested array", "at": []any{[]any{ttlT0}}},
	}
	for _, d := range docs {
		_, err := c.InsertOne(context.Background(), d)
		require.NoError(t, err, d["_id"])
	}
	mustInsert(t, c, Document{"_id": "control", "at": ttlT0})
	require.Equal(t, 1, expiryLen(t, c, name))
	for _, d := range docs {
		requireNeverExpires(t, c, d["_id"])
	}
	clk.Set(farFuture)
	require.Equal(t, 1, pass(t, db), "only the control document expires")
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, len(docs), n)
	for _, d := range docs {
		got, err := c.FindOne(context.Background(), Document{"_id": d["_id"]}).Document()
		require.NoError(t, err, d["_id"])
		require.Equal(t, d["_id"], got["_id"])
	}
	got, err := c.FindOne(context.Background(), Document{"at": true}).Document()
	require.NoError(t, err, "findable through the TTL index")
	require.Equal(t, "bool", got["_id"])
}

// Rule 11: writes move documents in the TTL index.
func TestTTLRule11_WritesRekey(t *testing.T) {
	old := ttlT0.Add(-2 * time.Hour) // expired at ttlT0 under 3600 s
	setup := func(t *testing.T) (*DB, *ttltest.Clock, *Collection, string) {
		db, clk := newTTLDB(t)
		c := db.Collection("c")
		name := mustCreateIndex(t, c, ttlModel("at", 3600))
		mustInsert(t, c, Document{"_id": 1, "at": old}, Document{"_id": 2, "at": old})
		requireExpiresAt(t, c, 1, old.Add(time.Hour))
		return db, clk, c, name
	}
	update := func(t *testing.T, c *Collection, id any, u Document) {
		t.Helper()
		res, err := c.UpdateOne(context.Background(), Document{"_id": id}, u)
		require.NoError(t, err)
		require.EqualValues(t, 1, res.ModifiedCount)
	}

	t.Run("$set re-keys", func(t *testing.T) {
		db, clk, c, name := setup(t)
		update(t, c, 1, Document{"$set": Document{"at": ttlT0}})
		requireExpiresAt(t, c, 1, ttlT0.Add(time.Hour))
		require.Equal(t, 2, expiryLen(t, c, name))
		require.Equal(t, 1, pass(t, db), "the old date would have deleted it")
		require.Equal(t, []any{1}, remainingIDs(t, c))
		clk.Advance(time.Hour)
		require.Equal(t, 1, pass(t, db))
	})
	t.Run("$set to an earlier date", func(t *testing.T) {
		db, clk, c, _ := setup(t)
		clk.Set(old) // nothing expired yet
		update(t, c, 1, Document{"$set": Document{"at": old.Add(-time.Hour)}})
		require.Equal(t, 1, pass(t, db))
		require.Equal(t, []any{2}, remainingIDs(t, c))
	})
	t.Run("$currentDate re-keys", func(t *testing.T) {
		db, clk, c, name := setup(t)
		clk.Advance(30 * time.Minute)
		update(t, c, 1, Document{"$currentDate": Document{"at": true}})
		requireExpiresAt(t, c, 1, ttlT0.Add(90*time.Minute))
		require.Equal(t, 2, expiryLen(t, c, name))
		require.Equal(t, 1, pass(t, db))
		clk.Set(ttlT0.Add(90*time.Minute - time.Nanosecond))
		require.Equal(t, 0, pass(t, db))
		clk.Advance(time.Nanosecond)
		require.Equal(t, 1, pass(t, db))
	})
	t.Run("$currentDate as $type date", func(t *testing.T) {
		db, _, c, _ := setup(t)
		update(t, c, 1, Document{"$currentDate": Document{"at": Document{"$type": "date"}}})
		requireExpiresAt(t, c, 1, ttlT0.Add(time.Hour))
		require.Equal(t, 1, pass(t, db))
	})
	t.Run("$unset takes it out", func(t *testing.T) {
		db, clk, c, name := setup(t)
		update(t, c, 1, Document{"$unset": Document{"at": ""}})
		requireNeverExpires(t, c, 1)
		require.Equal(t, 1, expiryLen(t, c, name))
		clk.Set(farFuture)
		require.Equal(t, 1, pass(t, db))
		require.Equal(t, []any{1}, remainingIDs(t, c))
	})
	t.Run("$set to a non-date takes it out", func(t *testing.T) {
		db, _, c, name := setup(t)
		update(t, c, 1, Document{"$set": Document{"at": "never"}})
		requireNeverExpires(t, c, 1)
		require.Equal(t, 1, expiryLen(t, c, name))
		require.Equal(t, 1, pass(t, db))
		require.Equal(t, []any{1}, remainingIDs(t, c))
	})
	t.Run("$set of another field keeps the key", func(t *testing.T) {
		db, _, c, name := setup(t)
		update(t, c, 1, Document{"$set": Document{"user": "ada"}})
		requireExpiresAt(t, c, 1, old.Add(time.Hour))
		require.Equal(t, 2, expiryLen(t, c, name))
		require.Equal(t, 2, pass(t, db))
	})
	t.Run("UpdateMany re-keys all", func(t *testing.T) {
		db, _, c, name := setup(t)
		res, err := c.UpdateMany(context.Background(), nil, Document{"$currentDate": Document{"at": true}})
		require.NoError(t, err)
		require.EqualValues(t, 2, res.ModifiedCount)
		require.Equal(t, 2, expiryLen(t, c, name))
		require.Equal(t, 0, pass(t, db))
	})
	t.Run("ReplaceOne re-keys", func(t *testing.T) {
		db, _, c, name := setup(t)
		res, err := c.ReplaceOne(context.Background(), Document{"_id": 1}, Document{"at": ttlT0, "v": 2})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.ModifiedCount)
		requireExpiresAt(t, c, 1, ttlT0.Add(time.Hour))
		require.Equal(t, 2, expiryLen(t, c, name))
		require.Equal(t, 1, pass(t, db))
		require.Equal(t, []any{1}, remainingIDs(t, c))
	})
	t.Run("ReplaceOne without the field takes it out", func(t *testing.T) {
		db, clk, c, name := setup(t)
		_, err := c.ReplaceOne(context.Background(), Document{"_id": 1}, Document{"v": 2})
		require.NoError(t, err)
		requireNeverExpires(t, c, 1)
		require.Equal(t, 1, expiryLen(t, c, name))
		clk.Set(farFuture)
		require.Equal(t, 1, pass(t, db))
		require.Equal(t, []any{1}, remainingIDs(t, c))
	})
	t.Run("upsert is indexed", func(t *testing.T) {
		db, _, c, name := setup(t)
		res, err := c.UpdateOne(context.Background(), Document{"_id": 3}, Document{"$set": Document{"at": old}}, UpdateOptions{Upsert: true})
		require.NoError(t, err)
		require.Equal(t, 3, res.UpsertedID)
		require.Equal(t, 3, expiryLen(t, c, name))
		require.Equal(t, 3, pass(t, db))
	})
	t.Run("DeleteOne removes its entry", func(t *testing.T) {
		db, _, c, name := setup(t)
		n, err := c.DeleteOne(context.Background(), Document{"_id": 1})
		require.NoError(t, err)
		require.EqualValues(t, 1, n.DeletedCount)
		require.Equal(t, 1, expiryLen(t, c, name))
		_, _, err = c.ExpiresAt(context.Background(), 1)
		require.ErrorIs(t, err, ErrNotFound)
		require.Equal(t, 1, pass(t, db), "only the other document is left to delete")
		require.Zero(t, expiryLen(t, c, name))
	})
	t.Run("DeleteMany removes entries", func(t *testing.T) {
		db, _, c, name := setup(t)
		n, err := c.DeleteMany(context.Background(), nil)
		require.NoError(t, err)
		require.EqualValues(t, 2, n.DeletedCount)
		require.Zero(t, expiryLen(t, c, name))
		require.Equal(t, 0, pass(t, db))
	})
	t.Run("failed update changes nothing", func(t *testing.T) {
		db, _, c, name := setup(t)
		_, err := c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$set": Document{"at": ttlT0, "_id": 9}})
		require.ErrorIs(t, err, ErrImmutableID)
		requireExpiresAt(t, c, 1, old.Add(time.Hour))
		require.Equal(t, 2, expiryLen(t, c, name))
		require.Equal(t, 2, pass(t, db))
	})
}

// Rule 12: a TTL index serves ordinary queries and sorts on its field.
func TestTTLRule12_ServesQueriesAndSorts(t *testing.T) {
	db, _ := newTTLDB(t)
	c := db.Collection("eventlog")
	name := mustCreateIndex(t, c, ttlModel("lastModifiedDate", 3600))
	for i := range 50 {
		mustInsert(t, c, Document{"_id": i, "lastModifiedDate": ttlT0.Add(time.Duration((i*17)%50) * time.Minute)})
	}
	cases := []struct {
		name   string
		filter Document
		opts   FindOptions
		want   int
	}{
		{"equality", Document{"lastModifiedDate": ttlT0.Add(10 * time.Minute)}, FindOptions{}, 1},
		{"range", Document{"lastModifiedDate": Document{"$gte": ttlT0.Add(10 * time.Minute), "$lt": ttlT0.Add(20 * time.Minute)}}, FindOptions{}, 10},
		{"$in", Document{"lastModifiedDate": Document{"$in": []any{ttlT0, ttlT0.Add(time.Minute), ttlT0.Add(time.Hour)}}}, FindOptions{}, 2},
		{"range sorted desc", Document{"lastModifiedDate": Document{"$lt": ttlT0.Add(5 * time.Minute)}}, FindOptions{Sort: []IndexKey{Desc("lastModifiedDate")}}, 5},
		{"sort only", nil, FindOptions{Sort: []IndexKey{Asc("lastModifiedDate")}}, 50},
		{"sort only desc", nil, FindOptions{Sort: []IndexKey{Desc("lastModifiedDate")}, Limit: 7}, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := c.Explain(context.Background(), tc.filter, tc.opts)
			require.NoError(t, err)
			require.Equal(t, "IXSCAN", ex.Stage)
			require.Equal(t, name, ex.IndexName)
			require.Equal(t, tc.want, ex.NReturned)
			require.False(t, ex.InMemorySort)
			if tc.filter != nil {
				require.Equal(t, tc.want, ex.DocsExamined, "only the matching keys are visited")
			}
			docs, err := findDocs(c, tc.filter, tc.opts)
			require.NoError(t, err)
			require.Len(t, docs, tc.want)
			if len(tc.opts.Sort) > 0 {
				desc := tc.opts.Sort[0].Order < 0
				require.True(t, slices.IsSortedFunc(docs, func(a, b Document) int {
					c := a["lastModifiedDate"].(time.Time).Compare(b["lastModifiedDate"].(time.Time))
					if desc {
						c = -c
					}
					return c
				}))
			}
		})
	}
}

// Rule 13: ExpiresAt gives the earliest threshold over the collection's TTL
// indexes, or that the document never expires; ErrNotFound for a missing
// document.
func TestTTLRule13_ExpiresAt(t *testing.T) {
	db, _ := newTTLDB(t)
	c := db.Collection("c")
	_, _, err := c.ExpiresAt(context.Background(), 1)
	require.ErrorIs(t, err, ErrNotFound, "missing collection")

	mustInsert(t, c, Document{"_id": 1, "a": ttlT0, "b": ttlT0})
	requireNeverExpires(t, c, 1) // no TTL index yet
	mustCreateIndex(t, c, IndexModel{Keys: []IndexKey{Asc("a")}})
	requireNeverExpires(t, c, 1) // a non-TTL index

	a := mustCreateIndex(t, c, IndexModel{Keys: []IndexKey{Asc("b")}, ExpireAfterSeconds: Seconds(3600)})
	requireExpiresAt(t, c, 1, ttlT0.Add(time.Hour))
	mustCreateIndex(t, c, ttlModel("c", 60))
	mustInsert(t, c,
		Document{"_id": 2, "b": ttlT0, "c": ttlT0.Add(10 * time.Minute)},
		Document{"_id": 3, "b": ttlT0, "c": ttlT0.Add(2 * time.Hour)},
		Document{"_id": 4, "c": "not a date"},
		Document{"_id": ObjectID{1}, "c": ttlT0},
	)
	requireExpiresAt(t, c, 2, ttlT0.Add(11*time.Minute))
	requireExpiresAt(t, c, 3, ttlT0.Add(time.Hour))
	requireNeverExpires(t, c, 4)
	requireExpiresAt(t, c, ObjectID{1}, ttlT0.Add(time.Minute))
	requireExpiresAt(t, c, int64(2), ttlT0.Add(11*time.Minute)) // _id lookup by numeric value
	requireExpiresAt(t, c, 2.0, ttlT0.Add(11*time.Minute))

	_, err = c.CollMod(context.Background(), CollModIndex{Name: a, ExpireAfterSeconds: Seconds(0)})
	require.NoError(t, err)
	requireExpiresAt(t, c, 3, ttlT0)

	for _, id := range []any{99, "1", ObjectID{2}} {
		_, ok, err := c.ExpiresAt(context.Background(), id)
		require.ErrorIs(t, err, ErrNotFound, "%v", id)
		require.False(t, ok)
	}
	_, _, err = c.ExpiresAt(context.Background(), []any{1})
	require.ErrorIs(t, err, ErrInvalidDocument, "an array is no _id")
}

// Rule 15: CollMod changes ExpireAfterSeconds without rebuilding, converts a
// non-TTL single-field index, reports old and new values, and fails clearly.
func TestTTLRule15_CollModChange(t *testing.T) {
	db, clk := newTTLDB(t)
	c := db.Collection("tickets")
	name := mustCreateIndex(t, c, ttlModel("lastModifiedDate", 3600))
	for i := range 100 {
		mustInsert(t, c, Document{"_id": i, "lastModifiedDate": ttlT0.Add(-time.Duration(i) * time.Minute)})
	}
	s, ix := internalIndex(t, c, name)
	s.mu.RLock()
	ttl, tree, n := ix.ttl, ix.ttl.expiry, ix.ttl.expiry.Len()
	first, _ := tree.Min()
	s.mu.RUnlock()
	require.Equal(t, 100, n)

	res, err := c.CollMod(context.Background(), CollModIndex{KeyPattern: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(100)})
	require.NoError(t, err)
	require.Equal(t, name, res.IndexName)
	require.NotNil(t, res.ExpireAfterSecondsOld)
	require.EqualValues(t, 3600, *res.ExpireAfterSecondsOld)
	require.EqualValues(t, 100, res.ExpireAfterSecondsNew)
	require.EqualValues(t, 100, *indexSpec(t, c, name).ExpireAfterSeconds)

	s.mu.RLock()
	require.Same(t, ttl, ix.ttl, "no new TTL index")
	require.Same(t, tree, ix.ttl.expiry, "no rebuild: the same tree")
	require.Equal(t, n, ix.ttl.expiry.Len())
	firstAfter, _ := ix.ttl.expiry.Min()
	s.mu.RUnlock()
	require.Equal(t, first, firstAfter, "entries are keyed by date: unchanged")

	// Lowering the value makes many documents eligible at once: those
	// older than 100 s, i.e. ids 2..99.
	requireExpiresAt(t, c, 0, ttlT0.Add(100*time.Second))
	require.Equal(t, 98, pass(t, db))
	require.Equal(t, []any{0, 1}, remainingIDs(t, c))

	// DB.CollMod, by name; raising the value again.
	res, err = db.CollMod(context.Background(), "tickets", CollModIndex{Name: name, ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	require.EqualValues(t, 100, *res.ExpireAfterSecondsOld)
	require.EqualValues(t, 3600, res.ExpireAfterSecondsNew)
	clk.Advance(100 * time.Second)
	require.Equal(t, 0, pass(t, db))
	clk.Set(ttlT0.Add(59 * time.Minute))
	require.Equal(t, 1, pass(t, db), "id 1, dated a minute before 0")
	clk.Set(ttlT0.Add(time.Hour))
	require.Equal(t, 1, pass(t, db))

	// Both selectors naming the same index; the same value again.
	res, err = c.CollMod(context.Background(), CollModIndex{Name: name, KeyPattern: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	require.EqualValues(t, 3600, *res.ExpireAfterSecondsOld)
}

func TestTTLRule15_CollModConvert(t *testing.T) {
	db, clk := newTTLDB(t)
	c := db.Collection("tickets")
	m := IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, PartialFilterExpression: Document{"open": false}}
	name := mustCreateIndex(t, c, m)
	mustInsert(t, c,
		Document{"_id": 1, "open": false, "lastModifiedDate": ttlT0.Add(-time.Hour)},
		Document{"_id": 2, "open": true, "lastModifiedDate": ttlT0.Add(-time.Hour)},
		Document{"_id": 3, "open": false, "lastModifiedDate": ttlT0},
		Document{"_id": 4, "open": false, "lastModifiedDate": "2019-05-27"},
		Document{"_id": 5, "open": false},
	)
	requireNeverExpires(t, c, 1)
	require.Equal(t, 0, pass(t, db))

	res, err := db.CollMod(context.Background(), "tickets", CollModIndex{KeyPattern: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(100)})
	require.NoError(t, err)
	require.Equal(t, CollModResult{IndexName: name, ExpireAfterSecondsOld: nil, ExpireAfterSecondsNew: 100}, res)
	spec := indexSpec(t, c, name)
	require.NotNil(t, spec.ExpireAfterSeconds)
	require.EqualValues(t, 100, *spec.ExpireAfterSeconds)
	require.Equal(t, TTLValuesDatesAndArango, spec.TTLValueForms)
	require.Equal(t, 3, expiryLen(t, c, name), "documents 1, 3 and 4 (partial filter; 5 has no date)")
	requireExpiresAt(t, c, 1, ttlT0.Add(-time.Hour+100*time.Second))
	requireNeverExpires(t, c, 2)

	require.Equal(t, 2, pass(t, db), "1 and 4")
	// Writes after the conversion are indexed.
	mustInsert(t, c, Document{"_id": 6, "open": false, "lastModifiedDate": ttlT0})
	clk.Advance(100 * time.Second)
	require.Equal(t, 2, pass(t, db), "3 and 6")
	require.Equal(t, []any{2, 5}, remainingIDs(t, c))

	// The converted index is a TTL index for CreateIndex's comparisons.
	m.ExpireAfterSeconds = Seconds(100)
	again, err := c.CreateIndex(context.Background(), m)
	require.NoError(t, err)
	require.Equal(t, name, again)
}

func TestTTLRule15_CollModErrors(t *testing.T) {
	db, _ := newTTLDB(t)
	c := db.Collection("c")
	ttlName := mustCreateIndex(t, c, ttlModel("at", 60))
	compound := mustCreateIndex(t, c, IndexModel{Keys: []IndexKey{Asc("a"), Asc("b")}})
	desc := mustCreateIndex(t, c, IndexModel{Keys: []IndexKey{Desc("_id")}})
	capped, err := db.CreateCollection(context.Background(), "capped", CollectionOptions{Capped: true, MaxDocuments: 5})
	require.NoError(t, err)
	cappedIx := mustCreateIndex(t, capped, IndexModel{Keys: []IndexKey{Asc("at")}})

	cases := []struct {
		name string
		coll string
		m    CollModIndex
		want error
	}{
		{"_id by key", "c", CollModIndex{KeyPattern: []IndexKey{Asc("_id")}, ExpireAfterSeconds: Seconds(60)}, ErrInvalidTTL},
		{"_id by name", "c", CollModIndex{Name: "_id_", ExpireAfterSeconds: Seconds(60)}, ErrInvalidTTL},
		{"_id descending", "c", CollModIndex{Name: desc, ExpireAfterSeconds: Seconds(60)}, ErrInvalidTTL},
		{"compound by key", "c", CollModIndex{KeyPattern: []IndexKey{Asc("a"), Asc("b")}, ExpireAfterSeconds: Seconds(60)}, ErrInvalidTTL},
		{"compound by name", "c", CollModIndex{Name: compound, ExpireAfterSeconds: Seconds(60)}, ErrInvalidTTL},
		{"missing index by key", "c", CollModIndex{KeyPattern: []IndexKey{Asc("nope")}, ExpireAfterSeconds: Seconds(60)}, ErrNotFound},
		{"missing index by name", "c", CollModIndex{Name: "nope", ExpireAfterSeconds: Seconds(60)}, ErrNotFound},
		{"key in the other direction", "c", CollModIndex{KeyPattern: []IndexKey{Desc("at")}, ExpireAfterSeconds: Seconds(60)}, ErrNotFound},
		{"name and key disagree", "c", CollModIndex{Name: ttlName, KeyPattern: []IndexKey{Asc("a"), Asc("b")}, ExpireAfterSeconds: Seconds(60)}, ErrNotFound},
		{"missing collection", "nope", CollModIndex{KeyPattern: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)}, ErrNotFound},
		{"negative", "c", CollModIndex{Name: ttlName, ExpireAfterSeconds: Seconds(-1)}, ErrInvalidTTL},
		{"negative MinInt32", "c", CollModIndex{Name: ttlName, ExpireAfterSeconds: Seconds(math.MinInt32)}, ErrInvalidTTL},
		{"no value", "c", CollModIndex{Name: ttlName}, ErrInvalidTTL},
		{"no selection", "c", CollModIndex{ExpireAfterSeconds: Seconds(60)}, ErrInvalidIndex},
		{"capped collection", "capped", CollModIndex{Name: cappedIx, ExpireAfterSeconds: Seconds(60)}, ErrInvalidTTL},
		{"invalid collection name", "$bad", CollModIndex{Name: ttlName, ExpireAfterSeconds: Seconds(60)}, ErrInvalidOptions},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := db.CollMod(context.Background(), tc.coll, tc.m)
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, CollModResult{}, res)
		})
	}
	// A negative value's message names the index and the value, as
	// CreateIndex's does.
	_, err = c.CollMod(context.Background(), CollModIndex{Name: ttlName, ExpireAfterSeconds: Seconds(-5)})
	require.ErrorIs(t, err, ErrInvalidTTL)
	assert.Contains(t, err.Error(), `"at_1"`)
	assert.Contains(t, err.Error(), "-5")
	_, err = c.CollMod(context.Background(), CollModIndex{KeyPattern: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(-5)})
	require.ErrorIs(t, err, ErrInvalidTTL)
	assert.Contains(t, err.Error(), "at")
	assert.Contains(t, err.Error(), "-5")

	// Nothing changed.
	require.EqualValues(t, 60, *indexSpec(t, c, ttlName).ExpireAfterSeconds)
	require.Nil(t, indexSpec(t, c, compound).ExpireAfterSeconds)
	require.Nil(t, indexSpec(t, c, desc).ExpireAfterSeconds)
	require.Nil(t, indexSpec(t, capped, cappedIx).ExpireAfterSeconds)
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"c", "capped"}, names, "CollMod on a missing collection creates nothing")

	db.Close()
	_, err = c.CollMod(context.Background(), CollModIndex{Name: ttlName, ExpireAfterSeconds: Seconds(1)})
	require.ErrorIs(t, err, ErrClosed)
}
