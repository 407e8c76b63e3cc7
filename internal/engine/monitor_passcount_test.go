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

// An interrupted pass is still a pass, as MongoDB counts it on scope exit:
// a pass cut short by its context or by Close counts in Passes, with its
// sub-pass, and records its start and duration.
func TestInterruptedPassCounts(t *testing.T) {
	for _, how := range []string{"context", "Close"} {
		t.Run(how, func(t *testing.T) {
			var (
				db     *DB
				cancel context.CancelFunc
				once   sync.Once
			)
			obs := func(DeleteEvent) {
				once.Do(func() {
					if how == "Close" {
						_ = db.Close()
					} else {
						cancel()
					}
				})
			}
			db, clk := openMon(t, quiet(MonitorOptions{BatchSize: 10}), WithDeleteObserver(obs))
			insertDated(t, ttlColl(t, db, "c", 0), "x", 50, t0)
			clk.Advance(time.Minute)
			var ctx context.Context
			ctx, cancel = context.WithCancel(context.Background())
			defer cancel()
			res, err := db.RunTTLPass(ctx)
			assert.ErrorIs(t, err, context.Canceled)
			assert.False(t, res.Complete)
			assert.Equal(t, 10, res.Deleted)
			assert.Equal(t, 1, res.SubPasses)
			m := db.Metrics().TTL
			assert.Equal(t, int64(1), m.Passes)
			assert.Equal(t, int64(1), m.SubPasses)
			assert.Equal(t, t0.Add(time.Minute), m.LastPassStart)
		})
	}
}

// A clock stepped back during a pass gives a zero duration, never a
// negative one, in PassResult and in Metrics.
func TestPassDurationNeverNegative(t *testing.T) {
	var clk *ttltest.Clock
	var once sync.Once
	obs := func(DeleteEvent) { once.Do(func() { clk.Set(t0) }) }
	var db *DB
	db, clk = openMon(t, quiet(MonitorOptions{}), WithDeleteObserver(obs))
	insertDated(t, ttlColl(t, db, "c", 0), "x", 5, t0)
	clk.Advance(time.Hour)
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5, res.Deleted)
	assert.Zero(t, res.Duration)
	assert.Zero(t, db.Metrics().TTL.LastPassDuration)
}
