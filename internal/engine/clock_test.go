package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/ttltest"
)

// waitRearmed waits until the fake clock has armed at least armed timers
// in all and one is live: the monitor has gone back to sleep after a poke
// (until then its old timer may still be live).
func waitRearmed(t testing.TB, clk *ttltest.Clock, armed int) {
	t.Helper()
	require.Eventually(t, func() bool { return clk.Armed() >= armed && clk.Waiters() >= 1 },
		5*time.Second, time.Millisecond, "the monitor did not re-arm its sleep (armed %d, want %d)", clk.Armed(), armed)
}

// Rule: the monitor stops the timer it abandons, so that a fake clock's
// Waiters counts only the sleep in progress: after 50 interval changes the
// monitor is one waiter, BlockUntilWaiters(1) means "asleep", and none of
// the abandoned sleeps wakes it.
func TestClockAbandonedTimersAreNotWaiters(t *testing.T) {
	db, clk := openMon(t)
	clk.BlockUntilWaiters(1)
	for i := 1; i <= 50; i++ {
		armed := clk.Armed()
		db.SetTTLMonitorInterval(time.Duration(i) * time.Hour)
		waitRearmed(t, clk, armed+1)
		require.Equal(t, 1, clk.Waiters(), "after %d interval changes", i)
	}
	w, ok := clk.NextWake()
	require.True(t, ok)
	assert.Equal(t, t0.Add(50*time.Hour), w, "the live timer is the last one armed")
	// The abandoned 1 h … 49 h sleeps never fire.
	clk.Advance(49*time.Hour + 59*time.Minute)
	assert.Zero(t, db.Metrics().TTL.Passes)
	assert.Equal(t, 1, clk.Waiters())
	clk.Advance(time.Minute)
	require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 1 }, 5*time.Second, time.Millisecond)
	clk.BlockUntilWaiters(1)
	assert.Equal(t, 1, clk.Waiters())
	// Close stops the last timer too.
	require.NoError(t, db.Close())
	assert.Zero(t, clk.Waiters())
}

// Rule: the monitor's sleep is elapsed time, as Go's timers are: a step of
// the wall clock, back or forward, neither delays nor hastens the next
// pass.
func TestMonitorSleepIsMonotonic(t *testing.T) {
	for _, step := range []time.Duration{-24 * time.Hour, 24 * time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			db, clk := openMon(t)
			insertDated(t, ttlColl(t, db, "c", 0), "x", 3, t0)
			clk.BlockUntilWaiters(1)
			clk.Advance(30 * time.Second)
			clk.Set(clk.Now().Add(step))
			w, ok := clk.NextWake()
			require.True(t, ok)
			assert.Equal(t, t0.Add(step+60*time.Second), w, "30 s left to sleep, read on the new wall time")
			clk.Advance(29 * time.Second)
			assert.Zero(t, db.Metrics().TTL.Passes, "a step forward does not wake the monitor early")
			clk.Advance(time.Second)
			require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 1 }, 5*time.Second, time.Millisecond,
				"a step back does not delay the pass")
			assert.Equal(t, t0.Add(step+60*time.Second), db.Metrics().TTL.LastPassStart)
			want := 0
			if step < 0 {
				want = 3 // a day back, the documents are not expired yet
			}
			assert.Equal(t, want, count(t, db.Collection("c")))
		})
	}
}

// The timers of the system clock are time.Timer's: they fire, and Stop
// reports whether it stopped one.
func TestSystemClockTimer(t *testing.T) {
	clk := SystemClock()
	tm := clk.NewTimer(time.Hour)
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop())
	now := clk.Now()
	select {
	case got := <-clk.NewTimer(0).C():
		assert.False(t, got.Before(now))
	case <-time.After(5 * time.Second):
		t.Fatal("a timer for 0 did not fire")
	}
	fired := clk.NewTimer(time.Millisecond)
	<-fired.C()
	assert.False(t, fired.Stop())
	var _ Clock = ttltest.NewClock(t0) // the fake clock implements Clock
}
