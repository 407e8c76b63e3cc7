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

// pauseDB pauses or resumes the DB's TTL deletion.
func pauseDB(t *testing.T, db *DB, paused bool) {
	t.Helper()
	require.NoError(t, db.SetTTLPaused(context.Background(), paused))
	require.Equal(t, paused, db.TTLPaused())
}

// TestDBTTLPause: SetTTLPaused(true) stops the TTL deletion of every
// collection, time-series ones included, while HideExpired still hides
// the expired documents and every index's stall cause says paused; the
// monitor's deadline wake finds nothing to wake for. A resume deletes
// them, except in a collection paused by CollMod, which stays paused.
func TestDBTTLPause(t *testing.T) {
	ctx := context.Background()
	db, clk := openMon(t, quiet(MonitorOptions{}), WithHideExpired())
	a, b, c := ttlColl(t, db, "a", 0), ttlColl(t, db, "b", 0), ttlColl(t, db, "c", 0)
	insertDated(t, a, "x", 5, t0)
	insertDated(t, b, "y", 3, t0)
	insertDated(t, c, "z", 2, t0)
	expire := int32(60)
	w, err := db.CreateCollection(ctx, "w", weatherOpts(0, &expire))
	require.NoError(t, err)
	_, err = w.InsertOne(ctx, Document{"timestamp": t0, "sensor": "s", "v": 1})
	require.NoError(t, err)
	pause(t, c, true)
	clk.Advance(24 * time.Hour) // past the bucket's span too
	pauseDB(t, db, true)

	_, ok := db.earliestThreshold()
	assert.False(t, ok, "nothing to wake for")
	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Zero(t, res.Deleted, "paused")
	m := db.Metrics()
	assert.Equal(t, 5, int(m.Documents["a"]))
	n, err := a.CountDocuments(ctx, nil)
	require.NoError(t, err)
	assert.Zero(t, n, "hidden under HideExpired all the same")
	for _, coll := range []string{"a", "b", "c"} {
		x := m.TTL.ExpiryByIndex[IndexRef{coll, "lastModifiedDate_1"}]
		assert.True(t, x.Stalled, coll)
		assert.Equal(t, StallPaused, x.StallCause, coll)
	}

	pauseDB(t, db, false)
	res, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5+3+1, res.Deleted, "a, b and w's measurement; c stays paused by CollMod")
	assert.Equal(t, 2, int(db.Metrics().Documents["c"]))
	assert.False(t, db.Metrics().TTL.ExpiryByIndex[IndexRef{"a", "lastModifiedDate_1"}].Stalled)
}

// TestDBTTLPauseSurvivesRestart: the DB-wide pause is an op: in the log
// and, from a snapshot taken while it holds, in the snapshot's header; a
// resume after the snapshot comes back from the log.
func TestDBTTLPauseSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	for _, snap := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "snapshot"}[snap], func(t *testing.T) {
			clk := ttltest.NewClock(t0)
			dir := t.TempDir()
			db := mustOpenDurable(t, clk, dir)
			a := ttlColl(t, db, "a", 0)
			insertDated(t, a, "x", 4, t0)
			pauseDB(t, db, true)
			if snap {
				require.NoError(t, db.Snapshot(ctx))
			}
			require.NoError(t, db.Close())

			clk.Advance(time.Hour)
			db = mustOpenDurable(t, clk, dir)
			require.True(t, db.TTLPaused(), "paused after the restart")
			res, err := db.RunTTLPass(ctx)
			require.NoError(t, err)
			assert.Zero(t, res.Deleted)
			pauseDB(t, db, false)
			require.NoError(t, db.Close())
			db = mustOpenDurable(t, clk, dir)
			require.False(t, db.TTLPaused(), "the resume is kept too")
			res, err = db.RunTTLPass(ctx)
			require.NoError(t, err)
			assert.Equal(t, 4, res.Deleted)
			require.NoError(t, db.Close())
		})
	}
}

// TestDBTTLPauseOp: the pause is an OpDBMod naming no collection, whose
// binary form round-trips; a replica applying it pauses; one naming a
// collection or without ttlPaused is ErrInvalidOp and changes nothing;
// change streams show no event for it.
func TestDBTTLPauseOp(t *testing.T) {
	ctx := context.Background()
	origin, _ := openMon(t, quiet(MonitorOptions{}))
	cs, err := origin.Watch(ctx, nil, ChangeStreamOptions{ShowExpandedEvents: true})
	require.NoError(t, err)
	rec := &recordingSink{}
	origin.ops.attach(rec)
	pauseDB(t, origin, true)
	_, err = origin.Collection("a").InsertOne(ctx, Document{"_id": 1})
	require.NoError(t, err)
	ops := rec.take()
	require.NotEmpty(t, ops)
	op := ops[0]
	assert.Equal(t, OpDBMod, op.Kind)
	assert.Equal(t, "dbMod", op.Kind.String())
	assert.Empty(t, op.Collection)
	bin, err := op.MarshalBinary()
	require.NoError(t, err)
	var back Op
	require.NoError(t, back.UnmarshalBinary(bin))
	assert.Equal(t, op.Kind, back.Kind)
	assert.Equal(t, op.Seq, back.Seq)
	assert.Equal(t, []byte(op.Spec), []byte(back.Spec))

	for cs.Next(ctx) {
		ev := cs.Event()
		if ev.OperationType == OperationInsert {
			break
		}
		assert.Equal(t, OperationCreate, ev.OperationType, "no event but the insert's collection's creation: %+v", ev)
	}

	replica, _ := openMon(t, quiet(MonitorOptions{}))
	bad := op
	bad.Collection = "a"
	require.ErrorIs(t, replica.Apply(ctx, bad), ErrInvalidOp)
	bad = op
	bad.Spec = pauseSpec(true)[:0]
	require.ErrorIs(t, replica.Apply(ctx, bad), ErrInvalidOp)
	assert.False(t, replica.TTLPaused(), "refused ops change nothing")
	assert.Zero(t, replica.LastSeq())
	require.NoError(t, replica.Apply(ctx, ops...))
	assert.True(t, replica.TTLPaused(), "applied")
}
