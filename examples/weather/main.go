// Command weather runs the time-series scenario of MongoDB's TTL manual on
// ttldb: the weather24h collection, whose measurements expire after 24
// hours,
//
//	db.createCollection("weather24h", {timeseries: {timeField: "timestamp",
//	    metaField: "sensor", granularity: "hours"}, expireAfterSeconds: 86400})
//
// plus the partial TTL index that expires the New York headquarters
// sensor's readings after 1 hour instead:
//
//	db.weather24h.createIndex({timestamp: 1}, {partialFilterExpression:
//	    {sensor: {$eq: "40.761873, -73.984287"}}, expireAfterSeconds: 3600})
//
// A bucket goes only once its whole time range has expired, so with
// granularity "hours" (30-day buckets) the 1-hour rule would take 30 days
// and an hour. The example uses 10-minute buckets instead, so that the
// rule shows, and prints what granularity "hours" would do. Time runs on a
// fake clock: the example finishes at once.
//
//	go run ./examples/weather
package main

import (
	"context"
	"fmt"
	"log"
	"maps"
	"slices"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

const hq = "40.761873, -73.984287"

func main() {
	start := time.Date(2026, 3, 27, 8, 0, 0, 0, time.UTC)
	clock := ttltest.NewClock(start)
	var now time.Time
	db, err := ttldb.Open(
		ttldb.WithClock(clock),
		ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}), // passes run below, on demand
		ttldb.WithDeleteObserver(func(ev ttldb.DeleteEvent) {
			bySensor := map[string]int{}
			for m := range ev.Measurements() {
				bySensor[m["sensor"].(string)]++
			}
			for _, s := range slices.Sorted(maps.Keys(bySensor)) {
				n := bySensor[s]
				fmt.Printf("  %s  expired %2d readings of %-22q (rule %s)\n", now.Format("Jan 2 15:04"), n, s, ev.Index)
			}
		}),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	weather, err := db.CreateCollection(context.Background(), "weather24h", ttldb.CollectionOptions{
		TimeSeries: &ttldb.TimeSeriesOptions{
			TimeField:             "timestamp",
			MetaField:             "sensor",
			BucketMaxSpanSeconds:  600,
			BucketRoundingSeconds: 600,
		},
		ExpireAfterSeconds: ttldb.Seconds(86400),
	})

	if err != nil {
		log.Fatal(err)
	}
	if _, err := weather.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:                    []ttldb.IndexKey{ttldb.Asc("timestamp")},
		PartialFilterExpression: ttldb.Document{"sensor": ttldb.Document{"$eq": hq}},
		ExpireAfterSeconds:      ttldb.Seconds(3600),
	}); err != nil {
		log.Fatal(err)
	}

	// Two hours of readings, every 2 minutes, from three sensors.
	var readings []ttldb.Document
	for m := 0; m < 120; m += 2 {
		for i, s := range []string{hq, "51.507351, -0.127758", "35.689487, 139.691706"} {
			readings = append(readings, ttldb.Document{
				"timestamp": start.Add(time.Duration(m) * time.Minute),
				"sensor":    s,
				"temp":      12.0 + float64(i) + float64(m)/60,
			})
		}
	}
	if _, err := weather.InsertMany(context.Background(), readings); err != nil {
		log.Fatal(err)
	}
	info, _, _ := weather.TimeSeriesInfo(context.Background())
	fmt.Printf("%s  stored %d readings in %d buckets of %d s\n", start.Format("Jan 2 15:04"), info.Measurements, info.Buckets, info.Options.BucketMaxSpanSeconds)

	// Step through two days, a pass every 30 minutes.
	for now = start; now.Before(start.Add(50 * time.Hour)); now = now.Add(30 * time.Minute) {
		clock.Set(now)
		if _, err := db.RunTTLPass(context.Background()); err != nil {
			log.Fatal(err)
		}
	}
	left, _ := weather.CountDocuments(context.Background(), nil)
	m := db.Metrics().TTL
	fmt.Printf("after two days: %d readings left; the monitor deleted %d buckets holding %d readings\n", left, m.DeletedDocuments, m.DeletedMeasurements)

	// What granularity "hours" would do: 30-day buckets, so a reading goes
	// only once its bucket's whole range has expired.
	hours, err := db.CreateCollection(context.Background(), "weather24hHours", ttldb.CollectionOptions{
		TimeSeries:         &ttldb.TimeSeriesOptions{TimeField: "timestamp", MetaField: "sensor", Granularity: ttldb.GranularityHours},
		ExpireAfterSeconds: ttldb.Seconds(86400),
	})

	if err != nil {
		log.Fatal(err)
	}
	if _, err := hours.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:                    []ttldb.IndexKey{ttldb.Asc("timestamp")},
		PartialFilterExpression: ttldb.Document{"sensor": hq},
		ExpireAfterSeconds:      ttldb.Seconds(3600),
	}); err != nil {
		log.Fatal(err)
	}
	res, err := hours.InsertOne(context.Background(), ttldb.Document{"timestamp": start, "sensor": hq, "temp": 12.0})
	if err != nil {
		log.Fatal(err)
	}
	at, _, err := hours.ExpiresAt(context.Background(), res.InsertedID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("with granularity \"hours\" (30-day buckets starting at midnight), the headquarters reading of %s\n"+
		"would expire at %s, %.1f days later, not after 1 hour\n",
		start.Format("Jan 2 15:04"), at.Format("Jan 2 15:04"), at.Sub(start).Hours()/24)
}
