package ttltest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fired reports whether ch holds a value, and which.
func fired(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

func TestNowAdvanceSet(t *testing.T) {
	c := NewClock(start)
	assert.Equal(t, start, c.Now())
	assert.Equal(t, start, c.Now(), "the clock stands still until moved")
	c.Advance(90 * time.Second)
	assert.Equal(t, start.Add(90*time.Second), c.Now())
	c.Set(start.Add(-time.Hour))
	assert.Equal(t, start.Add(-time.Hour), c.Now(), "Set may go back")
	c.Advance(-time.Minute)
	assert.Equal(t, start.Add(-time.Hour-time.Minute), c.Now(), "a negative Advance sets the wall time back")
}

func TestTimerFiresAfterElapsedTime(t *testing.T) {
	c := NewClock(start)
	tm := c.NewTimer(10 * time.Second)
	assert.Equal(t, 1, c.Waiters())
	c.Advance(10*time.Second - time.Nanosecond)
	_, ok := fired(tm.C())
	assert.False(t, ok)
	c.Advance(time.Nanosecond)
	v, ok := fired(tm.C())
	require.True(t, ok)
	assert.Equal(t, start.Add(10*time.Second), v, "it sends the clock's time")
	assert.Zero(t, c.Waiters())
	assert.False(t, tm.Stop(), "a fired timer cannot be stopped")
	c.Advance(time.Hour)
	_, ok = fired(tm.C())
	assert.False(t, ok, "a timer fires once")
}

func TestTimerZeroOrNegativeFiresAtOnce(t *testing.T) {
	c := NewClock(start)
	for _, d := range []time.Duration{0, -time.Second} {
		tm := c.NewTimer(d)
		v, ok := fired(tm.C())
		require.True(t, ok)
		assert.Equal(t, start, v)
		assert.False(t, tm.Stop())
	}
	assert.Zero(t, c.Waiters())
	assert.Zero(t, c.Armed(), "only timers that wait are counted as armed")
}

// Rule: timers run on elapsed time, like Go's monotonic timers: a step of
// the wall time back does not delay them, a step forward does not fire
// them.
func TestTimerIgnoresSet(t *testing.T) {
	c := NewClock(start)
	tm := c.NewTimer(time.Minute)
	c.Advance(20 * time.Second)
	c.Set(start.Add(-24 * time.Hour))
	w, ok := c.NextWake()
	require.True(t, ok)
	assert.Equal(t, start.Add(-24*time.Hour+40*time.Second), w, "NextWake is the new wall time plus what is left")
	c.Advance(40 * time.Second)
	v, ok := fired(tm.C())
	require.True(t, ok, "a day back does not delay a timer by a day")
	assert.Equal(t, start.Add(-24*time.Hour+40*time.Second), v)

	tm = c.NewTimer(time.Minute)
	c.Set(c.Now().Add(24 * time.Hour))
	_, ok = fired(tm.C())
	assert.False(t, ok, "a day forward does not fire a one-minute timer")
	c.Advance(time.Minute)
	_, ok = fired(tm.C())
	assert.True(t, ok)
}

func TestTimerStop(t *testing.T) {
	c := NewClock(start)
	a, b := c.NewTimer(time.Second), c.NewTimer(2*time.Second)
	assert.Equal(t, 2, c.Waiters())
	assert.True(t, a.Stop())
	assert.False(t, a.Stop(), "stopped twice")
	assert.Equal(t, 1, c.Waiters(), "a stopped timer is no waiter")
	w, _ := c.NextWake()
	assert.Equal(t, start.Add(2*time.Second), w)
	c.Advance(time.Hour)
	_, ok := fired(a.C())
	assert.False(t, ok, "a stopped timer never fires")
	_, ok = fired(b.C())
	assert.True(t, ok)
	_, ok = c.NextWake()
	assert.False(t, ok)
	assert.Equal(t, 2, c.Armed())
}

// One Advance fires every timer it reaches, and only those.
func TestAdvanceFiresEveryDueTimer(t *testing.T) {
	c := NewClock(start)
	ds := []time.Duration{3 * time.Second, time.Second, 2 * time.Second, time.Second, 10 * time.Second}
	timers := make([]Timer, len(ds))
	for i, d := range ds {
		timers[i] = c.NewTimer(d)
	}
	c.Advance(5 * time.Second)
	for i, tm := range timers {
		v, ok := fired(tm.C())
		assert.Equal(t, ds[i] <= 5*time.Second, ok, "timer %d (%v)", i, ds[i])
		if ok {
			assert.Equal(t, start.Add(5*time.Second), v)
		}
	}
	assert.Equal(t, 1, c.Waiters())
}

func TestAfterCountsUntilFired(t *testing.T) {
	c := NewClock(start)
	ch := c.After(time.Second)
	assert.Equal(t, 1, c.Waiters())
	c.Advance(time.Second)
	v, ok := fired(ch)
	require.True(t, ok)
	assert.Equal(t, start.Add(time.Second), v)
	assert.Zero(t, c.Waiters())
}

func TestAutoAdvance(t *testing.T) {
	c := NewClock(start)
	tm := c.NewTimer(250 * time.Millisecond)
	c.SetAutoAdvance(100 * time.Millisecond)
	assert.Equal(t, start, c.Now())
	assert.Equal(t, start.Add(100*time.Millisecond), c.Now())
	_, ok := fired(tm.C())
	assert.False(t, ok)
	assert.Equal(t, start.Add(200*time.Millisecond), c.Now())
	_, ok = fired(tm.C())
	assert.True(t, ok, "time passed by auto-advance fires timers")
	c.SetAutoAdvance(0)
	assert.Equal(t, c.Now(), c.Now())
}

func TestBlockUntilWaiters(t *testing.T) {
	c := NewClock(start)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.BlockUntilWaiters(2)
	}()
	c.NewTimer(time.Second)
	select {
	case <-done:
		t.Fatal("returned with one waiter")
	default:
	}
	c.NewTimer(time.Second)
	<-done
}

func TestBlockUntilWaitersContext(t *testing.T) {
	c := NewClock(start)
	tm := c.NewTimer(time.Second)
	require.NoError(t, c.BlockUntilWaitersContext(context.Background(), 1))

	// Stopped, the timer no longer counts: the wait ends with ctx.
	tm.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := c.BlockUntilWaitersContext(ctx, 1)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, c.BlockUntilWaitersContext(ctx, 5), context.Canceled)

	// A timer armed while waiting ends the wait.
	errc := make(chan error, 1)
	go func() { errc <- c.BlockUntilWaitersContext(context.Background(), 1) }()
	c.NewTimer(time.Minute)
	assert.NoError(t, <-errc)
}

func TestConcurrentUse(t *testing.T) {
	c := NewClock(start)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				tm := c.NewTimer(time.Duration(i%7+1) * time.Millisecond)
				if i%2 == 0 {
					tm.Stop()
				}
				c.Advance(time.Millisecond)
				_ = c.Now()
				_, _ = c.NextWake()
			}
		}()
	}
	wg.Wait()
	c.Advance(time.Second)
	assert.Zero(t, c.Waiters())
	assert.Equal(t, 800, c.Armed())
}
