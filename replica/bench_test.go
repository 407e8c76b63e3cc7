package replica

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// Benchmarks of a 3-node cluster on raft's in-memory transport against a
// single DB (see README.md, Performance):
//
//	go test -run '^$' -bench . -benchtime 20000x -count 5 ./

// singleDB opens a DB as a node's, but alone.
func singleDB(b *testing.B) (*ttldb.DB, *ttltest.Clock) {
	clk := ttltest.NewClock(epoch0)
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(b, err)
	b.Cleanup(func() { db.Close() })
	return db, clk
}

// benchInsertOne runs b.N InsertOne calls from 32 goroutines per CPU and
// reports documents per second.
func benchInsertOne(b *testing.B, db func() *ttldb.DB, now func() time.Time) {
	var next atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			_, err := db().Collection("s").InsertOne(ttldb.Document{"_id": i, "at": now(), "user": "u"})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkInsertOne: concurrent single-document inserts; replicated,
// each is one raft entry, and raft batches the concurrent proposals.
func BenchmarkInsertOne(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		db, clk := singleDB(b)
		benchInsertOne(b, func() *ttldb.DB { return db }, clk.Now)
	})
	b.Run("replicated3", func(b *testing.B) {
		c := newCluster(b, 3, nil)
		l := c.leader()
		benchInsertOne(b, l.node.DB, c.clk.Now)
		c.converged()
	})
}

// benchExpire inserts n expired documents (untimed), then times one TTL
// pass deleting them, until every replica has applied it when wait is
// set.
func benchExpire(b *testing.B, n int, db func() *ttldb.DB, clk *ttltest.Clock, wait func(), moved *int) {
	ctx := context.Background()
	_, err := db().Collection("s").CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(b, err)
	b.ResetTimer()
	b.StopTimer()
	for it := range b.N {
		for start := 0; start < n; start += 1000 {
			docs := make([]any, 0, 1000)
			for i := start; i < start+1000; i++ {
				docs = append(docs, ttldb.Document{"_id": fmt.Sprint(it, "-", i), "at": clk.Now()})
			}
			retry(b, func() error {
				_, err := db().Collection("s").InsertMany(docs)
				if errors.Is(err, ttldb.ErrDuplicateKey) {
					return nil // committed before a retry
				}
				return err
			})
		}
		wait()
		clk.Advance(2 * time.Minute)
		b.StartTimer()
		deleted := 0
		for deleted < n { // a pass may stop at its per-index caps
			res, err := db().RunTTLPass(ctx)
			if notLeader(err) { // leadership moved: the new leader goes on
				*moved++
				continue
			}
			require.NoError(b, err)
			deleted += res.Deleted
		}
		wait()
		b.StopTimer()
		require.GreaterOrEqual(b, deleted, n) // a batch may be deleted twice: by a deposed leader, not committed, then by the new one
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64(*moved), "leader-moves")
}

// notLeader reports whether err says this node was not, or stopped being,
// the leader.
func notLeader(err error) bool {
	return errors.Is(err, ttldb.ErrNotPrimary) || errors.Is(err, ErrNotCommitted) || errors.Is(err, ttldb.ErrClosed)
}

// retry runs fn until it succeeds, again while the leader changes.
func retry(b *testing.B, fn func() error) {
	for range 50 {
		err := fn()
		if !notLeader(err) {
			require.NoError(b, err)
			return
		}
	}
	b.Fatal("no leader kept its leadership")
}

// BenchmarkExpire: one TTL pass over 100k expired documents; replicated,
// timed until every replica has applied the last batch.
func BenchmarkExpire(b *testing.B) {
	const n = 100_000
	b.Run("single", func(b *testing.B) {
		db, clk := singleDB(b)
		benchExpire(b, n, func() *ttldb.DB { return db }, clk, func() {}, new(int))
	})
	b.Run("replicated3", func(b *testing.B) {
		c := newCluster(b, 3, nil)
		benchExpire(b, n, func() *ttldb.DB { return c.leader().node.DB() }, c.clk, func() { c.converged() }, new(int))
	})
}
