// Package ttltest provides a fake clock for tests of code that uses ttldb,
// so that expiry, monitor schedules and budgets run in microseconds instead
// of minutes. Pass a *Clock to ttldb.WithClock.
package ttltest

import (
	"sort"
	"sync"
	"time"
)

// Clock is a manually advanced clock. It implements ttldb.Clock. The zero
// value is not usable; call NewClock. All methods are safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	step    time.Duration // added to now after every Now call
	waiters []waiter
	changed *sync.Cond // signalled when waiters change
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a clock that reads start until it is advanced.
func NewClock(start time.Time) *Clock {
	c := &Clock{now: start}
	c.changed = sync.NewCond(&c.mu)
	return c
}

// Now returns the clock's time. If SetAutoAdvance set a step, the clock then
// moves forward by that step, so code that measures elapsed time between two
// Now calls (a budget) sees time pass deterministically.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	if c.step > 0 {
		c.setLocked(c.now.Add(c.step))
	}
	return t
}

// After returns a channel that receives the clock's time once the clock has
// been advanced by at least d. A d <= 0 fires at once.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	c.changed.Broadcast()
	return ch
}

// Advance moves the clock forward by d and fires every After whose time has
// come, in time order.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// Set moves the clock to t (which may be earlier: the clock does not refuse
// to go back, so tests can model a wall clock being corrected).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(t)
}

func (c *Clock) setLocked(t time.Time) {
	c.now = t
	sort.SliceStable(c.waiters, func(i, j int) bool { return c.waiters[i].at.Before(c.waiters[j].at) })
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.ch <- t
			continue
		}
		kept = append(kept, w)
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
	c.changed.Broadcast()
}

// SetAutoAdvance makes every later Now call move the clock forward by step
// after reading it (0 turns it off).
func (c *Clock) SetAutoAdvance(step time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step = step
}

// Waiters returns how many After channels are waiting to fire.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// BlockUntilWaiters blocks until at least n After channels are waiting to
// fire: a test calls it to know that the code under test has gone to sleep
// before advancing the clock.
func (c *Clock) BlockUntilWaiters(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.waiters) < n {
		c.changed.Wait()
	}
}

// NextWake returns the earliest time an After is waiting for, and false if
// none is.
func (c *Clock) NextWake() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiters) == 0 {
		return time.Time{}, false
	}
	min := c.waiters[0].at
	for _, w := range c.waiters[1:] {
		if w.at.Before(min) {
			min = w.at
		}
	}
	return min, true
}
