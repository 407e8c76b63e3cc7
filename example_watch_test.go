package ttldb_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// A change stream of a collection: its writes and its TTL deletions, in
// commit order. TryNext reads what is ready; Next would wait for more.
func ExampleCollection_Watch() {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db, _ := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	defer db.Close()
	ctx := context.Background()
	sessions := db.Collection("sessions")
	_, _ = sessions.CreateIndex(ctx, ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastSeen")},
		ExpireAfterSeconds: ttldb.Seconds(1800),
	})

	cs, err := sessions.Watch(ctx, nil, ttldb.ChangeStreamOptions{
		FullDocument:             ttldb.FullDocumentUpdateLookup,
		FullDocumentBeforeChange: ttldb.FullDocumentWhenAvailable,
	})

	if err != nil {
		panic(err)
	}
	defer cs.Close(context.Background())

	_, _ = sessions.InsertOne(context.Background(), ttldb.Document{"_id": "s1", "user": "ada", "lastSeen": clk.Now()})
	_, _ = sessions.UpdateOne(context.Background(), ttldb.Document{"_id": "s1"}, ttldb.Document{"$set": ttldb.Document{"user": "grace"}})
	clk.Advance(time.Hour)
	_, _ = db.RunTTLPass(ctx) // deletes s1: expired half an hour ago

	for cs.TryNext(ctx) {
		ev := cs.Event()
		switch ev.OperationType {
		case ttldb.OperationInsert:
			user, _ := ev.FullDocument.Lookup("user")
			fmt.Println(ev.ID, "insert", ev.DocumentKey.ID(), user)
		case ttldb.OperationUpdate:
			before, _ := ev.FullDocumentBeforeChange.Lookup("user")
			fmt.Println(ev.ID, "update", ev.DocumentKey.ID(), before, "->", ev.UpdateDescription.UpdatedFields)
		case ttldb.OperationDelete:
			fmt.Println(ev.ID, "delete", ev.DocumentKey.ID(), "expired:", ev.Expired, ev.Index, ev.Cutoff.Format(time.TimeOnly))
		}
	}
	if err := cs.Err(); err != nil {
		panic(err)
	}
	// Output:
	// 2:0 insert s1 ada
	// 3:0 update s1 ada -> map[user:grace]
	// 4:0 delete s1 expired: true lastSeen_1 01:00:00
}

// A watcher that restarts resumes after the last event it handled, as long
// as the DB's change-stream buffer still holds it; one that fell too far
// behind gets ErrChangeStreamLagged (resumable) or
// ErrChangeStreamHistoryLost (events lost: resynchronize).
func ExampleDB_Watch_resume() {
	db, _ := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	defer db.Close()
	ctx := context.Background()
	c := db.Collection("jobs")

	cs, _ := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{OperationTypes: []ttldb.OperationType{ttldb.OperationInsert}})
	_, _ = c.InsertMany(context.Background(), []ttldb.Document{{"_id": 1}, {"_id": 2}, {"_id": 3}})
	cs.Next(ctx)
	saved := cs.ResumeToken()      // persist it (its text form: saved.String())
	cs.Close(context.Background()) // the watcher stops after job 1

	_, _ = c.InsertOne(context.Background(), ttldb.Document{"_id": 4})

	cs, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{ResumeAfter: &saved})
	if errors.Is(err, ttldb.ErrChangeStreamHistoryLost) {
		fmt.Println("too late: resynchronize from the collection")
		return
	}
	defer cs.Close(context.Background())
	for cs.TryNext(ctx) {
		fmt.Println("job", cs.Event().DocumentKey.ID())
	}
	// Output:
	// job 2
	// job 3
	// job 4
}

// The JSON form of a change event (relaxed Extended JSON, as a MongoDB
// change event looks in mongosh's EJSON.stringify), for server-sent
// events or logs.
func ExampleChangeEvent_MarshalJSON() {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db, _ := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	defer db.Close()
	ctx := context.Background()
	cs, _ := db.Watch(ctx, nil)
	defer cs.Close(context.Background())
	// A bson.D keeps its field order, and the JSON shows it (a map's
	// fields come in no particular order).
	_, _ = db.Collection("sessions").InsertOne(ctx, bson.D{{Key: "_id", Value: "s1"}, {Key: "lastSeen", Value: clk.Now()}, {Key: "n", Value: 1.0}})
	cs.Next(ctx)
	b, _ := cs.Event().MarshalJSON()
	fmt.Println(string(b))
	// Output:
	// {"_id":{"_data":"3:0"},"operationType":"insert","clusterTime":2,"wallTime":{"$date":"2026-01-01T00:00:00Z"},"ns":{"coll":"sessions"},"documentKey":{"_id":"s1"},"fullDocument":{"_id":"s1","lastSeen":{"$date":"2026-01-01T00:00:00Z"},"n":1.0}}
}
