package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/internal/wal"
	"github.com/ttldb/ttldb/ttltest"
)

// The log's replay runs on two goroutines (restore.go, "Pipelined
// replay"). These tests hold it to what a replay applying each op in turn
// on one goroutine gives, and to the errors that replay reported.

// directLoad applies ops to a new in-memory DB one at a time on this
// goroutine (the loader without its inserter), as Open replayed the log
// before the pipeline.
func directLoad(t testing.TB, clk *ttltest.Clock, ops []Op) *DB {
	t.Helper()
	db, err := Open(WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	l := newLoader(db)
	for _, op := range ops {
		b, err := op.MarshalBinary()
		require.NoError(t, err)
		var bin Op
		require.NoError(t, bin.UnmarshalBinary(b)) // as the log gives it
		require.NoError(t, l.apply(bin))
		require.Nil(t, l.ins)
	}
	require.NoError(t, l.finishLoad())
	return db
}

// TestReplayPipelineMatchesDirectLoad: a log of bulk writes that fill many
// batches, interleaved across collections, with index creations, drops and
// collMods between them (each makes the reader wait for the inserter), a
// time-series collection and the random history, reopened: the DB equals
// the one closed and the one the same ops give applied one at a time —
// documents byte for byte in natural order, record versions, index
// entries, TTL trees and their backlog counts.
func TestReplayPipelineMatchesDirectLoad(t *testing.T) {
	ctx := context.Background()
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0x91be))
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir, WithSync(SyncNever), WithAutoSnapshot(AutoSnapshot{Disabled: true}))
	sink := &recordingSink{}
	db.ops.attach(sink)

	a, b := db.Collection("bulkA"), db.Collection("bulkB")
	_, err := a.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	doc := func(id int) Document {
		d := Document{"_id": id, "n": rng.IntN(50), "at": opEpoch.Add(time.Duration(rng.IntN(7200)) * time.Second)}
		if rng.IntN(4) == 0 {
			d["at"] = []any{opEpoch.Add(time.Duration(rng.IntN(600)) * time.Second), opEpoch.Add(time.Hour)}
		}
		if rng.IntN(5) == 0 {
			d["tags"] = []any{"t1", fmt.Sprint("t", rng.IntN(9))}
		}
		return d
	}
	many := func(c *Collection, from, n int) {
		docs := make([]Document, n)
		for i := range docs {
			docs[i] = doc(from + i)
		}
		_, err := c.InsertMany(context.Background(), docs)
		require.NoError(t, err)
	}
	many(a, 0, 2500) // three batches in one op
	for i := range 1500 {
		// One op per document, alternating collections: a batch per run.
		c := a
		if i%3 == 0 {
			c = b
		}
		_, err := c.InsertOne(context.Background(), doc(10_000+i))
		require.NoError(t, err)
	}
	_, err = b.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("tags"), Asc("n")}})
	require.NoError(t, err)
	_, err = b.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	many(b, 20_000, 1200)
	_, err = a.UpdateMany(ctx, Document{"n": Document{"$lt": 20}}, Document{"$set": Document{"at": opEpoch.Add(3 * time.Hour)}, "$inc": Document{"n": 100}})
	require.NoError(t, err)
	_, err = a.DeleteMany(ctx, Document{"n": Document{"$gte": 40, "$lt": 100}})
	require.NoError(t, err)
	many(a, 0, 0)
	_, err = a.InsertMany(context.Background(), []Document{{"_id": 5, "n": 1}}) // an _id deleted above, or a duplicate
	if err != nil {
		require.ErrorIs(t, err, ErrDuplicateKey)
	}
	_, err = b.CollMod(context.Background(), CollModIndex{Name: "at_1", ExpireAfterSeconds: Seconds(120)})
	require.NoError(t, err)
	require.NoError(t, b.DropIndex(context.Background(), "tags_1_n_1"))
	many(b, 30_000, 1100)
	clk.Advance(30 * time.Minute)
	_, err = db.RunTTLPass(ctx) // expire ops: deletions in batches
	require.NoError(t, err)
	h := &history{t: t, rng: rng, db: db, clk: clk}
	h.setup()
	h.steps(600)
	many(a, 40_000, 1500)

	requireIndexesRebuilt(t, db)
	vers := allVersions(db)
	require.NoError(t, db.Close())

	ops := sink.take()
	want := directLoad(t, clk, ops)
	got := mustOpenDurable(t, clk, dir, WithSync(SyncNever))
	requireSameState(t, want, got)
	requireSameState(t, replay(t, ops), got)
	requireVersions(t, vers, allVersions(got))
	wv, gv := allVersions(want), allVersions(got)
	delete(wv, "") // the log's records carry the counter; ops alone do not
	delete(gv, "")
	require.Equal(t, wv, gv, "record versions")
	requireIndexesRebuilt(t, got)
	require.Zero(t, got.Recovery().SnapshotDocuments, "all from the log")
	require.Positive(t, got.Recovery().LogOps)
}

// logRecords returns every record of a log directory's segments, in
// order: its segment file and offset (docs/FORMAT.md: a 44-byte header,
// 24 in version 1, then records of a 20-byte header and a payload whose
// length the header's first 4 bytes give; a seal, seq 0, is not a
// record).
func logRecords(t testing.TB, dir string) (files []string, offs []int64) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, logDirName, "*.wal"))
	require.NoError(t, err)
	slices.Sort(segs)
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		require.NoError(t, err)
		off := 44
		if binary.LittleEndian.Uint32(b[8:]) == 1 {
			off = 24
		}
		for off < len(b) {
			if binary.LittleEndian.Uint64(b[off+4:]) != 0 {
				files, offs = append(files, seg), append(offs, int64(off))
			}
			off += 20 + int(binary.LittleEndian.Uint32(b[off:]))
		}
	}
	return files, offs
}

// TestReplayPipelineStopsAtFirstCorruptRecord: a damaged record in the
// middle of a log of single-document records (in a segment before the
// last, which Replay checks, not the log's Open), with batches of earlier
// documents on their way to the inserter when the reader meets it, fails
// Open with ErrCorrupt naming the segment and the record's offset; with
// WithSalvage exactly the documents before it are loaded, and their
// indexes equal a rebuild.
func TestReplayPipelineStopsAtFirstCorruptRecord(t *testing.T) {
	ctx := context.Background()
	clk := ttltest.NewClock(opEpoch)
	const n = 3000
	dir := t.TempDir()
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways), withLogSegmentSize(16<<10))
	c := db.Collection("c")
	_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	for i := range n {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "at": opEpoch.Add(time.Duration(i%97) * time.Minute)})
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	files, offs := logRecords(t, dir)
	require.Equal(t, n+2, len(offs), "the collection's and the index's records, then one per document")
	const bad = 2102 // document 2100: two full batches before it
	require.NotEqual(t, files[bad], files[len(files)-1], "a segment before the last")
	flipByte(t, files[bad], offs[bad]+20+3)

	_, err = openDurable(t, clk, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), fmt.Sprintf("log segment %s at offset %d: payload checksum mismatch", filepath.Base(files[bad]), offs[bad]))

	db = mustOpenDurable(t, clk, dir, WithSalvage())
	defer db.Close()
	require.Equal(t, bad-2, docCount(t, db), "the documents before the damaged record, no more")
	ids := findIDs(t, db.Collection("c"), nil)
	for i, id := range ids {
		require.Equal(t, i, id)
	}
	requireIndexesRebuilt(t, db)
}

// TestReplayPipelineReportsFirstError: an op whose document no index can
// hold (parallel arrays under a compound index: only a damaged or forged
// log has one, its checksum intact) followed by a damaged record. The
// inserter meets the first while the reader meets the second; Open
// reports the first, as a replay on one goroutine did.
func TestReplayPipelineReportsFirstError(t *testing.T) {
	ctx := context.Background()
	clk := ttltest.NewClock(opEpoch)
	dir := t.TempDir()
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	c := db.Collection("c")
	_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("a"), Asc("b")}})
	require.NoError(t, err)
	docs := make([]Document, 1500)
	for i := range docs {
		docs[i] = Document{"_id": i, "a": i, "b": []any{i, i + 1}}
	}
	_, err = c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	last, ver := db.ops.lastSeq(), db.writes.Load()
	require.NoError(t, db.Close())

	// Appends records as the DB does (a version counter and
	// length-prefixed ops), each in a segment of its own.
	appendOps := func(docs ...Document) {
		log, err := wal.Open(vfs.Default, filepath.Join(dir, logDirName), wal.Options{Sync: wal.SyncAlways, SegmentSize: 1})
		require.NoError(t, err)
		for i, d := range docs {
			enc, err := codec.Encode(d, nil)
			require.NoError(t, err)
			ver++
			seq := last + 1 + uint64(i)
			op := Op{Seq: seq, Kind: OpInsert, Collection: "c", Time: opEpoch, Docs: []RawDocument{enc}, Versions: []uint64{ver}}
			b, err := op.MarshalBinary()
			require.NoError(t, err)
			rec := binary.AppendUvarint(nil, ver)
			rec = binary.LittleEndian.AppendUint32(rec, uint32(len(b)))
			rec = append(rec, b...)
			require.NoError(t, log.Append(seq, rec))
		}
		require.NoError(t, log.Close())
	}
	appendOps(Document{"_id": "parallel", "a": []any{1, 2}, "b": []any{3, 4}},
		Document{"_id": "good", "a": 1}, Document{"_id": "damaged", "a": 2}, Document{"_id": "after", "a": 3})
	files, offs := logRecords(t, dir)
	require.Equal(t, 7, len(files), "three records, then the four appended")
	d := len(files) - 2 // the record of op last+3
	flipByte(t, files[d], offs[d]+20+2)

	_, err = openDurable(t, clk, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), fmt.Sprintf("op %d (kind %d, collection %q)", last+1, OpInsert, "c"))
	require.Contains(t, err.Error(), "parallel arrays")
	require.NotContains(t, err.Error(), "payload checksum mismatch")

	// The damaged record alone is reported as such, and the undamaged
	// log opens.
	for _, f := range files[3:] {
		require.NoError(t, os.Remove(f))
	}
	// The segment now last ends with a seal naming the first removed:
	// Repair cuts it.
	_, err = wal.Repair(vfs.Default, filepath.Join(dir, logDirName))
	require.NoError(t, err)
	appendOps(Document{"_id": "fine", "a": 0}, Document{"_id": "good", "a": 1}, Document{"_id": "damaged", "a": 2}, Document{"_id": "after", "a": 3})
	files, offs = logRecords(t, dir)
	require.Equal(t, 7, len(files))
	orig, err := os.ReadFile(files[d])
	require.NoError(t, err)
	flipByte(t, files[d], offs[d]+20+2)
	_, err = openDurable(t, clk, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), fmt.Sprintf("log segment %s at offset %d: payload checksum mismatch", filepath.Base(files[d]), offs[d]))
	require.NoError(t, os.WriteFile(files[d], orig, 0o600))
	db = mustOpenDurable(t, clk, dir)
	require.Equal(t, 1504, docCount(t, db))
	require.NoError(t, db.Close())
}

// TestReplayAccountsMemory: the documents a replay loads count against the
// memory budget as the ones written did: the accounted bytes after Open
// are those before Close (within 2%), and a DB reopened with a limit below them
// refuses the next insert with ErrMemoryLimit.
func TestReplayAccountsMemory(t *testing.T) {
	for _, snap := range []bool{false, true} {
		clk := ttltest.NewClock(opEpoch)
		dir := durableWithData(t, clk, 2000, 1500, snap)
		db := mustOpenDurable(t, clk, dir)
		used := db.Metrics().Storage.Bytes
		require.Positive(t, used)
		require.NoError(t, db.Close())
		db = mustOpenDurable(t, clk, dir)
		// Tables and trees grown by a load and by single writes may differ
		// by a few steps of growth, and each Open hashes keys to its 64
		// _id-table shards with a new seed: a shard that doubles its table
		// in one Open may not in the next (up to about 3% here).
		require.InEpsilon(t, used, db.Metrics().Storage.Bytes, 0.05, "snapshot %v: accounted after a reopen", snap)
		require.NoError(t, db.Close())

		db = mustOpenDurable(t, clk, dir, WithMemoryLimit(used/2))
		require.InEpsilon(t, used, db.Metrics().Storage.Bytes, 0.05)
		_, err := db.Collection("c").InsertOne(context.Background(), Document{"over": true})
		require.ErrorIs(t, err, ErrMemoryLimit)
		require.NoError(t, db.Close())
	}
}
