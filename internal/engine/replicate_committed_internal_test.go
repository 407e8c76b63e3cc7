package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markReplicator is a Replicator that accepts every write at once and
// records the ops it is given; nothing is committed until the test marks
// it (DB.MarkCommitted).
type markReplicator struct {
	mu  sync.Mutex
	ops []Op
}

func (r *markReplicator) Begin() error { return nil }
func (r *markReplicator) Commit(ops []Op) {
	r.mu.Lock()
	r.ops = append(r.ops, ops...)
	r.mu.Unlock()
}
func (r *markReplicator) End(err error) error { return err }

func (r *markReplicator) recorded() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// nextAsync runs cs.Next on another goroutine and sends what it returned.
func nextAsync(cs *ChangeStream) <-chan ChangeEvent {
	out := make(chan ChangeEvent, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if cs.Next(ctx) {
			out <- cs.Event()
		}
		close(out)
	}()
	return out
}

// waitParked waits until a stream of b sleeps on its wake channel.
func waitParked(t *testing.T, b *changeBuffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		parked := b.waiting.Load() && b.wake != nil
		b.mu.Unlock()
		if parked {
			return
		}
		require.True(t, time.Now().Before(deadline), "the stream never parked")
		time.Sleep(time.Millisecond)
	}
}

// Rule: on a DB with a Replicator, a local write's event is not delivered
// before the replicator marks its op committed, and a stream waiting for
// it wakes when the mark reaches it; marks never go back, and a mark past
// the DB's last op is refused.
func TestReplicatedStreamDeliversCommittedOnly(t *testing.T) {
	db := openCS(t, WithReplicator(&markReplicator{}))
	cs := watchT(t, db)
	c := db.Collection("c")
	_, err := c.InsertOne(context.Background(), Document{"_id": 1})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), Document{"_id": 2})
	require.NoError(t, err)
	require.Equal(t, uint64(3), db.LastSeq(), "create, insert, insert")
	assert.Empty(t, drain(t, cs), "nothing committed yet")

	require.NoError(t, db.MarkCommitted(2))
	evs := drain(t, cs)
	require.Len(t, evs, 1, "the insert of 1 (op 2) only")
	assert.Equal(t, 1, evID(t, evs[0]))
	assert.Equal(t, ResumeToken{Seq: 3}, cs.ResumeToken())

	got := nextAsync(cs)
	waitParked(t, db.changeBuf)
	select {
	case ev := <-got:
		t.Fatalf("delivered before it was committed: %v", ev.ID)
	default:
	}
	require.NoError(t, db.MarkCommitted(3))
	select {
	case ev, ok := <-got:
		require.True(t, ok, "Next returned false: %v", cs.Err())
		assert.Equal(t, 2, evID(t, ev))
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting stream was not woken by the mark")
	}

	require.NoError(t, db.MarkCommitted(1), "a lower mark changes nothing")
	assert.Equal(t, uint64(3), db.ops.committed.Load())
	_, err = c.InsertOne(context.Background(), Document{"_id": 3})
	require.NoError(t, err)
	assert.ErrorIs(t, db.MarkCommitted(5), ErrOpSequence)
	assert.Equal(t, uint64(3), db.ops.committed.Load(), "a refused mark changes nothing")
	assert.Empty(t, drain(t, cs))
	require.NoError(t, db.MarkCommitted(4))
	assert.Len(t, drain(t, cs), 1)
}

// Rule: the ops DB.Apply applies on a replicated DB are committed on
// arrival: delivered at once, with every op before them.
func TestReplicatedStreamDeliversAppliedOpsAtOnce(t *testing.T) {
	origin := &markReplicator{}
	src := openCS(t, WithReplicator(origin))
	for i := range 3 {
		_, err := src.Collection("c").InsertOne(context.Background(), Document{"_id": i})
		require.NoError(t, err)
	}
	ops := origin.recorded()
	require.Len(t, ops, 4)

	db := openCS(t, WithReplicator(&markReplicator{}), WithChangeStreamBuffer(ChangeStreamBufferOptions{AttachAtOpen: true}))
	cs := watchT(t, db, ChangeStreamOptions{ResumeAfter: &ResumeToken{}})
	got := nextAsync(cs)
	waitParked(t, db.changeBuf)
	require.NoError(t, db.Apply(context.Background(), ops[:2]...))
	select {
	case ev, ok := <-got:
		require.True(t, ok, "Next returned false: %v", cs.Err())
		assert.Equal(t, 0, evID(t, ev))
	case <-time.After(10 * time.Second):
		t.Fatal("an applied op did not wake the stream")
	}
	require.NoError(t, db.Apply(context.Background(), ops[2:]...))
	evs := drain(t, cs)
	require.Len(t, evs, 2, "no MarkCommitted needed")
	assert.Equal(t, 2, evID(t, evs[1]))
	assert.Equal(t, uint64(4), db.ops.committed.Load())
}

// Rule: a buffer attached while local ops wait for their commit starts
// after them, and publishes nothing until they are committed: a stream
// never starts past an op that may yet be rolled back.
func TestReplicatedStreamLateAttach(t *testing.T) {
	db := openCS(t, WithReplicator(&markReplicator{}))
	c := db.Collection("c")
	_, err := c.InsertOne(context.Background(), Document{"_id": 1}) // ops 1, 2: not committed
	require.NoError(t, err)
	cs := watchT(t, db)
	assert.Equal(t, ResumeToken{Seq: 3}, cs.ResumeToken(), "starts after the ops numbered before it")
	_, err = db.Watch(context.Background(), nil, ChangeStreamOptions{ResumeAfter: &ResumeToken{Seq: 3}})
	assert.ErrorIs(t, err, ErrInvalidOptions, "op 2 is not committed: token 3 is ahead of the committed history")
	_, err = c.InsertOne(context.Background(), Document{"_id": 2}) // op 3
	require.NoError(t, err)
	require.NoError(t, db.MarkCommitted(2))
	assert.Empty(t, drain(t, cs), "op 3 is not committed")
	require.NoError(t, db.MarkCommitted(3))
	evs := drain(t, cs)
	require.Len(t, evs, 1)
	assert.Equal(t, 2, evID(t, evs[0]))
}

// Rule: without a Replicator, a write's event is delivered at once (no
// mark), and MarkCommitted changes nothing.
func TestUnreplicatedStreamNeedsNoMark(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db)
	_, err := db.Collection("c").InsertOne(context.Background(), Document{"_id": 1})
	require.NoError(t, err)
	require.Nil(t, db.changeBuf.gate)
	assert.Len(t, drain(t, cs), 1)
	require.NoError(t, db.MarkCommitted(db.LastSeq()))
	assert.Zero(t, db.ops.committed.Load())
}
