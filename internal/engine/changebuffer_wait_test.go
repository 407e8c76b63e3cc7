package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
)

// How a stream waits (changebuffer.go): it spins a bounded number of
// rounds while writes come fast, then parks until a commit wakes it. The
// spin hook lets these tests commit at a chosen round, or not at all.

// parkedNext starts cs.Next on a goroutine and returns the channel of its
// result, once the stream is parked (the buffer marked waiting).
func parkedNext(t *testing.T, db *DB, cs *ChangeStream) <-chan bool {
	t.Helper()
	got := make(chan bool, 1)
	go func() { got <- cs.Next(context.Background()) }()
	deadline := time.Now().Add(10 * time.Second)
	for !db.changeBuf.waiting.Load() {
		require.True(t, time.Now().Before(deadline), "Next never parked")
		time.Sleep(100 * time.Microsecond)
	}
	return got
}

// Rule: a stream whose op lands while it spins takes it without parking:
// the writer finds nobody waiting, makes no wake channel and wakes nobody.
func TestChangeStreamSpinTakesOpWithoutParking(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("a stream spins only with GOMAXPROCS >= 2")
	}
	db := openCS(t)
	cs := watchT(t, db)
	var rounds atomic.Int32
	db.changeBuf.spinHook = func(round int) {
		rounds.Add(1)
		if round == 3 {
			commitOps(db, insOp(t, "c", 7))
		}
	}
	require.True(t, cs.Next(context.Background()))
	assert.Equal(t, 7, evID(t, cs.Event()))
	assert.Equal(t, int32(4), rounds.Load(), "the spin ends at the round after the commit")
	assert.Equal(t, 1, cs.wait.spins)
	assert.Zero(t, cs.wait.parks)
	assert.False(t, db.changeBuf.waiting.Load())
	assert.Nil(t, db.changeBuf.wake, "no wake channel was made")
}

// Rule: a spin that finds nothing parks the stream, and the next commit
// wakes it with its op. After a wake with a lone op ready the next wait
// parks at once (the writer is not busy); a wake that finds several ops
// ready turns spinning back on.
func TestChangeStreamParksAfterSpinAndAdapts(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("a stream spins only with GOMAXPROCS >= 2")
	}
	db := openCS(t)
	cs := watchT(t, db)
	var rounds atomic.Int32
	var commitAt atomic.Int32
	commitAt.Store(-1)
	db.changeBuf.spinHook = func(round int) {
		rounds.Add(1)
		if int32(round) == commitAt.Load() {
			commitAt.Store(-1)
			commitOps(db, insOp(t, "c", 100))
		}
	}

	// A fruitless spin, then a park; a commit wakes it.
	got := parkedNext(t, db, cs)
	assert.Equal(t, int32(spinRounds), rounds.Load(), "every round spun before the park")
	runtime.Gosched()
	assert.Len(t, got, 0, "parked until an op lands")
	assert.True(t, db.changeBuf.waiting.Load())
	commitOps(db, insOp(t, "c", 1))
	require.True(t, <-got)
	assert.Equal(t, 1, evID(t, cs.Event()))
	assert.Equal(t, 1, cs.wait.parks)
	assert.True(t, cs.wait.noSpin, "a lone op at the wake: the next wait parks at once")

	// The next wait parks without spinning; two ops land in one commit.
	got = parkedNext(t, db, cs)
	assert.Equal(t, int32(spinRounds), rounds.Load(), "no spin after a lone op")
	db.ops.commit([]Op{insOp(t, "c", 2), insOp(t, "c", 3)})
	require.True(t, <-got)
	assert.Equal(t, 2, evID(t, cs.Event()))
	assert.Equal(t, 2, cs.wait.parks)
	assert.False(t, cs.wait.noSpin, "several ops at the wake: spinning is back on")
	require.True(t, cs.TryNext(context.Background()), "the second op of the commit is ready")
	assert.Equal(t, 3, evID(t, cs.Event()))

	// Spinning again: an op landing in the spin is taken without a park.
	commitAt.Store(0)
	require.True(t, cs.Next(context.Background()))
	assert.Equal(t, 100, evID(t, cs.Event()))
	assert.Equal(t, int32(spinRounds+1), rounds.Load())
	assert.Equal(t, 1, cs.wait.spins)
	assert.Equal(t, 2, cs.wait.parks)
}

// Rule: with one processor a stream never spins (the writer could not run
// meanwhile): it parks at once and is woken by the commit.
func TestChangeStreamNoSpinOnOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	db := openCS(t)
	cs := watchT(t, db)
	var rounds atomic.Int32
	db.changeBuf.spinHook = func(int) { rounds.Add(1) }
	got := parkedNext(t, db, cs)
	commitOps(db, insOp(t, "c", 1))
	require.True(t, <-got)
	assert.Zero(t, rounds.Load())
	assert.Equal(t, 1, cs.wait.parks)
}

// Rule: a stream with BatchSize above 1 never spins: it sleeps until its
// batch is ready (TestChangeStreamBatchSize pins the rest).
func TestChangeStreamBatchDoesNotSpin(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db, ChangeStreamOptions{BatchSize: 2, MaxAwaitTime: time.Hour})
	var rounds atomic.Int32
	db.changeBuf.spinHook = func(int) { rounds.Add(1) }
	got := parkedNext(t, db, cs)
	commitOps(db, insOp(t, "c", 1), insOp(t, "c", 2))
	require.True(t, <-got)
	assert.Zero(t, rounds.Load())
}

// Rule: streams that spin, park and are woken while several writers commit
// at full speed see every op exactly once, in sequence order. Streams of
// each kind read at once: one at the default (spinning), one that sleeps
// between its reads (so it parks and is woken), one with a BatchSize.
func TestChangeStreamNoOpLostAcrossWakes(t *testing.T) {
	const writers, perWriter = 4, 3000
	// The buffer holds every op (the collections' creations too): a
	// stream the machine leaves unscheduled while all are written still
	// finds them.
	db := openCS(t, WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: writers*perWriter + 64}))
	ctx := context.Background()
	streams := []*ChangeStream{watchT(t, db), watchT(t, db), watchT(t, db, ChangeStreamOptions{BatchSize: 16, MaxAwaitTime: time.Millisecond})}
	type seen struct {
		seqs []uint64
		ids  map[string]int
		err  error
	}
	results := make([]seen, len(streams))
	var readers sync.WaitGroup
	for i, cs := range streams {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := seen{ids: map[string]int{}}
			for len(r.seqs) < writers*perWriter && cs.Next(ctx) {
				ev := cs.Event()
				r.seqs = append(r.seqs, ev.ClusterTime)
				r.ids[fmt.Sprintf("%s/%v", ev.Ns.Coll, ev.DocumentKey.ID())]++
				if i == 1 && len(r.seqs)%64 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
			}
			r.err = cs.Err()
			results[i] = r
		}()
	}
	var w sync.WaitGroup
	for g := range writers {
		w.Add(1)
		go func() {
			defer w.Done()
			c := db.Collection(fmt.Sprintf("w%d", g))
			for i := range perWriter {
				if _, err := c.InsertOne(context.Background(), Document{"_id": i, "g": g}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	w.Wait()
	readers.Wait()
	// The first ops are the collections' creations (not shown by default):
	// the inserts' sequence numbers follow them without a gap.
	for i, r := range results {
		require.NoError(t, r.err, "stream %d", i)
		require.Len(t, r.seqs, writers*perWriter, "stream %d", i)
		for j := 1; j < len(r.seqs); j++ {
			require.Less(t, r.seqs[j-1], r.seqs[j], "stream %d: event %d out of order", i, j)
		}
		assert.Len(t, r.ids, writers*perWriter, "stream %d: every insert seen", i)
		for id, n := range r.ids {
			require.Equal(t, 1, n, "stream %d: %s seen %d times", i, id, n)
		}
	}
}

// Rule: the document keys a stream cuts from its key buffer stay as they
// were while it goes on: an event kept after many more (more than a
// buffer's worth) still has its own key, long _id values included.
func TestChangeStreamKeptDocumentKeysStay(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db)
	long := string(make([]byte, 3*keyArenaSize))
	var want []any
	var ops []Op
	for i := range 1000 {
		var id any = i
		if i%100 == 50 {
			id = fmt.Sprintf("%s%d", long, i)
		}
		want = append(want, id)
		ops = append(ops, Op{Kind: OpInsert, Collection: "c", Time: csT0, Docs: []RawDocument{enc(t, Document{"_id": id, "v": i})}})
	}
	commitOps(db, ops...)
	var kept []ChangeEvent
	for cs.TryNext(context.Background()) {
		kept = append(kept, cs.Event())
	}
	require.Len(t, kept, len(want))
	for i, ev := range kept {
		assert.Equal(t, want[i], ev.DocumentKey.ID(), "event %d", i)
		k, _ := codec.AppendIDDoc(nil, ops[i].Docs[0])
		assert.Equal(t, RawDocument(k), ev.DocumentKey, "event %d", i)
		assert.Equal(t, len(ev.DocumentKey), cap(ev.DocumentKey), "a key's capacity ends with it: an append cannot reach the next")
	}
}
