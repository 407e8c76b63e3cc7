package ttldb

import (
	"github.com/ttldb/ttldb/internal/engine"
)

// Sentinel errors. Every error a ttldb method returns wraps one of these (or
// is one), so callers match with errors.Is; the wrapping text names the
// collection, index, field or path at fault.
var (
	// ErrClosed is returned by every method of a DB (and its collections)
	// that can fail, once Close has been called: first, before any check
	// of the arguments or of the collection's name.
	ErrClosed = engine.ErrClosed
	// ErrNotFound is returned by FindOne when no document matches, by
	// DropIndex and CollMod for a missing index, and by DropCollection for a
	// missing collection.
	ErrNotFound = engine.ErrNotFound
	// ErrNoDocuments is the driver's name for ErrNotFound: the same
	// sentinel, so that errors.Is(err, ErrNoDocuments) holds wherever
	// errors.Is(err, ErrNotFound) does (FindOne's error when nothing
	// matches).
	ErrNoDocuments = engine.ErrNotFound
	// ErrMemoryLimit is returned by a write that would take the DB's
	// accounted memory past the limit set by WithMemoryLimit. The write
	// changes nothing (an InsertMany or UpdateMany none of its documents).
	// Deleting documents, dropping indexes or collections, and Compact
	// make room.
	ErrMemoryLimit = engine.ErrMemoryLimit
	// ErrCollectionExists is returned by CreateCollection for a name that is
	// taken.
	ErrCollectionExists = engine.ErrCollectionExists
	// ErrDuplicateKey is returned when a write would store two documents with
	// the same _id, or the same key in a unique index.
	ErrDuplicateKey = engine.ErrDuplicateKey
	// ErrIndexOptionsConflict is returned by CreateIndex when an index with
	// the same key (or the same name) exists with other options.
	ErrIndexOptionsConflict = engine.ErrIndexOptionsConflict
	// ErrInvalidIndex is returned by CreateIndex for a malformed index
	// specification (no keys, a bad direction, an empty field name…).
	ErrInvalidIndex = engine.ErrInvalidIndex
	// ErrInvalidTTL is returned for a TTL specification ttldb refuses: a
	// negative or out-of-range ExpireAfterSeconds, a TTL on a compound key,
	// on _id, or on a capped collection.
	ErrInvalidTTL = engine.ErrInvalidTTL
	// ErrValidation is returned when a write fails the collection's
	// $jsonSchema validator. Nothing is written. The error is a
	// *ValidationError naming the field and the rule.
	ErrValidation = engine.ErrValidation
	// ErrInvalidDocument is returned when a document holds a value ttldb
	// cannot store (a channel, func, struct, pointer, cyclic map…). The error
	// is a *DocumentError naming the path.
	ErrInvalidDocument = engine.ErrInvalidDocument
	// ErrDecode is returned by SingleResult.Decode when a stored value
	// does not fit the destination (a string into an int field, 5.5 into
	// an int, 300 into an int8…) or the destination is not a non-nil
	// pointer to a struct, a map with string keys or an interface. The
	// error is a *DecodeError naming the field.
	ErrDecode = engine.ErrDecode
	// ErrInvalidFilter is returned for a malformed query filter: an unknown
	// operator, an operator with a value of the wrong type, a top-level
	// $and/$or/$nor that is not a non-empty array of documents…
	ErrInvalidFilter = engine.ErrInvalidFilter
	// ErrInvalidUpdate is returned for a malformed update document or an
	// update that cannot be applied ($inc of a string, a path through a
	// scalar, a change of _id…).
	ErrInvalidUpdate = engine.ErrInvalidUpdate
	// ErrImmutableID is returned (wrapped with ErrInvalidUpdate) when an
	// update or replacement would change a document's _id.
	ErrImmutableID = engine.ErrImmutableID
	// ErrInvalidOptions is returned for malformed options: a bad sort or
	// projection, negative skip or limit, bad collection options, a bad
	// Open option.
	ErrInvalidOptions = engine.ErrInvalidOptions

	// ErrExpression is returned when an aggregation expression fails on a
	// document (a type mismatch, a division by zero, a conversion that
	// cannot be made); the error names the stage, the field and the
	// operator. A pipeline that fails returns no results.
	ErrExpression = engine.ErrExpression
	// ErrExpireHook is returned by a write that met an expired document
	// hidden by HideExpired (the same _id, or the same key of a unique
	// index) and could not delete it first because an expire hook failed
	// for it. The write changed nothing and the expired document stays
	// stored; the error also wraps the hook's own (an *ExpireHookError if
	// the hook returned one). Retry the write once the hook succeeds.
	ErrExpireHook = engine.ErrExpireHook
	// ErrInvalidOp is returned by DB.Apply for an op that cannot apply to
	// the DB as it is (an unknown kind or collection, a missing index, an
	// insert of an _id that is stored, an update or delete of one that is
	// not, a malformed document or specification), and by
	// Op.UnmarshalBinary for a malformed binary form. The op changes
	// nothing; the error names the op's sequence number and what is wrong,
	// and also wraps the specific sentinel where there is one
	// (ErrDuplicateKey, ErrNotFound, ErrInvalidDocument…).
	ErrInvalidOp = engine.ErrInvalidOp
	// ErrOpSequence is returned by DB.Apply when an op's sequence number
	// is not the DB's last one + 1 (a gap, a repeat, or local writes
	// committed meanwhile): nothing of the call is applied; and by
	// DB.MarkCommitted for a sequence number past the DB's last.
	ErrOpSequence = engine.ErrOpSequence
	// ErrCounterLimit is returned by a write that would take a
	// collection's insertion sequence or the DB's record version past
	// 2^48-1 (at a million writes a second, about nine years of writes):
	// the write changes nothing. Open of a snapshot or log holding a
	// version past it fails with ErrCorrupt wrapping it.
	ErrCounterLimit = engine.ErrCounterLimit
	// ErrOpVersion is returned by Op.UnmarshalBinary for a binary form of
	// another OpVersion; the error names both versions.
	ErrOpVersion = engine.ErrOpVersion
	// ErrChangeStreamLagged ends a change stream that fell more than its
	// MaxLag ops behind the newest op: Next returns false and Err a
	// *ChangeStreamLagError carrying the token to resume from.
	ErrChangeStreamLagged = engine.ErrChangeStreamLagged
	// ErrChangeStreamHistoryLost is returned when the place a change
	// stream needs is no longer retained by the DB's change-stream buffer:
	// by Watch for a ResumeAfter token older than the buffer's window, and
	// by a running stream (with ErrChangeStreamLagged, in a
	// *ChangeStreamLagError) whose next op the buffer overwrote before it
	// was read. Events were lost: rebuild what the stream fed from the
	// collections, then watch from now.
	ErrChangeStreamHistoryLost = engine.ErrChangeStreamHistoryLost
	// ErrNoPreImage ends a change stream with FullDocumentBeforeChange
	// set to FullDocumentRequired at an update, replace or delete whose
	// op kept no pre-image (committed before any stream asked for them).
	ErrNoPreImage = engine.ErrNoPreImage
	// ErrLocked is returned by Open(WithDir(dir)) when another DB, in
	// this process or another, has dir open.
	ErrLocked = engine.ErrLocked
	// ErrCorrupt is returned by Open when a file of the data directory (or
	// a backup) fails its checksum or framing anywhere but at the log's
	// tail (a torn tail is cut off and reported by DB.Recovery). Nothing
	// is loaded; the error names the file. Open WithSalvage loads what
	// passes its checksums (README, Durability).
	ErrCorrupt = engine.ErrCorrupt
	// ErrFormatVersion is returned by Open for a snapshot or log file of a
	// format version this ttldb does not read; the error names both
	// versions. A newer file needs the newer ttldb that wrote it.
	ErrFormatVersion = engine.ErrFormatVersion
	// ErrLogFailed is returned by a write when appending to or syncing the
	// data directory's log failed (a failing disk, a full disk): the
	// error also wraps the cause (syscall.ENOSPC, syscall.EIO…). The
	// write's change is in memory but may not be on disk; from then on
	// the DB refuses every write with this error (reads go on) until it
	// is closed and opened again, which loads what the disk really holds.
	ErrLogFailed = engine.ErrLogFailed
	// ErrWriteConflict is returned by a write inside a transaction to a
	// document another open transaction wrote, or that a commit changed
	// after the transaction's snapshot (the first writer wins). It is
	// labeled TransientTransactionErrorLabel and the transaction is
	// aborted: run it again (WithTransaction does).
	ErrWriteConflict = engine.ErrWriteConflict
	// ErrNoTransaction is returned by CommitTransaction and
	// AbortTransaction with no transaction started, and by an operation
	// of a transaction that was aborted (a conflict, a limit, Close…),
	// then labeled TransientTransactionErrorLabel.
	ErrNoTransaction = engine.ErrNoTransaction
	// ErrTransactionInProgress is returned by StartTransaction while the
	// session's transaction runs.
	ErrTransactionInProgress = engine.ErrTransactionInProgress
	// ErrTransactionLimit is returned when a transaction would pass one
	// of TransactionLimits; the transaction is aborted and changes
	// nothing.
	ErrTransactionLimit = engine.ErrTransactionLimit
	// ErrNotInTransaction is returned by an operation a transaction
	// cannot contain (Session lists them).
	ErrNotInTransaction = engine.ErrNotInTransaction
	// ErrSessionEnded is returned by a session's methods after
	// EndSession.
	ErrSessionEnded = engine.ErrSessionEnded
)

// ValidationError reports why a document failed the collection's validator:
// the dotted path to the field (Field, "" for the document itself), the
// innermost $jsonSchema keyword that failed (Rule) and why (Reason). It
// wraps ErrValidation; match it with errors.As.
type ValidationError = engine.ValidationError
