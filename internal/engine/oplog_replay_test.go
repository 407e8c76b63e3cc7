package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// TestOpReplay runs a seeded random history on a DB with a recording sink
// (ordinary, capped, validated and HideExpired collections, time-series
// collections with and without PreciseExpiry; inserts with generated and
// given ids, updates with $inc, $set, $unset, $push and $currentDate,
// upserts, replacements, find-and-modify, deletes, bulk writes, index
// creation, drop and CollMod, collection drops and re-creation by a write,
// TTL passes driven by the fake clock, HideExpired writes deleting expired
// documents in their way), then applies the recorded ops, as they are and
// after a binary round trip, to fresh DBs whose clock is a century later,
// and requires the same state: collections and options, index
// specifications and entries, every document byte for byte in natural
// order, every time-series bucket, and the same answers to index queries.
// TTLDB_SEED=n replays a seed.
func TestOpReplay(t *testing.T) {
	for _, hooks := range []bool{false, true} {
		t.Run(fmt.Sprintf("hooks=%v", hooks), func(t *testing.T) {
			seed := testutil.Seed(t)
			rng := rand.New(rand.NewPCG(seed, 0x0905))
			var opts []Option
			if hooks {
				opts = append(opts, WithOnExpire(func(context.Context, ExpiredBatch) error { return nil }))
			}
			db, clk, sink := openRecorded(t, opts...)
			if rng.IntN(2) == 0 {
				sink.pre = true
				db.ops.requestPreImages(true)
			}
			h := &history{t: t, rng: rng, db: db, clk: clk}
			h.run(1500)
			// A drop and a recreation whatever the seed chose (a history
			// may drop nothing), then more history.
			_, err := db.Collection("dropped").InsertOne(context.Background(), Document{"k": 1})
			require.NoError(t, err)
			require.NoError(t, db.DropCollection(context.Background(), "dropped"))
			_, err = db.Collection("dropped").InsertOne(context.Background(), Document{"k": 2})
			require.NoError(t, err)
			// And a HideExpired write that deletes an expired document in
			// its way (the history's own may meet none).
			inWayColl, err := db.CreateCollection(context.Background(), "inWay", CollectionOptions{HideExpired: true})
			require.NoError(t, err)
			_, err = inWayColl.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(1)})
			require.NoError(t, err)
			_, err = inWayColl.InsertOne(context.Background(), Document{"_id": 1, "at": clk.Now()})
			require.NoError(t, err)
			clk.Advance(2 * time.Second)
			_, err = inWayColl.InsertOne(context.Background(), Document{"_id": 1, "at": clk.Now()})
			require.NoError(t, err)
			h.steps(100)
			ops := sink.take()
			require.NotEmpty(t, ops)
			for i, op := range ops {
				require.Equal(t, uint64(i+1), op.Seq, "ops numbered in commit order from 1")
			}
			requireHistoryCoverage(t, ops)

			direct := replay(t, ops)
			requireSameState(t, db, direct)

			bin := make([]Op, len(ops))
			for i, op := range ops {
				b, err := op.MarshalBinary()
				require.NoError(t, err)
				require.NoError(t, bin[i].UnmarshalBinary(b))
				requireSameOp(t, op, bin[i])
			}
			requireSameState(t, db, replay(t, bin))
		})
	}
}

// TestOpReplayConcurrent: writers on goroutines of their own, the
// background monitor and RunTTLPass commit ops concurrently; applied in
// sequence order, the ops rebuild the same state. Sequence order is commit
// order: each write commits under its collection's write lock, the drop
// and creation of a collection under the DB's.
func TestOpReplayConcurrent(t *testing.T) {
	seed := testutil.Seed(t)
	clk := ttltest.NewClock(opEpoch)
	db, err := Open(WithClock(clk), WithMonitor(MonitorOptions{Interval: time.Second}))
	require.NoError(t, err)
	defer db.Close()
	sink := &recordingSink{}
	db.ops.attach(sink)
	(&history{t: t, rng: rand.New(rand.NewPCG(seed, 1)), db: db, clk: clk}).setup()

	failed := make(chan error, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := &history{t: t, rng: rand.New(rand.NewPCG(seed, uint64(g+2))), db: db, clk: clk, failed: failed}
			for range 400 {
				h.step()
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	// The monitor's passes run as the clock advances.
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			clk.Advance(500 * time.Millisecond)
			runtime.Gosched()
		}
	}
	passes := db.Metrics().TTL.Passes
	select {
	case err := <-failed:
		t.Fatal(err)
	default:
	}
	db.SetTTLMonitorEnabled(false)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	ops := sink.take()
	for i, op := range ops {
		require.Equal(t, uint64(i+1), op.Seq)
	}
	expires := 0
	for _, op := range ops {
		if op.Kind == OpExpire {
			expires++
		}
	}
	t.Logf("%d ops, %d of them TTL batches; %d monitor passes during the writes", len(ops), expires, passes)
	require.NotZero(t, expires)
	requireSameState(t, db, replay(t, ops))
}

// newTestRand returns a generator seeded as testutil.Seed says.
func newTestRand(t testing.TB) *rand.Rand { return rand.New(rand.NewPCG(testutil.Seed(t), 0x0905)) }

// history drives random writes on a DB.
type history struct {
	t   testing.TB
	rng *rand.Rand
	db  *DB
	clk *ttltest.Clock
	// failed, when not nil, collects the errors of a history run on a
	// goroutine of its own (require must not stop other goroutines).
	failed chan<- error
}

// must fails the history on an error that no write of it expects.
func (h *history) must(err error) {
	if err == nil {
		return
	}
	if h.failed != nil {
		select {
		case h.failed <- err:
		default:
		}
		return
	}
	require.NoError(h.t, err)
}

var (
	plainColls = []string{"plain", "hidden", "capped", "valid"}
	tsColls    = []string{"tsPrecise", "tsBucket"}
)

func (h *history) pick(s []string) string { return s[h.rng.IntN(len(s))] }

// date returns an instant around the clock's now: mostly in the past
// minutes, some in the future.
func (h *history) date() time.Time {
	return h.clk.Now().Add(time.Duration(h.rng.IntN(600)-450) * time.Second).Truncate(time.Millisecond)
}

func (h *history) doc(withID bool) Document {
	d := Document{"k": h.rng.IntN(12), "n": h.rng.IntN(5)}
	if withID {
		d["_id"] = h.rng.IntN(60)
	}
	switch h.rng.IntN(4) {
	case 0:
		d["at"] = h.date()
	case 1:
		d["at"] = []any{h.date(), h.date()}
	case 2:
		d["at"] = float64(h.date().Unix()) // ArangoDB's Unix seconds
	}
	if h.rng.IntN(3) == 0 {
		d["tags"] = []any{"t" + fmt.Sprint(h.rng.IntN(4)), h.rng.IntN(3)}
	}
	if h.rng.IntN(4) == 0 {
		d["sub"] = Document{"x": h.rng.IntN(3), "s": "v"}
	}
	return d
}

func (h *history) filter() Document {
	switch h.rng.IntN(4) {
	case 0:
		return Document{"_id": h.rng.IntN(60)}
	case 1:
		return Document{"k": Document{"$lt": h.rng.IntN(12)}}
	case 2:
		return Document{"tags": "t" + fmt.Sprint(h.rng.IntN(4))}
	}
	return Document{"k": h.rng.IntN(12)}
}

func (h *history) update() Document {
	u := Document{}
	switch h.rng.IntN(5) {
	case 0:
		u["$inc"] = Document{"n": h.rng.IntN(3) + 1}
	case 1:
		u["$currentDate"] = Document{"at": true}
	case 2:
		u["$set"] = Document{"k": h.rng.IntN(12), "sub.x": h.rng.IntN(3)}
	case 3:
		u["$unset"] = Document{"at": ""}
	default:
		u["$push"] = Document{"tags": h.rng.IntN(3)}
		u["$inc"] = Document{"n": 1}
	}
	return u
}

func (h *history) setup() {
	ctx := context.Background()
	db := h.db
	_, err := db.CreateCollection(context.Background(), "hidden", CollectionOptions{HideExpired: true})
	require.NoError(h.t, err)
	_, err = db.CreateCollection(context.Background(), "capped", CollectionOptions{Capped: true, MaxDocuments: 25, MaxBytes: 4000})
	require.NoError(h.t, err)
	_, err = db.CreateCollection(context.Background(), "valid", CollectionOptions{Validator: Document{"$jsonSchema": Document{
		"bsonType": "object", "properties": Document{"k": Document{"bsonType": "int", "maximum": 10}}}}})

	require.NoError(h.t, err)
	_, err = db.CreateCollection(context.Background(), "tsPrecise", CollectionOptions{
		TimeSeries:         &TimeSeriesOptions{TimeField: "t", MetaField: "m", BucketMaxSpanSeconds: 120, BucketRoundingSeconds: 120, PreciseExpiry: true},
		ExpireAfterSeconds: Seconds(300),
	})

	require.NoError(h.t, err)
	_, err = db.CreateCollection(context.Background(), "tsBucket", CollectionOptions{
		TimeSeries:         &TimeSeriesOptions{TimeField: "t", MetaField: "m", Granularity: GranularitySeconds},
		ExpireAfterSeconds: Seconds(60),
	})

	require.NoError(h.t, err)
	for _, name := range []string{"plain", "hidden", "valid"} {
		_, err = db.Collection(name).CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(int32(60 + h.rng.IntN(120)))})
		require.NoError(h.t, err)
	}
	_, err = db.Collection("hidden").CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("k")}, Unique: true, PartialFilterExpression: Document{"n": Document{"$gte": 3}}})
	require.NoError(h.t, err)
}

func (h *history) run(steps int) {
	h.setup()
	h.steps(steps)
	h.clk.Advance(10 * time.Minute)
	_, err := h.db.RunTTLPass(context.Background())
	require.NoError(h.t, err)
}

// steps makes n random changes.
func (h *history) steps(n int) {
	for range n {
		h.step()
	}
}

// step makes one random change.
func (h *history) step() {
	ctx := context.Background()
	{
		name := h.pick(plainColls)
		c := h.db.Collection(name)
		switch r := h.rng.IntN(100); {
		case r < 18:
			_, _ = c.InsertOne(context.Background(), h.doc(h.rng.IntN(2) == 0))
		case r < 24:
			docs := make([]Document, 1+h.rng.IntN(4))
			for i := range docs {
				docs[i] = h.doc(h.rng.IntN(3) == 0)
			}
			_, _ = c.InsertMany(context.Background(), docs)
		case r < 32:
			_, _ = c.UpdateOne(context.Background(), h.filter(), h.update(), UpdateOptions{Upsert: h.rng.IntN(4) == 0})
		case r < 37:
			_, _ = c.UpdateMany(ctx, h.filter(), h.update())
		case r < 41:
			_, _ = c.ReplaceOne(context.Background(), h.filter(), h.doc(false), UpdateOptions{Upsert: h.rng.IntN(3) == 0})
		case r < 45:
			_ = c.FindOneAndUpdate(context.Background(), h.filter(), h.update(), FindOneAndUpdateOptions{ReturnDocument: After, Upsert: h.rng.IntN(3) == 0, Sort: []IndexKey{Desc("k")}}).Err()
		case r < 47:
			_ = c.FindOneAndReplace(context.Background(), h.filter(), h.doc(false)).Err()
		case r < 50:
			_ = c.FindOneAndDelete(context.Background(), h.filter()).Err()
		case r < 54:
			_, _ = c.DeleteOne(context.Background(), h.filter())
		case r < 56:
			_, _ = c.DeleteMany(ctx, h.filter())
		case r < 59:
			_, _ = c.BulkWrite(ctx, []WriteModel{
				InsertOneModel{Document: h.doc(true)},
				UpdateOneModel{Filter: h.filter(), Update: h.update(), Upsert: true},
				DeleteOneModel{Filter: h.filter()},
				ReplaceOneModel{Filter: h.filter(), Replacement: h.doc(false)},
				UpdateManyModel{Filter: h.filter(), Update: h.update()},
				DeleteManyModel{Filter: Document{"n": 4}},
			}, BulkWriteOptions{Ordered: boolPtr(h.rng.IntN(2) != 0)})
		case r < 62:
			h.indexChange(c)
		case r < 63:
			if name == "plain" || name == "valid" {
				_ = h.db.DropCollection(context.Background(), name) // the next write creates a plain one
			}
		case r < 70:
			h.clk.Advance(time.Duration(h.rng.IntN(90)) * time.Second)
		case r < 76:
			_, err := h.db.RunTTLPass(ctx)
			h.must(err)
		case r < 80:
			// A few _id values, often expired and hidden: the insert
			// deletes the one in its way.
			_, _ = h.db.Collection("hidden").InsertOne(context.Background(), Document{"_id": h.rng.IntN(6), "at": h.date(), "k": h.rng.IntN(12), "n": h.rng.IntN(5)})
		default:
			h.timeSeries(ctx)
		}
	}
}

func (h *history) indexChange(c *Collection) {
	ctx := context.Background()
	switch h.rng.IntN(6) {
	case 0:
		_, _ = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("k"), Desc("n")}})
	case 5:
		// Not a TTL index: a CollMod of n_1 (case 4) then makes it one.
		_, _ = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("n")}})
	case 1:
		_, _ = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("tags")}, Sparse: true})
	case 2:
		_, _ = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(int32(30 + h.rng.IntN(200))), TTLValueForms: TTLValueForms(h.rng.IntN(2))})
	case 3:
		if specs, err := c.Indexes(context.Background()); err == nil && len(specs) > 1 {
			if name := specs[1+h.rng.IntN(len(specs)-1)].Name; c.Name() != "hidden" || name != "at_1" {
				_ = c.DropIndex(context.Background(), name) // hidden keeps its TTL index, for the in-way deletes
			}
		}
	case 4:
		_, _ = c.CollMod(context.Background(), CollModIndex{Name: "at_1", ExpireAfterSeconds: Seconds(int32(h.rng.IntN(300)))})
		_, _ = c.CollMod(context.Background(), CollModIndex{Name: "n_1", ExpireAfterSeconds: Seconds(int32(h.rng.IntN(300)))})
	}
}

func (h *history) timeSeries(ctx context.Context) {
	c := h.db.Collection(h.pick(tsColls))
	meta := func() any {
		switch h.rng.IntN(3) {
		case 0:
			return "s" + fmt.Sprint(h.rng.IntN(3))
		case 1:
			return Document{"site": h.rng.IntN(2)}
		}
		return nil
	}
	switch r := h.rng.IntN(20); {
	case r < 12:
		docs := make([]Document, 1+h.rng.IntN(5))
		for i := range docs {
			d := Document{"t": h.date(), "v": h.rng.Float64()}
			if m := meta(); m != nil {
				d["m"] = m
			}
			if h.rng.IntN(3) == 0 {
				d["_id"] = h.rng.IntN(10)
			}
			docs[i] = d
		}
		_, err := c.InsertMany(context.Background(), docs)
		h.must(err)
	case r < 14:
		_, err := c.DeleteMany(ctx, Document{"v": Document{"$lt": h.rng.Float64() / 4}})
		h.must(err)
	case r < 16:
		_, err := c.UpdateMany(ctx, Document{"m": "s" + fmt.Sprint(h.rng.IntN(3))}, Document{"$set": Document{"m": "s" + fmt.Sprint(h.rng.IntN(3))}})
		h.must(err)
	case r < 17:
		_, _ = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("t")}, ExpireAfterSeconds: Seconds(int32(h.rng.IntN(200))), PartialFilterExpression: Document{"m": "s1"}})
		_, _ = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("m"), Asc("t")}})
	case r < 18:
		if h.rng.IntN(2) == 0 {
			_ = c.DropIndex(context.Background(), "t_1")
		} else {
			_, _ = c.CollMod(context.Background(), CollModIndex{Name: "t_1", ExpireAfterSeconds: Seconds(int32(h.rng.IntN(200)))})
		}
	default:
		m := TimeSeriesCollMod{ExpireAfterSeconds: Seconds(int32(h.rng.IntN(400)))}
		if h.rng.IntN(4) == 0 {
			m = TimeSeriesCollMod{Off: true}
		}
		_, err := c.CollModTimeSeries(context.Background(), m)
		h.must(err)
	}
}

// requireHistoryCoverage requires a history's ops (all of them, in
// order) to hold every kind of op and every kind of change the history
// makes: HideExpired in-way deletes, capped evictions, time-series
// expiries, deletes and updates. It logs their counts.
func requireHistoryCoverage(t testing.TB, ops []Op) {
	t.Helper()
	kinds := map[OpKind]int{}
	var inWay, evictions, tsExpire, tsDelete, tsUpdate int
	for i, op := range ops {
		kinds[op.Kind]++
		ts := slices.Contains(tsColls, op.Collection)
		switch {
		case op.Kind == OpDelete && op.Expired:
			inWay++
		case op.Kind == OpDelete && op.Collection == "capped" && ops[i-1].Kind != OpDelete:
			evictions++
		case op.Kind == OpExpire && ts:
			tsExpire++
		case op.Kind == OpDelete && ts:
			tsDelete++
		case op.Kind == OpUpdate && ts:
			tsUpdate++
		}
	}
	t.Logf("%d ops: %v; HideExpired in-way deletes %d, capped evictions %d, time-series expiries %d, deletes %d, updates %d",
		len(ops), kinds, inWay, evictions, tsExpire, tsDelete, tsUpdate)
	for k := OpInsert; k <= OpCollMod; k++ {
		require.NotZero(t, kinds[k], "the history committed no %s op", k)
	}
	for _, n := range []int{inWay, evictions, tsExpire, tsDelete, tsUpdate} {
		require.NotZero(t, n, "the history missed a kind of change")
	}
}

// requireSameOp requires two ops to be equal, nil and empty lists alike.
func requireSameOp(t testing.TB, want, got Op) {
	t.Helper()
	norm := func(op Op) Op {
		for _, l := range []*[]RawDocument{&op.Docs, &op.Updates, &op.Keys, &op.Before} {
			if len(*l) == 0 {
				*l = nil
			}
		}
		if len(op.Spec) == 0 {
			op.Spec = nil
		}
		return op
	}
	require.Equal(t, norm(want), norm(got))
}

// requireSameState requires two DBs to hold the same collections, options,
// indexes, documents and buckets, and to answer index queries alike.
func requireSameState(t testing.TB, want, got *DB) {
	t.Helper()
	wn, err := want.ListCollectionNames(context.Background())
	require.NoError(t, err)
	gn, err := got.ListCollectionNames(context.Background())
	require.NoError(t, err)
	require.Equal(t, wn, gn)
	for _, name := range wn {
		ws, _ := want.state(name, false)
		gs, _ := got.state(name, false)
		require.Equal(t, ws.opts, gs.opts, "collection %q options", name)
		wc, gc := want.Collection(name), got.Collection(name)
		wi, err := wc.Indexes(context.Background())
		require.NoError(t, err)
		gi, err := gc.Indexes(context.Background())
		require.NoError(t, err)
		require.Equal(t, wi, gi, "collection %q indexes", name)
		if ws.ts != nil {
			requireSameBuckets(t, ws.ts, gs.ts)
			continue
		}
		require.Equal(t, dumpDocs(ws), dumpDocs(gs), "collection %q documents", name)
		require.Equal(t, dumpVersions(ws), dumpVersions(gs), "collection %q record versions", name)
		require.Equal(t, dumpIndexes(ws), dumpIndexes(gs), "collection %q index entries", name)
		require.Equal(t, ws.bytes, gs.bytes, "collection %q bytes", name)
		if !ws.opts.HideExpired {
			for _, f := range []Document{{"k": 3}, {"k": Document{"$gte": 5}}, {"tags": "t1"}, {"at": Document{"$lt": opEpoch.Add(time.Hour)}}} {
				require.Equal(t, findIDs(t, wc, f), findIDs(t, gc, f), "collection %q query %v", name, f)
			}
		}
	}
}

// dumpDocs lists a collection's documents in natural order: encodings.
func dumpDocs(s *collState) [][]byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out [][]byte
	s.natural.Ascend(func(it natItem) bool {
		out = append(out, s.rec(it.slot).enc)
		return true
	})
	return out
}

// dumpVersions lists a collection's record versions in natural order:
// the identity an expire hook's delivery carries (ExpiredBatch.Versions),
// which every replica and a restarted DB give the same document.
func dumpVersions(s *collState) []uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []uint64
	s.natural.Ascend(func(it natItem) bool {
		out = append(out, s.rec(it.slot).ver)
		return true
	})
	return out
}

// dumpIndexes lists each index, in the collection's order, with its
// multikey flag, then its entries in tree order: the key and the
// document's _id key (seq and slot are local), and for a TTL index its
// expiry entries and its backlog counts.
func dumpIndexes(s *collState) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, ix := range s.indexes {
		out = append(out, fmt.Sprintf("index %s multikey=%v", ix.name, ix.multikey))
		if ix.tree != nil {
			ix.tree.Ascend(func(e indexEntry) bool {
				out = append(out, fmt.Sprintf("%x %x", e.key, s.rec(e.slot).key))
				return true
			})
		}
		if ix.ttl != nil {
			out = append(out, fmt.Sprintf("ttl %d, backlog counts %d %v", ix.ttl.expireAfter.Load(), ix.ttl.counts.total, nonZero(ix.ttl.counts.levels[0])))
			ix.ttl.expiry.Ascend(func(e expiryEntry) bool {
				out = append(out, fmt.Sprintf("%d.%d %x", e.sec, e.nsec, s.rec(e.slot).key))
				return true
			})
		}
	}
	return out
}

// nonZero returns m without its zero values.
func nonZero(m map[uint64]int64) map[uint64]int64 {
	out := map[uint64]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func findIDs(t testing.TB, c *Collection, f Document) []any {
	t.Helper()
	cur, err := c.Find(context.Background(), f)
	require.NoError(t, err)
	var docs []Document
	require.NoError(t, cur.All(context.Background(), &docs))
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d["_id"]
	}
	return out
}

// requireSameBuckets requires two time-series collections to hold the same
// buckets (number, meta, window, measurements byte for byte), the same open
// bucket per meta value and the same expiry settings.
func requireSameBuckets(t testing.TB, want, got *tsColl) {
	t.Helper()
	want.mu.RLock()
	defer want.mu.RUnlock()
	got.mu.RLock()
	defer got.mu.RUnlock()
	dump := func(ts *tsColl) []string {
		var out []string
		ts.buckets.Ascend(func(b *bucket) bool {
			out = append(out, fmt.Sprintf("bucket %d meta %v/%v %x start %v min %v max %v offs %v ends %v data %x",
				b.seq, b.hasMeta, b.meta, b.metaKey, b.start, b.min, b.max, b.offs, b.ends, b.data))
			return true
		})
		open := make([]string, 0, len(ts.open))
		for k, b := range ts.open {
			open = append(open, fmt.Sprintf("open %x %d", k, b.seq))
		}
		slices.Sort(open)
		out = append(out, open...)
		for _, e := range ts.expiries() {
			out = append(out, fmt.Sprintf("rule %s %d", e.name, e.expireAfter.Load()))
			e.tree.Ascend(func(en tsExpEntry) bool {
				out = append(out, fmt.Sprintf("  %d.%d %d", en.sec, en.nsec, en.b.seq))
				return true
			})
		}
		return append(out, fmt.Sprintf("count %d bytes %d next %d", ts.count, ts.bytesLen, ts.nextSeq))
	}
	require.Equal(t, dump(want), dump(got), "collection %q buckets", want.name)
}

// TestTSMeasurementEncoding checks that a time-series op's measurement
// decodes as the measurement reads return, and its key as {_id, bucket,
// pos} built from the codec's own encodings.
func TestTSMeasurementEncoding(t *testing.T) {
	db, _, sink := openRecorded(t)
	c, err := db.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m"}})
	require.NoError(t, err)
	sink.take()
	_, err = c.InsertOne(context.Background(), Document{"_id": 7, "t": opEpoch, "m": Document{"a": 1}, "v": 2.5})
	require.NoError(t, err)
	ops := sink.take()
	require.Len(t, ops, 1)
	want, err := c.FindOne(context.Background(), nil).Document()
	require.NoError(t, err)
	require.Equal(t, want, ops[0].Docs[0].Document())
	_, err = c.DeleteMany(context.Background(), nil)
	require.NoError(t, err)
	ops = sink.take()
	require.Len(t, ops, 1)
	enc, err := codec.Encode(Document{"_id": 7, "bucket": int64(1), "pos": int32(0)}, nil)
	require.NoError(t, err)
	require.Equal(t, Document{"_id": 7, "bucket": int64(1), "pos": int32(0)}, ops[0].Keys[0].Document())
	require.Equal(t, len(enc), len(ops[0].Keys[0]))
	require.NoError(t, codec.Validate(ops[0].Keys[0]))
	require.True(t, bytes.HasPrefix(ops[0].Keys[0], []byte{3}), "three fields")
}

// Inserts into a collection with a multikey index, each followed by an
// insert into another whose TTL index (no B-tree) meets no array: the
// inserts reuse pooled working memory, and the TTL index stays
// non-multikey on the origin as on a DB applying its ops (a stale entry
// once made the origin's multikey: TTLDB_SEED=1795466397276067178).
func TestOpReplayMultikeyAcrossInserts(t *testing.T) {
	ctx := context.Background()
	db, clk, sink := openRecorded(t)
	arrays, dates := db.Collection("arrays"), db.Collection("dates")
	_, err := arrays.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("tags")}})
	require.NoError(t, err)
	_, err = dates.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	for i := range 20 {
		_, err = arrays.InsertOne(context.Background(), Document{"_id": i, "tags": []any{1, 2}})
		require.NoError(t, err)
		_, err = dates.InsertMany(context.Background(), []Document{{"_id": i, "at": clk.Now()}})
		require.NoError(t, err)
	}
	specs, err := dates.Indexes(context.Background())
	require.NoError(t, err)
	require.Equal(t, "at_1", specs[1].Name)
	require.False(t, specs[1].Multikey, "no document of dates has an array")
	requireSameState(t, db, replay(t, sink.take()))
}
