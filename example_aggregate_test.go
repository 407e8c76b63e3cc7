package ttldb_test

import (
	"context"
	"fmt"
	"log"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb"
)

// Active sessions per user, with their hits, busiest first: a $group and
// a $sort, the pipeline given as the driver gives it.
func ExampleCollection_Aggregate() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)
	ctx := context.Background()

	cur, err := sessions.Aggregate(ctx, bson.A{
		bson.D{{Key: "$group", Value: bson.D{
			{Key: "_id", Value: "$user"},
			{Key: "sessions", Value: bson.D{{Key: "$sum", Value: 1}}},
			{Key: "hits", Value: bson.D{{Key: "$sum", Value: "$hits"}}},
		}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "hits", Value: -1}, {Key: "_id", Value: 1}}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	var perUser []struct {
		User     string `bson:"_id"`
		Sessions int    `bson:"sessions"`
		Hits     int    `bson:"hits"`
	}
	if err := cur.All(ctx, &perUser); err != nil {
		log.Fatal(err)
	}
	for _, u := range perUser {
		fmt.Printf("%-6s %d sessions, %d hits\n", u.User, u.Sessions, u.Hits)
	}
	// Output:
	// ada    2 sessions, 80 hits
	// grace  2 sessions, 50 hits
	// linus  1 sessions, 20 hits
}

// ExplainAggregate shows how the pipeline's head reads the collection:
// here the index on user answers the $match.
func ExampleCollection_ExplainAggregate() {
	db, _ := openExample()
	defer db.Close()
	sessions := sessionsExample(db)
	ctx := context.Background()
	if _, err := sessions.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("user")}}); err != nil {
		log.Fatal(err)
	}
	ex, err := sessions.ExplainAggregate(ctx, bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "user", Value: "grace"}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "hits", Value: bson.D{{Key: "$sum", Value: "$hits"}}}}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ex.Read.Stage, ex.Read.IndexName, ex.Read.IndexBounds, "examined:", ex.Read.DocsExamined)
	fmt.Println("answered by the read:", ex.Pushed, "then:", ex.Stages)
	// Output:
	// IXSCAN user_1 [["grace", "grace"]] examined: 2
	// answered by the read: [$match] then: [$group]
}
