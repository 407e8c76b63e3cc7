package engine

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// TestInterpreterDiff is the differential test of the four paths that
// reach a collection's state through the interpreter of writes: local
// writes, DB.Apply of the ops they committed, the log's replay and a
// snapshot's load. One seeded history (the generator TestOpReplay runs:
// every kind of write, index creation, drop and CollMod, TTL passes on the
// fake clock, HideExpired in-way deletes, capped evictions, time-series
// inserts, updates, deletes and bucket expiry) runs in segments on a DB
// with a data directory; after each segment a replica, itself durable,
// applies the segment's ops in batches of random sizes, some after a
// binary round trip, and must hold the same state. The origin snapshots in
// the middle of the history, so its restart loads that older snapshot and
// then the log's tail; the replica never snapshots, so its restart is the
// log alone. The restarted origin then writes on (its versions must be
// new ones), and the reference and the restarted replica apply its new
// ops. Last, a snapshot taken after every op is loaded by a restart, by
// WithRestore of the snapshot file and by WithRestore of a Backup.
// Every comparison is requireSameState's: per collection its options,
// index specifications, documents byte for byte in natural order, record
// versions, every index's multikey flag and entries, every TTL index's
// expiry entries and backlog counts, the byte count, the time-series
// buckets and their expiry entries, and the answers to index queries.
// TTLDB_SEED=n replays a seed; TTLDB_SOAK=1 runs a longer history.
func TestInterpreterDiff(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0xd1ff))
	segments, perSegment := 8, 400
	if os.Getenv("TTLDB_SOAK") == "1" {
		segments, perSegment = 40, 2500
	}
	noAuto := WithAutoSnapshot(AutoSnapshot{Disabled: true})
	originDir, replicaDir := t.TempDir(), t.TempDir()

	// Path 1: local writes, on a durable DB.
	local, clk, sink := openRecorded(t, WithDir(originDir), WithSync(SyncNever), noAuto)
	// Path 2: a replica, durable too, applying what the origin commits.
	replica := replay(t, nil, WithDir(replicaDir), WithSync(SyncNever), noAuto)

	var all []Op
	h := &history{t: t, rng: rng, db: local, clk: clk}
	h.setup()
	var total, afterSnapshot int
	snapshotAt := 1 + rng.IntN(segments-1)
	for seg := range segments {
		if seg == snapshotAt {
			require.NoError(t, local.Snapshot(context.Background()))
			afterSnapshot = 0
		}
		h.steps(perSegment)
		if seg == segments-1 {
			// Everything due expires: a TTL pass with work in every
			// collection, time-series buckets included.
			clk.Advance(10 * time.Minute)
			_, err := local.RunTTLPass(t.Context())
			require.NoError(t, err)
		}
		ops := sink.take()
		all = append(all, ops...)
		total += len(ops)
		afterSnapshot += len(ops)
		applyInBatches(t, rng, replica, ops)
		requireSameState(t, local, replica)
	}
	t.Logf("origin snapshot before segment %d, %d ops after it", snapshotAt, afterSnapshot)
	requireHistoryCoverage(t, all)

	// The reference the restarts below compare with, live once the origin
	// and the replica are closed: every op in one Apply call, in memory.
	ref := replay(t, all)
	requireSameState(t, local, ref)
	requireDistinctVersions(t, local)

	require.NoError(t, local.Close())
	require.NoError(t, replica.Close())

	later := ttltest.NewClock(clk.Now())
	reopen := func(opts ...Option) *DB {
		t.Helper()
		db, err := Open(append([]Option{WithClock(later), WithMonitor(MonitorOptions{Disabled: true})}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}

	// Path 3: log replay. The replica's directory holds no snapshot: its
	// whole state comes from its log. The origin's holds one older than
	// its last ops: the snapshot, then the log's tail.
	fromLog := reopen(WithDir(replicaDir), noAuto)
	rec := fromLog.Recovery()
	require.Empty(t, rec.Snapshot, "the replica never snapshots")
	require.Equal(t, total, rec.LogOps, "every op replayed from the replica's log")
	requireSameState(t, ref, fromLog)

	fromTail := reopen(WithDir(originDir), noAuto)
	rec = fromTail.Recovery()
	require.NotEmpty(t, rec.Snapshot)
	require.Equal(t, afterSnapshot, rec.LogOps, "the ops after the snapshot replayed from the log")
	requireSameState(t, ref, fromTail)

	// The restarted origin writes on where it stopped: its new ops, applied
	// by the reference and by the restarted replica, give the same state,
	// and the record versions it gives are new ones.
	tailSink := &recordingSink{}
	fromTail.ops.attach(tailSink)
	(&history{t: t, rng: rng, db: fromTail, clk: later}).steps(perSegment)
	more := tailSink.take()
	require.NotEmpty(t, more)
	require.Equal(t, uint64(total+1), more[0].Seq, "the restarted origin numbers its ops on")
	applyInBatches(t, rng, ref, more)
	applyInBatches(t, rng, fromLog, more)
	requireSameState(t, fromTail, ref)
	requireSameState(t, fromTail, fromLog)
	requireDistinctVersions(t, fromTail)
	var backup bytes.Buffer
	require.NoError(t, fromTail.Backup(context.Background(), &backup))

	// Path 4: snapshot load, from a snapshot that holds every op.
	require.NoError(t, fromTail.Snapshot(context.Background()))
	require.NoError(t, fromTail.Close())
	fromSnapshot := reopen(WithDir(originDir), noAuto)
	rec = fromSnapshot.Recovery()
	require.NotEmpty(t, rec.Snapshot)
	require.Zero(t, rec.LogOps, "the snapshot holds every op")
	requireSameState(t, ref, fromSnapshot)
	require.NoError(t, fromSnapshot.Close())

	snap, err := os.Open(onlyFile(t, filepath.Join(originDir, snapshotPrefix+"*")))
	require.NoError(t, err)
	defer snap.Close()
	requireSameState(t, ref, reopen(WithRestore(snap)))
	requireSameState(t, ref, reopen(WithRestore(&backup)))
}

// requireDistinctVersions requires the documents of db's ordinary
// collections to have distinct record versions: every write takes a new
// one, from the same DB-wide counter, and a restart must not give one
// twice (an expire hook tells two deliveries apart by _id and version).
func requireDistinctVersions(t testing.TB, db *DB) {
	t.Helper()
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	seen := map[uint64]string{}
	for _, name := range names {
		s, _ := db.state(name, false)
		if s == nil || s.ts != nil {
			continue
		}
		for _, v := range dumpVersions(s) {
			other, dup := seen[v]
			require.False(t, dup, "record version %d in collection %q and in %q", v, name, other)
			seen[v] = name
		}
	}
}

// applyInBatches applies ops to db in order, in batches of random sizes,
// as a replica receives them; about half the batches first make a binary
// round trip, as ops shipped over a wire or read from a log do.
func applyInBatches(t testing.TB, rng *rand.Rand, db *DB, ops []Op) {
	t.Helper()
	for len(ops) > 0 {
		n := min(len(ops), 1+rng.IntN(64))
		batch := ops[:n]
		ops = ops[n:]
		if rng.IntN(2) == 0 {
			bin := make([]Op, len(batch))
			for i, op := range batch {
				b, err := op.MarshalBinary()
				require.NoError(t, err)
				require.NoError(t, bin[i].UnmarshalBinary(b))
			}
			batch = bin
		}
		require.NoError(t, db.Apply(context.Background(), batch...))
	}
}
