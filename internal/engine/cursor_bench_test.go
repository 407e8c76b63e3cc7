package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ttldb/ttldb/ttltest"
)

// loadReadBench opens a DB whose collection holds size documents
// {_id: i, g: i % (size/10), n: (i * 7919) % size, s: "payload"}, g indexed,
// n not (the same shape as the root benchmarks' collection).
func loadReadBench(b *testing.B, size int) (*DB, *Collection) {
	b.Helper()
	db, err := Open(WithClock(ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))),
		WithMonitor(MonitorOptions{Disabled: true}))
	if err != nil {
		b.Fatal(err)
	}
	c := db.Collection("bench")
	if _, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("g")}}); err != nil {
		b.Fatal(err)
	}
	batch := make([]Document, 0, 10_000)
	for i := range size {
		batch = append(batch, Document{"_id": i, "g": i % (size / 10), "n": (i * 7919) % size, "s": "payload"})
		if len(batch) == cap(batch) || i == size-1 {
			if _, err := c.InsertMany(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return db, c
}

func readBenchBySize(b *testing.B, run func(b *testing.B, c *Collection, size int)) {
	for _, size := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("docs=%d", size), func(b *testing.B) {
			db, c := loadReadBench(b, size)
			defer db.Close()
			run(b, c, size)
		})
	}
}

type benchRow struct {
	ID int    `bson:"_id"`
	G  int    `bson:"g"`
	N  int    `bson:"n"`
	S  string `bson:"s"`
}

// BenchmarkCursor reads 10k results (Limit 10000, natural order) with the
// cursor, decoding each into a reused struct or map, against the slice of
// Documents Find used to return (All into a []Document, which decodes and
// keeps every result as Find did); and the whole collection (Find(nil))
// through the cursor into a reused struct, against the same as a slice.
// B/op of the whole-collection cases is the memory a full read holds.
func BenchmarkCursor(b *testing.B) {
	ctx := context.Background()
	readBenchBySize(b, func(b *testing.B, c *Collection, size int) {
		ten := FindOptions{Limit: 10_000}
		b.Run("10k/next-decode-struct", func(b *testing.B) {
			b.ReportAllocs()
			var r benchRow
			for b.Loop() {
				cur, err := c.Find(ctx, nil, ten)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for cur.Next(ctx) {
					if err := cur.Decode(&r); err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != 10_000 {
					b.Fatal(n)
				}
			}
		})
		b.Run("10k/next-decode-map", func(b *testing.B) {
			b.ReportAllocs()
			m := Document{}
			for b.Loop() {
				cur, _ := c.Find(ctx, nil, ten)
				for cur.Next(ctx) {
					if err := cur.Decode(&m); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("10k/slice", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cur, _ := c.Find(ctx, nil, ten)
				var docs []Document
				if err := cur.All(ctx, &docs); err != nil || len(docs) != 10_000 {
					b.Fatal(err, len(docs))
				}
			}
		})
		b.Run("all/next-decode-struct", func(b *testing.B) {
			b.ReportAllocs()
			var r benchRow
			for b.Loop() {
				cur, _ := c.Find(ctx, nil)
				n := 0
				for cur.Next(ctx) {
					if err := cur.Decode(&r); err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != size {
					b.Fatal(n)
				}
			}
		})
		b.Run("all/slice", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cur, _ := c.Find(ctx, nil)
				var docs []Document
				if err := cur.All(ctx, &docs); err != nil || len(docs) != size {
					b.Fatal(err, len(docs))
				}
			}
		})
	})
}

// BenchmarkSortLimit sorts on an unindexed field with Limit 10 (and with
// Skip 100): the bounded heap against the full sort of every match that
// ran before it (topKOff), in one run.
func BenchmarkSortLimit(b *testing.B) {
	ctx := context.Background()
	readBenchBySize(b, func(b *testing.B, c *Collection, size int) {
		for _, o := range []FindOptions{
			{Sort: []IndexKey{Desc("n")}, Limit: 10},
			{Sort: []IndexKey{Asc("n")}, Skip: 100, Limit: 10},
		} {
			for _, full := range []bool{true, false} {
				name := fmt.Sprintf("skip=%d/heap", o.Skip)
				if full {
					name = fmt.Sprintf("skip=%d/fullsort", o.Skip)
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					topKOff = full
					defer func() { topKOff = false }()
					for b.Loop() {
						cur, err := c.Find(ctx, nil, o)
						if err != nil {
							b.Fatal(err)
						}
						var r benchRow
						n := 0
						for cur.Next(ctx) {
							if err := cur.Decode(&r); err != nil {
								b.Fatal(err)
							}
							if n == 0 && o.Skip == 0 && r.N != size-1 {
								b.Fatalf("first %d", r.N)
							}
							n++
						}
						if n != 10 {
							b.Fatal(n)
						}
					}
				})
			}
		}
	})
}
