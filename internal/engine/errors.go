package engine

import (
	"errors"

	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/schema"
)

// Sentinel errors. Every error a ttldb method returns wraps one of these (or
// is one), so callers match with errors.Is; the wrapping text names the
// collection, index, field or path at fault.
var (
	// ErrClosed is returned by every method of a DB (and its collections)
	// that can fail, once Close has been called: first, before any check
	// of the arguments or of the collection's name.
	ErrClosed = errors.New("ttldb: database is closed")

	// ErrNotFound is returned by FindOne when no document matches, by
	// DropIndex and CollMod for a missing index, and by DropCollection for a
	// missing collection.
	ErrNotFound = errors.New("ttldb: not found")

	// ErrMemoryLimit is returned by a write that would take the DB's
	// accounted memory past the limit set by WithMemoryLimit. The write
	// changes nothing (an InsertMany or UpdateMany none of its documents).
	// Deleting documents, dropping indexes or collections, and Compact
	// make room.
	ErrMemoryLimit = errs.ErrMemoryLimit

	// ErrCollectionExists is returned by CreateCollection for a name that is
	// taken.
	ErrCollectionExists = errors.New("ttldb: collection exists")

	// ErrDuplicateKey is returned when a write would store two documents with
	// the same _id, or the same key in a unique index.
	ErrDuplicateKey = errors.New("ttldb: duplicate key")

	// ErrIndexOptionsConflict is returned by CreateIndex when an index with
	// the same key (or the same name) exists with other options.
	ErrIndexOptionsConflict = errors.New("ttldb: index options conflict")

	// ErrInvalidIndex is returned by CreateIndex for a malformed index
	// specification (no keys, a bad direction, an empty field name…).
	ErrInvalidIndex = errors.New("ttldb: invalid index specification")

	// ErrInvalidTTL is returned for a TTL specification ttldb refuses: a
	// negative or out-of-range ExpireAfterSeconds, a TTL on a compound key,
	// on _id, or on a capped collection.
	ErrInvalidTTL = errors.New("ttldb: invalid TTL index")

	// ErrValidation is returned when a write fails the collection's
	// $jsonSchema validator. Nothing is written. The error is a
	// *ValidationError naming the field and the rule.
	ErrValidation = errs.ErrValidation

	// ErrInvalidDocument is returned when a document holds a value ttldb
	// cannot store (a channel, func, struct, pointer, cyclic map…). The error
	// is a *DocumentError naming the path.
	ErrInvalidDocument = errs.ErrInvalidDocument

	// ErrDecode is returned by SingleResult.Decode when a stored value
	// does not fit the destination (a string into an int field, 5.5 into
	// an int, 300 into an int8…) or the destination is not a non-nil
	// pointer to a struct, a map with string keys or an interface. The
	// error is a *DecodeError naming the field.
	ErrDecode = errs.ErrDecode

	// ErrInvalidFilter is returned for a malformed query filter: an unknown
	// operator, an operator with a value of the wrong type, a top-level
	// $and/$or/$nor that is not a non-empty array of documents…
	ErrInvalidFilter = errs.ErrInvalidFilter

	// ErrInvalidUpdate is returned for a malformed update document or an
	// update that cannot be applied ($inc of a string, a path through a
	// scalar, a change of _id…).
	ErrInvalidUpdate = errs.ErrInvalidUpdate

	// ErrImmutableID is returned (wrapped with ErrInvalidUpdate) when an
	// update or replacement would change a document's _id.
	ErrImmutableID = errs.ErrImmutableID

	// ErrInvalidOptions is returned for malformed options: a bad sort or
	// projection, negative skip or limit, bad collection options, a bad
	// Open option.
	ErrInvalidOptions = errs.ErrInvalidOptions

	// ErrExpression is returned when an aggregation expression fails on a
	// document (a type mismatch, a division by zero, a conversion that
	// cannot be made); the error names the stage, the field and the
	// operator.
	ErrExpression = errs.ErrExpression

	// ErrExpireHook is returned by a write that met an expired document
	// hidden by HideExpired (the same _id, or the same key of a unique
	// index) and could not delete it first because an expire hook failed
	// for it. The write changed nothing and the expired document stays
	// stored; the error also wraps the hook's own (an *ExpireHookError if
	// the hook returned one). Retry the write once the hook succeeds.
	ErrExpireHook = errors.New("ttldb: expire hook failed")

	// ErrInvalidOp is returned by DB.Apply for an op that cannot apply to
	// the DB as it is (an unknown kind or collection, a missing index, an
	// insert of an _id that is stored, an update or delete of one that is
	// not, a malformed document or specification), and by
	// Op.UnmarshalBinary for a malformed binary form. The op changes
	// nothing; the error names the op's sequence number and what is wrong,
	// and also wraps the specific sentinel where there is one
	// (ErrDuplicateKey, ErrNotFound, ErrInvalidDocument…).
	ErrInvalidOp = errors.New("ttldb: invalid op")

	// ErrOpSequence is returned by DB.Apply when an op's sequence number
	// is not the DB's last one + 1 (a gap, a repeat, or local writes
	// committed meanwhile): nothing of the call is applied; and by
	// DB.MarkCommitted for a sequence number past the DB's last.
	ErrOpSequence = errors.New("ttldb: op out of sequence")

	// ErrOpVersion is returned by Op.UnmarshalBinary for a binary form of
	// another OpVersion; the error names both versions.
	ErrOpVersion = errors.New("ttldb: unsupported op version")

	// ErrChangeStreamLagged ends a change stream that fell more than its
	// MaxLag ops behind the newest op: Next returns false and Err a
	// *ChangeStreamLagError carrying the token to resume from.
	ErrChangeStreamLagged = errors.New("ttldb: change stream fell behind")

	// ErrChangeStreamHistoryLost is returned when the place a change
	// stream needs is no longer retained by the DB's change-stream buffer:
	// by Watch for a ResumeAfter token older than the buffer's window, and
	// by a running stream (with ErrChangeStreamLagged, in a
	// *ChangeStreamLagError) whose next op the buffer overwrote before it
	// was read. Events were lost: rebuild what the stream fed from the
	// collections, then watch from now.
	ErrChangeStreamHistoryLost = errors.New("ttldb: change stream history lost")

	// ErrNoPreImage ends a change stream with FullDocumentBeforeChange
	// set to FullDocumentRequired at an update, replace or delete whose
	// op kept no pre-image (committed before any stream asked for them).
	ErrNoPreImage = errors.New("ttldb: no pre-image for change event")
	// ErrLocked is returned by Open(WithDir(dir)) when another DB, in
	// this process or another, has dir open.
	ErrLocked = errs.ErrLocked

	// ErrCorrupt is returned by Open when a file of the data directory (or
	// a backup) fails its checksum or framing anywhere but at the log's
	// tail (a torn tail is cut off and reported by DB.Recovery). Nothing
	// is loaded; the error names the file. Open WithSalvage loads what
	// passes its checksums (README, Durability).
	ErrCorrupt = errs.ErrCorrupt

	// ErrCounterLimit is returned by a write that would take a
	// collection's insertion sequence or the DB's record version past
	// 2^48-1 (a little less for the version, which writers of other
	// collections share), the bound of the store's slot table: the write
	// changes nothing. Open of a snapshot or log holding a version past it
	// fails with ErrCorrupt wrapping it.
	ErrCounterLimit = errors.New("ttldb: insertion sequence or record version limit reached")

	// ErrFormatVersion is returned by Open for a snapshot or log file of a
	// format version this ttldb does not read; the error names both
	// versions. A newer file needs the newer ttldb that wrote it.
	ErrFormatVersion = errs.ErrFormatVersion

	// ErrLogFailed is returned by a write when appending to or syncing the
	// data directory's log failed (a failing disk, a full disk): the
	// error also wraps the cause (syscall.ENOSPC, syscall.EIO…). The
	// write's change is in memory but may not be on disk; from then on
	// the DB refuses every write with this error (reads go on) until it
	// is closed and opened again, which loads what the disk really holds.
	ErrLogFailed = errs.ErrLogFailed
)

// ValidationError reports why a document failed the collection's validator:
// the dotted path to the field (Field, "" for the document itself), the
// innermost $jsonSchema keyword that failed (Rule) and why (Reason). It
// wraps ErrValidation; match it with errors.As.
type ValidationError = schema.ValidationError
