package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// openDurable opens a DB on dir with a fake clock, monitor disabled.
func openDurable(t testing.TB, clk *ttltest.Clock, dir string, opts ...Option) (*DB, error) {
	t.Helper()
	// No retention: these tests look at the log a snapshot leaves for
	// recovery (retention's own tests set it).
	opts = append([]Option{WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}), WithDir(dir), WithLogRetention(LogRetention{Disabled: true})}, opts...)
	return Open(opts...)
}

func mustOpenDurable(t testing.TB, clk *ttltest.Clock, dir string, opts ...Option) *DB {
	t.Helper()
	db, err := openDurable(t, clk, dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() }) // idempotent: tests close it too
	return db
}

// flushLog hands the log what the DB appended, as the sink's writer does
// within its delay (which a fake clock never lets pass).
func flushLog(t testing.TB, db *DB) {
	t.Helper()
	require.NoError(t, db.persist.sink.flush(db.persist.sink.pendingSeq.Load()))
}

// requireSameVersions requires the ordinary collections of two DBs to hold
// the same record versions in natural order.
func requireSameVersions(t testing.TB, want, got *DB) {
	t.Helper()
	for _, ws := range want.snapshotCollections() {
		if ws.ts != nil {
			continue
		}
		gs, _ := got.state(ws.name, false)
		require.NotNil(t, gs, "collection %q", ws.name)
		require.Equal(t, recordVersions(ws), recordVersions(gs), "collection %q record versions", ws.name)
	}
	require.Equal(t, want.writes.Load(), got.writes.Load(), "the next record version")
}

// TestDurableReopen writes the random op history into a data directory
// under each sync policy, with snapshots taken along the way, closes it
// and opens it again: the reopened DB equals the closed one (collections,
// options, indexes, documents byte for byte, buckets, record versions),
// its indexes equal a rebuild, and its next op follows the last one.
func TestDurableReopen(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncAlways, SyncEverySecond, SyncNever} {
		for _, snaps := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("%v/snapshots=%d", pol, snaps), func(t *testing.T) {
				dir := t.TempDir()
				clk := ttltest.NewClock(opEpoch)
				db := mustOpenDurable(t, clk, dir, WithSync(pol))
				sink := &recordingSink{}
				db.ops.attach(sink)
				h := &history{t: t, rng: rand.New(rand.NewPCG(testutil.Seed(t), 0xd1)), db: db, clk: clk}
				h.setup()
				for i := range snaps + 1 {
					h.steps(300)
					if i < snaps {
						require.NoError(t, db.Snapshot(context.Background()))
					}
				}
				requireIndexesRebuilt(t, db)
				vers := allVersions(db)
				specs := allIndexSpecs(t, db)
				last := db.ops.lastSeq()
				require.NoError(t, db.Close())
				require.NoError(t, db.Close(), "Close is idempotent")

				// The reference: the ops the DB committed, applied by Apply to
				// an empty DB.
				want := replay(t, sink.take())
				got := mustOpenDurable(t, clk, dir, WithSync(pol))
				defer got.Close()
				requireSameState(t, want, got)
				// And the closed DB's own indexes (their multikey flags
				// above all), not only the replayed ops'.
				require.Equal(t, specs, allIndexSpecs(t, got))
				requireVersions(t, vers, allVersions(got))
				requireIndexesRebuilt(t, got)
				rec := got.Recovery()
				require.Equal(t, last, rec.LastSeq)
				require.Equal(t, last, got.ops.lastSeq())
				require.Zero(t, rec.TruncatedBytes)
				if snaps > 0 {
					require.NotEmpty(t, rec.Snapshot)
					require.Positive(t, rec.SnapshotSeq)
				}
				// It goes on: a write gets the next sequence number.
				_, err := got.Collection("plain").InsertOne(context.Background(), Document{"after": true})
				require.NoError(t, err)
				require.Greater(t, got.ops.lastSeq(), last)
			})
		}
	}
}

// requireVersions requires the record versions of a reloaded DB (got) to
// be those of the one closed (want), and its version counter to be at
// least every version it holds (it may be above the closed DB's: replayed
// time-series ops give buckets new versions).
func requireVersions(t testing.TB, want, got map[string][]uint64) {
	t.Helper()
	wc, gc := want[""][0], got[""][0]
	delete(want, "")
	delete(got, "")
	require.Equal(t, want, got, "record versions")
	_ = wc
	for _, vs := range got {
		for _, v := range vs {
			require.LessOrEqual(t, v, gc)
		}
	}
}

// allIndexSpecs lists the index specifications of every collection.
func allIndexSpecs(t testing.TB, db *DB) map[string][]IndexSpec {
	t.Helper()
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	out := map[string][]IndexSpec{}
	for _, name := range names {
		specs, err := db.Collection(name).Indexes(context.Background())
		require.NoError(t, err)
		out[name] = specs
	}
	return out
}

// allVersions lists the record versions of every ordinary collection, and
// the DB's last one.
func allVersions(db *DB) map[string][]uint64 {
	out := map[string][]uint64{"": {db.writes.Load()}}
	for _, s := range db.snapshotCollections() {
		if s.ts == nil {
			out[s.name] = recordVersions(s)
		}
	}
	return out
}

func TestDurableSecondOpenLocked(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir)
	_, err := openDurable(t, clk, dir)
	require.ErrorIs(t, err, ErrLocked)
	require.Contains(t, err.Error(), dir)
	require.NoError(t, db.Close())
	db2 := mustOpenDurable(t, clk, dir)
	require.NoError(t, db2.Close())
}

// TestDurableFileModes: the directory is 0700, every file in it 0600.
func TestDurableFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir)
	_, err := db.Collection("s").InsertOne(context.Background(), Document{"token": "secret"})
	require.NoError(t, err)
	require.NoError(t, db.Snapshot(context.Background()))
	require.NoError(t, db.Close())
	var files int
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		if d.IsDir() {
			require.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), p)
		} else {
			files++
			require.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), p)
		}
		return nil
	}))
	require.GreaterOrEqual(t, files, 3, "LOCK, a snapshot, a log segment")
}

func TestDurableOptionsNeedDir(t *testing.T) {
	for _, o := range []Option{WithSync(SyncAlways), WithAutoSnapshot(AutoSnapshot{LogRatio: 2})} {
		_, err := Open(o)
		require.ErrorIs(t, err, ErrInvalidOptions)
	}
	_, err := Open(WithDir(""))
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = Open(WithDir(t.TempDir()), WithSync(9))
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = Open(WithDir(t.TempDir()), WithAutoSnapshot(AutoSnapshot{LogRatio: -1}))
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = Open(WithRestore(nil))
	require.ErrorIs(t, err, ErrInvalidOptions)
	db, err := Open()
	require.NoError(t, err)
	defer db.Close()
	require.ErrorIs(t, db.Snapshot(context.Background()), ErrInvalidOptions, "Snapshot without a directory")
}

// TestBackupRestores: a backup of a DB with writers opens as the same DB,
// in memory and into an empty directory (which then holds it).
func TestBackupRestores(t *testing.T) {
	db, clk, _ := openRecorded(t)
	h := &history{t: t, rng: rand.New(rand.NewPCG(testutil.Seed(t), 0xb0)), db: db, clk: clk}
	h.setup()
	h.steps(400)
	var buf bytes.Buffer
	require.NoError(t, db.Backup(context.Background(), &buf))

	mem, err := Open(WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}), WithRestore(bytes.NewReader(buf.Bytes())))
	require.NoError(t, err)
	defer mem.Close()
	requireSameState(t, db, mem)
	requireSameVersions(t, db, mem)
	require.Equal(t, db.ops.lastSeq(), mem.Recovery().LastSeq)

	dir := t.TempDir()
	disk := mustOpenDurable(t, clk, dir, WithRestore(bytes.NewReader(buf.Bytes())))
	requireSameState(t, db, disk)
	require.NoError(t, disk.Close())
	_, err = openDurable(t, clk, dir, WithRestore(bytes.NewReader(buf.Bytes())))
	require.ErrorIs(t, err, ErrInvalidOptions, "restore into a directory that holds a DB")
	again := mustOpenDurable(t, clk, dir)
	defer again.Close()
	requireSameState(t, db, again)
	requireSameVersions(t, db, again)
}

// TestSnapshotDropsLog: after a snapshot the log before it is gone (only
// an empty segment is left), and one snapshot file remains.
func TestSnapshotDropsLog(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir, withLogSegmentSize(4096))
	c := db.Collection("c")
	for i := range 2000 {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("x", 50)})
		require.NoError(t, err)
	}
	flushLog(t, db)
	before := logSize(t, dir)
	require.Greater(t, before, int64(2000*50))
	require.NoError(t, db.Snapshot(context.Background()))
	after := logSize(t, dir)
	require.Less(t, after, int64(200), "the log holds only empty segment headers")
	require.NoError(t, db.Snapshot(context.Background()))
	snaps := 0
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, n := range names {
		if _, ok := parseSnapshotName(n.Name()); ok {
			snaps++
		}
	}
	require.Equal(t, 1, snaps)
	require.NoError(t, db.Close())
	db = mustOpenDurable(t, clk, dir)
	defer db.Close()
	n, err := db.Collection("c").CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, 2000, n)
	require.Zero(t, db.Recovery().LogOps)
}

func logSize(t testing.TB, dir string) int64 {
	var n int64
	entries, err := os.ReadDir(filepath.Join(dir, logDirName))
	require.NoError(t, err)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		n += info.Size()
	}
	return n
}

// TestAutoSnapshot: once the log passes MinLogBytes and LogRatio times the
// last snapshot, the DB snapshots itself and drops the log.
func TestAutoSnapshot(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir, WithAutoSnapshot(AutoSnapshot{MinLogBytes: 64 << 10, LogRatio: 1}), withLogSegmentSize(8<<10))
	defer db.Close()
	c := db.Collection("c")
	for i := 0; ; i++ {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("y", 100)})
		require.NoError(t, err)
		if i > 400 && db.persist.snapshotBytes() > 0 {
			break
		}
		require.Less(t, i, 100000, "no automatic snapshot was taken")
		if i%100 == 0 {
			time.Sleep(time.Millisecond) // let the snapshotter run on a busy machine
		}
	}
	// The snapshot covers at least 64 KiB of log; the log after it is short.
	db.persist.snapMu.Lock() // the snapshot under way, if any, has ended
	//lint:ignore SA2001 waiting for the snapshot is the point
	db.persist.snapMu.Unlock()
	require.Less(t, logSize(t, dir), int64(64<<10)+db.persist.snapshotBytes())
}

// TestTornTailTruncated: a log whose last record was cut short by a crash
// opens, without the torn write, and says what it cut (Recovery and a
// warning in the log).
func TestTornTailTruncated(t *testing.T) {
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(SyncAlways))
	c := db.Collection("c")
	for i := range 10 {
		_, err := c.InsertOne(context.Background(), Document{"_id": i})
		require.NoError(t, err)
	}
	// The next write reaches the disk only in part: its record is torn.
	m.Inject(vfs.Fault{Op: vfs.FaultWrite, After: 7, Once: true, Match: func(n string) bool { return strings.Contains(n, "log/") }})
	_, err := c.InsertOne(context.Background(), Document{"_id": 10, "pad": strings.Repeat("z", 200)})
	require.ErrorIs(t, err, ErrLogFailed)
	m.ClearFaults()
	// Synced: the torn bytes are on the disk, as after a crash mid-append.
	syncLogFiles(t, m, "d/log")
	m.PowerCut()
	_ = db.Close() // its files died with the power

	var logged bytes.Buffer
	db2, err := Open(WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}), WithDir("d"), withFS(m),
		WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	require.NoError(t, err)
	defer db2.Close()
	rec := db2.Recovery()
	require.Positive(t, rec.TruncatedBytes)
	require.NotEmpty(t, rec.Truncations)
	require.Contains(t, logged.String(), "level=WARN")
	require.Contains(t, logged.String(), "truncated")
	n, err := db2.Collection("c").CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, 10, n, "the torn write is not half-applied")
	_, err = db2.Collection("c").InsertOne(context.Background(), Document{"_id": 10})
	require.NoError(t, err)
}

// syncLogFiles fsyncs every file of a FaultFS directory.
func syncLogFiles(t testing.TB, m *vfs.FaultFS, dir string) {
	names, err := m.ReadDir(dir)
	require.NoError(t, err)
	for _, n := range names {
		f, err := m.OpenFile(dir+"/"+n, os.O_RDWR, 0)
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	require.NoError(t, m.SyncDir(dir))
}

// TestFailedFsyncStopsWrites: once an fsync of the log fails, the write
// that needed it fails with ErrLogFailed (and the cause), every later write
// too, reads go on, and a reopened DB holds what was synced.
func TestFailedFsyncStopsWrites(t *testing.T) {
	for _, op := range []vfs.FaultOp{vfs.FaultSync, vfs.FaultWrite} {
		t.Run(fmt.Sprint(op), func(t *testing.T) {
			m := vfs.NewFaultFS()
			clk := ttltest.NewClock(opEpoch)
			db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(SyncAlways))
			c := db.Collection("c")
			_, err := c.InsertOne(context.Background(), Document{"_id": 1})
			require.NoError(t, err)
			m.Inject(vfs.Fault{Op: op, Match: func(n string) bool { return strings.Contains(n, "log/") }})
			_, err = c.InsertOne(context.Background(), Document{"_id": 2})
			require.ErrorIs(t, err, ErrLogFailed)
			require.ErrorIs(t, err, syscall.EIO)
			for _, w := range []func() error{
				func() error { _, err := c.InsertOne(context.Background(), Document{"_id": 3}); return err },
				func() error {
					_, err := c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$set": Document{"x": 1}})
					return err
				},
				func() error { _, err := c.DeleteOne(context.Background(), Document{"_id": 1}); return err },
				func() error {
					_, err := db.CreateCollection(context.Background(), "new", CollectionOptions{})
					return err
				},
				func() error { return db.DropCollection(context.Background(), "c") },
				func() error {
					_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("x")}})
					return err
				},
				func() error { _, err := db.RunTTLPass(context.Background()); return err },
			} {
				require.ErrorIs(t, w(), ErrLogFailed)
			}
			n, err := c.CountDocuments(context.Background(), nil)
			require.NoError(t, err)
			require.EqualValues(t, 2, n, "reads go on (the failed write is in memory)")
			require.Error(t, db.Close())

			m.ClearFaults()
			m.PowerCut()
			db2 := mustOpenDurable(t, clk, "d", withFS(m))
			defer db2.Close()
			ids := findIDs(t, db2.Collection("c"), nil)
			require.Equal(t, []any{1}, ids, "what was synced, and nothing else")
		})
	}
}

// TestFullDisk: a write that does not fit on the disk fails with
// ErrLogFailed wrapping ENOSPC; a snapshot that does not fit fails and
// leaves the previous snapshot and the log as they were.
func TestFullDisk(t *testing.T) {
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(SyncAlways))
	c := db.Collection("c")
	for i := range 100 {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("p", 100)})
		require.NoError(t, err)
	}
	require.NoError(t, db.Snapshot(context.Background()))
	for i := 100; i < 200; i++ {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("p", 100)})
		require.NoError(t, err)
	}
	used := m.Stats().BytesWritten
	_ = used
	m.SetDiskSize(diskUsed(t, m, "d") + 4000) // room for the log, not for a snapshot
	err := db.Snapshot(context.Background())
	require.Error(t, err)
	require.ErrorIs(t, err, vfs.ErrNoSpace)
	names, err := m.ReadDir("d")
	require.NoError(t, err)
	for _, n := range names {
		require.False(t, strings.HasSuffix(n, ".tmp"), "the failed snapshot's file is removed")
	}
	var werr error
	for i := 200; werr == nil; i++ {
		_, werr = c.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("p", 100)})
		require.Less(t, i, 1000)
	}
	require.ErrorIs(t, werr, ErrLogFailed)
	require.ErrorIs(t, werr, vfs.ErrNoSpace)
	_ = db.Close()

	m.ClearFaults()
	m.PowerCut()
	db2 := mustOpenDurable(t, clk, "d", withFS(m))
	defer db2.Close()
	n, err := db2.Collection("c").CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	t.Logf("%+v", db2.Recovery())
	require.GreaterOrEqual(t, n, int64(200), "every acknowledged write")
}

// diskUsed sums the sizes of the files under dir.
func diskUsed(t testing.TB, m *vfs.FaultFS, dir string) int64 {
	var n int64
	names, err := m.ReadDir(dir)
	require.NoError(t, err)
	for _, name := range names {
		p := dir + "/" + name
		f, err := m.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			n += diskUsed(t, m, p) // a directory
			continue
		}
		size, err := f.Size()
		f.Close()
		if err != nil || errors.Is(err, fs.ErrInvalid) {
			n += diskUsed(t, m, p)
			continue
		}
		n += size
	}
	return n
}

// TestDurabilityMetrics: Metrics reports the log's and the snapshots'
// figures, counted from Open, and DocumentBytes the documents' encodings.
func TestDurabilityMetrics(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	c := db.Collection("c")
	var encBytes int64
	for i := range 10 {
		doc := Document{"_id": i, "s": strings.Repeat("s", i)}
		_, err := c.InsertOne(context.Background(), doc)
		require.NoError(t, err)
		enc, err := codec.Encode(doc, nil)
		require.NoError(t, err)
		encBytes += int64(len(enc))
	}
	m := db.Metrics()
	require.Equal(t, encBytes, m.DocumentBytes["c"])
	d := m.Durability
	require.EqualValues(t, 10, d.LogRecords, "SyncAlways, one writer: a record per write")
	require.GreaterOrEqual(t, d.LogSyncs, int64(10))
	require.Positive(t, d.LogBytes)
	require.Equal(t, logSize(t, dir), d.LogSize)
	require.Zero(t, d.Snapshots)
	require.NoError(t, db.Snapshot(context.Background()))
	d = db.Metrics().Durability
	require.EqualValues(t, 1, d.Snapshots)
	info, err := os.Stat(filepath.Join(dir, snapshotName(db.ops.lastSeq())))
	require.NoError(t, err)
	require.Equal(t, info.Size(), d.SnapshotBytes)
	require.NoError(t, db.Close())

	db = mustOpenDurable(t, clk, dir)
	defer db.Close()
	d = db.Metrics().Durability
	require.Zero(t, d.LogRecords, "counters restart from zero")
	require.Zero(t, d.Snapshots)
	require.Equal(t, info.Size(), d.SnapshotBytes, "a gauge: the snapshot loaded")
	mem, err := Open()
	require.NoError(t, err)
	defer mem.Close()
	require.Zero(t, mem.Metrics().Durability)
}

// TestCloseWhileWriting: writers that race with Close either get an error
// or find their write in the directory after it is reopened: Close never
// drops a write it let acknowledge.
func TestCloseWhileWriting(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncEverySecond, SyncAlways} {
		t.Run(pol.String(), func(t *testing.T) {
			dir := t.TempDir()
			clk := ttltest.NewClock(opEpoch)
			db := mustOpenDurable(t, clk, dir, WithSync(pol))
			c := db.Collection("c")
			var mu sync.Mutex
			var acked []int
			var wg sync.WaitGroup
			var started sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				started.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						if i == 10 {
							started.Done()
						}
						id := w*1_000_000 + i
						if _, err := c.InsertOne(context.Background(), Document{"_id": id}); err != nil {
							if i < 10 {
								started.Done()
							}
							return
						}
						mu.Lock()
						acked = append(acked, id)
						mu.Unlock()
					}
				}()
			}
			started.Wait()
			require.NoError(t, db.Close())
			wg.Wait()
			db = mustOpenDurable(t, clk, dir)
			defer db.Close()
			got := map[any]bool{}
			for _, id := range findIDs(t, db.Collection("c"), nil) {
				got[id] = true
			}
			for _, id := range acked {
				require.True(t, got[id], "acknowledged write %d missing", id)
			}
			t.Logf("%d acknowledged, %d stored", len(acked), len(got))
		})
	}
}
