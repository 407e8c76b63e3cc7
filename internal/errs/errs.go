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
)
