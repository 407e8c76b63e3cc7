package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// A sub-pass whose time target is spent before it starts still makes
// progress: every round visits each index for at least one batch, so a pass
// ends even when the budget is shorter than the time between two clock
// reads. With batches of 10, a per-index budget of 1 s and a clock that
// moves at least 1 s per read, each visit deletes one batch: a (100) needs
// ten visits and an eleventh to find it drained; b (30) three and a fourth.
func TestPassProgressWithSpentSubPassBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts MonitorOptions
		step time.Duration
	}{
		{"SubPassMaxTime=1ns", MonitorOptions{SubPassMaxTime: time.Nanosecond, BatchSize: 10}, time.Second},
		{"SetAutoAdvance(SubPassMaxTime)", MonitorOptions{BatchSize: 10}, DefaultSubPassMaxTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, clk := openMon(t, quiet(tc.opts))
			a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
			insertDated(t, a, "a", 100, t0.Add(-time.Hour))
			insertDated(t, b, "b", 30, t0.Add(-time.Hour))
			clk.SetAutoAdvance(tc.step)
			var res PassResult
			within(t, 10*time.Second, "RunTTLPass", func() {
				var err error
				res, err = db.RunTTLPass(context.Background())
				assert.NoError(t, err)
			})
			clk.SetAutoAdvance(0)
			assert.Equal(t, 130, res.Deleted)
			assert.True(t, res.Complete)
			assert.Equal(t, 11, res.SubPasses, "one batch of each index with expired documents per sub-pass")
			assert.Equal(t, 0, count(t, a)+count(t, b))
		})
	}
}

// The pass loop honours its context even when no sub-pass budget is left:
// a RunTTLPass whose context is done returns its error and deletes nothing.
func TestRunTTLPassContextWithSpentBudget(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}))
	insertDated(t, ttlColl(t, db, "c", 0), "x", 10, t0.Add(-time.Hour))
	clk.SetAutoAdvance(DefaultSubPassMaxTime)
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	within(t, 10*time.Second, "RunTTLPass", func() {
		_, err := db.RunTTLPass(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	clk.SetAutoAdvance(0)
	assert.Equal(t, 10, count(t, db.Collection("c")))
}

// The background monitor on a clock that moves a whole sub-pass budget per
// read deletes everything and stops at Close.
func TestBackgroundMonitorWithSpentBudgetCloses(t *testing.T) {
	clk := ttltest.NewClock(t0)
	db, err := Open(WithClock(clk), WithMonitor(MonitorOptions{BatchSize: 10}))
	require.NoError(t, err)
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "x", 50, t0.Add(-time.Hour))
	clk.BlockUntilWaiters(1)
	clk.SetAutoAdvance(DefaultSubPassMaxTime)
	clk.Advance(DefaultMonitorInterval)
	require.Eventually(t, func() bool { return db.metrics.deleted.Load() == 50 }, 10*time.Second, time.Millisecond)
	within(t, 10*time.Second, "Close", func() { assert.NoError(t, db.Close()) })
	assertMonitorExited(t, db)
}

// A RunTTLPass waiting for another pass to end honours its context: it
// returns the context's error instead of waiting on.
func TestRunTTLPassContextWhileWaitingForPass(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(context.Context, ExpiredBatch) error {
		once.Do(func() { close(entered); <-release })
		return nil
	}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook))
	insertDated(t, ttlColl(t, db, "c", 0), "x", 5, t0)
	clk.Advance(time.Second)
	first := make(chan error, 1)
	go func() {
		_, err := db.RunTTLPass(context.Background())
		first <- err
	}()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := db.RunTTLPass(ctx)
		second <- err
	}()
	waitForStack(t, "engine.(*monitor).lockPass")
	cancel()
	within(t, 10*time.Second, "the waiting RunTTLPass", func() { assert.ErrorIs(t, <-second, context.Canceled) })
	close(release)
	assert.NoError(t, <-first)
	assert.Equal(t, int64(1), db.Metrics().TTL.Passes, "the cancelled wait is no pass")
}
