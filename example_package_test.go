package ttldb_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

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
	if _, err := events.InsertOne(ttldb.Document{"lastModifiedDate": clk.Now(), "msg": "hello"}); err != nil {
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
