package engine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The monitor waits BatchPause between two batches of a visit on the DB's
// clock's timer (never time.Sleep): with a fake clock and a pause set, a
// pass of four batches deletes one batch, arms a timer of exactly
// BatchPause and waits for the clock to move by that much before the next
// batch; after the last batch it does not pause.
func TestBatchPauseUsesTheClocksTimer(t *testing.T) {
	const pause = time.Millisecond
	var evs eventLog
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 10, BatchPause: pause}), WithDeleteObserver(evs.observe))
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "d", 35, t0.Add(-time.Hour))
	clk.BlockUntilWaiters(1) // the disabled monitor's own sleep
	idle := clk.Waiters()
	armed := clk.Armed()

	done := make(chan PassResult, 1)
	go func() {
		res, err := db.RunTTLPass(context.Background())
		assert.NoError(t, err)
		done <- res
	}()
	for batch := 1; batch <= 3; batch++ {
		// Paused after this batch: its deletion is committed and told,
		// and a timer is armed.
		clk.BlockUntilWaiters(idle + 1)
		assert.Len(t, evs.events(), batch, "one batch per pause")
		assert.Equal(t, 35-10*batch, count(t, c))
		assert.Equal(t, armed+batch, clk.Armed(), "one timer per pause")
		// The timer wants the whole pause: a shorter advance fires nothing.
		clk.Advance(pause - time.Microsecond)
		assert.Equal(t, idle+1, clk.Waiters(), "still paused")
		assert.Equal(t, 35-10*batch, count(t, c))
		clk.Advance(time.Microsecond)
	}
	res := <-done
	assert.Equal(t, 35, res.Deleted)
	assert.True(t, res.Complete)
	assert.Len(t, evs.events(), 4)
	assert.Equal(t, armed+3, clk.Armed(), "no pause after the last batch")
}

// With a fake clock and default options the monitor never pauses: a pass
// of many batches runs to its end without the test advancing the clock,
// arming no timer.
func TestBatchPauseOffByDefaultWithAGivenClock(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 10}))
	assert.Equal(t, NoBatchPause, db.monitor.opts.Load().BatchPause)
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "d", 200, t0.Add(-time.Hour))
	clk.BlockUntilWaiters(1) // the disabled monitor's own sleep
	armed := clk.Armed()
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 200, res.Deleted)
	assert.Equal(t, armed, clk.Armed())
}

// With the system clock, the default pause applies; NoBatchPause and an
// explicit pause are kept; other negative pauses are refused.
func TestBatchPauseDefaults(t *testing.T) {
	for _, tc := range []struct {
		opts MonitorOptions
		want time.Duration
	}{
		{MonitorOptions{}, DefaultBatchPause},
		{MonitorOptions{BatchPause: NoBatchPause}, NoBatchPause},
		{MonitorOptions{BatchPause: 3 * time.Microsecond}, 3 * time.Microsecond},
	} {
		db, err := Open(WithMonitor(tc.opts))
		require.NoError(t, err)
		assert.Equal(t, tc.want, db.monitor.opts.Load().BatchPause)
		assert.Equal(t, DefaultMonitorBatchSize, db.monitor.opts.Load().BatchSize)
		require.NoError(t, db.Close())
	}
	_, err := Open(WithMonitor(MonitorOptions{BatchPause: -2}))
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

// Close ends a pass waiting in a pause at once: the pass stops before its
// next batch.
func TestBatchPauseEndsAtClose(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 10, BatchPause: time.Hour}))
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "d", 35, t0.Add(-time.Hour))
	clk.BlockUntilWaiters(1) // the disabled monitor's own sleep
	idle := clk.Waiters()
	type result struct {
		res PassResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := db.RunTTLPass(context.Background())
		done <- result{res, err}
	}()
	clk.BlockUntilWaiters(idle + 1)
	require.NoError(t, db.Close())
	r := <-done
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Equal(t, 10, r.res.Deleted, "one batch, then the pause, then Close")
	assert.Zero(t, clk.Waiters(), "the pause's timer is stopped, as the monitor's sleep")
}

// With the system clock the monitor pauses only after a batch during which
// goroutines waited for a processor (the runtime's count, here replaced by
// one the test moves from the DeleteObserver, which runs after each
// batch), and makes the next batch a quarter of BatchSize: waits after
// the odd batches make the even ones short, each after a pause.
func TestBatchPauseOnlyWhenGoroutinesWait(t *testing.T) {
	var waits int
	var sizes []int
	obs := func(ev DeleteEvent) {
		sizes = append(sizes, len(ev.IDs))
		if len(sizes)%2 == 1 {
			waits++
		}
	}
	db, err := Open(WithMonitor(MonitorOptions{Disabled: true, BatchSize: 40}), WithDeleteObserver(obs))
	require.NoError(t, err)
	defer db.Close()
	require.True(t, db.monitor.pace.adaptive)
	db.monitor.pace.waited = func() uint64 { return uint64(waits) }
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "d", 260, time.Now().Add(-time.Hour))
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 260, res.Deleted)
	assert.Equal(t, []int{40, 10, 40, 10, 40, 10, 40, 10, 40, 10, 10}, sizes)
	assert.Equal(t, 5, db.monitor.pace.pauses, "one before each short batch")
}

// The pacer reads the runtime's scheduling latencies: goroutines kept
// waiting for a processor (more busy goroutines than processors, each
// running until the runtime preempts it) show as contention.
func TestPacerSeesGoroutinesWaiting(t *testing.T) {
	p := pacer{adaptive: true}
	_, ok := p.slowSchedules()
	require.True(t, ok, "the runtime reports /sched/latencies:seconds")
	p.begin()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) + 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				// Busy, never yielding: only preemption (every ~10 ms) lets
				// the others run.
			}
		}()
	}
	seen := false
	for deadline := time.Now().Add(10 * time.Second); !seen && time.Now().Before(deadline); {
		runtime.Gosched()
		seen = p.contended()
	}
	stop.Store(true)
	wg.Wait()
	assert.True(t, seen, "no scheduling latency of %v or more seen", paceThreshold)
}
