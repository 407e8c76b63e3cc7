package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// Session is a sequence of operations that may run in transactions, as the
// MongoDB driver's mongo.Session: StartSession makes one, EndSession ends
// it. A session is for one goroutine at a time (as the driver's); its
// methods serialize concurrent calls rather than race.
//
// The collection methods join the session's running transaction through
// the ctx they receive: NewSessionContext attaches a session to a ctx, and
// WithTransaction passes its callback one. An operation with a ctx that
// carries no session, or a session with no transaction running, runs on
// its own as it always did.
//
// Isolation: snapshot isolation, as MongoDB's transactions give it. A
// transaction reads every collection as of its first operation (its
// snapshot), plus its own writes; no reader outside it ever sees part of
// it. The first writer of a document wins: a transaction that then writes
// the same document (or one committed after its snapshot) fails at that
// write with ErrWriteConflict, labeled TransientTransactionErrorLabel,
// and is aborted; a write outside any transaction to a document an open
// transaction wrote waits until that transaction ends (bounded by the
// write's ctx and the transaction's lifetime), then applies. The TTL
// monitor never deletes a document an open transaction wrote (it tries
// again in a later pass), and a transaction keeps seeing, in its snapshot,
// the documents the monitor deletes meanwhile; HideExpired hides, inside
// a transaction, what had expired at its snapshot's instant.
//
// Writes inside a transaction are staged: they are validated, their
// results computed and their documents held (counted in the memory
// budget and in TransactionLimits), and nothing changes outside the
// transaction until CommitTransaction, which applies all of them as one
// change of every collection they touch: one log record under WithDir (a
// crash leaves all of it or none), one replicated entry under a
// Replicator, one group of change events carrying the session's lsid and
// the transaction's txnNumber. Unique secondary indexes are checked at
// the commit (ErrDuplicateKey fails it and changes nothing); _id
// uniqueness at each write.
//
// Not in a transaction (ErrNotInTransaction): time-series and capped
// collections, index and collection changes, Watch, and
// EstimatedDocumentCount. A collection a transaction inserts into is
// created at once, empty, if it did not exist.
type Session = engine.Session

// SessionOptions configure StartSession (none yet: the type keeps the
// driver's shape).
type SessionOptions = engine.SessionOptions

// TransactionOptions configure one transaction (none yet: every
// transaction reads a snapshot and commits durably as the DB's writes
// do).
type TransactionOptions = engine.TransactionOptions

// TransactionLimits bound every transaction of a DB
// (WithTransactionLimits): its Lifetime (default 60 s, MongoDB's
// transactionLifetimeLimitSeconds), the writes it may stage (MaxOps,
// default 100000), their bytes (MaxBytes, default 16 MiB, counted in the
// memory budget while the transaction is open) and the transactions open
// at once (MaxOpen, default 1000). Passing one aborts the transaction
// with ErrTransactionLimit and changes nothing.
type TransactionLimits = engine.TransactionLimits

// TransactionMetrics count a DB's transactions since Open
// (Metrics.Transactions).
type TransactionMetrics = engine.TransactionMetrics

// TxnID identifies the transaction that committed an Op (Op.Txn): the
// session's id (lsid) and the transaction's number (txnNumber).
type TxnID = engine.TxnID

// LabeledError is an error carrying MongoDB's error labels
// (HasErrorLabel), as the driver's server errors do.
type LabeledError = engine.LabeledError

// The error labels ttldb sets, as MongoDB does.
const (
	// TransientTransactionErrorLabel: the whole transaction may run
	// again (a write conflict, a commit refused by a replica that is not
	// the primary any more). WithTransaction does.
	TransientTransactionErrorLabel = engine.TransientTransactionErrorLabel
	// UnknownTransactionCommitResultLabel: the commit's outcome is not
	// known (the replicated log lost its leader with the commit's entry
	// in flight, or the log failed after the change was applied in
	// memory). Calling CommitTransaction again is safe: with a Replicator
	// that implements CommitResolver (replica.Node) it waits for the
	// outcome and returns nil if the transaction committed (it never
	// commits twice) or an error labeled TransientTransactionErrorLabel
	// if it did not; otherwise it returns the error without the label.
	UnknownTransactionCommitResultLabel = engine.UnknownTransactionCommitResultLabel
)

// Defaults of TransactionLimits.
const (
	DefaultTransactionLifetime = engine.DefaultTransactionLifetime
	DefaultTransactionMaxOps   = engine.DefaultTransactionMaxOps
	DefaultTransactionMaxBytes = engine.DefaultTransactionMaxBytes
	DefaultTransactionMaxOpen  = engine.DefaultTransactionMaxOpen
)

// WithTransactionLimits sets the DB's TransactionLimits (a zero field
// keeps its default). A negative limit is ErrInvalidOptions.
func WithTransactionLimits(l TransactionLimits) Option {
	return engine.WithTransactionLimits(l)
}

// StartSession returns a new session of the DB (ErrClosed after Close).
// It costs one small allocation and holds nothing until a transaction
// starts; EndSession aborts a transaction left running.
func (db *DB) StartSession(opts ...SessionOptions) (*Session, error) {
	return (*engine.DB)(db).StartSession(opts...)
}

// NewSessionContext returns a copy of ctx that carries s: the collection
// methods given it join s's running transaction. As the driver's
// mongo.NewSessionContext.
func NewSessionContext(ctx context.Context, s *Session) context.Context {
	return engine.NewSessionContext(ctx, s)
}

// SessionFromContext returns the session ctx carries (nil: none). As the
// driver's mongo.SessionFromContext.
func SessionFromContext(ctx context.Context) *Session {
	return engine.SessionFromContext(ctx)
}

// CommitResolver is an optional interface of a Replicator: one that
// implements it lets CommitTransaction, called again after a commit whose
// outcome was unknown (its End failed in a leadership change), report
// what became of it — nil if the replicated log committed it, an error
// labeled TransientTransactionErrorLabel if not — instead of repeating
// the first error. replica.Node implements it.
type CommitResolver = engine.CommitResolver

// TransactionCommitted reports whether the DB applied the ops of
// transaction id: committed here, applied with Apply (a replica), or
// replayed from its log at Open. It remembers the last 65536
// transactions, in memory only (a DB restored from a snapshot or backup
// knows none of those before it). A CommitResolver asks it of the DB that
// follows the replicated log. Cost: a map lookup under a short lock.
func (db *DB) TransactionCommitted(id TxnID) bool {
	return (*engine.DB)(db).TransactionCommitted(id)
}

// HasErrorLabel reports whether err, or an error it wraps, carries label
// (TransientTransactionErrorLabel, UnknownTransactionCommitResultLabel):
// any error with a HasErrorLabel(string) bool method counts, the driver's
// server errors included.
func HasErrorLabel(err error, label string) bool {
	return engine.HasErrorLabel(err, label)
}
