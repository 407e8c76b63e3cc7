package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// txnManager is the DB's table of open transactions: their snapshots,
// the documents they hold, their limits and their figures.
//
// Snapshots. A transaction reads the DB as of its snapshot, an instant of
// the undo clock (clock). While any snapshot is open (nsnap > 0), every
// change of a document, whatever its origin (a write, a TTL batch, a
// commit, DB.Apply), keeps the version it replaces in its collection's
// undo list, stamped with the clock's next tick (collState.keepBefore,
// called by the interpreter of writes, apply.go). A transaction that finds
// a version stamped after its snapshot reads that version's predecessor
// (txnview.go). With no snapshot open, writes keep nothing and tick
// nothing.
//
// Locks. A transaction's write takes its document's key in locks, held
// until the transaction ends: a second transaction's write of it fails
// with ErrWriteConflict (the first writer wins), a write outside any
// transaction waits for the end (txnWaitError), and the TTL monitor skips
// it. While no key is held (nlocked == 0), writes do not look.
type txnManager struct {
	db     *DB
	limits TransactionLimits

	clock   atomic.Uint64 // the undo clock
	nsnap   atomic.Int32  // open snapshots
	nlocked atomic.Int32  // keys in locks
	nopen   atomic.Int32  // open transactions

	mu    sync.Mutex
	open  map[*txn]struct{}
	snaps map[*txn]uint64
	locks map[docID]*txn // holder of each document

	// applied holds the last appliedKept transactions whose ops this DB
	// applied (committed here, or through DB.Apply and recovery's replay
	// of a log holding them): TransactionCommitted reads it.
	appliedMu   sync.Mutex
	applied     map[TxnID]struct{}
	appliedRing []TxnID
	appliedNext int

	started, committed, conflicts atomic.Int64
	aborted                       [numAbortCauses]atomic.Int64
	latMu                         sync.Mutex
	commitLat                     [len(commitLatencyBounds) + 1]int64 // per bucket, the last: above every bound
	commitSum                     time.Duration
}

// commitLatencyBounds are the upper bounds of
// TransactionMetrics.CommitLatency: an in-memory commit takes
// microseconds, one under SyncAlways an fsync, a replicated one a round
// trip of the replicated log.
var commitLatencyBounds = [...]time.Duration{
	10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond,
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

func (m *txnManager) init(db *DB, l TransactionLimits) {
	m.db, m.limits = db, l.withDefaults()
	m.open = map[*txn]struct{}{}
	m.snaps = map[*txn]uint64{}
	m.locks = map[docID]*txn{}
}

// begin opens a transaction for s, within MaxOpen.
func (m *txnManager) begin(s *Session) (*txn, error) {
	now := m.db.clock.Now()
	m.mu.Lock()
	if len(m.open) >= m.limits.MaxOpen {
		m.mu.Unlock()
		m.reapExpired(now)
		m.mu.Lock()
		if len(m.open) >= m.limits.MaxOpen {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: %d transactions are open (TransactionLimits.MaxOpen)", ErrTransactionLimit, m.limits.MaxOpen)
		}
	}
	t := &txn{db: m.db, sess: s, state: txnOpen, started: now, done: make(chan struct{})}
	m.open[t] = struct{}{}
	m.nopen.Add(1)
	m.mu.Unlock()
	m.started.Add(1)
	return t, nil
}

// takeSnapshot registers t's snapshot and returns its instant on the undo
// clock and the DB clock's reading. Registration and the clock's reading
// are one step under mu, so that pruneUndo never drops a version a
// snapshot being taken needs.
func (m *txnManager) takeSnapshot(t *txn) (uint64, time.Time) {
	m.mu.Lock()
	m.nsnap.Add(1)
	snap := m.clock.Load()
	if snap == 0 {
		// 0 means "no snapshot" in txn.snap: tick once.
		snap = m.clock.Add(1)
	}
	m.snaps[t] = snap
	m.mu.Unlock()
	return snap, m.db.clock.Now()
}

// end removes t from the table: its locks, its snapshot, its memory
// reservation; it wakes the writers waiting for it, and prunes the undo
// versions no snapshot needs any more. Call holding t.mu.
func (m *txnManager) end(t *txn, committed bool, cause abortCause) {
	m.mu.Lock()
	for _, k := range t.locks {
		if m.locks[k] == t {
			delete(m.locks, k)
			m.nlocked.Add(-1)
		}
	}
	t.locks = nil
	hadSnap := false
	if _, ok := m.snaps[t]; ok {
		delete(m.snaps, t)
		m.nsnap.Add(-1)
		hadSnap = true
	}
	delete(m.open, t)
	m.nopen.Add(-1)
	m.mu.Unlock()
	if t.bytes > 0 {
		m.db.mem.Add(-t.bytes)
		t.bytes = 0
	}
	close(t.done)
	if committed {
		m.committed.Add(1)
	} else {
		m.aborted[cause].Add(1)
		if cause == abortByConflict {
			m.conflicts.Add(1)
		}
	}
	if hadSnap {
		m.pruneUndo()
	}
}

// releaseSnapshot ends t's snapshot before its commit applies its
// writes (they need it no more, and with no other snapshot open the
// commit keeps no versions). Call holding t.mu.
func (m *txnManager) releaseSnapshot(t *txn) {
	m.mu.Lock()
	_, ok := m.snaps[t]
	if ok {
		delete(m.snaps, t)
		m.nsnap.Add(-1)
	}
	m.mu.Unlock()
	if ok && m.nsnap.Load() == 0 {
		m.pruneUndo()
	}
}

// pruneUndo drops the undo versions that no open snapshot reads: those
// stamped at or before the oldest snapshot (with none open, every version
// stamped so far). It takes each collection's writeMu and mu in turn, so
// call it holding no collection lock.
func (m *txnManager) pruneUndo() {
	m.mu.Lock()
	bound := m.clock.Load()
	for _, s := range m.snaps {
		bound = min(bound, s)
	}
	m.mu.Unlock()
	m.db.mu.RLock()
	var colls []*collState
	for _, s := range m.db.collections {
		if s.undoLen.Load() > 0 {
			colls = append(colls, s)
		}
	}
	m.db.mu.RUnlock()
	for _, s := range colls {
		s.writeMu.Lock()
		s.mu.Lock()
		s.pruneUndoLocked(bound)
		s.mu.Unlock()
		s.writeMu.Unlock()
	}
}

// docID names a document of the DB: its collection and _id key.
type docID struct {
	coll, key string
}

// acquire gives t the document (coll, key), or returns ErrWriteConflict if
// another open transaction holds it.
func (m *txnManager) acquire(t *txn, coll, key string) error {
	k := docID{coll, key}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch h := m.locks[k]; {
	case h == t:
		return nil
	case h != nil:
		return fmt.Errorf("%w: collection %q: a document is written by another open transaction", ErrWriteConflict, coll)
	}
	m.locks[k] = t
	m.nlocked.Add(1)
	t.locks = append(t.locks, k)
	return nil
}

// holder returns the open transaction other than self that holds (coll,
// key), or nil.
func (m *txnManager) holder(coll string, key []byte, self *txn) *txn {
	if m.nlocked.Load() == 0 {
		return nil
	}
	m.mu.Lock()
	h := m.locks[docID{coll, string(key)}]
	m.mu.Unlock()
	if h == self {
		return nil
	}
	return h
}

// reapExpired aborts the open transactions that outlived their lifetime
// (their owner may have abandoned them): the TTL monitor calls it each
// pass, a full table before refusing a transaction.
func (m *txnManager) reapExpired(now time.Time) {
	m.mu.Lock()
	var old []*txn
	for t := range m.open {
		if now.Sub(t.started) > m.limits.Lifetime {
			old = append(old, t)
		}
	}
	m.mu.Unlock()
	for _, t := range old {
		t.abort(abortByLifetime)
	}
}

// closeAll aborts every open transaction (DB.Close).
func (m *txnManager) closeAll() {
	m.mu.Lock()
	var all []*txn
	for t := range m.open {
		all = append(all, t)
	}
	m.mu.Unlock()
	for _, t := range all {
		t.abort(abortByClose)
	}
}

// observeCommit counts a commit's latency.
func (m *txnManager) observeCommit(d time.Duration) {
	b, _ := slices.BinarySearch(commitLatencyBounds[:], d) // first bound >= d
	m.latMu.Lock()
	m.commitLat[b]++
	m.commitSum += d
	m.latMu.Unlock()
}

// TransactionMetrics count a DB's transactions since Open
// (Metrics.Transactions).
type TransactionMetrics struct {
	Started   int64 // StartTransaction calls that opened one
	Committed int64 // commits that succeeded (a transaction with no write included)
	// Aborted counts transactions ended without a commit, by cause:
	// "caller" (AbortTransaction, or WithTransaction's callback failed),
	// "conflict" (ErrWriteConflict), "lifetime", "limit", "session"
	// (EndSession), "close" (DB.Close), "error" (a commit that failed).
	Aborted   map[string]int64
	Conflicts int64 // writes that failed with ErrWriteConflict
	Open      int64 // transactions open now (a gauge)
	// CommitLatency is the distribution of commits' durations, from
	// CommitTransaction's call to its return (the log's sync included),
	// in 19 buckets from 10 µs to 10 s.
	CommitLatency DurationHistogram
}

func (m *txnManager) metrics() TransactionMetrics {
	tm := TransactionMetrics{
		Started:   m.started.Load(),
		Committed: m.committed.Load(),
		Conflicts: m.conflicts.Load(),
		Aborted:   make(map[string]int64, numAbortCauses),
	}
	for c := range numAbortCauses {
		tm.Aborted[c.String()] = m.aborted[c].Load()
	}
	m.mu.Lock()
	tm.Open = int64(len(m.open))
	m.mu.Unlock()
	h := DurationHistogram{Buckets: make([]HistogramBucket, len(commitLatencyBounds))}
	m.latMu.Lock()
	h.Sum = m.commitSum
	for i, ub := range commitLatencyBounds {
		h.Count += m.commitLat[i]
		h.Buckets[i] = HistogramBucket{UpperBound: ub, Count: h.Count}
	}
	h.Count += m.commitLat[len(commitLatencyBounds)]
	m.latMu.Unlock()
	tm.CommitLatency = h
	return tm
}

// Sub returns the change from prev to m (Open keeps m's).
func (m TransactionMetrics) Sub(prev TransactionMetrics) TransactionMetrics {
	d := m
	d.Started -= prev.Started
	d.Committed -= prev.Committed
	d.Conflicts -= prev.Conflicts
	d.Aborted = subMap(m.Aborted, prev.Aborted)
	d.CommitLatency = m.CommitLatency.Sub(prev.CommitLatency)
	return d
}

// txnWaitError is a write's finding that a document in its way is held by
// the open transaction t: the write lets go of its locks, waits for t to
// end (waitFor), and runs again.
type txnWaitError struct{ t *txn }

func (e *txnWaitError) Error() string {
	return "ttldb: a document in the write's way is held by an open transaction"
}

// asTxnWait returns err's txnWaitError, if it is one (nil for nil: no
// allocation on a write's way out).
func asTxnWait(err error) *txnWaitError {
	if err == nil {
		return nil
	}
	var tw *txnWaitError
	if errors.As(err, &tw) {
		return tw
	}
	return nil
}

// waitFor waits until t ends, ctx ends (its error, wrapped), or t outlives
// its lifetime (the waiter then aborts it).
func (m *txnManager) waitFor(ctx context.Context, t *txn) error {
	for {
		left := m.limits.Lifetime - m.db.clock.Now().Sub(t.started)
		if left <= 0 {
			t.abort(abortByLifetime)
			return nil
		}
		tm := m.db.clock.NewTimer(left)
		var cdone <-chan struct{}
		if ctx != nil {
			cdone = ctx.Done()
		}
		select {
		case <-t.done:
			tm.Stop()
			return nil
		case <-cdone:
			tm.Stop()
			return fmt.Errorf("ttldb: waiting for a transaction: %w", ctx.Err())
		case <-tm.C():
		}
	}
}

// appliedKept is how many applied transactions TransactionCommitted
// remembers.
const appliedKept = 1 << 16

// noteApplied records that the DB applied transaction id's ops.
func (m *txnManager) noteApplied(id TxnID) {
	m.appliedMu.Lock()
	defer m.appliedMu.Unlock()
	if m.applied == nil {
		m.applied = map[TxnID]struct{}{}
	}
	if _, ok := m.applied[id]; ok {
		return
	}
	if len(m.appliedRing) < appliedKept {
		m.appliedRing = append(m.appliedRing, id)
	} else {
		delete(m.applied, m.appliedRing[m.appliedNext])
		m.appliedRing[m.appliedNext] = id
		m.appliedNext = (m.appliedNext + 1) % appliedKept
	}
	m.applied[id] = struct{}{}
}

// TransactionCommitted implements ttldb.DB.TransactionCommitted, whose documentation is the contract.
func (db *DB) TransactionCommitted(id TxnID) bool {
	db.txns.appliedMu.Lock()
	defer db.txns.appliedMu.Unlock()
	_, ok := db.txns.applied[id]
	return ok
}
