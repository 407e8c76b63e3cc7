package ttldb

import "time"

// Clock is the source of time for everything a DB does: the monitor's
// schedule and budgets, the "now" of every TTL pass, $currentDate, generated
// ObjectIDs and the metrics' timestamps. ttldb never reads the wall clock
// itself; Open uses the system clock unless WithClock gives another.
//
// Implementations must be safe for concurrent use. The package ttltest has a
// fake clock that tests advance by hand.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has elapsed on
	// this clock. The monitor sleeps only through After.
	After(d time.Duration) <-chan time.Time
}

// systemClock is the real clock. It is the only place ttldb touches the
// wall clock.
type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SystemClock returns the real wall clock, the default of Open.
func SystemClock() Clock { return systemClock{} }
