// Command quickstart opens a ttldb database, stores a few documents with a
// TTL index, queries them through an index, and expires some of them on a
// fake clock so that it runs instantly.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

func main() {
	// A fake clock, so expiry needs no waiting, and TTL passes run by hand
	// (RunTTLPass) instead of by the background monitor. Services use the
	// default system clock and let the monitor run.
	clock := ttltest.NewClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	db, err := ttldb.Open(ttldb.WithClock(clock), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	sessions := db.Collection("sessions")

	// Sessions expire one hour after they were last used.
	ttlName, err := sessions.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastSeen")},
		ExpireAfterSeconds: ttldb.Seconds(3600),
	})
	if err != nil {
		log.Fatal(err)
	}
	userIdx, err := sessions.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("user")}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("indexes: %s, %s\n", ttlName, userIdx)

	now := clock.Now()
	docs := []ttldb.Document{
		{"_id": "s1", "user": "ada", "lastSeen": now.Add(-50 * time.Minute)},
		{"_id": "s2", "user": "ada", "lastSeen": now.Add(-5 * time.Minute)},
		{"_id": "s3", "user": "grace", "lastSeen": now},
	}
	if _, err := sessions.InsertMany(context.Background(), docs); err != nil {
		log.Fatal(err)
	}

	// A query through the index on user.
	cur, err := sessions.Find(context.Background(), ttldb.Document{"user": "ada"}, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("_id")}})
	if err != nil {
		log.Fatal(err)
	}
	var adas []ttldb.Document
	if err := cur.All(context.Background(), &adas); err != nil {
		log.Fatal(err)
	}
	ex, err := sessions.Explain(context.Background(), ttldb.Document{"user": "ada"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ada has %d sessions (plan %s on %s, %d keys examined)\n", len(adas), ex.Stage, ex.IndexName, ex.KeysExamined)

	// Using a session refreshes it: $currentDate writes the DB clock's time.
	if _, err := sessions.UpdateOne(context.Background(), ttldb.Document{"_id": "s1"}, ttldb.Document{"$currentDate": ttldb.Document{"lastSeen": true}}); err != nil {
		log.Fatal(err)
	}
	at, _, err := sessions.ExpiresAt(context.Background(), "s2")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("s2 expires at %s\n", at.Format(time.RFC3339))

	// 58 minutes later, s2 (last seen 63 minutes ago) has expired; s1 was
	// refreshed and s3 is recent. Run a TTL pass now instead of waiting for
	// the background monitor.
	clock.Advance(58 * time.Minute)
	res, err := db.RunTTLPass(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	left, err := sessions.CountDocuments(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	m := db.Metrics().TTL
	fmt.Printf("TTL pass deleted %d; %d sessions left; metrics: passes=%d subPasses=%d deleted=%d\n",
		res.Deleted, left, m.Passes, m.SubPasses, m.DeletedDocuments)
}
