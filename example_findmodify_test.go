package ttldb_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ttldb/ttldb"
)

// A session refresh: read and extend in one step. With HideExpired, an
// expired session is not found (and not revived) even before the monitor
// deletes it.
func ExampleCollection_FindOneAndUpdate() {
	db, clk := openExample()
	defer db.Close()
	sessions, err := db.CreateCollection("sessions", ttldb.CollectionOptions{HideExpired: true})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := sessions.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("lastSeen")}, ExpireAfterSeconds: ttldb.Seconds(1800)}); err != nil {
		log.Fatal(err)
	}
	if _, err := sessions.InsertOne(ttldb.Document{"_id": "tok", "user": "ada", "lastSeen": clk.Now()}); err != nil {
		log.Fatal(err)
	}
	refresh := func() error {
		var s struct {
			User     string    `bson:"user"`
			LastSeen time.Time `bson:"lastSeen"`
		}
		err := sessions.FindOneAndUpdate(ttldb.Document{"_id": "tok"},
			ttldb.Document{"$currentDate": ttldb.Document{"lastSeen": true}},
			ttldb.FindOneAndUpdateOptions{ReturnDocument: ttldb.After}).Decode(&s)
		if err == nil {
			fmt.Println(s.User, "seen at", s.LastSeen.Format("15:04"))
		}
		return err
	}
	clk.Advance(20 * time.Minute)
	_ = refresh()
	clk.Advance(31 * time.Minute)
	err = refresh()
	fmt.Println(errors.Is(err, ttldb.ErrNotFound))
	// Output:
	// ada seen at 12:20
	// true
}

// A replacement returned as it was before, or as it is after.
func ExampleCollection_FindOneAndReplace() {
	db, _ := openExample()
	defer db.Close()
	c := db.Collection("config")
	if _, err := c.InsertOne(ttldb.Document{"_id": "limits", "rps": 10}); err != nil {
		log.Fatal(err)
	}
	old, err := c.FindOneAndReplace(ttldb.Document{"_id": "limits"}, ttldb.Document{"rps": 20, "burst": 5}).Document()
	if err != nil {
		log.Fatal(err)
	}
	now, err := c.FindOneAndReplace(ttldb.Document{"_id": "limits"}, ttldb.Document{"rps": 30},
		ttldb.FindOneAndReplaceOptions{ReturnDocument: ttldb.After}).Document()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(old["rps"], now)
	// Output: 10 map[_id:limits rps:30]
}

// A work queue: take the oldest job, removing it in the same step, so that
// two workers never get the same one.
func ExampleCollection_FindOneAndDelete() {
	db, clk := openExample()
	defer db.Close()
	jobs := db.Collection("jobs")
	for i, name := range []string{"resize", "email", "report"} {
		if _, err := jobs.InsertOne(ttldb.Document{"name": name, "queued": clk.Now().Add(time.Duration(-i) * time.Minute)}); err != nil {
			log.Fatal(err)
		}
	}
	for {
		var job struct {
			Name string `bson:"name"`
		}
		err := jobs.FindOneAndDelete(nil, ttldb.FindOneAndDeleteOptions{Sort: []ttldb.IndexKey{ttldb.Asc("queued")}}).Decode(&job)
		if errors.Is(err, ttldb.ErrNotFound) {
			break
		}
		fmt.Println(job.Name)
	}
	// Output:
	// report
	// email
	// resize
}

// Mixed writes in one call; unordered, every failure is reported with its
// model's index.
func ExampleCollection_BulkWrite() {
	db, _ := openExample()
	defer db.Close()
	c := db.Collection("users")
	res, err := c.BulkWrite(context.Background(), []ttldb.WriteModel{
		ttldb.InsertOneModel{Document: ttldb.Document{"_id": "ada", "visits": 1}},
		ttldb.InsertOneModel{Document: ttldb.Document{"_id": "ada"}}, // duplicate
		ttldb.UpdateOneModel{Filter: ttldb.Document{"_id": "ada"}, Update: ttldb.Document{"$inc": ttldb.Document{"visits": 1}}},
		ttldb.UpdateOneModel{Filter: ttldb.Document{"_id": "bob"}, Update: ttldb.Document{"$inc": ttldb.Document{"visits": 1}}, Upsert: true},
		ttldb.DeleteManyModel{Filter: ttldb.Document{"visits": ttldb.Document{"$lt": 2}}},
	}, ttldb.BulkWriteOptions{Unordered: true})
	var bwe *ttldb.BulkWriteError
	if errors.As(err, &bwe) {
		for _, we := range bwe.WriteErrors {
			fmt.Println("model", we.Index, errors.Is(we.Err, ttldb.ErrDuplicateKey))
		}
	}
	fmt.Println(res.InsertedCount, res.MatchedCount, res.ModifiedCount, res.UpsertedIDs, res.DeletedCount)
	// Output:
	// model 1 true
	// 1 1 1 map[3:bob] 1
}
