package wal

import (
	"errors"
	"fmt"

	"github.com/ttldb/ttldb/internal/errs"
)

// Errors of the log's API. Those about the files wrap the sentinels of
// internal/errs, which the root package re-exports.
var (
	// ErrClosed is returned by every method of a closed Log.
	ErrClosed = errors.New("wal: log is closed")
	// ErrTooLarge is returned by Write for a payload above MaxRecordSize.
	// The log is unchanged.
	ErrTooLarge = errors.New("wal: record too large")
	// ErrOutOfOrder is returned by Write for a seq not above the last
	// one written. The log is unchanged.
	ErrOutOfOrder = errors.New("wal: seq out of order")
)

// CorruptError is a damaged log found before its tail: a record that fails
// its checksum or framing and is followed by valid ones, damage in a
// segment that is not the last, a bad segment header, or records missing
// at the front. It matches errs.ErrCorrupt. Nothing after it is loaded;
// Repair keeps the records before it (up to LastSeq) and drops the rest.
type CorruptError struct {
	Segment string // the segment's file name
	Offset  int64  // where the bad record or header starts in it
	Reason  string // what is wrong
	LastSeq uint64 // seq of the last valid record before the damage (0: none, or unknown for a bad header)
}

// Error names the segment, the offset and the last valid seq, and how to
// recover.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v: log segment %s at offset %d: %s; the valid records end at seq %d (repairing the log keeps them and drops the rest)",
		errs.ErrCorrupt, e.Segment, e.Offset, e.Reason, e.LastSeq)
}

// Is makes errors.Is(err, errs.ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == errs.ErrCorrupt }

// VersionError is a segment written in a format version this build does
// not read. It matches errs.ErrFormatVersion.
type VersionError struct {
	File string // the segment's file name
	Got  uint32 // the version in the file
}

// Error names the file and both versions, and what to do.
func (e *VersionError) Error() string {
	advice := "a newer ttldb wrote it: open it with that version"
	if e.Got < MinVersion {
		advice = "no upgrade path exists from that version"
	}
	return fmt.Sprintf("%v: log segment %s has format version %d, this build reads versions %d to %d (%s)",
		errs.ErrFormatVersion, e.File, e.Got, MinVersion, Version, advice)
}

// Is makes errors.Is(err, errs.ErrFormatVersion) hold.
func (e *VersionError) Is(target error) bool { return target == errs.ErrFormatVersion }

// failure wraps the error that failed the log so that it matches both
// errs.ErrLogFailed and the cause (syscall.ENOSPC, syscall.EIO...).
func failure(cause error) error {
	return fmt.Errorf("%w: %w", errs.ErrLogFailed, cause)
}
