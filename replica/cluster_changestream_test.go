package replica

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// resumableStreams are the DB options of a cluster whose change streams
// can resume on any node: every node's buffer holds the ops from its
// first (AttachAtOpen).
func resumableStreams(string) []ttldb.Option {
	return []ttldb.Option{ttldb.WithChangeStreamBuffer(ttldb.ChangeStreamBufferOptions{AttachAtOpen: true})}
}

// seen is a change event as the tests compare them: its token and the
// inserted document's _id.
type seen struct {
	ID  ttldb.ResumeToken
	Doc string
}

// readEvents reads n events from cs, within 20 s.
func readEvents(t *testing.T, cs *ttldb.ChangeStream, n int) []seen {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []seen
	for len(out) < n {
		require.True(t, cs.Next(ctx), "after %d of %d events: %v", len(out), n, cs.Err())
		ev := cs.Event()
		out = append(out, seen{ID: ev.ID, Doc: fmt.Sprint(ev.DocumentKey.Document()["_id"])})
	}
	return out
}

// insertDoc inserts {_id: id} into w on the leader (again on a new one
// if leadership moves meanwhile).
func (c *cluster) insertDoc(id string) {
	c.t.Helper()
	c.insertOnLeader("w", ttldb.Document{"_id": id})
}

// TestClusterChangeStreamResumeAfterFailover: a watcher on the leader
// reads part of the events, the leader is killed, and the watcher resumes
// with its token on the new leader: the resumed stream delivers exactly
// the events after the token (no gap, no duplicate), and what the watcher
// saw in all equals what a stream on a surviving follower saw from the
// start, tokens included.
func TestClusterChangeStreamResumeAfterFailover(t *testing.T) {
	c := newCluster(t, 3, resumableStreams)
	l := c.leader()
	fromStart := map[string]*ttldb.ChangeStream{}
	for _, tn := range c.nodes {
		if tn == l {
			continue
		}
		cs, err := tn.node.DB().Watch(context.Background(), nil, ttldb.ChangeStreamOptions{ResumeAfter: &ttldb.ResumeToken{}})
		require.NoError(t, err)
		defer cs.Close(context.Background())
		fromStart[tn.id] = cs
	}
	c.insertDoc("first") // creates the collection (op 1, not an insert event)
	lw, err := l.node.DB().Watch(context.Background(), nil)
	require.NoError(t, err)
	defer lw.Close(context.Background())

	const before, after = 20, 10
	for i := range before {
		c.insertDoc(fmt.Sprintf("a%02d", i))
	}
	const read = 12 // the watcher reads these, the rest stay unread
	got := readEvents(t, lw, read)
	token := lw.ResumeToken()
	require.Equal(t, ttldb.ResumeToken{Seq: got[read-1].ID.Seq}, token, "one event per op: the token is the next op")

	c.kill(l)
	nl := c.leader()
	// The new leader has applied every committed entry (it is ready).
	require.GreaterOrEqual(t, nl.node.Status().AppliedSeq+1, token.Seq)
	resumed, err := nl.node.DB().Watch(context.Background(), nil, ttldb.ChangeStreamOptions{ResumeAfter: &token})
	require.NoError(t, err, "the new leader's buffer holds the ops since its first")
	defer resumed.Close(context.Background())
	for i := range after {
		c.insertDoc(fmt.Sprintf("b%02d", i))
	}
	rest := readEvents(t, resumed, before-read+after)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.False(t, resumed.Next(ctx), "an event past the writes")
	got = append(got, rest...)
	for i := range got {
		if i < before {
			assert.Equal(t, fmt.Sprintf("a%02d", i), got[i].Doc)
		} else {
			assert.Equal(t, fmt.Sprintf("b%02d", i-before), got[i].Doc)
		}
	}

	var survivor *testNode
	for _, tn := range c.up() {
		if tn != nl {
			survivor = tn
		}
	}
	all := readEvents(t, fromStart[survivor.id], 1+before+after)
	assert.Equal(t, all[1:], got, "the watcher's events, resumed on another node, are the follower's from the start")

	// Status relates op numbers to raft indexes, alike on every node.
	c.converged()
	var index uint64
	for _, tn := range c.up() {
		st := tn.node.Status()
		assert.Equal(t, st.LastSeq, st.AppliedSeq, tn.id)
		assert.Equal(t, all[len(all)-1].ID.Seq-1, st.AppliedSeq, "%s: the last op applied is the last event's", tn.id)
		assert.LessOrEqual(t, st.AppliedSeqIndex, st.AppliedIndex, tn.id)
		if index == 0 {
			index = st.AppliedSeqIndex
		}
		assert.Equal(t, index, st.AppliedSeqIndex, "%s: the entry that holds the op has the same index everywhere", tn.id)
	}
	assert.NotZero(t, index)
}

// TestClusterChangeStreamNoUncommittedEvent: a write on a leader cut off
// from the quorum is applied there but never committed; a watcher on that
// node never sees it. The node rebuilds its DB (the stream ends with
// ttldb.ErrClosed), and the watcher, resumed with its token on the node's
// new DB once healed, gets the new leader's writes, the first of which
// took the failed write's sequence number: nothing skipped.
func TestClusterChangeStreamNoUncommittedEvent(t *testing.T) {
	c := newCluster(t, 3, resumableStreams)
	old := c.leader()
	c.insertDoc("first")
	oldDB := old.node.DB()
	lw, err := oldDB.Watch(context.Background(), nil)
	require.NoError(t, err)
	defer lw.Close(context.Background())
	c.insertDoc("committed")
	// Committed before the write returned: ready without waiting.
	require.True(t, lw.TryNext(context.Background()), "%v", lw.Err())
	require.Equal(t, "committed", fmt.Sprint(lw.Event().DocumentKey.Document()["_id"]))
	token := lw.ResumeToken()

	// The watcher reads on, on its own goroutine, until its stream ends.
	type result struct {
		events []seen
		err    error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var r result
		for lw.Next(ctx) {
			ev := lw.Event()
			r.events = append(r.events, seen{ID: ev.ID, Doc: fmt.Sprint(ev.DocumentKey.Document()["_id"])})
		}
		r.err = lw.Err()
		done <- r
	}()

	c.partition(old)
	lostSeq := oldDB.LastSeq() + 1
	_, err = oldDB.Collection("w").InsertOne(context.Background(), ttldb.Document{"_id": "lost"})
	require.ErrorIs(t, err, ErrNotCommitted, "the leader cannot reach a quorum")
	r := <-done
	assert.Empty(t, r.events, "the uncommitted write reached a watcher")
	assert.ErrorIs(t, r.err, ttldb.ErrClosed, "the node rebuilt its DB: the stream ends")
	assert.NotSame(t, oldDB, old.node.DB(), "rebuilt")

	nl := c.leaderBut(old)
	c.insertDoc("new1")
	c.insertDoc("new2")
	c.connectAll()
	c.converged()
	assert.Zero(t, count(t, old.node.DB(), "w", ttldb.Document{"_id": "lost"}))
	resumed, err := old.node.DB().Watch(context.Background(), nil, ttldb.ChangeStreamOptions{ResumeAfter: &token})
	require.NoError(t, err)
	defer resumed.Close(context.Background())
	got := readEvents(t, resumed, 2)
	assert.Equal(t, []seen{{ttldb.ResumeToken{Seq: lostSeq + 1}, "new1"}, {ttldb.ResumeToken{Seq: lostSeq + 2}, "new2"}}, got,
		"the new leader's first write took the lost write's number: resumed right before it")
	_ = nl
}
