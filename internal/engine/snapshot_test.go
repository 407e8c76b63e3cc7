package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	snapfile "github.com/ttldb/ttldb/internal/snapshot"
	"github.com/ttldb/ttldb/internal/testutil"
)

// snapWorkload runs random writes on db until stop is closed: inserts,
// updates that move unique keys and TTL dates, replacements, deletes,
// capped inserts, index and collection churn, and TTL passes as the clock
// advances. It counts the writes done in n.
type snapWorkload struct {
	db    *DB
	clock interface{ Advance(time.Duration) }
	n     atomic.Int64
}

func (w *snapWorkload) setup(t testing.TB, docs int) {
	ctx := context.Background()
	a := w.db.Collection("a")
	_, err := a.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("u")}, Unique: true, Sparse: true})
	require.NoError(t, err)
	_, err = a.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("t")}, ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	_, err = a.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("g"), Desc("t")}})
	require.NoError(t, err)
	_, err = w.db.CreateCollection(context.Background(), "b", CollectionOptions{Capped: true, MaxDocuments: 300})
	require.NoError(t, err)
	batch := make([]Document, 0, 1000)
	for i := range docs {
		batch = append(batch, Document{"_id": i, "u": i, "g": i % 7, "t": opEpoch.Add(time.Duration(i%5000) * time.Second), "pad": "xxxxxxxxxxxxxxxxxxxxxxxx"})
		if len(batch) == cap(batch) || i == docs-1 {
			_, err := a.InsertMany(context.Background(), batch)
			require.NoError(t, err)
			batch = batch[:0]
		}
	}
}

// run is one writer; seed makes its choices.
func (w *snapWorkload) run(seed uint64, docs int, stop <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	a, b := w.db.Collection("a"), w.db.Collection("b")
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		id := rng.IntN(docs + docs/4)
		var err error
		switch r := rng.IntN(100); {
		case r < 25:
			_, err = a.InsertOne(context.Background(), Document{"_id": id, "u": rng.IntN(docs * 2), "g": rng.IntN(7), "t": opEpoch.Add(time.Duration(rng.IntN(10000)) * time.Second)})
		case r < 45:
			_, err = a.UpdateOne(context.Background(), Document{"_id": id}, Document{"$set": Document{"u": rng.IntN(docs * 2)}})
		case r < 55:
			_, err = a.UpdateOne(context.Background(), Document{"_id": id}, Document{"$set": Document{"t": opEpoch.Add(time.Duration(rng.IntN(10000)) * time.Second)}, "$inc": Document{"n": 1}})
		case r < 60:
			_, err = a.ReplaceOne(context.Background(), Document{"_id": id}, Document{"u": rng.IntN(docs * 2), "r": true})
		case r < 72:
			_, err = a.DeleteOne(context.Background(), Document{"_id": id})
		case r < 90:
			_, err = b.InsertOne(context.Background(), Document{"i": i, "s": seed})
		case r < 93:
			_, err = a.UpdateMany(ctx, Document{"g": rng.IntN(7), "_id": Document{"$lt": rng.IntN(docs)}}, Document{"$inc": Document{"m": 1}})
		case r < 95:
			if rng.IntN(2) == 0 {
				_, err = w.db.Collection("c").InsertOne(context.Background(), Document{"x": i})
			} else {
				err = w.db.DropCollection(context.Background(), "c")
			}
		case r < 97:
			if rng.IntN(2) == 0 {
				_, err = a.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("n")}})
			} else {
				err = a.DropIndex(context.Background(), "n_1")
			}
		default:
			w.clock.Advance(time.Duration(rng.IntN(300)) * time.Second)
			_, err = w.db.RunTTLPass(ctx)
		}
		if err != nil && !errors.Is(err, ErrDuplicateKey) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrIndexOptionsConflict) {
			return fmt.Errorf("writer %d, step %d: %w", seed, i, err)
		}
		w.n.Add(1)
	}
}

// TestSnapshotWhileWriting takes a snapshot while four writers change the
// DB, each step of the walk letting them do more writes; a DB loaded from
// it, with the ops committed after its end applied, equals the live DB:
// the same collections, options, index definitions and documents in the
// same natural order, and indexes equal to a rebuild.
func TestSnapshotWhileWriting(t *testing.T) {
	db, clk, sink := openRecorded(t)
	const docs = 20000
	w := &snapWorkload{db: db, clock: clk}
	w.setup(t, docs)

	// Between two chunks of the walk, let the writers do some writes.
	chunks := 0
	snapshotChunkHook = func() {
		chunks++
		for target := w.n.Load() + 40; w.n.Load() < target; {
			runtime.Gosched()
		}
	}
	defer func() { snapshotChunkHook = nil }()

	stop := make(chan struct{})
	errc := make(chan error, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- w.run(uint64(i+1), docs, stop)
		}()
	}
	var buf bytes.Buffer
	info, err := db.writeSnapshot(&buf)
	close(stop)
	wg.Wait()
	close(errc)
	require.NoError(t, err)
	for err := range errc {
		require.NoError(t, err)
	}
	require.Greater(t, chunks, docs/snapshotChunk-1)
	require.Greater(t, info.endSeq-info.startSeq, uint64(chunks*40/2), "writers ran during the walk")
	t.Logf("snapshot: %d bytes, ops %d..%d (%d captured), %d chunks; writes %d", buf.Len(), info.startSeq, info.endSeq, info.ops, chunks, w.n.Load())

	live := dumpCollections(t, db)
	ops := sink.take()
	loaded := loadBackup(t, buf.Bytes(), ops)
	requireSameDB(t, live, dumpCollections(t, loaded), true)
	requireIndexesRebuilt(t, loaded)
	requireIndexesRebuilt(t, db)
}

// TestSnapshotReadsBack checks the snapshot of a quiet DB alone: its
// trailer's end is the last op, and loading it gives the DB back.
func TestSnapshotReadsBack(t *testing.T) {
	db, clk, _ := openRecorded(t)
	w := &snapWorkload{db: db, clock: clk}
	w.setup(t, 3000)
	var buf bytes.Buffer
	require.NoError(t, db.Backup(context.Background(), &buf))
	r, err := snapfile.NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	h, ok := r.Header()
	require.True(t, ok)
	require.Equal(t, db.ops.lastSeq(), h.StartSeq)
	loaded := loadBackup(t, buf.Bytes(), nil)
	requireSameDB(t, dumpCollections(t, db), dumpCollections(t, loaded), true)
	require.Equal(t, db.ops.lastSeq(), loaded.ops.lastSeq())
	require.Equal(t, db.writes.Load(), loaded.writes.Load())
}

// TestSnapshotInterleavedHistory takes snapshots while the seeded random
// history of the op tests (every kind of write, TTL passes with HideExpired
// in-way deletes, capped evictions, validators, index churn, time-series
// inserts, updates, deletes and expiries) runs between the walk's chunks
// of four documents: a DB loaded from each, with the later ops applied,
// has the same state as the live one, record versions included.
func TestSnapshotInterleavedHistory(t *testing.T) {
	base := testutil.Seed(t)
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) { snapshotInterleaved(t, base+uint64(round)) })
	}
}

// TestSnapshotInterleavedNaturalOrder replays the seeds under which
// TestSnapshotInterleavedHistory once failed: a write captured during the
// walk deleted a document and inserted it again, and the walk, reaching
// its collection later, copied it in its new place too; the load put it
// back at the end, behind documents the same write had inserted after it,
// so a restored DB listed the collection in another natural order.
func TestSnapshotInterleavedNaturalOrder(t *testing.T) {
	for _, seed := range []uint64{1795758867498981451 + 2, 1795758869025005726} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { snapshotInterleaved(t, seed) })
	}
}

// snapshotInterleaved runs a seeded history, takes a snapshot while the
// history goes on between the walk's chunks, and checks that the snapshot
// with the later ops loads into the live DB's state: the same documents
// in the same natural order, with the same record versions and indexes.
func snapshotInterleaved(t *testing.T, seed uint64) {
	t.Logf("history seed %d", seed)
	db, clk, sink := openRecorded(t)
	h := &history{t: t, rng: rand.New(rand.NewPCG(seed, 0x5a5)), db: db, clk: clk}
	h.setup()
	h.steps(600)
	defer func(n int) { snapshotChunk = n }(snapshotChunk)
	snapshotChunk = 4
	snapshotChunkHook = func() { h.steps(3) }
	defer func() { snapshotChunkHook = nil }()
	var buf bytes.Buffer
	info, err := db.writeSnapshot(&buf)
	require.NoError(t, err)
	snapshotChunkHook = nil
	h.steps(100)
	require.GreaterOrEqual(t, info.ops, uint64(10), "the history wrote during the walk")
	loaded := loadBackup(t, buf.Bytes(), sink.take())
	requireSameState(t, db, loaded)
	requireIndexesRebuilt(t, loaded)
	for _, name := range plainColls {
		ws, _ := db.state(name, false)
		gs, _ := loaded.state(name, false)
		if ws == nil {
			require.Nil(t, gs)
			continue
		}
		require.Equal(t, recordVersions(ws), recordVersions(gs), "collection %q record versions", name)
	}
	require.Equal(t, db.ops.lastSeq(), loaded.ops.lastSeq())
}

// recordVersions lists a collection's record versions in natural order.
func recordVersions(s *collState) []uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []uint64
	s.natural.Ascend(func(it natItem) bool {
		out = append(out, s.rec(it.slot).ver)
		return true
	})
	return out
}
