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
	sessions, err := db.CreateCollection(context.Background(), "sessions", ttldb.CollectionOptions{HideExpired: true})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := sessions.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("lastSeen")}, ExpireAfterSeconds: ttldb.Seconds(1800)}); err != nil {
		log.Fatal(err)
	}
	if _, err := sessions.InsertOne(context.Background(), ttldb.Document{"_id": "tok", "user": "ada", "lastSeen": clk.Now()}); err != nil {
		log.Fatal(err)
	}
	refresh := func() error {
		var s struct {
			User     string    `bson:"user"`
			LastSeen time.Time `bson:"lastSeen"`
		}
		err := sessions.FindOneAndUpdate(context.Background(), ttldb.Document{"_id": "tok"},
			ttldb.Document{"$currentDate": ttldb.Document{"lastSeen": true}},
			ttldb.FindOneAndUpdateOptions{ReturnDocument: ttldb.After}).
			Decode(&s)
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
	if _, err := c.InsertOne(context.Background(), ttldb.Document{"_id": "limits", "rps": 10}); err != nil {
		log.Fatal(err)
	}
	old, err := c.FindOneAndReplace(context.Background(), ttldb.Document{"_id": "limits"}, ttldb.Document{"rps": 20, "burst": 5}).Document()
	if err != nil {
		log.Fatal(err)
	}
	now, err := c.FindOneAndReplace(context.Background(), ttldb.Document{"_id": "limits"}, ttldb.Document{"rps": 30},
		ttldb.FindOneAndReplaceOptions{ReturnDocument: ttldb.After}).
		Document()
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
		if _, err := jobs.InsertOne(context.Background(), ttldb.Document{"name": name, "queued": clk.Now().Add(time.Duration(-i) * time.Minute)}); err != nil {
			log.Fatal(err)
		}
	}
	for {
		var job struct {
			Name string `bson:"name"`
		}
		err := jobs.FindOneAndDelete(context.Background(), nil, ttldb.FindOneAndDeleteOptions{Sort: []ttldb.IndexKey{ttldb.Asc("queued")}}).Decode(&job)
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
	}, ttldb.BulkWriteOptions{Ordered: ptr(false)})
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

// Session is a model struct as written for MongoDB's Go driver: bson tags
// name the fields, and `_id,omitempty` lets the collection generate the
// _id.
type Session struct {
	ID        ttldb.ObjectID `bson:"_id,omitempty"`
	User      string         `bson:"user"`
	Roles     []string       `bson:"roles"`
	LastSeen  time.Time      `bson:"lastSeen"`
	CSRFToken string         `bson:"-"` // never stored
}

// A struct (or a pointer to one) is stored as the document of its fields;
// an _id left out is generated and returned.
func ExampleCollection_InsertOne_struct() {
	db, clk := openExample()
	defer db.Close()
	sessions := db.Collection("sessions")

	res, err := sessions.InsertOne(context.Background(), Session{User: "ada", Roles: []string{"admin"}, LastSeen: clk.Now(), CSRFToken: "x"})
	if err != nil {
		log.Fatal(err)
	}
	doc, err := sessions.FindOne(context.Background(), ttldb.Document{"_id": res.InsertedID}).Document()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc["user"], doc["roles"], doc["lastSeen"], len(doc))
	// Output: ada [admin] 2026-01-01 12:00:00 +0000 UTC 4
}

// FindOne(...).Decode reads a document into a struct, as the MongoDB
// driver's does; a miss is ErrNotFound.
func ExampleSingleResult_Decode() {
	db, clk := openExample()
	defer db.Close()
	sessions := db.Collection("sessions")
	if _, err := sessions.InsertMany(context.Background(), []Session{
		{User: "ada", Roles: []string{"admin"}, LastSeen: clk.Now()},
		{User: "bob", LastSeen: clk.Now().Add(time.Minute)},
	}); err != nil {
		log.Fatal(err)
	}

	var s Session
	if err := sessions.FindOne(context.Background(), ttldb.Document{"user": "ada"}).Decode(&s); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.User, s.Roles, s.LastSeen.Format(time.Kitchen), !s.ID.IsZero())

	err := sessions.FindOne(context.Background(), ttldb.Document{"user": "eve"}).Decode(&s)
	fmt.Println(errors.Is(err, ttldb.ErrNotFound))
	// Output:
	// ada [admin] 12:00PM true
	// true
}

// Field update operators: $mul scales, $min and $max keep a low and high
// water mark, $rename moves a field.
func ExampleCollection_UpdateOne_fieldOperators() {
	db, _ := openExample()
	defer db.Close()
	stats := db.Collection("stats")
	if _, err := stats.InsertOne(context.Background(), ttldb.Document{"_id": 1, "price": 10, "low": 5, "high": 50, "qty": 3}); err != nil {
		log.Fatal(err)
	}
	_, err := stats.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{
		"$mul":    ttldb.Document{"price": 1.5},
		"$min":    ttldb.Document{"low": 2},
		"$max":    ttldb.Document{"high": 40},
		"$rename": ttldb.Document{"qty": "stock.count"},
	})

	if err != nil {
		log.Fatal(err)
	}
	doc, _ := stats.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
	fmt.Println(doc["price"], doc["low"], doc["high"], doc["stock"], doc["qty"])

	// Two operators on one path conflict, as in MongoDB.
	_, err = stats.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"low": 0}, "$min": ttldb.Document{"low": 1}})
	fmt.Println(err)
	// Output:
	// 15 2 50 map[count:3] <nil>
	// collection "stats": ttldb: invalid update: updating the path "low" would create a conflict at "low"
}

// Array update operators: $push with modifiers keeps the five latest
// scores, $addToSet adds a tag once, $pull removes by value or condition,
// $pop drops the first element.
func ExampleCollection_UpdateOne_arrayOperators() {
	db, _ := openExample()
	defer db.Close()
	players := db.Collection("players")
	if _, err := players.InsertOne(context.Background(), ttldb.Document{"_id": "ada", "scores": []any{7, 3, 9}, "tags": []any{"new"}, "queue": []any{"a", "b", "c"}}); err != nil {
		log.Fatal(err)
	}
	_, err := players.UpdateOne(context.Background(), ttldb.Document{"_id": "ada"}, ttldb.Document{
		"$push":     ttldb.Document{"scores": ttldb.Document{"$each": []any{8, 1, 10}, "$sort": -1, "$slice": 5}},
		"$addToSet": ttldb.Document{"tags": ttldb.Document{"$each": []any{"new", "pro"}}},
		"$pop":      ttldb.Document{"queue": -1},
	})

	if err != nil {
		log.Fatal(err)
	}
	_, err = players.UpdateOne(context.Background(), ttldb.Document{"_id": "ada"}, ttldb.Document{
		"$pull": ttldb.Document{"scores": ttldb.Document{"$lt": 8}, "tags": "new"},
	})

	if err != nil {
		log.Fatal(err)
	}
	doc, _ := players.FindOne(context.Background(), ttldb.Document{"_id": "ada"}).Document()
	fmt.Println(doc["scores"], doc["tags"], doc["queue"])

	// A $push to a field that is not an array is an error that changes nothing.
	_, err = players.UpdateOne(context.Background(), ttldb.Document{"_id": "ada"}, ttldb.Document{"$push": ttldb.Document{"tags.0": "x"}})
	fmt.Println(err)
	// Output:
	// [10 9 8] [pro] [b c]
	// collection "players": document ada: ttldb: invalid update: $push "tags.0": $push needs an array, but the field holds a value of type string
}

// $setOnInsert writes only when an upsert inserts: the first call creates
// the session with its creation time, later calls only refresh it.
func ExampleCollection_UpdateOne_setOnInsert() {
	db, clk := openExample()
	defer db.Close()
	sessions := db.Collection("sessions")
	refresh := ttldb.Document{
		"$currentDate": ttldb.Document{"lastSeen": true},
		"$inc":         ttldb.Document{"hits": 1},
		"$setOnInsert": ttldb.Document{"createdAt": clk.Now(), "user": "ada"},
	}
	for range 3 {
		res, err := sessions.UpdateOne(context.Background(), ttldb.Document{"_id": "s1"}, refresh, ttldb.UpdateOptions{Upsert: true})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("inserted:", res.UpsertedID != nil)
	}
	doc, _ := sessions.FindOne(context.Background(), ttldb.Document{"_id": "s1"}).Document()
	fmt.Println(doc["user"], doc["hits"])
	// Output:
	// inserted: true
	// inserted: false
	// inserted: false
	// ada 3
}

// UpdateMany and DeleteMany take a context; cancelled, they change
// nothing.
func ExampleCollection_DeleteMany() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := sessions.DeleteMany(ctx, nil)
	fmt.Println(errors.Is(err, context.Canceled))

	n, err := sessions.DeleteMany(context.Background(), ttldb.Document{"user": "grace"})
	if err != nil {
		log.Fatal(err)
	}
	left, _ := sessions.EstimatedDocumentCount(context.Background())
	fmt.Println(n.DeletedCount, left)
	// Output:
	// true
	// 2 3
}
