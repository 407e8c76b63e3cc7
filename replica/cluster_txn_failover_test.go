package replica

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// txnHold holds the entries of one session's transactions in flight:
// the AppendEntries calls of a txnHoldTransport that carry one wait while
// the hold is set, before the call, or after it for the targets the hold
// lists (the follower stores the entry, the leader does not learn it).
type txnHold struct {
	mu      sync.Mutex
	lsid    [16]byte                    // the session held
	release chan struct{}               // nil: no hold
	after   map[raft.ServerAddress]bool // targets that get the entry, but whose reply waits
	held    chan heldCall               // each held call, as it starts waiting
}

type heldCall struct {
	target raft.ServerAddress
	lsid   [16]byte
}

// holdTxn holds the transactions of session lsid until the returned func
// is called.
func (x *txnHold) holdTxn(lsid [16]byte, after ...raft.ServerAddress) (release func()) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ch := make(chan struct{})
	x.lsid, x.release, x.after = lsid, ch, map[raft.ServerAddress]bool{}
	for _, a := range after {
		x.after[a] = true
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			x.mu.Lock()
			x.release = nil
			x.mu.Unlock()
			close(ch)
		})
	}
}

// carries reports whether args carries an entry of session lsid's
// transactions.
func carries(args *raft.AppendEntriesRequest, lsid [16]byte) bool {
	for _, l := range args.Entries {
		if l.Type != raft.LogCommand {
			continue
		}
		if _, ops, err := decodeEntry(l.Data); err == nil && !ops[0].Txn.IsZero() && ops[0].Txn.LSID == lsid {
			return true
		}
	}
	return false
}

// nextHeld waits for a held call of session lsid's transaction to want
// (any target when want is nil).
func (x *txnHold) nextHeld(t *testing.T, lsid [16]byte, want *testNode) {
	t.Helper()
	for {
		select {
		case c := <-x.held:
			if c.lsid == lsid && (want == nil || c.target == want.addr) {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no transaction's entry reached the transport")
		}
	}
}

// txnHoldTransport is an in-memory transport under a txnHold. It turns
// pipelining off, so that every entry goes through AppendEntries.
type txnHoldTransport struct {
	*raft.InmemTransport
	x *txnHold
}

func (t *txnHoldTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, errNoPipeline
}

func (t *txnHoldTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	x := t.x
	x.mu.Lock()
	release, after, lsid := x.release, x.after[target], x.lsid
	x.mu.Unlock()
	if release == nil || !carries(args, lsid) {
		return t.InmemTransport.AppendEntries(id, target, args, resp)
	}
	var err error
	if after {
		err = t.InmemTransport.AppendEntries(id, target, args, resp)
	}
	x.held <- heldCall{target, lsid}
	<-release
	if after {
		return err
	}
	return t.InmemTransport.AppendEntries(id, target, args, resp)
}

// newTxnHoldCluster is a 3-node cluster whose transports hold a
// session's transactions on request, with the counter bumpTxn increments.
func newTxnHoldCluster(t *testing.T) (*cluster, *txnHold) {
	x := &txnHold{held: make(chan heldCall, 64)}
	c := newClusterWrapped(t, 3, nil, false, testRaftConfig, func(trans *raft.InmemTransport) raft.Transport {
		return &txnHoldTransport{InmemTransport: trans, x: x}
	})
	c.insertOnLeader("counter", ttldb.Document{"_id": "c", "n": 0})
	return c, x
}

// bumpTxn is the body of transaction k: a marker document {_id: k} and
// the counter incremented. Applied twice, it fails on the marker's _id.
func bumpTxn(ctx context.Context, db *ttldb.DB, k int) error {
	if _, err := db.Collection("markers").InsertOne(ctx, ttldb.Document{"_id": k}); err != nil {
		return err
	}
	_, err := db.Collection("counter").UpdateOne(ctx, ttldb.Document{"_id": "c"}, ttldb.Document{"$inc": ttldb.Document{"n": 1}})
	return err
}

// runTxn runs transaction k with WithTransaction, in a new session of the
// leader's DB; again on the leader if a node that was no longer the
// leader refused it at its commit (nothing applied).
func (c *cluster) runTxn(k int) {
	c.t.Helper()
	ctx := context.Background()
	var err error
	for range 20 {
		db := c.leader().node.DB()
		var s *ttldb.Session
		s, err = db.StartSession()
		if err == nil {
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = s.WithTransaction(tctx, func(ctx context.Context) (any, error) { return nil, bumpTxn(ctx, db, k) })
			s.EndSession(ctx)
			cancel()
		}
		if err == nil {
			return
		}
		if !errors.Is(err, ttldb.ErrNotPrimary) && !errors.Is(err, ttldb.ErrClosed) {
			break
		}
	}
	require.NoError(c.t, err, "transaction %d", k)
}

// interruptedTxn runs transaction k on the leader and cuts the leader off
// while the transaction's entry is in flight: with keep, the entry has
// reached one follower (which then wins the election and commits it);
// without, no follower (the next leader's entries replace it). withTxn
// runs it with WithTransaction, else with StartTransaction and
// CommitTransaction. It checks how the commit fails and settles, that
// every node agrees with the settled outcome, and returns it.
func (c *cluster) interruptedTxn(t *testing.T, h *txnHold, k int, keep, withTxn bool) (committed bool) {
	t.Helper()
	ctx := context.Background()
	l := c.leader()
	db := l.node.DB()
	var keeper *testNode
	var after []raft.ServerAddress
	if keep {
		for _, tn := range c.nodes {
			if tn != l {
				keeper = tn
				break
			}
		}
		after = append(after, keeper.addr)
	}
	s, err := db.StartSession()
	require.NoError(t, err)
	defer s.EndSession(ctx)
	release := h.holdTxn(s.ID(), after...)
	defer release()

	attempts := 0
	done := make(chan error, 1)
	if withTxn {
		go func() {
			_, err := s.WithTransaction(ctx, func(sctx context.Context) (any, error) {
				attempts++
				return nil, bumpTxn(sctx, db, k)
			})
			done <- err
		}()
	} else {
		require.NoError(t, s.StartTransaction())
		require.NoError(t, bumpTxn(ttldb.NewSessionContext(ctx, s), db, k))
		attempts = 1
		go func() { done <- s.CommitTransaction(ctx) }()
	}
	h.nextHeld(t, s.ID(), keeper) // in the leader's log; with keep, in the keeper's too
	c.partition(l)
	var first error
	if !withTxn {
		select {
		case first = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the interrupted commit did not return")
		}
		require.Error(t, first)
		assert.True(t, ttldb.HasErrorLabel(first, ttldb.UnknownTransactionCommitResultLabel), "the interrupted commit's outcome is unknown: %v", first)
		assert.False(t, ttldb.HasErrorLabel(first, ttldb.TransientTransactionErrorLabel), "%v", first)
		assert.ErrorIs(t, first, ErrNotCommitted)
	}
	// The keeper's reply, held, must not reach a leader that could count
	// it: released once the old leader stepped down.
	require.Eventually(t, func() bool { return l.node.Raft().State() != raft.Leader }, 10*time.Second, time.Millisecond, "the leader cut off did not step down")
	release()

	// Cut off from the quorum, the old leader cannot know the outcome: no
	// answer, rather than a wrong one.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = l.node.ResolveCommit(short, ttldb.TxnID{LSID: s.ID(), Number: 1})
	cancel()
	require.ErrorIs(t, err, ErrCommitUnknown, "the old leader answered while cut off")
	if !withTxn {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := s.CommitTransaction(short)
		cancel()
		require.Error(t, err, "the commit settled while the old leader was cut off")
		assert.False(t, ttldb.HasErrorLabel(err, ttldb.TransientTransactionErrorLabel), "the commit settled while the old leader was cut off: %v", err)
	}

	nl := c.leaderBut(l)
	if keep {
		require.Same(t, keeper, nl, "only the keeper's log holds the entry: it wins")
	}
	require.Eventually(t, func() bool { return c.leader() == nl }, 10*time.Second, time.Millisecond, "the old leader still thinks itself ready")
	c.connectAll()

	if withTxn {
		select {
		case first = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("WithTransaction did not return")
		}
	}
	require.Equal(t, 1, attempts, "one attempt: nothing else ran transactions")
	id := ttldb.TxnID{LSID: s.ID(), Number: 1}
	settle, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	committed, err = l.node.ResolveCommit(settle, id)
	require.NoError(t, err, "the outcome is settled once the old leader hears from the new one")
	assert.Equal(t, keep, committed, "committed iff the entry reached the next leader")
	again, err := l.node.ResolveCommit(settle, id)
	require.NoError(t, err)
	assert.Equal(t, committed, again, "asked again, the same answer")

	// CommitTransaction again. The session belongs to the DB that the old
	// leader replaced when it rebuilt from the log after the failed commit;
	// the call reaches the node's ResolveCommit all the same (the
	// Replicator outlives the DB), and its answer must match.
	if !withTxn {
		err = s.CommitTransaction(settle)
		if committed {
			assert.NoError(t, err, "CommitTransaction reported not committed a commit the log holds")
		} else {
			assert.True(t, ttldb.HasErrorLabel(err, ttldb.TransientTransactionErrorLabel), "CommitTransaction reported committed a commit the log does not hold: %v", err)
		}
	}
	if withTxn {
		if first == nil {
			assert.True(t, committed, "WithTransaction reported a commit the log does not hold")
		} else {
			require.ErrorIs(t, first, ttldb.ErrClosed, "WithTransaction's retry met the DB the node replaced")
		}
	}
	_, err = nl.node.ResolveCommit(settle, id)
	require.ErrorIs(t, err, ErrCommitUnknown, "a node resolves only the transactions it proposed")

	c.converged()
	want := 0
	if committed {
		want = 1
	}
	for _, tn := range c.nodes {
		assert.Equal(t, want, count(t, tn.node.DB(), "markers", ttldb.Document{"_id": k}), "%s: transaction %d", tn.id, k)
	}
	return committed
}

// neverLoggedTxn runs transaction k on the leader whose raft refuses the
// commit's entry before appending it (the hook answers as raft does for a
// node that has just lost its leadership): the commit's outcome is
// unknown at first; ResolveCommit settles it at once, not committed.
func (c *cluster) neverLoggedTxn(t *testing.T, k int) {
	t.Helper()
	ctx := context.Background()
	l := c.leader()
	db := l.node.DB()
	s, err := db.StartSession()
	require.NoError(t, err)
	defer s.EndSession(ctx)
	require.NoError(t, s.StartTransaction())
	require.NoError(t, bumpTxn(ttldb.NewSessionContext(ctx, s), db, k))
	l.node.testCommit = func([]byte) raft.ApplyFuture { return errFuture{raft.ErrNotLeader} }
	err = s.CommitTransaction(ctx)
	l.node.testCommit = nil
	require.Error(t, err)
	assert.True(t, ttldb.HasErrorLabel(err, ttldb.UnknownTransactionCommitResultLabel), "%v", err)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	committed, err := l.node.ResolveCommit(rctx, ttldb.TxnID{LSID: s.ID(), Number: 1})
	require.NoError(t, err, "an entry never appended is settled at once")
	assert.False(t, committed)
	c.converged()
	for _, tn := range c.nodes {
		assert.Zero(t, count(t, tn.node.DB(), "markers", ttldb.Document{"_id": k}), "%s: transaction %d", tn.id, k)
	}
}

// TestClusterTxnFailover: transactions on the leader while it loses its
// leadership in the middle of a commit (its entry held in flight, then
// the leader cut off). The interrupted commit fails with
// UnknownTransactionCommitResult; the old leader does not settle it while
// cut off; once healed, Node.ResolveCommit settles it: committed when the
// entry had reached the follower that became the leader, not committed
// when it had reached no follower, or when raft never appended it.
// CommitTransaction called again agrees with it (or, the session's DB
// replaced by the rebuild, refuses with ErrClosed). Transactions not
// committed run again, in a new session of the new leader's DB, and every
// node ends with the same contents and each transaction's effect exactly
// once: one marker per transaction, a counter equal to their number. A
// node answers only for the transactions it proposed. One round by
// default; more under TTLDB_SOAK.
func TestClusterTxnFailover(t *testing.T) {
	c, h := newTxnHoldCluster(t)
	k := 0
	run := func() {
		c.runTxn(k)
		k++
	}
	rounds := bySoak(1, 3, 10)
	var outcomes [2]int // not committed, committed
	for round := range rounds {
		run()
		run()
		for _, keep := range []bool{true, false} {
			withTxn := keep == (round%2 == 1)
			committed := c.interruptedTxn(t, h, k, keep, withTxn)
			if !committed {
				c.runTxn(k) // again, in a new session of the new leader's DB
				outcomes[0]++
			} else {
				outcomes[1]++
			}
			k++
			run()
		}
		c.neverLoggedTxn(t, k)
		c.runTxn(k)
		k++
	}
	assert.Equal(t, [2]int{rounds, rounds}, outcomes)

	c.converged()
	for _, tn := range c.nodes {
		db := tn.node.DB()
		var counter struct{ N int }
		require.NoError(t, db.Collection("counter").FindOne(context.Background(), ttldb.Document{"_id": "c"}).Decode(&counter), tn.id)
		assert.Equal(t, k, counter.N, "%s: the counter counts each transaction once", tn.id)
		assert.Equal(t, k, count(t, db, "markers", ttldb.Document{}), tn.id)
		for i := range k {
			assert.Equal(t, 1, count(t, db, "markers", ttldb.Document{"_id": i}), "%s: transaction %d", tn.id, i)
		}
	}
}

// TestClusterTxnResolveInsideSnapshot: the old leader's transaction is
// committed by the next leader, which then takes a snapshot and drops the
// log before it; healed, the old leader installs that snapshot, whose DB
// does not know the transactions inside it (DB.TransactionCommitted):
// ResolveCommit answers that it cannot tell, rather than "not committed".
func TestClusterTxnResolveInsideSnapshot(t *testing.T) {
	c, h := newTxnHoldCluster(t)
	ctx := context.Background()
	l := c.leader()
	db := l.node.DB()
	var keeper *testNode
	for _, tn := range c.nodes {
		if tn != l {
			keeper = tn
			break
		}
	}
	s, err := db.StartSession()
	require.NoError(t, err)
	defer s.EndSession(ctx)
	release := h.holdTxn(s.ID(), keeper.addr)
	defer release()
	require.NoError(t, s.StartTransaction())
	require.NoError(t, bumpTxn(ttldb.NewSessionContext(ctx, s), db, 0))
	done := make(chan error, 1)
	go func() { done <- s.CommitTransaction(ctx) }()
	h.nextHeld(t, s.ID(), keeper)
	c.partition(l)
	require.True(t, ttldb.HasErrorLabel(<-done, ttldb.UnknownTransactionCommitResultLabel))
	release()
	require.Same(t, keeper, c.leaderBut(l))
	require.Eventually(t, func() bool { return c.leader() == keeper }, 10*time.Second, time.Millisecond)

	// The next leader committed the entry; 40 more entries, a snapshot,
	// and the log before it dropped (TrailingLogs is 16).
	for i := range 20 {
		c.insertOnLeader("other", ttldb.Document{"_id": i})
	}
	require.NoError(t, keeper.node.Raft().Snapshot().Error())
	for i := 20; i < 40; i++ {
		c.insertOnLeader("other", ttldb.Document{"_id": i})
	}
	c.connectAll()
	c.converged()
	assert.Equal(t, 1, count(t, l.node.DB(), "markers", ttldb.Document{"_id": 0}), "committed, and on the old leader")
	l.node.fsm.mu.Lock()
	base := l.node.fsm.baseSeq
	l.node.fsm.mu.Unlock()
	require.Positive(t, base, "the old leader installed the snapshot")

	id := ttldb.TxnID{LSID: s.ID(), Number: 1}
	assert.False(t, l.node.DB().TransactionCommitted(id), "the restored DB does not know the transactions inside its snapshot")
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	committed, err := l.node.ResolveCommit(rctx, id)
	require.ErrorIs(t, err, ErrCommitUnknown, "answered %v for an entry inside the snapshot", committed)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "settled, though not knowable: answered at once")
}

// TestTxnCommitsBounded: a node remembers the entries of its last 4096
// transactions, forgetting the oldest first.
func TestTxnCommitsBounded(t *testing.T) {
	var m txnCommits
	id := func(i int) ttldb.TxnID { return ttldb.TxnID{LSID: [16]byte{1}, Number: int64(i)} }
	for i := range txnCommitsKept + 10 {
		m.remember(id(i), uint64(i+1), uint64(i+1), errFuture{raft.ErrNotLeader})
	}
	assert.Len(t, m.byID, txnCommitsKept)
	for i := range 10 {
		assert.Nil(t, m.get(id(i)), "transaction %d is among the oldest", i)
	}
	for _, i := range []int{10, 11, txnCommitsKept, txnCommitsKept + 9} {
		c := m.get(id(i))
		require.NotNil(t, c, "transaction %d", i)
		<-c.done
		assert.Zero(t, c.index)
	}
}
