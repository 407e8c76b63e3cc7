package engine

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// TestWritePathsAgree drives one seeded random history (the one
// TestOpReplay runs: ordinary, capped, validated, HideExpired and
// time-series collections, every kind of write, index creation, drop and
// CollMod, TTL passes) through local writes on a DB with a data
// directory, then rebuilds that state by each other path that reaches the
// interpreter (apply.go) and requires the same state from each: DB.Apply
// of the ops the writes committed (a replica), the log's replay (the
// directory reopened with no snapshot), a snapshot's load (reopened after
// DB.Snapshot, nothing left in the log) and WithRestore of a Backup. The
// same state is every collection's options and index specifications, its
// documents byte for byte in natural order, their record versions, every
// index's entries, multikey flag and TTL backlog counts, the byte count,
// every time-series bucket, and the same answers to index queries
// (requireSameState). TTLDB_SEED=n replays a seed; TTLDB_SOAK=1 runs a
// longer history.
func TestWritePathsAgree(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0xa991))
	steps := 1500
	if os.Getenv("TTLDB_SOAK") == "1" {
		steps = 20000
	}
	dir := t.TempDir()
	noAuto := WithAutoSnapshot(AutoSnapshot{Disabled: true})
	local, clk, sink := openRecorded(t, WithDir(dir), WithSync(SyncNever), noAuto)
	h := &history{t: t, rng: rng, db: local, clk: clk}
	h.run(steps)
	h.steps(100)
	ops := sink.take()
	kinds := map[OpKind]int{}
	for _, op := range ops {
		kinds[op.Kind]++
	}
	for k := OpInsert; k <= OpCollMod; k++ {
		require.NotZero(t, kinds[k], "the history committed no %s op", k)
	}

	// A replica: the ops, applied in order to an empty DB.
	applied := replay(t, ops)
	requireSameState(t, local, applied)

	var backup bytes.Buffer
	require.NoError(t, local.Backup(&backup))
	require.NoError(t, local.Close())

	reopen := func(opts ...Option) *DB {
		t.Helper()
		c := ttltest.NewClock(clk.Now())
		db, err := Open(append([]Option{WithClock(c), WithMonitor(MonitorOptions{Disabled: true})}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}

	// A restart: the log replayed, no snapshot.
	fromLog := reopen(WithDir(dir), noAuto)
	rec := fromLog.Recovery()
	require.Empty(t, rec.Snapshot, "no snapshot was taken: the state comes from the log")
	require.Equal(t, len(ops), rec.LogOps, "every op replayed from the log")
	requireSameState(t, applied, fromLog)

	// A restart from a snapshot that holds everything.
	require.NoError(t, fromLog.Snapshot())
	require.NoError(t, fromLog.Close())
	fromSnapshot := reopen(WithDir(dir), noAuto)
	rec = fromSnapshot.Recovery()
	require.NotEmpty(t, rec.Snapshot)
	require.Zero(t, rec.LogOps, "the snapshot holds every op: nothing left to replay")
	requireSameState(t, applied, fromSnapshot)

	// A backup restored into a DB without a directory.
	restored := reopen(WithRestore(&backup))
	requireSameState(t, applied, restored)
}
