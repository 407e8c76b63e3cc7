// Command eventlog runs the TTL scenario of MongoDB's manual on ttldb: an
// eventlog collection whose documents expire a fixed time after their
// lastModifiedDate, as with
//
//	db.eventlog.createIndex({lastModifiedDate: 1}, {expireAfterSeconds: 3600})
//
// scaled down to 2 seconds, with the TTL monitor waking every 500 ms instead
// of every 60 s, on the real clock. It inserts events for a second, keeps
// one of them alive by refreshing its lastModifiedDate ($currentDate), and
// prints the monitor's metrics as the events expire. It finishes in about
// five seconds.
//
//	go run ./examples/eventlog
package main

import (
	"context"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/ttldb/ttldb"
)

const (
	expireAfter = 2 * time.Second
	interval    = 500 * time.Millisecond
)

func main() {
	var archived atomic.Int64
	db, err := ttldb.Open(
		ttldb.WithMonitor(ttldb.MonitorOptions{Interval: interval}),
		// Archive, then delete (the Online Archive pattern): the hook sees
		// each batch before the monitor removes it.
		ttldb.WithOnExpire(func(ctx context.Context, b ttldb.ExpiredBatch) error {
			archived.Add(int64(len(b.Docs)))
			return nil
		}),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	events := db.Collection("eventlog")
	name, err := events.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")},
		ExpireAfterSeconds: ttldb.Seconds(int32(expireAfter / time.Second)),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("TTL index %q: documents expire %v after lastModifiedDate; monitor every %v\n\n", name, expireAfter, interval)

	start := time.Now()
	// Ten events every 100 ms for one second.
	for i := range 100 {
		if i%10 == 0 && i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		_, err := events.InsertOne(context.Background(), ttldb.Document{
			"_id":              fmt.Sprintf("evt-%03d", i),
			"kind":             []string{"login", "click", "logout"}[i%3],
			"lastModifiedDate": time.Now(),
		})

		if err != nil {
			log.Fatal(err)
		}
	}
	at, _, _ := events.ExpiresAt(context.Background(), "evt-000")
	fmt.Printf("inserted 100 events in %v; evt-000 expires at +%v\n\n", time.Since(start).Round(10*time.Millisecond), at.Sub(start).Round(10*time.Millisecond))

	fmt.Println("  time   stored  backlog  passes  sub-passes  deleted  archived")
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for range tick.C {
		// Keep evt-099 alive: refreshing lastModifiedDate pushes its expiry.
		if time.Since(start) < 3*time.Second {
			if _, err := events.UpdateOne(context.Background(), ttldb.Document{"_id": "evt-099"},
				ttldb.Document{"$currentDate": ttldb.Document{"lastModifiedDate": true}}); err != nil {
				log.Fatal(err)
			}
		}
		n, err := events.CountDocuments(context.Background(), nil)
		if err != nil {
			log.Fatal(err)
		}
		m := db.Metrics().TTL
		fmt.Printf("%5.1fs  %6d  %7d  %6d  %10d  %7d  %8d\n", time.Since(start).Seconds(), n, m.Backlog,
			m.Passes, m.SubPasses, m.DeletedDocuments, archived.Load())
		if n <= 1 && time.Since(start) > 3500*time.Millisecond || time.Since(start) > 5*time.Second {
			break
		}
	}
	cur, err := events.Find(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	var left []ttldb.Document
	if err := cur.All(context.Background(), &left); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\nleft: %d event(s)", len(left))
	for _, d := range left {
		fmt.Printf(" %v", d["_id"])
	}
	fmt.Printf(" — kept alive by $currentDate until +3s, it expires 2s after its last refresh\n")
}
