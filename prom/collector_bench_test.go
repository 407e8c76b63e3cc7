package prom_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/prom"
	"github.com/ttldb/ttldb/ttltest"
)

// BenchmarkScrape serves /metrics through promhttp (text format) for a DB
// of n documents under one TTL index, with all of them expired and not yet
// deleted (the monitor is off) and with none expired: a scrape must cost
// about the same. The dates are one millisecond apart.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		for _, expired := range []bool{false, true} {
			b.Run(fmt.Sprintf("docs=%.0e/expired=%v", float64(n), expired), func(b *testing.B) {
				clk := ttltest.NewClock(t0)
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
				for i := range n {
					batch = append(batch, ttldb.Document{"_id": i, "at": t0.Add(time.Duration(i) * time.Millisecond)})
					if len(batch) == cap(batch) || i == n-1 {
						if _, err := c.InsertMany(context.Background(), batch); err != nil {
							b.Fatal(err)
						}
						batch = batch[:0]
					}
				}
				if expired {
					clk.Advance(time.Duration(n)*time.Millisecond + time.Hour)
				}
				want := int64(0)
				if expired {
					want = int64(n)
				}
				if got := db.Metrics().TTL.Backlog; got != want {
					b.Fatalf("backlog %d, want %d", got, want)
				}
				reg := prometheus.NewRegistry()
				reg.MustRegister(prom.NewCollector(db, prometheus.Labels{"db": "sessions"}))
				h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatal(rec.Code)
					}
				}
			})
		}
	}
}
