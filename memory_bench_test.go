package ttldb_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/ttldb/ttldb"
)

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
			if _, err := c.InsertMany(batch); err != nil {
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
