package wal

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
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
