package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// OpVersion is the version of the Op value and of its binary form
// (Op.MarshalBinary). It grows when a field is added or a meaning changes;
// UnmarshalBinary reads versions MinOpVersion to OpVersion and refuses any
// other with ErrOpVersion. Version 2 has version 1's layout; its documents
// may hold the driver's bson types and '$'-prefixed or dotted field names,
// which a ttldb that reads only version 1 would take for malformed.
const (
	OpVersion = engine.OpVersion
	// MinOpVersion is the oldest binary form of an Op this version reads.
	MinOpVersion = engine.MinOpVersion
)

// OpKind says what an Op changes.
type OpKind = engine.OpKind

// The kinds of Op. The numbers are part of the binary form: never reuse one.
const (
	// OpInsert stores Docs (each with its _id resolved: generated ids are
	// in the document).
	OpInsert = engine.OpInsert
	// OpUpdate replaces each document whose _id is that of one of Docs by
	// that document: Docs are the results of an update ($currentDate and
	// every other operator resolved). Updates holds, parallel to Docs,
	// the update documents as applied, for change events; Apply ignores
	// them.
	OpUpdate = engine.OpUpdate
	// OpReplace is OpUpdate for a replacement (ReplaceOne,
	// FindOneAndReplace): Docs are the documents as stored.
	OpReplace = engine.OpReplace
	// OpDelete deletes the documents whose _id values Keys hold: deletes
	// by a caller, capped evictions, and expired documents a write under
	// HideExpired removed from its way (these carry Index and Cutoff as an
	// OpExpire does, and set Expired).
	OpDelete = engine.OpDelete
	// OpExpire is a TTL batch: the documents of Keys, chosen by the
	// monitor because index Index held a date before Cutoff for each. Apply
	// deletes each of them that is still expired at Cutoff under that
	// index (the same re-check the monitor makes), and nothing else.
	OpExpire = engine.OpExpire
	// OpCreateCollection creates Collection with the options in Spec.
	OpCreateCollection = engine.OpCreateCollection
	// OpDropCollection drops Collection.
	OpDropCollection = engine.OpDropCollection
	// OpCreateIndex creates the index described by Spec (its IndexModel,
	// name resolved) on Collection.
	OpCreateIndex = engine.OpCreateIndex
	// OpDropIndex drops index Index of Collection.
	OpDropIndex = engine.OpDropIndex
	// OpCollMod changes index Index (CollModIndex, in Spec) or, with Index
	// empty, the time-series options of Collection (TimeSeriesCollMod, in
	// Spec).
	OpCollMod = engine.OpCollMod
	// OpDBMod changes the DB as a whole (Collection empty): the Spec
	// {ttlPaused: bool} pauses or resumes every collection's TTL deletion
	// (DB.SetTTLPaused). It makes no change event.
	OpDBMod = engine.OpDBMod
)

// Op is one change a DB committed, described with every value its origin
// resolved: generated _id values, $currentDate times, the documents an
// update produced, the documents and the cutoff of a TTL batch. Applying
// the same ops in order (DB.Apply) to an empty DB yields the same state,
// and applying one never reads a clock, generates an id or chooses what to
// delete: persistence writes ops to disk, replication ships them, change
// streams (Watch) describe them.
//
// One write call commits one or more ops under one sequence range: an
// insert into a capped collection is an OpInsert followed by the OpDelete
// of what it evicted.
//
// An Op and the RawDocuments it holds are immutable once committed: do not
// change their bytes.
type Op = engine.Op

// RawDocument is a document in ttldb's binary encoding, as stored: read a
// field with Lookup, or decode it whole with Document. The encoding is
// described in docs/FORMAT.md.
type RawDocument = engine.RawDocument

// Apply applies ops, in order, as their origin committed them: a replica
// applies what its primary committed, a restart replays its log. Applying
// the ops a DB committed, from its first, to an empty DB yields the same
// collections, options, indexes and documents (byte for byte), and the
// same buckets of time-series collections.
//
// Sequence: ops[0].Seq must be the DB's last sequence number + 1 (1 for a
// DB that committed nothing) and each op's the one before it + 1; else
// Apply returns ErrOpSequence and applies nothing. A DB counts the ops it
// applied as its own: applying commits the same ops, with the same Seq,
// to the DB's sinks, so that its change streams and its log see them. On a
// DB with a Replicator, applied ops are committed on arrival (they come
// from the replicated log): its change streams deliver them, and every op
// before them, at once (see DB.MarkCommitted).
//
// Each op is atomic: it applies whole or, on error, not at all, and Apply
// stops there (the ops before it stay applied) with an error naming the
// op's Seq and wrapping ErrInvalidOp (and the specific sentinel:
// ErrDuplicateKey for an insert of a stored _id, ErrNotFound for an
// update or delete of a missing one or an unknown collection or index,
// ErrInvalidDocument for a malformed document, ErrCollectionExists…),
// ErrMemoryLimit, or ErrClosed.
//
// Record versions: an insert, update or replacement whose op carries
// Versions (one per document) stores its documents with those versions,
// so that an expire hook on a replica sees the delivery identity
// (ExpiredBatch.Versions) the origin's hooks would have seen; the DB's
// own versions given later are greater than every version applied. An
// op without Versions gets the DB's own.
//
// Applying never reads the clock, generates an _id or chooses what to
// delete: inserts store the documents as given (no validator runs, no
// capped eviction: the evictions follow as OpDelete), updates and
// replacements store the resulting documents, and an OpExpire deletes
// each of its documents that is still expired at its Cutoff under its
// index, and no other. Expire hooks do not run for applied deletions (the
// origin ran them); Metrics count an OpExpire's deletions and an
// OpDelete's marked Expired, and the DeleteObservers see them (PassNow and
// BatchNow are the op's Cutoff).
//
// Concurrency: Apply calls are serialized. Apply must not run
// concurrently with local writes to the collections the ops change (nor
// with local writes that commit ops to a sink, which move the sequence:
// the next op then fails with ErrOpSequence, the op in hand having been
// applied), and a DB that applies ops should run no TTL monitor of its
// own: open it with MonitorOptions{Disabled: true}, or WithPrimary /
// SetPrimary(false) while it follows a primary, so that only the ops
// delete expired documents.
func (db *DB) Apply(ctx context.Context, ops ...Op) error {
	return (*engine.DB)(db).Apply(ctx, ops...)
}

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
type Replicator = engine.Replicator

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
type ExpireProposer = engine.ExpireProposer

// WithReplicator makes r see every local write of the DB (see Replicator).
// The DB builds ops for every write (as it does while a change stream or a
// durable log is attached).
func WithReplicator(r Replicator) Option {
	return engine.WithReplicator(r)
}

// MarkCommitted tells a DB opened WithReplicator that every op up to seq
// (its Op.Seq, as Replicator.Commit received it) is committed by the
// replicator: change streams may deliver them, and the streams waiting
// for them wake. The mark only rises: a seq at or below it changes
// nothing. A seq past LastSeq (an op not numbered yet) is ErrOpSequence,
// and a closed DB's is ErrClosed: both change nothing. On a DB without a
// Replicator every op is committed when made, and MarkCommitted does
// nothing else.
//
// Cost: a few atomic operations, no allocation, plus waking the streams
// waiting for the ops (one channel close). Concurrency: safe from any
// goroutine, at any time; it takes none of the DB's locks, so a
// replicator may call it while a write or a TTL batch's proposal
// (ExpireProposer) holds them.
func (db *DB) MarkCommitted(seq uint64) error {
	return (*engine.DB)(db).MarkCommitted(seq)
}

// LastSeq returns the sequence number of the last op the DB committed or
// applied (0: none). It counts only while ops are built (a sink, a
// Replicator or DB.Apply): an in-memory DB with none attached stays at 0.
// On a DB with a Replicator it counts local writes not yet replicated
// too (see MarkCommitted).
func (db *DB) LastSeq() uint64 {
	return (*engine.DB)(db).LastSeq()
}
