package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/store"
)

// Rule: a write that would give a record version past the DB's bound
// (store.MaxSeq less versionSlack) is refused with ErrCounterLimit and
// changes nothing: an insert, an update, a transaction's commit; the
// last version below the bound is given.
func TestVersionLimitRefusesWrites(t *testing.T) {
	ctx := context.Background()
	db, _, sink := openRecorded(t)
	c := db.Collection("s")
	_, err := c.InsertOne(ctx, Document{"_id": "a", "n": 1})
	require.NoError(t, err)
	bound := uint64(store.MaxSeq - versionSlack)
	db.writes.Store(bound - 1)

	_, err = c.InsertOne(ctx, Document{"_id": "b"})
	require.NoError(t, err, "the last version below the bound")
	s := collStateOf(t, c)
	rec, ok := s.lookup(encKey(t, "b"))
	require.True(t, ok)
	require.Equal(t, bound, rec.ver)
	sink.take()

	before := dumpCollections(t, db)
	seq := db.LastSeq()
	_, err = c.InsertOne(ctx, Document{"_id": "c"})
	require.ErrorIs(t, err, ErrCounterLimit)
	_, err = c.InsertMany(ctx, []any{Document{"_id": "d"}, Document{"_id": "e"}})
	require.ErrorIs(t, err, ErrCounterLimit)
	_, err = c.UpdateOne(ctx, Document{"_id": "a"}, Document{"$inc": Document{"n": 1}})
	require.ErrorIs(t, err, ErrCounterLimit)
	sess, tctx := inTxn(t, db)
	_, err = c.InsertOne(tctx, Document{"_id": "t"})
	require.NoError(t, err, "staged, not yet committed")
	require.ErrorIs(t, sess.CommitTransaction(ctx), ErrCounterLimit)
	require.Equal(t, bound, db.writes.Load(), "no version given")
	require.Equal(t, seq, db.LastSeq(), "no op")
	require.Empty(t, sink.take())
	requireSameDB(t, before, dumpCollections(t, db), true)

	// Deleting gives no version: still allowed.
	_, err = c.DeleteOne(ctx, Document{"_id": "a"})
	require.NoError(t, err)
}

// Rule: a collection's insertion sequence stops at store.MaxSeq: the
// insert that takes it is stored with that sequence (last in natural
// order), the next is refused with ErrCounterLimit; updates go on.
func TestInsertionSequenceLimit(t *testing.T) {
	ctx := context.Background()
	db, _, _ := openRecorded(t)
	c := db.Collection("s")
	_, err := c.InsertOne(ctx, Document{"_id": "a"})
	require.NoError(t, err)
	s := collStateOf(t, c)
	s.writeMu.Lock()
	s.nextSeq = store.MaxSeq
	s.writeMu.Unlock()

	_, err = c.InsertOne(ctx, Document{"_id": "b"})
	require.NoError(t, err)
	rec, ok := s.lookup(encKey(t, "b"))
	require.True(t, ok)
	require.Equal(t, uint64(store.MaxSeq), rec.seq)
	require.Equal(t, []any{"a", "b"}, naturalIDs(t, c))

	_, err = c.InsertOne(ctx, Document{"_id": "c"})
	require.ErrorIs(t, err, ErrCounterLimit)
	_, err = c.UpdateOne(ctx, Document{"_id": "b"}, Document{"$set": Document{"n": 1}}, UpdateOptions{Upsert: true})
	require.NoError(t, err)
	_, err = c.UpdateOne(ctx, Document{"_id": "z"}, Document{"$set": Document{"n": 1}}, UpdateOptions{Upsert: true})
	require.ErrorIs(t, err, ErrCounterLimit, "an upsert that inserts")
	require.Equal(t, []any{"a", "b"}, naturalIDs(t, c))
}

// Rule: DB.Apply refuses an op whose record version is past store.MaxSeq
// (ErrInvalidOp and ErrCounterLimit), and keeps one at the bound exactly;
// recovery fails with ErrCorrupt (and ErrCounterLimit) on a logged
// version past it rather than wrap it.
func TestAppliedAndLoadedVersionLimit(t *testing.T) {
	ctx := context.Background()
	db, _, _ := openRecorded(t)
	_, err := db.Collection("s").InsertOne(ctx, Document{"_id": "a"})
	require.NoError(t, err)
	seq := db.LastSeq()
	doc := encDoc(t, Document{"_id": "b"})
	op := Op{Seq: seq + 1, Kind: OpInsert, Collection: "s", Docs: []RawDocument{doc}, Versions: []uint64{store.MaxSeq + 1}}
	err = db.Apply(ctx, op)
	require.ErrorIs(t, err, ErrInvalidOp)
	require.ErrorIs(t, err, ErrCounterLimit)
	require.Equal(t, seq, db.LastSeq())

	op.Versions = []uint64{store.MaxSeq}
	require.NoError(t, db.Apply(ctx, op))
	rec, ok := collStateOf(t, db.Collection("s")).lookup(encKey(t, "b"))
	require.True(t, ok)
	require.Equal(t, uint64(store.MaxSeq), rec.ver)
	// The DB's own versions are then exhausted.
	_, err = db.Collection("s").InsertOne(ctx, Document{"_id": "c"})
	require.ErrorIs(t, err, ErrCounterLimit)

	for _, v := range []uint64{store.MaxSeq, store.MaxSeq + 1} {
		fresh, err := Open(WithMonitor(MonitorOptions{Disabled: true}))
		require.NoError(t, err)
		l := newLoader(fresh)
		err = l.apply(Op{Seq: 1, Kind: OpInsert, Collection: "s", Docs: []RawDocument{doc}, Versions: []uint64{v}})
		if v == store.MaxSeq {
			require.NoError(t, err)
			require.NoError(t, l.finishLoad())
			rec, ok := collStateOf(t, fresh.Collection("s")).lookup(encKey(t, "b"))
			require.True(t, ok)
			require.Equal(t, v, rec.ver)
		} else {
			require.ErrorIs(t, err, errs.ErrCorrupt)
			require.ErrorIs(t, err, ErrCounterLimit)
		}
		require.NoError(t, fresh.Close())
	}
}

// encKey is the _id key of id.
func encKey(t testing.TB, id any) []byte {
	t.Helper()
	k, err := appendIDKey(nil, id)
	require.NoError(t, err)
	return k
}

// naturalIDs are the _id values of c's documents in natural order.
func naturalIDs(t testing.TB, c *Collection) []any {
	t.Helper()
	cur, err := c.Find(context.Background(), Document{})
	require.NoError(t, err)
	var docs []Document
	require.NoError(t, cur.All(context.Background(), &docs))
	ids := []any{}
	for _, d := range docs {
		ids = append(ids, d["_id"])
	}
	return ids
}

// Rule: DB.Apply of a transaction's ops refuses one carrying a record
// version past store.MaxSeq (ErrInvalidOp, ErrCounterLimit) and applies
// nothing of the transaction.
func TestAppliedTxnVersionLimit(t *testing.T) {
	ctx := context.Background()
	origin, _, sink := openRecorded(t)
	c := origin.Collection("s")
	_, err := c.InsertOne(ctx, Document{"_id": "a"})
	require.NoError(t, err)
	sess, tctx := inTxn(t, origin)
	_, err = c.InsertOne(tctx, Document{"_id": "b"})
	require.NoError(t, err)
	_, err = c.UpdateOne(tctx, Document{"_id": "a"}, Document{"$set": Document{"n": 1}})
	require.NoError(t, err)
	require.NoError(t, sess.CommitTransaction(ctx))
	ops := sink.take() // the creation, the insert, the transaction's two
	require.Len(t, ops, 4)
	require.NotZero(t, ops[3].Txn)

	replica, _, _ := openRecorded(t)
	require.NoError(t, replica.Apply(ctx, ops[:2]...))
	before := dumpCollections(t, replica)
	bad := ops[3]
	bad.Versions = []uint64{store.MaxSeq + 1}
	err = replica.Apply(ctx, ops[2], bad)
	require.ErrorIs(t, err, ErrInvalidOp)
	require.ErrorIs(t, err, ErrCounterLimit)
	require.Equal(t, ops[1].Seq, replica.LastSeq())
	requireSameDB(t, before, dumpCollections(t, replica), true)
	require.NoError(t, replica.Apply(ctx, ops[2:]...), "the ops as given apply")
}
