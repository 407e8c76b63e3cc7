package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// holdTransport is an in-memory transport whose AppendEntries calls that
// carry a proposed TTL batch (an entryProposal entry) wait while a hold is
// set: before the call (the follower does not get the entry) or after it
// (the follower stores the entry, the leader does not learn it). It turns
// pipelining off, so that every entry goes through AppendEntries.
type holdTransport struct {
	*raft.InmemTransport
	h *holds
}

// holds is the hold of a cluster's transports.
type holds struct {
	mu      sync.Mutex
	release chan struct{}               // nil: no hold
	after   map[raft.ServerAddress]bool // targets that get the entry, but whose reply waits
	held    chan raft.ServerAddress     // each held call, as it starts waiting
}

// next returns the target of the next held call, failing the test if none
// comes within 10 s (no TTL batch was proposed first).
func (h *holds) next(t *testing.T) raft.ServerAddress {
	t.Helper()
	select {
	case a := <-h.held:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no proposed TTL batch reached the transport")
		return ""
	}
}

func newHolds() *holds { return &holds{held: make(chan raft.ServerAddress, 64)} }

func (h *holds) wrap(trans *raft.InmemTransport) raft.Transport {
	return &holdTransport{InmemTransport: trans, h: h}
}

// hold makes proposal entries wait until the returned func is called;
// after lists the targets that receive them before waiting.
func (h *holds) hold(after ...raft.ServerAddress) (release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := make(chan struct{})
	h.release, h.after = ch, map[raft.ServerAddress]bool{}
	for _, a := range after {
		h.after[a] = true
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			h.release = nil
			h.mu.Unlock()
			close(ch)
		})
	}
}

func (t *holdTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, errNoPipeline
}

func (t *holdTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	t.h.mu.Lock()
	release, after := t.h.release, t.h.after[target]
	t.h.mu.Unlock()
	if release == nil || !carriesProposal(args) {
		return t.InmemTransport.AppendEntries(id, target, args, resp)
	}
	var err error
	if after {
		err = t.InmemTransport.AppendEntries(id, target, args, resp)
	}
	t.h.held <- target
	<-release
	if after {
		return err
	}
	return t.InmemTransport.AppendEntries(id, target, args, resp)
}

// errNoPipeline makes raft replicate without a pipeline.
var errNoPipeline = errors.New("no pipelining through a hold")

func carriesProposal(args *raft.AppendEntriesRequest) bool {
	for _, l := range args.Entries {
		if l.Type == raft.LogCommand && len(l.Data) > 0 && l.Data[0] == entryProposal {
			return true
		}
	}
	return false
}

// newHeldCluster is a 3-node cluster whose transports hold proposed TTL
// batches on request, with nExpired expired documents in collection s.
func newHeldCluster(t *testing.T, nExpired int, optsFor func(id string) []ttldb.Option) (*cluster, *holds) {
	h := newHolds()
	c := newClusterWrapped(t, 3, optsFor, false, testRaftConfig, h.wrap)
	ttlIndex(t, c.leader().node.DB(), "s")
	var docs []any
	for i := range nExpired {
		docs = append(docs, ttldb.Document{"_id": i, "at": c.clk.Now()})
	}
	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.Collection("s").InsertMany(context.Background(), docs)
		return err
	})
	c.converged()
	c.clk.Advance(2 * time.Minute)
	return c, h
}

// TestClusterProposalFirst: while the entry of the leader's TTL batch is
// held (not committed), every replica, the leader included, still holds
// every document, and a write on the leader waits; once it commits, the
// batch is deleted on every node, the write follows it in the log on
// every node, and the replicas are identical.
func TestClusterProposalFirst(t *testing.T) {
	c, h := newHeldCluster(t, 50, nil)
	l := c.leader()
	seq := l.node.DB().LastSeq()
	release := h.hold()
	defer release()
	passErr := passInBackground(l.node.DB())
	h.next(t) // the batch's entry is in the leader's log, not replicated
	for _, tn := range c.nodes {
		assert.Equal(t, 50, count(t, tn.node.DB(), "s", ttldb.Document{}), "%s deleted before the batch committed", tn.id)
	}
	assert.Equal(t, seq, l.node.DB().LastSeq(), "LastSeq answers during a proposal and has not moved")
	wrote := make(chan error, 1)
	go func() {
		// An update of a document in the batch: it must wait for the
		// batch, and then finds it deleted.
		res, err := l.node.DB().Collection("s").UpdateOne(context.Background(), ttldb.Document{"_id": 7}, ttldb.Document{"$set": ttldb.Document{"x": 1}})
		if err == nil && res.MatchedCount != 0 {
			err = fmt.Errorf("the update matched %d documents after the batch", res.MatchedCount)
		}
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("a write on the leader ran during the batch's proposal: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	require.NoError(t, <-passErr)
	require.NoError(t, <-wrote)
	c.converged()
	for _, tn := range c.nodes {
		assert.Zero(t, count(t, tn.node.DB(), "s", ttldb.Document{}), tn.id)
		assert.Equal(t, seq+1, tn.node.DB().LastSeq(), "%s: one op for the batch (the update matched nothing)", tn.id)
	}
}

// TestClusterProposalFails: the leader is cut off while its batch's entry
// is held; the proposal fails, the deposed leader deleted nothing (and
// did not rebuild its DB), the next leader expires the documents, and
// the old leader, healed, applies that leader's batch from the log.
func TestClusterProposalFails(t *testing.T) {
	c, h := newHeldCluster(t, 30, nil)
	old := c.leader()
	oldDB := old.node.DB()
	seq := oldDB.LastSeq()
	release := h.hold()
	defer release()
	passErr := passInBackground(oldDB)
	h.next(t)
	c.partition(old)
	err := <-passErr
	require.ErrorIs(t, err, ttldb.ErrNotPrimary, "the batch was not committed")
	assert.Equal(t, 30, count(t, oldDB, "s", ttldb.Document{}), "the deposed leader deleted nothing")
	assert.Equal(t, seq, oldDB.LastSeq(), "the reserved sequence number is not used")
	release()

	nl := c.leaderBut(old)
	require.Eventually(t, func() bool { return c.leader() == nl }, 10*time.Second, time.Millisecond, "the deposed leader still thinks itself ready")
	c.passOnLeader()
	assert.Zero(t, count(t, nl.node.DB(), "s", ttldb.Document{}))
	c.connectAll()
	c.converged()
	assert.Same(t, oldDB, old.node.DB(), "the deposed leader had nothing to undo: no rebuild")
	for _, tn := range c.nodes {
		assert.Zero(t, count(t, tn.node.DB(), "s", ttldb.Document{}), tn.id)
	}
}

// TestClusterProposalCommitsAfterStepDown: the leader's batch reaches one
// follower, then the leader is cut off before it learns of the commit: its
// proposal fails and it deletes nothing; the follower that holds the entry
// becomes the leader and commits it (its state machine applies it as any
// entry), and the old leader, healed, applies it from the log as a
// follower, with the sequence number it had reserved and not used.
func TestClusterProposalCommitsAfterStepDown(t *testing.T) {
	var observed sync.Map // node id → documents its observers saw deleted
	c, h := newHeldCluster(t, 20, func(id string) []ttldb.Option {
		return []ttldb.Option{ttldb.WithDeleteObserver(func(ev ttldb.DeleteEvent) {
			n, _ := observed.LoadOrStore(id, new(atomic.Int64))
			n.(*atomic.Int64).Add(int64(len(ev.IDs)))
		})}
	})
	old := c.leader()
	oldDB := old.node.DB()
	seq := oldDB.LastSeq()
	var keeper *testNode // the follower that gets the entry
	for _, tn := range c.nodes {
		if tn != old {
			keeper = tn
			break
		}
	}
	release := h.hold(keeper.addr)
	defer release()
	passErr := passInBackground(oldDB)
	for got := map[raft.ServerAddress]bool{}; !got[keeper.addr]; {
		got[h.next(t)] = true // the keeper stored the entry
	}
	c.partition(old)
	require.ErrorIs(t, <-passErr, ttldb.ErrNotPrimary)
	assert.Equal(t, 20, count(t, oldDB, "s", ttldb.Document{}), "the deposed leader deleted nothing")
	assert.Equal(t, seq, oldDB.LastSeq())
	release()

	// Only the keeper's log is up to date enough to win the election; its
	// Barrier commits and applies the old leader's batch.
	nl := c.leaderBut(old)
	require.Same(t, keeper, nl)
	require.Eventually(t, func() bool { return c.leader() == nl }, 10*time.Second, time.Millisecond, "the deposed leader still thinks itself ready")
	assert.Zero(t, count(t, nl.node.DB(), "s", ttldb.Document{}), "the old leader's batch committed under the new one")
	assert.Equal(t, seq+1, nl.node.DB().LastSeq())
	c.connectAll()
	c.converged()
	assert.Same(t, oldDB, old.node.DB(), "the old leader applied the entry as a follower, without a rebuild")
	for _, tn := range c.nodes {
		assert.Zero(t, count(t, tn.node.DB(), "s", ttldb.Document{}), tn.id)
		assert.Equal(t, seq+1, tn.node.DB().LastSeq(), tn.id)
		n, ok := observed.Load(tn.id)
		require.True(t, ok, "%s's observers saw no deletion", tn.id)
		assert.EqualValues(t, 20, n.(*atomic.Int64).Load(), "%s: each document deleted once", tn.id)
	}
}

// TestClusterProposalNotLeader: a batch on a node that is not the leader
// is refused before anything is chosen or proposed.
func TestClusterProposalNotLeader(t *testing.T) {
	c, _ := newHeldCluster(t, 5, nil)
	l := c.leader()
	for _, tn := range c.nodes {
		if tn == l {
			continue
		}
		_, err := tn.node.DB().RunTTLPass(context.Background())
		require.Error(t, err)
		assert.True(t, errors.Is(err, ttldb.ErrNotPrimary), "%v", err)
		assert.Equal(t, 5, count(t, tn.node.DB(), "s", ttldb.Document{}))
	}
}
