package engine

import (
	"sync"
	"time"

	"github.com/ttldb/ttldb/ttltest"
)

// modelClock is the DB's clock in the model test: a ttltest.Clock whose
// every change, and every value Now returned, is seen by the open
// clockWindows in one order with the checker's own marks. A window opened
// when a batch could begin and closed when its DeleteEvent arrives holds
// every state the clock had while the batch held the write lock: the
// "moment of deletion" is one of them.
//
// It also tracks the ExpireAfterSeconds of the model's TTL indexes, so that
// a window knows every value a concurrent CollMod may have put in force.
//
// Timers are its own and measure elapsed (monotonic) time, as Clock
// requires: only Advance moves them, a jump (a wall-clock correction) does
// not. The DB's only sleeper is its monitor, which waits on its latest
// timer alone (and stops those it abandons), so the clock keeps only the
// latest: while it has neither fired nor been stopped, the monitor is
// asleep and no background pass runs.
type modelClock struct {
	mu     sync.Mutex
	fake   *ttltest.Clock
	offset time.Duration // wall - "true" time: -24h, 0 or +24h
	mono   time.Duration // total of Advance: what timers measure
	timer  *modelTimer   // the latest NewTimer
	armed  *sync.Cond    // signalled by NewTimer
	wins   []*clockWindow

	eas     []int64 // ExpireAfterSeconds in force, per model TTL index
	easNext []int64 // the value a CollMod in flight sets (-1: none)
}

type modelTimer struct {
	c           *modelClock
	at          time.Duration // on the mono scale
	ch          chan time.Time
	fired, stop bool
}

// C implements Timer.
func (t *modelTimer) C() <-chan time.Time { return t.ch }

// Stop implements Timer.
func (t *modelTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.fired || t.stop {
		return false
	}
	t.stop = true
	return true
}

// clockWindow is what was true between open and close: the clock's lowest
// and highest state, the values Now returned (when nows is kept), and the
// lowest ExpireAfterSeconds in force per index.
type clockWindow struct {
	lo, hi time.Time
	nows   map[int64]struct{} // UnixNano of every value Now returned
	easMin []int64
}

func newModelClock(start time.Time, eas []int64) *modelClock {
	c := &modelClock{fake: ttltest.NewClock(start), eas: eas, easNext: make([]int64, len(eas))}
	for i := range c.easNext {
		c.easNext[i] = -1
	}
	c.armed = sync.NewCond(&c.mu)
	return c
}

// Now implements Clock.
func (c *modelClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.fake.Now()
	for _, w := range c.wins {
		if w.nows != nil {
			w.nows[v.UnixNano()] = struct{}{}
		}
	}
	return v
}

// NewTimer implements Clock.
func (c *modelClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &modelTimer{c: c, at: c.mono + d, ch: make(chan time.Time, 1)}
	c.timer = t
	c.fireLocked()
	c.armed.Broadcast()
	return t
}

// peek returns the clock's state without recording a read.
func (c *modelClock) peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fake.Now()
}

// Advance moves the clock and monotonic time forward by d.
func (c *modelClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fake.Advance(d)
	c.mono += d
	c.fireLocked()
	c.changedLocked()
}

// jump sets the wall clock to "true" time + off (a correction of ±1 day);
// monotonic time does not move. With waitAsleep, a backward jump first
// waits until no background pass can be running, and reports false if
// the monitor did not go to sleep within a (real) minute.
func (c *modelClock) jump(off time.Duration, waitAsleep bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if waitAsleep && off < c.offset {
		stuck := false
		watchdog := time.AfterFunc(time.Minute, func() {
			c.mu.Lock()
			stuck = true
			c.armed.Broadcast()
			c.mu.Unlock()
		})
		defer watchdog.Stop()
		for c.timer == nil || c.timer.fired || c.timer.stop {
			if stuck {
				return false
			}
			c.armed.Wait()
		}
	}
	c.fake.Set(c.fake.Now().Add(off - c.offset))
	c.offset = off
	c.changedLocked()
	return true
}

func (c *modelClock) fireLocked() {
	if t := c.timer; t != nil && !t.fired && !t.stop && t.at <= c.mono {
		t.fired = true
		t.ch <- c.fake.Now()
	}
}

func (c *modelClock) changedLocked() {
	now := c.fake.Now()
	for _, w := range c.wins {
		w.lo = minTime(w.lo, now)
		w.hi = maxTime(w.hi, now)
	}
}

// open starts w from now (clearing what it held); keepNows records the
// values Now returns while it is open.
func (c *modelClock) open(w *clockWindow, keepNows bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.fake.Now()
	w.lo, w.hi = now, now
	w.nows = nil
	if keepNows {
		w.nows = map[int64]struct{}{}
	}
	w.easMin = append(w.easMin[:0], c.eas...)
	for i, n := range c.easNext {
		if n >= 0 {
			w.easMin[i] = min(w.easMin[i], n)
		}
	}
	c.wins = append(c.wins, w)
}

// close stops w: it keeps what it saw until it is opened again.
func (c *modelClock) close(w *clockWindow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.wins {
		if x == w {
			c.wins = append(c.wins[:i], c.wins[i+1:]...)
			return
		}
	}
}

// collModStart and collModEnd bracket a CollMod setting index i's
// ExpireAfterSeconds to n: in between, either value may be in force.
func (c *modelClock) collModStart(i int, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.easNext[i] = n
	for _, w := range c.wins {
		w.easMin[i] = min(w.easMin[i], n)
	}
}

func (c *modelClock) collModEnd(i int, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.eas[i], c.easNext[i] = n, -1
}

// expireAfter returns index i's ExpireAfterSeconds in force (the new value
// once a CollMod in flight returns).
func (c *modelClock) expireAfter(i int) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.eas[i]) * time.Second
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
