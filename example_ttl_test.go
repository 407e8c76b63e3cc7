package ttldb_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// openExampleDB opens a DB on a fake clock with the background monitor off,
// so that the examples run TTL passes by hand (RunTTLPass) and their output
// is deterministic. Services use the system clock and let the monitor run.
func openExampleDB(start time.Time) (*ttldb.DB, *ttltest.Clock) {
	clock := ttltest.NewClock(start)
	db, err := ttldb.Open(ttldb.WithClock(clock), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		log.Fatal(err)
	}
	return db, clock
}

// The TTL index of MongoDB's manual (reference 000):
//
//	db.eventlog.createIndex({ "lastModifiedDate": 1 }, { expireAfterSeconds: 3600 })
//
// A document expires 3600 seconds after its lastModifiedDate.
func ExampleCollection_CreateIndex_ttl() {
	db, clock := openExampleDB(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	defer db.Close()
	eventlog := db.Collection("eventlog")

	name, err := eventlog.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")},
		ExpireAfterSeconds: ttldb.Seconds(3600),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("index:", name)

	now := clock.Now()
	_, err = eventlog.InsertMany(context.Background(), []ttldb.Document{
		{"_id": "login", "lastModifiedDate": now},
		{"_id": "click", "lastModifiedDate": now.Add(20 * time.Minute)},
		{"_id": "pinned", "note": "no lastModifiedDate: never expires"},
	})

	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{"login", "click", "pinned"} {
		at, expires, err := eventlog.ExpiresAt(context.Background(), id)
		if err != nil {
			log.Fatal(err)
		}
		if expires {
			fmt.Printf("%s expires at %s\n", id, at.Format(time.RFC3339))
		} else {
			fmt.Printf("%s never expires\n", id)
		}
	}

	// An hour later: "login" has reached its threshold (inclusive).
	clock.Advance(time.Hour)
	res, err := db.RunTTLPass(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	n, _ := eventlog.CountDocuments(context.Background(), nil)
	fmt.Printf("at %s: deleted %d, %d left\n", res.Now.Format("15:04"), res.Deleted, n)

	clock.Advance(20 * time.Minute)
	res, _ = db.RunTTLPass(context.Background())
	n, _ = eventlog.CountDocuments(context.Background(), nil)
	fmt.Printf("at %s: deleted %d, %d left\n", res.Now.Format("15:04"), res.Deleted, n)
	// Output:
	// index: lastModifiedDate_1
	// login expires at 2026-03-01T13:00:00Z
	// click expires at 2026-03-01T13:20:00Z
	// pinned never expires
	// at 13:00: deleted 1, 2 left
	// at 13:20: deleted 1, 1 left
}

// MongoDB's collMod on the tickets collection (reference 000): first
// convert the non-TTL index { "lastModifiedDate": 1 } into a TTL index,
//
//	db.runCommand({ collMod: "tickets",
//	  index: { keyPattern: { "lastModifiedDate": 1 }, expireAfterSeconds: 100 } })
//
// then change its expireAfterSeconds. Neither rebuilds the index.
func ExampleDB_CollMod() {
	db, clock := openExampleDB(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	defer db.Close()
	tickets := db.Collection("tickets")

	// An ordinary index: nothing expires.
	if _, err := tickets.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")}}); err != nil {
		log.Fatal(err)
	}
	now := clock.Now()
	for i, age := range []time.Duration{10 * time.Minute, time.Minute, 10 * time.Second} {
		if _, err := tickets.InsertOne(context.Background(), ttldb.Document{"_id": i + 1, "lastModifiedDate": now.Add(-age)}); err != nil {
			log.Fatal(err)
		}
	}

	// Convert it into a TTL index with expireAfterSeconds 100.
	res, err := db.CollMod(context.Background(), "tickets", ttldb.CollModIndex{
		KeyPattern:         []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")},
		ExpireAfterSeconds: ttldb.Seconds(100),
	})

	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: expireAfterSeconds_old=%v expireAfterSeconds_new=%d\n",
		res.IndexName, res.ExpireAfterSecondsOld, res.ExpireAfterSecondsNew)
	pass, _ := db.RunTTLPass(context.Background())
	fmt.Println("deleted:", pass.Deleted) // ticket 1, ten minutes old

	// Change it to 30 seconds: lowering the value can make many documents
	// eligible at once.
	res, err = db.CollMod(context.Background(), "tickets", ttldb.CollModIndex{
		Name:               "lastModifiedDate_1",
		ExpireAfterSeconds: ttldb.Seconds(30),
	})

	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: expireAfterSeconds_old=%d expireAfterSeconds_new=%d\n",
		res.IndexName, *res.ExpireAfterSecondsOld, res.ExpireAfterSecondsNew)
	pass, _ = db.RunTTLPass(context.Background())
	fmt.Println("deleted:", pass.Deleted) // ticket 2, a minute old

	clock.Advance(20 * time.Second)
	pass, _ = db.RunTTLPass(context.Background())
	fmt.Println("deleted:", pass.Deleted) // ticket 3, now 30 seconds old

	// Output:
	// lastModifiedDate_1: expireAfterSeconds_old=<nil> expireAfterSeconds_new=100
	// deleted: 1
	// lastModifiedDate_1: expireAfterSeconds_old=100 expireAfterSeconds_new=30
	// deleted: 1
	// deleted: 1
}

// ArangoDB's per-document expiry (reference 003): a TTL index with
// expireAfter 0 on "expireDate", and each document's expireDate a date
// string, so that each document expires at the instant it names.
//
//	db.collection.ensureIndex({ type: "ttl", fields: ["expireDate"], expireAfter: 0 })
//	{ "expireDate" : "2019-03-28T01:06:00Z" }
func ExampleCollection_CreateIndex_expireDate() {
	db, clock := openExampleDB(time.Date(2019, 3, 28, 1, 0, 0, 0, time.UTC))
	defer db.Close()
	coll := db.Collection("collection")

	// ArangoDB's value forms (ISO 8601 strings, Unix seconds) are on by
	// default; TTLValueForms: ttldb.TTLValuesDatesOnly turns them off.
	if _, err := coll.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("expireDate")},
		ExpireAfterSeconds: ttldb.Seconds(0),
	}); err != nil {
		log.Fatal(err)
	}
	_, err := coll.InsertMany(context.Background(), []ttldb.Document{
		{"_id": "a", "expireDate": "2019-03-28T01:06:00Z"},
		{"_id": "b", "expireDate": "2019-03-28T02:36:00+01:30"},
		{"_id": "c", "expireDate": 1553735400},
		{"_id": "d", "expireDate": "2019-03-28"},
		{"_id": "e", "expireDate": "28/03/2019"},
	})

	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		at, expires, _ := coll.ExpiresAt(context.Background(), id)
		if expires {
			fmt.Printf("%s expires at %s\n", id, at.Format(time.RFC3339))
		} else {
			fmt.Printf("%s never expires\n", id)
		}
	}

	for _, at := range []string{"01:05:59", "01:06:00", "01:10:00"} {
		t, _ := time.Parse(time.TimeOnly, at)
		clock.Set(time.Date(2019, 3, 28, t.Hour(), t.Minute(), t.Second(), 0, time.UTC))
		res, _ := db.RunTTLPass(context.Background())
		fmt.Printf("%s: deleted %d\n", at, res.Deleted)
	}
	var left []ttldb.Document
	cur, _ := coll.Find(context.Background(), nil)
	_ = cur.All(context.Background(), &left)
	fmt.Println("left:", len(left), left[0]["_id"])

	// Output:
	// a expires at 2019-03-28T01:06:00Z
	// b expires at 2019-03-28T01:06:00Z
	// c expires at 2019-03-28T01:10:00Z
	// d expires at 2019-03-28T00:00:00Z
	// e never expires
	// 01:05:59: deleted 1
	// 01:06:00: deleted 2
	// 01:10:00: deleted 1
	// left: 1 e
}
