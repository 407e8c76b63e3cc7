package ttldb_test

import (
	"context"
	"fmt"
	"log"
	"regexp"

	"github.com/ttldb/ttldb"
)

// Array update operators: $push with modifiers keeps the five latest
// scores, $addToSet adds a tag once, $pull removes by value or condition,
// $pop drops the first element.
func ExampleCollection_UpdateOne_arrayOperators() {
	db, _ := openExample()
	defer db.Close()
	players := db.Collection("players")
	if _, err := players.InsertOne(ttldb.Document{"_id": "ada", "scores": []any{7, 3, 9}, "tags": []any{"new"}, "queue": []any{"a", "b", "c"}}); err != nil {
		log.Fatal(err)
	}
	_, err := players.UpdateOne(ttldb.Document{"_id": "ada"}, ttldb.Document{
		"$push":     ttldb.Document{"scores": ttldb.Document{"$each": []any{8, 1, 10}, "$sort": -1, "$slice": 5}},
		"$addToSet": ttldb.Document{"tags": ttldb.Document{"$each": []any{"new", "pro"}}},
		"$pop":      ttldb.Document{"queue": -1},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = players.UpdateOne(ttldb.Document{"_id": "ada"}, ttldb.Document{
		"$pull": ttldb.Document{"scores": ttldb.Document{"$lt": 8}, "tags": "new"},
	})
	if err != nil {
		log.Fatal(err)
	}
	doc, _ := players.FindOne(ttldb.Document{"_id": "ada"}).Document()
	fmt.Println(doc["scores"], doc["tags"], doc["queue"])

	// A $push to a field that is not an array is an error that changes nothing.
	_, err = players.UpdateOne(ttldb.Document{"_id": "ada"}, ttldb.Document{"$push": ttldb.Document{"tags.0": "x"}})
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
		res, err := sessions.UpdateOne(ttldb.Document{"_id": "s1"}, refresh, ttldb.UpdateOptions{Upsert: true})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("inserted:", res.UpsertedID != nil)
	}
	doc, _ := sessions.FindOne(ttldb.Document{"_id": "s1"}).Document()
	fmt.Println(doc["user"], doc["hits"])
	// Output:
	// inserted: true
	// inserted: false
	// inserted: false
	// ada 3
}

// Field update operators: $mul scales, $min and $max keep a low and high
// water mark, $rename moves a field.
func ExampleCollection_UpdateOne_fieldOperators() {
	db, _ := openExample()
	defer db.Close()
	stats := db.Collection("stats")
	if _, err := stats.InsertOne(ttldb.Document{"_id": 1, "price": 10, "low": 5, "high": 50, "qty": 3}); err != nil {
		log.Fatal(err)
	}
	_, err := stats.UpdateOne(ttldb.Document{"_id": 1}, ttldb.Document{
		"$mul":    ttldb.Document{"price": 1.5},
		"$min":    ttldb.Document{"low": 2},
		"$max":    ttldb.Document{"high": 40}, // not higher: unchanged
		"$rename": ttldb.Document{"qty": "stock.count"},
	})
	if err != nil {
		log.Fatal(err)
	}
	doc, _ := stats.FindOne(ttldb.Document{"_id": 1}).Document()
	fmt.Println(doc["price"], doc["low"], doc["high"], doc["stock"], doc["qty"])

	// Two operators on one path conflict, as in MongoDB.
	_, err = stats.UpdateOne(ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"low": 0}, "$min": ttldb.Document{"low": 1}})
	fmt.Println(err)
	// Output:
	// 15 2 50 map[count:3] <nil>
	// collection "stats": ttldb: invalid update: updating the path "low" would create a conflict at "low"
}

// $regex matches strings (and string elements of arrays) with RE2, the
// standard library's linear-time engine; a *regexp.Regexp value works too.
// PCRE-only syntax such as lookahead is refused.
func ExampleCollection_Find_regex() {
	db, _ := openExample()
	defer db.Close()
	users := db.Collection("users")
	if _, err := users.InsertMany([]ttldb.Document{
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
	if _, err := orders.InsertMany([]ttldb.Document{
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
	if _, err := readings.InsertMany([]ttldb.Document{
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
