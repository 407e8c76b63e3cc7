package ttldb_test

import (
	"testing"

	"github.com/ttldb/ttldb"
)

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
						err = c.FindOneAndUpdate(filter, update, ttldb.FindOneAndUpdateOptions{ReturnDocument: ttldb.After}).Decode(&u)
					} else {
						if _, err = c.UpdateOne(filter, update); err == nil {
							err = c.FindOne(filter).Decode(&u)
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
