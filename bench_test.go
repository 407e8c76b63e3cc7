package ttldb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ttldb/ttldb"
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
			if _, err := c.InsertMany(batch); err != nil {
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
			if _, err := c.InsertOne(ttldb.Document{"_id": i, "g": i % groups, "n": i, "s": "payload"}); err != nil {
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
			if _, err := c.FindOne(ttldb.Document{"_id": (i * 7919) % size}).Document(); err != nil {
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
		ex, err := c.Explain(ttldb.Document{"g": 1})
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
			res, err := c.UpdateOne(ttldb.Document{"_id": (i * 7919) % size}, ttldb.Document{"$set": ttldb.Document{"g": (i * 31) % groups, "n": -i}})
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
				if _, err := c.InsertOne(doc); err != nil {
					b.Fatal(err)
				}
				if n, err := c.DeleteOne(ttldb.Document{"_id": 1}); err != nil || n != 1 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
