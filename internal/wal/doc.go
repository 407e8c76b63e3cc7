// Package wal is ttldb's write-ahead log: an append-only sequence of
// records, each one commit's bytes, in segment files of one directory.
//
// A record is the caller's payload framed by its length, a CRC-32C
// (Castagnoli) and a sequence number the caller chooses (strictly
// increasing; gaps allowed). Segment files are named after a lower bound
// of the seqs they hold and start with a versioned header; the log starts
// a new one when the current one reaches Options.SegmentSize. The layout
// is in format.go and docs/FORMAT.md.
//
// # Durability
//
// Write hands a record to the operating system (one write(2)); it
// survives a crash of the process from then on. (With Options.BufferSize
// records wait in memory until the buffer fills or the next flush, group
// commit, Sync or Close: a crash of the process loses those.) What
// survives a power cut depends on the SyncPolicy: under SyncAlways, Wait (and Append)
// returns only once an fsync covered the record, and concurrent writers
// share fsyncs (group commit); under SyncEverySecond a background flusher
// fsyncs about once per FlushInterval, so a power cut loses at most the
// records written since the last flush; under SyncNever the operating
// system writes back when it chooses. Starting a new segment, Close and
// Sync fsync under every policy.
//
// A failed write or fsync fails the log: every later call returns an
// error matching errs.ErrLogFailed (and the cause, such as syscall.ENOSPC).
// Nothing is retried, because after a failed fsync the kernel may have
// dropped the data it could not write; reopening the log (after fixing
// the disk) finds out what is really there.
//
// # Recovery
//
// Open checks every segment's header and reads the last segment to its
// end. A record at the tail of the last segment that is torn (cut short
// by a crash mid-append) or fails its checksum, with nothing valid after
// it, is truncated away, and Recovery reports it for the caller to log.
// Damage anywhere else — a bad record followed by valid ones, a bad
// record in an earlier segment (found by Replay), a bad header — is a
// *CorruptError matching errs.ErrCorrupt, and nothing after it is loaded.
// Repair then keeps every record before the damage and drops the rest:
// run it only after deciding that losing those records beats keeping the
// directory as it is for inspection (copy it first); a damaged segment
// header or seal that the rest of the file tells how to undo it rewrites
// instead, losing nothing. A segment of another format version is a
// *VersionError matching errs.ErrFormatVersion; a header whose checksum
// fails is damage, whatever its version field reads.
//
// # Identity and seals
//
// Every segment (format version 2) carries its data directory's identity
// (Options.ID, Log.ID): a segment of another directory is a *CorruptError.
// A segment the log left for a new one ends with a seal naming the new
// one's base, written once the new one is durable: a seal naming a
// segment that is not there means segments were removed (a *CorruptError
// naming the missing one).
//
// One Log per directory: the caller holds the directory's lock
// (vfs.FS.Lock) while the Log is open, and while Repair runs.
package wal
