package ttldb

import (
	"context"
	"log/slog"

	"github.com/ttldb/ttldb/internal/engine"
)

// DB is an in-memory database: a set of named collections and one TTL
// monitor goroutine that deletes expired documents from all of them.
//
// A DB is safe for concurrent use by any number of goroutines. Close it when
// done: Close stops the monitor and waits for it to exit.
type DB engine.DB

// Option configures Open.
type Option = engine.Option

// BSONOptions adjusts how documents are decoded into the driver's types,
// as the driver's options.BSONOptions: DefaultDocumentM decodes a document
// into an interface destination (an any field, an element of []any, a
// map[string]any value) as a bson.M instead of the driver's default,
// bson.D. It applies to every Decode and All of the DB's results, cursors
// and change streams; a Document destination is unaffected.
type BSONOptions = engine.BSONOptions

// WithBSONOptions sets the DB's BSONOptions (the zero value: the driver's
// defaults).
func WithBSONOptions(o BSONOptions) Option {
	return engine.WithBSONOptions(o)
}

// WithClock makes the DB read all time through c (default: SystemClock).
// Tests pass a *ttltest.Clock to run days of TTL schedule in microseconds.
func WithClock(c Clock) Option {
	return engine.WithClock(c)
}

// WithLogger makes the DB log through l (default: a logger that discards
// everything). The monitor logs index errors, dropped collections and hook
// failures at Warn and Error levels.
func WithLogger(l *slog.Logger) Option {
	return engine.WithLogger(l)
}

// Open returns a new, empty DB configured by opts and starts its TTL
// monitor (unless MonitorOptions.Disabled). It fails with ErrInvalidOptions
// for a bad option.
func Open(opts ...Option) (*DB, error) {
	dB, err := engine.Open(opts...)
	return (*DB)(dB), err
}

// Close stops the TTL monitor, waiting for its goroutine to exit (it stops
// between two batches, even in the middle of a long pass), and makes every
// later call on the DB or its collections fail with ErrClosed. It ends
// every change stream: a waiting Next returns false at once, and Err
// returns ErrClosed. Close is idempotent: a second call returns nil at
// once.
//
// Called from an ExpireHook or DeleteObserver, Close does not wait for the
// pass it is called from (that would wait for itself): it returns at once,
// no further batch is deleted, and the monitor goroutine exits as soon as
// the callback returns. A RunTTLPass running on another goroutine is not
// waited for either; it stops before its next batch with context.Canceled.
func (db *DB) Close() error {
	return (*engine.DB)(db).Close()
}

// Collection returns a handle on the collection called name. The collection
// is created, with default options, by the first write to it (as in
// MongoDB); reads of a collection that does not exist see no documents.
// Handles are cheap, safe for concurrent use, and stay valid across
// DropCollection: a write after a drop creates the collection anew.
//
// An invalid name (empty, containing '$' or NUL, or starting with
// "system.") yields a handle whose every method returns ErrInvalidOptions.
func (db *DB) Collection(name string) *Collection {
	return (*Collection)((*engine.DB)(db).Collection(name))
}

// CreateCollection creates a collection with options (capped size, a
// $jsonSchema validator, hiding of expired documents). It fails with
// ErrInvalidOptions for bad options and, as MongoDB does, with
// ErrCollectionExists if a collection of that name exists already.
func (db *DB) CreateCollection(ctx context.Context, name string, opts CollectionOptions) (*Collection, error) {
	collection, err := (*engine.DB)(db).CreateCollection(ctx, name, opts)
	return (*Collection)(collection), err
}

// ListCollectionNames returns the names of the existing collections, sorted.
func (db *DB) ListCollectionNames(ctx context.Context) ([]string, error) {
	return (*engine.DB)(db).ListCollectionNames(ctx)
}

// DropCollection removes the collection, its documents and its indexes. It
// fails with ErrNotFound if there is no such collection. A TTL pass working
// on the collection notices the drop at its next batch and moves on. It
// waits for the write running on the collection, if any, to end.
func (db *DB) DropCollection(ctx context.Context, name string) error {
	return (*engine.DB)(db).DropCollection(ctx, name)
}

// WithMemoryLimit caps the memory a DB may hold, in bytes, as the DB
// accounts it: the documents and their _id map (the store's chunks, slot
// table and hash map, dead bytes included until they are reclaimed), and
// the index and TTL trees, estimated per entry (index keys included); for
// a time-series collection, its buckets (their measurements, spare
// capacity included, and meta values) and their entries in its trees and
// indexes. A
// write that would go past the limit fails with ErrMemoryLimit and changes
// nothing; deletions, DropIndex, DropCollection and Compact make room, and
// the TTL monitor's deletions are never refused. Metrics().Storage reports
// the accounted bytes. 0 (the default) means no limit; a negative limit is
// ErrInvalidOptions.
//
// The check is made before a write commits, against a bound of what the
// write adds; the accounting can pass the limit by less than one document
// when a store seals a partly filled chunk. Before refusing a write, the
// collection reclaims the memory of its mostly-dead chunks.
func WithMemoryLimit(bytes int64) Option {
	return engine.WithMemoryLimit(bytes)
}

// StorageMetrics report the memory a DB holds, as it accounts it for
// WithMemoryLimit (see there for what counts).
type StorageMetrics = engine.StorageMetrics
