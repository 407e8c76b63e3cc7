package ttldb

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
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
						if _, err := c.InsertOne(Document{"_id": i, "g": i % 100, "s": "payload"}); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := next.Add(1)
						if _, err := c.InsertOne(Document{"_id": i, "g": i % 100, "s": "payload"}); err != nil {
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
						if _, err := c.InsertOne(Document{"_id": i, "g": i % 100, "s": "payload"}); err != nil {
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
