package engine

import "time"

// Clock is the source of time for everything a DB does: the monitor's
// schedule and budgets, the "now" of every TTL pass, $currentDate, generated
// ObjectIDs and the metrics' timestamps. ttldb never reads the wall clock
// itself; Open uses the system clock unless WithClock gives another.
//
// Implementations must be safe for concurrent use. The package ttltest has a
// fake clock that tests advance by hand.
type Clock interface {
	// Now returns the current (wall) time. It may jump, forward or back,
	// when the clock is set.
	Now() time.Time
	// NewTimer returns a timer that fires once d has elapsed, as
	// time.NewTimer does: d of elapsed (monotonic) time after the call,
	// whatever Now does meanwhile. A d <= 0 fires at once. The monitor
	// sleeps only through NewTimer, and stops every timer it abandons.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by Clock.NewTimer; a *time.Timer wrapped
// in it behaves as the system clock's do. It is an alias of an interface
// literal, so that a clock package (such as ttltest) can implement Clock
// without importing ttldb.
type Timer = interface {
	// C returns the channel on which the timer sends the time once, when
	// it fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It returns true if it stopped
	// it, false if the timer had already fired or been stopped. A stopped
	// timer frees what the clock holds for it.
	Stop() bool
}

// systemClock is the real clock. It is the only place ttldb touches the
// wall clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

// systemTimer adapts a *time.Timer to Timer.
type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }

// SystemClock implements ttldb.SystemClock, whose documentation is the contract.
func SystemClock() Clock { return systemClock{} }
