package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// inTxn starts a transaction on a new session of db and returns the ctx
// that joins it.
func inTxn(t testing.TB, db *DB) (*Session, context.Context) {
	t.Helper()
	s, err := db.StartSession()
	require.NoError(t, err)
	require.NoError(t, s.StartTransaction())
	return s, NewSessionContext(context.Background(), s)
}

func idsOf(t testing.TB, c *Collection, ctx context.Context, filter any) []any {
	t.Helper()
	cur, err := c.Find(ctx, filter, FindOptions{Sort: []IndexKey{Asc("_id")}})
	require.NoError(t, err)
	var docs []Document
	require.NoError(t, cur.All(ctx, &docs))
	ids := []any{}
	for _, d := range docs {
		ids = append(ids, d["_id"])
	}
	return ids
}

// Rule: a transaction's writes across collections are invisible outside
// it until the commit, then all visible; it reads its own writes.
func TestTxnCommitIsAtomicAcrossCollections(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	orders, stock := db.Collection("orders"), db.Collection("stock")
	_, err := stock.InsertOne(bg, Document{"_id": "apple", "n": int64(10)})
	require.NoError(t, err)

	s, ctx := inTxn(t, db)
	_, err = orders.InsertOne(ctx, Document{"_id": "o1", "item": "apple"})
	require.NoError(t, err)
	res, err := stock.UpdateOne(ctx, Document{"_id": "apple"}, Document{"$inc": Document{"n": int64(-1)}})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.ModifiedCount)

	// Inside: its own writes.
	require.Equal(t, []any{"o1"}, idsOf(t, orders, ctx, Document{}))
	var got Document
	require.NoError(t, stock.FindOne(ctx, Document{"_id": "apple"}).Decode(&got))
	require.EqualValues(t, 9, got["n"])
	n, err := orders.CountDocuments(ctx, Document{"item": "apple"})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	// Outside: nothing of it.
	require.Equal(t, []any{}, idsOf(t, orders, bg, Document{}))
	require.NoError(t, stock.FindOne(bg, Document{"_id": "apple"}).Decode(&got))
	require.EqualValues(t, 10, got["n"])

	require.NoError(t, s.CommitTransaction(bg))
	require.Equal(t, []any{"o1"}, idsOf(t, orders, bg, Document{}))
	require.NoError(t, stock.FindOne(bg, Document{"_id": "apple"}).Decode(&got))
	require.EqualValues(t, 9, got["n"])
	m := db.Metrics().Transactions
	require.EqualValues(t, 1, m.Started)
	require.EqualValues(t, 1, m.Committed)
	require.EqualValues(t, 0, m.Open)
	require.EqualValues(t, 1, m.CommitLatency.Count)
}

// Rule: AbortTransaction drops every staged write.
func TestTxnAbortChangesNothing(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	c := db.Collection("c")
	_, err := c.InsertOne(bg, Document{"_id": 1, "v": "a"})
	require.NoError(t, err)
	s, ctx := inTxn(t, db)
	_, err = c.InsertOne(ctx, Document{"_id": 2})
	require.NoError(t, err)
	_, err = c.DeleteOne(ctx, Document{"_id": 1})
	require.NoError(t, err)
	require.Equal(t, []any{2}, idsOf(t, c, ctx, Document{}))
	require.NoError(t, s.AbortTransaction(bg))
	require.Equal(t, []any{1}, idsOf(t, c, bg, Document{}))
	require.ErrorIs(t, s.CommitTransaction(bg), ErrNoTransaction)
	require.EqualValues(t, 1, db.Metrics().Transactions.Aborted["caller"])
}

// Rule: a transaction reads the state as of its first operation: a
// change committed later (by a write, or by the TTL monitor) is not seen,
// whatever query reaches the document.
func TestTxnReadsItsSnapshot(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}), WithTransactionLimits(TransactionLimits{Lifetime: time.Hour}))
	bg := context.Background()
	c := ttlColl(t, db, "c", 60)
	_, err := c.CreateIndex(bg, IndexModel{Keys: []IndexKey{Asc("v")}})
	require.NoError(t, err)
	for i := range 5 {
		_, err := c.InsertOne(bg, Document{"_id": i, "v": i, "lastModifiedDate": t0})
		require.NoError(t, err)
	}
	_, ctx := inTxn(t, db)
	require.Len(t, idsOf(t, c, ctx, Document{}), 5) // the snapshot

	_, err = c.UpdateOne(bg, Document{"_id": 0}, Document{"$set": Document{"v": 100}})
	require.NoError(t, err)
	_, err = c.DeleteOne(bg, Document{"_id": 1})
	require.NoError(t, err)
	_, err = c.InsertOne(bg, Document{"_id": 9, "v": 9, "lastModifiedDate": t0.Add(time.Hour)})
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	_, err = db.RunTTLPass(bg) // deletes 0, 2, 3, 4
	require.NoError(t, err)
	require.Equal(t, []any{9}, idsOf(t, c, bg, Document{}))

	// Through the natural order, an index on v, an index range, _id.
	require.Equal(t, []any{0, 1, 2, 3, 4}, idsOf(t, c, ctx, Document{}))
	require.Equal(t, []any{0}, idsOf(t, c, ctx, Document{"v": 0}))
	require.Equal(t, []any{}, idsOf(t, c, ctx, Document{"v": 100}))
	require.Equal(t, []any{1, 2}, idsOf(t, c, ctx, Document{"v": Document{"$gte": 1, "$lte": 2}}))
	var d Document
	require.NoError(t, c.FindOne(ctx, Document{"_id": 1}).Decode(&d))
	require.ErrorIs(t, c.FindOne(ctx, Document{"_id": 9}).Err(), ErrNotFound)
	n, err := c.CountDocuments(ctx, nil)
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	vals, err := c.Distinct(ctx, "v", nil)
	require.NoError(t, err)
	require.Equal(t, []any{0, 1, 2, 3, 4}, vals)
}

// Rule: the first writer of a document wins; the second transaction fails
// at its write with ErrWriteConflict, labeled transient, and is aborted.
// Writing a document committed after the snapshot conflicts too.
func TestTxnWriteConflict(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	c := db.Collection("c")
	_, err := c.InsertMany(bg, []Document{{"_id": 1, "n": 0}, {"_id": 2, "n": 0}})
	require.NoError(t, err)

	s1, ctx1 := inTxn(t, db)
	s2, ctx2 := inTxn(t, db)
	_, err = c.UpdateOne(ctx1, Document{"_id": 1}, Document{"$inc": Document{"n": 1}})
	require.NoError(t, err)
	_, err = c.UpdateOne(ctx2, Document{"_id": 1}, Document{"$inc": Document{"n": 1}})
	require.ErrorIs(t, err, ErrWriteConflict)
	require.True(t, HasErrorLabel(err, TransientTransactionErrorLabel))
	_, err = c.InsertOne(ctx2, Document{"_id": 3})
	require.ErrorIs(t, err, ErrNoTransaction, "the conflict aborted it")
	require.True(t, HasErrorLabel(err, TransientTransactionErrorLabel))
	require.NoError(t, s1.CommitTransaction(bg))
	require.NoError(t, s2.AbortTransaction(bg))

	// A document changed after the snapshot.
	s3, ctx3 := inTxn(t, db)
	require.Len(t, idsOf(t, c, ctx3, Document{}), 2)
	_, err = c.UpdateOne(bg, Document{"_id": 2}, Document{"$set": Document{"n": 5}})
	require.NoError(t, err)
	_, err = c.UpdateOne(ctx3, Document{"_id": 2}, Document{"$inc": Document{"n": 1}})
	require.ErrorIs(t, err, ErrWriteConflict)
	require.NoError(t, s3.AbortTransaction(bg))
	var d Document
	require.NoError(t, c.FindOne(bg, Document{"_id": 1}).Decode(&d))
	require.EqualValues(t, 1, d["n"])
	require.NoError(t, c.FindOne(bg, Document{"_id": 2}).Decode(&d))
	require.EqualValues(t, 5, d["n"])
	m := db.Metrics().Transactions
	require.EqualValues(t, 2, m.Conflicts)
	require.EqualValues(t, 2, m.Aborted["conflict"])
}

// Rule: a write outside any transaction to a document an open
// transaction wrote waits for its end, then applies on top of it; its
// ctx bounds the wait.
func TestTxnPlainWriteWaitsForTheTransaction(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	c := db.Collection("c")
	_, err := c.InsertOne(bg, Document{"_id": 1, "n": int64(0)})
	require.NoError(t, err)
	s, ctx := inTxn(t, db)
	_, err = c.UpdateOne(ctx, Document{"_id": 1}, Document{"$inc": Document{"n": int64(10)}})
	require.NoError(t, err)

	short, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	_, err = c.UpdateOne(short, Document{"_id": 1}, Document{"$inc": Document{"n": int64(1)}})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	done := make(chan error, 1)
	go func() {
		_, err := c.UpdateOne(bg, Document{"_id": 1}, Document{"$inc": Document{"n": int64(1)}})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the write did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	require.NoError(t, s.CommitTransaction(bg))
	require.NoError(t, <-done)
	var d Document
	require.NoError(t, c.FindOne(bg, Document{"_id": 1}).Decode(&d))
	require.EqualValues(t, 11, d["n"])
}

// Rule: the monitor never deletes a document an open transaction wrote;
// it deletes it in a later pass once the transaction ended, if it is
// still expired.
func TestTxnMonitorSkipsHeldDocuments(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}), WithTransactionLimits(TransactionLimits{Lifetime: time.Hour}))
	bg := context.Background()
	c := ttlColl(t, db, "c", 60)
	insertDated(t, c, "d", 3, t0)
	s, ctx := inTxn(t, db)
	_, err := c.UpdateOne(ctx, Document{"_id": "d-00000"}, Document{"$set": Document{"x": 1}})
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	res, err := db.RunTTLPass(bg)
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Deleted)
	require.Equal(t, []any{"d-00000"}, idsOf(t, c, bg, Document{}))
	require.NoError(t, s.AbortTransaction(bg))
	res, err = db.RunTTLPass(bg)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Deleted)
	require.Equal(t, []any{}, idsOf(t, c, bg, Document{}))
}

// Rule: HideExpired applies inside a transaction at its snapshot's
// instant.
func TestTxnHideExpiredAtReadTime(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}), WithHideExpired(), WithTransactionLimits(TransactionLimits{Lifetime: time.Hour}))
	bg := context.Background()
	c := ttlColl(t, db, "c", 60)
	insertDated(t, c, "a", 1, t0)
	insertDated(t, c, "b", 1, t0.Add(time.Minute))
	clk.Advance(90 * time.Second) // a expired
	_, ctx := inTxn(t, db)
	require.Equal(t, []any{"b-00000"}, idsOf(t, c, ctx, Document{}))
	clk.Advance(time.Minute) // b expired too, after the snapshot
	require.Equal(t, []any{"b-00000"}, idsOf(t, c, ctx, Document{}))
	require.Equal(t, []any{}, idsOf(t, c, bg, Document{}))
}

// Rule: time-series and capped collections, index changes, Watch and
// EstimatedDocumentCount are refused inside a transaction.
func TestTxnRefusals(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	_, err := db.CreateCollection(bg, "w", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t"}})
	require.NoError(t, err)
	_, err = db.CreateCollection(bg, "capped", CollectionOptions{Capped: true, MaxDocuments: 5})
	require.NoError(t, err)
	_, ctx := inTxn(t, db)
	_, err = db.Collection("w").InsertOne(ctx, Document{"t": t0})
	require.ErrorIs(t, err, ErrNotInTransaction)
	_, err = db.Collection("w").Find(ctx, nil)
	require.ErrorIs(t, err, ErrNotInTransaction)
	_, err = db.Collection("capped").InsertOne(ctx, Document{"x": 1})
	require.ErrorIs(t, err, ErrNotInTransaction)
	_, err = db.Collection("c").EstimatedDocumentCount(ctx)
	require.ErrorIs(t, err, ErrNotInTransaction)
	n, err := db.Collection("w").CountDocuments(bg, nil)
	require.NoError(t, err)
	require.Zero(t, n)
	c := db.Collection("c")
	_, err = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("x")}})
	require.ErrorIs(t, err, ErrNotInTransaction)
	require.ErrorIs(t, c.DropIndex(ctx, "x_1"), ErrNotInTransaction)
	_, err = c.CollMod(ctx, CollModIndex{Name: "x_1"})
	require.ErrorIs(t, err, ErrNotInTransaction)
	_, err = db.CreateCollection(ctx, "d", CollectionOptions{})
	require.ErrorIs(t, err, ErrNotInTransaction)
	require.ErrorIs(t, db.DropCollection(ctx, "capped"), ErrNotInTransaction)
	_, err = db.Watch(ctx, nil)
	require.ErrorIs(t, err, ErrNotInTransaction)
	_, err = c.Watch(ctx, nil)
	require.ErrorIs(t, err, ErrNotInTransaction)
	require.ErrorIs(t, db.SetTTLPaused(ctx, true), ErrNotInTransaction)
	require.ErrorIs(t, c.Compact(ctx), ErrNotInTransaction)
	names, err := db.ListCollectionNames(bg)
	require.NoError(t, err)
	require.NotContains(t, names, "d", "refused: nothing created")
}

// Rule: a session of another DB, or an ended one, is refused rather than
// ignored; after AbortTransaction the session's operations run outside
// any transaction (as the driver's), after a conflict they fail.
func TestTxnSessionMisuse(t *testing.T) {
	bg := context.Background()
	db, _ := openMon(t, quiet(MonitorOptions{}))
	other, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("c")
	s, ctx := inTxn(t, other)
	_, err := c.InsertOne(ctx, Document{"_id": 1})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = c.Find(ctx, nil)
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.NoError(t, s.AbortTransaction(bg))
	_, err = c.InsertOne(ctx, Document{"_id": 1})
	require.NoError(t, err, "no transaction running: the session is not used")

	s2, ctx2 := inTxn(t, db)
	require.NoError(t, s2.AbortTransaction(bg))
	_, err = c.InsertOne(ctx2, Document{"_id": 2})
	require.NoError(t, err, "after AbortTransaction, outside any transaction")
	require.NoError(t, c.FindOne(bg, Document{"_id": 2}).Err())
	require.ErrorIs(t, s2.StartTransaction(), nil)
	require.ErrorIs(t, s2.StartTransaction(), ErrTransactionInProgress)
	s2.EndSession(bg)
	_, err = c.InsertOne(ctx2, Document{"_id": 3})
	require.ErrorIs(t, err, ErrSessionEnded)
	require.ErrorIs(t, s2.StartTransaction(), ErrSessionEnded)
	require.EqualValues(t, 1, db.Metrics().Transactions.Aborted["session"])
}

// Rule: within a transaction, upserts, FindOneAnd*, a delete then an
// insert of the same _id, and ReplaceOne behave as outside one; a unique
// index is checked at the commit, which then changes nothing.
func TestTxnWriteMethods(t *testing.T) {
	bg := context.Background()
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("c")
	_, err := c.CreateIndex(bg, IndexModel{Keys: []IndexKey{Asc("email")}, Unique: true})
	require.NoError(t, err)
	_, err = c.InsertMany(bg, []Document{{"_id": 1, "email": "a"}, {"_id": 2, "email": "b"}})
	require.NoError(t, err)

	s, ctx := inTxn(t, db)
	res, err := c.UpdateOne(ctx, Document{"_id": 3}, Document{"$set": Document{"email": "c"}}, UpdateOptions{Upsert: true})
	require.NoError(t, err)
	require.Equal(t, 3, res.UpsertedID)
	var d Document
	require.NoError(t, c.FindOneAndUpdate(ctx, Document{"_id": 3}, Document{"$set": Document{"n": 1}}, FindOneAndUpdateOptions{ReturnDocument: After}).Decode(&d))
	require.Equal(t, Document{"_id": 3, "email": "c", "n": 1}, d)
	require.NoError(t, c.FindOneAndDelete(ctx, Document{"_id": 1}).Decode(&d))
	require.Equal(t, "a", d["email"])
	_, err = c.InsertOne(ctx, Document{"_id": 1, "email": "a2"})
	require.NoError(t, err, "deleted in the transaction: free again")
	_, err = c.InsertOne(ctx, Document{"_id": 2})
	require.ErrorIs(t, err, ErrDuplicateKey)
	require.ErrorIs(t, s.CommitTransaction(bg), ErrNoTransaction, "a write error aborts the transaction")
	require.Equal(t, []any{1, 2}, idsOf(t, c, bg, Document{}))

	s, ctx = inTxn(t, db)
	rr, err := c.ReplaceOne(ctx, Document{"_id": 2}, Document{"email": "b2"})
	require.NoError(t, err)
	require.EqualValues(t, 1, rr.ModifiedCount)
	_, err = c.InsertOne(ctx, Document{"_id": 4, "email": "a"}) // taken by _id 1
	require.NoError(t, err, "unique secondary indexes are checked at the commit")
	err = s.CommitTransaction(bg)
	require.ErrorIs(t, err, ErrDuplicateKey)
	require.NoError(t, c.FindOne(bg, Document{"_id": 2}).Decode(&d))
	require.Equal(t, "b", d["email"], "the failed commit changed nothing")
	require.EqualValues(t, 2, db.Metrics().Transactions.Aborted["error"], "the duplicate _id, then the failed commit")

	// Swapping a unique key between two documents commits.
	s, ctx = inTxn(t, db)
	_, err = c.UpdateOne(ctx, Document{"_id": 1}, Document{"$set": Document{"email": "b"}})
	require.NoError(t, err)
	_, err = c.UpdateOne(ctx, Document{"_id": 2}, Document{"$set": Document{"email": "a"}})
	require.NoError(t, err)
	require.NoError(t, s.CommitTransaction(bg))
	require.NoError(t, c.FindOne(bg, Document{"email": "a"}).Decode(&d))
	require.Equal(t, 2, d["_id"])
}

// Rule: Close aborts every open transaction; nothing of it remains.
func TestTxnCloseAborts(t *testing.T) {
	bg := context.Background()
	db, _ := openMon(t, quiet(MonitorOptions{}))
	s, ctx := inTxn(t, db)
	_, err := db.Collection("c").InsertOne(ctx, Document{"_id": 1})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.ErrorIs(t, s.CommitTransaction(bg), ErrClosed)
	require.EqualValues(t, 1, db.txns.aborted[abortByClose].Load())
	require.Zero(t, db.txns.nopen.Load())
}

// Rule: each limit aborts the transaction with ErrTransactionLimit and
// changes nothing.
func TestTxnLimits(t *testing.T) {
	bg := context.Background()
	db, clk := openMon(t, quiet(MonitorOptions{}), WithTransactionLimits(TransactionLimits{MaxOps: 3, MaxBytes: 1000, MaxOpen: 2, Lifetime: time.Minute}))
	c := db.Collection("c")
	_, ctx := inTxn(t, db)
	_, err := c.InsertMany(ctx, []Document{{"_id": 1}, {"_id": 2}, {"_id": 3}, {"_id": 4}})
	require.ErrorIs(t, err, ErrTransactionLimit)
	_, ctx = inTxn(t, db)
	_, err = c.InsertOne(ctx, Document{"_id": 1, "big": string(make([]byte, 2000))})
	require.ErrorIs(t, err, ErrTransactionLimit)
	s1, _ := inTxn(t, db)
	s2, ctx2 := inTxn(t, db)
	s3, err := db.StartSession()
	require.NoError(t, err)
	require.ErrorIs(t, s3.StartTransaction(), ErrTransactionLimit)
	_, err = c.InsertOne(ctx2, Document{"_id": 5})
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	_, err = c.InsertOne(ctx2, Document{"_id": 6})
	require.ErrorIs(t, err, ErrTransactionLimit)
	require.True(t, HasErrorLabel(err, TransientTransactionErrorLabel))
	require.NoError(t, s3.StartTransaction(), "the expired ones were reaped")
	require.NoError(t, s1.AbortTransaction(bg))
	require.NoError(t, s2.AbortTransaction(bg))
	n, err := c.CountDocuments(bg, nil)
	require.NoError(t, err)
	require.Zero(t, n)
	require.EqualValues(t, 0, db.mem.Load()-db.storageMetrics().Bytes, "the staged bytes were released")
}

// Rule: WithTransaction runs the callback again after a transient error,
// commits, and returns the callback's result.
func TestWithTransactionRetriesTransientErrors(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	c := db.Collection("c")
	_, err := c.InsertOne(bg, Document{"_id": 1, "n": int64(0)})
	require.NoError(t, err)
	blocker, bctx := inTxn(t, db)
	_, err = c.UpdateOne(bctx, Document{"_id": 1}, Document{"$set": Document{"by": "blocker"}})
	require.NoError(t, err)
	s, err := db.StartSession()
	require.NoError(t, err)
	runs := 0
	res, err := s.WithTransaction(bg, func(ctx context.Context) (any, error) {
		runs++
		if runs == 2 {
			require.NoError(t, blocker.AbortTransaction(bg))
		}
		_, err := c.UpdateOne(ctx, Document{"_id": 1}, Document{"$inc": Document{"n": int64(1)}})
		return runs, err
	})
	require.NoError(t, err)
	require.Equal(t, 2, res)
	var d Document
	require.NoError(t, c.FindOne(bg, Document{"_id": 1}).Decode(&d))
	require.EqualValues(t, 1, d["n"])

	// A non-transient error ends it, aborted.
	boom := errors.New("boom")
	_, err = s.WithTransaction(bg, func(ctx context.Context) (any, error) {
		_, _ = c.InsertOne(ctx, Document{"_id": 2})
		return nil, boom
	})
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, c.FindOne(bg, Document{"_id": 2}).Err(), ErrNotFound)
}

// Rule: a committed transaction's ops are one group carrying its
// identity, and DB.Apply of them on another DB changes it as one.
func TestTxnOpsApplyAsOne(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	rec := &recordingSink{}
	db.ops.attach(rec)
	a, b := db.Collection("a"), db.Collection("b")
	_, err := a.InsertOne(bg, Document{"_id": 1, "v": 1})
	require.NoError(t, err)
	_, err = b.InsertOne(bg, Document{"_id": 1})
	require.NoError(t, err)
	s, ctx := inTxn(t, db)
	_, err = a.UpdateOne(ctx, Document{"_id": 1}, Document{"$set": Document{"v": 2}})
	require.NoError(t, err)
	_, err = b.DeleteOne(ctx, Document{"_id": 1})
	require.NoError(t, err)
	_, err = a.InsertOne(ctx, Document{"_id": 2})
	require.NoError(t, err)
	require.NoError(t, s.CommitTransaction(bg))
	ops := rec.take()
	txOps := ops[len(ops)-3:]
	for _, op := range txOps {
		require.Equal(t, TxnID{LSID: s.ID(), Number: 1}, op.Txn)
		bin, err := op.MarshalBinary()
		require.NoError(t, err)
		var back Op
		require.NoError(t, back.UnmarshalBinary(bin))
		require.Equal(t, op.Txn, back.Txn)
	}
	replica, _ := openMon(t, quiet(MonitorOptions{}))
	require.NoError(t, replica.Apply(bg, ops...))
	require.Equal(t, []any{1, 2}, idsOf(t, replica.Collection("a"), bg, Document{}))
	require.Equal(t, []any{}, idsOf(t, replica.Collection("b"), bg, Document{}))

	// A group that does not apply changes nothing: an insert of an _id
	// stored already.
	bad := []Op{{Seq: replica.ops.lastSeq() + 1, Kind: OpDelete, Collection: "a", Keys: []RawDocument{mustRaw(t, Document{"_id": 1})}, Txn: TxnID{Number: 7, LSID: [16]byte{1}}},
		{Seq: replica.ops.lastSeq() + 2, Kind: OpInsert, Collection: "a", Docs: []RawDocument{mustRaw(t, Document{"_id": 2})}, Versions: []uint64{99}, Txn: TxnID{Number: 7, LSID: [16]byte{1}}}}
	require.ErrorIs(t, replica.Apply(bg, bad...), ErrInvalidOp)
	require.Equal(t, []any{1, 2}, idsOf(t, replica.Collection("a"), bg, Document{}))
}

func mustRaw(t testing.TB, d Document) RawDocument {
	t.Helper()
	enc, err := codec.Encode(d, nil)
	require.NoError(t, err)
	return enc
}

// resolvingReplicator is a Replicator whose End fails once (a leadership
// change during the commit) and that resolves commits as told.
type resolvingReplicator struct {
	failNext  bool
	committed bool
	resolved  int
}

func (r *resolvingReplicator) Begin() error { return nil }
func (r *resolvingReplicator) Commit([]Op)  {}
func (r *resolvingReplicator) End(err error) error {
	if r.failNext {
		r.failNext = false
		return errors.New("leadership lost")
	}
	return err
}
func (r *resolvingReplicator) ResolveCommit(ctx context.Context, id TxnID) (bool, error) {
	r.resolved++
	return r.committed, nil
}

// Rule: a commit whose replicated outcome is unknown fails with
// UnknownTransactionCommitResultLabel; called again, it reports what the
// replicator resolved: success once (never a second commit), or an
// abort labeled transient.
func TestTxnCommitUnknownResolves(t *testing.T) {
	bg := context.Background()
	r := &resolvingReplicator{}
	db, _ := openMon(t, quiet(MonitorOptions{}), WithReplicator(r))
	c := db.Collection("c")
	for _, committed := range []bool{true, false} {
		r.failNext, r.committed, r.resolved = true, committed, 0
		s, ctx := inTxn(t, db)
		_, err := c.InsertOne(ctx, Document{"note": committed})
		require.NoError(t, err)
		err = s.CommitTransaction(bg)
		require.True(t, HasErrorLabel(err, UnknownTransactionCommitResultLabel), "%v", err)
		err = s.CommitTransaction(bg)
		require.Equal(t, 1, r.resolved)
		if committed {
			require.NoError(t, err)
			require.NoError(t, s.CommitTransaction(bg), "reported again, not committed again")
			require.Equal(t, 1, r.resolved)
		} else {
			require.ErrorIs(t, err, ErrNoTransaction)
			require.True(t, HasErrorLabel(err, TransientTransactionErrorLabel))
		}
		require.True(t, db.TransactionCommitted(TxnID{LSID: s.ID(), Number: 1}), "applied here either way")
	}
}

// Rule: TransactionCommitted knows the transactions a DB committed,
// applied with Apply, or replayed from its log.
func TestTransactionCommitted(t *testing.T) {
	bg := context.Background()
	dir := t.TempDir()
	clk := ttltest.NewClock(t0)
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	rec := &recordingSink{}
	db.ops.attach(rec)
	s, ctx := inTxn(t, db)
	_, err := db.Collection("c").InsertOne(ctx, Document{"_id": 1})
	require.NoError(t, err)
	require.NoError(t, s.CommitTransaction(bg))
	id := TxnID{LSID: s.ID(), Number: 1}
	require.True(t, db.TransactionCommitted(id))
	require.False(t, db.TransactionCommitted(TxnID{LSID: s.ID(), Number: 2}))
	replica, _ := openMon(t, quiet(MonitorOptions{}))
	require.NoError(t, replica.Apply(bg, rec.take()...))
	require.True(t, replica.TransactionCommitted(id))
	require.NoError(t, db.Close())
	db = mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	require.True(t, db.TransactionCommitted(id))
}

// Rule: a commit whose log write fails reports an unknown outcome; called
// again it says nothing can settle it (no label), so WithTransaction
// returns rather than retrying for 120 s.
func TestTxnCommitLogFailure(t *testing.T) {
	bg := context.Background()
	m := vfs.NewFaultFS()
	db := mustOpenDurable(t, ttltest.NewClock(opEpoch), "d", withFS(m), WithSync(SyncAlways))
	c := db.Collection("c")
	_, err := c.InsertOne(bg, Document{"_id": 0})
	require.NoError(t, err)
	m.Inject(vfs.Fault{Op: vfs.FaultSync, Match: func(n string) bool { return strings.Contains(n, "log/") }})
	s, err := db.StartSession()
	require.NoError(t, err)
	runs := 0
	_, err = s.WithTransaction(bg, func(ctx context.Context) (any, error) {
		runs++
		return c.InsertOne(ctx, Document{"_id": 1})
	})
	require.ErrorIs(t, err, ErrLogFailed)
	require.False(t, HasErrorLabel(err, UnknownTransactionCommitResultLabel))
	require.Equal(t, 1, runs)
}

// Rule: a collection dropped while a transaction wrote in it fails the
// commit with a write conflict; the collection created again keeps
// nothing of it.
func TestTxnCollectionDroppedMeanwhile(t *testing.T) {
	bg := context.Background()
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("c")
	_, err := c.InsertOne(bg, Document{"_id": 1})
	require.NoError(t, err)
	s, ctx := inTxn(t, db)
	_, err = c.InsertOne(ctx, Document{"_id": 2})
	require.NoError(t, err)
	require.NoError(t, db.DropCollection(bg, "c"))
	_, err = c.InsertOne(bg, Document{"_id": 3})
	require.NoError(t, err)
	err = s.CommitTransaction(bg)
	require.ErrorIs(t, err, ErrWriteConflict)
	require.True(t, HasErrorLabel(err, TransientTransactionErrorLabel))
	require.Equal(t, []any{3}, idsOf(t, c, bg, Document{}))
}

// Rule: a read in a transaction of a collection that does not exist reads
// nothing and holds nothing: the transaction's next operation runs.
func TestTxnReadOfMissingCollection(t *testing.T) {
	bg := context.Background()
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("none")
	s, ctx := inTxn(t, db)
	require.ErrorIs(t, c.FindOne(ctx, Document{"_id": 1}).Err(), ErrNotFound)
	cur, err := c.Find(ctx, nil)
	require.NoError(t, err)
	require.False(t, cur.Next(ctx))
	n, err := c.CountDocuments(ctx, nil)
	require.NoError(t, err)
	require.Zero(t, n)
	vals, err := c.Distinct(ctx, "x", nil)
	require.NoError(t, err)
	require.Empty(t, vals)
	done := make(chan error, 1)
	go func() {
		_, err := c.InsertOne(ctx, Document{"_id": 1})
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the transaction's lock was left held by a read")
	}
	require.NoError(t, s.CommitTransaction(bg))
}

// Rule: a commit of unknown outcome is settled by the Replicator even
// after the DB was closed (a replica rebuilds its DB after a failed
// commit, closing the old one).
func TestTxnCommitUnknownAfterClose(t *testing.T) {
	bg := context.Background()
	r := &resolvingReplicator{failNext: true, committed: true}
	db, _ := openMon(t, quiet(MonitorOptions{}), WithReplicator(r))
	s, ctx := inTxn(t, db)
	_, err := db.Collection("c").InsertOne(ctx, Document{"_id": 1})
	require.NoError(t, err)
	require.True(t, HasErrorLabel(s.CommitTransaction(bg), UnknownTransactionCommitResultLabel))
	require.NoError(t, db.Close())
	require.NoError(t, s.CommitTransaction(bg))
	require.Equal(t, 1, r.resolved)
	require.ErrorIs(t, s.StartTransaction(), ErrClosed, "a new transaction needs a session of the open DB")
}
