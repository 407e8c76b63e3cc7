package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Change streams and transactions: a transaction's events are delivered
// after its commit, all of them together and in its order, each carrying
// the transaction's identity; an aborted transaction has none.

// evSum is what the tests compare of an event.
type evSum struct {
	Kind OperationType
	Coll string
	ID   any
	Txn  TxnID
}

func sumOf(ev ChangeEvent) evSum {
	id, _ := ev.DocumentKey.Lookup("_id")
	return evSum{ev.OperationType, ev.Ns.Coll, id, ev.Txn}
}

// drainEvents returns the events TryNext delivers until it has none.
func drainEvents(t testing.TB, cs *ChangeStream) []ChangeEvent {
	t.Helper()
	ctx := context.Background()
	var out []ChangeEvent
	for cs.TryNext(ctx) {
		out = append(out, cs.Event())
	}
	require.NoError(t, cs.Err())
	return out
}

func sums(evs []ChangeEvent) []evSum {
	out := []evSum{}
	for _, ev := range evs {
		out = append(out, sumOf(ev))
	}
	return out
}

// Rule: a stream delivers none of a transaction's events while it is
// open (a write committed meanwhile outside it is delivered), then, after
// the commit, all of them at once, in the transaction's order, with
// consecutive cluster times, each with Txn {the session's id, its
// txnNumber}; a write after the commit follows them, with no Txn. In
// memory and under SyncAlways, where the commit returns once every op is
// durable.
func TestTxnChangeStreamDeliversAfterCommitInOrder(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "SyncAlways"}[durable], func(t *testing.T) {
			var db *DB
			if durable {
				db = mustOpenDurable(t, ttltest.NewClock(opEpoch), t.TempDir(), WithSync(SyncAlways))
			} else {
				db, _ = openMon(t, quiet(MonitorOptions{}))
			}
			bg := context.Background()
			a, b := db.Collection("a"), db.Collection("b")
			_, err := a.InsertMany(bg, []Document{{"_id": 1, "v": 1}, {"_id": 2, "v": 2}})
			require.NoError(t, err)
			_, err = b.InsertOne(bg, Document{"_id": 1, "v": 1})
			require.NoError(t, err)
			cs, err := db.Watch(bg, nil, ChangeStreamOptions{FullDocument: FullDocumentUpdateLookup})
			require.NoError(t, err)
			defer cs.Close(bg)
			coll, err := a.Watch(bg, nil)
			require.NoError(t, err)
			defer coll.Close(bg)

			s, err := db.StartSession()
			require.NoError(t, err)
			// A first transaction, committed: the second is txnNumber 2.
			require.NoError(t, s.StartTransaction())
			require.NoError(t, s.CommitTransaction(bg))

			require.NoError(t, s.StartTransaction())
			ctx := NewSessionContext(bg, s)
			_, err = a.InsertOne(ctx, Document{"_id": 3, "v": 3})
			require.NoError(t, err)
			_, err = b.UpdateOne(ctx, Document{"_id": 1}, Document{"$set": Document{"v": 10}})
			require.NoError(t, err)
			_, err = a.DeleteOne(ctx, Document{"_id": 1})
			require.NoError(t, err)
			_, err = b.ReplaceOne(ctx, Document{"_id": 1}, Document{"v": 11})
			require.NoError(t, err)
			_, err = b.InsertOne(ctx, Document{"_id": 2})
			require.NoError(t, err)
			require.Empty(t, drainEvents(t, cs), "events of an open transaction")
			require.Empty(t, drainEvents(t, coll), "events of an open transaction")

			// A write outside it, on another document, meanwhile.
			_, err = a.UpdateOne(bg, Document{"_id": 2}, Document{"$set": Document{"v": 20}})
			require.NoError(t, err)
			got := drainEvents(t, cs)
			require.Equal(t, []evSum{{OperationUpdate, "a", 2, TxnID{}}}, sums(got))

			require.NoError(t, s.CommitTransaction(bg))
			id := TxnID{LSID: s.ID(), Number: 2}
			got = drainEvents(t, cs)
			txnEvs := got
			require.Equal(t, []evSum{
				{OperationInsert, "a", 3, id},
				{OperationUpdate, "b", 1, id},
				{OperationDelete, "a", 1, id},
				{OperationReplace, "b", 1, id},
				{OperationInsert, "b", 2, id},
			}, sums(got), "the transaction's events, after its commit, in its order")
			for i := 1; i < len(got); i++ {
				require.Equal(t, got[0].ClusterTime+uint64(i), got[i].ClusterTime, "the transaction's events are consecutive")
				require.Equal(t, got[0].WallTime, got[i].WallTime, "one commit, one wall time")
			}
			require.EqualValues(t, 10, got[1].FullDocument.Document()["v"], "the update's document as the transaction left it at that step")
			require.EqualValues(t, 11, got[3].FullDocument.Document()["v"])
			require.NotNil(t, got[1].UpdateDescription)
			require.EqualValues(t, 10, got[1].UpdateDescription.UpdatedFields["v"])

			// The collection's stream: its part of it, in order, with Txn.
			require.Equal(t, []evSum{
				{OperationUpdate, "a", 2, TxnID{}},
				{OperationInsert, "a", 3, id},
				{OperationDelete, "a", 1, id},
			}, sums(drainEvents(t, coll)))

			// After it: a write outside any transaction.
			_, err = a.InsertOne(bg, Document{"_id": 9})
			require.NoError(t, err)
			got = drainEvents(t, cs)
			require.Equal(t, []evSum{{OperationInsert, "a", 9, TxnID{}}}, sums(got))

			// Resumed after the transaction's first event: the rest of it,
			// with its identity.
			rs, err := db.Watch(bg, nil, ChangeStreamOptions{ResumeAfter: &txnEvs[0].ID})
			require.NoError(t, err)
			defer rs.Close(bg)
			require.Equal(t, []evSum{
				{OperationUpdate, "b", 1, id},
				{OperationDelete, "a", 1, id},
				{OperationReplace, "b", 1, id},
				{OperationInsert, "b", 2, id},
				{OperationInsert, "a", 9, TxnID{}},
			}, sums(drainEvents(t, rs)))
		})
	}
}

// Rule: an aborted transaction produces no event and uses no cluster
// time: by AbortTransaction, by a write conflict, by a failed commit (a
// unique index), by EndSession, by WithTransaction's callback failing.
func TestTxnChangeStreamAbortedHasNoEvents(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	c := db.Collection("c")
	_, err := c.CreateIndex(bg, IndexModel{Keys: []IndexKey{Asc("u")}, Unique: true})
	require.NoError(t, err)
	_, err = c.InsertMany(bg, []Document{{"_id": 1, "n": 0, "u": "1"}, {"_id": 2, "n": 0, "u": "2"}})
	require.NoError(t, err)
	cs, err := db.Watch(bg, nil)
	require.NoError(t, err)
	defer cs.Close(bg)
	last := db.ops.lastSeq()

	// AbortTransaction.
	s, ctx := inTxn(t, db)
	_, err = c.InsertOne(ctx, Document{"_id": 3, "u": "3"})
	require.NoError(t, err)
	_, err = c.DeleteOne(ctx, Document{"_id": 1})
	require.NoError(t, err)
	require.NoError(t, s.AbortTransaction(bg))

	// A write conflict.
	s1, ctx1 := inTxn(t, db)
	s2, ctx2 := inTxn(t, db)
	_, err = c.UpdateOne(ctx2, Document{"_id": 2}, Document{"$inc": Document{"n": 1}})
	require.NoError(t, err)
	_, err = c.InsertOne(ctx1, Document{"_id": 4, "u": "4"})
	require.NoError(t, err)
	_, err = c.UpdateOne(ctx1, Document{"_id": 2}, Document{"$inc": Document{"n": 1}})
	require.ErrorIs(t, err, ErrWriteConflict)
	require.ErrorIs(t, s1.CommitTransaction(bg), ErrNoTransaction)

	// A commit that fails: a unique key another write took meanwhile.
	s3, ctx3 := inTxn(t, db)
	_, err = c.InsertOne(ctx3, Document{"_id": 5, "u": "x"})
	require.NoError(t, err)
	_, err = c.UpdateOne(ctx3, Document{"_id": 1}, Document{"$set": Document{"n": 7}})
	require.NoError(t, err)
	require.Empty(t, drainEvents(t, cs))
	s2.EndSession(bg) // ends its open transaction, aborted
	require.Equal(t, last, db.ops.lastSeq(), "an aborted transaction committed an op")
	_, err = c.InsertOne(bg, Document{"_id": 6, "u": "x"})
	require.NoError(t, err)
	require.Error(t, s3.CommitTransaction(bg), "the unique index refuses the commit")

	// WithTransaction's callback failing.
	s4, err := db.StartSession()
	require.NoError(t, err)
	_, err = s4.WithTransaction(bg, func(ctx context.Context) (any, error) {
		if _, err := c.InsertOne(ctx, Document{"_id": 7, "u": "7"}); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("no")
	})
	require.Error(t, err)

	// The only event: the write outside any transaction, right after
	// the last one before them all.
	got := drainEvents(t, cs)
	require.Equal(t, []evSum{{OperationInsert, "c", 6, TxnID{}}}, sums(got))
	require.Equal(t, last+1, got[0].ClusterTime, "an aborted transaction took a cluster time")
	require.Equal(t, []any{1, 2, 6}, idsOf(t, c, bg, Document{}))
}

// Rule: a transaction's event, as a document (Decode into a Document,
// Current, a struct, the JSON form, a pipeline's $match), has lsid:
// {id: the session's id as a UUID binary} and txnNumber; an event of a
// write outside any transaction has neither.
func TestTxnChangeEventDocumentHasLsidAndTxnNumber(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	c := db.Collection("c")
	s, err := db.StartSession()
	require.NoError(t, err)
	sid := s.ID()
	require.Equal(t, byte(0x40), sid[6]&0xf0, "a version 4 UUID")
	require.Equal(t, byte(0x80), sid[8]&0xc0, "the RFC 4122 variant")

	cs, err := db.Watch(bg, nil)
	require.NoError(t, err)
	defer cs.Close(bg)
	matched, err := db.Watch(bg, []Document{{"$match": Document{"txnNumber": int64(3)}}})
	require.NoError(t, err)
	defer matched.Close(bg)

	_, err = c.InsertOne(bg, Document{"_id": 0})
	require.NoError(t, err)
	for n := 1; n <= 3; n++ {
		require.NoError(t, s.StartTransaction())
		_, err = c.InsertOne(NewSessionContext(bg, s), Document{"_id": n})
		require.NoError(t, err)
		require.NoError(t, s.CommitTransaction(bg))
	}

	// Outside any transaction: neither field.
	require.True(t, cs.TryNext(bg))
	var plain Document
	require.NoError(t, cs.Decode(&plain))
	require.NotContains(t, plain, "lsid")
	require.NotContains(t, plain, "txnNumber")
	j, err := json.Marshal(cs.Event())
	require.NoError(t, err)
	require.NotContains(t, string(j), "lsid")
	require.NotContains(t, string(j), "txnNumber")

	for n := 1; n <= 3; n++ {
		require.True(t, cs.TryNext(bg))
		var d Document
		require.NoError(t, cs.Decode(&d))
		lsid, ok := d["lsid"].(Document)
		require.True(t, ok, "event %d: lsid is a document: %#v", n, d["lsid"])
		require.Equal(t, Document{"id": bson.Binary{Subtype: bson.TypeBinaryUUID, Data: sid[:]}}, lsid, "event %d: lsid", n)
		require.Equal(t, int64(n), d["txnNumber"], "event %d: txnNumber", n)

		// The raw form reads the same.
		raw := cs.Current().Document()
		require.Equal(t, d["lsid"], raw["lsid"], "event %d: Current's lsid", n)
		require.EqualValues(t, n, raw["txnNumber"], "event %d: Current's txnNumber", n)

		// Decoded into a struct, as the driver's users do.
		var st struct {
			Lsid struct {
				ID bson.Binary `bson:"id"`
			} `bson:"lsid"`
			TxnNumber int64 `bson:"txnNumber"`
		}
		require.NoError(t, cs.Decode(&st))
		require.Equal(t, bson.TypeBinaryUUID, st.Lsid.ID.Subtype, "event %d: the lsid's id is a UUID binary", n)
		require.Equal(t, sid[:], st.Lsid.ID.Data, "event %d", n)
		require.Equal(t, int64(n), st.TxnNumber, "event %d", n)

		// The JSON form.
		j, err := json.Marshal(cs.Event())
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(j, &m))
		uuid := bson.Binary{Subtype: bson.TypeBinaryUUID, Data: sid[:]}
		wantLsid, err := bson.MarshalExtJSON(bson.D{{Key: "id", Value: uuid}}, false, false)
		require.NoError(t, err)
		var wl any
		require.NoError(t, json.Unmarshal(wantLsid, &wl))
		require.Equal(t, wl, m["lsid"], "event %d: the JSON form's lsid", n)
		require.EqualValues(t, n, m["txnNumber"], "event %d: the JSON form's txnNumber", n)
	}
	require.False(t, cs.TryNext(bg))

	// A pipeline reads the document form.
	var ms []evSum
	for matched.TryNext(bg) {
		var d Document
		require.NoError(t, matched.Decode(&d))
		ms = append(ms, sumOf(matched.Event()))
	}
	require.NoError(t, matched.Err())
	require.Equal(t, []evSum{{OperationInsert, "c", 3, TxnID{LSID: sid, Number: 3}}}, ms, "$match on txnNumber")
}

// Rule: with writes outside transactions committing concurrently, a
// stream delivers each transaction's events consecutively, complete, in
// its order: once it delivered a transaction's first event, TryNext
// delivers the rest at once, with none of another write in between.
func TestTxnChangeStreamEventsStayTogether(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	a, b := db.Collection("a"), db.Collection("b")
	const txns, perTxn = 200, 4
	cs, err := db.Watch(bg, nil)
	require.NoError(t, err)
	defer cs.Close(bg)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(stop); wg.Wait() }) // a failure too ends the writers before the DB closes
	wg.Add(1)
	go func() { // writes outside any transaction, along (fewer than the stream's buffer holds)
		defer wg.Done()
		for i := range 1000 {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := b.InsertOne(bg, Document{"_id": fmt.Sprintf("plain-%d", i)}); err != nil {
				t.Errorf("plain write: %v", err)
				return
			}
		}
	}()
	sess := make([]*Session, 2)
	for w := range sess {
		s, err := db.StartSession()
		require.NoError(t, err)
		sess[w] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range txns / len(sess) {
				_, err := s.WithTransaction(bg, func(ctx context.Context) (any, error) {
					for j := range perTxn {
						c := a
						if j%2 == 1 {
							c = b
						}
						if _, err := c.InsertOne(ctx, Document{"_id": fmt.Sprintf("w%d-%d-%d", w, n, j)}); err != nil {
							return nil, err
						}
					}
					return nil, nil
				})
				if err != nil {
					t.Errorf("transaction: %v", err)
					return
				}
			}
		}()
	}

	seen := map[TxnID]int{}
	plain := 0
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	for len(seen) < txns {
		require.True(t, cs.Next(ctx), "the stream ended: %v", cs.Err())
		ev := cs.Event()
		if ev.Txn.IsZero() {
			plain++
			continue
		}
		require.Zero(t, seen[ev.Txn], "transaction %v delivered twice", ev.Txn)
		// Its first event names it: w<session>-<n>-0.
		var w, n, j0 int
		_, err := fmt.Sscanf(sumOf(ev).ID.(string), "w%d-%d-%d", &w, &n, &j0)
		require.NoError(t, err)
		require.Zero(t, j0, "transaction %v: its first event delivered is %v", ev.Txn, sumOf(ev).ID)
		require.Equal(t, sess[w].ID(), ev.Txn.LSID, "transaction %v: the lsid is its session's", ev.Txn)
		evs := []ChangeEvent{ev}
		for len(evs) < perTxn {
			require.True(t, cs.TryNext(bg), "transaction %v: %d of its %d events delivered, the next is not there at once (%v)", ev.Txn, len(evs), perTxn, cs.Err())
			evs = append(evs, cs.Event())
		}
		for j, e := range evs {
			coll := "a"
			if j%2 == 1 {
				coll = "b"
			}
			require.Equal(t, evSum{OperationInsert, coll, fmt.Sprintf("w%d-%d-%d", w, n, j), ev.Txn}, sumOf(e), "transaction %v's event %d", ev.Txn, j)
			require.Equal(t, ev.ClusterTime+uint64(j), e.ClusterTime)
		}
		seen[ev.Txn]++
	}
	once.Do(func() { close(stop); wg.Wait() })
	t.Logf("%d transactions delivered whole among %d writes outside them", len(seen), plain)
}
