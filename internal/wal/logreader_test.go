package wal

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
)

// readAll reads r in batches of max until a Read returns 0, checking
// every payload, and returns the seqs read.
func readAll(t testing.TB, r *Reader, max int) []uint64 {
	t.Helper()
	var seqs []uint64
	for {
		n, err := r.Read(max, func(seq uint64, p []byte) error {
			if !bytes.Equal(p, payload(seq)) {
				return fmt.Errorf("record %d: wrong payload", seq)
			}
			seqs = append(seqs, seq)
			return nil
		})
		require.NoError(t, err)
		require.LessOrEqual(t, n, max)
		if n == 0 {
			return seqs
		}
	}
}

// TestReaderReadsAcrossSegmentsWhileWritesGoOn: a Reader returns every
// record from its seq on, in order, across segment rolls, batch by batch,
// and picks up the records written between its calls.
func TestReaderReadsAcrossSegmentsWhileWritesGoOn(t *testing.T) {
	for _, max := range []int{1, 3, 1000} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			m := vfs.NewFaultFS()
			l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
			defer l.Close()
			appendN(t, l, 1, 100)
			require.Greater(t, l.Stats().Segments, 5)
			r := l.NewReader(37)
			got := readAll(t, r, max)
			require.Equal(t, span(37, 100), got)
			appendN(t, l, 101, 180)
			require.Equal(t, span(101, 180), readAll(t, r, max), "the records written since")
			require.Empty(t, readAll(t, r, max))

			require.Equal(t, span(1, 180), readAll(t, l.NewReader(1), max))
			require.Equal(t, span(180, 180), readAll(t, l.NewReader(180), max))
			require.Empty(t, readAll(t, l.NewReader(181), max))
		})
	}
}

// TestReaderStopsAtFnError: fn's error ends Read; the record it was given
// counts as read, and the next Read goes on after it.
func TestReaderStopsAtFnError(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	defer l.Close()
	appendN(t, l, 1, 50)
	r := l.NewReader(1)
	stop := errors.New("stop")
	n, err := r.Read(100, func(seq uint64, _ []byte) error {
		if seq == 10 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 10, n)
	require.Equal(t, span(11, 50), readAll(t, r, 7))
}

// TestReaderAfterTruncateFront: a Reader whose next records were dropped
// fails with ErrTruncated; one that is past them goes on.
func TestReaderAfterTruncateFront(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	defer l.Close()
	appendN(t, l, 1, 200)
	behind := l.NewReader(1)
	n, err := behind.Read(2, func(uint64, []byte) error { return nil })
	require.NoError(t, err)
	require.Equal(t, 2, n)
	ahead := l.NewReader(190)
	require.NoError(t, l.TruncateFront(150))
	first := l.SegmentInfos()[0].Base
	require.Greater(t, first, uint64(3))

	_, err = behind.Read(10, func(uint64, []byte) error { return nil })
	require.ErrorIs(t, err, ErrTruncated)
	_, err = l.NewReader(first-1).Read(10, func(uint64, []byte) error { return nil })
	require.ErrorIs(t, err, ErrTruncated)
	require.Equal(t, span(190, 200), readAll(t, ahead, 4))
	require.Equal(t, span(first, 200), readAll(t, l.NewReader(first), 1000))
}

// TestSegmentInfos: the segments' bases and sizes add up to the log's.
func TestSegmentInfos(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	defer l.Close()
	appendN(t, l, 1, 100)
	infos := l.SegmentInfos()
	require.Len(t, infos, l.Stats().Segments)
	var size int64
	for i, s := range infos {
		size += s.Size
		if i > 0 {
			require.Greater(t, s.Base, infos[i-1].Base)
		}
	}
	require.Equal(t, l.Stats().Size, size)
	require.Equal(t, uint64(1), infos[0].Base)
}

// TestSyncDurations: every fsync is timed by Options.Now and counted in
// the bucket of its duration; the counts add up to Syncs.
func TestSyncDurations(t *testing.T) {
	m := vfs.NewFaultFS()
	var now time.Time
	step := 3 * time.Millisecond // each reading of the clock moves it
	clock := func() time.Time { now = now.Add(step); return now }
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512, Now: clock, NoCommitDelay: true})
	defer l.Close()
	appendN(t, l, 1, 50)
	st := l.Stats()
	var n int64
	for _, c := range st.SyncDurations {
		n += c
	}
	require.Equal(t, st.Syncs, n, "every fsync counted once")
	i := 0
	for SyncDurationBounds[i] < step {
		i++
	}
	require.Equal(t, st.Syncs, st.SyncDurations[i], "each took one step of the clock: %v", step)
	require.Equal(t, time.Duration(st.Syncs)*step, st.SyncDurationSum)
}
