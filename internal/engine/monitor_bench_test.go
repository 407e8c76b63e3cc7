package engine

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttldb/ttldb/internal/testutil"
)

// Benchmarks of the TTL monitor on the real clock (issue 4, "Example and
// measurements"). Run them with
//
//	go test -run '^$' -bench 'MassExpiry|ReadLatency' -benchtime 1x -count 3 .

// massExpiryDB opens a DB on the system clock with the monitor off and n
// expired documents (plus live ones) in collection "events".
func massExpiryDB(b *testing.B, n, live int, opts ...Option) (*DB, *Collection, []any) {
	b.Helper()
	db, err := Open(append([]Option{WithMonitor(MonitorOptions{Disabled: true, Interval: 10000 * time.Hour})}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	c := db.Collection("events")
	if _, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(60)}); err != nil {
		b.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	const chunk = 10000
	docs := make([]Document, 0, chunk)
	flush := func() {
		if _, err := c.InsertMany(context.Background(), docs); err != nil {
			b.Fatal(err)
		}
		docs = docs[:0]
	}
	for i := range n {
		docs = append(docs, Document{"_id": i, "user": fmt.Sprintf("u%d", i%1000), "kind": "click", "bytes": i % 4096,
			"lastModifiedDate": old.Add(time.Duration(i) * time.Microsecond)})
		if len(docs) == chunk {
			flush()
		}
	}
	liveIDs := make([]any, live)
	for i := range live {
		id := fmt.Sprintf("live-%d", i)
		liveIDs[i] = id
		docs = append(docs, Document{"_id": id, "user": "live", "kind": "view", "bytes": i, "lastModifiedDate": time.Now().Add(time.Hour)})
		if len(docs) == chunk {
			flush()
		}
	}
	if len(docs) > 0 {
		flush()
	}
	return db, c, liveIDs
}

// BenchmarkMassExpiry times one TTL pass (default options: batches of 256,
// 50000 per index visit, 1 s per visit) deleting every document of a
// collection of n expired documents, and reports deletions per second.
func BenchmarkMassExpiry(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			deleted := 0
			subPasses := 0
			b.ReportAllocs()
			b.StopTimer()
			for range b.N {
				db, _, _ := massExpiryDB(b, n, 0)
				b.StartTimer()
				res, err := db.RunTTLPass(context.Background())
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if res.Deleted != n {
					b.Fatalf("deleted %d of %d", res.Deleted, n)
				}
				deleted += res.Deleted
				subPasses += res.SubPasses
				_ = db.Close()
			}
			b.ReportMetric(float64(deleted)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64(subPasses)/float64(b.N), "subpasses/op")
		})
	}
}

// BenchmarkReadLatencyDuringExpiry measures FindOne by _id on live
// documents while a TTL pass deletes n expired documents of the same
// collection, against the same reads with no pass running. Reads follow an
// open-loop schedule (one every 10 µs) and each latency runs from the
// read's scheduled start, not from when it was issued, so a stall counts
// for every read it delayed (no coordinated omission). n is 1e6, or 1e5
// with -short.
func BenchmarkReadLatencyDuringExpiry(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	const live = 10_000
	for _, mode := range []string{"idle", "expiry"} {
		b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) {
			var all []time.Duration
			b.StopTimer()
			for range b.N {
				db, c, liveIDs := massExpiryDB(b, n, live)
				done := make(chan struct{})
				var passDur time.Duration
				if mode == "expiry" {
					go func() {
						defer close(done)
						start := time.Now()
						res, err := db.RunTTLPass(context.Background())
						passDur = time.Since(start)
						if err != nil || res.Deleted != n {
							b.Errorf("pass: deleted %d of %d: %v", res.Deleted, n, err)
						}
					}()
				} else {
					// The same reads for a fixed second, nothing else running.
					go func() {
						defer close(done)
						time.Sleep(time.Second)
					}()
				}
				b.StartTimer()
				lat := openLoopReads(b, c, liveIDs, 10*time.Microsecond, done)
				b.StopTimer()
				all = append(all, lat...)
				if mode == "expiry" {
					b.ReportMetric(passDur.Seconds(), "pass-s")
				}
				_ = db.Close()
			}
			slices.Sort(all)
			q := func(p float64) float64 {
				i := min(int(p*float64(len(all))), len(all)-1)
				return float64(all[i]) / float64(time.Microsecond)
			}
			b.ReportMetric(float64(len(all))/float64(b.N), "reads/op")
			b.ReportMetric(q(0.50), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(q(0.999), "p99.9-µs")
			b.ReportMetric(float64(all[len(all)-1])/float64(time.Microsecond), "max-µs")
		})
	}
}

// BenchmarkDrainTradeoff is BenchmarkReadLatencyDuringExpiry's expiry
// mode under each way of giving the processor back: the default
// (adaptive: pauses on any signal of foreground work), the adaptive pacer
// with fewer signals ("none": it only yields), a duty-cycle
// ceiling (MaxDutyCycle) and a rate ceiling (MaxDeletesPerSecond). It
// reports the removal rate (docs/s) beside the open-loop reader's
// quantiles: the trade-off curve. Run with
//
//	go test -run '^$' -bench 'DrainTradeoff' -benchtime 1x -count 3 .
func BenchmarkDrainTradeoff(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	const live = 10_000
	for _, run := range []struct {
		name    string
		o       MonitorOptions
		signals paceSignals // the adaptive pacer's (0: its default)
	}{
		{"adaptive", MonitorOptions{}, 0},
		{"signals=sched", MonitorOptions{}, signalSchedLatency},
		{"signals=all", MonitorOptions{}, allPaceSignals},
		{"signals=none", MonitorOptions{}, 1 << 7}, // a bit no signal has: it listens to none
		{"duty=0.5", MonitorOptions{MaxDutyCycle: 0.5}, 0},
		{"duty=0.25", MonitorOptions{MaxDutyCycle: 0.25}, 0},
		{"rate=1M", MonitorOptions{MaxDeletesPerSecond: 1_000_000}, 0},
		{"rate=250k", MonitorOptions{MaxDeletesPerSecond: 250_000}, 0},
	} {
		b.Run(run.name, func(b *testing.B) {
			var all []time.Duration
			var passes time.Duration
			pauses := 0
			b.StopTimer()
			for range b.N {
				o := run.o
				o.Disabled, o.Interval, o.PerIndexMaxTime = true, 10000*time.Hour, time.Hour
				db, c, liveIDs := massExpiryDB(b, n, live, WithMonitor(o))
				if run.signals != 0 {
					db.monitor.pace.signals = run.signals
				}
				p0 := db.monitor.pace.pauses
				done := make(chan struct{})
				go func() {
					defer close(done)
					start := time.Now()
					res, err := db.RunTTLPass(context.Background())
					passes += time.Since(start)
					if err != nil || res.Deleted != n {
						b.Errorf("pass: deleted %d of %d: %v", res.Deleted, n, err)
					}
				}()
				b.StartTimer()
				all = append(all, openLoopReads(b, c, liveIDs, 10*time.Microsecond, done)...)
				b.StopTimer()
				pauses += db.monitor.pace.pauses - p0
				_ = db.Close()
			}
			slices.Sort(all)
			q := func(p float64) float64 {
				return float64(all[min(int(p*float64(len(all))), len(all)-1)]) / float64(time.Microsecond)
			}
			b.ReportMetric(float64(n*b.N)/passes.Seconds(), "docs/s")
			b.ReportMetric(q(0.50), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(q(0.999), "p99.9-µs")
			b.ReportMetric(float64(pauses)/float64(b.N), "pauses/op")
		})
	}
}

// openLoopReads issues FindOne by _id every interval (on schedule, however
// late the previous read returned) until done is closed, and returns each
// read's latency measured from its scheduled start.
func openLoopReads(b *testing.B, c *Collection, ids []any, interval time.Duration, done <-chan struct{}) []time.Duration {
	lat := make([]time.Duration, 0, 1<<18)
	start := time.Now()
	for k := 0; ; k++ {
		select {
		case <-done:
			return lat
		default:
		}
		sched := start.Add(time.Duration(k) * interval)
		for time.Now().Before(sched) {
			// Spin: sleeps are far coarser than 10 µs.
		}
		if _, err := c.FindOne(context.Background(), Document{"_id": ids[k%len(ids)]}).Document(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(sched))
	}
}

// BenchmarkMassExpiryBackground is BenchmarkMassExpiry through the
// background monitor as an application runs it, and as the bench's mass
// expiry trial does: DeadlineWake, a DeleteObserver counting the IDs it is
// given, n documents with string _id values and one shared date (every tie
// in the expiry tree). The timer starts when the monitor is enabled and
// stops when the observer has seen all n. The "pass" runs delete the same
// documents with RunTTLPass and no observer, for comparison.
func BenchmarkMassExpiryBackground(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		for _, mode := range []string{"monitor", "pass"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) {
				deleted := 0
				var cpu int64
				b.ReportAllocs()
				b.StopTimer()
				for range b.N {
					var seen atomic.Int64
					all := make(chan struct{})
					opts := []Option{WithMonitor(MonitorOptions{Disabled: true, DeadlineWake: true})}
					if mode == "monitor" {
						opts = append(opts, WithDeleteObserver(func(ev DeleteEvent) {
							if seen.Add(int64(len(ev.IDs))) == int64(n) {
								close(all)
							}
						}))
					}
					db, err := Open(opts...)
					if err != nil {
						b.Fatal(err)
					}
					fillExpired(b, db.Collection("events"), n)
					runtime.GC()
					cpu0 := testutil.ProcessCPU()
					b.StartTimer()
					if mode == "monitor" {
						db.SetTTLMonitorEnabled(true)
						<-all
					} else if res, err := db.RunTTLPass(context.Background()); err != nil || res.Deleted != n {
						b.Fatalf("deleted %d of %d: %v", res.Deleted, n, err)
					}
					b.StopTimer()
					cpu += testutil.ProcessCPU() - cpu0
					deleted += n
					_ = db.Close()
				}
				b.ReportMetric(float64(deleted)/b.Elapsed().Seconds(), "docs/s")
				b.ReportMetric(float64(cpu)/float64(deleted), "cpu-ns/doc")
			})
		}
	}
}

// fillExpired inserts n expired documents shaped like the bench's (string
// _id values, one shared date) in InsertMany calls of 1000.
func fillExpired(b *testing.B, c *Collection, n int) {
	b.Helper()
	if _, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(60)}); err != nil {
		b.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	docs := make([]Document, 0, 1000)
	for i := range n {
		docs = append(docs, Document{"_id": fmt.Sprintf("doc:%09d", i), "user": fmt.Sprintf("user%d", i%1000), "kind": "click", "bytes": i % 4096, "lastModifiedDate": old})
		if len(docs) == cap(docs) || i == n-1 {
			if _, err := c.InsertMany(context.Background(), docs); err != nil {
				b.Fatal(err)
			}
			docs = docs[:0]
		}
	}
}

// BenchmarkDeadlineWakeLag measures expiry lag with DeadlineWake on the
// real clock, as the bench's lag workload does: n documents whose
// thresholds are spread evenly over one second (one every 100 µs),
// inserted before the first, and for each the time from its threshold to
// the DeleteObserver's call that reports it (stamped once per batch).
// floor=default runs the default DeadlineWakeFloor.
func BenchmarkDeadlineWakeLag(b *testing.B) {
	const n = 10_000
	const spread = time.Second
	for _, floor := range []time.Duration{0, 100 * time.Microsecond, time.Millisecond} {
		name := "default"
		if floor != 0 {
			name = floor.String()
		}
		b.Run("floor="+name, func(b *testing.B) {
			var lags []time.Duration
			b.StopTimer()
			for range b.N {
				th := make(map[string]time.Time, n)
				var mu sync.Mutex
				done := make(chan struct{})
				got := 0
				obs := func(ev DeleteEvent) {
					at := time.Now()
					mu.Lock()
					defer mu.Unlock()
					for _, id := range ev.IDs {
						lags = append(lags, at.Sub(th[id.(string)]))
					}
					if got += len(ev.IDs); got == n {
						close(done)
					}
				}
				db, err := Open(WithMonitor(MonitorOptions{DeadlineWake: true, DeadlineWakeFloor: floor}), WithDeleteObserver(obs))
				if err != nil {
					b.Fatal(err)
				}
				c := db.Collection("events")
				if _, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(0)}); err != nil {
					b.Fatal(err)
				}
				first := time.Now().Add(300 * time.Millisecond)
				docs := make([]Document, n)
				mu.Lock()
				for i := range n {
					id := fmt.Sprintf("doc:%09d", (i*7919)%n) // shuffled
					t := first.Add(time.Duration((i*7919)%n) * spread / n)
					th[id] = t
					docs[i] = Document{"_id": id, "lastModifiedDate": t}
				}
				mu.Unlock()
				if _, err := c.InsertMany(context.Background(), docs); err != nil {
					b.Fatal(err)
				}
				if time.Now().After(first) {
					b.Fatal("inserts ran past the first threshold")
				}
				b.StartTimer()
				<-done
				b.StopTimer()
				_ = db.Close()
			}
			slices.Sort(lags)
			q := func(p float64) float64 {
				return float64(lags[min(int(p*float64(len(lags))), len(lags)-1)]) / float64(time.Microsecond)
			}
			b.ReportMetric(q(0.5), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(float64(lags[len(lags)-1])/float64(time.Microsecond), "max-µs")
		})
	}
}

// BenchmarkInsertManyTTL inserts n documents shaped like the bench's
// (string _id values, a TTL index on the date) into a new collection in
// InsertMany calls of 1000, as the bench's insert workload does: each call's
// documents are built outside the timed region, just before it.
func BenchmarkInsertManyTTL(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			exp := time.Now().Add(time.Hour)
			docs := make([]Document, 1000)
			var cpu int64
			b.ReportAllocs()
			b.ResetTimer()
			b.StopTimer()
			for range b.N {
				db, err := Open(WithMonitor(MonitorOptions{Disabled: true}))
				if err != nil {
					b.Fatal(err)
				}
				c := db.Collection("events")
				if _, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(3600)}); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				for i := 0; i < n; i += len(docs) {
					for j := range docs {
						docs[j] = Document{"_id": fmt.Sprintf("doc:%09d", i+j), "user": fmt.Sprintf("user%d", (i+j)%1000), "kind": "click", "bytes": (i + j) % 4096, "lastModifiedDate": exp}
					}
					cpu0 := testutil.ProcessCPU()
					b.StartTimer()
					if _, err := c.InsertMany(context.Background(), docs); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					cpu += testutil.ProcessCPU() - cpu0
				}
				_ = db.Close()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64(cpu)/float64(n*b.N), "cpu-ns/doc")
		})
	}
}
