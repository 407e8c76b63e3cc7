package ttldb

import (
	"github.com/ttldb/ttldb/internal/engine"
)

// Clock is the source of time for everything a DB does: the monitor's
// schedule and budgets, the "now" of every TTL pass, $currentDate, generated
// ObjectIDs and the metrics' timestamps. ttldb never reads the wall clock
// itself; Open uses the system clock unless WithClock gives another.
//
// Implementations must be safe for concurrent use. The package ttltest has a
// fake clock that tests advance by hand.
type Clock = engine.Clock

// Timer is a one-shot timer made by Clock.NewTimer; a *time.Timer wrapped
// in it behaves as the system clock's do. It is an alias of an interface
// literal, so that a clock package (such as ttltest) can implement Clock
// without importing ttldb.
type Timer = engine.Timer

// SystemClock returns the real wall clock, the default of Open. Its timers
// are time.Timer's: monotonic, unaffected by changes of the wall clock. It
// runs on fake time inside a testing/synctest bubble, as all of package
// time does.
func SystemClock() Clock {
	return engine.SystemClock()
}
