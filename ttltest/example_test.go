package ttltest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// A test drives ttldb's background monitor with the fake clock: it waits
// until the monitor sleeps, advances the clock past its interval, and waits
// until it sleeps again, its pass done.
func Example() {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db, err := ttldb.Open(ttldb.WithClock(clk)) // a monitor pass every 60 s of clk
	if err != nil {
		panic(err)
	}
	defer db.Close()
	sessions := db.Collection("sessions")
	if _, err := sessions.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastSeen")},
		ExpireAfterSeconds: ttldb.Seconds(30 * 60),
	}); err != nil {
		panic(err)
	}
	if _, err := sessions.InsertOne(context.Background(), ttldb.Document{"_id": "ada", "lastSeen": clk.Now()}); err != nil {
		panic(err)
	}

	clk.BlockUntilWaiters(1) // the monitor is asleep
	clk.Advance(29 * time.Minute)
	clk.BlockUntilWaiters(1) // it woke, ran a pass and sleeps again
	n, _ := sessions.CountDocuments(context.Background(), nil)
	fmt.Println("after 29 min:", n, "session")

	clk.Advance(time.Minute)
	clk.BlockUntilWaiters(1)
	n, _ = sessions.CountDocuments(context.Background(), nil)
	fmt.Println("after 30 min:", n, "sessions")
	fmt.Println("passes:", db.Metrics().TTL.Passes)
	// Output:
	// after 29 min: 1 session
	// after 30 min: 0 sessions
	// passes: 2
}

// Timers run on elapsed time, as Go's do: setting the wall time back a day
// does not delay a one-minute timer by a day.
func ExampleClock_NewTimer() {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	tm := clk.NewTimer(time.Minute)
	clk.Set(clk.Now().Add(-24 * time.Hour)) // the wall clock is corrected
	fmt.Println("waiting:", clk.Waiters())
	clk.Advance(time.Minute)
	fmt.Println("fired at", (<-tm.C()).Format(time.DateTime))
	fmt.Println("waiting:", clk.Waiters())
	// Output:
	// waiting: 1
	// fired at 2025-12-31 12:01:00
	// waiting: 0
}
