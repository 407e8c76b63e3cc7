package ttldb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// The aggregation pipeline's targets, measured side by side:
//
//	go test -run '^$' -bench 'BenchmarkAggregate' -benchtime 5x -count 6 .
//
// BenchmarkAggregateMatchGroup: a $match on an indexed field then a $group
// by a field with $sum, over 1M documents (200,000 match), against the
// hand-written loop a user would write instead: Find with the same
// filter (the same index), each result decoded into a struct, a map of
// sums. Target: pipeline ≤ 1.5× the loop.
//
// BenchmarkAggregateLastReading: a time-series collection of 1M
// measurements from 1,000 sensors over 1,000 minutes (granularity
// seconds: buckets of an hour); "the last reading of each sensor over the
// last hour". The test
// TestAggregateTimeSeriesReadsOnlyTheHour asserts it unpacks only the
// hour's buckets.

const aggBenchDocs = 1_000_000

func loadAggEvents(b *testing.B, n int) *ttldb.Collection {
	b.Helper()
	db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}),
		ttldb.WithClock(ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	c := db.Collection("events")
	if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("status")}}); err != nil {
		b.Fatal(err)
	}
	batch := make([]ttldb.Document, 0, 10_000)
	for i := range n {
		batch = append(batch, ttldb.Document{"_id": i, "status": int32(i % 5), "route": fmt.Sprintf("/r%d", i%97), "bytes": int64(i % 1000), "ua": "Mozilla/5.0"})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := c.InsertMany(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return c
}

func BenchmarkAggregateMatchGroup(b *testing.B) {
	c := loadAggEvents(b, aggBenchDocs)
	ctx := context.Background()
	want := map[string]int64{}
	b.Run("pipeline", func(b *testing.B) {
		pipeline := bson.A{
			bson.D{{Key: "$match", Value: bson.D{{Key: "status", Value: 2}}}},
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$route"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$bytes"}}}}}},
		}
		b.ReportAllocs()
		for b.Loop() {
			out := aggregateAll(b, c, pipeline)
			if len(out) != 97 {
				b.Fatalf("%d groups", len(out))
			}
			for _, d := range out {
				want[d["_id"].(string)] = d["total"].(int64)
			}
		}
	})
	b.Run("loop", func(b *testing.B) {
		type event struct {
			Route string `bson:"route"`
			Bytes int64  `bson:"bytes"`
		}
		b.ReportAllocs()
		for b.Loop() {
			cur, err := c.Find(ctx, bson.D{{Key: "status", Value: 2}})
			if err != nil {
				b.Fatal(err)
			}
			sums := map[string]int64{}
			for cur.Next(ctx) {
				var e event
				if err := cur.Decode(&e); err != nil {
					b.Fatal(err)
				}
				sums[e.Route] += e.Bytes
			}
			if err := cur.Err(); err != nil {
				b.Fatal(err)
			}
			if len(sums) != 97 || len(want) > 0 && sums["/r7"] != want["/r7"] {
				b.Fatalf("loop and pipeline disagree: %d groups, %d vs %d", len(sums), sums["/r7"], want["/r7"])
			}
		}
	})
}

// loadAggReadings fills a time-series collection with n measurements
// from sensors sensors, one per sensor per minute, ending at the clock's
// time; it returns the collection and the clock.
func loadAggReadings(tb testing.TB, n, sensors int) (*ttldb.Collection, *ttltest.Clock) {
	tb.Helper()
	minutes := n / sensors
	end := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	clock := ttltest.NewClock(end)
	db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}), ttldb.WithClock(clock))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	c, err := db.CreateCollection(context.Background(), "readings", ttldb.CollectionOptions{
		TimeSeries: &ttldb.TimeSeriesOptions{TimeField: "t", MetaField: "sensor", Granularity: ttldb.GranularitySeconds},
	})
	if err != nil {
		tb.Fatal(err)
	}
	start := end.Add(-time.Duration(minutes) * time.Minute)
	batch := make([]ttldb.Document, 0, 10_000)
	for m := range minutes {
		for s := range sensors {
			batch = append(batch, ttldb.Document{"sensor": s, "t": start.Add(time.Duration(m) * time.Minute), "v": float64(m*sensors + s)})
			if len(batch) == cap(batch) {
				if _, err := c.InsertMany(context.Background(), batch); err != nil {
					tb.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	if len(batch) > 0 {
		if _, err := c.InsertMany(context.Background(), batch); err != nil {
			tb.Fatal(err)
		}
	}
	return c, clock
}

// lastReadingPipeline is "the last reading of each sensor over the last
// hour" before now.
func lastReadingPipeline(now time.Time) bson.A {
	return bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "t", Value: bson.D{{Key: "$gte", Value: now.Add(-time.Hour)}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "t", Value: 1}}}},
		bson.D{{Key: "$group", Value: bson.D{
			{Key: "_id", Value: "$sensor"},
			{Key: "t", Value: bson.D{{Key: "$last", Value: "$t"}}},
			{Key: "v", Value: bson.D{{Key: "$last", Value: "$v"}}},
		}}},
	}
}

func BenchmarkAggregateLastReading(b *testing.B) {
	c, clock := loadAggReadings(b, aggBenchDocs, 1000)
	pipeline := lastReadingPipeline(clock.Now())
	b.ReportAllocs()
	for b.Loop() {
		if out := aggregateAll(b, c, pipeline); len(out) != 1000 {
			b.Fatalf("%d sensors", len(out))
		}
	}
}
