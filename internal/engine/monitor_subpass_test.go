package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Rule (MongoDB's code, ttl.cpp _doTTLSubPass): a sub-pass lists the TTL
// indexes, then repeats rounds over those that still have expired
// documents until none has or the sub-pass target time is reached. Two
// indexes with 80 and 30 expired documents and a per-index cap of 20 are one
// sub-pass (rounds: 20+20, 20+10, 20, 20, then a finds nothing). With
// SubPassEveryRound each round is a sub-pass: five.
func TestSubPassRepeatsRounds(t *testing.T) {
	for _, tc := range []struct {
		target    time.Duration
		subPasses int
	}{
		{0, 1}, // the default target, 60 s, is not reached on a still clock
		{SubPassEveryRound, 5},
	} {
		t.Run(targetName(tc.target), func(t *testing.T) {
			rec := &visitRecorder{}
			db, clk := openMon(t, quiet(MonitorOptions{PerIndexMaxDeletes: 20, SubPassMaxTime: tc.target}), WithDeleteObserver(rec.observe))
			rec.db = db
			a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
			insertDated(t, a, "a", 80, t0)
			insertDated(t, b, "b", 30, t0)
			clk.Advance(time.Second)
			clk.SetAutoAdvance(time.Nanosecond) // distinct RunningSince per visit
			res, err := db.RunTTLPass(context.Background())
			clk.SetAutoAdvance(0)
			require.NoError(t, err)
			assert.Equal(t, 110, res.Deleted)
			assert.Equal(t, tc.subPasses, res.SubPasses)
			assert.True(t, res.Complete)
			assert.Equal(t, []visit{{"a", 20}, {"b", 20}, {"a", 20}, {"b", 10}, {"a", 20}, {"a", 20}}, rec.visits)
			m := db.Metrics().TTL
			assert.Equal(t, int64(1), m.Passes)
			assert.Equal(t, int64(tc.subPasses), m.SubPasses)
		})
	}
}

// SubPassEveryRound is the only negative SubPassMaxTime accepted.
func TestSubPassEveryRoundOption(t *testing.T) {
	db, err := Open(WithMonitor(MonitorOptions{SubPassMaxTime: SubPassEveryRound}))
	require.NoError(t, err)
	assert.Equal(t, SubPassEveryRound, db.monitor.opts.Load().SubPassMaxTime, "not replaced by the default")
	require.NoError(t, db.Close())
	_, err = Open(WithMonitor(MonitorOptions{SubPassMaxTime: -2}))
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

// targetName names a SubPassMaxTime for a subtest.
func targetName(d time.Duration) string {
	switch d {
	case 0:
		return "default target"
	case SubPassEveryRound:
		return "SubPassEveryRound"
	}
	return d.String()
}
