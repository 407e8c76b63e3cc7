package engine

import (
	"context"
	"fmt"
	"github.com/ttldb/ttldb/internal/codec"
	"hash/maphash"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// DB is an in-memory database: a set of named collections and one TTL
// monitor goroutine that deletes expired documents from all of them.
//
// A DB is safe for concurrent use by any number of goroutines. Close it when
// done: Close stops the monitor and waits for it to exit.
type DB struct {
	clock  Clock
	logger *slog.Logger
	cfg    config

	// mu guards collections. It is never held while a collection lock is
	// taken for writing; the order, where both are held, is DB.mu then a
	// collection's locks.
	mu          sync.RWMutex
	collections map[string]*collState

	closed atomic.Bool
	writes atomic.Uint64 // the last record version given (record.ver)
	seed   maphash.Seed  // of every collection's _id hash
	mem    atomic.Int64  // accounted bytes of all collections, plus reservations (memory.go)
	// foregroundWaits counts reads and writes that found a collection's
	// lock held and waited for it (collState.rlock, lockForegroundWrite):
	// one of the signals the TTL monitor gives way to (monitor_pace.go).
	foregroundWaits atomic.Uint64
	// ttlPaused: TTL deletion of every collection is paused (SetTTLPaused,
	// ttlpause.go); pauseMu orders its changes with their ops.
	ttlPaused atomic.Bool
	pauseMu   sync.Mutex
	monitor   *monitor
	metrics   *metricsRecorder
	ops       committer  // numbers committed ops and hands them on (commit.go)
	applyMu   sync.Mutex // serializes Apply calls (opapply.go)
	// An applied OpExpire's head records (applyExpire), reused from op
	// to op; guarded by applyMu.
	expireHeads []record

	// changeBuf is the change-stream buffer (changebuffer.go), attached
	// by the first Watch (or by Open); guarded by changesMu, which Close
	// takes to end every stream.
	changesMu sync.Mutex
	changeBuf *changeBuffer
	// streams holds the open change streams' figures for Metrics
	// (changestream_metrics.go).
	streams  streamRegistry
	persist  *persistence // the data directory (durability.go); nil: in memory
	restored RecoveryInfo // what WithRestore loaded, without a directory
	txns     txnManager   // open transactions (txnmanager.go)
}

// Option configures Open.
type Option func(*config) error

// config is what Options set; every field's zero value is replaced by its
// default in Open.
type config struct {
	clock       Clock
	logger      *slog.Logger
	monitor     MonitorOptions
	primary     func() bool
	hooks       []expireHookEntry
	observe     []DeleteObserver
	hideExpired bool
	txnLimits   TransactionLimits   // WithTransactionLimits
	bson        codec.DecodeOptions // WithBSONOptions
	memLimit    int64               // bytes; 0: none
	changes     ChangeStreamBufferOptions
	replicator  Replicator
	proposer    ExpireProposer // replicator, when it proposes TTL batches first
	durable     durableConfig
	needsDir    string // an option that needs WithDir, for the error
}

// BSONOptions adjusts how documents are decoded into the driver's types,
// as the driver's options.BSONOptions (the fields ttldb honours).
type BSONOptions struct {
	// DefaultDocumentM decodes a document into an interface destination
	// (an any field, an element of []any, a map[string]any value) as a
	// bson.M instead of a bson.D, the driver's default.
	DefaultDocumentM bool
}

// WithBSONOptions implements ttldb.WithBSONOptions, whose documentation is the contract.
func WithBSONOptions(o BSONOptions) Option {
	return func(cfg *config) error {
		cfg.bson = codec.DecodeOptions{DefaultDocumentM: o.DefaultDocumentM}
		return nil
	}
}

// WithClock implements ttldb.WithClock, whose documentation is the contract.
func WithClock(c Clock) Option {
	return func(cfg *config) error {
		if c == nil {
			return fmt.Errorf("%w: WithClock: nil clock", ErrInvalidOptions)
		}
		cfg.clock = c
		return nil
	}
}

// WithLogger implements ttldb.WithLogger, whose documentation is the contract.
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger: nil logger", ErrInvalidOptions)
		}
		cfg.logger = l
		return nil
	}
}

// Open implements ttldb.Open, whose documentation is the contract.
func Open(opts ...Option) (*DB, error) {
	cfg := config{
		clock:   SystemClock(),
		logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		monitor: DefaultMonitorOptions(),
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.monitor.validate(); err != nil {
		return nil, err
	}
	db := &DB{
		seed:        maphash.MakeSeed(),
		clock:       cfg.clock,
		logger:      cfg.logger,
		cfg:         cfg,
		collections: map[string]*collState{},
		metrics:     newMetricsRecorder(),
	}
	db.monitor = newMonitor(db, cfg.monitor)
	db.txns.init(db, cfg.txnLimits)
	switch {
	case cfg.durable.dir != "" && cfg.replicator != nil:
		return nil, fmt.Errorf("%w: WithDir and WithReplicator: a replicated DB keeps its state in the replicator's log", ErrInvalidOptions)
	case cfg.durable.dir != "":
		if err := db.openDir(cfg.durable); err != nil { // durability.go
			return nil, err
		}
	case cfg.needsDir != "":
		return nil, fmt.Errorf("%w: %s needs WithDir", ErrInvalidOptions, cfg.needsDir)
	case cfg.durable.restore != nil:
		if err := db.restore(cfg.durable); err != nil {
			return nil, err
		}
	}
	if cfg.replicator != nil {
		db.ops.replicator = cfg.replicator
		db.ops.wanted.Store(true)
	}
	if cfg.changes.AttachAtOpen {
		// After loading: the buffer's first op follows the loaded ones
		// (a snapshot's, a log's, a backup's: none of them is in it).
		// WithDir's snapshotter runs already: take the lock.
		db.changesMu.Lock()
		db.attachChanges()
		db.changesMu.Unlock()
	}
	db.monitor.start()
	return db, nil
}

// Close implements ttldb.DB.Close, whose documentation is the contract.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return nil
	}
	db.txns.closeAll()
	db.monitor.stop()
	db.closeChanges()
	if db.persist != nil {
		return db.persist.close()
	}
	return nil
}

func (db *DB) checkOpen() error {
	if db.closed.Load() {
		return ErrClosed
	}
	return nil
}

// validateCollectionName applies MongoDB's rules that matter here.
func validateCollectionName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty collection name", ErrInvalidOptions)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: collection name %q is not valid UTF-8", ErrInvalidOptions, name)
	case strings.ContainsAny(name, "$\x00"):
		return fmt.Errorf("%w: collection name %q: may not contain '$' or NUL", ErrInvalidOptions, name)
	case strings.HasPrefix(name, "system."):
		return fmt.Errorf("%w: collection name %q: the system. prefix is reserved", ErrInvalidOptions, name)
	}
	return nil
}

// Collection implements ttldb.DB.Collection, whose documentation is the contract.
func (db *DB) Collection(name string) *Collection {
	return &Collection{db: db, name: name, nameErr: validateCollectionName(name)}
}

// CreateCollection implements ttldb.DB.CreateCollection, whose documentation is the contract.
func (db *DB) CreateCollection(ctx context.Context, name string, opts CollectionOptions) (coll *Collection, err error) {
	if err := db.writable(); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := db.refuseTxn(ctx, "CreateCollection"); err != nil {
		return nil, err
	}
	defer db.durable(&err)
	return replicated(db, func() (*Collection, error) { return db.createCollectionBegun(name, opts) })
}

// createCollectionBegun is CreateCollection once the replicator (if any)
// let it begin.
func (db *DB) createCollectionBegun(name string, opts CollectionOptions) (*Collection, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	if err := validateCollectionName(name); err != nil {
		return nil, err
	}
	st, err := newCollState(db, name, opts)
	if err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.collections[name]; ok {
		return nil, fmt.Errorf("%w: collection %q", ErrCollectionExists, name)
	}
	db.collections[name] = st
	db.commitCreate(st)
	return db.Collection(name), nil
}

// commitCreate commits the OpCreateCollection of a collection just added to
// the DB, when ops are wanted. Call holding db.mu for writing, before any
// other goroutine can see the collection: its creation is then committed
// before any of its writes, and after the drop of the collection it
// replaces (DropCollection commits under db.mu too).
func (db *DB) commitCreate(st *collState) {
	if !db.ops.opsWanted() {
		return
	}
	opts := st.opts
	if st.ts != nil {
		// As it applies now: CollModTimeSeries cannot run before the
		// collection is visible, so it is the period it was created with.
		opts.ExpireAfterSeconds = nil
		if e := st.ts.collExp.expireAfter.Load(); e >= 0 {
			opts.ExpireAfterSeconds = Seconds(int32(e))
		}
	}
	db.ops.commit([]Op{{Kind: OpCreateCollection, Collection: st.name, Time: opTime(db.clock.Now()), Spec: collectionSpec(opts)}})
}

// ListCollectionNames implements ttldb.DB.ListCollectionNames, whose documentation is the contract.
func (db *DB) ListCollectionNames(ctx context.Context) ([]string, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	names := make([]string, 0, len(db.collections))
	for n := range db.collections {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// DropCollection implements ttldb.DB.DropCollection, whose documentation is the contract.
func (db *DB) DropCollection(ctx context.Context, name string) (err error) {
	if err := db.writable(); err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := db.refuseTxn(ctx, "DropCollection"); err != nil {
		return err
	}
	defer db.durable(&err)
	_, err = replicated(db, func() (struct{}, error) { return struct{}{}, db.dropCollectionBegun(name) })
	return err
}

// dropCollectionBegun is DropCollection once the replicator (if any) let
// it begin.
func (db *DB) dropCollectionBegun(name string) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	for {
		db.mu.RLock()
		st, ok := db.collections[name]
		db.mu.RUnlock()
		if !ok {
			return fmt.Errorf("%w: collection %q", ErrNotFound, name)
		}
		// The collection's write locks first (no write of it runs, and
		// none commits, until the drop is done), then db.mu, to remove it
		// and commit the drop before a write can create it anew: in the
		// op log the drop comes after every op of the collection it
		// drops and before every op of the one that replaces it.
		if dropped, _ := st.dropIfCurrent(db, nil); dropped {
			return nil
		}
		// Dropped and replaced meanwhile: drop the one there is now.
	}
}

// dropIfCurrent drops s if it is still the DB's collection of its name,
// and reports whether it was. applied is the OpDropCollection DB.Apply
// applies (nil for a local drop): committed with its number, and if it
// cannot be (ErrOpSequence), nothing is dropped.
func (s *collState) dropIfCurrent(db *DB, applied *Op) (bool, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.ts != nil {
		s.ts.mu.Lock()
		defer s.ts.mu.Unlock()
	}
	db.mu.Lock()
	current := db.collections[s.name] == s
	var err error
	switch {
	case !current:
	case applied != nil:
		err = db.ops.commitApplied([]Op{*applied})
	case db.ops.opsWanted():
		db.ops.commit([]Op{{Kind: OpDropCollection, Collection: s.name, Time: opTime(db.clock.Now())}})
	}
	if current && err == nil {
		delete(db.collections, s.name)
	}
	db.mu.Unlock()
	if !current || err != nil {
		return false, err
	}
	if s.ts != nil {
		s.ts.dropped = true
	}
	s.mu.Lock()
	s.dropped = true
	s.mu.Unlock()
	s.db.mem.Add(-s.memAcct) // its memory goes with it
	s.memAcct = 0
	s.memPub.Store(0)
	return true, nil
}

// state returns the collection's state, creating it when create is set. It
// returns nil, nil for a missing collection when create is false.
func (db *DB) state(name string, create bool) (*collState, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	db.mu.RLock()
	st := db.collections[name]
	db.mu.RUnlock()
	if st != nil || !create {
		return st, nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if st = db.collections[name]; st != nil {
		return st, nil
	}
	st, err := newCollState(db, name, CollectionOptions{})
	if err != nil {
		return nil, err
	}
	db.collections[name] = st
	db.commitCreate(st)
	return st, nil
}

// snapshotCollections returns the live collections, sorted by name, for the
// monitor to visit in a stable order.
func (db *DB) snapshotCollections() []*collState {
	db.mu.RLock()
	out := make([]*collState, 0, len(db.collections))
	for _, st := range db.collections {
		out = append(out, st)
	}
	db.mu.RUnlock()
	slices.SortFunc(out, func(a, b *collState) int { return strings.Compare(a.name, b.name) })
	return out
}
