package ttldb_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// BenchmarkTimeSeriesLateArrivals stores 20,000 measurements of one sensor
// (a 512-byte meta value) spread over 6 hours, in time order and in random
// order (late measurements go into the bucket covering them), and reports
// the heap bytes held per measurement, the buckets made, and the insert
// rate.
//
// go test -run '^$' -bench TimeSeriesLateArrivals -benchtime 1x -count 3 .
func BenchmarkTimeSeriesLateArrivals(b *testing.B) {
	const n = 20_000
	meta := strings.Repeat("s", 512)
	for _, order := range []string{"ordered", "random"} {
		b.Run(order, func(b *testing.B) {
			for range b.N {
				// The heap is measured before the documents are made and
				// after they are dropped: what remains is what the DB holds.
				before := tsHeapAlloc()
				times := make([]time.Time, n)
				for i := range times {
					times[i] = tsBenchStart.Add(6 * time.Hour * time.Duration(i) / n)
				}
				if order == "random" {
					r := rand.New(rand.NewPCG(20, 13)) // a fixed order: runs compare
					r.Shuffle(n, func(i, j int) { times[i], times[j] = times[j], times[i] })
				}
				docs := make([]ttldb.Document, n)
				for i, at := range times {
					docs[i] = ttldb.Document{"timestamp": at, "sensor": meta, "v": i}
				}
				clk := ttltest.NewClock(tsBenchStart)
				db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
				if err != nil {
					b.Fatal(err)
				}
				c, err := db.CreateCollection("m", ttldb.CollectionOptions{TimeSeries: &ttldb.TimeSeriesOptions{TimeField: "timestamp", MetaField: "sensor"}})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				for _, d := range docs {
					if _, err := c.InsertOne(d); err != nil {
						b.Fatal(err)
					}
				}
				took := time.Since(start)
				docs, times = nil, nil
				perDoc := (float64(tsHeapAlloc()) - float64(before)) / n
				info, _, err := c.TimeSeriesInfo()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(perDoc, "heapB/measurement")
				b.ReportMetric(float64(info.Buckets), "buckets")
				b.ReportMetric(n/took.Seconds(), "measurements/s")
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
