package ttldb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// BenchmarkMetrics reads Metrics with a backlog of expired documents not
// yet deleted (the monitor is off): the cost of a scrape must not grow with
// the backlog. The dates are spread over backlog/1000 seconds, one
// document a millisecond.
func BenchmarkMetrics(b *testing.B) {
	for _, backlog := range []int{0, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("backlog=%.0e", float64(backlog)), func(b *testing.B) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clk := ttltest.NewClock(start)
			db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			c := db.Collection("sessions")
			if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)}); err != nil {
				b.Fatal(err)
			}
			batch := make([]ttldb.Document, 0, 10_000)
			for i := range backlog {
				batch = append(batch, ttldb.Document{"_id": i, "at": start.Add(time.Duration(i) * time.Millisecond)})
				if len(batch) == cap(batch) || i == backlog-1 {
					if _, err := c.InsertMany(batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			clk.Advance(time.Duration(backlog)*time.Millisecond + time.Hour)
			if got := db.Metrics().TTL.Backlog; got != int64(backlog) {
				b.Fatalf("backlog %d, want %d", got, backlog)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = db.Metrics()
			}
		})
	}
}

// BenchmarkInsertOneTTL inserts documents with a date into a collection of
// 100,000 with a TTL index: the write path that keeps the expiry tree and
// its counts. Dates advance 1 ms per document.
func BenchmarkInsertOneTTL(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db, err := ttldb.Open(ttldb.WithClock(ttltest.NewClock(start)), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := db.Collection("sessions")
	if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(3600)}); err != nil {
		b.Fatal(err)
	}
	const preload = 100_000
	batch := make([]ttldb.Document, 0, preload)
	for i := range preload {
		batch = append(batch, ttldb.Document{"_id": i, "at": start.Add(time.Duration(i) * time.Millisecond)})
	}
	if _, err := c.InsertMany(batch); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := preload
	for b.Loop() {
		if _, err := c.InsertOne(ttldb.Document{"_id": i, "at": start.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
