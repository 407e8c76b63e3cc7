package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// durableWithSegments writes n documents (of about 100 bytes) into a new
// directory whose log starts a segment every 1 KiB, after a snapshot of
// the first snap of them (none when snap is 0), and returns the directory
// and its segments, oldest first.
func durableWithSegments(t testing.TB, clk *ttltest.Clock, snap, n int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways), withLogSegmentSize(1024))
	c := db.Collection("c")
	for i := range n {
		if i == snap && snap > 0 {
			require.NoError(t, db.Snapshot(context.Background()))
		}
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("p", 64)})
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	segs, err := filepath.Glob(filepath.Join(dir, logDirName, "*.wal"))
	require.NoError(t, err)
	return dir, segs
}

// TestMissingLogRefused: a directory whose log was removed (the whole
// log/, every segment, or its newest segments) is refused with ErrCorrupt
// saying what is missing, instead of opening with what is left; WithSalvage
// opens it with what is left and says so.
func TestMissingLogRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		snap   int // documents before the snapshot (0: none)
		remove func(dir string, segs []string) []string
		left   int // documents WithSalvage finds
	}{
		{"log directory", 10, func(dir string, _ []string) []string { return []string{filepath.Join(dir, logDirName)} }, 10},
		{"every segment", 10, func(_ string, segs []string) []string { return segs }, 10},
		{"newest segment", 0, func(_ string, segs []string) []string { return segs[len(segs)-1:] }, -1},
		{"two newest segments", 0, func(_ string, segs []string) []string { return segs[len(segs)-2:] }, -1},
		{"newest segment after a snapshot", 10, func(_ string, segs []string) []string { return segs[len(segs)-1:] }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := ttltest.NewClock(opEpoch)
			dir, segs := durableWithSegments(t, clk, tc.snap, 30)
			require.GreaterOrEqual(t, len(segs), 3)
			gone := tc.remove(dir, segs)
			for _, p := range gone {
				require.NoError(t, os.RemoveAll(p))
			}
			_, err := openDurable(t, clk, dir)
			require.ErrorIs(t, err, ErrCorrupt)
			require.Contains(t, err.Error(), "missing")
			if tc.left < 0 {
				require.Contains(t, err.Error(), filepath.Base(gone[0]), "the error names the first missing segment")
			}

			db := mustOpenDurable(t, clk, dir, WithSalvage())
			n := docCount(t, db)
			require.Less(t, n, 30)
			if tc.left >= 0 {
				require.Equal(t, tc.left, n)
				require.NotEmpty(t, db.Recovery().SalvageNotes)
			} else {
				require.Greater(t, n, tc.snap, "the segments before the missing ones are loaded")
				require.Equal(t, findIDs(t, db.Collection("c"), nil)[n-1], n-1, "a prefix of the writes")
			}
			_, err = db.Collection("c").InsertOne(context.Background(), Document{"_id": "after"})
			require.NoError(t, err)
			require.NoError(t, db.Close())
			db = mustOpenDurable(t, clk, dir)
			require.Equal(t, n+1, docCount(t, db), "the salvaged directory opens, the write after the salvage in it")
			require.NoError(t, db.Close())
		})
	}
}

// TestMissingOldestSegment: a log whose segments after the snapshot's end
// start later than the op after it (the oldest were removed) is refused;
// WithSalvage loads the snapshot and the log that is left, and says which
// ops were lost.
func TestMissingOldestSegment(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	dir, segs := durableWithSegments(t, clk, 10, 40)
	require.GreaterOrEqual(t, len(segs), 3)
	require.NoError(t, os.Remove(segs[0]))
	_, err := openDurable(t, clk, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	db := mustOpenDurable(t, clk, dir, WithSalvage())
	n := docCount(t, db)
	require.Greater(t, n, 10)
	require.Less(t, n, 40)
	require.NotEmpty(t, db.Recovery().SalvageNotes)
	require.NoError(t, db.Close())
}
