package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
)

// sampleOps returns one op of every kind, with every field used somewhere.
func sampleOps(t testing.TB) []Op {
	d := func(doc Document) RawDocument {
		enc, err := codec.Encode(doc, nil)
		require.NoError(t, err)
		return enc
	}
	upd, err := codec.EncodeExpr(Document{"$set": Document{"a.b": 1}})
	require.NoError(t, err)
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	return []Op{
		{Seq: 1, Kind: OpCreateCollection, Collection: "c", Time: at, Spec: collectionSpec(CollectionOptions{Capped: true, MaxDocuments: 3})},
		{Seq: 2, Kind: OpInsert, Collection: "c", Time: at, Docs: []RawDocument{d(Document{"_id": 1, "a": Document{"b": 0}}), d(Document{"_id": 2})}},
		{Seq: 3, Kind: OpUpdate, Collection: "c", Time: at, Docs: []RawDocument{d(Document{"_id": 1, "a": Document{"b": 1}})}, Updates: []RawDocument{upd}, Before: []RawDocument{d(Document{"_id": 1, "a": Document{"b": 0}})}},
		{Seq: 4, Kind: OpReplace, Collection: "c", Time: at, Docs: []RawDocument{d(Document{"_id": 2, "r": true})}, Before: []RawDocument{nil}},
		{Seq: 5, Kind: OpCreateIndex, Collection: "c", Time: at, Index: "at_1", Spec: indexSpecDoc(IndexModel{Name: "at_1", Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(5)})},
		{Seq: 6, Kind: OpCollMod, Collection: "c", Time: at, Index: "at_1", Spec: collModSpec(Seconds(9))},
		{Seq: 7, Kind: OpDelete, Collection: "c", Time: at, Keys: []RawDocument{d(Document{"_id": 2})}, Index: "at_1", Cutoff: at, Expired: true},
		{Seq: 8, Kind: OpExpire, Collection: "c", Time: at, Keys: []RawDocument{d(Document{"_id": 1})}, Index: "at_1", Cutoff: at.Add(-time.Hour)},
		{Seq: 9, Kind: OpDropIndex, Collection: "c", Time: at, Index: "at_1"},
		{Seq: 10, Kind: OpDropCollection, Collection: "c"},
	}
}

func TestOpBinaryRoundTrip(t *testing.T) {
	for _, op := range sampleOps(t) {
		b, err := op.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, byte(OpVersion), b[0])
		var back Op
		require.NoError(t, back.UnmarshalBinary(b))
		requireSameOp(t, op, back)
		pre := []byte("prefix")
		b2, err := op.AppendBinary(pre)
		require.NoError(t, err)
		require.Equal(t, append([]byte("prefix"), b...), b2)
		// The op's documents share one copy of data, not data itself.
		for i := range b {
			b[i] = 0
		}
		requireSameOp(t, op, back)
	}
	_, err := Op{Kind: 0}.MarshalBinary()
	require.ErrorIs(t, err, ErrInvalidOp)
}

func TestOpBinaryErrors(t *testing.T) {
	ops := sampleOps(t)
	b, err := ops[2].MarshalBinary()
	require.NoError(t, err)

	other := append([]byte(nil), b...)
	other[0] = OpVersion + 1
	var op Op
	err = op.UnmarshalBinary(other)
	require.ErrorIs(t, err, ErrOpVersion)
	require.Contains(t, err.Error(), fmt.Sprintf("of version %d", OpVersion+1))
	require.Contains(t, err.Error(), fmt.Sprintf("reads versions 1 to %d", OpVersion))
	other[0] = 0
	require.ErrorIs(t, op.UnmarshalBinary(other), ErrOpVersion)

	// Version 1 (before the driver's types) has version 2's layout: a log
	// or a replica of an earlier ttldb reads the same.
	v1 := append([]byte(nil), b...)
	v1[0] = 1
	var fromV1, fromV2 Op
	require.NoError(t, fromV1.UnmarshalBinary(v1))
	require.NoError(t, fromV2.UnmarshalBinary(b))
	require.Equal(t, fromV2, fromV1)

	for i := range len(b) {
		err := op.UnmarshalBinary(b[:i])
		require.ErrorIs(t, err, ErrInvalidOp, "a prefix of %d bytes", i)
	}
	require.ErrorIs(t, op.UnmarshalBinary(append(append([]byte(nil), b...), 0)), ErrInvalidOp, "trailing byte")
	require.Equal(t, Op{}, op, "a failed UnmarshalBinary leaves the op unchanged")

	// A document inside that is malformed.
	bad := ops[1]
	bad.Docs = []RawDocument{{1, 1, 'a', 200}}
	b, err = bad.MarshalBinary()
	require.NoError(t, err)
	err = op.UnmarshalBinary(b)
	require.ErrorIs(t, err, ErrInvalidOp)
	require.ErrorIs(t, err, ErrInvalidDocument)

	// An empty entry where a document must be.
	bad.Docs = []RawDocument{nil}
	b, err = bad.MarshalBinary()
	require.NoError(t, err)
	require.ErrorIs(t, op.UnmarshalBinary(b), ErrInvalidOp)

	// A count larger than the bytes left allocates nothing.
	huge := []byte{OpVersion, 1, byte(OpInsert), 1, 'c', 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	require.ErrorIs(t, op.UnmarshalBinary(huge), ErrInvalidOp)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		_ = op.UnmarshalBinary(huge)
	}
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated by 20 refusals of a count of 2^32")
}

// TestOpBinarySize: the form is compact: an insert of one small document
// takes its document and about a dozen bytes.
func TestOpBinarySize(t *testing.T) {
	doc, err := codec.Encode(Document{"_id": 1, "a": "xyz"}, nil)
	require.NoError(t, err)
	op := Op{Seq: 1000, Kind: OpInsert, Collection: "sessions", Time: time.Unix(1700000000, 0), Docs: []RawDocument{doc}}
	b, err := op.MarshalBinary()
	require.NoError(t, err)
	t.Logf("%d bytes, %d of them the document", len(b), len(doc))
	require.LessOrEqual(t, len(b), len(doc)+len(op.Collection)+21)
}

// FuzzOpUnmarshal feeds arbitrary bytes to UnmarshalBinary: it never
// panics; an op it accepts marshals back to a form that decodes to the
// same op, its documents decode, and applying it to a DB holding a
// collection never panics (it applies or fails with an error).
func FuzzOpUnmarshal(f *testing.F) {
	for _, op := range sampleOps(f) {
		b, err := op.MarshalBinary()
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{OpVersion})
	f.Add([]byte{OpVersion + 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var op Op
		if op.UnmarshalBinary(b) != nil {
			return
		}
		again, err := op.MarshalBinary()
		require.NoError(t, err)
		var back Op
		require.NoError(t, back.UnmarshalBinary(again))
		requireSameOp(t, op, back)
		for _, l := range [][]RawDocument{op.Docs, op.Keys, op.Before} {
			for _, d := range l {
				if d != nil {
					_ = d.Document()
					_ = d.ID()
				}
			}
		}
		if op.Spec != nil {
			_ = codec.Decode(op.Spec)
		}
		db, err := Open(WithMonitor(MonitorOptions{Disabled: true}))
		require.NoError(t, err)
		defer db.Close()
		c := db.Collection("c")
		_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(1)})
		require.NoError(t, err)
		_, err = c.InsertOne(context.Background(), Document{"_id": 1, "at": time.Unix(0, 0)})
		require.NoError(t, err)
		_, err = db.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "at"}})
		require.NoError(t, err)
		op.Seq = db.ops.lastSeq() + 1
		_ = db.Apply(context.Background(), op)
	})
}
