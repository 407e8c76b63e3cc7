package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkWatchPipeline is the cost a change stream's pipeline adds to
// each event: the events of b.N inserts, read through a $match on the
// event and a $project reshaping it, against the same stream without a
// pipeline (which reads each op in place).
//
//	go test -run '^$' -bench 'WatchPipeline' -count 6 ./internal/engine
func BenchmarkWatchPipeline(b *testing.B) {
	pipeline := bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "insert"}, {Key: "fullDocument.n", Value: bson.D{{Key: "$gte", Value: 0}}}}}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "user", Value: "$fullDocument.user"}, {Key: "n", Value: "$fullDocument.n"}}}},
	}
	for _, tc := range []struct {
		name     string
		pipeline any
	}{{"none", nil}, {"match+project", pipeline}} {
		b.Run(tc.name, func(b *testing.B) {
			db, err := Open(WithMonitor(MonitorOptions{Disabled: true}), WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: 1 << 20}))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			cs, err := db.Collection("c").Watch(ctx, tc.pipeline)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close(ctx)
			c := db.Collection("c")
			docs := make([]any, b.N)
			for i := range docs {
				docs[i] = Document{"_id": i, "user": "ada", "n": i, "s": "payload"}
			}
			if _, err := c.InsertMany(ctx, docs); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !cs.TryNext(ctx) {
					b.Fatalf("missing event: %v", cs.Err())
				}
			}
		})
	}
}
