package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
)

func encDoc(t testing.TB, d Document) RawDocument {
	t.Helper()
	enc, err := codec.Encode(d, nil)
	require.NoError(t, err)
	return enc
}

// TestOpsEachKind checks the ops of each kind of write: kind, documents,
// keys, the resolved update, specs, pre-images, and that one write call's
// ops are contiguous.
func TestOpsEachKind(t *testing.T) {
	ctx := context.Background()
	db, clk, sink := openRecorded(t)
	sink.pre = true
	db.ops.requestPreImages(true)
	c := db.Collection("c")

	one := func() Op {
		t.Helper()
		ops := sink.take()
		require.Len(t, ops, 1)
		return ops[0]
	}

	_, err := c.InsertOne(context.Background(), Document{"_id": 1, "a": 1})
	require.NoError(t, err)
	require.Len(t, sink.take(), 2) // create, insert

	// A generated _id is in the op's document.
	res, err := c.InsertOne(context.Background(), Document{"a": 2})
	require.NoError(t, err)
	id := res.InsertedID
	op := one()
	require.Equal(t, OpInsert, op.Kind)
	require.Equal(t, id, op.Docs[0].ID())

	// ReplaceOne: OpReplace, the stored document, its pre-image.
	_, err = c.ReplaceOne(context.Background(), Document{"_id": 1}, Document{"b": 1})
	require.NoError(t, err)
	op = one()
	require.Equal(t, OpReplace, op.Kind)
	require.Equal(t, Document{"_id": 1, "b": 1}, op.Docs[0].Document())
	require.Equal(t, Document{"_id": 1, "a": 1}, op.Before[0].Document())
	require.Nil(t, op.Updates)

	// FindOneAndUpdate: OpUpdate with $currentDate resolved.
	clk.Advance(time.Minute)
	now := opEpoch.Add(time.Minute)
	require.NoError(t, c.FindOneAndUpdate(context.Background(), Document{"_id": 1}, Document{"$currentDate": Document{"at": true}, "$set": Document{"x": 1}}).Err())
	op = one()
	require.Equal(t, OpUpdate, op.Kind)
	require.Equal(t, Document{"$set": Document{"x": 1, "at": now}}, codec.Decode(op.Updates[0]))
	require.Equal(t, Document{"_id": 1, "b": 1, "at": now, "x": 1}, op.Docs[0].Document())
	require.Equal(t, now, op.Time)

	// An update that changes nothing commits nothing.
	_, err = c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$set": Document{"x": 1}})
	require.NoError(t, err)
	require.Empty(t, sink.take())

	// UpdateMany: one op for all documents, Updates parallel to Docs.
	_, err = c.UpdateMany(ctx, nil, Document{"$inc": Document{"n": 1}})
	require.NoError(t, err)
	op = one()
	require.Len(t, op.Docs, 2)
	require.Len(t, op.Updates, 2)
	require.Len(t, op.Before, 2)

	// An upsert that inserts: OpInsert.
	_, err = c.UpdateOne(context.Background(), Document{"_id": 9}, Document{"$set": Document{"u": 1}}, UpdateOptions{Upsert: true})
	require.NoError(t, err)
	op = one()
	require.Equal(t, OpInsert, op.Kind)
	require.Equal(t, Document{"_id": 9, "u": 1}, op.Docs[0].Document())

	// FindOneAndDelete: OpDelete with its key and pre-image.
	require.NoError(t, c.FindOneAndDelete(context.Background(), Document{"_id": 9}).Err())
	op = one()
	require.Equal(t, OpDelete, op.Kind)
	require.Equal(t, []RawDocument{encDoc(t, Document{"_id": 9})}, op.Keys)
	require.Equal(t, Document{"_id": 9, "u": 1}, op.Before[0].Document())
	require.False(t, op.Expired)

	// BulkWrite: each model's ops, in order.
	_, err = c.BulkWrite(ctx, []WriteModel{InsertOneModel{Document: Document{"_id": 20}}, DeleteOneModel{Filter: Document{"_id": 20}}})
	require.NoError(t, err)
	ops := sink.take()
	require.Len(t, ops, 2)
	require.Equal(t, []OpKind{OpInsert, OpDelete}, []OpKind{ops[0].Kind, ops[1].Kind})

	// Index changes, with the full specification.
	name, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("a"), Desc("b")}, Unique: true, Sparse: true,
		PartialFilterExpression: Document{"s": regexp.MustCompile(`^x`), "n": Document{"$gte": 1}}})
	require.NoError(t, err)
	op = one()
	require.Equal(t, OpCreateIndex, op.Kind)
	require.Equal(t, name, op.Index)
	m, err := indexModelOf(op.Spec)
	require.NoError(t, err)
	require.Equal(t, []IndexKey{Asc("a"), Desc("b")}, m.Keys)
	require.True(t, m.Unique && m.Sparse)
	require.Equal(t, `^x`, m.PartialFilterExpression["s"].(*regexp.Regexp).String())
	_, err = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(5), TTLValueForms: TTLValuesDatesOnly})
	require.NoError(t, err)
	op = one()
	m, err = indexModelOf(op.Spec)
	require.NoError(t, err)
	require.Equal(t, IndexModel{Keys: []IndexKey{Asc("at")}, Name: "at_1", ExpireAfterSeconds: Seconds(5), TTLValueForms: TTLValuesDatesOnly}, m)
	// The same specification again is a no-op: no op.
	_, err = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(5), TTLValueForms: TTLValuesDatesOnly})
	require.NoError(t, err)
	require.Empty(t, sink.take())
	_, err = c.CollMod(context.Background(), CollModIndex{Name: "at_1", ExpireAfterSeconds: Seconds(7)})
	require.NoError(t, err)
	op = one()
	require.Equal(t, OpCollMod, op.Kind)
	require.Equal(t, "at_1", op.Index)
	require.Equal(t, Document{"expireAfterSeconds": int32(7)}, codec.Decode(op.Spec))
	require.NoError(t, c.DropIndex(context.Background(), name))
	op = one()
	require.Equal(t, Op{Seq: op.Seq, Kind: OpDropIndex, Collection: "c", Time: now, Index: name}, op)

	// A collection's options, validator and time-series options included.
	_, err = db.CreateCollection(context.Background(), "v", CollectionOptions{HideExpired: true, Validator: Document{"$jsonSchema": Document{"required": []any{"a"}}}})
	require.NoError(t, err)
	o, err := collectionOptionsOf(one().Spec)
	require.NoError(t, err)
	require.Equal(t, CollectionOptions{HideExpired: true, Validator: Document{"$jsonSchema": Document{"required": []any{"a"}}}}, o)
	_, err = db.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m", Granularity: GranularityMinutes, PreciseExpiry: true}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	o, err = collectionOptionsOf(one().Spec)
	require.NoError(t, err)
	require.Equal(t, CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m", Granularity: GranularityMinutes, PreciseExpiry: true}, ExpireAfterSeconds: Seconds(60)}, o)
	_, err = db.CollModTimeSeries(context.Background(), "ts", TimeSeriesCollMod{Off: true})
	require.NoError(t, err)
	op = one()
	require.Equal(t, OpCollMod, op.Kind)
	require.Empty(t, op.Index)
	require.Equal(t, Document{"off": true}, codec.Decode(op.Spec))

	require.NoError(t, db.DropCollection(context.Background(), "v"))
	require.Equal(t, OpDropCollection, one().Kind)
}

// TestOpsInWayDelete: a HideExpired write that deletes an expired document
// in its way commits the deletion (OpDelete, Expired, with the index and
// the cutoff) before its own op, in the same call.
func TestOpsInWayDelete(t *testing.T) {
	ctx := context.Background()
	db, clk, sink := openRecorded(t, WithHideExpired())
	c := db.Collection("h")
	_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(10)})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), Document{"_id": 1, "at": opEpoch})
	require.NoError(t, err)
	sink.take()
	clk.Advance(time.Minute)
	_, err = c.InsertOne(context.Background(), Document{"_id": 1, "at": clk.Now()})
	require.NoError(t, err)
	ops := sink.take()
	require.Len(t, ops, 2)
	require.Equal(t, OpDelete, ops[0].Kind)
	require.True(t, ops[0].Expired)
	require.Equal(t, "at_1", ops[0].Index)
	require.Equal(t, opEpoch.Add(time.Minute), ops[0].Cutoff)
	require.Equal(t, []any{1}, keyIDs(ops[0].Keys))
	require.Equal(t, OpInsert, ops[1].Kind)
	require.Equal(t, ops[0].Seq+1, ops[1].Seq)
}

// TestOpsNotBuiltWithoutSink: with no sink wanting ops, no write builds
// or commits one (the sequence stays 0) and writes allocate less than
// with a sink: the op path is skipped, not run and dropped.
func TestOpsNotBuiltWithoutSink(t *testing.T) {
	// A sink attached while ops are not wanted would receive any op a
	// write built regardless: it receives none over a whole history.
	db, clk, sink := openRecorded(t)
	db.ops.wanted.Store(false)
	h := &history{t: t, rng: newTestRand(t), db: db, clk: clk}
	h.run(300)
	require.Empty(t, sink.take())
	require.Zero(t, db.ops.lastSeq())

	allocs := func(withSink bool) (insert, update float64) {
		db, _, _ := openRecorded(t)
		db.ops.wanted.Store(withSink)
		c := db.Collection("a")
		_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("k")}})
		require.NoError(t, err)
		i := 0
		insert = testing.AllocsPerRun(200, func() {
			i++
			_, err := c.InsertOne(context.Background(), Document{"_id": i, "k": i})
			require.NoError(t, err)
		})
		update = testing.AllocsPerRun(200, func() {
			_, err := c.UpdateOne(context.Background(), Document{"_id": 5}, Document{"$inc": Document{"k": 1}})
			require.NoError(t, err)
		})
		return insert, update
	}
	noInsert, noUpdate := allocs(false)
	withInsert, withUpdate := allocs(true)
	t.Logf("allocations per call without a sink / with: InsertOne %.0f / %.0f, UpdateOne %.0f / %.0f", noInsert, withInsert, noUpdate, withUpdate)
	require.Less(t, noInsert, withInsert)
	require.Less(t, noUpdate, withUpdate)
}

// TestApplySequence: the first op must follow the DB's last sequence
// number and each the one before; otherwise nothing is applied. Applied
// ops reach the DB's sinks with their own numbers.
func TestApplySequence(t *testing.T) {
	create := Op{Kind: OpCreateCollection, Collection: "c", Spec: collectionSpec(CollectionOptions{})}
	insert := Op{Kind: OpInsert, Collection: "c", Docs: []RawDocument{encDoc(t, Document{"_id": 1})}}
	db, _, sink := openRecorded(t)

	for _, bad := range [][2]uint64{{0, 1}, {2, 3}, {1, 3}, {1, 1}} {
		a, b := create, insert
		a.Seq, b.Seq = bad[0], bad[1]
		err := db.Apply(context.Background(), a, b)
		require.ErrorIs(t, err, ErrOpSequence, "seqs %v", bad)
		names, _ := db.ListCollectionNames(context.Background())
		require.Empty(t, names, "nothing applied")
	}
	a, b := create, insert
	a.Seq, b.Seq = 1, 2
	require.NoError(t, db.Apply(context.Background(), a, b))
	require.Equal(t, uint64(2), db.ops.lastSeq())
	got := sink.take()
	require.Len(t, got, 2)
	require.Equal(t, []uint64{1, 2}, []uint64{got[0].Seq, got[1].Seq})
	require.ErrorIs(t, db.Apply(context.Background(), b), ErrOpSequence, "an op applied twice")

	// A local write that commits moves the sequence: the next op must
	// follow it.
	_, err := db.Collection("c").InsertOne(context.Background(), Document{"_id": 2})
	require.NoError(t, err)
	del := Op{Seq: 3, Kind: OpDelete, Collection: "c", Keys: []RawDocument{encDoc(t, Document{"_id": 1})}}
	require.ErrorIs(t, db.Apply(context.Background(), del), ErrOpSequence)
	del.Seq = 4
	require.NoError(t, db.Apply(context.Background(), del))
	require.NoError(t, db.Apply(context.Background())) // no ops: nothing to do
}

// TestApplyErrors: an op that cannot apply fails with ErrInvalidOp (and
// the specific sentinel), changes nothing, and stops the call there.
func TestApplyErrors(t *testing.T) {
	ctx := context.Background()
	doc := func(d Document) RawDocument { return encDoc(t, d) }
	garbage := RawDocument{1, 1, 'a', 99}
	cases := []struct {
		name string
		op   Op
		is   error
	}{
		{"unknown kind", Op{Kind: 99, Collection: "c"}, ErrInvalidOp},
		{"unknown collection", Op{Kind: OpInsert, Collection: "nope", Docs: []RawDocument{doc(Document{"_id": 5})}}, ErrNotFound},
		{"duplicate _id", Op{Kind: OpInsert, Collection: "c", Docs: []RawDocument{doc(Document{"_id": 5}), doc(Document{"_id": 1})}}, ErrDuplicateKey},
		{"duplicate within", Op{Kind: OpInsert, Collection: "c", Docs: []RawDocument{doc(Document{"_id": 5}), doc(Document{"_id": 5})}}, ErrDuplicateKey},
		{"unique index", Op{Kind: OpInsert, Collection: "c", Docs: []RawDocument{doc(Document{"_id": 5, "u": 1})}}, ErrDuplicateKey},
		{"no _id", Op{Kind: OpInsert, Collection: "c", Docs: []RawDocument{doc(Document{"a": 1})}}, ErrInvalidDocument},
		{"malformed document", Op{Kind: OpInsert, Collection: "c", Docs: []RawDocument{garbage}}, ErrInvalidDocument},
		{"array _id", Op{Kind: OpInsert, Collection: "c", Docs: []RawDocument{doc(Document{"_id": []any{1}})}}, ErrInvalidDocument},
		{"update of a missing _id", Op{Kind: OpUpdate, Collection: "c", Docs: []RawDocument{doc(Document{"_id": 1, "x": 1}), doc(Document{"_id": 77})}}, ErrNotFound},
		{"update to a taken unique key", Op{Kind: OpReplace, Collection: "c", Docs: []RawDocument{doc(Document{"_id": 2, "u": 1})}}, ErrDuplicateKey},
		{"delete of a missing _id", Op{Kind: OpDelete, Collection: "c", Keys: []RawDocument{doc(Document{"_id": 1}), doc(Document{"_id": 77})}}, ErrNotFound},
		{"delete twice", Op{Kind: OpDelete, Collection: "c", Keys: []RawDocument{doc(Document{"_id": 1}), doc(Document{"_id": 1})}}, ErrInvalidOp},
		{"expire by a missing index", Op{Kind: OpExpire, Collection: "c", Index: "nope", Keys: []RawDocument{doc(Document{"_id": 1})}}, ErrNotFound},
		{"expire by a non-TTL index", Op{Kind: OpExpire, Collection: "c", Index: "u_1", Keys: []RawDocument{doc(Document{"_id": 1})}}, ErrInvalidIndex},
		{"create an existing collection", Op{Kind: OpCreateCollection, Collection: "c", Spec: collectionSpec(CollectionOptions{})}, ErrCollectionExists},
		{"create with a bad name", Op{Kind: OpCreateCollection, Collection: "a$b", Spec: collectionSpec(CollectionOptions{})}, ErrInvalidOptions},
		{"create with a bad spec", Op{Kind: OpCreateCollection, Collection: "d", Spec: doc(Document{"capped": "yes"})}, ErrInvalidOp},
		{"create with bad options", Op{Kind: OpCreateCollection, Collection: "d", Spec: doc(Document{"capped": true})}, ErrInvalidOptions},
		{"create without a spec", Op{Kind: OpCreateCollection, Collection: "d"}, ErrInvalidOp},
		{"drop a missing collection", Op{Kind: OpDropCollection, Collection: "nope"}, ErrNotFound},
		{"create an existing index", Op{Kind: OpCreateIndex, Collection: "c", Index: "u_1", Spec: indexSpecDoc(IndexModel{Name: "u_1", Keys: []IndexKey{Asc("u")}})}, ErrIndexOptionsConflict},
		{"create an index the data violates", Op{Kind: OpCreateIndex, Collection: "c", Index: "x_1", Spec: indexSpecDoc(IndexModel{Name: "x_1", Keys: []IndexKey{Asc("x")}, Unique: true})}, ErrDuplicateKey},
		{"create a bad index", Op{Kind: OpCreateIndex, Collection: "c", Index: "y_1", Spec: indexSpecDoc(IndexModel{Name: "y_1", Keys: []IndexKey{{Field: "y", Order: 2}}})}, ErrInvalidIndex},
		{"index name and spec differ", Op{Kind: OpCreateIndex, Collection: "c", Index: "z", Spec: indexSpecDoc(IndexModel{Name: "y_1", Keys: []IndexKey{Asc("y")}})}, ErrInvalidOp},
		{"drop a missing index", Op{Kind: OpDropIndex, Collection: "c", Index: "nope"}, ErrNotFound},
		{"collMod of a missing index", Op{Kind: OpCollMod, Collection: "c", Index: "nope", Spec: collModSpec(Seconds(3))}, ErrNotFound},
		{"collMod off on a plain collection", Op{Kind: OpCollMod, Collection: "c", Index: "at_1", Spec: collModSpec(nil)}, ErrInvalidOp},
		{"collMod negative", Op{Kind: OpCollMod, Collection: "c", Index: "at_1", Spec: collModSpec(Seconds(-1))}, ErrInvalidTTL},
		{"time-series update of a plain measurement", Op{Kind: OpReplace, Collection: "ts", Docs: []RawDocument{doc(Document{"_id": 1, "t": opEpoch})}}, ErrTimeSeries},
		{"time-series key without a bucket", Op{Kind: OpDelete, Collection: "ts", Keys: []RawDocument{doc(Document{"_id": 1})}}, ErrInvalidOp},
		{"time-series key of a missing bucket", Op{Kind: OpDelete, Collection: "ts", Keys: []RawDocument{doc(Document{"_id": 1, "bucket": int64(9), "pos": int32(0)})}}, ErrNotFound},
		{"time-series key with another _id", Op{Kind: OpDelete, Collection: "ts", Keys: []RawDocument{doc(Document{"_id": 2, "bucket": int64(1), "pos": int32(0)})}}, ErrInvalidOp},
		{"time-series measurement without a time", Op{Kind: OpInsert, Collection: "ts", Docs: []RawDocument{doc(Document{"_id": 1})}}, ErrTimeSeries},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			origin, _, sink := openRecorded(t)
			c := origin.Collection("c")
			_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("u")}, Unique: true, Sparse: true})
			require.NoError(t, err)
			_, err = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(1)})
			require.NoError(t, err)
			_, err = c.InsertMany(context.Background(), []Document{{"_id": 1, "u": 1, "x": 1}, {"_id": 2, "x": 1}})
			require.NoError(t, err)
			ts, err := origin.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t"}})
			require.NoError(t, err)
			_, err = ts.InsertOne(context.Background(), Document{"_id": 1, "t": opEpoch})
			require.NoError(t, err)
			db := replay(t, sink.take())
			before := dumpDB(t, db)
			op := tc.op
			op.Seq = db.ops.lastSeq() + 1
			next := Op{Seq: op.Seq + 1, Kind: OpInsert, Collection: "c", Docs: []RawDocument{doc(Document{"_id": 100})}}
			err = db.Apply(context.Background(), op, next)
			require.ErrorIs(t, err, ErrInvalidOp)
			require.ErrorIs(t, err, tc.is)
			require.Contains(t, err.Error(), fmt.Sprintf("op %d ", op.Seq))
			require.Equal(t, before, dumpDB(t, db), "the failed op changed nothing, the next was not applied")
			require.Equal(t, op.Seq-1, db.ops.lastSeq())
		})
	}
}

// dumpDB describes a DB's whole state, for before/after comparisons.
func dumpDB(t testing.TB, db *DB) []string {
	t.Helper()
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		s, _ := db.state(n, false)
		out = append(out, "collection "+n)
		specs, err := db.Collection(n).Indexes(context.Background())
		require.NoError(t, err)
		for _, sp := range specs {
			out = append(out, "index "+sp.Name)
		}
		if s.ts != nil {
			s.ts.mu.RLock()
			s.ts.buckets.Ascend(func(b *bucket) bool {
				out = append(out, string(b.data))
				return true
			})
			s.ts.mu.RUnlock()
			continue
		}
		for _, d := range dumpDocs(s) {
			out = append(out, string(d))
		}
		out = append(out, dumpIndexes(s)...)
	}
	return out
}

// TestApplyExpire: an OpExpire deletes exactly its documents still expired
// at its Cutoff under its index; expire hooks do not run, the metrics and
// the DeleteObservers see the deletions.
func TestApplyExpire(t *testing.T) {
	ctx := context.Background()
	origin, _, sink := openRecorded(t)
	c := origin.Collection("s")
	_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{
		{"_id": 1, "at": opEpoch},
		{"_id": 2, "at": opEpoch.Add(30 * time.Second)},
		{"_id": 3, "at": opEpoch.Add(31 * time.Second)},
		{"_id": 4},
	})

	require.NoError(t, err)
	var events []DeleteEvent
	hooked := false
	db := replay(t, sink.take(),
		WithDeleteObserver(func(ev DeleteEvent) { events = append(events, ev) }),
		WithOnExpire(func(context.Context, ExpiredBatch) error { hooked = true; return nil }))
	cutoff := opEpoch.Add(90 * time.Second)
	keys := []RawDocument{encDoc(t, Document{"_id": 1}), encDoc(t, Document{"_id": 2}), encDoc(t, Document{"_id": 3}), encDoc(t, Document{"_id": 4}), encDoc(t, Document{"_id": 5})}
	require.NoError(t, db.Apply(context.Background(), Op{Seq: db.ops.lastSeq() + 1, Kind: OpExpire, Collection: "s", Index: "at_1", Cutoff: cutoff, Keys: keys}))
	require.Equal(t, []any{3, 4}, findIDs(t, db.Collection("s"), nil))
	require.False(t, hooked)
	require.Len(t, events, 1)
	require.Equal(t, DeleteEvent{Collection: "s", Index: "at_1", IDs: []any{1, 2}, PassNow: cutoff, BatchNow: cutoff}, events[0])
	require.Equal(t, int64(2), db.Metrics().TTL.DeletedDocuments)
}

// TestApplyTimeSeriesExpire: an OpExpire of a time-series collection
// removes only the measurements still expired at its Cutoff under its
// rule.
func TestApplyTimeSeriesExpire(t *testing.T) {
	origin, _, sink := openRecorded(t)
	c, err := origin.CreateCollection(context.Background(), "ts", CollectionOptions{
		TimeSeries:         &TimeSeriesOptions{TimeField: "t", BucketMaxSpanSeconds: 60, BucketRoundingSeconds: 60, PreciseExpiry: true},
		ExpireAfterSeconds: Seconds(10),
	})

	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"_id": 1, "t": opEpoch}, {"_id": 2, "t": opEpoch.Add(20 * time.Second)}})
	require.NoError(t, err)
	var events []DeleteEvent
	db := replay(t, sink.take(), WithDeleteObserver(func(ev DeleteEvent) { events = append(events, ev) }))
	key := func(id, pos int) RawDocument {
		return encDoc(t, Document{"_id": id, "bucket": int64(1), "pos": int32(pos)})
	}
	// Cutoff 15 s after the first: only it is expired (t + 10 s <= cutoff).
	cutoff := opEpoch.Add(15 * time.Second)
	require.NoError(t, db.Apply(context.Background(), Op{Seq: db.ops.lastSeq() + 1, Kind: OpExpire, Collection: "ts", Index: CollectionExpiryName, Cutoff: cutoff, Keys: []RawDocument{key(1, 0), key(2, 1)}}))
	require.Equal(t, []any{2}, findIDs(t, db.Collection("ts"), nil))
	require.Len(t, events, 1)
	require.Equal(t, []any{1}, events[0].IDs)
	require.Equal(t, int64(1), db.Metrics().TTL.DeletedMeasurements)
}

// TestApplyReachesWatchers: ops applied to a replica reach its sinks as
// they are, so the replica's own log or change streams see the primary's
// history with its numbers.
func TestApplyReachesWatchers(t *testing.T) {
	origin, _, sink := openRecorded(t)
	_, err := origin.Collection("c").InsertMany(context.Background(), []Document{{"_id": 1}, {"_id": 2}})
	require.NoError(t, err)
	_, err = origin.Collection("c").DeleteOne(context.Background(), Document{"_id": 1})
	require.NoError(t, err)
	ops := sink.take()
	replica, _, rsink := openRecorded(t)
	require.NoError(t, replica.Apply(context.Background(), ops...))
	got := rsink.take()
	require.Len(t, got, len(ops))
	for i := range ops {
		requireSameOp(t, ops[i], got[i])
	}
}

func TestOpKindString(t *testing.T) {
	require.Equal(t, "createCollection", OpCreateCollection.String())
	require.Equal(t, "expire", OpExpire.String())
	require.Equal(t, "OpKind(42)", OpKind(42).String())
}

// TestApplyClosed: a closed DB applies nothing.
func TestApplyClosed(t *testing.T) {
	db, _, _ := openRecorded(t)
	require.NoError(t, db.Close())
	err := db.Apply(context.Background(), Op{Seq: 1, Kind: OpCreateCollection, Collection: "c", Spec: collectionSpec(CollectionOptions{})})
	require.True(t, errors.Is(err, ErrClosed))
}
