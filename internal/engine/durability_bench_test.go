package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttldb/ttldb/internal/testutil"
)

// BenchmarkInsertDurable inserts small documents with one goroutine
// ("serial") and with 8 ("parallel"), in memory and into a data directory
// under each sync policy (in the test's temporary directory).
//
//	go test -run '^$' -bench BenchmarkInsertDurable -count 5
func BenchmarkInsertDurable(b *testing.B) {
	for _, mode := range []string{"memory", "SyncNever", "SyncEverySecond", "SyncAlways"} {
		for _, par := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/writers=%d", mode, par), func(b *testing.B) {
				opts := []Option{WithMonitor(MonitorOptions{Disabled: true})}
				switch mode {
				case "SyncNever":
					opts = append(opts, WithDir(b.TempDir()), WithSync(SyncNever))
				case "SyncEverySecond":
					opts = append(opts, WithDir(b.TempDir()), WithSync(SyncEverySecond))
				case "SyncAlways":
					opts = append(opts, WithDir(b.TempDir()), WithSync(SyncAlways))
				}
				db, err := Open(opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				c := db.Collection("c")
				var next atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(par)
				b.ResetTimer()
				if par == 1 {
					for i := 0; i < b.N; i++ {
						if _, err := c.InsertOne(context.Background(), Document{"_id": i, "g": i % 100, "s": "payload"}); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := next.Add(1)
						if _, err := c.InsertOne(context.Background(), Document{"_id": i, "g": i % 100, "s": "payload"}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkGroupCommit: 8 goroutines insert one document per call under
// SyncAlways, with the log's commit delay and without; it reports the
// commits per fsync beside the time per commit. Run both in one
// invocation, interleaved by -count.
//
//	go test -run '^$' -bench BenchmarkGroupCommit -count 6
func BenchmarkGroupCommit(b *testing.B) {
	for _, delay := range []bool{true, false} {
		b.Run(fmt.Sprintf("delay=%v", delay), func(b *testing.B) {
			opts := []Option{WithMonitor(MonitorOptions{Disabled: true}), WithDir(b.TempDir()), WithSync(SyncAlways)}
			if !delay {
				opts = append(opts, withoutCommitDelay())
			}
			db, err := Open(opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			c := db.Collection("c")
			var next atomic.Int64
			var wg sync.WaitGroup
			syncs0 := db.Metrics().Durability.LogSyncs
			b.ResetTimer()
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if _, err := c.InsertOne(context.Background(), Document{"_id": i, "g": i % 100, "s": "payload"}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if syncs := db.Metrics().Durability.LogSyncs - syncs0; syncs > 0 {
				b.ReportMetric(float64(b.N)/float64(syncs), "commits/fsync")
			}
		})
	}
}

// BenchmarkOpenDurable opens a data directory of 1e5 documents shaped as
// the bench's (an _id, two short strings, a number, a date under a TTL
// index), written by InsertMany of 1000 under SyncNever: from a snapshot,
// and from the log alone. It reports wall time and the process's CPU time
// per document loaded (a shared machine stretches the first far more).
//
//	go test -run '^$' -bench BenchmarkOpenDurable -benchtime 10x -count 6
func BenchmarkOpenDurable(b *testing.B) {
	const n = 100_000
	at := time.Unix(1_900_000_000, 0)
	for _, from := range []string{"snapshot", "log"} {
		b.Run("from="+from, func(b *testing.B) {
			dir := b.TempDir()
			db, err := Open(WithDir(dir), WithSync(SyncNever), WithAutoSnapshot(AutoSnapshot{Disabled: true}),
				WithMonitor(MonitorOptions{Disabled: true}))
			if err != nil {
				b.Fatal(err)
			}
			c := db.Collection("events")
			if _, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(3600)}); err != nil {
				b.Fatal(err)
			}
			docs := make([]Document, 0, 1000)
			for i := range n {
				docs = append(docs, Document{"_id": fmt.Sprintf("key-%012d", i), "user": fmt.Sprintf("user-%d", i%5000),
					"kind": "login", "bytes": i % 4096, "lastModifiedDate": at})
				if len(docs) == cap(docs) {
					if _, err := c.InsertMany(context.Background(), docs); err != nil {
						b.Fatal(err)
					}
					docs = docs[:0]
				}
			}
			if from == "snapshot" {
				if err := db.Snapshot(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			b.ResetTimer()
			var cpu int64
			for range b.N {
				cpu0 := testutil.ProcessCPU()
				db, err := Open(WithDir(dir), WithMonitor(MonitorOptions{Disabled: true}))
				cpu += testutil.ProcessCPU() - cpu0
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if got := db.Recovery(); got.SnapshotDocuments+got.LogOps == 0 {
					b.Fatal("nothing loaded")
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				b.StartTimer()
			}
			b.StopTimer()
			if cpu > 0 {
				b.ReportMetric(float64(cpu)/float64(n*b.N), "cpu-ns/doc")
			}
		})
	}
}
