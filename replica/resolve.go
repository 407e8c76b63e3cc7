package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/ttldb/ttldb"
)

// ErrCommitUnknown is returned by ResolveCommit when it cannot tell
// whether a transaction's entry was committed: not yet decided within
// the context, not proposed by this node (or too long ago), or decided
// where this node's DB cannot see it. CommitTransaction then keeps its
// UnknownTransactionCommitResult label.
var ErrCommitUnknown = errors.New("replica: outcome of the transaction's commit not known here")

// txnCommitsKept is how many of its transactions' entries a node
// remembers for ResolveCommit: the oldest are forgotten first.
const txnCommitsKept = 1 << 12

// txnRemembered is how many transactions DB.TransactionCommitted
// remembers (its documentation: the last 65536).
const txnRemembered = 1 << 16

// resolvePoll is how often ResolveCommit looks at raft's commit index
// while it waits (raft does not signal it; the state machine's progress
// wakes it at once).
const resolvePoll = 5 * time.Millisecond

// txnCommit is the entry of one transaction's commit, as proposed, and
// the future of it that End and ResolveCommit wait for: a goroutine
// waits for raft's future (whose Error must not be called by two
// goroutines at once) and keeps only its outcome.
type txnCommit struct {
	first, last uint64        // the Seq of its first and last op
	done        chan struct{} // closed once raft resolved its future
	// Set before done is closed: raft's error and response, the raft
	// index the entry was appended at (0: never appended), and whether
	// raft shut down (then index is not read: the future may have given
	// up waiting).
	err      error
	resp     any
	index    uint64
	shutdown bool
}

// Error, Response and Index make a txnCommit a raft.ApplyFuture.
func (c *txnCommit) Error() error  { <-c.done; return c.err }
func (c *txnCommit) Response() any { <-c.done; return c.resp }
func (c *txnCommit) Index() uint64 { <-c.done; return c.index }

// txnCommits is a node's bounded memory of txnCommit, by transaction.
type txnCommits struct {
	mu    sync.Mutex
	byID  map[ttldb.TxnID]*txnCommit
	order []ttldb.TxnID // a ring of the ids in byID, oldest at next once full
	next  int
}

// remember records the entry of transaction id (ops first..last),
// proposed with future f, and returns the future to wait for in f's
// place. A goroutine waits for f (raft resolves every future: committed,
// failed, or at its shutdown), so that only its outcome is kept.
func (m *txnCommits) remember(id ttldb.TxnID, first, last uint64, f raft.ApplyFuture) *txnCommit {
	c := &txnCommit{first: first, last: last, done: make(chan struct{})}
	go func() {
		err := f.Error()
		c.err = err
		if c.shutdown = errors.Is(err, raft.ErrRaftShutdown); !c.shutdown {
			c.index = f.Index() // valid once Error returned
			c.resp = f.Response()
		}
		close(c.done)
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = make(map[ttldb.TxnID]*txnCommit)
	}
	if _, ok := m.byID[id]; ok {
		m.byID[id] = c // one commit per transaction: not expected
		return c
	}
	if len(m.order) < txnCommitsKept {
		m.order = append(m.order, id)
	} else {
		delete(m.byID, m.order[m.next])
		m.order[m.next] = id
		m.next = (m.next + 1) % txnCommitsKept
	}
	m.byID[id] = c
	return c
}

func (m *txnCommits) get(id ttldb.TxnID) *txnCommit {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID[id]
}

// ResolveCommit implements ttldb.CommitResolver: it reports whether the
// entry of transaction id, which this node proposed as the leader
// (Commit), was committed by the cluster, once the log decided it and
// this node knows it. It waits, within ctx, until raft resolved the
// entry's future; an entry never appended to the log (leadership lost
// before raft took it) is not committed. Otherwise it waits until the
// outcome of the entry's raft index is settled on this node, and any
// rebuild of the DB with it:
//
//   - the state machine has applied the op the entry would end with, or
//     an entry at or after its index: the ops at the entry's place in
//     history are settled, and the DB that follows the log (node.DB())
//     says whether it applied the transaction (DB.TransactionCommitted);
//   - or raft's commit index reached the entry's index and this node's
//     log holds another entry there: the transaction's entry lost to
//     another leader's, and can never commit (an entry keeps its index).
//
// It prefers an error wrapping ErrCommitUnknown to a wrong answer: while
// undecided within ctx (a leader cut off from the quorum knows nothing
// until it hears from the new leader), for a transaction this node did
// not propose (or proposed more than 4096 transactions ago), after the
// node closed, and where the DB cannot know. DB.TransactionCommitted
// knows the transactions a DB applied itself, not those inside the
// snapshot it was restored from: if the DB's starting snapshot (raft's
// snapshot installed or restored, or the one a rebuild started from) is
// as of an op at or after the entry's first op, the entry's place in
// history lies inside it, and ResolveCommit answers only from the log
// (another entry at its index: not committed), never from the DB. It
// also answers "unknown" rather than "not committed" when so many ops
// followed the entry that the DB may have forgotten the transaction
// (DB.TransactionCommitted remembers the last 65536), and when the log
// no longer holds the entry's index (compacted) before the state machine
// showed the outcome.
func (n *Node) ResolveCommit(ctx context.Context, id ttldb.TxnID) (committed bool, err error) {
	c := n.txns.get(id)
	if c == nil {
		return false, fmt.Errorf("%w: transaction %d of session %x was not proposed by this node (or too long ago)", ErrCommitUnknown, id.Number, id.LSID)
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return false, fmt.Errorf("%w: waiting for raft: %w", ErrCommitUnknown, ctx.Err())
	case <-n.stop:
		return false, fmt.Errorf("%w: the node is closed", ErrCommitUnknown)
	}
	switch {
	case c.shutdown:
		return false, fmt.Errorf("%w: raft shut down: %w", ErrCommitUnknown, c.err)
	case c.index == 0 && c.err != nil:
		return false, nil // never appended to the log
	}
	var tick *time.Ticker
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	inLog := false // the committed entry at c.index is the transaction's
	for {
		o := n.fsm.txnOutcome(id, c)
		if o.decided {
			return o.committed, o.err
		}
		if inLog && o.inSnapshot {
			return false, fmt.Errorf("%w: committed at index %d, inside the snapshot the DB was restored from", ErrCommitUnknown, c.index)
		}
		if !o.diverged && n.raft.CommitIndex() >= c.index && !inLog {
			// The entry at c.index in this node's log is the committed
			// one now (a follower's log matches the leader's up to its
			// commit index).
			ours, err := n.logHolds(c.index, id)
			switch {
			case err != nil:
				return false, fmt.Errorf("%w: entry %d: %w", ErrCommitUnknown, c.index, err)
			case !ours:
				return false, nil
			case o.inSnapshot:
				return false, fmt.Errorf("%w: committed at index %d, inside the snapshot the DB was restored from", ErrCommitUnknown, c.index)
			}
			inLog = true // committed: wait until the state machine applies it
		}
		if tick == nil {
			tick = time.NewTicker(resolvePoll)
		}
		select {
		case <-o.changed:
		case <-tick.C:
		case <-ctx.Done():
			return false, fmt.Errorf("%w: entry %d not settled here: %w", ErrCommitUnknown, c.index, ctx.Err())
		case <-n.stop:
			return false, fmt.Errorf("%w: the node is closed", ErrCommitUnknown)
		}
	}
}

// logHolds reports whether the entry at index in this node's log holds
// transaction id's ops.
func (n *Node) logHolds(index uint64, id ttldb.TxnID) (bool, error) {
	var l raft.Log
	if err := n.logs.GetLog(index, &l); err != nil {
		return false, err
	}
	if l.Type != raft.LogCommand {
		return false, nil
	}
	_, ops, err := decodeEntry(l.Data)
	if err != nil {
		return false, nil // not an entry of a write: not the transaction's
	}
	return ops[0].Txn == id, nil
}

// txnResult is what the state machine says of a transaction's entry.
type txnResult struct {
	decided, committed bool
	err                error
	diverged           bool          // a rebuild is pending
	inSnapshot         bool          // the DB cannot know (restored from a snapshot after the entry's first op)
	changed            chan struct{} // closed at the state machine's next change
}

// txnOutcome settles c, the entry of transaction id, if the state machine
// has gone past its place in history (see ResolveCommit).
func (f *fsm) txnOutcome(id ttldb.TxnID, c *txnCommit) txnResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	var r txnResult
	if f.diverged.Load() {
		r.diverged = true
	} else if f.baseSeq >= c.first {
		r.inSnapshot = true
	} else if f.appliedSeq >= c.last || f.lastIndex >= c.index {
		// Settled: if the entry was applied, it was applied to this DB
		// (a rebuild replays the log after the snapshot, and the DB
		// notes a transaction however it applied it).
		db := f.db.Load()
		r.decided, r.committed = true, db.TransactionCommitted(id)
		if last := db.LastSeq(); !r.committed && last > c.last && last-c.last >= txnRemembered {
			r.err = fmt.Errorf("%w: %d ops since, the DB may have forgotten the transaction", ErrCommitUnknown, last-c.last)
		}
		return r
	}
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	r.changed = f.changed
	return r
}

// notifyChanged wakes the ResolveCommit calls waiting for the state
// machine. Call holding mu.
func (f *fsm) notifyChanged() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

var _ raft.ApplyFuture = (*txnCommit)(nil)
