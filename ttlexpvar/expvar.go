// Package ttlexpvar publishes a ttldb DB's metrics under expvar, so that
// /debug/vars shows them as JSON beside the runtime's memstats.
//
// It is a package of its own because importing expvar registers the
// /debug/vars handler on http.DefaultServeMux and links net/http into the
// binary: a program that imports ttldb alone gets neither.
package ttlexpvar

import (
	"errors"
	"expvar"
	"fmt"
	"sync"

	"github.com/ttldb/ttldb"
)

// ErrNameTaken is returned by Publish for a name expvar already holds (from
// an earlier Publish or from any other package): expvar cannot unpublish
// or replace a variable, and its own Publish panics on a duplicate.
var ErrNameTaken = errors.New("ttlexpvar: expvar name already published")

// mu serializes Publish, so that two calls with the same name cannot both
// pass the check.
var mu sync.Mutex

// Publish makes db's metrics an expvar variable named name: each read of
// it (each request to /debug/vars) takes db.Metrics() and renders it as
// JSON, which decodes back into a ttldb.Metrics (per-index maps are keyed
// "collection.index"). A read costs one Metrics call, which does not grow
// with the documents or the backlog. Give each DB of a process its own
// name, e.g. "ttldb.sessions".
//
// The JSON has every figure of Metrics under its Go field names: TTL,
// Storage, Documents, DocumentBytes, Durability, ChangeStreams, and
// Transactions, whose Started, Committed and Conflicts counters, Aborted
// counts by cause ("caller", "conflict", "lifetime", "limit", "session",
// "close", "error"), Open gauge and CommitLatency histogram are those of
// ttldb.TransactionMetrics. Durations, histograms' sums and bounds
// included, are in nanoseconds (time.Duration's JSON).
//
// An empty name or a nil db is ttldb.ErrInvalidOptions; a name already
// published is ErrNameTaken, and nothing changes. The variable lives as
// long as the process (expvar has no unpublish); after db.Close it keeps
// showing the DB's last counters. Publish is safe for concurrent use; a
// package that calls expvar.Publish itself with the same name at the same
// moment can still make expvar panic.
func Publish(name string, db *ttldb.DB) error {
	if name == "" {
		return fmt.Errorf("%w: ttlexpvar.Publish: empty name", ttldb.ErrInvalidOptions)
	}
	if db == nil {
		return fmt.Errorf("%w: ttlexpvar.Publish %q: nil DB", ttldb.ErrInvalidOptions, name)
	}
	mu.Lock()
	defer mu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("%w: %q", ErrNameTaken, name)
	}
	expvar.Publish(name, expvar.Func(func() any { return db.Metrics() }))
	return nil
}
