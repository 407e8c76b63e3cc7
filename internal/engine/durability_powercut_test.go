package engine

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// kvWrite is one acknowledged write of the power-cut tests: a set of key
// k to value v, or its deletion (del).
type kvWrite struct {
	k, v int
	del  bool
}

// kvModel replays writes: the state a DB should hold after them.
func kvModel(ws []kvWrite) map[int]int {
	m := map[int]int{}
	for _, w := range ws {
		if w.del {
			delete(m, w.k)
		} else {
			m[w.k] = w.v
		}
	}
	return m
}

// kvState reads the test collection of db.
func kvState(t testing.TB, db *DB) map[int]int {
	t.Helper()
	cur, err := db.Collection("kv").Find(context.Background(), nil)
	require.NoError(t, err)
	var docs []Document
	require.NoError(t, cur.All(context.Background(), &docs))
	m := map[int]int{}
	for _, d := range docs {
		m[d["_id"].(int)] = d["v"].(int)
	}
	return m
}

var kvSeed = maphash.MakeSeed()

func kvHash(m map[int]int) uint64 {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var h maphash.Hash
	h.SetSeed(kvSeed)
	for _, k := range keys {
		fmt.Fprintf(&h, "%d=%d;", k, m[k])
	}
	return h.Sum64()
}

// kvDo performs one random write on db and returns it (ok false if the
// DB refused it).
func kvDo(db *DB, rng *rand.Rand, keys int) (kvWrite, error) {
	c := db.Collection("kv")
	k := rng.IntN(keys)
	switch r := rng.IntN(10); {
	case r < 2:
		_, err := c.DeleteOne(context.Background(), Document{"_id": k})
		return kvWrite{k: k, del: true}, err
	default:
		v := rng.IntN(1 << 20)
		_, err := c.ReplaceOne(context.Background(), Document{"_id": k}, Document{"v": v, "pad": "................................"}, UpdateOptions{Upsert: true})
		return kvWrite{k: k, v: v}, err
	}
}

// TestPowerCutSyncAlways: under SyncAlways a power cut, at any moment of a
// random workload with snapshots along the way, loses no acknowledged
// write and keeps no other: the reopened DB holds exactly the state of the
// acknowledged writes, its indexes equal a rebuild.
func TestPowerCutSyncAlways(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0xc07))
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	var acked []kvWrite
	for round := range 12 {
		db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(SyncAlways), withLogSegmentSize(8<<10))
		require.Equal(t, kvModel(acked), kvState(t, db), "round %d: the state of the acknowledged writes", round)
		requireIndexesRebuilt(t, db)
		if round == 0 {
			_, err := db.Collection("kv").CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}})
			require.NoError(t, err)
		}
		n := 20 + rng.IntN(200)
		for i := range n {
			w, err := kvDo(db, rng, 300)
			require.NoError(t, err)
			acked = append(acked, w)
			if i == n/2 && rng.IntN(3) == 0 {
				require.NoError(t, db.Snapshot(context.Background()))
			}
		}
		m.PowerCut()
		_ = db.Close()
	}
}

// TestPowerCutSyncEverySecond: under SyncEverySecond a power cut loses at
// most the writes since the last flush: the reopened DB holds the state
// after some prefix of the acknowledged writes that includes every write
// before the last flush (the sink's writer and the log's fsync, run here
// by hand as their timers would), and no write is half there.
func TestPowerCutSyncEverySecond(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncEverySecond, SyncNever} {
		t.Run(pol.String(), func(t *testing.T) {
			seed := testutil.Seed(t)
			rng := rand.New(rand.NewPCG(seed, 0xe5))
			m := vfs.NewFaultFS()
			clk := ttltest.NewClock(opEpoch)
			var acked []kvWrite
			lost := 0
			for round := range 12 {
				db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(pol), withLogSegmentSize(8<<10))
				got := kvState(t, db)
				requireIndexesRebuilt(t, db)
				// Which prefix of the writes is it? At least the synced one.
				synced := lastSynced(acked)
				j := -1
				h := kvHash(got)
				for p := len(acked); p >= synced; p-- {
					if kvHash(kvModel(acked[:p])) == h {
						j = p
						break
					}
				}
				require.GreaterOrEqual(t, j, synced, "round %d: the state is not that of any prefix of the writes from the last flush on (%d writes, %d synced)", round, len(acked), synced)
				lost += len(acked) - j
				acked = acked[:j:j]
				markSynced(&acked)
				if round == 0 {
					_, err := db.Collection("kv").CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}})
					require.NoError(t, err)
				}
				for range 1 + rng.IntN(4) {
					for range 10 + rng.IntN(100) {
						w, err := kvDo(db, rng, 300)
						require.NoError(t, err)
						acked = append(acked, w)
					}
					if rng.IntN(2) == 0 {
						// What the flush timers do: the sink's writer hands
						// the log what is pending, the log's flusher fsyncs.
						flushLog(t, db)
						if pol == SyncEverySecond {
							require.NoError(t, db.persist.log.Sync())
							markSynced(&acked)
						}
					}
					if rng.IntN(4) == 0 {
						require.NoError(t, db.Snapshot(context.Background()))
						markSynced(&acked) // a snapshot is fsynced
					}
				}
				m.PowerCut()
				_ = db.Close()
			}
			t.Logf("%d writes lost to power cuts, all after the last flush", lost)
		})
	}
}

// The power-cut tests mark the synced prefix of acked with a sentinel
// write of key -1 (the model ignores it: it deletes a key never set).
func markSynced(ws *[]kvWrite) { *ws = append(*ws, kvWrite{k: -1, del: true}) }

func lastSynced(ws []kvWrite) int {
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i].k == -1 {
			return i + 1
		}
	}
	return 0
}

// TestFlusherSyncsEverySecond: under SyncEverySecond, with no call but
// writes, the sink's writer and the log's flusher make a write durable
// once their timers fire (10 ms, then 1 s of the DB's clock): a power cut
// after that keeps it.
func TestFlusherSyncsEverySecond(t *testing.T) {
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, "d", withFS(m))
	_, err := db.Collection("kv").InsertOne(context.Background(), Document{"_id": 1, "v": 1})
	require.NoError(t, err)
	syncs := db.persist.log.Stats().Syncs
	// Let the DB's time pass, a step at a time, until the writer has
	// handed the write to the log, then until the flusher has fsynced it.
	waitFor(t, func() bool {
		clk.Advance(flushDelay)
		return db.persist.sink.written.Load() == db.persist.sink.pendingSeq.Load()
	})
	waitFor(t, func() bool {
		clk.Advance(100 * time.Millisecond)
		return db.persist.log.Stats().Syncs > syncs
	})
	m.PowerCut()
	_ = db.Close()
	db = mustOpenDurable(t, clk, "d", withFS(m))
	defer db.Close()
	require.Equal(t, map[int]int{1: 1}, kvState(t, db))
}

// waitFor polls cond, for a goroutine woken by a fake clock to do its
// work; it fails the test after 10 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out")
		time.Sleep(100 * time.Microsecond)
	}
}
