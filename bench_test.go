package ttldb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// benchSizes are the pre-loaded collection sizes of the core benchmarks.
var benchSizes = []int{100_000, 1_000_000}

// benchGroups is how many distinct values the indexed field g takes: an
// equality on it returns size/benchGroups (about 10) documents.
func benchGroups(size int) int { return size / 10 }

// loadBench opens a DB whose collection "bench" holds size documents
// {_id: i, g: i % (size/10), n: i, s: "…"} with an index on g, on a fake
// clock and with the monitor off.
func loadBench(b *testing.B, size int) (*ttldb.DB, *ttldb.Collection) {
	b.Helper()
	return loadBenchWith(b, size, ttldb.WithClock(ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
}

// loadBenchWith is loadBench with opts instead of the fake clock.
func loadBenchWith(b *testing.B, size int, opts ...ttldb.Option) (*ttldb.DB, *ttldb.Collection) {
	b.Helper()
	db, err := ttldb.Open(append([]ttldb.Option{ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true})}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	c := db.Collection("bench")
	if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("g")}}); err != nil {
		b.Fatal(err)
	}
	groups := benchGroups(size)
	batch := make([]ttldb.Document, 0, 10_000)
	for i := range size {
		batch = append(batch, ttldb.Document{"_id": i, "g": i % groups, "n": i, "s": "payload"})
		if len(batch) == cap(batch) || i == size-1 {
			if _, err := c.InsertMany(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return db, c
}

func benchBySize(b *testing.B, run func(b *testing.B, c *ttldb.Collection, size int)) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("docs=%d", size), func(b *testing.B) {
			db, c := loadBench(b, size) // once per size: b.Loop runs the body once
			defer db.Close()
			b.ReportAllocs()
			run(b, c, size)
		})
	}
}

// BenchmarkInsertOne inserts new documents (with an _id and one indexed
// field) into a pre-loaded collection.
func BenchmarkInsertOne(b *testing.B) {
	benchBySize(b, func(b *testing.B, c *ttldb.Collection, size int) {
		i := size
		groups := benchGroups(size)
		for b.Loop() {
			if _, err := c.InsertOne(context.Background(), ttldb.Document{"_id": i, "g": i % groups, "n": i, "s": "payload"}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkFindOneByID looks documents up by _id.
func BenchmarkFindOneByID(b *testing.B) {
	benchBySize(b, func(b *testing.B, c *ttldb.Collection, size int) {
		i := 0
		for b.Loop() {
			if _, err := c.FindOne(context.Background(), ttldb.Document{"_id": (i * 7919) % size}).Document(); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkFindIndexed runs an equality on the indexed field g, returning
// 10 documents.
func BenchmarkFindIndexed(b *testing.B) {
	benchBySize(b, func(b *testing.B, c *ttldb.Collection, size int) {
		groups := benchGroups(size)
		ex, err := c.Explain(context.Background(), ttldb.Document{"g": 1})
		if err != nil || ex.Stage != "IXSCAN" || ex.NReturned != 10 {
			b.Fatalf("plan %+v, %v", ex, err)
		}
		i := 0
		for b.Loop() {
			docs, err := findDocs(c, ttldb.Document{"g": (i * 7919) % groups})
			if err != nil || len(docs) != 10 {
				b.Fatalf("%d docs, %v", len(docs), err)
			}
			i++
		}
	})
}

// BenchmarkUpdateOne $sets the indexed field of a document found by _id,
// which moves its index entry.
func BenchmarkUpdateOne(b *testing.B) {
	benchBySize(b, func(b *testing.B, c *ttldb.Collection, size int) {
		groups := benchGroups(size)
		i := 0
		for b.Loop() {
			res, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": (i * 7919) % size}, ttldb.Document{"$set": ttldb.Document{"g": (i * 31) % groups, "n": -i}})
			if err != nil || res.MatchedCount != 1 {
				b.Fatalf("%+v, %v", res, err)
			}
			i++
		}
	})
}

// BenchmarkInsertMultikey inserts, then deletes, a document whose indexed
// field is an array of n distinct elements (n index keys): the time one
// write holds the collection's write lock for it.
func BenchmarkInsertMultikey(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 16} {
		b.Run(fmt.Sprintf("elems=%d", n), func(b *testing.B) {
			db, err := ttldb.Open(ttldb.WithClock(ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))),
				ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			c := db.Collection("mk")
			if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("tags")}}); err != nil {
				b.Fatal(err)
			}
			tags := make([]any, n)
			for i := range tags {
				tags[i] = (i * 7919) % n
			}
			doc := ttldb.Document{"_id": 1, "tags": tags}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.InsertOne(context.Background(), doc); err != nil {
					b.Fatal(err)
				}
				if n, err := c.DeleteOne(context.Background(), ttldb.Document{"_id": 1}); err != nil || n.DeletedCount != 1 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// BenchmarkRefresh is the session refresh at 1e5 and 1e6 documents: one
// FindOneAndUpdate with $currentDate returning the document after, against
// the two calls it replaces (UpdateOne, then FindOne to read it back),
// both by _id and decoded into a reused struct.
func BenchmarkRefresh(b *testing.B) {
	update := ttldb.Document{"$currentDate": ttldb.Document{"seen": true}}
	benchBySize(b, func(b *testing.B, c *ttldb.Collection, size int) {
		for _, way := range []string{"FindOneAndUpdate", "UpdateOne+FindOne"} {
			b.Run(way, func(b *testing.B) {
				var u benchUser
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					filter := ttldb.Document{"_id": (i * 7919) % size}
					var err error
					if way == "FindOneAndUpdate" {
						err = c.FindOneAndUpdate(context.Background(), filter, update, ttldb.FindOneAndUpdateOptions{ReturnDocument: ttldb.After}).Decode(&u)
					} else {
						if _, err = c.UpdateOne(context.Background(), filter, update); err == nil {
							err = c.FindOne(context.Background(), filter).Decode(&u)
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	})
}

// liveHeap returns the live heap bytes and objects after two collections
// (the second sweeps what the first marked dead, so only live objects
// count).
func liveHeap() (bytes, objects uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := []metrics.Sample{{Name: "/gc/heap/objects:objects"}}
	metrics.Read(s)
	return ms.HeapAlloc, s[0].Value.Uint64()
}

// memoryDocs fills c with n documents shaped like the bench's workload 4:
// {_id: int, user, kind, bytes, lastModifiedDate}, under a TTL index on
// lastModifiedDate.
func memoryDocs(b *testing.B, c *ttldb.Collection, n int) {
	b.Helper()
	if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")}, ExpireAfterSeconds: ttldb.Seconds(3600)}); err != nil {
		b.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	users := make([]string, 1000)
	for i := range users {
		users[i] = fmt.Sprintf("user-%04d", i)
	}
	batch := make([]ttldb.Document, 0, 10_000)
	for i := range n {
		batch = append(batch, ttldb.Document{"_id": i, "user": users[i%len(users)], "kind": "click", "bytes": i % 4096,
			"lastModifiedDate": base.Add(time.Duration(i) * time.Microsecond)})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := c.InsertMany(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkStorageMemory stores n documents with a TTL index and reports
// the live heap the DB adds per document (B/doc) and the heap objects per
// document (objs/doc): the objects every GC cycle must mark; and the bytes
// per document the DB accounts (acct-B/doc, Metrics().Storage), to compare
// with B/doc. Run it with -benchtime 1x.
func BenchmarkStorageMemory(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("docs=%d", n), func(b *testing.B) {
			var bytesPer, objsPer, acctPer float64
			for range b.N {
				b.StopTimer()
				bytes0, objs0 := liveHeap()
				b.StartTimer()
				db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
				if err != nil {
					b.Fatal(err)
				}
				memoryDocs(b, db.Collection("events"), n)
				b.StopTimer()
				bytes1, objs1 := liveHeap()
				bytesPer = float64(int64(bytes1)-int64(bytes0)) / float64(n)
				objsPer = float64(int64(objs1)-int64(objs0)) / float64(n)
				acctPer = float64(db.Metrics().Storage.Bytes) / float64(n)
				runtime.KeepAlive(db)
				_ = db.Close()
			}
			b.ReportMetric(bytesPer, "B/doc")
			b.ReportMetric(objsPer, "objs/doc")
			b.ReportMetric(acctPer, "acct-B/doc")
		})
	}
}

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
					if _, err := c.InsertMany(context.Background(), batch); err != nil {
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
	if _, err := c.InsertMany(context.Background(), batch); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := preload
	for b.Loop() {
		if _, err := c.InsertOne(context.Background(), ttldb.Document{"_id": i, "at": start.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// benchUser is the struct form of the documents loadBench stores.
type benchUser struct {
	ID int    `bson:"_id"`
	G  int    `bson:"g"`
	N  int    `bson:"n"`
	S  string `bson:"s"`
}

// BenchmarkInsertOneShape inserts the same document as a map and as a
// struct into a collection with one secondary index: the struct path
// encodes straight to the stored form, and must not slow the map path.
func BenchmarkInsertOneShape(b *testing.B) {
	type shaped struct {
		ID int       `bson:"_id"`
		G  int       `bson:"g"`
		N  int64     `bson:"n"`
		S  string    `bson:"s"`
		At time.Time `bson:"at"`
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, shape := range []string{"map", "struct"} {
		b.Run(shape, func(b *testing.B) {
			db, err := ttldb.Open(ttldb.WithClock(ttltest.NewClock(at)), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			c := db.Collection("bench")
			if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("g")}}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if shape == "map" {
					_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": i, "g": i % 1000, "n": int64(i), "s": "payload", "at": at})
				} else {
					_, err = c.InsertOne(context.Background(), &shaped{ID: i, G: i % 1000, N: int64(i), S: "payload", At: at})
				}
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkFindOneDecode reads documents by _id at 1e5 and 1e6 stored
// documents: decoded into a reused struct (one allocation for its string
// field) against read as a new Document.
func BenchmarkFindOneDecode(b *testing.B) {
	benchBySize(b, func(b *testing.B, c *ttldb.Collection, size int) {
		b.Run("struct", func(b *testing.B) {
			b.ReportAllocs()
			var u benchUser
			i := 0
			for b.Loop() {
				if err := c.FindOne(context.Background(), ttldb.Document{"_id": (i * 7919) % size}).Decode(&u); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("document", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := c.FindOne(context.Background(), ttldb.Document{"_id": (i * 7919) % size}).Document(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	})
}

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
		c, err = db.CreateCollection(context.Background(), "m", ttldb.CollectionOptions{
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
	before := testutil.HeapAlloc()
	start := time.Now()
	for i := range tsBenchMeasurements {
		batch = append(batch, tsBenchDocs(i))
		if len(batch) == cap(batch) {
			if _, err := c.InsertMany(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	took := time.Since(start)
	batch = nil
	perDoc := (float64(testutil.HeapAlloc()) - float64(before)) / tsBenchMeasurements
	return db, clk, c, took, perDoc
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
				before := testutil.HeapAlloc()
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
				c, err := db.CreateCollection(context.Background(), "m", ttldb.CollectionOptions{TimeSeries: &ttldb.TimeSeriesOptions{TimeField: "timestamp", MetaField: "sensor"}})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				for _, d := range docs {
					if _, err := c.InsertOne(context.Background(), d); err != nil {
						b.Fatal(err)
					}
				}
				took := time.Since(start)
				docs, times = nil, nil
				perDoc := (float64(testutil.HeapAlloc()) - float64(before)) / n
				info, _, err := c.TimeSeriesInfo(context.Background())
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

// loadWatchBench is loadBench on the system clock, which streams' waits
// for a batch (MaxAwaitTime) run on.
//
// Its change-stream buffer holds 65,536 ops rather than the default 8,192:
// on 2 shared cores a reader among four can go unscheduled for longer
// than 8,192 inserts take (about 25 ms), lose its place and fail the run.
func loadWatchBench(b *testing.B, size int) (*ttldb.DB, *ttldb.Collection) {
	b.Helper()
	return loadBenchWith(b, size, ttldb.WithChangeStreamBuffer(ttldb.ChangeStreamBufferOptions{Size: 1 << 16}))
}

// BenchmarkWatchInsert is BenchmarkInsertOne (1e5 documents pre-loaded,
// on the system clock)
// with 0, 1 and 4 change streams attached, each reading every event on
// its own goroutine as the inserts run, at the default (spinning between
// ops while they come fast, else woken at the next commit) or woken every
// 64 commits (BatchSize 64). With none attached, writes build no ops.
// After the timed loop each stream must have read every insert (checked,
// not timed). cpu-ns/op is the process's CPU time per insert until every
// stream has read them all: the writer's, the streams' (spinning
// included) and the collector's. Compare the sub-benchmarks of one run:
//
//	go test -run '^$' -bench 'WatchInsert' -count 8 .
func BenchmarkWatchInsert(b *testing.B) {
	const size = 100_000
	for _, run := range []struct{ watchers, batch int }{{0, 0}, {1, 0}, {4, 0}, {1, 64}, {4, 64}} {
		watchers := run.watchers
		name := fmt.Sprintf("watchers=%d", watchers)
		if run.batch > 0 {
			name += fmt.Sprintf("/batch=%d", run.batch)
		}
		b.Run(name, func(b *testing.B) {
			db, c := loadWatchBench(b, size)
			defer db.Close()
			ctx := context.Background()
			var wg sync.WaitGroup
			read := make([]int, watchers)
			errs := make([]error, watchers)
			streams := make([]*ttldb.ChangeStream, watchers)
			for w := range watchers {
				cs, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{BatchSize: run.batch})
				if err != nil {
					b.Fatal(err)
				}
				streams[w] = cs
				wg.Add(1)
				go func() {
					defer wg.Done()
					for read[w] < b.N && cs.Next(ctx) {
						if cs.Event().OperationType == ttldb.OperationInsert {
							read[w]++
						}
					}
					errs[w] = cs.Err()
				}()
			}
			groups := benchGroups(size)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := testutil.ProcessCPU()
			for i := size; i < size+b.N; i++ {
				if _, err := c.InsertOne(context.Background(), ttldb.Document{"_id": i, "g": i % groups, "n": i, "s": "payload"}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			wg.Wait()
			b.ReportMetric(float64(testutil.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			for w, cs := range streams {
				if read[w] != b.N || errs[w] != nil {
					b.Fatalf("watcher %d read %d of %d inserts: %v", w, read[w], b.N, errs[w])
				}
				cs.Close(context.Background())
			}
		})
	}
}
