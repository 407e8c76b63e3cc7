// Command rollup answers the first questions asked of data that expires
// with aggregation pipelines: raw request events kept for an hour (a TTL
// index), rolled up per route and minute into a collection kept for a day
// ($merge into a second TTL collection), the busiest routes of the last
// five minutes, and the slowest request of each route. It runs on a fake
// clock, so it finishes at once.
//
//	go run ./examples/rollup
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

func main() {
	ctx := context.Background()
	clock := ttltest.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	db, err := ttldb.Open(ttldb.WithClock(clock), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// Raw events live an hour; the per-minute roll-up a day.
	requests := db.Collection("requests")
	perMinute := db.Collection("per_minute")
	must(requests.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(3600)}))
	must(perMinute.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("minute")}, ExpireAfterSeconds: ttldb.Seconds(86400)}))

	// Ten minutes of traffic: one request every two seconds.
	routes := []string{"/login", "/search", "/cart", "/search", "/search"}
	start := clock.Now().Add(-10 * time.Minute)
	var events []ttldb.Document
	for i := range 300 {
		events = append(events, ttldb.Document{
			"route": routes[i%len(routes)],
			"ms":    10 + (i*37)%90,
			"at":    start.Add(time.Duration(2*i) * time.Second),
		})
	}
	must(requests.InsertMany(ctx, events))

	// Roll the raw events up per route and minute, into per_minute.
	minute := bson.D{{Key: "$dateTrunc", Value: bson.D{{Key: "date", Value: "$at"}, {Key: "unit", Value: "minute"}}}}
	must(requests.Aggregate(ctx, bson.A{
		bson.D{{Key: "$group", Value: bson.D{
			{Key: "_id", Value: bson.D{{Key: "route", Value: "$route"}, {Key: "minute", Value: minute}}},
			{Key: "minute", Value: bson.D{{Key: "$min", Value: minute}}},
			{Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
			{Key: "avgMs", Value: bson.D{{Key: "$avg", Value: "$ms"}}},
		}}},
		bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "per_minute"}, {Key: "whenMatched", Value: "replace"}}}},
	}))
	n, err := perMinute.CountDocuments(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rolled up into %d per-minute documents\n", n)

	// The busiest routes of the last five minutes, from the raw events.
	cur, err := requests.Aggregate(ctx, bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "at", Value: bson.D{{Key: "$gte", Value: clock.Now().Add(-5 * time.Minute)}}}}}},
		bson.D{{Key: "$sortByCount", Value: "$route"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	var busiest []struct {
		Route string `bson:"_id"`
		Count int    `bson:"count"`
	}
	if err := cur.All(ctx, &busiest); err != nil {
		log.Fatal(err)
	}
	for _, b := range busiest {
		fmt.Printf("last 5 min: %-8s %d requests\n", b.Route, b.Count)
	}
	ex, err := requests.ExplainAggregate(ctx, bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "at", Value: bson.D{{Key: "$gte", Value: clock.Now().Add(-5 * time.Minute)}}}}}},
		bson.D{{Key: "$sortByCount", Value: "$route"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("plan: %s on %s, %d of %d events examined\n", ex.Read.Stage, ex.Read.IndexName, ex.Read.DocsExamined, len(events))

	// The slowest request of each route, from the roll-up's source.
	cur, err = requests.Aggregate(ctx, bson.A{
		bson.D{{Key: "$group", Value: bson.D{
			{Key: "_id", Value: "$route"},
			{Key: "slowest", Value: bson.D{{Key: "$top", Value: bson.D{
				{Key: "sortBy", Value: bson.D{{Key: "ms", Value: -1}}},
				{Key: "output", Value: bson.D{{Key: "ms", Value: "$ms"}, {Key: "at", Value: "$at"}}},
			}}}},
		}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for cur.Next(ctx) {
		var r struct {
			Route   string `bson:"_id"`
			Slowest struct {
				Ms int       `bson:"ms"`
				At time.Time `bson:"at"`
			} `bson:"slowest"`
		}
		if err := cur.Decode(&r); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("slowest %-8s %d ms at %s\n", r.Route, r.Slowest.Ms, r.Slowest.At.Format("15:04:05"))
	}
	if err := cur.Err(); err != nil {
		log.Fatal(err)
	}

	// An hour later the raw events are gone; the roll-up stays for a day.
	clock.Advance(time.Hour)
	if _, err := db.RunTTLPass(ctx); err != nil {
		log.Fatal(err)
	}
	raw, _ := requests.CountDocuments(ctx, nil)
	kept, _ := perMinute.CountDocuments(ctx, nil)
	fmt.Printf("an hour later: %d raw events, %d per-minute documents\n", raw, kept)
}

// must stops the program on an error.
func must[T any](_ T, err error) {
	if err != nil {
		log.Fatal(err)
	}
}
