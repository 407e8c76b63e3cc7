// Package errs holds the sentinel errors that the engine's packages wrap.
// The root package re-exports each one under the same name (ttldb.ErrX is
// errs.ErrX), so errors.Is matches whichever layer produced the error; the
// documentation of each lives there.
package errs

import "errors"

// The sentinels the engine's packages need; see the root package's errors.go.
var (
	ErrInvalidDocument = errors.New("ttldb: invalid document")
	ErrInvalidFilter   = errors.New("ttldb: invalid filter")
	ErrInvalidUpdate   = errors.New("ttldb: invalid update")
	ErrImmutableID     = errors.New("ttldb: _id is immutable")
	ErrInvalidOptions  = errors.New("ttldb: invalid options")
	ErrValidation      = errors.New("ttldb: document failed validation")
	ErrDecode          = errors.New("ttldb: cannot decode document")
	ErrExpression      = errors.New("ttldb: expression failed")
	// ErrMemoryLimit: a blocking aggregation stage would hold more than
	// its memory limit (the engine's DB-wide memory limit is the same
	// sentinel).
	ErrMemoryLimit = errors.New("ttldb: memory limit reached")
)

// The sentinels of the storage layer (internal/vfs, internal/wal); the
// root package re-exports them.
var (
	// ErrLocked: another DB, in this process or another, holds the
	// directory's lock.
	ErrLocked = errors.New("ttldb: directory is locked by another DB")
	// ErrCorrupt: a file failed its checksum or framing before its tail.
	ErrCorrupt = errors.New("ttldb: corrupt file")
	// ErrFormatVersion: a file was written in a format version this build
	// does not read.
	ErrFormatVersion = errors.New("ttldb: unsupported file format version")
	// ErrLogFailed: a write or fsync of the log failed; the log accepts
	// nothing more until it is reopened.
	ErrLogFailed = errors.New("ttldb: log failed")
)
