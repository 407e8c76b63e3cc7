package engine

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// countDocs returns how many documents c holds.
func countDocs(t *testing.T, c *Collection) int {
	t.Helper()
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	return int(n)
}

// openMonBusy is openMon with a delete observer that advances the clock
// by step after each batch: each batch then takes step of the DB's clock.
func openMonBusy(t *testing.T, step time.Duration, opts ...Option) (*DB, *ttltest.Clock) {
	t.Helper()
	clk := ttltest.NewClock(t0)
	busy := WithDeleteObserver(func(DeleteEvent) { clk.Advance(step) })
	db, err := Open(append([]Option{WithClock(clk), busy}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db, clk
}

// drivePass runs a TTL pass on another goroutine and drives the fake
// clock for it: each time the pass waits on the clock (a ceiling's or the
// restore guard's wait), it calls onWait with the wait, then advances the
// clock by it. It returns the pass's result.
func drivePass(t *testing.T, db *DB, clk *ttltest.Clock, onWait func(wait time.Duration)) PassResult {
	t.Helper()
	done := make(chan PassResult, 1)
	go func() {
		res, err := db.RunTTLPass(context.Background())
		assert.NoError(t, err)
		done <- res
	}()
	for {
		select {
		case res := <-done:
			return res
		default:
		}
		wake, ok := clk.NextWake()
		if !ok || wake.Sub(clk.Now()) > time.Hour {
			time.Sleep(100 * time.Microsecond) // between two steps, not waiting on the clock
			continue
		}
		onWait(wake.Sub(clk.Now()))
		clk.Advance(wake.Sub(clk.Now()))
	}
}

// TestMaxDeletesPerSecond: with a rate ceiling the monitor deletes a
// batch's worth of tokens at a time, then waits on the DB's clock for the
// next batch's; at no instant has it deleted more than the burst plus the
// rate times the time elapsed.
func TestMaxDeletesPerSecond(t *testing.T) {
	const rate, batch, n = 100, 50, 275 // the last batch is short: the index is then known exhausted
	db, clk := openMon(t, quiet(MonitorOptions{MaxDeletesPerSecond: rate, BatchSize: batch, PerIndexMaxTime: time.Hour}))
	c := ttlColl(t, db, "a", 0)
	insertDated(t, c, "x", n, t0)
	clk.Advance(time.Second)
	start := clk.Now()
	res := drivePass(t, db, clk, func(wait time.Duration) {
		deleted := n - countDocs(t, c)
		require.LessOrEqual(t, float64(deleted), batch+rate*clk.Now().Sub(start).Seconds(), "over the ceiling at %v", clk.Now().Sub(start))
		require.Equal(t, time.Duration(batch)*time.Second/rate, wait, "it waits for a whole batch's tokens")
	})
	require.Equal(t, n, res.Deleted)
	assert.Equal(t, time.Duration(n/batch)*batch*time.Second/rate, clk.Now().Sub(start), "the first batch from the full bucket, each other after its tokens accrued")
	assert.Equal(t, n/batch, db.monitor.throttle.waits)
}

// TestMaxDutyCycle: with a duty-cycle ceiling of 25%, a batch that took
// 10 ms (here: a delete observer that advances the clock) is followed by a
// wait of 30 ms.
func TestMaxDutyCycle(t *testing.T) {
	db, clk := openMonBusy(t, 10*time.Millisecond, quiet(MonitorOptions{MaxDutyCycle: 0.25, BatchSize: 10, PerIndexMaxTime: time.Hour}))
	c := ttlColl(t, db, "a", 0)
	insertDated(t, c, "x", 40, t0)
	clk.Advance(time.Second)
	waits := 0
	res := drivePass(t, db, clk, func(wait time.Duration) {
		require.Equal(t, 30*time.Millisecond, wait, "busy 10 ms at 25%: 30 ms off")
		waits++
	})
	require.Equal(t, 40, res.Deleted)
	assert.Equal(t, 4, waits, "a wait after each batch")
}

// TestCeilingOptionsRefused: a negative rate or a duty cycle outside 0..1
// is ErrInvalidOptions.
func TestCeilingOptionsRefused(t *testing.T) {
	for _, o := range []MonitorOptions{{MaxDeletesPerSecond: -1}, {MaxDutyCycle: -0.1}, {MaxDutyCycle: 1.5}} {
		_, err := Open(WithMonitor(o))
		require.ErrorIs(t, err, ErrInvalidOptions, "%+v", o)
	}
}

// TestExplainTTLDeleteDryRun: ExplainTTLDelete says how many documents
// are due now, all of them, and how long draining them takes at the
// current budgets: the rate ceiling, or the rate of the monitor's last
// pass that deleted anything, whichever is lower.
func TestExplainTTLDeleteDryRun(t *testing.T) {
	ctx := context.Background()
	db, clk := openMonBusy(t, time.Second, quiet(MonitorOptions{PerIndexMaxDeletes: 20, BatchSize: 100, PerIndexMaxTime: time.Hour}))
	c := ttlColl(t, db, "a", 0)
	insertDated(t, c, "x", 30, t0)
	clk.Advance(time.Second)

	e, err := c.ExplainTTLDelete(ctx, "lastModifiedDate_1")
	require.NoError(t, err)
	assert.Equal(t, int64(30), e.Due, "every document due, beyond the visit's cap")
	assert.Equal(t, 20, e.DocsExamined, "the first visit's deletions, capped")
	assert.Zero(t, e.DrainRate, "no pass has deleted yet, no ceiling: unknown")
	assert.Zero(t, e.DrainTime)

	res, err := db.RunTTLPass(ctx) // 30 deleted in two visits of a batch each: 2 s
	require.NoError(t, err)
	require.Equal(t, 30, res.Deleted)
	insertDated(t, c, "y", 45, t0)
	e, err = c.ExplainTTLDelete(ctx, "lastModifiedDate_1")
	require.NoError(t, err)
	assert.Equal(t, int64(45), e.Due)
	assert.Equal(t, 15.0, e.DrainRate, "the last pass: 30 in 2 s")
	assert.Equal(t, 3*time.Second, e.DrainTime)

	o := *db.monitor.opts.Load()
	o.MaxDeletesPerSecond = 5
	db.monitor.opts.Store(&o)
	e, err = c.ExplainTTLDelete(ctx, "lastModifiedDate_1")
	require.NoError(t, err)
	assert.Equal(t, 5.0, e.DrainRate, "the ceiling, lower")
	assert.Equal(t, 9*time.Second, e.DrainTime)
}

// TestRestoreGuard: a DB loaded WithRestore, or opened with a backlog at
// or above the guard's threshold, deletes at the guard's rate until a
// pass leaves no backlog, then at full speed; below the threshold, or
// without a guard, there is no wait.
func TestRestoreGuard(t *testing.T) {
	ctx := context.Background()
	clk := ttltest.NewClock(t0)
	// dirWithBacklog returns a data directory holding 120 documents due.
	dirWithBacklog := func(t *testing.T) string {
		dir := t.TempDir()
		db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways)) // no writer goroutine's timers on the clock
		insertDated(t, ttlColl(t, db, "a", 0), "x", 120, t0)
		require.NoError(t, db.Close())
		return dir
	}
	var backup bytes.Buffer
	{
		db, err := Open(WithClock(clk), quiet(MonitorOptions{}))
		require.NoError(t, err)
		insertDated(t, ttlColl(t, db, "a", 0), "x", 120, t0)
		require.NoError(t, db.Backup(ctx, &backup))
		require.NoError(t, db.Close())
	}
	clk.Advance(time.Second)
	mon := func(g *RestoreGuard) Option {
		return quiet(MonitorOptions{RestoreGuard: g, BatchSize: 50, PerIndexMaxTime: time.Hour})
	}
	for _, tc := range []struct {
		name  string
		opts  func(t *testing.T) []Option
		holds bool
	}{
		{"restored", func(*testing.T) []Option {
			return []Option{WithRestore(bytes.NewReader(backup.Bytes())), mon(&RestoreGuard{MaxDeletesPerSecond: 50})}
		}, true},
		{"backlog at the threshold", func(t *testing.T) []Option {
			return []Option{WithDir(dirWithBacklog(t)), WithSync(SyncAlways), mon(&RestoreGuard{Backlog: 120, MaxDeletesPerSecond: 50})}
		}, true},
		{"backlog below the threshold", func(t *testing.T) []Option {
			return []Option{WithDir(dirWithBacklog(t)), WithSync(SyncAlways), mon(&RestoreGuard{Backlog: 121, MaxDeletesPerSecond: 50})}
		}, false},
		{"no guard", func(*testing.T) []Option {
			return []Option{WithRestore(bytes.NewReader(backup.Bytes())), mon(nil)}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Open(append([]Option{WithClock(clk)}, tc.opts(t)...)...)
			require.NoError(t, err)
			defer db.Close()
			require.Equal(t, tc.holds, db.Metrics().TTL.RestoreGuard)
			start := clk.Now()
			res := drivePass(t, db, clk, func(time.Duration) {})
			require.Equal(t, 120, res.Deleted)
			if tc.holds {
				assert.Equal(t, 2*time.Second, clk.Now().Sub(start), "120 at 50/s: the first 50 at once, then 50 a second")
			} else {
				assert.Zero(t, clk.Now().Sub(start), "no guard: no wait")
			}
			assert.False(t, db.Metrics().TTL.RestoreGuard, "released once the backlog is gone")
		})
	}
	_, err := Open(WithMonitor(MonitorOptions{RestoreGuard: &RestoreGuard{}}))
	require.ErrorIs(t, err, ErrInvalidOptions, "a guard's rate of 0")
}

// TestMaxDutyCycleWindow: batches shorter than the ceiling's window add
// up: at 25%, batches of 1 ms wait 9 ms after every third (3 ms busy, past
// 2.5 ms), not 3 ms after each.
func TestMaxDutyCycleWindow(t *testing.T) {
	db, clk := openMonBusy(t, time.Millisecond, quiet(MonitorOptions{MaxDutyCycle: 0.25, BatchSize: 4, PerIndexMaxTime: time.Hour}))
	c := ttlColl(t, db, "a", 0)
	insertDated(t, c, "x", 38, t0) // ten batches, the last short
	clk.Advance(time.Second)
	var waits []int // documents left at each wait
	res := drivePass(t, db, clk, func(wait time.Duration) {
		require.Equal(t, 9*time.Millisecond, wait)
		waits = append(waits, countDocs(t, c))
	})
	require.Equal(t, 38, res.Deleted)
	assert.Equal(t, []int{38 - 12, 38 - 24, 38 - 36}, waits, "a wait after batches 3, 6 and 9")
}
