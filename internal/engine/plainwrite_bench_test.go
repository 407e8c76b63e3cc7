package engine

import (
	"context"
	"testing"
)

// BenchmarkPlainWrites: writes outside any transaction by _id, each kind
// (the cost transactions must not add to them).
//
//	go test -run '^$' -bench BenchmarkPlainWrites -count 6 ./internal/engine
func BenchmarkPlainWrites(b *testing.B) {
	bg := context.Background()
	const n = 10000
	setup := func(b *testing.B) *Collection {
		db, err := Open(WithMonitor(MonitorOptions{Disabled: true}))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = db.Close() })
		c := db.Collection("c")
		docs := make([]Document, n)
		for i := range docs {
			docs[i] = Document{"_id": i, "v": 0, "s": "payload"}
		}
		if _, err := c.InsertMany(bg, docs); err != nil {
			b.Fatal(err)
		}
		return c
	}
	b.Run("UpdateOne", func(b *testing.B) {
		c := setup(b)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := c.UpdateOne(bg, Document{"_id": i % n}, Document{"$inc": Document{"v": 1}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReplaceOne", func(b *testing.B) {
		c := setup(b)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := c.ReplaceOne(bg, Document{"_id": i % n}, Document{"v": i, "s": "payload"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DeleteInsert", func(b *testing.B) {
		c := setup(b)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := c.DeleteOne(bg, Document{"_id": i % n}); err != nil {
				b.Fatal(err)
			}
			if _, err := c.InsertOne(bg, Document{"_id": i % n, "v": i, "s": "payload"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FindOne", func(b *testing.B) {
		c := setup(b)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := c.FindOne(bg, Document{"_id": i % n}).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
