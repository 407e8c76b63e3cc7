package engine

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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
//
// The dir= runs open the DB WithDir (SyncEverySecond): their stream
// delivers each batch once the log has it (durable before delivered);
// "ungated" delivers at commit, as before that rule, for comparison.
func BenchmarkWatchMassExpiry(b *testing.B) {
	const n = 1_000_000
	type run struct {
		name     string
		watchers int
		dir      bool
		ungated  bool
	}
	for _, r := range []run{{"watchers=0", 0, false, false}, {"watchers=1", 1, false, false},
		{"dir/watchers=0", 0, true, false}, {"dir/watchers=1", 1, true, false}, {"dir/watchers=1/ungated", 1, true, true}} {
		watchers := r.watchers
		b.Run(r.name, func(b *testing.B) {
			var passTime, deliveredTime time.Duration
			var pauses int
			var gcs uint32
			var cpu int64
			b.ReportAllocs()
			b.StopTimer()
			for range b.N {
				var opts []Option
				if r.dir {
					opts = append(opts, WithDir(b.TempDir()), WithAutoSnapshot(AutoSnapshot{Disabled: true}))
					if r.ungated {
						opts = append(opts, withUngatedStreams())
					}
				}
				db, _, _ := massExpiryDB(b, n, 0, opts...)
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

// BenchmarkWatchLatency measures a watcher's latency: one writer inserts a
// document, waits until the stream (on its own goroutine) delivered its
// event, and inserts the next. ns/op is the round trip; p50-us and p99-us
// are the time from the insert's call to the event's delivery. In memory,
// and WithDir under each sync policy with the rule durable before
// delivered (a stream waiting for an op has the log write it at once) and
// without it ("ungated": delivery at commit, as before the rule):
//
//	go test -run '^$' -bench 'WatchLatency' -count 6 .
func BenchmarkWatchLatency(b *testing.B) {
	type run struct {
		name string
		opts func(b *testing.B) []Option
	}
	dir := func(p SyncPolicy, ungated bool) func(b *testing.B) []Option {
		return func(b *testing.B) []Option {
			o := []Option{WithDir(b.TempDir()), WithSync(p), WithAutoSnapshot(AutoSnapshot{Disabled: true})}
			if ungated {
				o = append(o, withUngatedStreams())
			}
			return o
		}
	}
	for _, r := range []run{
		{"memory", func(*testing.B) []Option { return nil }},
		{"everysecond", dir(SyncEverySecond, false)},
		{"everysecond/ungated", dir(SyncEverySecond, true)},
		{"never", dir(SyncNever, false)},
		{"always", dir(SyncAlways, false)},
		{"always/ungated", dir(SyncAlways, true)},
	} {
		b.Run(r.name, func(b *testing.B) {
			db, err := Open(append([]Option{WithMonitor(MonitorOptions{Disabled: true})}, r.opts(b)...)...)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			c := db.Collection("c")
			if _, err := c.InsertOne(ctx, Document{"_id": -1}); err != nil {
				b.Fatal(err)
			}
			cs, err := db.Watch(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			delivered := make(chan time.Time)
			go func() {
				for cs.Next(ctx) {
					delivered <- time.Now()
				}
				close(delivered)
			}()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if _, err := c.InsertOne(ctx, Document{"_id": i, "s": "payload"}); err != nil {
					b.Fatal(err)
				}
				at, ok := <-delivered
				if !ok {
					b.Fatalf("the stream ended: %v", cs.Err())
				}
				lat = append(lat, at.Sub(start))
			}
			b.StopTimer()
			cs.Close(ctx)
			for range delivered {
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-us")
		})
	}
}

// BenchmarkWatchInsertDurable is BenchmarkWatchInsert on a DB opened
// WithDir (SyncEverySecond, 1e4 documents loaded): inserts with no stream,
// with one reading every event on its own goroutine under the rule
// durable before delivered, and with one delivered at commit ("ungated",
// as before the rule). Compare the sub-benchmarks of one run:
//
//	go test -run '^$' -bench 'WatchInsertDurable' -count 6 .
func BenchmarkWatchInsertDurable(b *testing.B) {
	for _, r := range []struct {
		name     string
		watchers int
		ungated  bool
	}{{"watchers=0", 0, false}, {"watchers=1", 1, false}, {"watchers=1/ungated", 1, true}} {
		b.Run(r.name, func(b *testing.B) {
			opts := []Option{WithMonitor(MonitorOptions{Disabled: true}), WithDir(b.TempDir()), WithAutoSnapshot(AutoSnapshot{Disabled: true}),
				WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: 1 << 16})}
			if r.ungated {
				opts = append(opts, withUngatedStreams())
			}
			db, err := Open(opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			c := db.Collection("c")
			docs := make([]Document, 10_000)
			for i := range docs {
				docs[i] = Document{"_id": -1 - i, "g": i % 100, "s": "payload"}
			}
			if _, err := c.InsertMany(ctx, docs); err != nil {
				b.Fatal(err)
			}
			done := make(chan error, 1)
			var cs *ChangeStream
			if r.watchers == 1 {
				if cs, err = db.Watch(ctx, nil); err != nil {
					b.Fatal(err)
				}
				go func() {
					read := 0
					for read < b.N && cs.Next(ctx) {
						read++
					}
					if read < b.N {
						done <- fmt.Errorf("read %d of %d: %v", read, b.N, cs.Err())
					}
					done <- nil
				}()
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := testutil.ProcessCPU()
			rec0 := db.Metrics().Durability.LogRecords
			for i := range b.N {
				if _, err := c.InsertOne(ctx, Document{"_id": i, "g": i % 100, "s": "payload"}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if cs != nil {
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				cs.Close(ctx)
			}
			b.ReportMetric(float64(testutil.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(db.Metrics().Durability.LogRecords-rec0)/float64(b.N), "records/op")
		})
	}
}
