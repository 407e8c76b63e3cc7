package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// restartEvent is what the restart test compares of an event.
type restartEvent struct {
	Kind    OperationType
	ID      int
	Expired bool
}

func (e restartEvent) String() string {
	if e.Expired {
		return fmt.Sprintf("%s(%d, expired)", e.Kind, e.ID)
	}
	return fmt.Sprintf("%s(%d)", e.Kind, e.ID)
}

// TestWatchResumesAcrossRestarts closes and reopens a DB opened WithDir
// mid-stream many times, under a random sync policy, buffer size (down to
// 4 ops, so that live streams also fall back to the log) and snapshots
// with small log segments, and resumes a consumer from the token it saved
// each time: it must see every event exactly once, in commit order. The
// writes are inserts (one and many: tokens inside an op), updates,
// deletes and TTL deletions. TTLDB_SEED=n replays a seed; TTLDB_SOAK=1
// runs more rounds.
func TestWatchResumesAcrossRestarts(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0x23))
	rounds := 12
	if os.Getenv("TTLDB_SOAK") != "" {
		rounds = 80
	}
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	ctx := context.Background()
	var want, got []restartEvent
	live := map[int]time.Time{} // the live documents' at
	// at gives each document its own instant, increasing with its _id:
	// a TTL batch deletes in that order.
	at := func(id int) time.Time { return clk.Now().Add(time.Duration(id) * time.Microsecond) }
	nextID := 0
	token := &ResumeToken{} // the start of the history
	snapshots := 0
	for round := range rounds {
		policy := []SyncPolicy{SyncAlways, SyncEverySecond, SyncNever}[rng.IntN(3)]
		size := []int{4, 64, 0}[rng.IntN(3)]
		db, err := Open(WithDir(dir), WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}), WithSync(policy),
			withLogSegmentSize(2048), WithAutoSnapshot(AutoSnapshot{MinLogBytes: 8 << 10, LogRatio: 0.1}),
			WithLogRetention(LogRetention{Bytes: 1 << 30}), WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: size}))
		require.NoError(t, err, "round %d", round)
		c := db.Collection("c")
		if round == 0 {
			_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
			require.NoError(t, err)
		}
		cs, err := db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: token})
		require.NoError(t, err, "round %d: resume after %s", round, token)
		read := func(n int) {
			for range n {
				if len(got) == len(want) {
					return
				}
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				ok := cs.Next(wctx)
				cancel()
				require.True(t, ok, "round %d: event %d of %d: %v", round, len(got), len(want), cs.Err())
				ev := cs.Event()
				got = append(got, restartEvent{Kind: ev.OperationType, ID: idOf(t, ev.DocumentKey), Expired: ev.Expired})
				require.Equal(t, want[:len(got)], got, "round %d (seed %d)", round, seed)
			}
		}
		for range rng.IntN(40) {
			switch r := rng.IntN(20); {
			case r < 8:
				_, err = c.InsertOne(ctx, Document{"_id": nextID, "at": at(nextID)})
				want = append(want, restartEvent{Kind: OperationInsert, ID: nextID})
				live[nextID] = at(nextID)
				nextID++
			case r < 10:
				docs := make([]any, 1+rng.IntN(4))
				for i := range docs {
					docs[i] = Document{"_id": nextID, "at": at(nextID)}
					want = append(want, restartEvent{Kind: OperationInsert, ID: nextID})
					live[nextID] = at(nextID)
					nextID++
				}
				_, err = c.InsertMany(ctx, docs)
			case r < 14 && len(live) > 0:
				id := anyKey(rng, live)
				_, err = c.UpdateOne(ctx, Document{"_id": id}, Document{"$inc": Document{"x": 1}}) // always a change
				want = append(want, restartEvent{Kind: OperationUpdate, ID: id})
			case r < 16 && len(live) > 0:
				id := anyKey(rng, live)
				_, err = c.DeleteOne(ctx, Document{"_id": id})
				want = append(want, restartEvent{Kind: OperationDelete, ID: id})
				delete(live, id)
			case r < 18:
				clk.Advance(time.Duration(rng.IntN(90)) * time.Second)
				var res PassResult
				res, err = db.RunTTLPass(ctx)
				n := 0
				for _, id := range sortedIDs(live) {
					if !live[id].Add(time.Minute).After(clk.Now()) {
						want = append(want, restartEvent{Kind: OperationDelete, ID: id, Expired: true})
						delete(live, id)
						n++
					}
				}
				require.Equal(t, n, res.Deleted)
			default:
				err = db.Snapshot(ctx)
				snapshots++
			}
			require.NoError(t, err)
			if rng.IntN(3) == 0 {
				read(rng.IntN(6))
			}
		}
		read(rng.IntN(len(want) - len(got) + 1))
		tok := cs.ResumeToken()
		token = &tok
		if rng.IntN(2) == 0 {
			require.NoError(t, cs.Close(ctx))
		}
		require.NoError(t, db.Close()) // mid-stream: the unread events wait in the log
	}
	db, err := Open(WithDir(dir), WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}), WithLogRetention(LogRetention{Bytes: 1 << 30}))
	require.NoError(t, err)
	defer db.Close()
	cs, err := db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: token})
	require.NoError(t, err)
	for len(got) < len(want) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ok := cs.Next(wctx)
		cancel()
		require.True(t, ok, "event %d of %d: %v", len(got), len(want), cs.Err())
		ev := cs.Event()
		got = append(got, restartEvent{Kind: ev.OperationType, ID: idOf(t, ev.DocumentKey), Expired: ev.Expired})
	}
	require.False(t, cs.TryNext(ctx), "an event beyond the history")
	require.Equal(t, want, got, "seed %d", seed)
	t.Logf("seed %d: %d events over %d restarts, %d snapshots, log from op %d", seed, len(want), rounds, snapshots, db.Metrics().Durability.RetainedFromSeq)
	require.Greater(t, db.Metrics().Durability.Snapshots+int64(snapshots), int64(0))
	var kinds []string
	for _, e := range want {
		kinds = append(kinds, e.String())
	}
	require.True(t, slices.ContainsFunc(want, func(e restartEvent) bool { return e.Expired }) || len(want) < 50, "no TTL deletion in %s", strings.Join(kinds, " "))
}

// anyKey returns a key of m chosen by rng (m not empty), in a
// deterministic way: the keys sorted, one picked.
func anyKey(rng *rand.Rand, m map[int]time.Time) int {
	keys := sortedIDs(m)
	return keys[rng.IntN(len(keys))]
}

func sortedIDs(m map[int]time.Time) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestWatchFromLogGivesCommittedDocuments: events read from the log after
// a restart carry what the live stream would have given: FullDocument
// always (insert, replace; update with FullDocument set), and pre-images
// for the ops committed while pre-images were asked for (here
// ChangeStreamBufferOptions.PreImages); an op committed without one has
// none (FullDocumentRequired then ends the stream with ErrNoPreImage).
func TestWatchFromLogGivesCommittedDocuments(t *testing.T) {
	ctx := context.Background()
	clk := ttltest.NewClock(opEpoch)
	dir := t.TempDir()
	open := func(pre bool) *DB {
		db, err := Open(WithDir(dir), WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}),
			WithChangeStreamBuffer(ChangeStreamBufferOptions{PreImages: pre, AttachAtOpen: pre}))
		require.NoError(t, err)
		return db
	}
	db := open(true)
	c := db.Collection("c")
	_, err := c.InsertOne(ctx, Document{"_id": 1, "v": "a"})
	require.NoError(t, err)
	_, err = c.UpdateOne(ctx, Document{"_id": 1}, Document{"$set": Document{"v": "b"}})
	require.NoError(t, err)
	_, err = c.DeleteOne(ctx, Document{"_id": 1})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	db = open(false) // no pre-images for what follows
	_, err = db.Collection("c").InsertOne(ctx, Document{"_id": 2, "v": "c"})
	require.NoError(t, err)
	_, err = db.Collection("c").DeleteOne(ctx, Document{"_id": 2})
	require.NoError(t, err)
	require.NoError(t, db.Close())

	db = open(false)
	defer db.Close()
	cs, err := db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: &ResumeToken{},
		FullDocument: FullDocumentUpdateLookup, FullDocumentBeforeChange: FullDocumentWhenAvailable})
	require.NoError(t, err)
	var evs []ChangeEvent
	for cs.TryNext(ctx) {
		evs = append(evs, cs.Event())
	}
	require.NoError(t, cs.Err())
	require.Len(t, evs, 5)
	assert := func(i int, kind OperationType, full, before any) {
		t.Helper()
		require.Equal(t, kind, evs[i].OperationType, "event %d", i)
		var gotFull, gotBefore any
		if evs[i].FullDocument != nil {
			gotFull, _ = evs[i].FullDocument.Lookup("v")
		}
		if evs[i].FullDocumentBeforeChange != nil {
			gotBefore, _ = evs[i].FullDocumentBeforeChange.Lookup("v")
		}
		require.Equal(t, full, gotFull, "event %d's FullDocument", i)
		require.Equal(t, before, gotBefore, "event %d's pre-image", i)
	}
	assert(0, OperationInsert, "a", nil)
	assert(1, OperationUpdate, "b", "a")
	assert(2, OperationDelete, nil, "b")
	assert(3, OperationInsert, "c", nil)
	assert(4, OperationDelete, nil, nil) // committed with no pre-image asked for

	required, err := db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: &evs[3].ID, FullDocumentBeforeChange: FullDocumentRequired})
	require.NoError(t, err)
	require.False(t, required.TryNext(ctx))
	require.ErrorIs(t, required.Err(), ErrNoPreImage)
}
