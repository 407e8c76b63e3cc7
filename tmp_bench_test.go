package ttldb_test

import (
	"context"
	"testing"

	"github.com/ttldb/ttldb"
)

func BenchmarkTmpIdleWatcher(b *testing.B) {
	const size = 100_000
	db, c := loadBench(b, size)
	defer db.Close()
	cs, _ := db.Watch(context.Background())
	defer cs.Close()
	groups := benchGroups(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := size; i < size+b.N; i++ {
		if _, err := c.InsertOne(ttldb.Document{"_id": i, "g": i % groups, "n": i, "s": "payload"}); err != nil {
			b.Fatal(err)
		}
	}
}
