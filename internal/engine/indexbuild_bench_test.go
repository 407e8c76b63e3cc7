package engine

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// BenchmarkCreateIndexWriterWait builds an index over a collection of
// 200,000 documents (1,000,000 with TTLDB_SOAK set) while a writer updates
// the indexed field in a loop, and reports the longest time one of the
// writer's updates took (max-write-ms): the time writers wait for a build
// (issue 9 item 13: at most ~50 ms at a time), and the build's time.
func BenchmarkCreateIndexWriterWait(b *testing.B) {
	n := 200_000
	if os.Getenv("TTLDB_SOAK") != "" {
		n = 1_000_000
	}
	db, err := Open(WithMonitor(MonitorOptions{Disabled: true}))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := db.Collection("bench")
	const chunk = 50_000
	for lo := 0; lo < n; lo += chunk {
		docs := make([]Document, 0, chunk)
		for i := lo; i < min(lo+chunk, n); i++ {
			docs = append(docs, Document{"_id": i, "v": i % 1000, "at": time.Unix(int64(i), 0)})
		}
		if _, err := c.InsertMany(context.Background(), docs); err != nil {
			b.Fatal(err)
		}
	}
	var worst, worstFinal time.Duration
	var catchUp time.Time
	hook := func(stage buildStage, _ *indexBuild) {
		switch stage {
		case buildCatchUp:
			catchUp = time.Now()
		case buildEnded:
			worstFinal = max(worstFinal, time.Since(catchUp))
		}
	}
	indexBuildHook.Store(&hook)
	defer indexBuildHook.Store(nil)
	b.ResetTimer()
	for range b.N {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				if _, err := c.UpdateOne(context.Background(), Document{"_id": (i * 7919) % n}, Document{"$inc": Document{"v": 1}}); err != nil {
					b.Error(err)
					return
				}
				worst = max(worst, time.Since(start))
			}
		}()
		if _, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}}); err != nil {
			b.Fatal(err)
		}
		close(stop)
		wg.Wait()
		b.StopTimer()
		if err := c.DropIndex(context.Background(), "v_1"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-write-ms")
	b.ReportMetric(float64(worstFinal.Microseconds())/1000, "max-final-ms")
}
