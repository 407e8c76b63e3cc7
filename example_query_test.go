package ttldb_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"regexp"
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
		if _, err := c.InsertOne(context.Background(), s); err != nil {
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
	defer cur.Close(context.Background())
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

	n, err := sessions.EstimatedDocumentCount(context.Background())
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
	if _, err := sessions.UpdateOne(context.Background(), ttldb.Document{"_id": "s4"},
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

// $regex matches strings (and string elements of arrays) with RE2, the
// standard library's linear-time engine; a *regexp.Regexp value works too.
// PCRE-only syntax such as lookahead is refused.
func ExampleCollection_Find_regex() {
	db, _ := openExample()
	defer db.Close()
	users := db.Collection("users")
	if _, err := users.InsertMany(context.Background(), []ttldb.Document{
		{"_id": 1, "email": "Ada@Example.com"},
		{"_id": 2, "email": "bob@example.org"},
		{"_id": 3, "email": "carol@example.com", "aliases": []string{"cc@example.org"}},
	}); err != nil {
		log.Fatal(err)
	}
	n, _ := users.CountDocuments(context.Background(), ttldb.Document{"email": ttldb.Document{"$regex": `@example\.com$`, "$options": "i"}})
	fmt.Println(n)
	var docs []ttldb.Document
	cur, _ := users.Find(context.Background(), ttldb.Document{"aliases": regexp.MustCompile(`\.org$`)})
	_ = cur.All(context.Background(), &docs)
	fmt.Println(docs[0]["_id"])
	_, err := users.Find(context.Background(), ttldb.Document{"email": ttldb.Document{"$regex": `^(?!bob)`}})
	fmt.Println(err)
	// Output:
	// 2
	// 3
	// collection "users": ttldb: invalid filter: $regex at "email": lookahead "(?!" is PCRE-only syntax that RE2 (Go regexp) does not support
}

// Array query operators: $elemMatch needs one element to meet every
// condition, $size counts elements, $all needs every value present.
func ExampleCollection_Find_arrayOperators() {
	db, _ := openExample()
	defer db.Close()
	orders := db.Collection("orders")
	if _, err := orders.InsertMany(context.Background(), []ttldb.Document{
		{"_id": 1, "items": []any{ttldb.Document{"sku": "a", "qty": 1}, ttldb.Document{"sku": "b", "qty": 5}}, "tags": []any{"gift", "rush"}},
		{"_id": 2, "items": []any{ttldb.Document{"sku": "a", "qty": 5}}, "tags": []any{"rush"}},
	}); err != nil {
		log.Fatal(err)
	}
	ids := func(f ttldb.Document) []any {
		cur, err := orders.Find(context.Background(), f)
		if err != nil {
			log.Fatal(err)
		}
		var out []any
		for d, err := range cur.Documents(context.Background()) {
			if err != nil {
				log.Fatal(err)
			}
			out = append(out, d["_id"])
		}
		return out
	}
	fmt.Println(ids(ttldb.Document{"items": ttldb.Document{"$elemMatch": ttldb.Document{"sku": "a", "qty": ttldb.Document{"$gte": 5}}}}))
	fmt.Println(ids(ttldb.Document{"items": ttldb.Document{"$size": 2}}))
	fmt.Println(ids(ttldb.Document{"tags": ttldb.Document{"$all": []any{"rush", "gift"}}}))
	// Output:
	// [2]
	// [1]
	// [1]
}

// $type selects by BSON type name or number ("number" is any numeric
// type); $mod by remainder.
func ExampleCollection_Find_typeAndMod() {
	db, _ := openExample()
	defer db.Close()
	readings := db.Collection("readings")
	if _, err := readings.InsertMany(context.Background(), []ttldb.Document{
		{"_id": 1, "v": 12}, {"_id": 2, "v": "12"}, {"_id": 3, "v": 7.5}, {"_id": 4, "v": nil},
	}); err != nil {
		log.Fatal(err)
	}
	for _, f := range []ttldb.Document{
		{"v": ttldb.Document{"$type": "number"}},
		{"v": ttldb.Document{"$type": []any{"string", "null"}}},
		{"v": ttldb.Document{"$mod": []any{4, 0}}},
	} {
		n, err := readings.CountDocuments(context.Background(), f)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(n)
	}
	_, err := readings.Find(context.Background(), ttldb.Document{"v": ttldb.Document{"$mod": []any{0, 1}}})
	fmt.Println(err)
	// Output:
	// 2
	// 2
	// 1
	// collection "readings": ttldb: invalid filter: $mod at "v": divisor cannot be 0
}
