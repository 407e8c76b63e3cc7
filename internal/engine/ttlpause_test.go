package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// pause pauses or resumes c's TTL deletion with CollMod.
func pause(t *testing.T, c *Collection, paused bool) {
	t.Helper()
	res, err := c.CollMod(context.Background(), CollModIndex{TTLPaused: &paused})
	require.NoError(t, err)
	require.Equal(t, paused, res.TTLPaused)
}

// TestTTLPause: a paused collection's TTL indexes are skipped by the
// monitor (the others are not), its expired documents stay hidden under
// HideExpired, its stall cause says paused, and a resume deletes them.
func TestTTLPause(t *testing.T) {
	ctx := context.Background()
	db, clk := openMon(t, quiet(MonitorOptions{}), WithHideExpired())
	a, b := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0)
	insertDated(t, a, "x", 5, t0)
	insertDated(t, b, "y", 3, t0)
	clk.Advance(time.Second)
	pause(t, a, true)

	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, res.Deleted, "b only")
	assert.Equal(t, 5, int(db.Metrics().Documents["a"]), "a keeps its expired documents")
	n, err := a.CountDocuments(ctx, nil)
	require.NoError(t, err)
	assert.Zero(t, n, "hidden under HideExpired all the same")
	x := db.Metrics().TTL.ExpiryByIndex[IndexRef{"a", "lastModifiedDate_1"}]
	assert.True(t, x.Stalled)
	assert.Equal(t, StallPaused, x.StallCause)

	pause(t, a, false)
	res, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, res.Deleted)
	assert.False(t, db.Metrics().TTL.ExpiryByIndex[IndexRef{"a", "lastModifiedDate_1"}].Stalled)
}

// TestTTLPauseRefusals: TTLPaused goes alone; a missing collection is
// ErrNotFound; nothing changes.
func TestTTLPauseRefusals(t *testing.T) {
	ctx := context.Background()
	db, _ := openMon(t, quiet(MonitorOptions{}))
	a := ttlColl(t, db, "a", 0)
	yes, secs := true, int32(5)
	for _, m := range []CollModIndex{
		{TTLPaused: &yes, Name: "lastModifiedDate_1"},
		{TTLPaused: &yes, ExpireAfterSeconds: &secs},
		{TTLPaused: &yes, KeyPattern: []IndexKey{Asc("lastModifiedDate")}},
	} {
		_, err := a.CollMod(ctx, m)
		require.ErrorIs(t, err, ErrInvalidOptions)
	}
	assert.False(t, db.collections["a"].ttlPaused.Load())
	_, err := db.Collection("nope").CollMod(ctx, CollModIndex{TTLPaused: &yes})
	require.ErrorIs(t, err, ErrNotFound)
}

// TestTTLPauseTimeSeries: a time-series collection's expiry pauses too,
// through the log, a snapshot and Apply.
func TestTTLPauseTimeSeries(t *testing.T) {
	ctx := context.Background()
	clk := ttltest.NewClock(t0)
	dir := t.TempDir()
	db := mustOpenDurable(t, clk, dir)
	rec := &recordingSink{}
	db.ops.attach(rec)
	expire := int32(60)
	w, err := db.CreateCollection(ctx, "w", weatherOpts(0, &expire))
	require.NoError(t, err)
	for i := range 3 {
		_, err := w.InsertOne(ctx, Document{"timestamp": t0.Add(time.Duration(i) * time.Second), "sensor": "s", "v": i})
		require.NoError(t, err)
	}
	pause(t, w, true)
	clk.Advance(24 * time.Hour)
	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Zero(t, res.Deleted, "paused")
	require.NoError(t, db.Snapshot(ctx))
	ops := rec.take()
	require.NoError(t, db.Close())

	db = mustOpenDurable(t, clk, dir)
	require.True(t, db.collections["w"].ttlPaused.Load(), "from the snapshot")
	res, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Zero(t, res.Deleted)
	pause(t, db.Collection("w"), false)
	res, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Deleted, "the bucket, resumed")

	replica, _ := openMon(t, quiet(MonitorOptions{}))
	require.NoError(t, replica.Apply(ctx, ops...))
	require.True(t, replica.collections["w"].ttlPaused.Load(), "applied")
}

// TestTTLPauseSurvivesRestart: a pause is an op: it is in the log, in
// snapshots, and reaches a replica through Apply; a change stream sees it
// as a modify event.
func TestTTLPauseSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	for _, snap := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "snapshot"}[snap], func(t *testing.T) {
			clk := ttltest.NewClock(t0)
			dir := t.TempDir()
			db := mustOpenDurable(t, clk, dir)
			cs, err := db.Watch(ctx, nil, ChangeStreamOptions{ShowExpandedEvents: true, OperationTypes: []OperationType{OperationModify}})
			require.NoError(t, err)
			a := ttlColl(t, db, "a", 0)
			insertDated(t, a, "x", 4, t0)
			pause(t, a, true)
			require.True(t, cs.Next(ctx))
			paused, ok := cs.Event().OperationDescription.Lookup("ttlPaused")
			require.True(t, ok)
			assert.Equal(t, true, paused)
			if snap {
				require.NoError(t, db.Snapshot(ctx))
			}
			require.NoError(t, db.Close())

			clk.Advance(time.Hour)
			db = mustOpenDurable(t, clk, dir)
			require.True(t, db.collections["a"].ttlPaused.Load(), "paused after the restart")
			res, err := db.RunTTLPass(ctx)
			require.NoError(t, err)
			assert.Zero(t, res.Deleted)
			pause(t, db.Collection("a"), false)
			require.NoError(t, db.Close())
			db = mustOpenDurable(t, clk, dir)
			require.False(t, db.collections["a"].ttlPaused.Load(), "the resume is kept too")
			res, err = db.RunTTLPass(ctx)
			require.NoError(t, err)
			assert.Equal(t, 4, res.Deleted)
		})
	}
}

// TestTTLPauseApplies: a replica that applies the primary's ops pauses
// the collection too.
func TestTTLPauseApplies(t *testing.T) {
	ctx := context.Background()
	origin, _ := openMon(t, quiet(MonitorOptions{}))
	rec := &recordingSink{}
	origin.ops.attach(rec)
	a := ttlColl(t, origin, "a", 0)
	pause(t, a, true)
	ops := rec.take()
	require.NotEmpty(t, ops)

	replica, _ := openMon(t, quiet(MonitorOptions{}))
	require.NoError(t, replica.Apply(ctx, ops...))
	require.True(t, replica.collections["a"].ttlPaused.Load())
	assert.Equal(t, "", ops[len(ops)-1].Index)
}
