package engine

import (
	"context"
	"errors"
	"fmt"
)

// Replicator ships a DB's writes to its replicas: the replication module's
// raft node is one (github.com/ttldb/ttldb/replica). A DB opened
// WithReplicator runs each write (each local write call, collection and
// index change, and each batch of its TTL monitor) as
//
//	Begin → the write, applied in memory, its ops committed → End
//
// Begin may refuse the write (this node is not the primary): the write then
// changes nothing and returns Begin's error. Commit receives the write's
// ops, numbered, as a change stream does. End runs once the write is done,
// with no lock held, and the write returns End's error instead of its own:
// the replicator waits there until the ops are replicated.
//
// The write is applied in memory before its ops are replicated, as a
// MongoDB primary applies its writes before its secondaries do: a write
// whose End fails is applied on this DB but may not be on the replicas
// (the replicator then makes this DB agree with them again, typically by
// rebuilding it from the replicated log). Ops applied with DB.Apply do not
// go through the replicator.
//
// Change streams of a DB with a Replicator deliver only committed ops, as
// MongoDB's deliver only majority-committed changes: a local write's ops
// wait in the change-stream buffer until the replicator marks them
// committed (DB.MarkCommitted), so that no watcher sees a write that is
// then rolled back, and a resume token always names a place in the
// replicated history. The replicator must mark every op it knows
// committed, in any order of calls (the mark only rises): typically when
// its replicated log applies the entry that holds it. Ops applied with
// DB.Apply, and a TTL batch applied through ProposeExpire, are committed
// on arrival; a DB opened from a Backup (WithRestore) starts with every
// loaded op committed.
type Replicator interface {
	// Begin is called before a write resolves anything, with no lock held.
	// A non-nil error refuses the write. Every Begin that returns nil is
	// followed by one End. A write may run inside another (BulkWrite's
	// models): Begin must not wait for an End.
	Begin() error
	// Commit receives the ops of a write, numbered (Op.Seq), in commit
	// order, holding the write lock of the collection they change and the
	// DB's commit lock: it must not block for long, call into the DB, or
	// change the ops (it may keep them: they are immutable).
	Commit(ops []Op)
	// End is called once the write whose Begin returned nil is done, with
	// no lock held, with the write's error (nil when it succeeded and
	// committed its ops). The write returns End's result.
	End(err error) error
}

// ExpireProposer is an optional interface of a Replicator: one that
// implements it replicates the TTL monitor's batches proposal-first. The
// monitor of such a DB deletes nothing before its batch is committed: once
// a batch is chosen and its expire hooks have run, the monitor takes the
// collection's write lock and the DB's commit lock, re-checks the chosen
// documents (as it always does), and builds the batch's OpExpire: the
// keys still to delete, the index, the cutoff, and Seq, the next sequence
// number, reserved. It calls ProposeExpire with it, holding both locks, so
// that no write is numbered, or changes the collection, until the batch is
// applied or given up: the DB's history stays in the order of the
// replicated log, and every replica applying the op (DB.Apply) holds the
// state the primary would have deleted from.
//
// ProposeExpire replicates op and waits until it is committed or known not
// to be committed by this call:
//
//   - Committed: it calls apply exactly once, on the calling goroutine,
//     and returns apply's result. apply deletes the documents of op that
//     are still expired (the re-check DB.Apply makes for an OpExpire, so
//     that every replica decides alike) and commits op with its reserved
//     Seq to the DB's sinks (change streams, a durable log), as DB.Apply
//     would; it never calls Replicator.Commit (op is in the log already).
//     An error from apply (the DB closed under it) leaves the DB without
//     an op the log holds: the replicator must make the DB agree with the
//     log again, as after a failed End.
//   - Not committed (this node is not the primary any more, leadership
//     was lost, the replicator shut down): it returns an error without
//     calling apply. The DB deleted nothing and the sequence number is not
//     used; the pass stops as after a step-down, with an error matching
//     ErrNotPrimary. If op still commits later (under another primary),
//     the replicator applies it with DB.Apply, as any op from the log.
//
// An applied batch is committed: change streams deliver it, and every op
// before it, with no DB.MarkCommitted.
//
// While ProposeExpire runs, every write of the DB waits (a round trip of
// the replicated log per TTL batch, longer while the replicator cannot
// reach a quorum), and so do DB.Apply and Close; DB.LastSeq does not.
// ProposeExpire must not call into the DB otherwise.
// The batch's write runs as every write does (Begin, the batch, End), with
// ProposeExpire in place of Commit.
//
// Time-series collections are proposed alike: a batch of buckets is one
// OpExpire whose Keys name the measurements it removes (whole buckets, or
// with PreciseExpiry those trimmed out of them), chosen and re-checked as
// without a proposer, its Cutoff the batch's instant; apply removes those
// still expired at Cutoff under the rule named by Index, as DB.Apply does.
// A time-series collection has one lock for its reads and writes: while
// its batch is proposed, its reads wait too.
type ExpireProposer interface {
	ProposeExpire(op Op, apply func() error) error
}

// CommitResolver is an optional interface of a Replicator: one that
// implements it settles a transaction's commit whose End failed (a
// leadership change while its entry was in flight), so that
// CommitTransaction called again reports what became of it rather than
// its first error.
//
// ResolveCommit waits, within ctx, until the replicated log decided the
// entry of the transaction id (committed under some leader, or replaced
// by another leader's entries), and reports whether it was committed
// (DB.TransactionCommitted on the DB that now follows the log says so).
// An error means the outcome is not known yet.
type CommitResolver interface {
	ResolveCommit(ctx context.Context, id TxnID) (committed bool, err error)
}

// WithReplicator implements ttldb.WithReplicator, whose documentation is the contract.
func WithReplicator(r Replicator) Option {
	return func(cfg *config) error {
		if r == nil {
			return fmt.Errorf("%w: WithReplicator: nil replicator", ErrInvalidOptions)
		}
		cfg.replicator = r
		cfg.proposer, _ = r.(ExpireProposer)
		return nil
	}
}

// MarkCommitted implements ttldb.DB.MarkCommitted, whose documentation is the contract.
func (db *DB) MarkCommitted(seq uint64) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	c := &db.ops
	if last := c.lastSeq(); seq > last {
		return fmt.Errorf("%w: MarkCommitted(%d): the DB's last op is %d", ErrOpSequence, seq, last)
	}
	if c.replicator != nil {
		c.markCommitted(seq)
	}
	return nil
}

// beginWrite starts a local write under the replicator, if any. The write
// then returns end(its error).
func (db *DB) beginWrite() (end func(error) error, err error) {
	r := db.cfg.replicator
	if r == nil {
		return noEnd, nil
	}
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	if err := r.Begin(); err != nil {
		return nil, err
	}
	return r.End, nil
}

func noEnd(err error) error { return err }

// replicated runs fn as one write under the replicator, if any.
func replicated[T any](db *DB, fn func() (T, error)) (T, error) {
	end, err := db.beginWrite()
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := fn()
	if err = end(err); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// LastSeq implements ttldb.DB.LastSeq, whose documentation is the contract.
func (db *DB) LastSeq() uint64 { return db.ops.lastSeq() }

// proposeExpire replicates a TTL batch proposal-first (ExpireProposer):
// holding the DB's commit lock, it reserves the next sequence number for
// op (a batch's OpExpire, built and re-checked by the caller), proposes it
// with p and, once it is committed, deletes its documents with del (the
// code DB.Apply runs for an OpExpire, so that every replica decides
// alike) and commits it to the sinks with that number. It returns del's
// error, or, for a batch not committed (nothing deleted, the number not
// used), an error matching ErrNotPrimary. Call holding the write lock of
// op's collection (an ordinary collection's writeMu, a time-series
// collection's mu). Both kinds of collection propose through it.
func (db *DB) proposeExpire(p ExpireProposer, op *Op, del func(op *Op) error) error {
	c := &db.ops
	c.mu.Lock()
	defer c.mu.Unlock()
	op.Seq = c.seq.Load() + 1 // reserved: nothing else commits until we return
	applied := false
	var err error
	perr := p.ProposeExpire(*op, func() error {
		if applied {
			return fmt.Errorf("%w: TTL batch %d applied twice", ErrInvalidOp, op.Seq)
		}
		applied = true
		if err = db.checkOpen(); err != nil {
			return err
		}
		if err = del(op); err != nil {
			return err
		}
		err = c.commitAppliedLocked([]Op{*op}, 0)
		return err
	})
	switch {
	case applied:
		return err
	case perr == nil:
		perr = errors.New("the replicator neither applied nor refused it")
	}
	if !errors.Is(perr, ErrNotPrimary) && !errors.Is(perr, ErrClosed) {
		perr = fmt.Errorf("%w: TTL batch not committed: %w", ErrNotPrimary, perr)
	}
	return perr
}
