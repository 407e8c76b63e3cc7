package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
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
	var cpu int64
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
		cpu0 := processCPU()
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
		cpu += processCPU() - cpu0
		require.GreaterOrEqual(b, deleted, n) // a batch may be deleted twice: by a deposed leader, not committed, then by the new one
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "docs/s")
	// CPU time of the whole process (every node) per document deleted:
	// steadier than docs/s on a shared machine.
	b.ReportMetric(float64(cpu)/float64(n*b.N), "cpu-ns/doc")
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

// BenchmarkFailover kills the leader of a 3-node cluster (in-memory
// transport, raft's default timeouts) once per iteration and times from
// the kill to the first TTL batch the new leader deletes: documents due
// just after the kill are deleted by the new leader's monitor (a 5 ms
// interval, on the system clock) once it has won the election and applied
// every earlier entry (Barrier). It reports the median and p95.
//
//	go test -run '^$' -bench Failover -benchtime 10x .
func BenchmarkFailover(b *testing.B) {
	c := newClusterWith(b, 3, func(string) []ttldb.Option {
		return []ttldb.Option{
			ttldb.WithClock(ttldb.SystemClock()),
			ttldb.WithMonitor(ttldb.MonitorOptions{Interval: 5 * time.Millisecond}),
		}
	}, false, func(id string) *raft.Config {
		rc := raft.DefaultConfig()
		rc.LocalID = raft.ServerID(id)
		return rc
	})
	ctx := context.Background()
	retry(b, func() error {
		_, err := c.leader().node.DB().Collection("f").CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
		return err
	})
	var times []time.Duration
	b.ResetTimer()
	for i := 0; len(times) < b.N; i++ {
		// Due 300 ms from now: after the kill, before any election ends.
		due := time.Now().Add(-60*time.Second + 300*time.Millisecond)
		docs := []any{ttldb.Document{"_id": fmt.Sprint("a", i), "at": due}, ttldb.Document{"_id": fmt.Sprint("b", i), "at": due}}
		retry(b, func() error {
			_, err := c.leader().node.DB().Collection("f").InsertMany(docs)
			if errors.Is(err, ttldb.ErrDuplicateKey) {
				return nil
			}
			return err
		})
		c.converged()
		old := c.leader()
		if count(b, old.node.DB(), "f", ttldb.Document{}) != 2 {
			continue // the old leader was slow: its own monitor deleted them
		}
		c.kill(old)
		start := time.Now()
		var by *testNode
		require.Eventually(b, func() bool {
			for _, tn := range c.up() {
				if count(b, tn.node.DB(), "f", ttldb.Document{}) < 2 && tn.node.Raft().State() == raft.Leader {
					by = tn
					return true
				}
			}
			return false
		}, 30*time.Second, time.Millisecond, "no new leader expired the documents")
		times = append(times, time.Since(start))
		require.NotSame(b, old, by)
		c.restart(old)
		c.converged()
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(times[(len(times)*95+99)/100-1].Milliseconds()), "p95-ms")
	rc := raft.DefaultConfig()
	b.ReportMetric(float64((2*rc.HeartbeatTimeout + rc.ElectionTimeout).Milliseconds()), "target-ms")
}
