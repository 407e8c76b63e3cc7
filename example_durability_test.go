package ttldb_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// A DB opened WithDir keeps its collections, indexes and documents (with
// their dates) across a restart; a document that expired while the
// program was down is not served, and the first TTL pass deletes it.
func Example_dataDirectory() {
	dir, err := os.MkdirTemp("", "ttldb-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	clock := ttltest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	open := func() *ttldb.DB {
		db, err := ttldb.Open(ttldb.WithDir(dir), ttldb.WithSync(ttldb.SyncAlways), ttldb.WithHideExpired(),
			ttldb.WithClock(clock), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
		if err != nil {
			log.Fatal(err)
		}
		return db
	}

	db := open()
	sessions := db.Collection("sessions")
	if _, err := sessions.CreateIndex(ctx, ttldb.IndexModel{
		Keys: []ttldb.IndexKey{ttldb.Asc("lastSeen")}, ExpireAfterSeconds: ttldb.Seconds(1800),
	}); err != nil {
		log.Fatal(err)
	}
	if _, err := sessions.InsertMany(context.Background(), []ttldb.Document{
		{"_id": "ada", "lastSeen": clock.Now()},
		{"_id": "grace", "lastSeen": clock.Now().Add(20 * time.Minute)},
	}); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil { // flushes and fsyncs the log
		log.Fatal(err)
	}

	clock.Advance(40 * time.Minute) // down for 40 minutes: ada's session expired meanwhile
	db = open()
	defer db.Close()
	fmt.Println("ops replayed from the log:", db.Recovery().LogOps)
	sessions = db.Collection("sessions")
	for _, id := range []string{"ada", "grace"} {
		err := sessions.FindOne(context.Background(), ttldb.Document{"_id": id}).Err()
		fmt.Println(id, "served:", err == nil)
	}
	res, err := db.RunTTLPass(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deleted by the first pass:", res.Deleted)
	// Output:
	// ops replayed from the log: 3
	// ada served: false
	// grace served: true
	// deleted by the first pass: 1
}

// Backup writes a consistent copy of a DB, taken while it serves; Open
// WithRestore opens it (here in memory; with WithDir, into an empty
// directory).
func ExampleDB_Backup() {
	db, err := ttldb.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	events := db.Collection("events")
	for i := range 3 {
		if _, err := events.InsertOne(context.Background(), ttldb.Document{"_id": i, "kind": "click"}); err != nil {
			log.Fatal(err)
		}
	}
	var backup bytes.Buffer
	if err := db.Backup(context.Background(), &backup); err != nil {
		log.Fatal(err)
	}

	restored, err := ttldb.Open(ttldb.WithRestore(&backup))
	if err != nil {
		log.Fatal(err)
	}
	defer restored.Close()
	n, err := restored.Collection("events").CountDocuments(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("restored documents:", n)
	// Output:
	// restored documents: 3
}
