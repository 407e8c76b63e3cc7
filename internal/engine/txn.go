package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Transactions: sessions, their transactions' states and lifetimes, the
// context that carries a session, and WithTransaction. How a transaction
// reads is in txnview.go, how its writes are staged in txnstage.go, how it
// commits in txncommit.go; the DB-wide table of snapshots, document locks
// and limits in txnmanager.go.

// The error labels of MongoDB that ttldb sets on transaction errors
// (HasErrorLabel).
const (
	// TransientTransactionErrorLabel marks an error after which the whole
	// transaction may be run again from its start: a write conflict, a
	// transaction aborted by its lifetime limit or by Close of nothing
	// but the transaction.
	TransientTransactionErrorLabel = "TransientTransactionError"
	// UnknownTransactionCommitResultLabel marks a commit whose outcome is
	// not known (a replicated commit interrupted by a leadership change):
	// CommitTransaction may be called again, and commits once.
	UnknownTransactionCommitResultLabel = "UnknownTransactionCommitResult"
)

// Transaction sentinels.
var (
	// ErrWriteConflict is returned by a write inside a transaction to a
	// document another open transaction has written, or that a write
	// committed after the transaction's snapshot changed. The error carries
	// TransientTransactionErrorLabel; the transaction is aborted.
	ErrWriteConflict = errors.New("ttldb: write conflict")
	// ErrNoTransaction is returned by CommitTransaction and
	// AbortTransaction of a session with no transaction started, and by an
	// operation of a transaction that was aborted (with
	// TransientTransactionErrorLabel: run the transaction again).
	ErrNoTransaction = errors.New("ttldb: no transaction")
	// ErrTransactionInProgress is returned by StartTransaction while the
	// session's transaction runs.
	ErrTransactionInProgress = errors.New("ttldb: transaction already in progress")
	// ErrTransactionLimit is returned when a transaction would pass a
	// bound of TransactionLimits (its lifetime, ops, bytes, or the number
	// of open transactions). The transaction is aborted and changes
	// nothing.
	ErrTransactionLimit = errors.New("ttldb: transaction limit")
	// ErrNotInTransaction is returned by an operation that a transaction
	// cannot contain: writes to and reads of time-series and capped
	// collections, index and collection changes, Watch,
	// EstimatedDocumentCount.
	ErrNotInTransaction = errors.New("ttldb: operation not supported in a transaction")
	// ErrSessionEnded is returned by the methods of a session after
	// EndSession.
	ErrSessionEnded = errors.New("ttldb: session ended")
)

// LabeledError is an error with MongoDB's error labels, as the driver's
// server errors carry them: errors.As finds it, HasErrorLabel reads it.
type LabeledError struct {
	Labels []string
	Err    error
}

// Error returns the wrapped error's text (the labels are not in it).
func (e *LabeledError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error, for errors.Is and errors.As.
func (e *LabeledError) Unwrap() error { return e.Err }

// HasErrorLabel reports whether the error carries label.
func (e *LabeledError) HasErrorLabel(label string) bool {
	for _, l := range e.Labels {
		if l == label {
			return true
		}
	}
	return false
}

// HasErrorLabel reports whether err, or an error it wraps, carries label
// (an error with a HasErrorLabel(string) bool method: ttldb's
// LabeledError, the driver's server errors).
func HasErrorLabel(err error, label string) bool {
	for err != nil {
		if l, ok := err.(interface{ HasErrorLabel(string) bool }); ok && l.HasErrorLabel(label) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if HasErrorLabel(e, label) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

func transient(err error) error {
	return &LabeledError{Labels: []string{TransientTransactionErrorLabel}, Err: err}
}

// TransactionLimits bound every transaction of a DB (WithTransactionLimits).
// A zero field takes its default.
type TransactionLimits struct {
	// Lifetime is how long a transaction may stay open, from its start
	// (default 60 s, MongoDB's transactionLifetimeLimitSeconds). One open
	// longer is aborted: by its next operation, by a write waiting for it,
	// or by the TTL monitor's next pass.
	Lifetime time.Duration
	// MaxOps bounds the writes (documents inserted, updated, replaced or
	// deleted) a transaction stages (default 100000).
	MaxOps int
	// MaxBytes bounds the bytes of the documents a transaction stages,
	// counted in the DB's memory budget while it is open (default 16 MiB).
	MaxBytes int64
	// MaxOpen bounds the transactions open at once in the DB (default
	// 1000).
	MaxOpen int
}

// Defaults of TransactionLimits.
const (
	DefaultTransactionLifetime = 60 * time.Second
	DefaultTransactionMaxOps   = 100000
	DefaultTransactionMaxBytes = 16 << 20
	DefaultTransactionMaxOpen  = 1000
	// withTransactionTimeout bounds WithTransaction's retries, as the
	// driver's helper does.
	withTransactionTimeout = 120 * time.Second
	// maxUnknownCommitRetries bounds WithTransaction's commits again after
	// an unknown outcome (a CommitResolver waits for the outcome, so each
	// is not a spin; the bound keeps a resolver that answers at once from
	// becoming one).
	maxUnknownCommitRetries = 16
)

func (l TransactionLimits) withDefaults() TransactionLimits {
	if l.Lifetime <= 0 {
		l.Lifetime = DefaultTransactionLifetime
	}
	if l.MaxOps <= 0 {
		l.MaxOps = DefaultTransactionMaxOps
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultTransactionMaxBytes
	}
	if l.MaxOpen <= 0 {
		l.MaxOpen = DefaultTransactionMaxOpen
	}
	return l
}

// WithTransactionLimits implements ttldb.WithTransactionLimits, whose documentation is the contract.
func WithTransactionLimits(l TransactionLimits) Option {
	return func(cfg *config) error {
		if l.Lifetime < 0 || l.MaxOps < 0 || l.MaxBytes < 0 || l.MaxOpen < 0 {
			return fmt.Errorf("%w: WithTransactionLimits: negative limit", ErrInvalidOptions)
		}
		cfg.txnLimits = l
		return nil
	}
}

// SessionOptions configure StartSession (none yet: the type keeps the
// driver's shape).
type SessionOptions struct{}

// TransactionOptions configure one transaction (none yet: every
// transaction reads a snapshot and commits durably as the DB's writes
// do).
type TransactionOptions struct{}

// Session implements ttldb.Session, whose documentation is the contract.
type Session struct {
	db *DB
	id [16]byte // the lsid's UUID

	// mu serializes the session's calls (a session is for one goroutine
	// at a time, as the driver's; mu keeps misuse from racing).
	mu        sync.Mutex
	txnNumber int64
	txn       *txn // the current or last transaction; nil: none yet
	ended     bool
}

// StartSession implements ttldb.DB.StartSession, whose documentation is the contract.
func (db *DB) StartSession(opts ...SessionOptions) (*Session, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	s := &Session{db: db}
	if _, err := rand.Read(s.id[:]); err != nil {
		return nil, fmt.Errorf("ttldb: session id: %w", err)
	}
	s.id[6] = s.id[6]&0x0f | 0x40 // UUID version 4
	s.id[8] = s.id[8]&0x3f | 0x80
	return s, nil
}

// ID returns the session's id, the lsid of its transactions' ops and
// change events: a UUID.
func (s *Session) ID() [16]byte { return s.id }

// EndSession ends the session: a transaction still running is aborted
// (nothing of it is applied), and every later call of the session fails
// with ErrSessionEnded. It is idempotent and never fails (ctx is unused:
// the driver's shape). Cost: an abort's, O(the transaction's writes).
func (s *Session) EndSession(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if t := s.txn; t != nil && t.open() {
		t.abort(abortByEnd)
	}
	s.ended = true
}

// StartTransaction starts a transaction in the session: the collection
// methods given a ctx that carries the session (NewSessionContext, or
// WithTransaction's callback ctx) join it until CommitTransaction or
// AbortTransaction. Its snapshot is taken by its first operation. It
// fails with ErrTransactionInProgress while the session's transaction
// runs (one that outlived its lifetime is aborted first), with
// ErrTransactionLimit when TransactionLimits.MaxOpen transactions are
// open, ErrSessionEnded after EndSession, ErrClosed after Close. Cost:
// one small allocation; it takes nothing until the first operation.
func (s *Session) StartTransaction(opts ...TransactionOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if t := s.txn; t != nil && t.open() {
		if t.expired() {
			t.abort(abortByLifetime)
		} else {
			return fmt.Errorf("%w: session's transaction %d", ErrTransactionInProgress, t.number)
		}
	}
	t, err := s.db.txns.begin(s)
	if err != nil {
		return err
	}
	s.txnNumber++
	t.number = s.txnNumber
	s.txn = t
	return nil
}

// CommitTransaction applies the transaction's writes as one change of
// every collection they touch (see Session for what that means on disk,
// through a Replicator and in change streams), and returns once the
// change is as durable as the DB's writes are (SyncPolicy; a Replicator's
// End). A transaction with no write commits at once. On error nothing is
// applied and the transaction is aborted: a write conflict (a document
// the commit needs changed: the collection dropped, say) labeled
// TransientTransactionErrorLabel, ErrDuplicateKey from a unique index,
// ErrMemoryLimit, a Replicator's refusal (not the primary) labeled
// transient. An error labeled UnknownTransactionCommitResultLabel means
// the change was applied here but its durability or replication is not
// known: calling CommitTransaction again is safe (see that label). A ctx
// already done leaves the transaction open. Called again after a
// success, it returns nil; with no transaction started, ErrNoTransaction.
// Cost: the checks and changes of its writes, holding the write locks of
// the collections they touch, then the log's sync.
func (s *Session) CommitTransaction(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.txn
	if t != nil && t.unknownOutcome() && !s.ended {
		// Settled by the Replicator, which outlives the DB (a replica
		// closes its DB to rebuild it after a failed commit).
		return t.commit(ctx)
	}
	if err := s.usable(); err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("%w: CommitTransaction before StartTransaction", ErrNoTransaction)
	}
	return t.commit(ctx)
}

// AbortTransaction ends the transaction without applying any of its
// writes and releases what it holds (its documents, its snapshot, its
// memory). The session's later operations run outside any transaction,
// as the driver's. It returns nil for a transaction already aborted (by a
// conflict, a limit, Close), ErrNoTransaction with none started or one
// committed.
func (s *Session) AbortTransaction(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	t := s.txn
	if t == nil {
		return fmt.Errorf("%w: AbortTransaction before StartTransaction", ErrNoTransaction)
	}
	t.mu.Lock()
	st := t.state
	t.mu.Unlock()
	switch st {
	case txnCommitted, txnCommitUnknown:
		return fmt.Errorf("%w: transaction %d was committed: it cannot be aborted", ErrNoTransaction, t.number)
	case txnAborted:
		// The driver's AbortTransaction of a transaction aborted by the
		// server returns no error.
		return nil
	}
	t.abort(abortByCaller)
	return nil
}

// WithTransaction runs fn in a transaction of the session and commits
// it, as the driver's helper: it starts a transaction, calls fn with a
// ctx that carries the session (fn's collection calls must use it), and
// commits when fn returns no error. It runs fn again, in a new
// transaction, after an error labeled TransientTransactionErrorLabel (a
// write conflict), and commits again after one labeled
// UnknownTransactionCommitResultLabel (at most 16 times in a row), within
// 120 s of the DB clock from its start and while ctx lasts; any other
// error of fn aborts the transaction and is returned with fn's result.
// If fn commits or aborts the transaction itself, WithTransaction returns
// fn's result. fn may run more than once: it should have no effect
// outside the transaction.
func (s *Session) WithTransaction(ctx context.Context, fn func(ctx context.Context) (any, error), opts ...TransactionOptions) (any, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	clock := s.db.clock
	start := clock.Now()
	within := func() bool { return clock.Now().Sub(start) < withTransactionTimeout }
	sctx := NewSessionContext(ctx, s)
	for {
		if err := s.StartTransaction(opts...); err != nil {
			return nil, err
		}
		res, err := fn(sctx)
		if err != nil {
			if s.transactionOpen() {
				_ = s.AbortTransaction(ctx)
			}
			if HasErrorLabel(err, TransientTransactionErrorLabel) && within() && ctx.Err() == nil {
				continue
			}
			return res, err
		}
		if !s.transactionOpen() {
			// fn committed or aborted the transaction itself.
			return res, nil
		}
		for unknown := 0; ; {
			err = s.CommitTransaction(ctx)
			if err == nil {
				return res, nil
			}
			if within() && ctx.Err() == nil {
				if HasErrorLabel(err, UnknownTransactionCommitResultLabel) && unknown < maxUnknownCommitRetries {
					unknown++
					continue
				}
				if HasErrorLabel(err, TransientTransactionErrorLabel) {
					break
				}
			}
			return res, err
		}
	}
}

// transactionOpen reports whether the session's transaction is running
// (started, neither committed nor aborted).
func (s *Session) transactionOpen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.txn != nil && s.txn.open()
}

func (s *Session) usable() error {
	if s.ended {
		return ErrSessionEnded
	}
	return s.db.checkOpen()
}

type sessionKey struct{}

// NewSessionContext implements ttldb.NewSessionContext, whose documentation is the contract.
func NewSessionContext(ctx context.Context, s *Session) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, sessionKey{}, s)
}

// SessionFromContext implements ttldb.SessionFromContext, whose documentation is the contract.
func SessionFromContext(ctx context.Context) *Session {
	if ctx == nil {
		return nil
	}
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

// txnIn returns the open transaction of the session ctx carries, for the
// DB db: nil when there is none (no session, no transaction started, or
// a session of another DB: its transactions do not span DBs). An
// aborted or committed transaction is returned too: its operations fail
// (txn.usable).
func txnIn(ctx context.Context, db *DB) *txn {
	s := SessionFromContext(ctx)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	t, ended := s.txn, s.ended
	s.mu.Unlock()
	if s.db != db {
		if t != nil && t.open() {
			// Not silently outside the transaction: refused.
			return &txn{db: db, state: txnForeign}
		}
		return nil
	}
	if ended {
		return &txn{db: db, state: txnEnded}
	}
	if t == nil {
		return nil
	}
	t.mu.Lock()
	st, cause := t.state, t.cause
	t.mu.Unlock()
	if st == txnCommitted || st == txnAborted && cause == abortByCaller {
		// The driver runs the session's later operations outside any
		// transaction, until the next StartTransaction.
		return nil
	}
	return t
}

// txnState is where a transaction is in its life.
type txnState uint8

const (
	txnNone          txnState = iota
	txnOpen                   // started; reads and writes join it
	txnCommitted              // committed
	txnCommitUnknown          // a commit whose outcome is not known yet (replicated)
	txnAborted                // aborted: by the caller, a conflict, a limit, Close
	txnForeign                // (txnIn) the ctx's session is another DB's
	txnEnded                  // (txnIn) the ctx's session was ended
)

// abortCause says why a transaction was aborted (TransactionMetrics).
type abortCause uint8

const (
	abortByCaller abortCause = iota
	abortByConflict
	abortByLifetime
	abortByLimit
	abortByEnd   // EndSession, or a new StartTransaction after the lifetime
	abortByClose // DB.Close
	abortByError // a commit that failed (a unique index, the memory limit, the log)
	numAbortCauses
)

func (c abortCause) String() string {
	return [...]string{"caller", "conflict", "lifetime", "limit", "session", "close", "error"}[c]
}

// txn is one transaction. Its fields are guarded by mu: the session's
// goroutine runs its operations; a waiting writer, the monitor or Close
// may abort it.
type txn struct {
	db     *DB
	sess   *Session
	number int64 // txnNumber

	mu      sync.Mutex
	state   txnState
	cause   abortCause // when aborted
	started time.Time  // the DB clock at StartTransaction
	// snap is the undo clock's reading the transaction reads at (0: no
	// read yet: the snapshot is taken by the first operation); readTime
	// the DB clock's then, HideExpired's instant for every read.
	snap     uint64
	readTime time.Time
	// staged are the transaction's writes in order; over the documents
	// they leave, by collection and _id key (txnstage.go).
	staged []stagedWrite
	over   map[string]*overlay
	bytes  int64 // staged documents' bytes, reserved in the memory budget
	// locks are the document keys this transaction holds
	// (txnManager.locks); done is closed when it ends, waking writers
	// waiting for its documents.
	locks []docID
	done  chan struct{}
	// commitSeq is the Seq of the transaction's last op once committed
	// (a retried commit reports success).
	commitSeq uint64
	commitErr error // the error of a commit whose outcome is unknown
	// w is the running write's state (collState.txw), reused from write
	// to write; arena holds copies of staged keys and documents (keep),
	// scratch a key being made.
	w       txnWrite
	arena   []byte
	scratch []byte
}

// unknownOutcome reports whether t's commit has an unknown outcome.
func (t *txn) unknownOutcome() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state == txnCommitUnknown
}

func (t *txn) open() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state == txnOpen
}

// expired reports whether t outlived its lifetime. Call holding mu or not.
func (t *txn) expired() bool {
	return t.db.clock.Now().Sub(t.started) > t.db.txns.limits.Lifetime
}

// usableLocked returns why an operation cannot join t (nil: it can), aborting
// t if it outlived its lifetime. Call holding mu.
func (t *txn) usableLocked() error {
	switch t.state {
	case txnForeign:
		return fmt.Errorf("%w: the ctx's session, with a transaction running, belongs to another DB", ErrInvalidOptions)
	case txnEnded:
		return fmt.Errorf("%w: the ctx carries it", ErrSessionEnded)
	case txnAborted:
		return transient(fmt.Errorf("%w: transaction %d was aborted (%s)", ErrNoTransaction, t.number, t.cause))
	case txnCommitted, txnCommitUnknown:
		return fmt.Errorf("%w: transaction %d is committing or committed", ErrNoTransaction, t.number)
	}
	if err := t.db.checkOpen(); err != nil {
		return err
	}
	if t.expired() {
		t.abortLocked(abortByLifetime)
		return transient(fmt.Errorf("%w: transaction %d outlived its lifetime of %v (TransactionLimits.Lifetime)", ErrTransactionLimit, t.number, t.db.txns.limits.Lifetime))
	}
	return nil
}

// beginReadLocked takes the transaction's snapshot if its first operation is
// running. Call holding mu.
func (t *txn) beginReadLocked() {
	if t.snap == 0 {
		t.snap, t.readTime = t.db.txns.takeSnapshot(t)
	}
}

// abort ends t without committing: its staged writes are dropped, its
// locks and snapshot released.
func (t *txn) abort(cause abortCause) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.abortLocked(cause)
}

func (t *txn) abortLocked(cause abortCause) {
	if t.state != txnOpen {
		return
	}
	t.state, t.cause = txnAborted, cause
	t.db.txns.end(t, false, cause)
	t.staged, t.over = nil, nil
}

// fail aborts t for err if err is a conflict or a limit, and returns err
// with the label it needs. Call holding mu.
func (t *txn) failLocked(err error) error {
	switch {
	case errors.Is(err, ErrWriteConflict):
		t.abortLocked(abortByConflict)
		if !HasErrorLabel(err, TransientTransactionErrorLabel) {
			err = transient(err)
		}
	case errors.Is(err, ErrTransactionLimit):
		t.abortLocked(abortByLimit)
	}
	return err
}
