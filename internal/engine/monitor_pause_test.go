package engine

import (
	"context"
	"runtime"
	"runtime/metrics"
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

// The pacer reads the runtime's scheduling latencies: goroutines kept
// waiting for a processor (more busy goroutines than processors, each
// running until the runtime preempts it) show as contention.
func TestPacerSeesGoroutinesWaiting(t *testing.T) {
	p := pacer{adaptive: true}
	p.signals = signalSchedLatency
	require.True(t, p.read().ok, "the runtime reports /sched/latencies:seconds")
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

// Each signal of foreground work alone makes the monitor give way (a
// pause, then a quarter batch), and with no signal moving it never pauses
// and keeps whole batches: the signals are the probe's counters, moved
// from the DeleteObserver after the odd batches.
func TestBatchPauseOnEachForegroundSignal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sig   paceSignals
		moved func(r *paceReading, waits int)
	}{
		{"sched latency", signalSchedLatency, func(r *paceReading, w int) { r.slowSchedules = uint64(w) }},
		{"lock waits", signalForegroundWaits, func(r *paceReading, w int) { r.foregroundWaits = uint64(w) }},
		{"gc assist", signalGCAssist, func(r *paceReading, w int) { r.assistSeconds = float64(w) / 1e6 }},
	} {
		for _, on := range []bool{true, false} {
			name := tc.name + "/on"
			if !on {
				name = tc.name + "/not listened to"
			}
			t.Run(name, func(t *testing.T) {
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
				p := &db.monitor.pace
				require.True(t, p.adaptive)
				p.signals = allPaceSignals
				if !on {
					p.signals &^= tc.sig
				}
				p.probe = func() paceReading {
					r := paceReading{ok: true}
					tc.moved(&r, waits)
					return r
				}
				c := ttlColl(t, db, "c", 0)
				insertDated(t, c, "d", 260, time.Now().Add(-time.Hour))
				res, err := db.RunTTLPass(context.Background())
				require.NoError(t, err)
				assert.Equal(t, 260, res.Deleted)
				if on {
					assert.Equal(t, []int{40, 10, 40, 10, 40, 10, 40, 10, 40, 10, 10}, sizes)
					assert.Equal(t, 5, p.pauses, "one before each short batch")
				} else {
					assert.Equal(t, []int{40, 40, 40, 40, 40, 40, 20}, sizes)
					assert.Zero(t, p.pauses, "a signal not listened to never pauses")
				}
			})
		}
	}
}

// A read or write that finds a collection's lock held waits for it and is
// counted in DB.foregroundWaits; one that finds it free is not. Through
// the real counter (no probe), a reader kept waiting by a lock hold
// between two batches makes the monitor's next batch short, after a
// pause; with no waiting it keeps whole batches.
func TestForegroundWaitsCountReadsAndWritesKeptWaiting(t *testing.T) {
	db, err := Open(WithMonitor(MonitorOptions{Disabled: true, BatchSize: 40}))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	c := ttlColl(t, db, "c", 0)
	_, err = c.InsertOne(ctx, Document{"_id": "x", "k": 1})
	require.NoError(t, err)
	s, err := db.state("c", false)
	require.NoError(t, err)

	_, err = c.Find(ctx, Document{"k": 1})
	require.NoError(t, err)
	_, err = c.InsertOne(ctx, Document{"_id": "y"})
	require.NoError(t, err)
	require.Zero(t, db.foregroundWaits.Load(), "calls that found the locks free")

	// waitCounted runs call while lock is held, and releases it once the
	// call is counted as waiting.
	waitCounted := func(lock, unlock func(), call func() error) {
		t.Helper()
		before := db.foregroundWaits.Load()
		lock()
		done := make(chan error, 1)
		go func() { done <- call() }()
		for deadline := time.Now().Add(10 * time.Second); db.foregroundWaits.Load() == before; {
			require.True(t, time.Now().Before(deadline), "the call was never counted")
			runtime.Gosched()
		}
		unlock()
		require.NoError(t, <-done)
		assert.Equal(t, before+1, db.foregroundWaits.Load())
	}
	waitCounted(s.mu.Lock, s.mu.Unlock, func() error { _, err := c.CountDocuments(ctx, Document{"k": 1}); return err })
	waitCounted(s.mu.Lock, s.mu.Unlock, func() error { _, err := c.Find(ctx, Document{"k": 1}); return err })
	waitCounted(s.writeMu.Lock, s.writeMu.Unlock, func() error { _, err := c.InsertOne(ctx, Document{"_id": "z"}); return err })

	// The monitor listens to this counter alone here (the runtime's
	// others move with the machine's load).
	var sizes []int
	held := false
	obs := func(ev DeleteEvent) {
		sizes = append(sizes, len(ev.IDs))
		if len(sizes) == 1 && held {
			waitCounted(s.mu.Lock, s.mu.Unlock, func() error { _, err := c.Find(ctx, Document{"k": 1}); return err })
		}
	}
	for _, hold := range []bool{false, true} {
		db2, err := Open(WithMonitor(MonitorOptions{Disabled: true, BatchSize: 40}), WithDeleteObserver(obs))
		require.NoError(t, err)
		db2.monitor.pace.signals = signalForegroundWaits
		c2 := ttlColl(t, db2, "c", 0)
		insertDated(t, c2, "d", 100, time.Now().Add(-time.Hour))
		db, c, held, sizes = db2, c2, hold, nil
		s, err = db2.state("c", false)
		require.NoError(t, err)
		res, err := db2.RunTTLPass(ctx)
		require.NoError(t, err)
		assert.Equal(t, 100, res.Deleted)
		if hold {
			assert.Equal(t, []int{40, 10, 40, 10}, sizes, "a reader waited after the first batch: the second is short")
			assert.Equal(t, 1, db2.monitor.pace.pauses)
		} else {
			assert.Equal(t, []int{40, 40, 20}, sizes, "nobody waited: whole batches, no pause")
			assert.Zero(t, db2.monitor.pace.pauses)
		}
		require.NoError(t, db2.Close())
	}
}

// The runtime exports the counters the pacer reads.
func TestPacerReadsTheRuntimesCounters(t *testing.T) {
	names := map[string]bool{}
	for _, d := range metrics.All() {
		names[d.Name] = true
	}
	assert.True(t, names["/sched/latencies:seconds"])
	assert.True(t, names["/cpu/classes/gc/mark/assist:cpu-seconds"])
	p := pacer{adaptive: true}
	require.True(t, p.read().ok)
}

// The pause grows while the program keeps waiting: BatchPause at the
// first sign, then doubled per contended batch up to the last batch's
// own duration (the monitor keeps half its processor), halved per
// uncontended one, and none when the program did not wait.
func TestPauseGrowsWhileTheProgramWaits(t *testing.T) {
	const base = 20 * time.Microsecond
	p := pacer{lastBatch: 100 * time.Microsecond}
	var got []time.Duration
	for _, c := range []bool{true, true, true, true, true, false, true, false, false, false, true} {
		got = append(got, p.nextPause(c, base))
	}
	us := time.Microsecond
	assert.Equal(t, []time.Duration{20 * us, 40 * us, 80 * us, 100 * us, 100 * us, 0, 100 * us, 0, 0, 0, 25 * us}, got)

	p = pacer{lastBatch: 5 * time.Microsecond} // batches shorter than the base
	assert.Equal(t, base, p.nextPause(true, base))
	assert.Equal(t, base, p.nextPause(true, base), "never below BatchPause")
}
