package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// DefaultChangeStreamBufferSize is the number of ops a DB's change-stream
// buffer retains by default (ChangeStreamBufferOptions.Size). A TTL batch
// of up to 256 deletions is one op, so the default holds the batches of a
// mass expiry of two million documents: a change stream that started
// before it misses none of its deletions, however slowly it reads.
const (
	DefaultChangeStreamBufferSize = engine.DefaultChangeStreamBufferSize
)

// MaxChangeStreamBufferSize is the largest ChangeStreamBufferOptions.Size:
// the buffer's own memory is 8 bytes per op it can retain (allocated when
// the buffer is attached), on top of the ops it retains.
const (
	MaxChangeStreamBufferSize = engine.MaxChangeStreamBufferSize
)

// ChangeStreamBufferOptions configures a DB's change-stream buffer: the
// window of recent ops every change stream of the DB reads from, and
// from which a stream can resume (WithChangeStreamBuffer).
type ChangeStreamBufferOptions = engine.ChangeStreamBufferOptions

// WithChangeStreamBuffer configures the DB's change-stream buffer (see
// ChangeStreamBufferOptions). Without it the buffer retains
// DefaultChangeStreamBufferSize ops and is attached by the first Watch.
// A Size outside 0..MaxChangeStreamBufferSize is ErrInvalidOptions.
func WithChangeStreamBuffer(o ChangeStreamBufferOptions) Option {
	return engine.WithChangeStreamBuffer(o)
}

// OperationType is a change event's kind, named as MongoDB names them.
type OperationType = engine.OperationType

// The operation types of change events. Create, CreateIndexes,
// DropIndexes and Modify are MongoDB's "expanded events": a stream shows
// them only with ChangeStreamOptions.ShowExpandedEvents or when
// OperationTypes names them.
const (
	// OperationInsert: a document was inserted (by an insert, or an
	// upsert that inserted). FullDocument is the document.
	OperationInsert = engine.OperationInsert
	// OperationUpdate: a document was changed by update operators
	// (UpdateOne, UpdateMany, FindOneAndUpdate, an upsert that matched).
	OperationUpdate = engine.OperationUpdate
	// OperationReplace: a document was replaced (ReplaceOne,
	// FindOneAndReplace). FullDocument is the new document.
	OperationReplace = engine.OperationReplace
	// OperationDelete: a document was deleted: by a caller, by a capped
	// collection's eviction, or, with Expired set, because it expired
	// (by the TTL monitor, or by a write under HideExpired).
	OperationDelete = engine.OperationDelete
	// OperationDrop: a collection was dropped. A collection stream goes
	// on after it (unlike MongoDB's, which is invalidated): the next write
	// creates the collection again.
	OperationDrop = engine.OperationDrop
	// OperationCreate: a collection was created (CreateCollection, or a
	// first write). Expanded event.
	OperationCreate = engine.OperationCreate
	// OperationCreateIndexes: an index was created; Index names it.
	// Expanded event.
	OperationCreateIndexes = engine.OperationCreateIndexes
	// OperationDropIndexes: an index was dropped; Index names it.
	// Expanded event.
	OperationDropIndexes = engine.OperationDropIndexes
	// OperationModify: CollMod changed an index (Index names it) or a
	// time-series collection's options. Expanded event.
	OperationModify = engine.OperationModify
)

// ResumeToken is a place in a DB's history of changes: every op before
// Seq has been seen, and the first Index events of op Seq. A change
// event's ID is the token just after it (for the last event of op n,
// {n+1, 0}), so tokens increase with the events, and a stream resumed
// after one (ChangeStreamOptions.ResumeAfter) goes on with the next
// event. The zero token is the start of the DB's history.
//
// Its text form (String, MarshalText, and the id of a server-sent event)
// is "Seq:Index" in decimal, e.g. "43:0"; ParseResumeToken reads it.
type ResumeToken = engine.ResumeToken

// ParseResumeToken reads a token's "Seq:Index" form. Anything else is
// ErrInvalidOptions.
func ParseResumeToken(s string) (ResumeToken, error) {
	return engine.ParseResumeToken(s)
}

// Namespace names what a change event changed: ttldb has one database per
// DB, so only the collection (MongoDB's ns.coll).
type Namespace = engine.Namespace

// UpdateDescription says what an update event changed, as MongoDB's does:
// the fields the update operators set, with their new values, and the
// fields they removed. Paths are dotted, as in the update.
type UpdateDescription = engine.UpdateDescription

// ChangeEvent is one change, as MongoDB's change streams describe it,
// with ttldb's extensions for TTL deletions. Its RawDocument fields share
// the committed op's bytes, which never change: an event may be kept for
// as long as needed, and a field is decoded only when read (RawDocument's
// Document, Lookup, ID).
type ChangeEvent = engine.ChangeEvent

// FullDocument says which documents a change stream's events carry
// (ChangeStreamOptions.FullDocument and FullDocumentBeforeChange), with
// the values of MongoDB's fullDocument and fullDocumentBeforeChange
// options.
type FullDocument = engine.FullDocument

// The FullDocument values.
const (
	// FullDocumentDefault (or ""): FullDocument for insert and replace
	// events only. Not valid for FullDocumentBeforeChange.
	FullDocumentDefault = engine.FullDocumentDefault
	// FullDocumentUpdateLookup: FullDocument for update events too. ttldb
	// gives the document as the update left it (MongoDB looks it up
	// later, and may return a later version, or none).
	FullDocumentUpdateLookup = engine.FullDocumentUpdateLookup
	// FullDocumentWhenAvailable: the document when the op has it. For
	// FullDocument, the same as FullDocumentUpdateLookup (post-images are
	// always available); for FullDocumentBeforeChange, the pre-image when
	// the op kept one.
	FullDocumentWhenAvailable = engine.FullDocumentWhenAvailable
	// FullDocumentRequired: as FullDocumentWhenAvailable, but an update,
	// replace or delete without a pre-image ends the stream with
	// ErrNoPreImage (FullDocumentBeforeChange only; for FullDocument it
	// is FullDocumentUpdateLookup).
	FullDocumentRequired = engine.FullDocumentRequired
	// FullDocumentOff (or ""): no pre-images. FullDocumentBeforeChange
	// only.
	FullDocumentOff = engine.FullDocumentOff
)

// ChangeStreamOptions configures Watch. The zero value watches every
// insert, update, replace, delete and drop from the next write on, with
// MongoDB's default documents. Given several, the later ones' set fields
// win.
type ChangeStreamOptions = engine.ChangeStreamOptions

// DefaultMaxAwaitTime is ChangeStreamOptions.MaxAwaitTime's default.
const (
	DefaultMaxAwaitTime = engine.DefaultMaxAwaitTime
)

// ChangeStream delivers a DB's or a collection's change events in commit
// order, as the MongoDB driver's change stream does: loop on Next, read
// each event with Event or Decode, check Err after the loop, Close when
// done.
//
// A stream reads the DB's change-stream buffer at its own place and never
// holds a lock a writer needs: a slow stream never delays writers or the
// TTL monitor. One that falls more than MaxLag ops behind ends with a
// *ChangeStreamLagError. A stream holds no goroutine and nothing to free
// but its pre-image request: an unclosed stream leaks nothing once
// unreachable, though it keeps writes copying pre-images if it asked for
// them.
//
// On a DB opened WithDir a stream delivers an op only once the log holds
// it as durably as the sync policy promises (fsynced under SyncAlways,
// written to the operating system under the others), so that a crash of
// the process never takes back an event a consumer saw (under SyncAlways,
// neither does a power cut); an op the buffer no longer holds, or never
// held (a token saved before a restart), is read from the log. On a DB
// with a Replicator a stream delivers only committed ops, as MongoDB's
// deliver only majority-committed changes: a local write's events wait
// until the replicator marks its ops committed (DB.MarkCommitted); ops
// applied with DB.Apply are delivered at once. A write that fails to
// replicate is never delivered, so a resume token names a place in the
// replicated history, the same op on every replica.
//
// A ChangeStream is for one goroutine at a time, except Close, which may
// be called from any goroutine, also while Next waits.
type ChangeStream engine.ChangeStream

// ChangeStreamLagError ends a change stream that fell behind (it matches
// ErrChangeStreamLagged). Resume is the token to resume from
// (ChangeStreamOptions.ResumeAfter, with the same MaxLag or another): the
// place after the last event the stream returned or skipped. The resumed
// stream reads on from there (see MaxLag). When Lost is set, neither the
// buffer nor the log (on a DB opened WithDir) held the next op any more,
// and the error matches ErrChangeStreamHistoryLost too: resuming fails,
// events were lost.
type ChangeStreamLagError = engine.ChangeStreamLagError

// Watch opens a change stream of every collection of the DB, as the
// driver's Watch: pipeline is nil or a slice of stages (mongo.Pipeline,
// []bson.D, bson.A, []Document) of those MongoDB allows in a change
// stream: $match on any event field (operationType, ns.coll,
// documentKey._id, fullDocument.x, updateDescription.updatedFields.x,
// ttldb's expired and index...) with ttldb's query language ($expr
// included); $project, $addFields/$set, $unset, $replaceRoot/$replaceWith
// and $redact with the aggregation pipeline's expression language (see
// Collection.Aggregate; $$NOW is the time Watch was called). A stage that
// removes or changes _id, the resume token, is refused (ErrInvalidOptions)
// at Watch when the stage says so; an event whose result shows it (a
// $replaceRoot to another _id), or on which an expression fails
// (ErrExpression), ends the stream. At most MaxPipelineStages stages,
// each as the driver writes it.
// The event a stage reads is the document Decode gives without a
// pipeline; a pipeline costs each event that document (its allocation
// and the decoding of its documents), where a stream without one reads
// the op in place.
//
// The first Watch attaches the DB's change-stream buffer (see
// WithChangeStreamBuffer) for the DB's lifetime: from then on writes
// build ops, which costs them a little (see the README's benchmarks).
// On a DB opened WithDir a stream resumed from before the buffer's
// window (a token saved before a restart) reads the log, back to what
// WithLogRetention keeps, and delivers an op only once the log holds it
// as the sync policy promises (see the README, Change streams). Watch
// itself is O(1), except with FullDocumentBeforeChange (see there) and a
// resume token on a DB with a log (it reads the log's first record). It
// fails with ErrClosed after Close, ErrInvalidOptions for bad options or
// a bad pipeline, ErrChangeStreamHistoryLost for a resume token neither
// the buffer nor the log holds (its message says why), and ctx's error
// if ctx is done.
func (db *DB) Watch(ctx context.Context, pipeline any, opts ...ChangeStreamOptions) (*ChangeStream, error) {
	changeStream, err := (*engine.DB)(db).Watch(ctx, pipeline, opts...)
	return (*ChangeStream)(changeStream), err
}

// Watch opens a change stream of the collection's events (including its
// drop; the stream goes on if the collection is created again). See
// DB.Watch.
func (c *Collection) Watch(ctx context.Context, pipeline any, opts ...ChangeStreamOptions) (*ChangeStream, error) {
	changeStream, err := (*engine.Collection)(c).Watch(ctx, pipeline, opts...)
	return (*ChangeStream)(changeStream), err
}

// MaxPipelineStages bounds the stages of a change stream's pipeline.
const MaxPipelineStages = engine.MaxPipelineStages

// Next moves to the next event, waiting for one if need be, and reports
// whether there is one: false when ctx is done (Err returns its error;
// the stream keeps its place, and a later Next goes on), when the DB or
// the stream is closed, or when the stream failed (Err says why; a
// failed stream stays failed). While writes come fast (the last wait did
// not end with a lone op), it first yields its processor a few dozen
// times, some tens of microseconds, looking for the next op: a stream
// that keeps up with a busy writer then never sleeps, and the writer never
// pays for waking it. Otherwise, or when that finds nothing, it sleeps
// until a commit wakes it.
//
// Per event Next costs a few pointer loads and, for inserts, updates and
// replacements, the copy of the _id into DocumentKey (cut from a buffer
// of 2 KB the stream allocates when the last is full); an update event with
// a known update document also decodes it and the updated document
// (UpdateDescription). Ops the filters skip cost a pointer load each.
func (cs *ChangeStream) Next(ctx context.Context) bool {
	return (*engine.ChangeStream)(cs).Next(ctx)
}

// TryNext is Next without the wait: it returns false at once, with Err
// nil, when no event is ready.
func (cs *ChangeStream) TryNext(ctx context.Context) bool {
	return (*engine.ChangeStream)(cs).TryNext(ctx)
}

// Event returns the event Next (or TryNext) last returned true for; the
// zero ChangeEvent before the first or after Next returned false. The
// event shares the op's documents (never changed) and may be kept; an
// insert's, update's or replacement's DocumentKey shares a buffer of up to
// 2 KB with the stream's other keys, which a kept event keeps alive. With
// a pipeline, Event is the event the $match stages passed, before any
// stage reshaped it: Current and Decode give the reshaped document.
func (cs *ChangeStream) Event() ChangeEvent {
	return (*engine.ChangeStream)(cs).Event()
}

// Decode decodes the current event, as the document MongoDB's driver
// decodes (its JSON form, with Go values: _id {_data: token},
// operationType, clusterTime, wallTime, ns {coll}, documentKey,
// fullDocument, fullDocumentBeforeChange, updateDescription {
// updatedFields, removedFields, truncatedArrays, disambiguatedPaths},
// operationDescription, and the extensions expired, index, cutoff), or
// as the pipeline reshaped it, into v: a struct (bson or ttldb tags, as
// for SingleResult.Decode), a map or a *Document. Without a current
// event it is ErrNotFound. It costs decoding the event's documents;
// Event costs nothing.
func (cs *ChangeStream) Decode(v any) error {
	return (*engine.ChangeStream)(cs).Decode(v)
}

// Current returns the current event as a document (the driver's
// ChangeStream.Current): what Decode decodes, encoded; nil without a
// current event. It costs the event's document and its encoding.
func (cs *ChangeStream) Current() RawDocument {
	return (*engine.ChangeStream)(cs).Current()
}

// Err returns why the last Next returned false: nil after Close or when
// TryNext found nothing; ErrClosed once the DB is closed; ctx's error; a
// *ChangeStreamLagError; ErrChangeStreamHistoryLost when the log's
// retention dropped the stream's next op; ErrNoPreImage; ErrLogFailed
// when the log failed (no op after it is delivered); ErrInvalidOptions
// when a pipeline stage removed or changed an event's _id.
func (cs *ChangeStream) Err() error {
	return (*engine.ChangeStream)(cs).Err()
}

// ResumeToken returns the token to resume the stream from after a
// restart (ChangeStreamOptions.ResumeAfter): just after the last event
// Next returned, or after the ops the filters skipped since, or the
// stream's start if it returned none.
func (cs *ChangeStream) ResumeToken() ResumeToken {
	return (*engine.ChangeStream)(cs).ResumeToken()
}

// Close ends the stream: a Next waiting on another goroutine returns
// false, and so does every later Next, with Err nil. It withdraws the
// stream's request for pre-images. Close is idempotent and safe to call
// from any goroutine; it returns nil.
func (cs *ChangeStream) Close(ctx context.Context) error {
	return (*engine.ChangeStream)(cs).Close(ctx)
}
