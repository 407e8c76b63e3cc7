package ttldb_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ttldb/ttldb"
)

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

	id, err := sessions.InsertOne(Session{User: "ada", Roles: []string{"admin"}, LastSeen: clk.Now(), CSRFToken: "x"})
	if err != nil {
		log.Fatal(err)
	}
	doc, err := sessions.FindOne(ttldb.Document{"_id": id}).Document()
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
	if _, err := sessions.InsertMany([]Session{
		{User: "ada", Roles: []string{"admin"}, LastSeen: clk.Now()},
		{User: "bob", LastSeen: clk.Now().Add(time.Minute)},
	}); err != nil {
		log.Fatal(err)
	}

	var s Session
	if err := sessions.FindOne(ttldb.Document{"user": "ada"}).Decode(&s); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.User, s.Roles, s.LastSeen.Format(time.Kitchen), !s.ID.IsZero())

	err := sessions.FindOne(ttldb.Document{"user": "eve"}).Decode(&s)
	fmt.Println(errors.Is(err, ttldb.ErrNotFound))
	// Output:
	// ada [admin] 12:00PM true
	// true
}
