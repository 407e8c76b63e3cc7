package replica

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/ttldb/ttldb"
)

// ErrNotCommitted is returned by a write on the leader whose ops could not
// be replicated (leadership lost, the node shut down): the write was
// applied on this node but may or may not be in the cluster's log. The
// node then rebuilds its DB from the log (see Node); retry the write on
// the leader, making it idempotent if it matters.
var ErrNotCommitted = errors.New("replica: write not known to be committed")

// NotLeaderError is returned by a write, and by a linearizable read, on a
// node that is not the leader (or not yet ready as one: it applies every
// earlier entry first). It matches ttldb.ErrNotPrimary with errors.Is.
// LeaderAddress is the leader's raft address as this node knows it (empty
// when there is none, during an election).
type NotLeaderError struct {
	LeaderID      string
	LeaderAddress string
}

// Error names the leader, when known.
func (e *NotLeaderError) Error() string {
	if e.LeaderAddress == "" {
		return "replica: not the leader (no leader known)"
	}
	return fmt.Sprintf("replica: not the leader; the leader is %s at %s", e.LeaderID, e.LeaderAddress)
}

// Unwrap makes errors.Is(err, ttldb.ErrNotPrimary) match.
func (e *NotLeaderError) Unwrap() error { return ttldb.ErrNotPrimary }

// Config configures a Node. ID and Transport are required.
type Config struct {
	// ID is the node's raft server ID, unique in the cluster.
	ID string
	// Transport carries raft's RPCs: NewTLSTransport for a real cluster,
	// raft.NewInmemTransport for tests.
	Transport raft.Transport

	// Dir holds the node's raft state: raft.db (the log and stable store,
	// in go.etcd.io/bbolt, laid out as hashicorp/raft-boltdb lays it out)
	// and snapshots/. It is created (0700) if missing. One node per Dir:
	// a second is refused (ttldb.ErrInvalidOptions). Empty: everything
	// in memory (tests), unless the stores below are given.
	Dir string
	// LogStore, StableStore and SnapshotStore override the stores Dir
	// implies (all three or none).
	LogStore      raft.LogStore
	StableStore   raft.StableStore
	SnapshotStore raft.SnapshotStore

	// Raft is raft's configuration (nil: raft.DefaultConfig()); LocalID is
	// set from ID, and NotifyCh is the node's.
	Raft *raft.Config
	// DBOptions open the node's DB (a clock, the monitor's options, expire
	// hooks…). The node adds WithReplicator and WithPrimary: only the
	// leader's monitor runs passes. A cluster whose change streams must
	// resume on another node (after a failover) adds
	// ttldb.WithChangeStreamBuffer with AttachAtOpen, so that every
	// node's buffer holds the ops from its first (see the README).
	DBOptions []ttldb.Option
	// Logger receives the node's log (leadership changes, rebuilds).
	// Default: none.
	Logger *slog.Logger
}

// Node is one member of a replicated ttldb: a DB whose every write goes
// through the raft log. Writes are accepted on the leader only (others
// return a *NotLeaderError); they are applied on the leader, proposed, and
// return once committed and applied by the leader's state machine.
// Followers apply the committed ops with DB.Apply. Only the leader's TTL
// monitor runs, and each batch it chooses is one log entry (an
// ttldb.OpExpire) proposed before anything is deleted: every node, the
// leader included, deletes it once committed, with the same re-check
// (ProposeExpire).
//
// Reads are local (DB(): possibly stale on a follower) or linearizable
// (ReadLinearizable, on the leader). A Node's methods are safe for
// concurrent use.
type Node struct {
	cfg    Config
	raft   *raft.Raft
	fsm    *fsm
	logs   raft.LogStore
	snaps  raft.SnapshotStore
	bolt   *boltStore
	logger *slog.Logger

	notify chan bool
	stop   chan struct{}
	done   chan struct{} // watchLeadership has returned
	share  chan struct{} // a proposed TTL batch committed: tell the followers (shareCommits)
	shared chan struct{} // shareCommits has returned

	mu       sync.Mutex
	cond     *sync.Cond
	ready    bool // leader, and every earlier entry applied (Barrier)
	inflight int  // writes between Begin and End
	gate     bool // a snapshot or linearizable read holds writes back
	lastFut  raft.ApplyFuture
	primary  atomic.Bool // ready and not diverged: the DB's monitor may run

	// pending is the TTL batch proposed first (ProposeExpire) whose
	// outcome is not known yet, if any; proposals numbers them.
	pending   atomic.Pointer[proposal]
	proposals atomic.Uint64

	// txns remembers the entries of the transactions this node proposed
	// (Commit), for ResolveCommit.
	txns txnCommits

	// Test hooks, nil outside tests (set before the node proposes):
	// testSubmit replaces raft.Apply for a proposed TTL batch's entry;
	// testProposed sees each ProposeExpire's result; testCommit replaces
	// raft.Apply for a write's entry.
	testSubmit   func(data []byte) raft.ApplyFuture
	testProposed func(err error)
	testCommit   func(data []byte) raft.ApplyFuture

	closeOnce sync.Once
}

// Open starts a node: it opens the stores, the DB and raft. A new
// cluster's first node then calls Bootstrap; others are added by the
// leader (Join). A node restarted with the same Dir recovers its state
// from its snapshot and log.
func Open(cfg Config) (*Node, error) {
	if cfg.ID == "" || cfg.Transport == nil {
		return nil, fmt.Errorf("%w: replica.Config needs ID and Transport", ttldb.ErrInvalidOptions)
	}
	given := cfg.LogStore != nil || cfg.StableStore != nil || cfg.SnapshotStore != nil
	if given && (cfg.LogStore == nil || cfg.StableStore == nil || cfg.SnapshotStore == nil) {
		return nil, fmt.Errorf("%w: replica.Config: give all three stores or none", ttldb.ErrInvalidOptions)
	}
	n := &Node{cfg: cfg, notify: make(chan bool, 16), stop: make(chan struct{}), done: make(chan struct{}), logger: cfg.Logger,
		share: make(chan struct{}, 1), shared: make(chan struct{})}
	if n.logger == nil {
		n.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n.cond = sync.NewCond(&n.mu)
	var stable raft.StableStore
	switch {
	case given:
		n.logs, stable, n.snaps = cfg.LogStore, cfg.StableStore, cfg.SnapshotStore
	case cfg.Dir != "":
		if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
			return nil, err
		}
		b, err := openBoltStore(filepath.Join(cfg.Dir, "raft.db"))
		if err != nil {
			return nil, err
		}
		snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "snapshots"), 2, hclog.NewNullLogger())
		if err != nil {
			b.Close()
			return nil, err
		}
		n.bolt, n.logs, stable, n.snaps = b, b, b, snaps
	default:
		m := raft.NewInmemStore()
		n.logs, stable, n.snaps = m, m, raft.NewInmemSnapshotStore()
	}
	n.fsm = &fsm{node: n}
	db, err := n.openDB(nil)
	if err != nil {
		n.closeStores()
		return nil, err
	}
	n.fsm.db.Store(db)
	n.fsm.newEpoch()

	rc := raft.DefaultConfig()
	if cfg.Raft != nil {
		c := *cfg.Raft
		rc = &c
	}
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.NotifyCh = n.notify
	if rc.Logger == nil && rc.LogOutput == nil {
		rc.Logger = hclog.NewNullLogger()
	}
	r, err := raft.NewRaft(rc, n.fsm, n.logs, stable, n.snaps, cfg.Transport)
	if err != nil {
		db.Close()
		n.closeStores()
		return nil, err
	}
	n.raft = r
	go n.watchLeadership()
	go n.shareCommits()
	return n, nil
}

// openDB opens a DB for the node, from a Backup when restore is not nil.
func (n *Node) openDB(restore io.Reader) (*ttldb.DB, error) {
	opts := append([]ttldb.Option{}, n.cfg.DBOptions...)
	opts = append(opts, ttldb.WithReplicator(n), ttldb.WithPrimary(n.primary.Load))
	if restore != nil {
		opts = append(opts, ttldb.WithRestore(restore))
	}
	return ttldb.Open(opts...)
}

func (n *Node) closeStores() {
	if n.bolt != nil {
		n.bolt.Close()
	}
}

// DB returns the node's DB, for reads (local: a follower's may be stale)
// and for writes (on the leader). The DB is replaced when the node
// installs a snapshot or rebuilds its state: call DB() for each use rather
// than keeping the value (a replaced DB is closed: its calls fail with
// ttldb.ErrClosed).
func (n *Node) DB() *ttldb.DB { return n.fsm.db.Load() }

// Raft returns the node's raft instance, for what this package does not
// wrap (stats, observers). Do not Apply to it directly.
func (n *Node) Raft() *raft.Raft { return n.raft }

// Server names a cluster member.
type Server struct {
	ID      string
	Address string
}

// Bootstrap makes a new cluster of servers (which must include this node)
// from this node. Call it once, on one node, for a cluster that has never
// run; a node with state refuses it (raft.ErrCantBootstrap).
func (n *Node) Bootstrap(servers ...Server) error {
	c := raft.Configuration{}
	for _, s := range servers {
		c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.Address), Suffrage: raft.Voter})
	}
	return n.raft.BootstrapCluster(c).Error()
}

// Join adds a voting member (on the leader; elsewhere a *NotLeaderError).
// It returns once the configuration change is committed; the new node then
// catches up from the log or a snapshot.
func (n *Node) Join(id, address string) error {
	if err := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(address), 0, 0).Error(); err != nil {
		return n.leaderError(err)
	}
	return nil
}

// Remove removes a member (on the leader).
func (n *Node) Remove(id string) error {
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, 0).Error(); err != nil {
		return n.leaderError(err)
	}
	return nil
}

// leaderError turns raft's not-leader errors into a *NotLeaderError.
func (n *Node) leaderError(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return n.notLeader()
	}
	return err
}

func (n *Node) notLeader() error {
	addr, id := n.raft.LeaderWithID()
	return &NotLeaderError{LeaderID: string(id), LeaderAddress: string(addr)}
}

// Status is a node's view of the cluster.
type Status struct {
	ID            string
	State         string // "Leader", "Follower", "Candidate", "Shutdown"
	LeaderID      string
	LeaderAddress string
	Term          uint64
	LastIndex     uint64 // the last entry in the node's log
	CommitIndex   uint64 // the last entry known committed
	AppliedIndex  uint64 // the last entry applied to the DB
	// ApplyLag is CommitIndex - AppliedIndex: entries committed but not
	// yet applied here (how far the node's reads trail the cluster).
	ApplyLag uint64
	// LastSeq is the DB's last op sequence number: on the leader it
	// counts writes whose entries are not committed yet.
	LastSeq uint64
	// AppliedSeq is the Seq of the last op the state machine applied
	// (committed, on every node the same op): change streams deliver ops
	// up to it, and a resume token {Seq: s} can resume here once
	// AppliedSeq >= s-1.
	AppliedSeq uint64
	// AppliedSeqIndex is the raft index of the log entry that holds op
	// AppliedSeq (the same on every node), relating op numbers to raft
	// indexes: an entry holds one or more ops, and raft's own entries
	// (configuration, no-op, barrier) hold none. 0 when the node holds
	// that op from a snapshot, until it applies the next entry.
	AppliedSeqIndex uint64
	Members         []Server
}

// Status reports the node's state. It costs a few raft calls.
func (n *Node) Status() Status {
	addr, id := n.raft.LeaderWithID()
	st := Status{
		ID:            n.cfg.ID,
		State:         n.raft.State().String(),
		LeaderID:      string(id),
		LeaderAddress: string(addr),
		Term:          n.raft.CurrentTerm(),
		LastIndex:     n.raft.LastIndex(),
		CommitIndex:   n.raft.CommitIndex(),
		AppliedIndex:  n.raft.AppliedIndex(),
		LastSeq:       n.DB().LastSeq(),
	}
	st.AppliedSeq, st.AppliedSeqIndex = n.fsm.position()
	if st.CommitIndex > st.AppliedIndex {
		st.ApplyLag = st.CommitIndex - st.AppliedIndex
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			st.Members = append(st.Members, Server{ID: string(s.ID), Address: string(s.Address)})
		}
	}
	return st
}

// Metrics are the DB's metrics with the node's replication figures.
type Metrics struct {
	ttldb.Metrics
	Replication Status
}

// Metrics returns the DB's metrics and the node's Status.
func (n *Node) Metrics() Metrics {
	return Metrics{Metrics: n.DB().Metrics(), Replication: n.Status()}
}

// ReadLinearizable runs read on the leader's DB such that it sees every
// write acknowledged before ReadLinearizable was called, and no write
// that is not committed: the leader confirms its leadership with a quorum
// (VerifyLeader: one round trip), and writes wait while read runs. On a
// follower it returns a *NotLeaderError. read must not write.
func (n *Node) ReadLinearizable(read func(db *ttldb.DB) error) error {
	if err := n.holdWrites(); err != nil {
		return err
	}
	defer n.releaseWrites()
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return n.leaderError(err)
	}
	return read(n.DB())
}

// holdWrites waits until no write is in flight on the leader and keeps
// new ones waiting, until releaseWrites.
func (n *Node) holdWrites() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for n.gate || n.inflight > 0 {
		if !n.ready {
			return n.notLeader()
		}
		n.cond.Wait()
	}
	if !n.ready {
		return n.notLeader()
	}
	n.gate = true
	return nil
}

func (n *Node) releaseWrites() {
	n.mu.Lock()
	n.gate = false
	n.cond.Broadcast()
	n.mu.Unlock()
}

// Begin implements ttldb.Replicator: only the ready leader writes.
func (n *Node) Begin() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for n.gate && n.ready {
		n.cond.Wait()
	}
	if !n.ready {
		return n.notLeader()
	}
	if n.fsm.diverged.Load() {
		return fmt.Errorf("%w: rebuilding after a failed proposal", n.notLeader())
	}
	n.inflight++
	return nil
}

// Commit implements ttldb.Replicator: it proposes the ops. It runs under
// the DB's commit lock, so entries enter raft's log in sequence order.
func (n *Node) Commit(ops []ttldb.Op) {
	data, err := encodeEntry(n.fsm.epoch.Load(), ops)
	var f raft.ApplyFuture
	switch {
	case err != nil:
		f = errFuture{err}
	case n.testCommit != nil:
		f = n.testCommit(data)
	default:
		f = n.raft.Apply(data, 0)
	}
	if len(ops) > 0 && !ops[0].Txn.IsZero() {
		// A transaction's commit: its ops, all of them, in this entry.
		// End waits for it through the txnCommit, as ResolveCommit does.
		f = n.txns.remember(ops[0].Txn, ops[0].Seq, ops[len(ops)-1].Seq, f)
	}
	n.mu.Lock()
	n.lastFut = f
	n.mu.Unlock()
}

// End implements ttldb.Replicator: it waits until the last entry proposed
// is committed and applied (raft commits in order: this write's entries
// are too).
func (n *Node) End(werr error) error {
	n.mu.Lock()
	f := n.lastFut
	n.mu.Unlock()
	var err error
	if f != nil {
		err = f.Error()
		if err == nil {
			if resp, ok := f.Response().(error); ok && resp != nil {
				err = resp
			}
		}
	}
	n.mu.Lock()
	n.inflight--
	n.cond.Broadcast()
	n.mu.Unlock()
	if err != nil {
		// Applied here, maybe not in the log: make this DB agree with the
		// log again before anything else is written.
		n.resync()
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("%w: %w", ErrNotCommitted, n.notLeader())
		}
		return fmt.Errorf("%w: %w", ErrNotCommitted, err)
	}
	return werr
}

// ProposeExpire implements ttldb.ExpireProposer: the TTL batch op is
// proposed as one entry before this node deletes anything; apply deletes
// it once the entry is committed. It runs holding the collection's write
// lock and the DB's commit lock (every write waits), and returns when the
// state machine meets the entry (this node's, leader or not any more:
// then it calls apply and returns its result) or when raft reports the
// entry not committed by this leader (leadership lost, shutdown: apply
// is not called, and the state machine applies the entry like any other
// if it commits later), or when the node rebuilds or restores its DB
// meanwhile (the state machine applies the entry to the new DB if it
// commits).
func (n *Node) ProposeExpire(op ttldb.Op, apply func() error) (err error) {
	if h := n.testProposed; h != nil {
		defer func() { h(err) }()
	}
	p := &proposal{id: n.proposals.Add(1), seq: op.Seq, wake: make(chan struct{}), applied: make(chan error, 1)}
	data, err := encodeProposal(n.fsm.epoch.Load(), p.id, op)
	if err != nil {
		return err
	}
	n.pending.Store(p)
	defer n.pending.CompareAndSwap(p, nil)
	var f raft.ApplyFuture
	if n.testSubmit != nil {
		f = n.testSubmit(data)
	} else {
		f = n.raft.Apply(data, 0)
	}
	// The future's result, as a channel: it resolves after the state
	// machine met the entry (then p is claimed) or with raft's error; raft's
	// shutdown resolves every future, so this goroutine ends by Close.
	failed := make(chan error, 1)
	go func() { failed <- f.Error() }()
	var ferr error
	select {
	case <-p.wake:
	case ferr = <-failed:
	}
	if p.settle(proposalAbandoned) || p.outcome() != proposalClaimed {
		if ferr == nil {
			ferr = errors.New("replica: TTL batch given up: the state machine rebuilt the DB or applied an entry itself meanwhile")
		}
		return fmt.Errorf("%w: TTL batch not committed: %w", ttldb.ErrNotPrimary, n.leaderError(ferr))
	}
	// Committed: the followers learn it with the next entry raft sends
	// them, which the next batch would bring only after this one is
	// applied here, and the last batch of a pass only after raft's
	// CommitTimeout. A no-op entry sent now lets them apply it while
	// this node does.
	select {
	case n.share <- struct{}{}:
	default:
	}
	err = apply()
	p.applied <- err
	return err
}

// shareCommits appends a no-op entry (raft's Barrier, not waited for) each
// time a proposed TTL batch commits, so that the followers learn its
// commit at once (hashicorp/raft tells them the commit index only with
// entries): they apply a batch while the leader does, not a batch later.
// Several batches committed meanwhile share one entry.
func (n *Node) shareCommits() {
	defer close(n.shared)
	for {
		select {
		case <-n.stop:
			return
		case <-n.share:
			n.raft.Barrier(0)
		}
	}
}

// proposal is a TTL batch proposed first, until the state machine claims
// it (the proposer applies it) or it is abandoned (the proposer deleted
// nothing; the state machine applies its entry if it commits).
type proposal struct {
	id      uint64
	seq     uint64 // the op's
	mu      sync.Mutex
	state   proposalState // guarded by mu
	wake    chan struct{} // closed when the state machine or a rebuild settles it
	applied chan error    // the proposer's apply result, for the state machine
}

type proposalState uint8

const (
	proposalPending proposalState = iota
	proposalClaimed
	proposalAbandoned
)

// settle moves a pending proposal to state to, and reports whether it was
// pending.
func (p *proposal) settle(to proposalState) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != proposalPending {
		return false
	}
	p.state = to
	close(p.wake)
	return true
}

func (p *proposal) outcome() proposalState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// abandonProposal gives up the pending proposal, if any: the DB is about to
// be replaced, and its proposer must not wait for an entry the state
// machine will apply to the new DB.
func (n *Node) abandonProposal() {
	if p := n.pending.Load(); p != nil {
		p.settle(proposalAbandoned)
	}
}

// resync makes a DB that holds ops the log may not agree with the log
// again: writes stop (a write proposed now could reuse the sequence
// numbers of an entry still in flight), the DB is rebuilt from the
// snapshot and the log, and a node still leading applies every entry in
// flight (Barrier, as after an election) before it writes again.
func (n *Node) resync() {
	n.setReady(false)
	n.fsm.diverged.Store(true)
	n.fsm.rebuildIfDiverged()
	if n.raft.State() == raft.Leader {
		select {
		case n.notify <- true:
		default:
		}
	}
}

// errFuture is an ApplyFuture that failed before raft saw it.
type errFuture struct{ err error }

func (f errFuture) Error() error     { return f.err }
func (f errFuture) Response() any    { return nil }
func (f errFuture) Index() uint64    { return 0 }
func (f errFuture) Done() <-chan any { return nil }

// watchLeadership drives the DB's primary role from raft's leadership.
func (n *Node) watchLeadership() {
	defer close(n.done)
	for {
		select {
		case <-n.stop:
			return
		case leader := <-n.notify:
			if !leader {
				n.setReady(false)
				continue
			}
			// Apply every earlier entry before writing or expiring.
			if err := n.raft.Barrier(0).Error(); err != nil {
				n.logger.Warn("barrier after gaining leadership failed", "err", err)
				continue
			}
			if n.raft.State() == raft.Leader {
				n.setReady(true)
			}
		}
	}
}

func (n *Node) setReady(ready bool) {
	n.mu.Lock()
	n.ready = ready
	n.lastFut = nil
	n.primary.Store(ready)
	n.cond.Broadcast()
	n.mu.Unlock()
	n.DB().SetPrimary(ready) // wakes the monitor
	n.logger.Info("leadership", "ready", ready)
}

// Close shuts raft down (without leaving the cluster: use Remove for
// that), then closes the DB and the stores.
func (n *Node) Close() error {
	var err error
	n.closeOnce.Do(func() {
		err = n.raft.Shutdown().Error()
		close(n.stop)
		<-n.done
		<-n.shared
		n.setReadyQuiet()
		n.DB().Close()
		n.closeStores()
	})
	return err
}

func (n *Node) setReadyQuiet() {
	n.mu.Lock()
	n.ready = false
	n.primary.Store(false)
	n.cond.Broadcast()
	n.mu.Unlock()
}

// fsm is the node's raft state machine.
type fsm struct {
	node *Node
	db   atomic.Pointer[ttldb.DB]

	mu         sync.Mutex  // serializes Apply, Restore and rebuilds
	appliedSeq uint64      // the DB's LastSeq as of the last entry applied; guarded by mu
	diverged   atomic.Bool // the DB holds ops the log may not
	epoch      atomic.Uint64

	// For ResolveCommit, guarded by mu: lastIndex is the raft index of
	// the last command entry the state machine met (applied, handed to
	// its proposer or refused: every entry up to it is settled here);
	// baseSeq the op of the snapshot the DB was restored from (0: the DB
	// holds the log from its start), whose transactions the DB does not
	// know (DB.TransactionCommitted); changed, when not nil, is closed at
	// the next change of these, of appliedSeq or of the DB.
	lastIndex uint64
	baseSeq   uint64
	changed   chan struct{}

	// pos is appliedSeq and the raft index of the entry that held it, for
	// Status: guarded by posMu, not mu, so that Status never waits for an
	// entry being applied or a rebuild.
	posMu sync.Mutex
	pos   struct{ seq, index uint64 }
}

// setPosition records the last op applied and its entry's raft index
// (0: from a snapshot).
func (f *fsm) setPosition(seq, index uint64) {
	f.posMu.Lock()
	f.pos.seq, f.pos.index = seq, index
	f.posMu.Unlock()
}

// position returns what setPosition recorded.
func (f *fsm) position() (seq, index uint64) {
	f.posMu.Lock()
	defer f.posMu.Unlock()
	return f.pos.seq, f.pos.index
}

func (f *fsm) newEpoch() {
	var b [8]byte
	_, _ = rand.Read(b[:])
	f.epoch.Store(binary.LittleEndian.Uint64(b[:]))
}

// rebuildIfDiverged rebuilds the DB now if it diverged (a write whose
// proposal failed), rather than at the next entry: a leader that refuses
// writes meanwhile may see none.
func (f *fsm) rebuildIfDiverged() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.diverged.Load() {
		return
	}
	if err := f.rebuild(); err != nil {
		f.node.logger.Error("rebuild failed", "err", err)
	}
}

// Apply applies one entry. A follower applies its ops; the leader has
// applied the ops of its own entries already (they are skipped). A DB
// that holds ops the log does not (a write whose proposal failed) is
// rebuilt from the snapshot and the log first.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastIndex = l.Index
	defer f.notifyChanged()
	if h, _, err := entryHead(l.Data); err == nil && h.proposal != 0 {
		if applied, err := f.claim(h); applied {
			// The proposer applied the batch: committed to the change
			// streams as DB.Apply commits (ttldb.ExpireProposer).
			f.setPosition(f.appliedSeq, l.Index)
			return err
		}
	}
	h, ops, err := decodeEntry(l.Data)
	if err != nil {
		f.node.logger.Error("unreadable log entry", "index", l.Index, "err", err)
		return err
	}
	first, last := ops[0].Seq, ops[len(ops)-1].Seq
	if first != f.appliedSeq+1 {
		err := fmt.Errorf("%w: entry %d starts at op %d, the state machine is at op %d", errEntry, l.Index, first, f.appliedSeq)
		f.node.logger.Error("log entry out of sequence", "err", err)
		return err
	}
	db := f.db.Load()
	local := db.LastSeq()
	diverged := f.diverged.Load()
	own := !diverged && h.epoch == f.epoch.Load()
	switch {
	case !diverged && local == f.appliedSeq:
		// A TTL batch proposed meanwhile (by a node that lost and regained
		// its leadership before it knew) holds locks Apply needs: its
		// proposer gives up, deleting nothing.
		f.node.abandonProposal()
		err = db.Apply(context.Background(), ops...)
	case own && h.proposal == 0 && local >= last:
		// The leader's own write, applied when it was made; committed
		// now, so its change streams may deliver it. (A proposed batch is
		// applied only through its proposer, above.) A refused mark (the
		// DB closed under it) leaves the entry committed all the same: it
		// is not the write's error.
		if merr := db.MarkCommitted(last); merr != nil {
			f.node.logger.Warn("marking a committed entry's ops", "index", l.Index, "err", merr)
		}
	default:
		// This DB holds ops the log does not: a write of this node whose
		// entry lost to another leader's.
		n := f.node
		n.mu.Lock()
		n.ready = false
		n.primary.Store(false)
		n.mu.Unlock()
		if err := f.rebuild(); err != nil {
			f.node.logger.Error("rebuild failed", "err", err)
			return err
		}
		err = f.db.Load().Apply(context.Background(), ops...)
		if n.raft != nil && n.raft.State() == raft.Leader {
			select { // applies what is in flight, then writes again
			case n.notify <- true:
			default:
			}
		}
	}
	f.appliedSeq = last
	f.setPosition(last, l.Index)
	if err != nil {
		f.node.logger.Error("applying a log entry failed", "index", l.Index, "err", err)
	}
	return err
}

// claim hands the entry of a TTL batch this node proposed (h) to its
// proposer, if it still waits, with the locks held and the sequence number
// reserved: the proposer applies the batch, and the entry is not even
// decoded here. It reports whether it did (with the proposer's error).
// Call holding mu.
func (f *fsm) claim(h entryHeader) (applied bool, err error) {
	p := f.node.pending.Load()
	if p == nil || p.id != h.proposal || h.epoch != f.epoch.Load() || f.diverged.Load() ||
		p.seq != f.appliedSeq+1 || f.db.Load().LastSeq() != f.appliedSeq || !p.settle(proposalClaimed) {
		return false, nil
	}
	err = <-p.applied
	f.appliedSeq = p.seq
	if err != nil {
		f.diverged.Store(true) // rebuilt at the next entry
		f.node.logger.Error("applying a proposed TTL batch failed", "seq", p.seq, "err", err)
	}
	return true, err
}

// rebuild replaces the DB by one built from the latest snapshot and the
// log entries after it, up to the last op applied (appliedSeq). Call
// holding mu.
func (f *fsm) rebuild() error {
	n := f.node
	n.abandonProposal()
	n.logger.Warn("rebuilding the DB from the raft log", "seq", f.appliedSeq)
	var (
		db      *ttldb.DB
		seq     uint64
		from    uint64 = 1
		err     error
		restore io.Reader
	)
	if metas, lerr := n.snaps.List(); lerr == nil && len(metas) > 0 {
		_, rc, oerr := n.snaps.Open(metas[0].ID)
		if oerr != nil {
			return oerr
		}
		defer rc.Close()
		seq, restore, err = readSnapshotHeader(rc)
		if err != nil {
			return err
		}
		from = metas[0].Index + 1
	}
	if db, err = n.openDB(restore); err != nil {
		return err
	}
	lastIndex, err := n.logs.LastIndex()
	if err != nil {
		db.Close()
		return err
	}
	for i := from; i <= lastIndex; i++ {
		var l raft.Log
		if err := n.logs.GetLog(i, &l); err != nil {
			if errors.Is(err, raft.ErrLogNotFound) {
				continue
			}
			db.Close()
			return err
		}
		if l.Type != raft.LogCommand {
			continue
		}
		_, ops, err := decodeEntry(l.Data)
		if err != nil {
			db.Close()
			return err
		}
		if ops[len(ops)-1].Seq <= seq {
			continue // in the snapshot
		}
		if ops[0].Seq > f.appliedSeq {
			break // not applied yet: the state machine will
		}
		if err := db.Apply(context.Background(), ops...); err != nil {
			db.Close()
			return fmt.Errorf("rebuild: entry %d: %w", i, err)
		}
	}
	if db.LastSeq() != f.appliedSeq {
		db.Close()
		return fmt.Errorf("rebuild: rebuilt to op %d, the log applied up to op %d", db.LastSeq(), f.appliedSeq)
	}
	f.baseSeq = seq
	f.swap(db)
	return nil
}

// swap installs db and starts a new epoch: entries proposed before are no
// longer this node's own.
func (f *fsm) swap(db *ttldb.DB) {
	old := f.db.Swap(db)
	f.diverged.Store(false)
	f.newEpoch()
	f.notifyChanged()
	db.SetPrimary(f.node.primary.Load())
	if old != nil {
		old.Close()
	}
}

// snapshotMagic starts a snapshot of this package: then the op sequence
// number it is as of (uint64, little-endian), then a ttldb Backup.
var snapshotMagic = []byte("ttldb-replica-snapshot-1\n")

// errBusy makes raft retry a snapshot later: the leader has writes in
// flight, so its DB is ahead of the log.
var errBusy = errors.New("replica: writes in flight; snapshot retried later")

// Snapshot copies the DB as of the last entry applied. On the leader it
// holds writes back while it copies (the copy is in memory; Persist writes
// it out), and fails (raft retries later) while writes are in flight.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	n := f.node
	n.mu.Lock()
	if n.inflight > 0 || n.gate {
		n.mu.Unlock()
		return nil, errBusy
	}
	n.gate = true
	n.mu.Unlock()
	defer n.releaseWrites()
	f.mu.Lock()
	defer f.mu.Unlock()
	db := f.db.Load()
	if f.diverged.Load() || db.LastSeq() != f.appliedSeq {
		return nil, errBusy
	}
	var buf bytes.Buffer
	buf.Write(snapshotMagic)
	buf.Write(binary.LittleEndian.AppendUint64(nil, f.appliedSeq))
	if err := db.Backup(context.Background(), &buf); err != nil {
		return nil, err
	}
	return snapshotData(buf.Bytes()), nil
}

// readSnapshotHeader reads a snapshot's header and returns the sequence
// number it is as of and the Backup that follows.
func readSnapshotHeader(r io.Reader) (uint64, io.Reader, error) {
	head := make([]byte, len(snapshotMagic)+8)
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, nil, fmt.Errorf("replica: snapshot header: %w", err)
	}
	if !bytes.Equal(head[:len(snapshotMagic)], snapshotMagic) {
		return 0, nil, errors.New("replica: not a snapshot of this package (or of another version)")
	}
	return binary.LittleEndian.Uint64(head[len(snapshotMagic):]), r, nil
}

// Restore replaces the whole state by the snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	seq, r, err := readSnapshotHeader(rc)
	if err != nil {
		return err
	}
	db, err := f.node.openDB(r)
	if err != nil {
		return err
	}
	if db.LastSeq() != seq {
		db.Close()
		return fmt.Errorf("replica: snapshot as of op %d holds ops up to %d", seq, db.LastSeq())
	}
	f.node.abandonProposal()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appliedSeq = seq
	f.baseSeq = seq
	f.setPosition(seq, 0)
	f.swap(db)
	return nil
}

// snapshotData is a snapshot held in memory until raft persists it.
type snapshotData []byte

func (s snapshotData) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshotData) Release() {}

var (
	_ ttldb.Replicator     = (*Node)(nil)
	_ ttldb.ExpireProposer = (*Node)(nil)
	_ ttldb.CommitResolver = (*Node)(nil)
)
