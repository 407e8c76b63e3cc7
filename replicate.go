package ttldb

import (
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

// WithReplicator makes r see every local write of the DB (see Replicator).
// The DB builds ops for every write (as it does while a change stream or a
// durable log is attached).
func WithReplicator(r Replicator) Option {
	return func(cfg *config) error {
		if r == nil {
			return fmt.Errorf("%w: WithReplicator: nil replicator", ErrInvalidOptions)
		}
		cfg.replicator = r
		return nil
	}
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

// LastSeq returns the sequence number of the last op the DB committed or
// applied (0: none). It counts only while ops are built (a sink, a
// Replicator or DB.Apply): an in-memory DB with none attached stays at 0.
func (db *DB) LastSeq() uint64 { return db.ops.lastSeq() }
