// Package ttltest provides a fake clock for tests of code that uses ttldb,
// so that expiry, monitor schedules and budgets run in microseconds instead
// of minutes. Pass a *Clock to ttldb.WithClock.
//
// A Clock has two times, as a computer does: the wall time Now returns,
// which Set may move anywhere (forward or back, as an NTP correction
// would), and the elapsed (monotonic) time, which only Advance and
// SetAutoAdvance move. Timers run on elapsed time, like Go's: a timer for d
// fires once the clock has been advanced by d since it was armed, whatever
// Set did meanwhile.
//
// Tests of code that uses the system clock can run in a testing/synctest
// bubble instead, where time.Sleep advances a fake time (see the README).
package ttltest

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// Timer is the timer NewTimer returns; it is the same type as ttldb.Timer.
type Timer = interface {
	// C returns the channel on which the timer sends the clock's time
	// once, when it fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing and stops counting it as a
	// waiter. It returns false if the timer had fired or been stopped.
	Stop() bool
}

// Clock is a manually advanced clock. It implements ttldb.Clock. The zero
// value is not usable; call NewClock. All methods are safe for concurrent
// use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time     // wall time
	elapsed time.Duration // monotonic time since NewClock: Advance moves it, Set does not
	step    time.Duration // added by every Now call
	seq     uint64        // timers armed so far; orders timers due together
	timers  []*fakeTimer  // live timers: armed, neither fired nor stopped
	changed *sync.Cond    // signalled when timers are armed, fired or stopped
}

// fakeTimer is one armed timer. Its fields are guarded by the clock's mu.
type fakeTimer struct {
	c   *Clock
	ch  chan time.Time
	at  time.Duration // the clock's elapsed time at which it fires
	seq uint64
}

// NewClock returns a clock that reads start until it is advanced or set.
func NewClock(start time.Time) *Clock {
	c := &Clock{now: start}
	c.changed = sync.NewCond(&c.mu)
	return c
}

// Now returns the clock's wall time. If SetAutoAdvance set a step, the
// clock then moves forward by that step (as Advance would, firing the timers
// due), so code that measures elapsed time between two Now calls (a budget)
// sees time pass deterministically.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	if c.step > 0 {
		c.advanceLocked(c.step)
	}
	return t
}

// NewTimer returns a timer that fires once the clock has been advanced by
// d (Advance or SetAutoAdvance) from now, whatever Set does to the wall
// time meanwhile, as Go's timers are monotonic. A d <= 0 fires at once.
// Until it fires or is stopped it counts in Waiters.
func (c *Clock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.seq++
	t.at, t.seq = c.elapsed+d, c.seq
	c.timers = append(c.timers, t)
	c.changed.Broadcast()
	return t
}

// After is NewTimer(d).C() for code that never stops its timer: it counts
// in Waiters until it fires.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	return c.NewTimer(d).C()
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	c.changed.Broadcast()
	return true
}

// Advance lets d of time pass: the wall time and the elapsed time move
// forward by d, and every timer whose time has come fires, in the order of
// their firing times (then of arming). A d < 0 only sets the wall time back
// by -d, as Set would: elapsed time never goes back.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d < 0 {
		c.now = c.now.Add(d)
		return
	}
	c.advanceLocked(d)
}

// Set moves the wall time to t, which may be earlier or later: a wall
// clock being corrected. Like a real clock step, it fires no timer and
// delays none; timers wait for elapsed time (Advance).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *Clock) advanceLocked(d time.Duration) {
	c.now = c.now.Add(d)
	c.elapsed += d
	due := c.timers[:0:0]
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at <= c.elapsed {
			due = append(due, t)
		} else {
			kept = append(kept, t)
		}
	}
	if len(due) == 0 {
		return
	}
	clear(c.timers[len(kept):])
	c.timers = kept
	slices.SortFunc(due, func(a, b *fakeTimer) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq))
	})
	for _, t := range due {
		t.ch <- c.now
	}
	c.changed.Broadcast()
}

// SetAutoAdvance makes every later Now call move the clock forward by step
// after reading it (0 turns it off).
func (c *Clock) SetAutoAdvance(step time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step = step
}

// Waiters returns how many timers are live: armed, and neither fired nor
// stopped. A timer the code under test stopped (the ttldb monitor stops
// the one it abandons when its interval changes) no longer counts.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Armed returns how many timers have been armed (with d > 0) since
// NewClock, live or not. A test that made the code under test re-arm its
// sleep (the ttldb monitor does when its interval or state changes) waits
// for Armed to pass the value it read before: until then the old timer may
// still be live.
func (c *Clock) Armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int(c.seq)
}

// BlockUntilWaiters blocks until at least n timers are live: a test calls
// it to know that the code under test has gone to sleep before advancing
// the clock. It blocks for ever if that never happens; see
// BlockUntilWaitersContext.
func (c *Clock) BlockUntilWaiters(n int) {
	_ = c.BlockUntilWaitersContext(context.Background(), n)
}

// BlockUntilWaitersContext is BlockUntilWaiters bounded by ctx: it returns
// nil once at least n timers are live, or ctx's error if ctx ends first
// (use context.WithTimeout for a time limit).
func (c *Clock) BlockUntilWaitersContext(ctx context.Context, n int) error {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.changed.Broadcast()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.changed.Wait()
	}
	return nil
}

// NextWake returns the wall time at which the earliest live timer fires if
// the clock is only advanced from now on (Now plus its remaining time), and
// false if no timer is live.
func (c *Clock) NextWake() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	first := c.timers[0].at
	for _, t := range c.timers[1:] {
		first = min(first, t.at)
	}
	return c.now.Add(first - c.elapsed), true
}
