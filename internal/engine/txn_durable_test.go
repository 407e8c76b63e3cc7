package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// Transactions on a DB with a data directory: a commit's ops are one log
// record (the group the committer handed the sinks), a reopen loads the
// transaction whole, an abort leaves nothing in the log nor in the
// reopened DB, and a snapshot keeps what was committed before it.

// logRecordOps returns the ops of every record of the log of the data
// directory dir, a slice per record, in order, with each record's seq
// (the record header's, which is its last op's).
func logRecordOps(t testing.TB, dir string) (recs [][]Op, seqs []uint64) {
	t.Helper()
	files, offs := logRecords(t, dir)
	data := map[string][]byte{}
	for i, f := range files {
		b, ok := data[f]
		if !ok {
			var err error
			b, err = os.ReadFile(f)
			require.NoError(t, err)
			data[f] = b
		}
		off := offs[i]
		n := int64(binary.LittleEndian.Uint32(b[off:]))
		payload := b[off+20 : off+20+n]
		var ops []Op
		require.NoError(t, decodeRecord(payload, func(uint64) {}, func(op Op) error {
			ops = append(ops, op)
			return nil
		}))
		recs = append(recs, ops)
		seqs = append(seqs, binary.LittleEndian.Uint64(b[off+4:]))
	}
	return recs, seqs
}

// txnOpsInLog returns the log records of dir that hold an op of a
// transaction, and fails if one of them holds ops of two transactions or
// of a transaction and a write outside it.
func txnOpsInLog(t testing.TB, dir string) map[TxnID][][]Op {
	t.Helper()
	recs, _ := logRecordOps(t, dir)
	out := map[TxnID][][]Op{}
	for _, ops := range recs {
		if len(ops) == 0 || ops[0].Txn.IsZero() {
			for _, op := range ops {
				require.True(t, op.Txn.IsZero(), "a record holds op %d of transaction %v after a write outside it", op.Seq, op.Txn)
			}
			continue
		}
		for _, op := range ops {
			require.Equal(t, ops[0].Txn, op.Txn, "a record holds ops of two transactions")
		}
		out[ops[0].Txn] = append(out[ops[0].Txn], ops)
	}
	return out
}

// recordSizes returns the number of ops of each record.
func recordSizes(recs [][]Op) []int {
	out := []int{}
	for _, ops := range recs {
		out = append(out, len(ops))
	}
	return out
}

// findDoc returns the document of _id id in c, nil when there is none.
func findDoc(t testing.TB, c *Collection, id any) Document {
	t.Helper()
	var d Document
	err := c.FindOne(context.Background(), Document{"_id": id}).Decode(&d)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	require.NoError(t, err)
	return d
}

// setupAccounts makes the collections "accounts" (a: 100, b: 50; an
// index on bal) and "orders" (o0; an index on item, qty) with writes
// outside any transaction.
func setupAccounts(t testing.TB, db *DB) (accounts, orders *Collection) {
	t.Helper()
	bg := context.Background()
	accounts, orders = db.Collection("accounts"), db.Collection("orders")
	_, err := accounts.CreateIndex(bg, IndexModel{Keys: []IndexKey{Asc("bal")}})
	require.NoError(t, err)
	_, err = orders.CreateIndex(bg, IndexModel{Keys: []IndexKey{Asc("item"), Asc("qty")}})
	require.NoError(t, err)
	_, err = accounts.InsertMany(bg, []Document{{"_id": "a", "bal": int64(100)}, {"_id": "b", "bal": int64(50)}})
	require.NoError(t, err)
	_, err = orders.InsertOne(bg, Document{"_id": "o0", "item": "pear"})
	require.NoError(t, err)
	return accounts, orders
}

// runAccountsTxn stages, in a transaction of s: an insert of order o1, an
// update of account a (-30), the deletion of account b, the deletion of
// order o0, a replacement of o1. It returns the ctx that joins it.
func runAccountsTxn(t testing.TB, s *Session, accounts, orders *Collection) context.Context {
	t.Helper()
	require.NoError(t, s.StartTransaction())
	ctx := NewSessionContext(context.Background(), s)
	_, err := orders.InsertOne(ctx, Document{"_id": "o1", "item": "apple"})
	require.NoError(t, err)
	res, err := accounts.UpdateOne(ctx, Document{"_id": "a"}, Document{"$inc": Document{"bal": int64(-30)}})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.ModifiedCount)
	del, err := accounts.DeleteOne(ctx, Document{"_id": "b"})
	require.NoError(t, err)
	require.EqualValues(t, 1, del.DeletedCount)
	del, err = orders.DeleteOne(ctx, Document{"_id": "o0"})
	require.NoError(t, err)
	require.EqualValues(t, 1, del.DeletedCount)
	rep, err := orders.ReplaceOne(ctx, Document{"_id": "o1"}, Document{"item": "apple", "qty": int64(3)})
	require.NoError(t, err)
	require.EqualValues(t, 1, rep.ModifiedCount)
	return ctx
}

// requireAccountsCommitted: the state runAccountsTxn's commit leaves.
func requireAccountsCommitted(t testing.TB, db *DB, what string) {
	t.Helper()
	accounts, orders := db.Collection("accounts"), db.Collection("orders")
	a := findDoc(t, accounts, "a")
	require.NotNil(t, a, "%s: account a", what)
	require.EqualValues(t, 70, a["bal"], "%s: account a's balance", what)
	require.Nil(t, findDoc(t, accounts, "b"), "%s: account b was deleted", what)
	require.Nil(t, findDoc(t, orders, "o0"), "%s: order o0 was deleted", what)
	o1 := findDoc(t, orders, "o1")
	require.NotNil(t, o1, "%s: order o1 was inserted", what)
	require.EqualValues(t, 3, o1["qty"], "%s: order o1 was replaced", what)
	require.Equal(t, 1, count(t, accounts), "%s: accounts", what)
	require.Equal(t, 1, count(t, orders), "%s: orders", what)
}

// requireAccountsUntouched: the state setupAccounts leaves.
func requireAccountsUntouched(t testing.TB, db *DB, what string) {
	t.Helper()
	accounts, orders := db.Collection("accounts"), db.Collection("orders")
	require.EqualValues(t, 100, findDoc(t, accounts, "a")["bal"], "%s: account a", what)
	require.EqualValues(t, 50, findDoc(t, accounts, "b")["bal"], "%s: account b", what)
	require.NotNil(t, findDoc(t, orders, "o0"), "%s: order o0", what)
	require.Nil(t, findDoc(t, orders, "o1"), "%s: order o1", what)
	require.Equal(t, 2, count(t, accounts), "%s: accounts", what)
	require.Equal(t, 1, count(t, orders), "%s: orders", what)
}

// Rule: under SyncAlways a transaction's commit writes one log record
// holding its ops, all of them and nothing else, in its order, each
// carrying its identity; nothing reaches the log before the commit; the
// reopened directory holds the transaction's effects in both collections,
// and a stream reading the log after the reopen reports its identity.
func TestTxnDurableCommitIsOneRecordAndReopens(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	accounts, orders := setupAccounts(t, db)
	recs0 := db.Metrics().Durability.LogRecords
	seq0 := db.ops.lastSeq()

	s, err := db.StartSession()
	require.NoError(t, err)
	runAccountsTxn(t, s, accounts, orders)
	require.Equal(t, recs0, db.Metrics().Durability.LogRecords, "a staged write reached the log before the commit")
	require.Equal(t, seq0, db.ops.lastSeq(), "a staged write was committed before the commit")
	require.NoError(t, s.CommitTransaction(context.Background()))
	require.Equal(t, recs0+1, db.Metrics().Durability.LogRecords, "the commit is one log record")
	require.Equal(t, seq0+5, db.ops.lastSeq(), "five ops")
	requireAccountsCommitted(t, db, "before the reopen")
	require.NoError(t, db.Close())

	// The log: the last record is the transaction, whole.
	recs, seqs := logRecordOps(t, dir)
	require.NotEmpty(t, recs)
	last := recs[len(recs)-1]
	id := TxnID{LSID: s.ID(), Number: 1}
	type opSum struct {
		Kind OpKind
		Coll string
		Seq  uint64
		Txn  TxnID
	}
	var got []opSum
	for _, op := range last {
		got = append(got, opSum{op.Kind, op.Collection, op.Seq, op.Txn})
	}
	require.Equal(t, []opSum{
		{OpInsert, "orders", seq0 + 1, id},
		{OpUpdate, "accounts", seq0 + 2, id},
		{OpDelete, "accounts", seq0 + 3, id},
		{OpDelete, "orders", seq0 + 4, id},
		{OpReplace, "orders", seq0 + 5, id},
	}, got, "the commit's record")
	require.Equal(t, seq0+5, seqs[len(seqs)-1], "the record's seq is its last op's")
	for _, ops := range recs[:len(recs)-1] {
		for _, op := range ops {
			require.True(t, op.Txn.IsZero(), "op %d, before the transaction, carries a transaction", op.Seq)
		}
	}
	require.Equal(t, []int{5}, recordSizes(txnOpsInLog(t, dir)[id]), "the transaction's ops are in one record")

	// Reopened: its effects, whole.
	db = mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	requireAccountsCommitted(t, db, "after the reopen")
	require.Equal(t, seq0+5, db.Recovery().LastSeq)
	requireIndexesRebuilt(t, db)

	// A stream resuming before it, reading the log: its events carry its
	// identity.
	ctx := context.Background()
	cs, err := db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: &ResumeToken{Seq: seq0 + 1}})
	require.NoError(t, err)
	n := 0
	for cs.TryNext(ctx) {
		require.Equal(t, id, cs.Event().Txn, "event %d after the reopen", n)
		n++
	}
	require.NoError(t, cs.Err())
	require.Equal(t, 5, n)
	require.NoError(t, cs.Close(ctx))

	// A write after the reopen follows it, outside any transaction.
	_, err = db.Collection("orders").InsertOne(ctx, Document{"_id": "o2"})
	require.NoError(t, err)
	require.Equal(t, seq0+6, db.ops.lastSeq())
}

// Rule: an aborted transaction, and one still open when the DB closes,
// leave nothing: no op in the log, no record written by them, and the
// reopened directory holds the state from before them.
func TestTxnDurableAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	accounts, orders := setupAccounts(t, db)
	recs0 := db.Metrics().Durability.LogRecords
	seq0 := db.ops.lastSeq()

	aborted, err := db.StartSession()
	require.NoError(t, err)
	runAccountsTxn(t, aborted, accounts, orders)
	require.NoError(t, aborted.AbortTransaction(context.Background()))
	requireAccountsUntouched(t, db, "after the abort")

	open, err := db.StartSession()
	require.NoError(t, err)
	runAccountsTxn(t, open, accounts, orders)
	require.Equal(t, recs0, db.Metrics().Durability.LogRecords, "an aborted or open transaction wrote a log record")
	require.Equal(t, seq0, db.ops.lastSeq(), "an aborted or open transaction committed an op")
	require.NoError(t, db.Close())
	require.ErrorIs(t, open.CommitTransaction(context.Background()), ErrClosed, "Close ended the open transaction")

	require.Empty(t, txnOpsInLog(t, dir), "the log holds a transaction's op")
	db = mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	requireAccountsUntouched(t, db, "after the reopen")
	require.Equal(t, seq0, db.Recovery().LastSeq)
	require.Zero(t, db.Metrics().Transactions.Open)
}

// Rule: under SyncAlways a snapshot keeps a committed transaction: one
// committed before the snapshot is in it (the reopen loads it from the
// snapshot, none of its ops from the log), and one open across the
// snapshot and committed after it (its staged writes are not in the
// snapshot) is loaded from the log, whole.
func TestTxnDurableSnapshotKeepsCommit(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	bg := context.Background()
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	accounts, orders := setupAccounts(t, db)
	s, err := db.StartSession()
	require.NoError(t, err)
	runAccountsTxn(t, s, accounts, orders)
	require.NoError(t, s.CommitTransaction(bg))
	first := db.ops.lastSeq()

	// The second transaction stages its writes before the snapshot and
	// commits after it.
	s2, err := db.StartSession()
	require.NoError(t, err)
	require.NoError(t, s2.StartTransaction())
	ctx2 := NewSessionContext(bg, s2)
	_, err = accounts.UpdateOne(ctx2, Document{"_id": "a"}, Document{"$inc": Document{"bal": int64(-20)}})
	require.NoError(t, err)
	_, err = accounts.InsertOne(ctx2, Document{"_id": "c", "bal": int64(20)})
	require.NoError(t, err)
	_, err = orders.InsertOne(ctx2, Document{"_id": "o2", "item": "plum"})
	require.NoError(t, err)
	require.NoError(t, db.Snapshot(bg))
	require.Equal(t, first, db.persist.snapSeq.Load(), "the snapshot is as of the first transaction")
	require.NoError(t, s2.CommitTransaction(bg))
	require.Equal(t, first+3, db.ops.lastSeq())
	require.NoError(t, db.Close())

	db = mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	rec := db.Recovery()
	require.NotEmpty(t, rec.Snapshot)
	require.Equal(t, first, rec.SnapshotSeq)
	require.Equal(t, 3, rec.LogOps, "the second transaction, from the log")
	require.Equal(t, first+3, rec.LastSeq)
	require.EqualValues(t, 50, findDoc(t, db.Collection("accounts"), "a")["bal"])
	require.EqualValues(t, 20, findDoc(t, db.Collection("accounts"), "c")["bal"])
	require.Nil(t, findDoc(t, db.Collection("accounts"), "b"))
	require.Nil(t, findDoc(t, db.Collection("orders"), "o0"))
	require.EqualValues(t, 3, findDoc(t, db.Collection("orders"), "o1")["qty"])
	require.NotNil(t, findDoc(t, db.Collection("orders"), "o2"))
	requireIndexesRebuilt(t, db)

	// A second snapshot, after both, then a reopen: the snapshot alone.
	require.NoError(t, db.Snapshot(bg))
	require.NoError(t, db.Close())
	db = mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	rec = db.Recovery()
	require.Equal(t, first+3, rec.SnapshotSeq)
	require.Zero(t, rec.LogOps)
	require.EqualValues(t, 50, findDoc(t, db.Collection("accounts"), "a")["bal"])
	require.Equal(t, 2, count(t, db.Collection("accounts")))
	require.Equal(t, 2, count(t, db.Collection("orders")))
}

// Rule: under SyncEverySecond, where the sink's writer writes what is
// pending in one record once it passes flushBytes, a transaction larger
// than flushBytes is still one record: the committer hands its ops to the
// sink at once, so the writer never finds part of them.
func TestTxnDurableLargeCommitIsOneRecord(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	bg := context.Background()
	db := mustOpenDurable(t, clk, dir, WithSync(SyncEverySecond))
	a, b := db.Collection("a"), db.Collection("b")
	_, err := a.InsertOne(bg, Document{"_id": -1})
	require.NoError(t, err)
	_, err = b.InsertOne(bg, Document{"_id": -1})
	require.NoError(t, err)
	flushLog(t, db)

	s, ctx := inTxn(t, db)
	pad := strings.Repeat("p", 2000)
	const n = 300 // 300 documents of 2 KB: above flushBytes
	for i := range n {
		c := a
		if i%2 == 1 {
			c = b
		}
		_, err := c.InsertOne(ctx, Document{"_id": i, "pad": pad})
		require.NoError(t, err)
	}
	require.NoError(t, s.CommitTransaction(bg))
	flushLog(t, db)
	require.NoError(t, db.Close())

	id := TxnID{LSID: s.ID(), Number: 1}
	groups := txnOpsInLog(t, dir)[id]
	require.Equal(t, []int{n}, recordSizes(groups), "the transaction's ops are in one record")
	for i, op := range groups[0] {
		require.Equal(t, OpInsert, op.Kind)
		require.Equal(t, map[bool]string{false: "a", true: "b"}[i%2 == 1], op.Collection)
	}

	db = mustOpenDurable(t, clk, dir)
	require.Equal(t, n/2+1, count(t, db.Collection("a")))
	require.Equal(t, n/2+1, count(t, db.Collection("b")))
}
