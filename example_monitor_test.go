package ttldb_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// An archiving expire hook that is idempotent and reports failure per
// document. Each archived copy is keyed by its delivery identity (_id and
// version), so a document offered again finds its copy and counts as
// archived; a document the archive refuses is named in an
// *ExpireHookError: it stays and is retried alone, while the other
// expired documents are deleted.
func ExampleExpireHookError() {
	clock := ttltest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var db *ttldb.DB
	archive := func(ctx context.Context, b ttldb.ExpiredBatch) error {
		var failed []any
		for i, doc := range b.Docs {
			if doc["poison"] == true {
				failed = append(failed, doc["_id"])
				continue
			}
			key := ttldb.Document{"id": doc["_id"], "version": int64(b.Versions[i])}
			_, err := db.Collection("archive").InsertOne(context.Background(), ttldb.Document{"_id": key, "doc": doc})
			if err != nil && !errors.Is(err, ttldb.ErrDuplicateKey) {
				failed = append(failed, doc["_id"])
			}
		}
		if len(failed) > 0 {
			return &ttldb.ExpireHookError{Failed: failed, Err: errors.New("archive refused")}
		}
		return nil
	}
	db, err := ttldb.Open(ttldb.WithClock(clock), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}),
		ttldb.WithOnExpire(archive))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	sessions := db.Collection("sessions")
	if _, err := sessions.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastSeen")},
		ExpireAfterSeconds: ttldb.Seconds(60),
	}); err != nil {
		log.Fatal(err)
	}
	for _, d := range []ttldb.Document{
		{"_id": "a", "lastSeen": clock.Now()},
		{"_id": "b", "lastSeen": clock.Now(), "poison": true},
		{"_id": "c", "lastSeen": clock.Now()},
	} {
		if _, err := sessions.InsertOne(context.Background(), d); err != nil {
			log.Fatal(err)
		}
	}

	clock.Advance(time.Minute)
	res, err := db.RunTTLPass(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	archived, _ := db.Collection("archive").CountDocuments(context.Background(), nil)
	failed := db.Metrics().TTL.FailedDeliveries[ttldb.IndexRef{Collection: "sessions", Index: "lastSeen_1"}]
	fmt.Printf("deleted %d, errors %d, complete %v\n", res.Deleted, res.Errors, res.Complete)
	fmt.Printf("archived %d, waiting for a retry %d\n", archived, failed.Count)
	// Output:
	// deleted 2, errors 1, complete false
	// archived 2, waiting for a retry 1
}
