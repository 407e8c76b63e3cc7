package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Primary status is checked before every index visit and every batch: after
// SetPrimary(false), or the WithPrimary func turning false, mid-pass (in an
// observer, after a's first batch; or in a's first hook, before that batch
// is deleted) no further batch is deleted, in that pass (which reports
// ErrNotPrimary) or any other. The stepped-down pass still counts.
func TestStepDownMidPass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hook  bool // step down in the expire hook instead of the observer
		viaFn bool // through the WithPrimary func instead of SetPrimary
		want  int  // deleted before the step-down took effect
	}{
		{"SetPrimary/observer", false, false, 10},
		{"WithPrimary/observer", false, true, 10},
		{"SetPrimary/hook", true, false, 0},
		{"WithPrimary/hook", true, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				db      *DB
				primary atomic.Bool
				once    sync.Once
			)
			primary.Store(true)
			stepDown := func() {
				once.Do(func() {
					if tc.viaFn {
						primary.Store(false)
					} else {
						db.SetPrimary(false)
					}
				})
			}
			opts := []Option{quiet(MonitorOptions{BatchSize: 10}), WithPrimary(primary.Load)}
			if tc.hook {
				opts = append(opts, WithOnExpire(func(context.Context, ExpiredBatch) error { stepDown(); return nil }))
			} else {
				opts = append(opts, WithDeleteObserver(func(DeleteEvent) { stepDown() }))
			}
			db, clk := openMon(t, opts...)
			a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
			insertDated(t, a, "a", 30, t0)
			insertDated(t, b, "b", 30, t0)
			clk.Advance(time.Second)

			res, err := db.RunTTLPass(context.Background())
			assert.ErrorIs(t, err, ErrNotPrimary)
			assert.False(t, res.Complete)
			assert.Equal(t, tc.want, res.Deleted)
			assert.Equal(t, 60-tc.want, count(t, a)+count(t, b))
			assert.Equal(t, 30, count(t, b), "no visit after the step-down")
			m := db.Metrics().TTL
			assert.Equal(t, int64(tc.want), m.DeletedDocuments)
			assert.Equal(t, int64(1), m.Passes)

			_, err = db.RunTTLPass(context.Background())
			assert.ErrorIs(t, err, ErrNotPrimary)
			assert.Equal(t, 60-tc.want, count(t, a)+count(t, b), "no deletion on a secondary")
			assert.Equal(t, int64(1), db.Metrics().TTL.Passes)
		})
	}
}

// The background monitor stepped down mid-pass deletes no further batch.
func TestStepDownMidBackgroundPass(t *testing.T) {
	var db *DB
	var once sync.Once
	passed := make(chan struct{})
	obs := func(DeleteEvent) {
		once.Do(func() {
			db.SetPrimary(false)
			close(passed)
		})
	}
	db, clk := openMon(t, WithMonitor(MonitorOptions{BatchSize: 10}), WithDeleteObserver(obs))
	c := ttlColl(t, db, "c", 0)
	insertDated(t, c, "x", 50, t0)
	clk.BlockUntilWaiters(1)
	clk.Advance(DefaultMonitorInterval)
	<-passed
	require.Eventually(t, func() bool { return db.Metrics().TTL.Passes == 1 }, 10*time.Second, time.Millisecond)
	for range 3 {
		clk.BlockUntilWaiters(1)
		clk.Advance(DefaultMonitorInterval)
	}
	clk.BlockUntilWaiters(1)
	assert.Equal(t, 40, count(t, c))
	assert.Equal(t, int64(10), db.Metrics().TTL.DeletedDocuments)
}
