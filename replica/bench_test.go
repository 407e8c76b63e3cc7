package replica

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// Benchmarks of a 3-node cluster against a single DB (see README.md,
// Performance), each cluster twice: on raft's in-memory transport
// (replicated3, inmem) and on raft's TCP transport over loopback TLS 1.3
// with mutual authentication (replicated3-tls, tls: NewTLSTransport on
// 127.0.0.1, a CA made for the cluster), the "loopback, 3 nodes".
//
//	go test -run '^$' -bench InsertOne -benchtime 20000x -count 5 .
//	go test -run '^$' -bench Expire -benchtime 3x -count 5 .
//	go test -run '^$' -bench Failover -benchtime 12x .

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
	cpu0 := testutil.ProcessCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			_, err := db().Collection("s").InsertOne(context.Background(), ttldb.Document{"_id": i, "at": now(), "user": "u"})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	// The CPU time of the whole process (every node), which another
	// process's load stretches far less than wall time.
	b.ReportMetric(float64(testutil.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/doc")
}

// BenchmarkInsertOne: concurrent single-document inserts; replicated,
// each is one raft entry, and raft batches the concurrent proposals (the
// entries waiting in its apply channel go out together, up to
// MaxAppendEntries). The cluster's raft log is in memory, or in
// raft.db (-disk: Config.Dir, bbolt: two fsyncs per batch of entries on every
// node); -batchapply sets raft's BatchApplyCh, so that a proposal does not
// wait for raft's leader loop to take it (which, under the DB's commit
// lock, holds up the next writer's).
func BenchmarkInsertOne(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		db, clk := singleDB(b)
		benchInsertOne(b, func() *ttldb.DB { return db }, clk.Now)
	})
	for _, v := range []struct {
		name             string
		tcp, disk, batch bool
	}{
		{"replicated3", false, false, false},
		{"replicated3-tls", true, false, false},
		{"replicated3-tls-batchapply", true, false, true},
		{"replicated3-tls-disk", true, true, false},
		{"replicated3-tls-disk-batchapply", true, true, true},
	} {
		b.Run(v.name, func(b *testing.B) {
			c := newClusterOn(b, 3, nil, v.disk, func(id string) *raft.Config {
				rc := testRaftConfig(id)
				rc.BatchApplyCh = v.batch
				return rc
			}, v.tcp)
			benchInsertOne(b, c.leader().node.DB, c.clk.Now)
			c.converged()
		})
	}
}

// clusterName names a 3-node cluster benchmark by its transport.
func clusterName(tcp bool) string {
	if tcp {
		return "replicated3-tls"
	}
	return "replicated3"
}

// benchExpire inserts n expired documents (untimed), then times one TTL
// pass deleting them, until every replica has applied it when wait is
// set.
func benchExpire(b *testing.B, n int, db func() *ttldb.DB, clk *ttltest.Clock, wait func(), moved *int) {
	ctx := context.Background()
	_, err := db().Collection("s").CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(b, err)
	var passes time.Duration
	var cpu int64 // the process's (every node's) CPU time while timed
	b.ResetTimer()
	b.StopTimer()
	for it := range b.N {
		for start := 0; start < n; start += 1000 {
			docs := make([]any, 0, 1000)
			for i := start; i < start+1000; i++ {
				docs = append(docs, ttldb.Document{"_id": fmt.Sprint(it, "-", i), "at": clk.Now()})
			}
			retry(b, func() error {
				_, err := db().Collection("s").InsertMany(context.Background(), docs)
				if errors.Is(err, ttldb.ErrDuplicateKey) {
					return nil // committed before a retry
				}
				return err
			})
		}
		wait()
		clk.Advance(2 * time.Minute)
		b.StartTimer()
		stopProfile := profileTimed(b)
		start, cpu0 := time.Now(), testutil.ProcessCPU()
		deleted := 0
		for deleted < n { // a pass may stop at its per-index caps
			res, err := db().RunTTLPass(ctx)
			// Leadership moved (a deposed leader's pass ends canceled): the
			// new leader goes on.
			if notLeader(err) || errors.Is(err, context.Canceled) {
				*moved++
				continue
			}
			require.NoError(b, err)
			deleted += res.Deleted
		}
		passes += time.Since(start)
		wait()
		b.StopTimer()
		cpu += testutil.ProcessCPU() - cpu0
		stopProfile()
		require.GreaterOrEqual(b, deleted, n) // a batch may be deleted twice: by a deposed leader, not committed, then by the new one
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "docs/s")
	// The leader's passes alone, before the followers have applied the last
	// batches (equal to docs/s on a single DB).
	b.ReportMetric(float64(n*b.N)/passes.Seconds(), "pass-docs/s")
	// CPU time of the whole process (every node) per document deleted:
	// steadier than docs/s on a shared machine.
	b.ReportMetric(float64(cpu)/float64(n*b.N), "cpu-ns/doc")
	b.ReportMetric(float64(*moved), "leader-moves")
}

// profileTimed starts a CPU profile of a timed iteration when
// TTLDB_BENCH_CPUPROFILE names a file prefix (the run's benchmark name and
// a counter are appended; `go tool pprof -top` reads several together),
// so that the untimed setup stays out of the profile. It returns the
// function that stops it.
func profileTimed(b *testing.B) func() {
	prefix := os.Getenv("TTLDB_BENCH_CPUPROFILE")
	if prefix == "" {
		return func() {}
	}
	profiles++
	name := fmt.Sprintf("%s.%s.%d", prefix, strings.ReplaceAll(b.Name(), "/", "_"), profiles)
	f, err := os.Create(name)
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(b, f.Close())
	}
}

// profiles numbers profileTimed's files.
var profiles int

// notLeader reports whether err says this node was not, or stopped being,
// the leader.
func notLeader(err error) bool {
	return errors.Is(err, ttldb.ErrNotPrimary) || errors.Is(err, ErrNotCommitted) || errors.Is(err, ttldb.ErrClosed)
}

// retry runs fn until it succeeds, again while the leader changes.
func retry(b testing.TB, fn func() error) {
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
	for _, tcp := range []bool{false, true} {
		b.Run(clusterName(tcp), func(b *testing.B) {
			c := newClusterOn(b, 3, nil, false, testRaftConfig, tcp)
			benchExpire(b, n, func() *ttldb.DB { return c.leader().node.DB() }, c.clk, func() { c.converged() }, new(int))
		})
	}
}

// BenchmarkFailover kills the leader of a 3-node cluster (raft's default
// timeouts; inmem: raft's in-memory transport, tls: loopback TCP with
// TLS) once per iteration and times from
// the kill to the first TTL batch the new leader deletes: documents due
// just after the kill are deleted by the new leader's monitor (a 5 ms
// interval, on the system clock) once it has won the election and applied
// every earlier entry (Barrier). It reports the median and p95.
//
//	go test -run '^$' -bench Failover -benchtime 10x .
func BenchmarkFailover(b *testing.B) {
	b.Run("inmem", func(b *testing.B) { benchFailover(b, false) })
	b.Run("tls", func(b *testing.B) { benchFailover(b, true) })
}

func benchFailover(b *testing.B, tcp bool) {
	c := newClusterOn(b, 3, func(string) []ttldb.Option {
		return []ttldb.Option{
			ttldb.WithClock(ttldb.SystemClock()),
			ttldb.WithMonitor(ttldb.MonitorOptions{Interval: 5 * time.Millisecond}),
		}
	}, false, func(id string) *raft.Config {
		rc := raft.DefaultConfig()
		rc.LocalID = raft.ServerID(id)
		return rc
	}, tcp)
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
			_, err := c.leader().node.DB().Collection("f").InsertMany(context.Background(), docs)
			if errors.Is(err, ttldb.ErrDuplicateKey) {
				return nil
			}
			return err
		})
		c.settled()
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
		c.settled()
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(times[(len(times)*95+99)/100-1].Milliseconds()), "p95-ms")
	rc := raft.DefaultConfig()
	b.ReportMetric(float64((2*rc.HeartbeatTimeout + rc.ElectionTimeout).Milliseconds()), "target-ms")
}

// settled waits until every node up has applied what the leader has,
// polling the leader's last op each time: unlike converged, it allows the
// leader's monitor to commit deletions meanwhile.
func (c *cluster) settled() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		want, same := c.leader().node.DB().LastSeq(), true
		for _, tn := range c.up() {
			same = same && tn.node.DB().LastSeq() == want
		}
		if same {
			return
		}
		require.True(c.t, time.Now().Before(deadline), "followers did not catch up")
		time.Sleep(time.Millisecond)
	}
}
