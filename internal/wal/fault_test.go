package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/vfs"
)

// requireFailed checks that every way in reports the log's failure, cause
// included, and that Close does too.
func requireFailed(t *testing.T, l *Log, next uint64, cause error) {
	t.Helper()
	require.ErrorIs(t, l.Err(), errs.ErrLogFailed)
	require.ErrorIs(t, l.Err(), cause)
	for _, err := range []error{l.Write(next, nil), l.Append(next, nil), l.Sync(), l.TruncateFront(next)} {
		require.ErrorIs(t, err, errs.ErrLogFailed)
		require.ErrorIs(t, err, cause)
	}
	err := l.Close()
	require.ErrorIs(t, err, errs.ErrLogFailed)
}

func isSegment(name string) bool { return strings.HasSuffix(name, segSuffix) }

// TestFailingWrite: a write cut short fails the log for good (the disk
// working again changes nothing); the next Open truncates the torn record
// and keeps every acknowledged one.
func TestFailingWrite(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncAlways, SyncEverySecond, SyncNever} {
		t.Run(pol.String(), func(t *testing.T) {
			m := vfs.NewFaultFS()
			timers := newFakeTimers()
			l := open(t, m, Options{Sync: pol, NewTimer: timers.NewTimer})
			appendN(t, l, 1, 10)
			m.Inject(Fault(vfs.Fault{Op: vfs.FaultWrite, After: 20, Match: isSegment}))
			err := l.Append(11, payload(11))
			require.ErrorIs(t, err, errs.ErrLogFailed)
			require.ErrorIs(t, err, syscall.EIO)
			m.ClearFaults()
			requireFailed(t, l, 12, syscall.EIO)

			l = open(t, m, Options{})
			require.Len(t, l.Recovery().Cuts, 1, "the torn record was not cut")
			require.Equal(t, int64(20), l.Recovery().Bytes())
			require.Equal(t, span(1, 10), replay(t, l, 1))
			require.NoError(t, l.Close())
		})
	}
}

// Fault is vfs.Fault; the conversion above keeps the call sites short.
type Fault = vfs.Fault

// TestFailingFsync: an fsync that fails once fails the log for good, even
// though the next fsync would succeed: after a failed fsync the kernel
// may have dropped the pages, so a later success proves nothing.
func TestFailingFsync(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways})
	appendN(t, l, 1, 10)
	m.Inject(Fault{Op: vfs.FaultSync, Once: true, Match: isSegment})
	err := l.Append(11, payload(11))
	require.ErrorIs(t, err, errs.ErrLogFailed)
	require.ErrorIs(t, err, syscall.EIO)
	requireFailed(t, l, 12, syscall.EIO)

	// The unacknowledged record is whole or absent, never half there.
	m.PowerCut()
	l = open(t, m, Options{})
	require.Equal(t, span(1, 10), replay(t, l, 1))
	require.NoError(t, l.Close())
}

// TestFailingFlush: under SyncEverySecond the flusher's failed fsync fails
// the log, and the next Write says so.
func TestFailingFlush(t *testing.T) {
	m := vfs.NewFaultFS()
	timers := newFakeTimers()
	l := open(t, m, Options{NewTimer: timers.NewTimer})
	appendN(t, l, 1, 3)
	m.Inject(Fault{Op: vfs.FaultSync, Match: isSegment})
	timers.flush(t)
	err := l.Append(4, payload(4))
	require.ErrorIs(t, err, errs.ErrLogFailed)
	require.ErrorIs(t, err, syscall.EIO)
	m.ClearFaults()
	requireFailed(t, l, 5, syscall.EIO)
}

// TestDiskFull: a full disk fails the log with an error matching ENOSPC;
// every acknowledged record survives, and the log opens once there is room.
func TestDiskFull(t *testing.T) {
	for _, bs := range bufferSizes {
		t.Run(fmt.Sprint("buffer=", bs), func(t *testing.T) { testDiskFull(t, bs) })
	}
}

func testDiskFull(t *testing.T, bs int) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 2 << 10, BufferSize: bs})
	m.SetDiskSize(6 << 10)
	var acked uint64
	var err error
	for seq := uint64(1); ; seq++ {
		if err = l.Append(seq, payload(seq)); err != nil {
			break
		}
		acked = seq
	}
	require.ErrorIs(t, err, errs.ErrLogFailed)
	require.ErrorIs(t, err, vfs.ErrNoSpace)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Greater(t, acked, uint64(10))
	requireFailed(t, l, acked+2, syscall.ENOSPC)

	m.ClearFaults()
	m.PowerCut()
	l = open(t, m, Options{Sync: SyncAlways, SegmentSize: 2 << 10})
	got := replay(t, l, 1)
	require.GreaterOrEqual(t, uint64(len(got)), acked)
	require.Equal(t, span(1, uint64(len(got))), got)
	require.NoError(t, l.Close())
}

// TestFailingRoll: a segment that cannot be started (its directory cannot
// be synced) fails the log before any record goes into it.
func TestFailingRoll(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	m.Inject(Fault{Op: vfs.FaultSyncDir})
	var err error
	var seq uint64
	for seq = 1; seq < 100 && err == nil; seq++ {
		err = l.Append(seq, payload(seq))
	}
	require.ErrorIs(t, err, errs.ErrLogFailed)
	require.Greater(t, seq, uint64(2), "failed before the first roll")
	requireFailed(t, l, seq+1, syscall.EIO)
	m.ClearFaults()
	m.PowerCut()
	l = open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	got := replay(t, l, 1)
	require.Equal(t, span(1, seq-2), got, "every record acknowledged before the failed roll survives")
	require.NoError(t, l.Close())
}

// TestFailedHandlesAfterPowerCut: a log whose files died with the power
// reports it rather than pretending.
func TestFailedHandlesAfterPowerCut(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways})
	appendN(t, l, 1, 3)
	m.PowerCut()
	err := l.Append(4, nil)
	require.ErrorIs(t, err, errs.ErrLogFailed)
	require.True(t, errors.Is(err, fs.ErrClosed))
	require.Error(t, l.Close())
}

// TestRollWithoutNewSegment: a segment that cannot be created (its
// directory takes no new file) does not fail the log: records go on into
// the active segment, TruncateFront reports the cause, and the next roll
// once files can be created again starts the segment. Nothing is lost.
func TestRollWithoutNewSegment(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	appendN(t, l, 1, 3)
	m.Inject(vfs.Fault{Op: vfs.FaultCreate, Err: syscall.EACCES})
	appendN(t, l, 4, 40) // past the segment size: rolls are tried and fail
	require.ErrorIs(t, l.TruncateFront(41), syscall.EACCES)
	require.NoError(t, l.Err())
	require.Equal(t, 1, l.Stats().Segments)
	m.ClearFaults()
	appendN(t, l, 41, 80)
	require.Greater(t, l.Stats().Segments, 1, "rolls resume")
	require.Equal(t, span(1, 80), replay(t, l, 1))
	require.NoError(t, l.Close())
	m.PowerCut()
	l = open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	require.Equal(t, span(1, 80), replay(t, l, 1), "every record synced survives")
	require.NoError(t, l.Close())
}
