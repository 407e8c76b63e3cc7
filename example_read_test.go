package ttldb_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ttldb/ttldb"
)

type session struct {
	ID       string    `bson:"_id"`
	User     string    `bson:"user"`
	LastSeen time.Time `bson:"lastSeen"`
	Hits     int       `bson:"hits"`
}

// sessionsExample returns a collection of five sessions of three users.
func sessionsExample(db *ttldb.DB) *ttldb.Collection {
	c := db.Collection("sessions")
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i, u := range []string{"ada", "grace", "ada", "linus", "grace"} {
		s := session{ID: fmt.Sprintf("s%d", i+1), User: u, LastSeen: t0.Add(time.Duration(i) * time.Minute), Hits: 10 * (5 - i)}
		if _, err := c.InsertOne(s); err != nil {
			log.Fatal(err)
		}
	}
	return c
}

// Next and Decode stream the results into a struct the loop reuses.
func ExampleCursor_Next() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)
	ctx := context.Background()

	cur, err := sessions.Find(ctx, ttldb.Document{"user": "ada"})
	if err != nil {
		log.Fatal(err)
	}
	defer cur.Close()
	var s session
	for cur.Next(ctx) {
		if err := cur.Decode(&s); err != nil {
			log.Fatal(err)
		}
		fmt.Println(s.ID, s.User, s.Hits)
	}
	if err := cur.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// s1 ada 50
	// s3 ada 30
}

// All decodes every result into a slice of structs.
func ExampleCursor_All() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)
	ctx := context.Background()

	cur, err := sessions.Find(ctx, nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Desc("hits")}, Limit: 2})
	if err != nil {
		log.Fatal(err)
	}
	var top []session
	if err := cur.All(ctx, &top); err != nil {
		log.Fatal(err)
	}
	for _, s := range top {
		fmt.Println(s.ID, s.Hits)
	}
	// Output:
	// s1 50
	// s2 40
}

// Documents ranges over the results as Documents; breaking out of the
// loop closes the cursor.
func ExampleCursor_Documents() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)
	ctx := context.Background()

	cur, err := sessions.Find(ctx, ttldb.Document{"user": ttldb.Document{"$ne": "ada"}},
		ttldb.FindOptions{Projection: ttldb.Document{"user": 1, "_id": 0}})
	if err != nil {
		log.Fatal(err)
	}
	for doc, err := range cur.Documents(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(doc)
	}
	// Output:
	// map[user:grace]
	// map[user:linus]
	// map[user:grace]
}

// Decoded ranges over the results decoded into a type of your choice.
func ExampleDecoded() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)
	ctx := context.Background()

	cur, err := sessions.Find(ctx, ttldb.Document{"hits": ttldb.Document{"$gte": 30}})
	if err != nil {
		log.Fatal(err)
	}
	for s, err := range ttldb.Decoded[session](ctx, cur) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(s.ID, s.LastSeen.Format(time.Kitchen))
	}
	// Output:
	// s1 12:00PM
	// s2 12:01PM
	// s3 12:02PM
}

// A context with a deadline stops a long read; the error matches
// context.DeadlineExceeded.
func ExampleCollection_Find_context() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)

	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0)) // already past
	defer cancel()
	_, err := sessions.Find(ctx, nil)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	_, err = sessions.CountDocuments(ctx, nil)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true
	// true
}

// CountDocuments counts what reads see; EstimatedDocumentCount reads a
// count kept by every write.
func ExampleCollection_EstimatedDocumentCount() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)

	n, err := sessions.EstimatedDocumentCount()
	if err != nil {
		log.Fatal(err)
	}
	ada, err := sessions.CountDocuments(context.Background(), ttldb.Document{"user": "ada"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, ada)
	// Output: 5 2
}

// Distinct returns each value once, in BSON order; arrays contribute
// their elements.
func ExampleCollection_Distinct() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)
	if _, err := sessions.UpdateOne(ttldb.Document{"_id": "s4"},
		ttldb.Document{"$set": ttldb.Document{"user": []string{"linus", "ken"}}}); err != nil {
		log.Fatal(err)
	}
	users, err := sessions.Distinct(context.Background(), "user", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(users)
	// Output: [ada grace ken linus]
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
	left, _ := sessions.EstimatedDocumentCount()
	fmt.Println(n, left)
	// Output:
	// true
	// 2 3
}
