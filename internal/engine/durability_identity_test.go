package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// replaceLog removes dst's log and puts a copy of src's in its place.
func replaceLog(t testing.TB, dst, src string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(filepath.Join(dst, logDirName)))
	require.NoError(t, os.Rename(copyDir(t, filepath.Join(src, logDirName)), filepath.Join(dst, logDirName)))
}

// TestForeignLogRefused: a data directory whose log comes from another
// directory (another DB's) is refused with ErrCorrupt naming the segment,
// WithSalvage too, instead of applying the other DB's ops onto this one's
// snapshot.
func TestForeignLogRefused(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	a := durableWithData(t, clk, 20, 10, true)
	b := durableWithData(t, clk, 0, 30, false)
	replaceLog(t, a, b)
	seg := onlyFile(t, filepath.Join(a, logDirName, "*.wal"))
	for _, opts := range [][]Option{nil, {WithSalvage()}} {
		_, err := openDurable(t, clk, a, opts...)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), filepath.Base(seg))
		require.Contains(t, err.Error(), "another data directory")
	}
}

// TestForeignSnapshotRefused: a snapshot from another directory beside
// this one's log is refused the same way.
func TestForeignSnapshotRefused(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	a := durableWithData(t, clk, 20, 10, true)
	b := durableWithData(t, clk, 20, 10, true)
	snapA := onlyFile(t, filepath.Join(a, "snapshot-*.ttldb"))
	snapB := onlyFile(t, filepath.Join(b, "snapshot-*.ttldb"))
	require.Equal(t, filepath.Base(snapA), filepath.Base(snapB), "the same history: the same name")
	data, err := os.ReadFile(snapB)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(snapA, data, 0o600))
	_, err = openDurable(t, clk, a)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "another data directory")
}

// TestIdentityKept: a directory keeps its identity across reopens and
// snapshots; a DB opened WithRestore from its Backup gets a new one, so
// that the original's log is refused beside the copy's snapshot.
func TestIdentityKept(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	dir := durableWithData(t, clk, 20, 10, true)
	db := mustOpenDurable(t, clk, dir)
	id := db.persist.id
	require.False(t, id.IsZero())
	require.NoError(t, db.Snapshot(context.Background()))
	var backup bytes.Buffer
	require.NoError(t, db.Backup(context.Background(), &backup))
	require.NoError(t, db.Close())
	db = mustOpenDurable(t, clk, dir)
	require.Equal(t, id, db.persist.id, "reopened after a snapshot")
	require.NoError(t, db.Close())

	copyDir := filepath.Join(t.TempDir(), "copy")
	restored := mustOpenDurable(t, clk, copyDir, WithRestore(bytes.NewReader(backup.Bytes())))
	require.NotEqual(t, id, restored.persist.id, "a restored DB has an identity of its own")
	require.False(t, restored.persist.id.IsZero())
	require.Equal(t, 30, docCount(t, restored))
	require.NoError(t, restored.Close())
	replaceLog(t, copyDir, dir)
	_, err := openDurable(t, clk, copyDir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "another data directory")
}
