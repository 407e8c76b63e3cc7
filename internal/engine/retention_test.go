package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// retentionDB opens a DB in a FaultFS with 1 KiB log segments, no
// automatic snapshot, and the retention given.
func retentionDB(t *testing.T, m *vfs.FaultFS, clk *ttltest.Clock, r LogRetention) *DB {
	t.Helper()
	db, err := Open(WithDir("d"), withFS(m), WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}), WithSync(SyncAlways),
		withLogSegmentSize(1024), WithAutoSnapshot(AutoSnapshot{Disabled: true}), WithLogRetention(r))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// insertRange inserts documents from..to-1 with 100-byte payloads, one op
// each.
func insertRange(t *testing.T, db *DB, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		_, err := db.Collection("c").InsertOne(context.Background(), Document{"_id": i, "p": strings.Repeat("x", 100)})
		require.NoError(t, err)
	}
}

// resumeFrom opens a stream after token and returns the _ids of the
// inserts it reads until none is ready.
func resumeFrom(t *testing.T, db *DB, token ResumeToken) ([]int, error) {
	t.Helper()
	ctx := context.Background()
	cs, err := db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: &token})
	if err != nil {
		return nil, err
	}
	defer cs.Close(ctx)
	var ids []int
	for cs.TryNext(ctx) {
		if ev := cs.Event(); ev.OperationType == OperationInsert {
			ids = append(ids, idOf(t, ev.DocumentKey))
		}
	}
	return ids, cs.Err()
}

// TestLogRetentionBytes: a snapshot drops the log it covers down to the
// retention's size, whole segments oldest first; a stream resumes from
// what is left, across a restart; a token older than that is
// ErrChangeStreamHistoryLost, and its message says the retention dropped
// it, not the restart. Metrics report what is retained.
func TestLogRetentionBytes(t *testing.T) {
	ctx := context.Background()
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	db := retentionDB(t, m, clk, LogRetention{Bytes: 4096})
	insertRange(t, db, 0, 200)
	before := db.Metrics().Durability
	require.Greater(t, before.LogSize, int64(8192))
	require.NoError(t, db.Snapshot(ctx))
	after := db.Metrics().Durability
	require.LessOrEqual(t, after.LogSize, int64(4096), "at most Bytes of log")
	require.Greater(t, after.LogSize, int64(2048), "whole segments up to Bytes stay")
	require.Equal(t, after.LogSize, after.RetainedLogBytes+activeSegmentSize(t, db), "what the snapshot covers is retained for streams only")
	first := after.RetainedFromSeq
	require.Greater(t, first, uint64(2))
	require.NoError(t, db.Close())

	db = retentionDB(t, m, clk, LogRetention{Bytes: 4096})
	require.Equal(t, first, db.Metrics().Durability.RetainedFromSeq, "a restart keeps the retained log")
	ids, err := resumeFrom(t, db, ResumeToken{Seq: first})
	require.NoError(t, err)
	require.NotEmpty(t, ids)
	require.Equal(t, 199, ids[len(ids)-1])
	for i := 1; i < len(ids); i++ {
		require.Equal(t, ids[i-1]+1, ids[i], "no gap, no duplicate")
	}

	_, err = resumeFrom(t, db, ResumeToken{Seq: first - 1})
	require.ErrorIs(t, err, ErrChangeStreamHistoryLost)
	require.Contains(t, err.Error(), "retention")
	require.Contains(t, err.Error(), "a restart loses nothing")
}

// activeSegmentSize returns the size of the log's newest segment.
func activeSegmentSize(t *testing.T, db *DB) int64 {
	t.Helper()
	segs := db.persist.log.SegmentInfos()
	return segs[len(segs)-1].Size
}

// TestLogRetentionDisabled: without retention a snapshot drops every
// segment it covers, and a token from before it is lost.
func TestLogRetentionDisabled(t *testing.T) {
	ctx := context.Background()
	m := vfs.NewFaultFS()
	db := retentionDB(t, m, ttltest.NewClock(opEpoch), LogRetention{Disabled: true})
	insertRange(t, db, 0, 50)
	require.NoError(t, db.Snapshot(ctx))
	require.Zero(t, db.Metrics().Durability.RetainedLogBytes)
	_, err := resumeFrom(t, db, ResumeToken{Seq: 5})
	require.ErrorIs(t, err, ErrChangeStreamHistoryLost)
}

// TestLogRetentionDefaultKeepsEverythingSmall: by default a small log is
// kept whole through snapshots: a stream resumes from the first op after
// a restart.
func TestLogRetentionDefaultKeepsEverythingSmall(t *testing.T) {
	ctx := context.Background()
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	db := retentionDB(t, m, clk, LogRetention{})
	insertRange(t, db, 0, 100)
	require.NoError(t, db.Snapshot(ctx))
	insertRange(t, db, 100, 120)
	require.NoError(t, db.Snapshot(ctx))
	require.NoError(t, db.Close())
	db = retentionDB(t, m, clk, LogRetention{})
	require.Equal(t, uint64(1), db.Metrics().Durability.RetainedFromSeq)
	ids, err := resumeFrom(t, db, ResumeToken{})
	require.NoError(t, err)
	require.Len(t, ids, 120)
	require.Equal(t, 0, ids[0])
}

// TestLogRetentionAge: segments whose ops may be younger than Age stay
// beyond Bytes; once they are older, the next snapshot drops them.
func TestLogRetentionAge(t *testing.T) {
	ctx := context.Background()
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	db := retentionDB(t, m, clk, LogRetention{Bytes: 1, Age: time.Hour})
	insertRange(t, db, 0, 100)
	clk.Advance(30 * time.Minute)
	require.NoError(t, db.Snapshot(ctx))
	require.Equal(t, uint64(1), db.Metrics().Durability.RetainedFromSeq, "younger than Age: kept whatever Bytes says")

	clk.Advance(2 * time.Hour)
	insertRange(t, db, 100, 110)
	require.NoError(t, db.Snapshot(ctx))
	d := db.Metrics().Durability
	require.Greater(t, d.RetainedFromSeq, uint64(90), "the segments older than Age went")
	_, err := resumeFrom(t, db, ResumeToken{Seq: 2})
	require.ErrorIs(t, err, ErrChangeStreamHistoryLost)
}

// TestRetainedLogDoesNotTriggerAutoSnapshot: the retained log counts in
// LogSize, not towards the automatic snapshot's trigger, which counts the
// bytes logged since the last snapshot: a log kept larger than
// MinLogBytes by the retention does not make every write snapshot again.
func TestRetainedLogDoesNotTriggerAutoSnapshot(t *testing.T) {
	ctx := context.Background()
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	db, err := Open(WithDir("d"), withFS(m), WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}), WithSync(SyncAlways),
		withLogSegmentSize(1024), WithAutoSnapshot(AutoSnapshot{MinLogBytes: 16 << 10, LogRatio: 0.01}), WithLogRetention(LogRetention{Bytes: 1 << 30}))
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Snapshot(ctx))
	insertRange(t, db, 0, 200) // about 30 KB of log: one automatic snapshot at least
	waitFor(t, func() bool { return db.Metrics().Durability.Snapshots >= 2 })
	// Let the snapshotter settle: a wake queued by the inserts may run one
	// more snapshot after the first.
	p := db.persist
	idle := func() bool {
		if len(p.wake) > 0 || !p.snapMu.TryLock() {
			return false
		}
		p.snapMu.Unlock()
		return true
	}
	for settled := 0; settled < 3; {
		before := db.Metrics().Durability.Snapshots
		time.Sleep(20 * time.Millisecond) // the snapshotter's pace, not an expiry
		if idle() && db.Metrics().Durability.Snapshots == before {
			settled++
		} else {
			settled = 0
		}
	}
	n := db.Metrics().Durability.Snapshots
	d := db.Metrics().Durability
	require.Greater(t, d.LogSize, int64(16<<10), "the retention keeps the log beyond MinLogBytes")
	insertRange(t, db, 200, 210)      // some 1.5 KB: below the trigger
	time.Sleep(50 * time.Millisecond) // the snapshotter would have woken (not a wait for expiry)
	require.Equal(t, n, db.Metrics().Durability.Snapshots, "retained segments triggered a snapshot")
}

// TestWithLogRetentionRefuses: negative figures are ErrInvalidOptions,
// and the option needs WithDir.
func TestWithLogRetentionRefuses(t *testing.T) {
	for _, r := range []LogRetention{{Bytes: -1}, {Age: -time.Second}} {
		_, err := Open(WithDir(t.TempDir()), WithLogRetention(r))
		require.ErrorIs(t, err, ErrInvalidOptions)
	}
	_, err := Open(WithLogRetention(LogRetention{}))
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.True(t, errors.Is(err, ErrInvalidOptions))
}
