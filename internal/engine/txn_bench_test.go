package engine

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// The costs of transactions (issue targets: a transaction of 10 inserts
// into two collections within 1.5x the 10 inserts without one, in memory
// and under SyncAlways; reads by _id not slowed by a long-running
// transaction; commits sharing fsyncs under SyncAlways):
//
//	go test -run '^$' -bench 'BenchmarkTxn' -benchtime 2000x -count 6 ./internal/engine

func openTxnBench(b *testing.B, mode string) *DB {
	b.Helper()
	opts := []Option{WithMonitor(MonitorOptions{Disabled: true})}
	if mode == "SyncAlways" {
		opts = append(opts, WithDir(b.TempDir()), WithSync(SyncAlways))
	}
	db, err := Open(opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

// BenchmarkTxnTenInserts: 5 inserts into each of two collections, in one
// transaction or as 10 writes.
func BenchmarkTxnTenInserts(b *testing.B) {
	bg := context.Background()
	for _, mode := range []string{"memory", "SyncAlways"} {
		for _, txn := range []bool{false, true} {
			name := "plain"
			if txn {
				name = "txn"
			}
			b.Run(mode+"/"+name, func(b *testing.B) {
				db := openTxnBench(b, mode)
				x, y := db.Collection("x"), db.Collection("y")
				s, err := db.StartSession()
				if err != nil {
					b.Fatal(err)
				}
				sctx := NewSessionContext(bg, s)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					ctx := bg
					if txn {
						if err := s.StartTransaction(); err != nil {
							b.Fatal(err)
						}
						ctx = sctx
					}
					for j := range 10 {
						c := x
						if j%2 == 1 {
							c = y
						}
						if _, err := c.InsertOne(ctx, Document{"_id": i*10 + j, "g": j, "s": "payload"}); err != nil {
							b.Fatal(err)
						}
					}
					if txn {
						if err := s.CommitTransaction(bg); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkTxnCommitsPerFsync: 8 goroutines commit transactions of two
// inserts under SyncAlways; commits/fsync is how many share one.
func BenchmarkTxnCommitsPerFsync(b *testing.B) {
	bg := context.Background()
	db := openTxnBench(b, "SyncAlways")
	x, y := db.Collection("x"), db.Collection("y")
	var next atomic.Int64
	before := db.Metrics()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		s, err := db.StartSession()
		if err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			i := next.Add(1)
			_, err := s.WithTransaction(bg, func(ctx context.Context) (any, error) {
				if _, err := x.InsertOne(ctx, Document{"_id": i}); err != nil {
					return nil, err
				}
				return y.InsertOne(ctx, Document{"_id": i})
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	d := db.Metrics().Sub(before)
	if d.Durability.LogSyncs > 0 {
		b.ReportMetric(float64(d.Transactions.Committed)/float64(d.Durability.LogSyncs), "commits/fsync")
	}
}

// BenchmarkTxnReadByIDDuringLongTxn: reads by _id while a writer updates
// documents, with no transaction open or with one open (its snapshot
// makes every update keep the version it replaces). Reports the p99 of
// the reads.
func BenchmarkTxnReadByIDDuringLongTxn(b *testing.B) {
	bg := context.Background()
	for _, open := range []bool{false, true} {
		b.Run(fmt.Sprintf("txnOpen=%v", open), func(b *testing.B) {
			db := openTxnBench(b, "memory")
			c := db.Collection("c")
			const n = 10000
			docs := make([]Document, n)
			for i := range docs {
				docs[i] = Document{"_id": i, "v": 0}
			}
			if _, err := c.InsertMany(bg, docs); err != nil {
				b.Fatal(err)
			}
			if open {
				s, ctx := inTxn(b, db)
				if _, err := c.UpdateOne(ctx, Document{"_id": n + 1}, Document{"$set": Document{"v": 1}}, UpdateOptions{Upsert: true}); err != nil {
					b.Fatal(err)
				}
				defer s.EndSession(bg)
			}
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := c.UpdateOne(bg, Document{"_id": i % n}, Document{"$inc": Document{"v": 1}}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := c.FindOne(bg, Document{"_id": (i * 7) % n}).Err(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			close(stop)
			<-done
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
