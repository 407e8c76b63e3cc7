package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/ttltest"
)

// recordingSink keeps copies of every op it receives, in order.
type recordingSink struct {
	mu  sync.Mutex
	ops []Op
	pre bool
}

func (r *recordingSink) appendOps(ops []Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, op := range ops {
		r.ops = append(r.ops, cloneOp(op))
	}
}

func (r *recordingSink) wantsPreImages() bool { return r.pre }

func (r *recordingSink) take() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.ops
	r.ops = nil
	return out
}

// cloneOp deep-copies an op, as a sink that keeps it must.
func cloneOp(op Op) Op {
	cp := func(in []RawDocument) []RawDocument {
		if in == nil {
			return nil
		}
		out := make([]RawDocument, len(in))
		for i, d := range in {
			if d != nil {
				out[i] = append(RawDocument(nil), d...)
			}
		}
		return out
	}
	op.Docs, op.Updates, op.Keys, op.Before = cp(op.Docs), cp(op.Updates), cp(op.Keys), cp(op.Before)
	if op.Spec != nil {
		op.Spec = append(RawDocument(nil), op.Spec...)
	}
	return op
}

var opEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// openRecorded opens a DB on a fake clock, monitor disabled, with a
// recording sink attached.
func openRecorded(t testing.TB, opts ...Option) (*DB, *ttltest.Clock, *recordingSink) {
	t.Helper()
	clk := ttltest.NewClock(opEpoch)
	opts = append([]Option{WithClock(clk), WithMonitor(MonitorOptions{Disabled: true})}, opts...)
	db, err := Open(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	sink := &recordingSink{}
	db.ops.attach(sink)
	return db, clk, sink
}

func keyIDs(keys []RawDocument) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k.ID()
	}
	return out
}

func TestOpsOfBasicWrites(t *testing.T) {
	db, clk, sink := openRecorded(t)
	c := db.Collection("c")
	_, err := c.InsertOne(context.Background(), Document{"_id": 1, "a": 1})
	require.NoError(t, err)
	ops := sink.take()
	require.Len(t, ops, 2)
	require.Equal(t, OpCreateCollection, ops[0].Kind)
	require.Equal(t, OpInsert, ops[1].Kind)
	require.Equal(t, uint64(1), ops[0].Seq)
	require.Equal(t, uint64(2), ops[1].Seq)
	require.Equal(t, Document{"_id": 1, "a": 1}, ops[1].Docs[0].Document())

	clk.Advance(time.Second)
	_, err = c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$inc": Document{"a": 1}, "$currentDate": Document{"d": true}})
	require.NoError(t, err)
	ops = sink.take()
	require.Len(t, ops, 1)
	require.Equal(t, OpUpdate, ops[0].Kind)
	require.Equal(t, Document{"_id": 1, "a": 2, "d": opEpoch.Add(time.Second)}, ops[0].Docs[0].Document())
	require.Equal(t, Document{"$inc": Document{"a": 1}, "$set": Document{"d": opEpoch.Add(time.Second)}}, codec.Decode(ops[0].Updates[0]))
	require.Equal(t, opEpoch.Add(time.Second), ops[0].Time)

	n, err := c.DeleteMany(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, n.DeletedCount)
	ops = sink.take()
	require.Len(t, ops, 1)
	require.Equal(t, OpDelete, ops[0].Kind)
	require.Equal(t, []any{1}, keyIDs(ops[0].Keys))
	require.Equal(t, Document{"_id": 1}, ops[0].Keys[0].Document())
}

func TestOpsOfTTLBatchAndCapped(t *testing.T) {
	ctx := context.Background()
	db, clk, sink := openRecorded(t)
	c := db.Collection("s")
	_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"_id": 1, "at": opEpoch}, {"_id": 2, "at": opEpoch.Add(time.Hour)}})
	require.NoError(t, err)
	sink.take()
	sink.pre = true
	db.ops.requestPreImages(true)
	clk.Advance(2 * time.Minute)
	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Deleted)
	ops := sink.take()
	require.Len(t, ops, 1)
	require.Equal(t, OpExpire, ops[0].Kind)
	require.Equal(t, "at_1", ops[0].Index)
	require.Equal(t, opEpoch.Add(2*time.Minute), ops[0].Cutoff)
	require.Equal(t, []any{1}, keyIDs(ops[0].Keys))
	require.Equal(t, Document{"_id": 1, "at": opEpoch}, ops[0].Before[0].Document())

	capped, err := db.CreateCollection(context.Background(), "capped", CollectionOptions{Capped: true, MaxDocuments: 2})
	require.NoError(t, err)
	_, err = capped.InsertMany(context.Background(), []Document{{"_id": 1}, {"_id": 2}, {"_id": 3}})
	require.NoError(t, err)
	ops = sink.take()
	require.Len(t, ops, 3)
	require.Equal(t, OpCreateCollection, ops[0].Kind)
	require.Equal(t, Document{"capped": true, "max": int64(2)}, codec.Decode(ops[0].Spec))
	require.Equal(t, OpInsert, ops[1].Kind)
	require.Len(t, ops[1].Docs, 3)
	require.Equal(t, OpDelete, ops[2].Kind)
	require.Equal(t, []any{1}, keyIDs(ops[2].Keys))
	require.Equal(t, ops[1].Seq+1, ops[2].Seq)
}

// replay applies ops to a fresh DB (monitor disabled, clock far in the
// future) and returns it.
func replay(t testing.TB, ops []Op, opts ...Option) *DB {
	t.Helper()
	clk := ttltest.NewClock(opEpoch.AddDate(100, 0, 0))
	opts = append([]Option{WithClock(clk), WithMonitor(MonitorOptions{Disabled: true})}, opts...)
	db, err := Open(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, db.Apply(context.Background(), ops...))
	return db
}

func TestApplySmoke(t *testing.T) {
	ctx := context.Background()
	db, clk, sink := openRecorded(t)
	c := db.Collection("c")
	_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"a": 1, "at": opEpoch}, {"_id": 2, "at": opEpoch.Add(time.Hour)}})
	require.NoError(t, err)
	_, err = c.UpdateMany(ctx, nil, Document{"$inc": Document{"n": 1}})
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	_, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	ops := sink.take()
	var bin []Op
	for _, op := range ops {
		b, err := op.MarshalBinary()
		require.NoError(t, err)
		var back Op
		require.NoError(t, back.UnmarshalBinary(b))
		bin = append(bin, back)
	}
	r := replay(t, bin)
	got, err := r.Collection("c").Find(ctx, nil)
	require.NoError(t, err)
	var docs []Document
	require.NoError(t, got.All(ctx, &docs))
	require.Equal(t, []Document{{"_id": 2, "at": opEpoch.Add(time.Hour), "n": 1}}, docs)
}
