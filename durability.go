package ttldb

import (
	"context"
	"io"

	"github.com/ttldb/ttldb/internal/engine"
)

// SyncPolicy says when a DB opened WithDir writes and fsyncs its log, as
// the sync choices of Redis's append-only file do. Under SyncAlways a
// write returns once an fsync covered its changes: neither a crash of the
// process nor a power cut loses what a call acknowledged. Under
// SyncEverySecond and SyncNever a write returns at once, and its changes
// reach the operating system within about 10 ms (a writer goroutine
// batches them), later when that goroutine is held back (a log segment
// change, which every snapshot makes, fsyncs the old segment meanwhile; a
// loaded machine delays it): a crash of the process (SIGKILL, a panic, an
// OOM kill) loses the writes acknowledged in that window before it. The
// README quotes the windows TestSoakKill measured (about 11 ms in a
// default run, up to 227 ms on a loaded machine snapshotting every few
// milliseconds); the test fails past 1 s. The TTL monitor's deletions are
// writes like any other: under
// those two policies a crash may undo deletions of that window, which
// observers and hooks were already told of; the documents come back still
// expired (hidden under HideExpired) and the next pass deletes them again.
// The policies differ too on a power cut or a kernel crash.
type SyncPolicy = engine.SyncPolicy

// The sync policies. The zero value is SyncEverySecond, the default.
// SyncPolicy's String returns a policy's name as its constant is spelled.
const (
	// SyncEverySecond fsyncs the log about once a second, in the
	// background: a power cut loses at most the writes of the last second
	// or so. Writes never wait for the disk.
	SyncEverySecond = engine.SyncEverySecond
	// SyncAlways returns from a write only once an fsync covered it: a
	// power cut loses no acknowledged write. Concurrent writers share
	// fsyncs (group commit); each write waits about one fsync's time.
	SyncAlways = engine.SyncAlways
	// SyncNever leaves the write-back to the operating system (within
	// about 30 s on Linux): a power cut may lose that much.
	SyncNever = engine.SyncNever
)

// AutoSnapshot configures the snapshots a DB opened WithDir takes by
// itself: one starts when the log has grown past both MinLogBytes and
// LogRatio times the size of the last snapshot, after which the log before
// it is dropped. The zero value means the defaults.
type AutoSnapshot = engine.AutoSnapshot

// Defaults of AutoSnapshot.
const (
	DefaultSnapshotLogRatio    = engine.DefaultSnapshotLogRatio
	DefaultSnapshotMinLogBytes = engine.DefaultSnapshotMinLogBytes
)

// WithDir makes the DB keep its state in the directory path (created,
// mode 0700, if missing; its files are created 0600): Open loads the
// snapshot and the log found there, every later change is appended to the
// log before the call that made it returns, and snapshots rewrite the DB
// from time to time (WithAutoSnapshot, DB.Snapshot). One DB at a time may
// have a directory open: a second Open of it, in this process or another,
// fails with ErrLocked. Without WithDir the DB lives in memory only.
// See the README's Durability section and docs/FORMAT.md.
func WithDir(path string) Option {
	return engine.WithDir(path)
}

// WithSync sets the log's sync policy (default SyncEverySecond). It needs
// WithDir.
func WithSync(p SyncPolicy) Option {
	return engine.WithSync(p)
}

// WithAutoSnapshot sets when the DB snapshots itself (see AutoSnapshot).
// It needs WithDir.
func WithAutoSnapshot(a AutoSnapshot) Option {
	return engine.WithAutoSnapshot(a)
}

// LogRetention says how much of its log a DB opened WithDir keeps once a
// snapshot no longer needs it, so that change streams can resume from it
// across restarts (MongoDB's oplog window: oplogSizeMB and
// oplogMinRetentionHours). Recovery never needs these segments: they are
// kept for change streams only. The zero value means the defaults.
//
// The log keeps whole segments (64 MiB each), oldest dropped first, at
// each snapshot: a segment the snapshot covers stays while the log,
// counted from its newest segment back to this one, is at most Bytes, or
// while the segment after it began less than Age ago (by the DB's clock,
// from the first op of that next segment): the window is the larger of
// the two, as with MongoDB's minimum retention period. Retained
// segments count in Metrics().Durability.LogSize and RetainedLogBytes,
// not towards the AutoSnapshot trigger, which counts the bytes logged
// since the last snapshot.
type LogRetention = engine.LogRetention

// DefaultLogRetentionBytes is LogRetention.Bytes' default: 256 MiB of
// log, some four segments.
const DefaultLogRetentionBytes = engine.DefaultLogRetentionBytes

// WithLogRetention sets what the log keeps for change streams once a
// snapshot covers it (see LogRetention); without it, the newest
// DefaultLogRetentionBytes. Metrics().Durability.RetainedFromSeq is the
// oldest op a stream can then resume from. It needs WithDir. A negative
// Bytes or Age is ErrInvalidOptions.
func WithLogRetention(r LogRetention) Option {
	return engine.WithLogRetention(r)
}

// WithRestore makes Open load the DB from r, a copy DB.Backup wrote. With
// WithDir the directory must hold no DB yet (else ErrInvalidOptions): Open
// writes the loaded state there as its first snapshot, under a new
// directory identity (the original's log is never taken for the copy's).
// Without WithDir the restored DB lives in memory.
func WithRestore(r io.Reader) Option {
	return engine.WithRestore(r)
}

// WithSalvage makes Open load what it can from a damaged data directory
// instead of failing with ErrCorrupt: the blocks of the snapshot that pass
// their checksums (a damaged magic, version or header block included),
// and the log up to its first damaged record (the log files are cut
// there, for good; damage in records the snapshot holds is passed over);
// a missing log is started anew, missing segments are reported. Documents whose collection block is lost are counted, not
// loaded (RecoveryInfo.Orphaned); when the log holds every op from the
// first, the DB is rebuilt from it alone (RecoveryInfo.RebuiltFromLog).
// Files of another directory (another identity) are never loaded. Data
// may be lost: DB.Recovery says how much. When it found damage, Open
// then writes what it loaded as the directory's snapshot, which replaces
// the damaged one and the log it covers: the next Open needs no
// WithSalvage. Copy the directory before using it. See the README's
// Durability section.
func WithSalvage() Option {
	return engine.WithSalvage()
}

// RecoveryInfo describes what Open loaded from a data directory or a
// backup (DB.Recovery).
type RecoveryInfo = engine.RecoveryInfo

// Recovery returns what Open loaded (the zero value for a DB opened
// without WithDir or WithRestore).
func (db *DB) Recovery() RecoveryInfo {
	return (*engine.DB)(db).Recovery()
}

// Snapshot writes a snapshot of the DB into its data directory now, then
// drops the older snapshot and the log it makes useless. Readers and
// writers go on meanwhile (see Backup for what they wait for). It fails
// with ErrInvalidOptions for a DB opened without WithDir; with the file
// system's error, after which writes go on: if the snapshot file could
// not be written, the previous snapshot and the log are kept; if only
// dropping the log before it failed (the error says "dropping the log
// before the snapshot": the log folder took no new segment), the new
// snapshot has replaced the previous one and the log is kept whole, to be
// dropped by a later snapshot; and with ErrClosed when Close cut it short.
// Snapshots are serialized: a call during another (an automatic one)
// waits for it.
func (db *DB) Snapshot(ctx context.Context) error {
	return (*engine.DB)(db).Snapshot(ctx)
}

// Backup writes a consistent copy of the DB to w: a snapshot file (its
// format is in docs/FORMAT.md) holding every collection, index and
// document as of one op, which Open(WithRestore(r)) loads, and which can
// serve as a data directory's snapshot. Readers and writers go on while it
// runs: writers wait only for the copy of up to 1,024 documents'
// references at a time; the ops committed meanwhile are kept in memory
// until the end and written after the documents. Backup does not sync or
// close w. It costs a read of every document and, in memory, the ops
// committed while it runs. A nil w is ErrInvalidOptions.
func (db *DB) Backup(ctx context.Context, w io.Writer) error {
	return (*engine.DB)(db).Backup(ctx, w)
}
