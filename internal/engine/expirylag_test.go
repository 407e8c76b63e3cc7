package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// TestLagBuckets: adjacent bounds are at most 1.25 apart from 100 µs up;
// each lag lands in the first bucket whose bound is at or above it; a lag
// beyond the last bound is +Inf.
func TestLagBuckets(t *testing.T) {
	assert.LessOrEqual(t, lagBound(0), 100*time.Microsecond, "the first bound is at most 100 µs")
	for i := 1; i < lagBuckets; i++ {
		lo, hi := lagBound(i-1), lagBound(i)
		require.Greater(t, hi, lo)
		require.LessOrEqual(t, float64(hi)/float64(lo), 1.25, "bounds %d and %d: %v and %v", i-1, i, lo, hi)
		require.Equal(t, i, lagBucket(hi), "a lag of exactly bound %d", i)
		require.Equal(t, i, lagBucket(lo+1), "a lag just above bound %d", i-1)
	}
	assert.Equal(t, 0, lagBucket(0))
	assert.Equal(t, 0, lagBucket(-time.Second), "a negative lag (a clock stepped back) is the smallest")
	assert.Equal(t, 0, lagBucket(lagBound(0)))
	assert.Equal(t, lagBuckets-1, lagBucket(lagBound(lagBuckets-1)))
	assert.Equal(t, lagBuckets, lagBucket(lagBound(lagBuckets-1)+1), "+Inf")
	assert.Greater(t, lagBound(lagBuckets-1), 4*time.Hour)
}

// countAtOrBelow returns how many lags of h are at or below d, d being a
// bucket bound.
func countAtOrBelow(t *testing.T, h DurationHistogram, d time.Duration) int64 {
	t.Helper()
	for _, b := range h.Buckets {
		if b.UpperBound >= d {
			return b.Count
		}
	}
	return h.Count
}

// TestExpiryLagHistogramCountsDeletions: every document the monitor
// deletes adds its lag (from its threshold to its batch's instant) to its
// index's histogram, with and without expire hooks.
func TestExpiryLagHistogramCountsDeletions(t *testing.T) {
	for _, hooked := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "hooks"}[hooked], func(t *testing.T) {
			opts := []Option{quiet(MonitorOptions{})}
			if hooked {
				opts = append(opts, WithOnExpire(func(context.Context, ExpiredBatch) error { return nil }))
			}
			db, clk := openMon(t, opts...)
			c := ttlColl(t, db, "a", 60)
			insertDated(t, c, "old", 10, t0)                    // threshold t0+60s
			insertDated(t, c, "new", 5, t0.Add(30*time.Second)) // threshold t0+90s
			insertDated(t, c, "live", 3, t0.Add(time.Hour))
			clk.Set(t0.Add(100 * time.Second))
			res, err := db.RunTTLPass(context.Background())
			require.NoError(t, err)
			require.Equal(t, 15, res.Deleted)
			h := db.Metrics().TTL.ExpiryByIndex[IndexRef{"a", "lastModifiedDate_1"}].Lag
			assert.Equal(t, int64(15), h.Count)
			assert.Equal(t, 10*40*time.Second+5*10*time.Second, h.Sum)
			b10, b40 := lagBound(lagBucket(10*time.Second)), lagBound(lagBucket(40*time.Second))
			assert.Equal(t, int64(0), countAtOrBelow(t, h, lagBound(lagBucket(10*time.Second)-1)), "nothing below 10 s")
			assert.Equal(t, int64(5), countAtOrBelow(t, h, b10), "5 documents 10 s late")
			assert.Equal(t, int64(5), countAtOrBelow(t, h, lagBound(lagBucket(40*time.Second)-1)))
			assert.Equal(t, int64(15), countAtOrBelow(t, h, b40), "10 documents 40 s late")
			assert.Len(t, h.Buckets, lagBuckets)
		})
	}
}

// TestKeepUpAndStall: the keeping-up ratio compares what the monitor
// deleted with what became due between two pass ends; an index whose
// backlog grew while nothing was deleted is stalled, with the cause the DB
// knows: the monitor off, expire hooks failing, not the primary.
func TestKeepUpAndStall(t *testing.T) {
	ref := IndexRef{"a", "lastModifiedDate_1"}
	expiry := func(db *DB) IndexExpiry { return db.Metrics().TTL.ExpiryByIndex[ref] }
	ctx := context.Background()

	t.Run("monitor disabled", func(t *testing.T) {
		db, clk := openMon(t, quiet(MonitorOptions{}))
		c := ttlColl(t, db, "a", 0)
		assert.False(t, expiry(db).Stalled, "nothing expired: not stalled")
		insertDated(t, c, "x", 2, t0)
		clk.Advance(time.Second)
		x := expiry(db)
		assert.True(t, x.Stalled)
		assert.Equal(t, StallMonitorDisabled, x.StallCause)
		assert.Equal(t, 1.0, x.KeepUp, "no interval measured yet")
	})

	t.Run("hooks failing, then not", func(t *testing.T) {
		var fail atomic.Bool
		fail.Store(true)
		hook := func(context.Context, ExpiredBatch) error {
			if fail.Load() {
				return errors.New("archive down")
			}
			return nil
		}
		db, clk := openMon(t, quiet(MonitorOptions{}), WithOnExpire(hook))
		db.monitor.enabled.Store(true) // on, but no pass but ours (the interval never passes)
		c := ttlColl(t, db, "a", 0)
		_, err := db.RunTTLPass(ctx) // the first interval starts
		require.NoError(t, err)
		insertDated(t, c, "x", 4, t0)
		clk.Advance(time.Second)
		_, err = db.RunTTLPass(ctx)
		require.NoError(t, err)
		x := expiry(db)
		assert.Equal(t, 0.0, x.KeepUp, "4 became due, none deleted")
		assert.True(t, x.Stalled)
		assert.Equal(t, StallHooksFailing, x.StallCause)

		fail.Store(false)
		insertDated(t, c, "y", 4, t0)
		clk.Advance(time.Minute) // past the failed deliveries' backoff
		res, err := db.RunTTLPass(ctx)
		require.NoError(t, err)
		require.Equal(t, 8, res.Deleted)
		x = expiry(db)
		assert.Equal(t, 2.0, x.KeepUp, "8 deleted of 4 newly due: the backlog drained too")
		assert.False(t, x.Stalled)

		insertDated(t, c, "z", 3, t0)
		_, err = db.RunTTLPass(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1.0, expiry(db).KeepUp, "3 due, 3 deleted")
	})

	t.Run("not primary", func(t *testing.T) {
		var primary atomic.Bool
		db, clk := openMon(t, quiet(MonitorOptions{}), WithPrimary(primary.Load))
		db.monitor.enabled.Store(true)
		c := ttlColl(t, db, "a", 0)
		_, err := db.RunTTLPass(ctx)
		require.ErrorIs(t, err, ErrNotPrimary)
		insertDated(t, c, "x", 2, t0)
		clk.Advance(time.Second)
		_, err = db.RunTTLPass(ctx)
		require.ErrorIs(t, err, ErrNotPrimary)
		x := expiry(db)
		assert.True(t, x.Stalled)
		assert.Equal(t, StallNotPrimary, x.StallCause)
		primary.Store(true)
		_, err = db.RunTTLPass(ctx)
		require.NoError(t, err)
		assert.False(t, expiry(db).Stalled)
	})
}

// TestLagObserveUnix: the monitor's Unix-seconds path counts a lag in the
// bucket lagBucket gives it, on time and late, and beyond the last bound.
func TestLagObserveUnix(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 500, time.UTC)
	for _, lag := range []time.Duration{-time.Hour, -1, 0, 1, 70 * time.Microsecond, 999 * time.Millisecond, time.Second + 1,
		17 * time.Minute, 4 * time.Hour, 5 * time.Hour, 9 * time.Hour, 400 * 24 * time.Hour} {
		var c lagCounts
		c.observe(now, now.Add(-lag))
		want := lagBucket(lag)
		require.Equal(t, int64(1), c.n[want], "a lag of %v counts in bucket %d", lag, want)
		require.Equal(t, int64(1), c.total())
		if lag > 0 {
			require.Equal(t, lag, c.sum, "the sum of a lag of %v", lag)
		} else {
			require.Zero(t, c.sum)
		}
	}
}

// TestDeletedMeasurementsByCollection: the measurements the monitor
// removes from a time-series collection are counted under its name too.
func TestDeletedMeasurementsByCollection(t *testing.T) {
	expire := int32(60)
	db, clk, c := openTS(t, t0, weatherOpts(0, &expire))
	for i := range 5 {
		_, err := c.InsertOne(context.Background(), Document{"timestamp": t0.Add(time.Duration(i) * time.Second), "sensor": "s1", "v": i})
		require.NoError(t, err)
	}
	clk.Advance(24 * time.Hour) // past the bucket's span too
	tsPass(t, db)
	m := db.Metrics().TTL
	require.Equal(t, int64(5), m.DeletedMeasurements)
	assert.Equal(t, map[string]int64{"w": 5}, m.DeletedMeasurementsByCollection)
}

// TestDurabilityMetricsExport: Metrics has the log's segments, its
// fsyncs' durations (one observation per fsync) and what Open recovered.
func TestDurabilityMetricsExport(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	dir := t.TempDir()
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	for i := range 5 {
		_, err := db.Collection("c").InsertOne(context.Background(), Document{"_id": i})
		require.NoError(t, err)
	}
	d := db.Metrics().Durability
	assert.GreaterOrEqual(t, d.LogSegments, 1)
	assert.Equal(t, d.LogSyncs, d.LogSyncDurations.Count, "every fsync timed")
	assert.Len(t, d.LogSyncDurations.Buckets, 14)
	require.NoError(t, db.Close())
	db = mustOpenDurable(t, clk, dir)
	d = db.Metrics().Durability
	rec := db.Recovery()
	assert.Equal(t, rec.LogOps, d.RecoveredLogOps)
	assert.Positive(t, d.RecoveredLogOps)
	assert.Equal(t, rec.Duration, d.RecoveryDuration)
	assert.Equal(t, rec.TruncatedBytes, d.RecoveryTruncatedBytes)
}

// A time-series collection's expiry rule has its lag histogram, one
// observation per measurement from its own threshold (with PreciseExpiry,
// only expired measurements go); it is stalled only while a measurement is
// due and its TTL is paused.
func TestExpiryLagTimeSeries(t *testing.T) {
	expire := int32(60)
	opts := weatherOpts(0, &expire)
	opts.TimeSeries.PreciseExpiry = true
	db, clk, c := openTS(t, t0, opts)
	ctx := context.Background()
	for i, at := range []time.Time{t0, t0, t0, t0.Add(30 * time.Second), t0.Add(30 * time.Second), t0.Add(time.Hour)} {
		_, err := c.InsertOne(ctx, Document{"timestamp": at, "sensor": "s1", "v": i})
		require.NoError(t, err)
	}
	clk.Set(t0.Add(100 * time.Second))
	tsPass(t, db)
	m := db.Metrics().TTL
	require.Equal(t, int64(5), m.DeletedMeasurements)
	require.Len(t, m.ExpiryByIndex, 1)
	var ref IndexRef
	var x IndexExpiry
	for ref, x = range m.ExpiryByIndex {
	}
	assert.Equal(t, "w", ref.Collection)
	_, named := m.DeletedByIndex[ref]
	assert.True(t, named, "the rule is named as DeletedByIndex names it: %v", m.DeletedByIndex)
	h := x.Lag
	assert.Equal(t, int64(5), h.Count)
	assert.Equal(t, 3*40*time.Second+2*10*time.Second, h.Sum)
	assert.Equal(t, int64(2), countAtOrBelow(t, h, lagBound(lagBucket(10*time.Second))))
	assert.Equal(t, int64(5), countAtOrBelow(t, h, lagBound(lagBucket(40*time.Second))))
	assert.False(t, x.Stalled)
	assert.Equal(t, 1.0, x.KeepUp)

	require.NoError(t, db.SetTTLPaused(ctx, true))
	assert.False(t, db.Metrics().TTL.ExpiryByIndex[ref].Stalled, "paused, but nothing is due")
	clk.Set(t0.Add(2 * time.Hour))
	x = db.Metrics().TTL.ExpiryByIndex[ref]
	assert.True(t, x.Stalled, "paused with a measurement due")
	assert.Equal(t, StallPaused, x.StallCause)
}

// Quantile interpolates within the bucket holding the rank, as
// Prometheus's histogram_quantile does.
func TestDurationHistogramQuantile(t *testing.T) {
	h := DurationHistogram{Count: 100, Buckets: []HistogramBucket{
		{UpperBound: 10 * time.Millisecond, Count: 50},
		{UpperBound: 20 * time.Millisecond, Count: 90},
		{UpperBound: 40 * time.Millisecond, Count: 98},
	}}
	assert.Equal(t, 5*time.Millisecond, h.Quantile(0.25))
	assert.Equal(t, 10*time.Millisecond, h.Quantile(0.5))
	assert.Equal(t, 15*time.Millisecond, h.Quantile(0.7))
	assert.Equal(t, 30*time.Millisecond, h.Quantile(0.94))
	assert.Equal(t, 40*time.Millisecond, h.Quantile(0.99), "in the +Inf bucket: the last bound")
	assert.Equal(t, time.Duration(0), h.Quantile(-1))
	assert.Equal(t, 40*time.Millisecond, h.Quantile(2))
	assert.Equal(t, time.Duration(0), DurationHistogram{}.Quantile(0.5))

	// From the monitor's own histogram: 100 lags of 1..100 ms; its p99
	// is within a bucket's width (×1.25) of the true 99 ms.
	var c lagCounts
	for i := 1; i <= 100; i++ {
		c.observe(t0.Add(time.Duration(i)*time.Millisecond), t0)
	}
	p99 := c.histogram().Quantile(0.99)
	assert.InDelta(t, float64(99*time.Millisecond), float64(p99), 0.25*float64(99*time.Millisecond), "p99 %v", p99)
}
