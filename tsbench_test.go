package ttldb_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// The time-series benchmarks store 1M measurements across 1,000 sensors
// (one day: a reading per sensor every 86.4 s), in a time-series collection
// (granularity seconds: 1-hour buckets) and, for comparison, in a plain
// collection with a TTL index on the time field. They report:
//
//   - insert:  measurements/s, and heap bytes per measurement held;
//   - expire:  measurements/s removed when the whole day expires at once,
//     with a DeleteObserver attached that receives every measurement's _id
//     (DeleteEvent.IDs, what a plain collection's observer gets), for both
//     kinds in one run, and the time-series rate over the plain one
//     (x-plain); and with an observer that also decodes every measurement
//     (DeleteEvent.Measurements: x-plain-decoded);
//   - trim (time-series with PreciseExpiry): measurements/s trimmed out of
//     buckets when half of each bucket expires.
//
// go test -run '^$' -bench TimeSeries -benchtime 1x .
const (
	tsBenchSensors      = 1000
	tsBenchMeasurements = 1_000_000
)

var tsBenchStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var tsBenchNames = func() []string {
	out := make([]string, tsBenchSensors)
	for i := range out {
		out[i] = fmt.Sprintf("sensor-%04d", i)
	}
	return out
}()

func tsBenchDocs(i int) ttldb.Document {
	sensor := i % tsBenchSensors
	step := i / tsBenchSensors
	return ttldb.Document{
		"timestamp": tsBenchStart.Add(time.Duration(step) * 86400 * time.Second / (tsBenchMeasurements / tsBenchSensors)),
		"sensor":    tsBenchNames[sensor],
		"temp":      20 + float64(i%100)/10,
	}
}

// tsBenchLoad opens a DB on a fake clock and fills collection "m" (a
// time-series collection if ts, else a plain one with a TTL index),
// returning the insert time and heap bytes per measurement.
func tsBenchLoad(b *testing.B, ts, precise bool, opts ...ttldb.Option) (*ttldb.DB, *ttltest.Clock, *ttldb.Collection, time.Duration, float64) {
	b.Helper()
	clk := ttltest.NewClock(tsBenchStart)
	db, err := ttldb.Open(append([]ttldb.Option{ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true})}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	var c *ttldb.Collection
	if ts {
		c, err = db.CreateCollection("m", ttldb.CollectionOptions{
			TimeSeries:         &ttldb.TimeSeriesOptions{TimeField: "timestamp", MetaField: "sensor", PreciseExpiry: precise},
			ExpireAfterSeconds: ttldb.Seconds(86400),
		})
	} else {
		c = db.Collection("m")
		_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("timestamp")}, ExpireAfterSeconds: ttldb.Seconds(86400)})
	}
	if err != nil {
		b.Fatal(err)
	}
	// Documents are made batch by batch (the same cost for both kinds), so
	// that the heap measured afterwards holds only what the DB keeps.
	batch := make([]ttldb.Document, 0, 1000)
	before := tsHeapAlloc()
	start := time.Now()
	for i := range tsBenchMeasurements {
		batch = append(batch, tsBenchDocs(i))
		if len(batch) == cap(batch) {
			if _, err := c.InsertMany(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	took := time.Since(start)
	batch = nil
	perDoc := (float64(tsHeapAlloc()) - float64(before)) / tsBenchMeasurements
	return db, clk, c, took, perDoc
}

func tsHeapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func BenchmarkTimeSeries(b *testing.B) {
	for _, kind := range []string{"plain", "timeseries"} {
		ts := kind == "timeseries"
		b.Run("insert/"+kind, func(b *testing.B) {
			for b.Loop() {
				db, _, _, took, perDoc := tsBenchLoad(b, ts, false)
				b.ReportMetric(tsBenchMeasurements/took.Seconds(), "measurements/s")
				b.ReportMetric(perDoc, "heapB/measurement")
				db.Close()
			}
		})
	}
	// The three expiries run in one process, one after the other, so that
	// their ratio holds on a shared, noisy machine.
	b.Run("expire", func(b *testing.B) {
		for b.Loop() {
			plain := tsBenchExpire(b, false, false)
			ids := tsBenchExpire(b, true, false)
			decoded := tsBenchExpire(b, true, true)
			b.ReportMetric(plain, "plain-measurements/s")
			b.ReportMetric(ids, "ts-measurements/s")
			b.ReportMetric(decoded, "ts-decoded-measurements/s")
			b.ReportMetric(ids/plain, "x-plain")
			b.ReportMetric(decoded/plain, "x-plain-decoded")
		}
	})
	b.Run("trim/timeseries-precise", func(b *testing.B) {
		for b.Loop() {
			db, clk, c, _, _ := tsBenchLoad(b, true, true)
			// A pass a minute through the first hour past E: each trims
			// the readings of that minute out of the 1,000 sensors' first
			// buckets (about 700 buckets rewritten per pass).
			before, _ := c.CountDocuments(context.Background(), nil)
			var took time.Duration
			for m := 1; m <= 60; m++ {
				clk.Set(tsBenchStart.Add(86400*time.Second + time.Duration(m)*time.Minute))
				start := time.Now()
				if _, err := db.RunTTLPass(context.Background()); err != nil {
					b.Fatal(err)
				}
				took += time.Since(start)
			}
			after, _ := c.CountDocuments(context.Background(), nil)
			b.ReportMetric(float64(before-after)/took.Seconds(), "measurements/s")
			b.ReportMetric(float64(before-after), "trimmed")
			db.Close()
		}
	})
}

// tsBenchExpire loads the measurements, expires them all in one pass with
// a DeleteObserver attached and returns the measurements removed per
// second. The observer receives every measurement: its _id (what a plain
// collection's observer gets), and, if decode, the whole measurement
// decoded from its bucket.
func tsBenchExpire(b *testing.B, ts, decode bool) float64 {
	seen := 0
	obs := ttldb.WithDeleteObserver(func(ev ttldb.DeleteEvent) {
		if !decode {
			seen += len(ev.IDs)
			return
		}
		for m := range ev.Measurements() {
			if m["temp"] != nil {
				seen++
			}
		}
	})
	db, clk, _, _, _ := tsBenchLoad(b, ts, false, obs)
	defer db.Close()
	clk.Set(tsBenchStart.Add(3 * 86400 * time.Second)) // the whole day (and its buckets' span) expired
	start := time.Now()
	if _, err := db.RunTTLPass(context.Background()); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	if seen != tsBenchMeasurements {
		b.Fatalf("observer saw %d measurements, want %d", seen, tsBenchMeasurements)
	}
	return tsBenchMeasurements / took.Seconds()
}
