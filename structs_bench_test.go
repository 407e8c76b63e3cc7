package ttldb_test

import (
	"context"
	"testing"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

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
					_, err = c.InsertOne(ttldb.Document{"_id": i, "g": i % 1000, "n": int64(i), "s": "payload", "at": at})
				} else {
					_, err = c.InsertOne(&shaped{ID: i, G: i % 1000, N: int64(i), S: "payload", At: at})
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
				if err := c.FindOne(ttldb.Document{"_id": (i * 7919) % size}).Decode(&u); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("document", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := c.FindOne(ttldb.Document{"_id": (i * 7919) % size}).Document(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	})
}
