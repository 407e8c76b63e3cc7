package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// TestMissingLogWithoutSnapshot: the README says a removed log/ (or every
// segment) fails Open with ErrCorrupt. A directory that never took a
// snapshot holds its documents in the log alone: removing it must not
// open an empty DB silently.
func TestMissingLogWithoutSnapshot(t *testing.T) {
	for _, whole := range []bool{true, false} {
		clk := ttltest.NewClock(opEpoch)
		dir, segs := durableWithSegments(t, clk, 0, 30)
		if whole {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, logDirName)))
		} else {
			for _, s := range segs {
				require.NoError(t, os.Remove(s))
			}
		}
		db, err := openDurable(t, clk, dir)
		if err == nil {
			n := docCount(t, db)
			db.Close()
			t.Fatalf("whole log/ removed=%v: Open succeeded silently with %d of 30 documents", whole, n)
		}
		require.ErrorIs(t, err, ErrCorrupt)
	}
}

// WithSalvage opens such a directory with a new log and says so; the
// marker file is written with a directory's first log, so a new directory
// opens, and opens again, with nothing reported.
func TestMissingLogWithoutSnapshotSalvaged(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	dir, _ := durableWithSegments(t, clk, 0, 30)
	require.FileExists(t, filepath.Join(dir, markerName))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, logDirName)))
	db, err := openDurable(t, clk, dir, WithSalvage())
	require.NoError(t, err)
	require.Equal(t, 0, docCount(t, db))
	require.Contains(t, db.Recovery().SalvageNotes, "the log was missing: a new one was started")
	require.NoError(t, db.Close())

	fresh := t.TempDir()
	for range 2 {
		db, err := openDurable(t, clk, fresh)
		require.NoError(t, err)
		require.Empty(t, db.Recovery().SalvageNotes)
		require.NoError(t, db.Close())
	}
}
