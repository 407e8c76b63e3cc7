package ttldb_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// openExample opens a DB on a fake clock, as the README's tour does with
// the system clock, so that the output is deterministic.
func openExample() (*ttldb.DB, *ttltest.Clock) {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		log.Fatal(err)
	}
	return db, clk
}

func ExampleOpen() {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	db, err := ttldb.Open(ttldb.WithClock(clk))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close() // stops the monitor and waits for it

	events := db.Collection("eventlog") // created by the first write
	name, err := events.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")},
		ExpireAfterSeconds: ttldb.Seconds(3600),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(name)
	// Output: lastModifiedDate_1
}

func ExampleCollection_InsertOne() {
	db, clk := openExample()
	defer db.Close()
	events := db.Collection("eventlog")

	res, err := events.InsertOne(context.Background(), ttldb.Document{"lastModifiedDate": clk.Now(), "user": "ada"})
	if err != nil {
		log.Fatal(err)
	}
	oid := res.InsertedID.(ttldb.ObjectID) // generated, time-ordered, from the DB clock
	fmt.Println(oid.Timestamp())
	// Output: 2026-01-01 12:00:00 +0000 UTC
}

func ExampleCollection_FindOne() {
	db, _ := openExample()
	defer db.Close()
	events := db.Collection("eventlog")
	if _, err := events.InsertOne(context.Background(), ttldb.Document{"_id": 1, "user": "ada"}); err != nil {
		log.Fatal(err)
	}
	doc, err := events.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc)
	_, err = events.FindOne(context.Background(), ttldb.Document{"_id": 2}).Document()
	fmt.Println(err)
	// Output:
	// map[_id:1 user:ada]
	// ttldb: not found: collection "eventlog": no document matches
}

func ExampleCollection_Find() {
	db, clk := openExample()
	defer db.Close()
	events := db.Collection("eventlog")
	for i, user := range []string{"ada", "grace", "ada", "linus", "grace"} {
		_, err := events.InsertOne(context.Background(), ttldb.Document{"_id": i, "user": user, "lastModifiedDate": clk.Now().Add(time.Duration(i) * time.Minute)})
		if err != nil {
			log.Fatal(err)
		}
	}
	cur, err := events.Find(context.Background(),
		ttldb.Document{"user": ttldb.Document{"$in": []any{"ada", "grace"}}},
		ttldb.FindOptions{
			Sort:       []ttldb.IndexKey{ttldb.Desc("lastModifiedDate")},
			Limit:      3,
			Projection: ttldb.Document{"user": 1},
		},
	)
	if err != nil {
		log.Fatal(err)
	}
	for d, err := range cur.Documents(context.Background()) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d)
	}
	// Output:
	// map[_id:4 user:grace]
	// map[_id:2 user:ada]
	// map[_id:1 user:grace]
}

func ExampleCollection_UpdateOne() {
	db, clk := openExample()
	defer db.Close()
	events := db.Collection("eventlog")
	if _, err := events.InsertOne(context.Background(), ttldb.Document{"_id": 1, "lastModifiedDate": clk.Now()}); err != nil {
		log.Fatal(err)
	}

	// Refresh a document so it lives longer: $currentDate writes the DB
	// clock's time.
	clk.Advance(30 * time.Minute)
	res, err := events.UpdateOne(context.Background(), ttldb.Document{"_id": 1},
		ttldb.Document{"$currentDate": ttldb.Document{"lastModifiedDate": true}})

	if err != nil {
		log.Fatal(err)
	}
	doc, err := events.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.MatchedCount, res.ModifiedCount, doc["lastModifiedDate"])
	// Output: 1 1 2026-01-01 12:30:00 +0000 UTC
}

func ExampleCollection_Explain() {
	db, _ := openExample()
	defer db.Close()
	events := db.Collection("eventlog")
	if _, err := events.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("user")}}); err != nil {
		log.Fatal(err)
	}
	for i, user := range []string{"ada", "grace", "ada", "linus"} {
		if _, err := events.InsertOne(context.Background(), ttldb.Document{"_id": i, "user": user}); err != nil {
			log.Fatal(err)
		}
	}
	ex, err := events.Explain(context.Background(), ttldb.Document{"user": "ada"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ex.Stage, ex.IndexName, ex.IndexBounds, ex.KeysExamined, ex.DocsExamined, ex.NReturned)
	ex, err = events.Explain(context.Background(), ttldb.Document{"other": 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ex.Stage, ex.KeysExamined, ex.DocsExamined, ex.NReturned)
	// Output:
	// IXSCAN user_1 [["ada", "ada"]] 2 2 2
	// COLLSCAN 0 4 0
}

// Example is the package documentation's example, compiled and run: a TTL
// index on an event log, a document that expires an hour after its date,
// and a pass of the monitor once the hour is over. The DB runs on a fake
// clock so that the hour takes no time.
func Example() {
	ctx := context.Background()
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	db, err := ttldb.Open(ttldb.WithClock(clk))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	events := db.Collection("eventlog")
	if _, err := events.CreateIndex(ctx, ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")},
		ExpireAfterSeconds: ttldb.Seconds(3600),
	}); err != nil {
		log.Fatal(err)
	}
	if _, err := events.InsertOne(context.Background(), ttldb.Document{"lastModifiedDate": clk.Now(), "msg": "hello"}); err != nil {
		log.Fatal(err)
	}

	clk.Advance(time.Hour + time.Second)
	if _, err := db.RunTTLPass(ctx); err != nil { // the monitor's pass, now
		log.Fatal(err)
	}
	n, err := events.CountDocuments(ctx, ttldb.Document{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("documents left:", n)
	// Output: documents left: 0
}
