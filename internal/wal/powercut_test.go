package wal

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/internal/vfs"
)

// writer is the way a DB uses the log: Write in seq order under a lock
// (its committer's), Wait outside it.
type writer struct {
	l     *Log
	order sync.Mutex
	next  uint64
}

// commit writes the next record and waits for it; it returns the seq and
// whether it was acknowledged (both calls returned nil).
func (w *writer) commit() (uint64, bool) {
	w.order.Lock()
	seq := w.next + 1
	err := w.l.Write(seq, payload(seq))
	if err == nil {
		w.next = seq
	}
	w.order.Unlock()
	return seq, err == nil && w.l.Wait(seq) == nil
}

// TestPowerCutSyncAlways: writers commit concurrently (rolling segments as
// they go) while the power is cut at a random moment; after it, every
// acknowledged record is in the log, and the log is a prefix of what was
// written, whole records only.
func TestPowerCutSyncAlways(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	for round := range 40 {
		m := vfs.NewFaultFS()
		l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 1 << 10, BufferSize: bufferSizes[round%2]})
		w := &writer{l: l}
		var acked atomic.Uint64 // the highest acknowledged seq
		var count atomic.Int64
		cutAfter := int64(1 + rng.IntN(300))
		var wg sync.WaitGroup
		cut := make(chan struct{})
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-cut:
						return
					default:
					}
					seq, ok := w.commit()
					if !ok {
						continue // after the cut, the log fails
					}
					for {
						cur := acked.Load()
						if seq <= cur || acked.CompareAndSwap(cur, seq) {
							break
						}
					}
					count.Add(1)
				}
			}()
		}
		for count.Load() < cutAfter {
			runtime.Gosched() // let the writers run; no timing is asserted
		}
		m.PowerCut()
		close(cut)
		wg.Wait()
		max := acked.Load()
		_ = l.Close() // the handles are dead: an error is expected

		l = open(t, m, Options{Sync: SyncAlways, SegmentSize: 1 << 10})
		got := replay(t, l, 1)
		require.GreaterOrEqual(t, uint64(len(got)), max, "round %d: acknowledged record lost", round)
		require.Equal(t, span(1, uint64(len(got))), got, "round %d: not a prefix", round)
		require.NoError(t, l.Close())
	}
}

// TestPowerCutSyncEverySecond: a power cut loses what was written after the
// last flush and nothing before it.
func TestPowerCutSyncEverySecond(t *testing.T) {
	for _, bs := range bufferSizes {
		t.Run(fmt.Sprint("buffer=", bs), func(t *testing.T) { testPowerCutSyncEverySecond(t, bs) })
	}
}

func testPowerCutSyncEverySecond(t *testing.T, bs int) {
	m := vfs.NewFaultFS()
	timers := newFakeTimers()
	opts := Options{SegmentSize: 1 << 20, NewTimer: timers.NewTimer, BufferSize: bs}
	l := open(t, m, opts)
	w := &writer{l: l}
	for range 10 {
		_, ok := w.commit()
		require.True(t, ok)
	}
	syncs := m.Stats().Syncs
	timers.flush(t)
	require.Equal(t, syncs+1, m.Stats().Syncs, "a flush is one fsync")
	timers.flush(t)
	require.Equal(t, syncs+1, m.Stats().Syncs, "a flush with nothing new fsyncs")
	for range 10 {
		_, ok := w.commit()
		require.True(t, ok, "Wait does not wait under SyncEverySecond")
	}
	require.Equal(t, syncs+1, m.Stats().Syncs, "an fsync before the flusher's time")
	m.PowerCut()
	_ = l.Close()
	l = open(t, m, opts)
	require.Equal(t, span(1, 10), replay(t, l, 1), "exactly the flushed records survive")
	require.NoError(t, l.Close())
}

// TestPowerCutSyncEverySecondRoll: starting a segment fsyncs the old one,
// so records before a roll survive even without a flush.
func TestPowerCutSyncEverySecondRoll(t *testing.T) {
	m := vfs.NewFaultFS()
	timers := newFakeTimers()
	opts := Options{SegmentSize: 1 << 10, NewTimer: timers.NewTimer}
	l := open(t, m, opts)
	appendN(t, l, 1, 5)
	timers.flush(t)
	appendN(t, l, 6, 60)
	st := l.Stats()
	require.Greater(t, st.Segments, 2)
	names, err := m.ReadDir(testDir)
	require.NoError(t, err)
	lastBase, _ := parseSegmentName(names[len(names)-1])
	m.PowerCut()
	_ = l.Close()
	l = open(t, m, opts)
	defer l.Close()
	got := replay(t, l, 1)
	require.Equal(t, span(1, lastBase-1), got, "records in rolled segments survive; the active one's unflushed ones do not")
}

func TestPowerCutSyncNever(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncNever})
	appendN(t, l, 1, 10)
	m.PowerCut()
	_ = l.Close()
	l = open(t, m, Options{Sync: SyncNever})
	require.Empty(t, replay(t, l, 1), "SyncNever fsynced on its own")
	appendN(t, l, 1, 10)
	require.NoError(t, l.Close())
	m.PowerCut()
	l = open(t, m, Options{Sync: SyncNever})
	require.Equal(t, span(1, 10), replay(t, l, 1), "Close does not sync")
	appendN(t, l, 11, 12)
	require.NoError(t, l.Sync())
	m.PowerCut()
	_ = l.Close()
	l = open(t, m, Options{Sync: SyncNever})
	require.Equal(t, span(1, 12), replay(t, l, 1), "Sync does not sync")
	require.NoError(t, l.Close())
}

// TestPowerCutAfterTruncateFront: a power cut right after TruncateFront
// keeps a log that replays from the truncation point.
func TestPowerCutAfterTruncateFront(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	appendN(t, l, 1, 100)
	require.NoError(t, l.TruncateFront(60))
	appendN(t, l, 101, 110)
	m.PowerCut()
	_ = l.Close()
	l = open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	defer l.Close()
	require.LessOrEqual(t, l.FirstSeq(), uint64(60))
	require.Equal(t, span(60, 110), replay(t, l, 60))
}

// TestCrashLosesOnlyTheBuffer: a crash of the process (the OS keeps what
// was written) loses nothing written without a buffer, and with one only
// the records since the last flush, fewer than BufferSize bytes of them.
func TestCrashLosesOnlyTheBuffer(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncEverySecond, SyncNever} {
		m := vfs.NewFaultFS()
		timers := newFakeTimers()
		l := open(t, m, Options{Sync: pol, NewTimer: timers.NewTimer})
		appendN(t, l, 1, 20)
		m.Crash()
		_ = l.Close()
		l = open(t, m, Options{})
		require.Equal(t, span(1, 20), replay(t, l, 1), "%s without a buffer", pol)
		require.NoError(t, l.Close())

		m = vfs.NewFaultFS()
		timers = newFakeTimers()
		l = open(t, m, Options{Sync: pol, NewTimer: timers.NewTimer, BufferSize: 1 << 20})
		appendN(t, l, 1, 10)
		timers.flush(t)
		appendN(t, l, 11, 20)
		m.Crash()
		_ = l.Close()
		l = open(t, m, Options{})
		require.Equal(t, span(1, 10), replay(t, l, 1), "%s: what the flush wrote survives, the buffer does not", pol)
		require.NoError(t, l.Close())

		// A buffer that fills is written at once.
		m = vfs.NewFaultFS()
		l = open(t, m, Options{Sync: pol, NewTimer: timers.NewTimer, BufferSize: 512})
		appendN(t, l, 1, 100)
		m.Crash()
		_ = l.Close()
		l = open(t, m, Options{})
		got := replay(t, l, 1)
		require.Equal(t, span(1, uint64(len(got))), got)
		var lost int
		for s := uint64(len(got)) + 1; s <= 100; s++ {
			lost += recHeaderSize + len(payload(s))
		}
		require.Less(t, lost, 512, "%s: more than the buffer was lost", pol)
		require.NoError(t, l.Close())
	}
}
