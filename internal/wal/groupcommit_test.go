package wal

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

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
	for m.Stats().Writes-base.Writes < writers {
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
