package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	snapfile "github.com/ttldb/ttldb/internal/snapshot"
	"github.com/ttldb/ttldb/ttltest"
)

// durableWithData writes n documents into a new directory, then (with
// snapshot) a snapshot, then m more documents into the log, and closes
// the DB. It returns the directory.
func durableWithData(t testing.TB, clk *ttltest.Clock, n, m int, snapshot bool) string {
	t.Helper()
	dir := t.TempDir()
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	c := db.Collection("c")
	for i := range n {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("p", 64)})
		require.NoError(t, err)
	}
	if snapshot {
		require.NoError(t, db.Snapshot(context.Background()))
	}
	for i := n; i < n+m; i++ {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("p", 64)})
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	return dir
}

// onlyFile returns the one file of dir whose name matches pattern.
func onlyFile(t testing.TB, pattern string) string {
	t.Helper()
	names, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.Len(t, names, 1, pattern)
	return names[0]
}

// flipByte changes the byte at off (from the end when negative) of file.
func flipByte(t testing.TB, file string, off int64) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0x55
	require.NoError(t, os.WriteFile(file, b, 0o600))
}

func docCount(t testing.TB, db *DB) int {
	t.Helper()
	n, err := db.Collection("c").CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	return int(n)
}

// TestCorruptSnapshot: a snapshot that fails a checksum is a clear error
// naming the file and the way out, and nothing is loaded; WithSalvage
// loads what passes its checksums and says what it skipped.
func TestCorruptSnapshot(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	dir := durableWithData(t, clk, 8000, 10, true)
	snap := onlyFile(t, filepath.Join(dir, "snapshot-*.ttldb"))
	info, err := os.Stat(snap)
	require.NoError(t, err)
	flipByte(t, snap, info.Size()/2)

	_, err = openDurable(t, clk, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), filepath.Base(snap))
	require.Contains(t, err.Error(), "WithSalvage")

	db := mustOpenDurable(t, clk, dir, WithSalvage())
	defer db.Close()
	rec := db.Recovery()
	require.Equal(t, 1, rec.SalvagedBlocks)
	require.Positive(t, rec.SalvagedBytes)
	n := docCount(t, db)
	require.Less(t, n, 8010)
	require.Greater(t, n, 4000, "the other blocks and the log are loaded")
	requireIndexesRebuilt(t, db)
	_, err = db.Collection("c").InsertOne(context.Background(), Document{"after": true})
	require.NoError(t, err, "the salvaged DB works")
}

// TestCorruptLogBeforeTail: a damaged record followed by good ones is not
// a torn tail: Open fails with ErrCorrupt naming the segment; WithSalvage
// keeps the records before the damage.
func TestCorruptLogBeforeTail(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	dir := durableWithData(t, clk, 0, 200, false)
	seg := onlyFile(t, filepath.Join(dir, logDirName, "*.wal"))
	info, err := os.Stat(seg)
	require.NoError(t, err)
	flipByte(t, seg, info.Size()/2)

	_, err = openDurable(t, clk, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), filepath.Base(seg))
	require.Contains(t, err.Error(), "WithSalvage")

	db := mustOpenDurable(t, clk, dir, WithSalvage())
	defer db.Close()
	require.Positive(t, db.Recovery().SalvagedLogBytes)
	n := docCount(t, db)
	require.Greater(t, n, 50)
	require.Less(t, n, 200)
	ids := findIDs(t, db.Collection("c"), nil)
	for i, id := range ids {
		require.Equal(t, i, id, "a prefix of the writes")
	}
}

// TestFormatVersions: a snapshot or a log segment of another format
// version, intact (its checksums hold), is refused with ErrFormatVersion
// naming both versions, WithSalvage too.
func TestFormatVersions(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	for _, file := range []string{"snapshot", "log"} {
		t.Run(file, func(t *testing.T) {
			dir := durableWithData(t, clk, 10, 10, true)
			newer, supported := "version 3", "versions 1 to 2" // the log's segments
			if file == "snapshot" {
				setSnapshotVersion(t, onlyFile(t, filepath.Join(dir, "snapshot-*.ttldb")), snapfile.Version+1)
				newer, supported = fmt.Sprintf("version %d", snapfile.Version+1), fmt.Sprintf("versions 1 to %d", snapfile.Version)
			} else {
				setSegmentVersion(t, onlyFile(t, filepath.Join(dir, logDirName, "*.wal")), 3)
			}
			for _, opts := range [][]Option{nil, {WithSalvage()}} {
				_, err := openDurable(t, clk, dir, opts...)
				require.ErrorIs(t, err, ErrFormatVersion)
				require.NotErrorIs(t, err, ErrCorrupt)
				require.Contains(t, err.Error(), newer)
				require.Contains(t, err.Error(), supported)
			}
		})
	}
}

// setSegmentVersion writes version v into a log segment's header, with
// the header's checksum made to match: a segment another version wrote.
func setSegmentVersion(t testing.TB, path string, v uint32) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	binary.LittleEndian.PutUint32(b[8:], v)
	binary.LittleEndian.PutUint32(b[20:], crc32.Checksum(b[:20], crc32.MakeTable(crc32.Castagnoli)))
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

// setSnapshotVersion writes version v into a snapshot's file header, with
// the trailer's file checksum made to match: a file another version
// wrote.
func setSnapshotVersion(t testing.TB, path string, v uint32) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	binary.LittleEndian.PutUint32(b[8:], v)
	tab := crc32.MakeTable(crc32.Castagnoli)
	for at := len(b) - 9; at >= 12; at-- { // the trailer block: kind 255, length, payload, CRC
		n := int(binary.LittleEndian.Uint32(b[at+1:]))
		if b[at] != 255 || at+5+n+4 != len(b) {
			continue
		}
		end := len(b) - 4
		binary.LittleEndian.PutUint32(b[end-4:], crc32.Checksum(b[:at], tab)) // fileCRC ends the payload
		binary.LittleEndian.PutUint32(b[end:], crc32.Checksum(b[at:end], tab))
		require.NoError(t, os.WriteFile(path, b, 0o600))
		return
	}
	t.Fatal("no trailer block")
}

// TestVersionFieldDamage: a flipped byte in the version field of a log
// segment (its header checksum then fails) or of a snapshot (its file
// checksum then fails) is damage, ErrCorrupt, not another version;
// WithSalvage reads the file as the version its checksums say and loses
// nothing.
func TestVersionFieldDamage(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	for _, file := range []string{"snapshot", "log"} {
		for at := int64(8); at < 12; at++ {
			t.Run(fmt.Sprintf("%s/byte %d", file, at), func(t *testing.T) {
				dir := durableWithData(t, clk, 10, 10, true)
				var path string
				if file == "snapshot" {
					path = onlyFile(t, filepath.Join(dir, "snapshot-*.ttldb"))
				} else {
					path = onlyFile(t, filepath.Join(dir, logDirName, "*.wal"))
				}
				flipByte(t, path, at)
				_, err := openDurable(t, clk, dir)
				require.ErrorIs(t, err, ErrCorrupt)
				require.NotErrorIs(t, err, ErrFormatVersion)
				require.Contains(t, err.Error(), filepath.Base(path))

				db := mustOpenDurable(t, clk, dir, WithSalvage())
				require.Equal(t, 20, docCount(t, db), "salvage loses nothing")
				require.Empty(t, db.Recovery().Orphaned)
				requireIndexesRebuilt(t, db)
				require.NoError(t, db.Close())
				if file == "log" {
					// Salvage rewrote the segment's header.
					db = mustOpenDurable(t, clk, dir)
					require.Equal(t, 20, docCount(t, db), "the salvaged directory opens")
					require.NoError(t, db.Close())
				}
			})
		}
	}
}
