package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ttldb/ttldb/internal/testutil"
)

// BenchmarkWatchMassExpiry is BenchmarkMassExpiry at 1e6 (one TTL pass
// deleting a million expired documents) with no change stream and with
// one, at the default buffer size, reading every event on its own
// goroutine while the pass runs. The timer covers the pass; the stream
// must then have received every deletion, each marked Expired (checked;
// delivered-ms reports when its last event arrived, from the pass's
// start). It also reports the process's CPU time from the pass's start
// to the stream's last event (cpu-ms: the pass, the stream and the
// collector; less stretched than wall time by other processes' load),
// the monitor's pauses between batches (MonitorOptions.BatchPause: taken
// when goroutines waited for a processor) and the collections the pass
// saw (gcs).
// Compare the sub-benchmarks of one run:
//
//	go test -run '^$' -bench 'WatchMassExpiry' -benchtime 1x -count 5 .
func BenchmarkWatchMassExpiry(b *testing.B) {
	const n = 1_000_000
	for _, watchers := range []int{0, 1} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			var passTime, deliveredTime time.Duration
			var pauses int
			var gcs uint32
			var cpu int64
			b.ReportAllocs()
			b.StopTimer()
			for range b.N {
				db, _, _ := massExpiryDB(b, n, 0)
				ctx := context.Background()
				type result struct {
					expired int
					at      time.Time
					err     error
				}
				done := make(chan result, 1)
				if watchers == 1 {
					cs, err := db.Watch(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					go func() {
						var r result
						for r.expired < n && cs.Next(ctx) {
							if ev := cs.Event(); ev.OperationType == OperationDelete && ev.Expired {
								r.expired++
							}
						}
						r.at, r.err = time.Now(), cs.Err()
						done <- r
					}()
				}
				p0 := db.monitor.pace.pauses
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				gc0 := ms.NumGC
				cpu0 := testutil.ProcessCPU()
				start := time.Now()
				b.StartTimer()
				res, err := db.RunTTLPass(ctx)
				b.StopTimer()
				passTime += time.Since(start)
				runtime.ReadMemStats(&ms)
				gcs += ms.NumGC - gc0
				pauses += db.monitor.pace.pauses - p0
				if err != nil || res.Deleted != n {
					b.Fatalf("deleted %d of %d: %v", res.Deleted, n, err)
				}
				if watchers == 1 {
					r := <-done
					if r.expired != n || r.err != nil {
						b.Fatalf("the stream received %d of %d deletions: %v", r.expired, n, r.err)
					}
					deliveredTime += r.at.Sub(start)
				}
				cpu += testutil.ProcessCPU() - cpu0
				_ = db.Close()
			}
			b.ReportMetric(float64(n*b.N)/passTime.Seconds(), "docs/s")
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms")
			b.ReportMetric(float64(pauses)/float64(b.N), "pauses")
			b.ReportMetric(float64(gcs)/float64(b.N), "gcs")
			if watchers == 1 {
				b.ReportMetric(float64(deliveredTime.Milliseconds())/float64(b.N), "delivered-ms")
			}
		})
	}
}
