package prom_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/prom"
	"github.com/ttldb/ttldb/ttltest"
)

// runTransactions leaves db with a transaction of each ending and one
// still open, all on collection "orders": a commit (an insert and an
// update; the clock moves 1 ms at each reading during the commit, so that
// its duration is not 0), an abort by the caller, and a write conflict
// (two transactions update one document: the second fails and is aborted,
// the first stays open).
func runTransactions(t *testing.T, db *ttldb.DB, clk *ttltest.Clock) {
	t.Helper()
	ctx := context.Background()
	orders := db.Collection("orders")
	begin := func() (*ttldb.Session, context.Context) {
		s, err := db.StartSession()
		require.NoError(t, err)
		t.Cleanup(func() { s.EndSession(ctx) })
		require.NoError(t, s.StartTransaction())
		return s, ttldb.NewSessionContext(ctx, s)
	}

	committed, cctx := begin()
	_, err := orders.InsertOne(cctx, ttldb.Document{"_id": 1, "n": 1})
	require.NoError(t, err)
	_, err = orders.UpdateOne(cctx, ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"n": 1}})
	require.NoError(t, err)
	clk.SetAutoAdvance(time.Millisecond)
	require.NoError(t, committed.CommitTransaction(ctx))
	clk.SetAutoAdvance(0)

	aborted, actx := begin()
	_, err = orders.InsertOne(actx, ttldb.Document{"_id": 2})
	require.NoError(t, err)
	require.NoError(t, aborted.AbortTransaction(ctx))

	_, fctx := begin()
	_, err = orders.UpdateOne(fctx, ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"n": 10}})
	require.NoError(t, err)
	_, sctx := begin()
	_, err = orders.UpdateOne(sctx, ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"n": 20}})
	require.ErrorIs(t, err, ttldb.ErrWriteConflict)
}

// Rule: the collector exports the transactions' figures: the started,
// committed and conflict counters, the aborted counter with a series per
// cause (zero ones included), the open gauge, and the commit-duration
// histogram in seconds with the engine's buckets.
func TestCollectorTransactions(t *testing.T) {
	clk := ttltest.NewClock(t0)
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	c := prom.NewCollector(db, prometheus.Labels{"db": "main"})

	// Before any transaction: every series is there, at 0.
	assert.Equal(t, 7, testutil.CollectAndCount(c, "ttldb_transactions_aborted_total"), "a series per cause")
	assert.Equal(t, 1, testutil.CollectAndCount(c, "ttldb_transactions_commit_duration_seconds"))

	runTransactions(t, db, clk)
	m := db.Metrics().Transactions
	require.Equal(t, int64(1), m.CommitLatency.Count)
	require.Positive(t, m.CommitLatency.Sum, "the clock moved during the commit")

	want := `
# HELP ttldb_transactions_aborted_total Transactions ended without a commit, by cause (caller, conflict, lifetime, limit, session, close, error).
# TYPE ttldb_transactions_aborted_total counter
ttldb_transactions_aborted_total{cause="caller",db="main"} 1
ttldb_transactions_aborted_total{cause="close",db="main"} 0
ttldb_transactions_aborted_total{cause="conflict",db="main"} 1
ttldb_transactions_aborted_total{cause="error",db="main"} 0
ttldb_transactions_aborted_total{cause="lifetime",db="main"} 0
ttldb_transactions_aborted_total{cause="limit",db="main"} 0
ttldb_transactions_aborted_total{cause="session",db="main"} 0
# HELP ttldb_transactions_committed_total Transactions committed, ones with no write included.
# TYPE ttldb_transactions_committed_total counter
ttldb_transactions_committed_total{db="main"} 1
# HELP ttldb_transactions_open Transactions open now.
# TYPE ttldb_transactions_open gauge
ttldb_transactions_open{db="main"} 1
# HELP ttldb_transactions_started_total Transactions started (StartTransaction calls that opened one).
# TYPE ttldb_transactions_started_total counter
ttldb_transactions_started_total{db="main"} 4
# HELP ttldb_transactions_write_conflicts_total Transaction writes that failed with a write conflict (the transaction is aborted).
# TYPE ttldb_transactions_write_conflicts_total counter
ttldb_transactions_write_conflicts_total{db="main"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), namesIn(want)...))

	// The histogram, bucket by bucket, against Metrics in seconds.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	require.NoError(t, err)
	found := false
	for _, f := range fams {
		if f.GetName() != "ttldb_transactions_commit_duration_seconds" {
			continue
		}
		found = true
		require.Len(t, f.GetMetric(), 1)
		h := f.GetMetric()[0].GetHistogram()
		assert.Equal(t, uint64(1), h.GetSampleCount())
		assert.InDelta(t, m.CommitLatency.Sum.Seconds(), h.GetSampleSum(), 1e-12)
		require.Len(t, h.GetBucket(), len(m.CommitLatency.Buckets))
		for i, b := range h.GetBucket() {
			assert.InDelta(t, m.CommitLatency.Buckets[i].UpperBound.Seconds(), b.GetUpperBound(), 1e-12, "bucket %d", i)
			assert.Equal(t, uint64(m.CommitLatency.Buckets[i].Count), b.GetCumulativeCount(), "bucket %d", i)
		}
	}
	assert.True(t, found, "the commit-duration histogram is exported")
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}
