package ttldb

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Benchmarks of the TTL monitor on the real clock (issue 4, "Example and
// measurements"). Run them with
//
//	go test -run '^$' -bench 'MassExpiry|ReadLatency' -benchtime 1x -count 3 .

// massExpiryDB opens a DB on the system clock with the monitor off and n
// expired documents (plus live ones) in collection "events".
func massExpiryDB(b *testing.B, n, live int) (*DB, *Collection, []any) {
	b.Helper()
	db, err := Open(WithMonitor(MonitorOptions{Disabled: true, Interval: 10000 * time.Hour}))
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
		if _, err := c.InsertMany(docs); err != nil {
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
		if _, err := c.FindOne(Document{"_id": ids[k%len(ids)]}).Document(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(sched))
	}
}
