package wal

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
)

// TestGroupCommit: 8 writers under SyncAlways share fsyncs. The first
// fsync is held (the FaultFS's sync hook) until all 8 records are written,
// as a slow disk would hold it; then at most one more fsync covers the
// records it did not (none, if the leader gathered all 8 before it
// looked). The counts come from the FaultFS, not from timing: 8 commits,
// at most 2 fsyncs.
func TestGroupCommit(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways})
	defer l.Close()
	base := m.Stats()
	const writers = 8
	release := make(chan struct{})
	var once sync.Once
	m.SetSyncHook(func(string) {
		once.Do(func() { <-release })
	})
	w := &writer{l: l}
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok := w.commit(); !ok {
				t.Error("commit failed")
			}
		}()
	}
	// Writers write while the first fsync is held: the log's lock is not
	// held across an fsync.
	deadline := time.Now().Add(10 * time.Second)
	for m.Stats().Writes-base.Writes < writers {
		if time.Now().After(deadline) {
			wrote := m.Stats().Writes - base.Writes
			close(release)
			wg.Wait()
			t.Fatalf("only %d of %d writers wrote while an fsync was held", wrote, writers)
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	st := m.Stats()
	syncs := st.Syncs - base.Syncs
	ratio := float64(writers) / float64(syncs)
	t.Logf("%d commits, %d fsyncs: %.1f commits per fsync", writers, syncs, ratio)
	require.LessOrEqual(t, syncs, int64(2), "8 commits: 1 held fsync, at most 1 for the records it did not cover")
	require.GreaterOrEqual(t, ratio, 4.0)
	require.Equal(t, span(1, writers), replay(t, l, 1))
}

// TestGroupCommitUnderLoad: many commits from 8 writers with an fsync that
// yields, as a real one does; every commit is acknowledged once synced
// and no commit waits for an fsync that did not cover it.
func TestGroupCommitUnderLoad(t *testing.T) {
	for _, bs := range bufferSizes {
		t.Run(fmt.Sprint("buffer=", bs), func(t *testing.T) { testGroupCommitUnderLoad(t, bs) })
	}
}

func testGroupCommitUnderLoad(t *testing.T, bs int) {
	m := vfs.NewFaultFS()
	m.SetSyncHook(func(string) {
		for range 20 {
			runtime.Gosched()
		}
	})
	l := open(t, m, Options{Sync: SyncAlways, BufferSize: bs})
	w := &writer{l: l}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if _, ok := w.commit(); !ok {
					t.Error("commit failed")
					return
				}
			}
		}()
	}
	wg.Wait()
	st := l.Stats()
	t.Logf("%d commits, %d fsyncs: %.2f commits per fsync", st.Appends, st.Syncs, float64(st.Appends)/float64(st.Syncs))
	require.Equal(t, int64(1600), st.Appends)
	require.LessOrEqual(t, st.Syncs, st.Appends+1)
	m.PowerCut()
	_ = l.Close()
	l = open(t, m, Options{})
	require.Equal(t, span(1, 1600), replay(t, l, 1), "an acknowledged commit was not synced")
	require.NoError(t, l.Close())
}

// TestWaitDuringClose: a commit written before Close and waited for while
// Close runs is acknowledged: Close syncs it, or the waiter does, which
// ever gets to the file first.
func TestWaitDuringClose(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	m.SetSyncHook(func(string) {
		once.Do(func() {
			close(entered)
			<-release
		})
	})
	require.NoError(t, l.Write(1, payload(1)))
	first := make(chan error)
	go func() { first <- l.Wait(1) }() // the leader, held in its fsync
	<-entered
	require.NoError(t, l.Write(2, payload(2))) // not covered by that fsync
	closed := make(chan error)
	go func() { closed <- l.Close() }()
	noop := func(uint64, []byte) error { return nil }
	for !errors.Is(l.Replay(1, noop), ErrClosed) {
		runtime.Gosched() // until Close has begun (it then waits for the fsync)
	}
	second := make(chan error)
	go func() { second <- l.Wait(2) }()
	close(release)
	require.NoError(t, <-first)
	require.NoError(t, <-second, "a commit written before Close was refused")
	require.NoError(t, <-closed)
	m.PowerCut()
	l = open(t, m, Options{})
	require.Equal(t, span(1, 2), replay(t, l, 1))
	require.NoError(t, l.Close())
}

// fakeNow is a clock for the commit delay that moves only when told.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeNow) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeNow) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// spin is work a writer does before it commits: a loop the compiler
// keeps.
var spin atomic.Int64

func work() {
	var x int64
	for i := range int64(150_000) {
		x += i * i
	}
	spin.Add(x)
}

// TestCommitDelay: after an fsync that 8 callers waited for, a leader
// alone waits for the other 7, who come back after some work (as DB
// writers build their next write), and one fsync covers the 8 records.
// Without the delay the leader's gathering (yielding while records keep
// coming) gives up as soon as one yield sees none: the run without it is
// logged for comparison. The log's clock does not move, so only the bound
// on yields could end the wait.
func TestCommitDelay(t *testing.T) {
	for _, noDelay := range []bool{false, true} {
		m := vfs.NewFaultFS()
		clk := &fakeNow{t: time.Unix(1e9, 0)}
		l := open(t, m, Options{Sync: SyncAlways, Now: clk.now, NoCommitDelay: noDelay})
		l.groupMu.Lock()
		l.lastGroup, l.lastSync = 8, time.Second // as after a group commit of 8
		l.groupMu.Unlock()
		base := m.Stats().Syncs
		w := &writer{l: l}
		leading := func() bool { // the first writer leads: it gathers or waits
			l.groupMu.Lock()
			defer l.groupMu.Unlock()
			return l.syncing && len(l.waitSeqs) == 1
		}
		var wg sync.WaitGroup
		var firstDone, led atomic.Bool
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i > 0 {
					for !led.Load() && !firstDone.Load() {
						if leading() {
							led.Store(true)
						}
						runtime.Gosched()
					}
					work()
				}
				if _, ok := w.commit(); !ok {
					t.Error("commit failed")
				}
				if i == 0 {
					firstDone.Store(true)
				}
			}()
		}
		wg.Wait()
		syncs := m.Stats().Syncs - base
		t.Logf("commit delay off: %v: 8 commits, %d fsyncs", noDelay, syncs)
		if !noDelay { // without it: 1 to 5 fsyncs, as the scheduler has it
			require.Equal(t, int64(1), syncs, "one fsync for the 8")
		}
		require.Equal(t, span(1, 8), replay(t, l, 1))
		require.NoError(t, l.Close())
	}
}

// TestCommitDelayBounded: a writer waits for no one when it writes alone,
// and a leader waiting for writers who do not come stops after half of
// the last fsync's time by the log's clock.
func TestCommitDelayBounded(t *testing.T) {
	m := vfs.NewFaultFS()
	clk := &fakeNow{t: time.Unix(1e9, 0)}
	var calls atomic.Int64
	now := func() time.Time {
		calls.Add(1)
		clk.advance(10 * time.Microsecond) // every reading moves the clock
		return clk.now()
	}
	m.SetSyncHook(func(string) { clk.advance(time.Millisecond) })
	l := open(t, m, Options{Sync: SyncAlways, Now: now})
	defer l.Close()
	w := &writer{l: l}
	for range 50 {
		before := calls.Load()
		_, ok := w.commit()
		require.True(t, ok)
		require.Equal(t, int64(2), calls.Load()-before, "alone: the fsync's two readings, no delay")
	}
	// As if 8 writers had waited for the last fsync: one comes back.
	l.groupMu.Lock()
	l.lastGroup = 8
	l.groupMu.Unlock()
	before := calls.Load()
	_, ok := w.commit()
	require.True(t, ok)
	delay := calls.Load() - before - 2
	// Half of an fsync of 1 ms plus two readings of 10 µs, at 10 µs a reading.
	require.InDelta(t, 52, delay, 2, "readings of the clock while the leader waited")
}
