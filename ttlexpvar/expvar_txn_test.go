package ttlexpvar_test

import (
	"context"
	"encoding/json"
	"expvar"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttlexpvar"
	"github.com/ttldb/ttldb/ttltest"
)

// Rule: the variable carries the transactions' figures: started,
// committed, aborted by cause, write conflicts, open, and the commit
// latency histogram, live on every read.
func TestPublishTransactions(t *testing.T) {
	clk := ttltest.NewClock(t0)
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	name := uniqueName("ttldb.txn")
	require.NoError(t, ttlexpvar.Publish(name, db))
	assert.Equal(t, int64(0), decode(t, name).Transactions.Started)

	ctx := context.Background()
	orders := db.Collection("orders")
	begin := func() (*ttldb.Session, context.Context) {
		s, err := db.StartSession()
		require.NoError(t, err)
		t.Cleanup(func() { s.EndSession(ctx) })
		require.NoError(t, s.StartTransaction())
		return s, ttldb.NewSessionContext(ctx, s)
	}

	// A commit of an insert and an update; the clock moves 1 ms at each
	// reading during it, so that its latency is not 0.
	committed, cctx := begin()
	_, err = orders.InsertOne(cctx, ttldb.Document{"_id": 1, "n": 1})
	require.NoError(t, err)
	_, err = orders.UpdateOne(cctx, ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"n": 1}})
	require.NoError(t, err)
	clk.SetAutoAdvance(time.Millisecond)
	require.NoError(t, committed.CommitTransaction(ctx))
	clk.SetAutoAdvance(0)

	// An abort by the caller.
	aborted, actx := begin()
	_, err = orders.InsertOne(actx, ttldb.Document{"_id": 2})
	require.NoError(t, err)
	require.NoError(t, aborted.AbortTransaction(ctx))

	// A conflict: the second writer of a document fails and is aborted;
	// the first stays open.
	_, fctx := begin()
	_, err = orders.UpdateOne(fctx, ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"n": 10}})
	require.NoError(t, err)
	_, sctx := begin()
	_, err = orders.UpdateOne(sctx, ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"n": 20}})
	require.ErrorIs(t, err, ttldb.ErrWriteConflict)

	got := decode(t, name).Transactions
	assert.Equal(t, int64(4), got.Started)
	assert.Equal(t, int64(1), got.Committed)
	assert.Equal(t, map[string]int64{
		"caller": 1, "conflict": 1, "lifetime": 0, "limit": 0, "session": 0, "close": 0, "error": 0,
	}, got.Aborted)
	assert.Equal(t, int64(1), got.Conflicts)
	assert.Equal(t, int64(1), got.Open)
	assert.Equal(t, int64(1), got.CommitLatency.Count)
	assert.Positive(t, got.CommitLatency.Sum)
	assert.NotEmpty(t, got.CommitLatency.Buckets)
	assert.Equal(t, db.Metrics().Transactions, got)

	// The JSON's own shape, as a reader of /debug/vars sees it.
	var raw struct {
		Transactions struct {
			Aborted       map[string]int64
			CommitLatency struct{ Count int64 }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(expvar.Get(name).String()), &raw))
	assert.Equal(t, int64(1), raw.Transactions.Aborted["conflict"])
	assert.Equal(t, int64(1), raw.Transactions.CommitLatency.Count)
}
