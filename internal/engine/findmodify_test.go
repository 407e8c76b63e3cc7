package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fmSession struct {
	ID       string    `bson:"_id,omitempty"`
	User     string    `bson:"user"`
	LastSeen time.Time `bson:"lastSeen"`
	Hits     int       `bson:"hits"`
}

func fmColl(t *testing.T) (*DB, *Collection) {
	t.Helper()
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("s")
	_, err := c.InsertMany(context.Background(), []Document{
		{"_id": "a", "user": "ada", "rank": 3, "hits": 0},
		{"_id": "b", "user": "bob", "rank": 1, "hits": 0},
		{"_id": "c", "user": "cy", "rank": 2, "hits": 0},
	})

	require.NoError(t, err)
	return db, c
}

func TestFindOneAndUpdateReturnsBeforeOrAfter(t *testing.T) {
	_, c := fmColl(t)
	inc := Document{"$inc": Document{"hits": 1}}

	var before fmSession
	require.NoError(t, c.FindOneAndUpdate(context.Background(), Document{"_id": "a"}, inc).Decode(&before))
	assert.Equal(t, fmSession{ID: "a", User: "ada", Hits: 0}, before, "Before is the default")

	var after map[string]any
	require.NoError(t, c.FindOneAndUpdate(context.Background(), Document{"_id": "a"}, inc, FindOneAndUpdateOptions{ReturnDocument: After}).Decode(&after))
	assert.EqualValues(t, 2, after["hits"])

	got, err := c.FindOne(context.Background(), Document{"_id": "a"}).Document()
	require.NoError(t, err)
	assert.EqualValues(t, 2, got["hits"], "both updates stored")

	// An update that changes nothing returns the same document either way.
	same := c.FindOneAndUpdate(context.Background(), Document{"_id": "b"}, Document{"$set": Document{"hits": 0}}, FindOneAndUpdateOptions{ReturnDocument: After})
	d, err := same.Document()
	require.NoError(t, err)
	assert.Equal(t, "bob", d["user"])
}

func TestFindOneAndUpdateSortPicksFirst(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		t.Run(fmt.Sprint("indexed=", indexed), func(t *testing.T) {
			_, c := fmColl(t)
			if indexed {
				_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("rank")}})
				require.NoError(t, err)
			}
			set := Document{"$set": Document{"picked": true}}
			d, err := c.FindOneAndUpdate(context.Background(), nil, set, FindOneAndUpdateOptions{Sort: []IndexKey{Asc("rank")}}).Document()
			require.NoError(t, err)
			assert.Equal(t, "b", d["_id"], "lowest rank")
			d, err = c.FindOneAndUpdate(context.Background(), Document{"picked": Document{"$exists": false}}, set, FindOneAndUpdateOptions{Sort: []IndexKey{Desc("rank")}}).Document()
			require.NoError(t, err)
			assert.Equal(t, "a", d["_id"], "highest rank")
			n, err := c.CountDocuments(context.Background(), Document{"picked": true})
			require.NoError(t, err)
			assert.EqualValues(t, 2, n, "one document per call")
		})
	}
}

func TestFindOneAndModifyProjection(t *testing.T) {
	_, c := fmColl(t)
	d, err := c.FindOneAndUpdate(context.Background(), Document{"_id": "a"}, Document{"$inc": Document{"hits": 1}},
		FindOneAndUpdateOptions{ReturnDocument: After, Projection: Document{"hits": 1, "_id": 0}}).
		Document()
	require.NoError(t, err)
	assert.Equal(t, Document{"hits": 1}, d)
	stored, err := c.FindOne(context.Background(), Document{"_id": "a"}).Document()
	require.NoError(t, err)
	assert.Equal(t, "ada", stored["user"], "projection shapes only the result")

	d, err = c.FindOneAndDelete(context.Background(), Document{"_id": "b"}, FindOneAndDeleteOptions{Projection: Document{"user": 1}}).Document()
	require.NoError(t, err)
	assert.Equal(t, Document{"_id": "b", "user": "bob"}, d)
	d, err = c.FindOneAndReplace(context.Background(), Document{"_id": "c"}, Document{"user": "cyd"}, FindOneAndReplaceOptions{ReturnDocument: After, Projection: Document{"_id": 0}}).Document()
	require.NoError(t, err)
	assert.Equal(t, Document{"user": "cyd"}, d)
}

func TestFindOneAndUpdateUpsert(t *testing.T) {
	_, c := fmColl(t)
	up := Document{"$set": Document{"hits": 1}, "$setOnInsert": Document{"created": "now"}}
	var s map[string]any
	require.NoError(t, c.FindOneAndUpdate(context.Background(), Document{"_id": "z", "user": "zed"}, up,
		FindOneAndUpdateOptions{Upsert: true, ReturnDocument: After}).
		Decode(&s))
	assert.Equal(t, map[string]any{"_id": "z", "user": "zed", "hits": 1, "created": "now"}, s, "$setOnInsert applies on insert")

	// Upsert with Before: inserted, but there was no document before.
	err := c.FindOneAndUpdate(context.Background(), Document{"_id": "y"}, up, FindOneAndUpdateOptions{Upsert: true}).Err()
	require.ErrorIs(t, err, ErrNotFound)
	got, err := c.FindOne(context.Background(), Document{"_id": "y"}).Document()
	require.NoError(t, err)
	assert.Equal(t, "now", got["created"])

	// A match: $setOnInsert does not apply.
	d, err := c.FindOneAndUpdate(context.Background(), Document{"_id": "a"}, up, FindOneAndUpdateOptions{Upsert: true, ReturnDocument: After}).Document()
	require.NoError(t, err)
	assert.NotContains(t, d, "created")
	n, _ := c.CountDocuments(context.Background(), nil)
	assert.EqualValues(t, 5, n)
}

func TestFindOneAndReplace(t *testing.T) {
	_, c := fmColl(t)
	var old fmSession
	require.NoError(t, c.FindOneAndReplace(context.Background(), Document{"user": "bob"}, fmSession{User: "bobby", Hits: 7}).Decode(&old))
	assert.Equal(t, "b", old.ID)
	assert.Equal(t, "bob", old.User)
	var now fmSession
	require.NoError(t, c.FindOneAndReplace(context.Background(), Document{"_id": "b"}, Document{"user": "rob"}, FindOneAndReplaceOptions{ReturnDocument: After}).Decode(&now))
	assert.Equal(t, fmSession{ID: "b", User: "rob"}, now, "_id kept, other fields replaced")

	// Upsert takes the filter's _id.
	d, err := c.FindOneAndReplace(context.Background(), Document{"_id": "n"}, Document{"user": "new"}, FindOneAndReplaceOptions{Upsert: true, ReturnDocument: After}).Document()
	require.NoError(t, err)
	assert.Equal(t, Document{"_id": "n", "user": "new"}, d)
}

func TestFindOneAndDelete(t *testing.T) {
	_, c := fmColl(t)
	var gone fmSession
	require.NoError(t, c.FindOneAndDelete(context.Background(), nil, FindOneAndDeleteOptions{Sort: []IndexKey{Desc("rank")}}).Decode(&gone))
	assert.Equal(t, "a", gone.ID)
	require.ErrorIs(t, c.FindOne(context.Background(), Document{"_id": "a"}).Err(), ErrNotFound)
	n, _ := c.CountDocuments(context.Background(), nil)
	assert.EqualValues(t, 2, n)
	require.ErrorIs(t, c.FindOneAndDelete(context.Background(), Document{"_id": "a"}).Err(), ErrNotFound)
}

func TestFindOneAndModifyNotFoundCreatesNothing(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("missing")
	require.ErrorIs(t, c.FindOneAndUpdate(context.Background(), Document{"_id": 1}, Document{"$set": Document{"a": 1}}).Err(), ErrNotFound)
	require.ErrorIs(t, c.FindOneAndReplace(context.Background(), Document{"_id": 1}, Document{"a": 1}).Err(), ErrNotFound)
	require.ErrorIs(t, c.FindOneAndDelete(context.Background(), Document{"_id": 1}).Err(), ErrNotFound)
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	assert.Empty(t, names, "a find-and-modify that matches nothing creates no collection")
}

// Every error of a find-and-modify leaves the collection as it was.
func TestFindOneAndModifyErrorsChangeNothing(t *testing.T) {
	db, c := fmColl(t)
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("user")}, Unique: true})
	require.NoError(t, err)
	v, err := db.CreateCollection(context.Background(), "v", CollectionOptions{Validator: Document{"$jsonSchema": Document{"required": []any{"user"}}}})
	require.NoError(t, err)
	_, err = v.InsertOne(context.Background(), Document{"_id": 1, "user": "x"})
	require.NoError(t, err)
	ts, err := db.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t"}})
	require.NoError(t, err)

	snapshot := func() []Document {
		cur, err := c.Find(context.Background(), nil)
		require.NoError(t, err)
		var docs []Document
		require.NoError(t, cur.All(context.Background(), &docs))
		return docs
	}
	before := snapshot()
	for _, tc := range []struct {
		name string
		err  error
		run  func() error
	}{
		{"bad filter", ErrInvalidFilter, func() error {
			return c.FindOneAndUpdate(context.Background(), Document{"a": Document{"$bogus": 1}}, Document{"$set": Document{"x": 1}}).Err()
		}},
		{"bad update", ErrInvalidUpdate, func() error {
			return c.FindOneAndUpdate(context.Background(), nil, Document{"x": 1}).Err()
		}},
		{"bad operator", ErrInvalidUpdate, func() error {
			return c.FindOneAndUpdate(context.Background(), Document{"_id": "a"}, Document{"$push": Document{"user": 1}}).Err()
		}},
		{"bad ReturnDocument", ErrInvalidOptions, func() error {
			return c.FindOneAndUpdate(context.Background(), nil, Document{"$set": Document{"x": 1}}, FindOneAndUpdateOptions{ReturnDocument: 7}).Err()
		}},
		{"bad sort", ErrInvalidOptions, func() error {
			return c.FindOneAndDelete(context.Background(), nil, FindOneAndDeleteOptions{Sort: []IndexKey{{Field: "rank", Order: 2}}}).Err()
		}},
		{"bad projection", ErrInvalidOptions, func() error {
			return c.FindOneAndDelete(context.Background(), nil, FindOneAndDeleteOptions{Projection: Document{"a": 1, "b": 0}}).Err()
		}},
		{"update _id", ErrImmutableID, func() error {
			return c.FindOneAndUpdate(context.Background(), Document{"_id": "a"}, Document{"$set": Document{"_id": "q"}}).Err()
		}},
		{"replace _id", ErrImmutableID, func() error {
			return c.FindOneAndReplace(context.Background(), Document{"_id": "a"}, Document{"_id": "q"}).Err()
		}},
		{"replacement with operator", ErrInvalidUpdate, func() error {
			return c.FindOneAndReplace(context.Background(), Document{"_id": "a"}, Document{"$set": Document{"x": 1}}).Err()
		}},
		{"replacement not a document", ErrInvalidDocument, func() error {
			return c.FindOneAndReplace(context.Background(), Document{"_id": "a"}, 42).Err()
		}},
		{"duplicate key by update", ErrDuplicateKey, func() error {
			return c.FindOneAndUpdate(context.Background(), Document{"_id": "a"}, Document{"$set": Document{"user": "bob"}}).Err()
		}},
		{"duplicate key by upsert", ErrDuplicateKey, func() error {
			return c.FindOneAndUpdate(context.Background(), Document{"_id": "new"}, Document{"$set": Document{"user": "bob"}}, FindOneAndUpdateOptions{Upsert: true}).Err()
		}},
		{"duplicate key by replace", ErrDuplicateKey, func() error {
			return c.FindOneAndReplace(context.Background(), Document{"_id": "a"}, Document{"user": "cy"}).Err()
		}},
		{"validation", ErrValidation, func() error {
			return v.FindOneAndUpdate(context.Background(), Document{"_id": 1}, Document{"$unset": Document{"user": ""}}).Err()
		}},
		{"time-series", ErrTimeSeries, func() error {
			return ts.FindOneAndUpdate(context.Background(), nil, Document{"$set": Document{"x": 1}}).Err()
		}},
		{"time-series delete", ErrTimeSeries, func() error { return ts.FindOneAndDelete(context.Background(), nil).Err() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.run(), tc.err)
			assert.Equal(t, before, snapshot())
			d, err := v.FindOne(context.Background(), Document{"_id": 1}).Document()
			require.NoError(t, err)
			assert.Equal(t, "x", d["user"])
		})
	}

	require.NoError(t, db.Close())
	require.ErrorIs(t, c.FindOneAndUpdate(context.Background(), nil, Document{"$set": Document{"x": 1}}).Err(), ErrClosed)
	require.ErrorIs(t, c.FindOneAndReplace(context.Background(), nil, Document{"x": 1}).Err(), ErrClosed)
	require.ErrorIs(t, c.FindOneAndDelete(context.Background(), nil).Err(), ErrClosed)
}

// Concurrent find-and-modify calls never see the same version: each $inc
// returns a distinct value, as one read-and-write step must.
func TestFindOneAndUpdateAtomicAgainstWriters(t *testing.T) {
	_, c := fmColl(t)
	const workers, each = 4, 200
	seen := make([]atomic.Int32, workers*each+1)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				d, err := c.FindOneAndUpdate(context.Background(), Document{"_id": "a"}, Document{"$inc": Document{"hits": 1}}, FindOneAndUpdateOptions{ReturnDocument: After}).Document()
				if !assert.NoError(t, err) {
					return
				}
				seen[d["hits"].(int)].Add(1)
			}
		}()
	}
	wg.Wait()
	for v := 1; v <= workers*each; v++ {
		require.EqualValues(t, 1, seen[v].Load(), "value %d returned once", v)
	}
}

// With HideExpired, a document past its threshold is absent to
// find-and-modify: refreshing it fails, and with Upsert a new document is
// inserted after the expired one is deleted as the monitor would.
func TestFindOneAndModifyHideExpired(t *testing.T) {
	refresh := Document{"$currentDate": Document{"lastModifiedDate": true}}
	for _, tc := range []struct {
		name string
		run  func(c *Collection) SingleResult
	}{
		{"update", func(c *Collection) SingleResult {
			return c.FindOneAndUpdate(context.Background(), Document{"_id": "X"}, refresh)
		}},
		{"update after", func(c *Collection) SingleResult {
			return c.FindOneAndUpdate(context.Background(), Document{"_id": "X"}, refresh, FindOneAndUpdateOptions{ReturnDocument: After})
		}},
		{"update by field", func(c *Collection) SingleResult {
			return c.FindOneAndUpdate(context.Background(), Document{"v": "old"}, refresh)
		}},
		{"replace", func(c *Collection) SingleResult {
			return c.FindOneAndReplace(context.Background(), Document{"_id": "X"}, Document{"lastModifiedDate": t0.Add(time.Hour)})
		}},
		{"delete", func(c *Collection) SingleResult {
			return c.FindOneAndDelete(context.Background(), Document{"_id": "X"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, c := openHidden(t)
			require.ErrorIs(t, tc.run(c).Err(), ErrNotFound)
			// Not revived: still expired, and the monitor deletes it.
			res, err := db.RunTTLPass(context.Background())
			require.NoError(t, err)
			assert.Equal(t, 1, res.Deleted, "the expired document was left for the monitor, unchanged")
		})
	}

	t.Run("upsert inserts a new document", func(t *testing.T) {
		log := &eventLog{}
		db, c := openHidden(t, WithDeleteObserver(log.observe))
		d, err := c.FindOneAndUpdate(context.Background(), Document{"_id": "X"},
			Document{"$currentDate": Document{"lastModifiedDate": true}, "$setOnInsert": Document{"v": "new"}},
			FindOneAndUpdateOptions{Upsert: true, ReturnDocument: After}).
			Document()
		require.NoError(t, err)
		assert.Equal(t, "new", d["v"], "a new document: $setOnInsert applied")
		assert.NotContains(t, d, "email", "nothing of the expired document survives")
		assert.Equal(t, int64(1), db.Metrics().TTL.DeletedDocuments, "the expired one deleted as the monitor would")
		require.Len(t, log.events(), 1)
		assert.Equal(t, []any{"X"}, log.events()[0].IDs)
	})
	t.Run("upsert after the expire hook saw the expired one", func(t *testing.T) {
		var seen []any
		_, c := openHidden(t, WithOnExpire(func(_ context.Context, b ExpiredBatch) error {
			for _, d := range b.Docs {
				seen = append(seen, d["_id"])
			}
			return nil
		}))
		d, err := c.FindOneAndUpdate(context.Background(), Document{"_id": "X"}, Document{"$setOnInsert": Document{"v": "new"}},
			FindOneAndUpdateOptions{Upsert: true, ReturnDocument: After}).
			Document()
		require.NoError(t, err)
		assert.Equal(t, Document{"_id": "X", "v": "new"}, d)
		assert.Equal(t, []any{"X"}, seen, "the hook saw the expired document before it went")
	})
	t.Run("replace upsert inserts a new document", func(t *testing.T) {
		db, c := openHidden(t)
		d, err := c.FindOneAndReplace(context.Background(), Document{"_id": "X"}, Document{"lastModifiedDate": t0.Add(time.Hour), "v": "new"},
			FindOneAndReplaceOptions{Upsert: true, ReturnDocument: After}).
			Document()
		require.NoError(t, err)
		assert.Equal(t, Document{"_id": "X", "lastModifiedDate": t0.Add(time.Hour), "v": "new"}, d)
		assert.Equal(t, int64(1), db.Metrics().TTL.DeletedDocuments)
	})
	t.Run("a hook failure fails the upsert and changes nothing", func(t *testing.T) {
		boom := errors.New("boom")
		_, c := openHidden(t, WithOnExpire(func(context.Context, ExpiredBatch) error { return boom }))
		err := c.FindOneAndUpdate(context.Background(), Document{"_id": "X"}, Document{"$set": Document{"v": "new"}}, FindOneAndUpdateOptions{Upsert: true}).Err()
		require.ErrorIs(t, err, ErrExpireHook)
		s, err := c.db.state("c", false)
		require.NoError(t, err)
		k, _ := appendIDKey(nil, "X")
		s.writeMu.Lock()
		rec, ok := s.lookup(k)
		s.writeMu.Unlock()
		require.True(t, ok, "the expired document is still stored")
		assert.Equal(t, "old", rec.document()["v"])
	})
}

// Issue 10 item 5, the session-refresh race: while the monitor deletes
// expired sessions, refreshes run; a refresh that begins after the monitor
// reported a session deleted must fail, and no deleted session is ever
// stored again.
func TestFindOneAndUpdateNeverResurrects(t *testing.T) {
	for _, hooks := range []bool{false, true} {
		t.Run(fmt.Sprint("hooks=", hooks), func(t *testing.T) {
			var tick atomic.Int64 // orders deletions and refreshes
			var mu sync.Mutex
			deletedAt := map[any]int64{}
			observe := func(ev DeleteEvent) {
				at := tick.Add(1)
				mu.Lock()
				for _, id := range ev.IDs {
					deletedAt[id] = at
				}
				mu.Unlock()
			}
			opts := []Option{quiet(MonitorOptions{}), WithDeleteObserver(observe)}
			if hooks {
				opts = append(opts, WithOnExpire(func(context.Context, ExpiredBatch) error { return nil }))
			}
			db, clk := openMon(t, opts...)
			c := ttlColl(t, db, "sessions", 60)
			const n = 1000
			for i := range n {
				// Staggered dates: some expire at every step of the clock.
				_, err := c.InsertOne(context.Background(), Document{"_id": i, "lastModifiedDate": t0.Add(time.Duration(i%20) * time.Second)})
				require.NoError(t, err)
			}
			// Each step of the clock lets 20 refreshes run, during and
			// between the monitor's passes.
			tokens := make(chan struct{}, 40*20)
			var wg sync.WaitGroup
			var refreshed, missed atomic.Int64
			for w := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 1))
					for range tokens {
						id := r.IntN(n)
						start := tick.Add(1)
						err := c.FindOneAndUpdate(context.Background(), Document{"_id": id},
							Document{"$currentDate": Document{"lastModifiedDate": true}}).
							Err()
						if errors.Is(err, ErrNotFound) {
							missed.Add(1)
							continue
						}
						if !assert.NoError(t, err) {
							return
						}
						refreshed.Add(1)
						mu.Lock()
						at, gone := deletedAt[id]
						mu.Unlock()
						assert.False(t, gone && at < start, "session %d refreshed after its deletion", id)
					}
				}()
			}
			sent := int64(0)
			for range 40 {
				for range 20 {
					tokens <- struct{}{}
				}
				sent += 20
				// Half the step's refreshes run before the pass and the
				// rest during it, however a busy machine schedules the
				// workers (the wall-clock bound only guards a stuck worker).
				for deadline := time.Now().Add(10 * time.Second); refreshed.Load()+missed.Load() < sent-10 && time.Now().Before(deadline); {
					runtime.Gosched()
				}
				clk.Advance(3 * time.Second)
				_, err := db.RunTTLPass(context.Background())
				require.NoError(t, err)
			}
			close(tokens)
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, deletedAt, "the monitor deleted sessions")
			require.Less(t, len(deletedAt), n, "refreshed sessions outlived the others")
			require.NotZero(t, missed.Load(), "refreshes met deleted sessions")
			for id := range deletedAt {
				require.ErrorIs(t, c.FindOne(context.Background(), Document{"_id": id}).Err(), ErrNotFound, "session %v came back", id)
			}
			cnt, err := c.CountDocuments(context.Background(), nil)
			require.NoError(t, err)
			assert.EqualValues(t, n-len(deletedAt), cnt)
			t.Logf("refreshed %d, missed %d, deleted %d", refreshed.Load(), missed.Load(), len(deletedAt))
		})
	}
}

// A capped collection may evict the document its update grew: After still
// returns the document as the update wrote it.
func TestFindOneAndUpdateAfterOnCappedEviction(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c, err := db.CreateCollection(context.Background(), "capped", CollectionOptions{Capped: true, MaxBytes: 200})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), Document{"_id": 1, "s": "small"})
	require.NoError(t, err)
	big := string(make([]byte, 300))
	d, err := c.FindOneAndUpdate(context.Background(), Document{"_id": 1}, Document{"$set": Document{"s": big}}, FindOneAndUpdateOptions{ReturnDocument: After}).Document()
	require.NoError(t, err)
	assert.Equal(t, Document{"_id": 1, "s": big}, d)
	require.ErrorIs(t, c.FindOne(context.Background(), Document{"_id": 1}).Err(), ErrNotFound, "evicted by the cap")
}
