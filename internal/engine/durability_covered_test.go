package engine

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// coveredLog writes a directory whose log segment starts with records
// the snapshot holds, then more records: the state a snapshot leaves when
// the log could not start its next segment (or a crash before the log
// was cut). It returns the directory's image, the segment's name in it,
// the stretch of the segment the covered records take and the ids
// written.
func coveredLog(t testing.TB, clk *ttltest.Clock) (img dirImage, seg string, from, to int64, ids []any) {
	t.Helper()
	m := vfs.NewFaultFS()
	db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(SyncAlways))
	seg = "d/" + logDirName + "/" + onlyFaultFile(t, m, "d/"+logDirName)
	from = int64(len(mustReadFault(t, m, seg)))
	c := db.Collection("c")
	insert := func(i int) {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("p", i%40)})
		require.NoError(t, err)
		ids = append(ids, i)
	}
	for i := range 8 {
		insert(i)
	}
	m.Inject(vfs.Fault{Op: vfs.FaultCreate, Match: func(n string) bool { return strings.Contains(n, logDirName+"/") }})
	require.Error(t, db.Snapshot(context.Background()), "the log keeps its segment")
	m.ClearFaults()
	to = int64(len(mustReadFault(t, m, seg)))
	for i := 8; i < 50; i++ {
		insert(i)
	}
	require.NoError(t, db.Close())
	return imageOf(t, m, "d"), seg, from, to, ids
}

func mustReadFault(t testing.TB, m *vfs.FaultFS, name string) []byte {
	t.Helper()
	b, err := m.ReadFile(name)
	require.NoError(t, err)
	return b
}

func onlyFaultFile(t testing.TB, m *vfs.FaultFS, dir string) string {
	t.Helper()
	names, err := m.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 1)
	return names[0]
}

// dirImage is what a data directory holds: its files' contents by
// slash-separated name (the LOCK file left out).
type dirImage map[string][]byte

// imageOf reads the files of a FaultFS directory and of its
// subdirectories.
func imageOf(t testing.TB, m *vfs.FaultFS, dir string) dirImage {
	t.Helper()
	img := dirImage{}
	var walk func(d string)
	walk = func(d string) {
		names, err := m.ReadDir(d)
		require.NoError(t, err)
		for _, n := range names {
			if n == lockName {
				continue
			}
			b, err := m.ReadFile(d + "/" + n)
			if errors.Is(err, syscall.EISDIR) {
				walk(d + "/" + n)
				continue
			}
			require.NoError(t, err)
			img[d+"/"+n] = b
		}
	}
	walk(dir)
	return img
}

// fs lays the image out, durable, in a new FaultFS.
func (img dirImage) fs(t testing.TB) *vfs.FaultFS {
	t.Helper()
	m := vfs.NewFaultFS()
	for name, b := range img {
		require.NoError(t, m.WriteFile(name, b))
	}
	return m
}

// with returns a copy of the image with file name's byte at off flipped.
func (img dirImage) flipped(name string, off int64) dirImage {
	out := maps.Clone(img)
	b := slices.Clone(img[name])
	b[off] ^= 0x55
	out[name] = b
	return out
}

func newestSegment(t testing.TB, dir string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, logDirName, "*.wal"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	slices.Sort(segs)
	return segs[len(segs)-1]
}

func fileSizeOf(t testing.TB, name string) int64 {
	t.Helper()
	fi, err := os.Stat(name)
	require.NoError(t, err)
	return fi.Size()
}

// TestCoveredLogDamage: damage in a log record whose every op the
// snapshot holds (the snapshot loaded whole) is passed over and reported:
// a plain Open loads every acknowledged write, WithSalvage too and cuts
// nothing, for a flip of any byte of those records.
func TestCoveredLogDamage(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	img, seg, from, to, ids := coveredLog(t, clk)
	require.Greater(t, to, from)
	for off := from; off < to; off++ {
		for _, salvage := range []bool{false, true} {
			opts := []Option{withFS(img.flipped(seg, off).fs(t))}
			if salvage {
				opts = append(opts, WithSalvage())
			}
			db, err := openDurable(t, clk, "d", opts...)
			require.NoError(t, err, "flip at %d of %s (salvage %v)", off, seg, salvage)
			rec := db.Recovery()
			require.Equal(t, ids, findIDs(t, db.Collection("c"), nil), "flip at %d (salvage %v): every write", off, salvage)
			require.Positive(t, rec.SkippedLogBytes, "flip at %d: reported", off)
			require.NotEmpty(t, rec.Skips)
			require.Zero(t, rec.SalvagedLogBytes, "flip at %d: nothing cut", off)
			require.Zero(t, rec.TruncatedBytes, "flip at %d: nothing cut", off)
			require.NoError(t, db.Close())
		}
	}
}

// TestCoveredDamageThenRealDamage: under WithSalvage, a log with damage in
// a covered record and later damage in a record the snapshot does not
// hold is cut at the later damage only: the intact records between them
// are kept.
func TestCoveredDamageThenRealDamage(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	img, seg, from, to, ids := coveredLog(t, clk)
	size := int64(len(img[seg]))
	img = img.flipped(seg, from+20).flipped(seg, size-size/5) // the second among the last records, valid ones after it

	_, err := openDurable(t, clk, "d", withFS(img.fs(t)))
	require.ErrorIs(t, err, ErrCorrupt)

	db := mustOpenDurable(t, clk, "d", withFS(img.fs(t)), WithSalvage())
	rec := db.Recovery()
	require.Positive(t, rec.SkippedLogBytes)
	require.Positive(t, rec.SalvagedLogBytes)
	got := findIDs(t, db.Collection("c"), nil)
	require.Equal(t, ids[:len(got)], got, "a prefix of the writes")
	require.Greater(t, int64(len(got)), 8+(size-size/5-to)/120, "the records between the two damages are kept")
	require.Less(t, len(got), len(ids))
	require.NoError(t, db.Close())
}
