package ttldb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ttldb/ttldb"
)

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
				cs, err := db.Watch(ctx, ttldb.ChangeStreamOptions{BatchSize: run.batch})
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
			cpu0 := processCPU()
			for i := size; i < size+b.N; i++ {
				if _, err := c.InsertOne(ttldb.Document{"_id": i, "g": i % groups, "n": i, "s": "payload"}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			wg.Wait()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			for w, cs := range streams {
				if read[w] != b.N || errs[w] != nil {
					b.Fatalf("watcher %d read %d of %d inserts: %v", w, read[w], b.N, errs[w])
				}
				cs.Close()
			}
		})
	}
}
