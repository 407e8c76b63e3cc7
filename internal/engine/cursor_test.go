package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cursorIDs reads a cursor to the end and returns the _ids, in order.
func cursorIDs(t *testing.T, cur *Cursor) []any {
	t.Helper()
	out := []any{}
	for cur.Next(context.Background()) {
		d, err := cur.Document()
		require.NoError(t, err)
		out = append(out, d["_id"])
	}
	require.NoError(t, cur.Err())
	return out
}

// materialised runs q as one read (the path Find takes for a sort in
// memory) and returns the _ids.
func materialised(t *testing.T, c *Collection, filter Document, o FindOptions) []any {
	t.Helper()
	q, err := c.compileQuery(filter, []FindOptions{o})
	require.NoError(t, err)
	s, err := c.read()
	require.NoError(t, err)
	docs, _ := s.run(q, c.db.clock.Now())
	out := make([]any, len(docs))
	for i, d := range docs {
		doc := d.doc
		if doc == nil {
			doc, err = (&Cursor{cur: d}).Document()
			require.NoError(t, err)
		}
		out[i] = doc["_id"]
	}
	return out
}

// A streaming cursor, resumed batch after batch, returns exactly what one
// read returns, for every kind of walk: natural order, an ascending and a
// descending index (forwards and backwards), a multikey index, several
// intervals, a TTL index's date tree, with skip and limit.
func TestCursorBatchesMatchOneRead(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	docs := make([]Document, 3000)
	for i := range docs {
		docs[i] = Document{"_id": i, "g": i % 13, "h": (i * 7) % 101, "tags": []any{i % 5, i % 7},
			"at": t0.Add(time.Duration((i*37)%3000) * time.Second)}
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	for _, m := range []IndexModel{
		{Keys: []IndexKey{Asc("g")}},
		{Keys: []IndexKey{Desc("h")}},
		{Keys: []IndexKey{Asc("tags")}},
		{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(1 << 30)},
	} {
		_, err := c.CreateIndex(context.Background(), m)
		require.NoError(t, err)
	}
	cases := []struct {
		f Document
		o FindOptions
	}{
		{nil, FindOptions{}},
		{nil, FindOptions{Skip: 300, Limit: 700}},
		{Document{"g": Document{"$gte": 3}}, FindOptions{}},
		{Document{"g": Document{"$in": []any{1, 5, 9}}}, FindOptions{Skip: 10}},
		{Document{"h": Document{"$lt": 60}}, FindOptions{}},
		{nil, FindOptions{Sort: []IndexKey{Desc("h")}}},
		{nil, FindOptions{Sort: []IndexKey{Asc("h")}, Limit: 2000}},
		{Document{"tags": Document{"$in": []any{2, 3}}}, FindOptions{}},
		{Document{"at": Document{"$gte": t0.Add(100 * time.Second)}}, FindOptions{}},
		{nil, FindOptions{Sort: []IndexKey{Asc("at")}}},
		{nil, FindOptions{Sort: []IndexKey{Desc("at")}, Skip: 5}},
		{Document{"g": 4, "h": Document{"$gt": 10}}, FindOptions{}},
		{Document{"g": 99}, FindOptions{}}, // examines documents, returns none
	}
	for i, tc := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want := materialised(t, c, tc.f, tc.o)
			cur, err := c.Find(context.Background(), tc.f, tc.o)
			require.NoError(t, err)
			require.NotNil(t, cur.s, "a streaming cursor")
			require.Equal(t, want, cursorIDs(t, cur))
		})
	}
}

// A batch returns at most 256 documents and examines at most 4,096 under
// one hold of the read lock; between batches no lock is held, so a writer
// commits while the caller's loop body runs.
func TestCursorBatchPerLockHold(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	fillCancel(t, c, 10_000)
	cur, err := c.Find(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, cur.batch, cursorBatch, "Find reads the first batch")
	n := 0
	for cur.Next(context.Background()) {
		require.LessOrEqual(t, len(cur.batch), cursorBatch)
		if n%1000 == 0 {
			// The loop body runs with no lock held: a write commits.
			_, err := c.UpdateOne(context.Background(), Document{"_id": 9999 - n/1000}, Document{"$set": Document{"seen": n}})
			require.NoError(t, err)
		}
		n++
	}
	require.NoError(t, cur.Err())
	require.Equal(t, 10_000, n)

	// A filter matching nothing pauses after 4,096 documents examined.
	cur, err = c.Find(context.Background(), Document{"v": 99})
	require.NoError(t, err)
	require.Empty(t, cur.batch)
	require.False(t, cur.done, "the first hold stopped at the examine budget")
	require.Equal(t, uint64(cursorExamine), cur.q.at.nat.seq, "examined the first 4,096 documents, by seq")
	require.False(t, cur.Next(context.Background()))
	require.NoError(t, cur.Err())
}

// Concurrent writers update (moving documents along the walked index,
// both ways), insert and delete while cursors walk the natural order and
// an index. No document is returned twice; each is returned whole, as one
// of its versions (every version keeps a == 2*b); the natural-order walk
// misses no document that was there throughout.
func TestCursorConcurrentWriters(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	const n = 4000
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = Document{"_id": i, "b": i, "a": 2 * i}
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("b")}})
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		f    Document
		o    FindOptions
	}{
		{"natural", nil, FindOptions{}},
		{"index", Document{"b": Document{"$gte": -1 << 40}}, FindOptions{}},
		{"indexDesc", nil, FindOptions{Sort: []IndexKey{Desc("b")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var writes atomic.Int64
			var writerDone atomic.Bool
			deleted := map[int]bool{}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer writerDone.Store(true)
				r := rand.New(rand.NewPCG(1, 2))
				next := n * 10
				for range 6000 { // bounded: inserts ahead of the walk would extend it forever
					select {
					case <-stop:
						return
					default:
					}
					runtime.Gosched()
					writes.Add(1)
					id := r.IntN(n)
					switch r.IntN(10) {
					case 0:
						mu.Lock()
						deleted[id] = true
						mu.Unlock()
						_, _ = c.DeleteOne(context.Background(), Document{"_id": id})
					case 1:
						next++
						_, _ = c.InsertOne(context.Background(), Document{"_id": next, "b": r.IntN(2 * n), "a": 0})
						_, _ = c.UpdateOne(context.Background(), Document{"_id": next}, Document{"$set": Document{"a": 2 * 0}})
					default:
						b := r.IntN(4*n) - n // ahead of or behind the walk
						_, _ = c.UpdateOne(context.Background(), Document{"_id": id}, Document{"$set": Document{"b": b, "a": 2 * b}})
					}
				}
			}()
			cur, err := c.Find(context.Background(), tc.f, tc.o)
			require.NoError(t, err)
			seen := map[any]bool{}
			for cur.Next(context.Background()) {
				var d struct {
					ID int `ttldb:"_id"`
					A  int `ttldb:"a"`
					B  int `ttldb:"b"`
				}
				require.NoError(t, cur.Decode(&d))
				require.False(t, seen[d.ID], "document %d returned twice", d.ID)
				seen[d.ID] = true
				if d.ID < n {
					require.Equal(t, 2*d.B, d.A, "document %d: a torn version", d.ID)
				}
				// Let the writer in: at least one write per document read,
				// however the scheduler of a busy machine orders them.
				for w := writes.Load(); writes.Load() == w && !writerDone.Load(); {
					runtime.Gosched()
				}
			}
			require.NoError(t, cur.Err())
			during := writes.Load()
			close(stop)
			wg.Wait()
			require.Greater(t, during, int64(100), "writes made while the cursor was open")
			if tc.name == "natural" {
				for id := range n {
					if !deleted[id] {
						require.True(t, seen[id], "document %d, never deleted, was missed", id)
					}
				}
			}
			// Put deleted documents back for the next walk.
			for id := range deleted {
				_, _ = c.InsertOne(context.Background(), Document{"_id": id, "b": id, "a": 2 * id})
			}
		})
	}
}

// Find and the cursor stop when their context is done: before the call,
// mid-scan of the first batch, between batches (Next's ctx), and a sort in
// memory mid-scan; CountDocuments too. Each returns the context's error.
func TestFindCancelled(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	fillCancel(t, c, 5000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Find(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	_, err = c.CountDocuments(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)

	// Mid-scan of the first batch: the filter matches nothing, so the
	// scan looks at ctx every 256 documents examined.
	ctx, _ = withCancelAt(t, 3)
	_, err = c.Find(ctx, Document{"v": 99})
	require.ErrorIs(t, err, context.Canceled)

	// A sort in memory, mid-scan.
	ctx, _ = withCancelAt(t, 3)
	_, err = c.Find(ctx, nil, FindOptions{Sort: []IndexKey{Desc("v")}, Limit: 3})
	require.ErrorIs(t, err, context.Canceled)

	ctx, _ = withCancelAt(t, 3)
	_, err = c.CountDocuments(ctx, Document{"v": 3})
	require.ErrorIs(t, err, context.Canceled)
	cancelHook = nil

	// Between batches: Next's ctx.
	cur, err := c.Find(context.Background(), nil)
	require.NoError(t, err)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	n := 0
	for cur.Next(ctx) {
		if n++; n == 300 {
			cancel()
		}
	}
	require.ErrorIs(t, cur.Err(), context.Canceled)
	require.Equal(t, 512, n, "the batch read before the cancel is returned, no further one")

	// Past a deadline.
	dctx, dcancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer dcancel()
	_, err = c.Find(dctx, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// All decodes into slices of structs, pointers to structs, maps and
// Documents, reusing the slice's array; Decoded and Documents range over a
// cursor and close it when the loop breaks.
func TestCursorAllAndIterators(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	fillCancel(t, c, 600)
	type row struct {
		ID int `bson:"_id"`
		V  int `bson:"v"`
	}
	find := func() *Cursor {
		cur, err := c.Find(context.Background(), Document{"v": 3})
		require.NoError(t, err)
		return cur
	}
	var rows []row
	require.NoError(t, find().All(context.Background(), &rows))
	require.Len(t, rows, 86)
	for _, r := range rows {
		require.Equal(t, 3, r.V)
		require.Equal(t, 3, r.ID%7)
	}
	var ptrs []*row
	require.NoError(t, find().All(context.Background(), &ptrs))
	require.Len(t, ptrs, 86)
	require.Equal(t, rows[5], *ptrs[5])
	maps := make([]map[string]any, 0, 100)
	require.NoError(t, find().All(context.Background(), &maps))
	require.Len(t, maps, 86)
	var docs []Document
	require.NoError(t, find().All(context.Background(), &docs))
	require.Equal(t, 3, docs[0]["v"])
	require.ErrorIs(t, find().All(context.Background(), rows), ErrDecode)

	var got []int
	cur := find()
	for r, err := range Decoded[row](context.Background(), cur) {
		require.NoError(t, err)
		if got = append(got, r.ID); len(got) == 3 {
			break
		}
	}
	require.Equal(t, []int{3, 10, 17}, got)
	require.False(t, cur.Next(context.Background()), "closed by the break")
	got = got[:0]
	for d, err := range find().Documents(context.Background()) {
		require.NoError(t, err)
		got = append(got, d["_id"].(int))
	}
	require.Len(t, got, 86)
	require.True(t, slices.IsSorted(got))

	// A value that does not fit: ErrDecode, the loop ends.
	var bad []struct {
		V string `bson:"v"`
	}
	require.ErrorIs(t, find().All(context.Background(), &bad), ErrDecode)
}

// Decoding a cursor's results into a reused map or a struct allocates only
// what the destination needs.
func TestCursorDecodeAllocs(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	fillCancel(t, c, 300)
	var v struct {
		ID int `bson:"_id"`
		V  int `bson:"v"`
	}
	cur, err := c.Find(context.Background(), nil)
	require.NoError(t, err)
	require.True(t, cur.Next(context.Background()))
	allocs := testing.AllocsPerRun(100, func() {
		if err := cur.Decode(&v); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "a struct of ints")
}

// Sort+Limit without an index keeps Skip+Limit documents (never more, at
// any point of the scan) and returns what a full sort returns, ties in
// insertion order, on random data with arrays, missing fields and mixed
// types.
func TestTopKMatchesFullSort(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	r := rand.New(rand.NewPCG(3, 4))
	docs := make([]Document, 2000)
	for i := range docs {
		d := Document{"_id": i, "k": r.IntN(50)}
		switch r.IntN(6) {
		case 0:
			d["s"] = []any{r.IntN(50), r.IntN(50)}
		case 1:
			d["s"] = fmt.Sprint(r.IntN(50))
		case 2: // missing
		default:
			d["s"] = r.Float64() * 50
		}
		d["n"] = Document{"x": r.IntN(10)}
		docs[i] = d
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	sorts := [][]IndexKey{{Asc("s")}, {Desc("s")}, {Asc("k"), Desc("s")}, {Desc("n.x"), Asc("k")}}
	for _, sort := range sorts {
		for _, o := range []FindOptions{{Limit: 1}, {Limit: 10}, {Skip: 7, Limit: 13}, {Skip: 1990, Limit: 50}, {Limit: 5000}} {
			o.Sort = sort
			for _, f := range []Document{nil, {"k": Document{"$lt": 25}}} {
				topKOff = true
				want := materialised(t, c, f, o)
				topKOff = false
				got := materialised(t, c, f, o)
				require.Equal(t, want, got, "sort %v skip %d limit %d filter %v", sort, o.Skip, o.Limit, f)
				cur, err := c.Find(context.Background(), f, o)
				require.NoError(t, err)
				require.Equal(t, want, cursorIDs(t, cur))
			}
		}
	}

	// The heap never holds more than k.
	var top topK
	q := &findQuery{sort: sortKeys([]IndexKey{Asc("k")})}
	top.init(q, true, 10)
	s, err := c.read()
	require.NoError(t, err)
	s.mu.RLock()
	maxLen := 0
	s.natural.Ascend(func(it natItem) bool {
		top.add(&docRef{rec: s.rec(it.slot)})
		maxLen = max(maxLen, len(top.items))
		return true
	})
	s.mu.RUnlock()
	require.Equal(t, 10, maxLen)
	require.Equal(t, 2000, top.n)
}

// A cursor whose index is dropped ends with ErrNotFound; one whose
// collection is dropped ends quietly after the batch it holds.
func TestCursorIndexOrCollectionDropped(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	fillCancel(t, c, 1000)
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}})
	require.NoError(t, err)
	cur, err := c.Find(context.Background(), Document{"v": Document{"$gte": 0}})
	require.NoError(t, err)
	require.Equal(t, "v_1", cur.p.ix.name)
	require.NoError(t, c.DropIndex(context.Background(), "v_1"))
	n := 0
	for cur.Next(context.Background()) {
		n++
	}
	require.Equal(t, cursorBatch, n, "the batch read before the drop")
	require.ErrorIs(t, cur.Err(), ErrNotFound)

	cur, err = c.Find(context.Background(), nil)
	require.NoError(t, err)
	require.NoError(t, db.DropCollection(context.Background(), "c"))
	n = 0
	for cur.Next(context.Background()) {
		n++
	}
	require.Equal(t, cursorBatch, n)
	require.NoError(t, cur.Err())
}
