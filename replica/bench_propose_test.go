package replica

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// BenchmarkWriteDuringExpire: what a TTL pass costs the writers of a
// 3-node cluster. One goroutine inserts into another collection, one
// document at a time, while the leader's pass deletes 100k expired
// documents (each batch proposed, and every write waiting for it), and,
// for comparison, while no pass runs. It reports the inserts' latency
// (p50, p99, max) in each case.
//
//	go test -run '^$' -bench WriteDuringExpire -benchtime 2x -count 5 .
func BenchmarkWriteDuringExpire(b *testing.B) {
	const n = 100_000
	for _, pass := range []bool{false, true} {
		name := "idle"
		if pass {
			name = "pass"
		}
		b.Run(name, func(b *testing.B) {
			c := newCluster(b, 3, nil)
			ctx := context.Background()
			l := c.leader()
			ttlIndex(b, l.node.DB(), "s")
			var lat []time.Duration
			b.ResetTimer()
			b.StopTimer()
			for it := range b.N {
				for start := 0; start < n; start += 1000 {
					docs := make([]any, 0, 1000)
					for i := start; i < start+1000; i++ {
						docs = append(docs, ttldb.Document{"_id": fmt.Sprint(it, "-", i), "at": c.clk.Now()})
					}
					_, err := l.node.DB().Collection("s").InsertMany(context.Background(), docs)
					require.NoError(b, err)
				}
				c.converged()
				c.clk.Advance(2 * time.Minute)
				var stop atomic.Bool
				done := make(chan []time.Duration)
				go func() {
					var got []time.Duration
					for i := 0; !stop.Load(); i++ {
						t0 := time.Now()
						_, err := l.node.DB().Collection("w").InsertOne(context.Background(), ttldb.Document{"_id": fmt.Sprint(it, "-", i)})
						if err != nil {
							b.Error(err)
							break
						}
						got = append(got, time.Since(t0))
					}
					done <- got
				}()
				b.StartTimer()
				if pass {
					res, err := l.node.DB().RunTTLPass(ctx)
					require.NoError(b, err)
					require.Equal(b, n, res.Deleted)
				} else {
					time.Sleep(300 * time.Millisecond) // about a pass's length
				}
				b.StopTimer()
				stop.Store(true)
				lat = append(lat, <-done...)
				if !pass {
					_, err := l.node.DB().RunTTLPass(ctx) // untimed: the next round starts empty
					require.NoError(b, err)
				}
			}
			slices.Sort(lat)
			require.NotEmpty(b, lat)
			at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(at(0.5), "p50-µs")
			b.ReportMetric(at(0.99), "p99-µs")
			b.ReportMetric(at(1), "max-µs")
			b.ReportMetric(float64(len(lat))/float64(b.N), "writes/op")
		})
	}
}
