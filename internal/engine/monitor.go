package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
)

// MonitorOptions configure the TTL monitor, the one goroutine per DB that
// deletes expired documents. A zero field takes the default shown; the
// defaults are MongoDB's.
type MonitorOptions struct {
	// Disabled turns the monitor off (MongoDB's ttlMonitorEnabled=false):
	// no pass runs and no metric moves until SetTTLMonitorEnabled(true).
	// RunTTLPass still runs a pass on request.
	Disabled bool

	// Interval is the sleep between passes. Default 60 s (MongoDB's
	// ttlMonitorSleepSecs, ArangoDB's --ttl.frequency).
	Interval time.Duration

	// PerIndexMaxDeletes ends a visit to one index after this many
	// deletions (MongoDB's ttlIndexDeleteTargetDocs). Default 50000.
	PerIndexMaxDeletes int
	// PerIndexMaxTime ends a visit to one index after this much clock time
	// (MongoDB's ttlIndexDeleteTargetTimeMS). Default 1 s. Both budgets are
	// checked after a batch: a visit deletes at least one batch.
	PerIndexMaxTime time.Duration
	// SubPassMaxTime is the sub-pass target time (MongoDB's
	// ttlMonitorSubPassTargetSecs). A sub-pass repeats rounds over the
	// indexes a budget cut short until none is left or this much clock time
	// has passed since the sub-pass began; it is checked between rounds, so
	// a sub-pass always completes its first round. Default 60 s;
	// SubPassEveryRound makes every round end its sub-pass (a target of 0).
	SubPassMaxTime time.Duration

	// MaxTotalRemoves caps the deletions of one pass over all collections
	// (ArangoDB's --ttl.max-total-removes). 0 (the default): no cap.
	MaxTotalRemoves int
	// MaxCollectionRemoves caps the deletions of one pass in any one
	// collection (ArangoDB's --ttl.max-collection-removes). 0: no cap.
	MaxCollectionRemoves int

	// BatchSize is how many documents the monitor deletes per hold of a
	// collection's write lock; readers and writers run between batches.
	// Default 1024: a batch holds the lock for about 0.3 ms on 2 cores.
	BatchSize int
	// ProposalBatchSize replaces BatchSize for a DB whose Replicator
	// proposes TTL batches before deleting them (ExpireProposer: a
	// replica node): each batch there holds the collection's write lock
	// and the DB's commit lock for a round trip of the replicated log as
	// well as for its deletion, so larger batches take fewer round trips
	// per document, and a write that meets a batch waits for all of it
	// (a writer's latency during a pass: the replica module's README,
	// Performance). Default 4 × BatchSize (4096);
	// time-series collections keep BatchSize. Without an ExpireProposer
	// it is not used.
	ProposalBatchSize int
	// BatchPause is how long the monitor waits, on the DB's Clock, between
	// two batches of one index visit while the program has foreground
	// work: on 2 cores a monitor that deletes batch after batch delays the
	// program's goroutines (readers, writers, the host service's) by
	// milliseconds. With the system clock the monitor pauses only when,
	// since the previous batch, a goroutine waited 100 µs or more for a
	// processor (runtime/metrics /sched/latencies:seconds) or a read or
	// write of the DB waited for a collection's lock; it
	// then makes the next batch a quarter of BatchSize (a goroutine queued
	// behind the monitor waits for a batch at most), and while the
	// program keeps waiting, batch after batch, it doubles the pause each
	// time, up to the last batch's own duration (the monitor then keeps
	// half of its processor's time), halving it after a batch with no
	// wait. An idle program's mass expiry thus runs at full speed. With a clock given by WithClock
	// it pauses after every batch but the last, with whole batches.
	// Between two batches it always yields its processor once
	// (runtime.Gosched). 0 takes the default: DefaultBatchPause with the
	// system clock, no pause with a clock given by WithClock (a fake
	// clock's timers wait for the test to advance them: set BatchPause to
	// pace on it). NoBatchPause turns the pause off.
	BatchPause time.Duration

	// MaxDeletesPerSecond, if above 0, caps the monitor's deletion rate
	// over all TTL indexes, as CockroachDB's TTL rate limit does: a token
	// bucket on the DB's clock holding a batch's deletions, or 10 ms'
	// worth if more, from which each batch takes its documents; when it
	// runs short, the monitor waits until it is full again (one wait per
	// 10 ms or so at high rates, rather than one per batch). Off (0) by
	// default: the adaptive pacing above alone decides. Negative is
	// ErrInvalidOptions.
	MaxDeletesPerSecond int
	// MaxDutyCycle, if above 0, caps the share of wall time (by the DB's
	// clock) the monitor spends deleting, as Redis bounds its active
	// expiry to 25% of a core: once its batches have taken b, at least
	// MaxDutyCycle·10 ms, it waits b·(1-MaxDutyCycle)/MaxDutyCycle (one
	// wait per window of about 10 ms, not one per batch). Off (0) by
	// default; 1 is no cap. Outside 0..1 is ErrInvalidOptions.
	MaxDutyCycle float64
	// RestoreGuard, if set, drains the backlog a DB opens with at a
	// bounded rate rather than in a burst, as TiDB switches TTL off after
	// a restore so that restored data is not mass-deleted at once: see
	// RestoreGuard. Nil (the default): no guard.
	RestoreGuard *RestoreGuard

	// DeadlineWake makes the monitor sleep until the earliest expiry
	// threshold of any TTL index (but at least DeadlineWakeFloor, and at
	// most Interval) instead of a fixed Interval, and wakes it early when a
	// write brings the earliest threshold forward: documents go within
	// milliseconds of expiring. Off by default.
	DeadlineWake bool
	// DeadlineWakeFloor is the shortest sleep between passes with
	// DeadlineWake. Default 1 ms. It is also the first wait before a failed
	// expire-hook delivery is retried; each pass with a failure on the
	// index doubles that wait, up to Interval (see ExpireHook). With
	// DeadlineWake, a document whose delivery failed wakes the monitor only
	// for its retry, not at every floor.
	DeadlineWakeFloor time.Duration
}

// RestoreGuard bounds the TTL monitor's deletion rate after Open
// (MonitorOptions.RestoreGuard). It holds from Open when the DB was loaded
// WithRestore, or when the TTL indexes' backlog at Open (counted as
// Metrics counts it) is at least Backlog; it is released at the end of
// the first pass that leaves no backlog. While it holds the monitor
// deletes at most MaxDeletesPerSecond a second (as
// MonitorOptions.MaxDeletesPerSecond does, the lower of the two applying),
// and Metrics().TTL.RestoreGuard is true.
type RestoreGuard struct {
	// Backlog is the backlog at Open from which the guard holds; 0: only
	// after WithRestore. Negative is ErrInvalidOptions.
	Backlog int64
	// MaxDeletesPerSecond is the rate while the guard holds: at least 1.
	MaxDeletesPerSecond int
}

// SubPassEveryRound, as MonitorOptions.SubPassMaxTime, is a sub-pass target
// of 0: every round ends its sub-pass, and the next sub-pass re-reads the
// list of TTL indexes. (A zero SubPassMaxTime takes the default.) It is the
// only negative duration MonitorOptions accepts.
const SubPassEveryRound time.Duration = -1

// NoBatchPause, as MonitorOptions.BatchPause, makes the monitor delete
// batch after batch with no pause. (A zero BatchPause takes the default.)
const NoBatchPause time.Duration = -1

// Defaults of MonitorOptions.
const (
	DefaultMonitorInterval    = 60 * time.Second
	DefaultPerIndexMaxDeletes = 50000
	DefaultPerIndexMaxTime    = time.Second
	DefaultSubPassMaxTime     = 60 * time.Second
	DefaultMonitorBatchSize   = 1024
	DefaultDeadlineWakeFloor  = time.Millisecond
	// DefaultBatchPause is the pause between batches with the system
	// clock (MonitorOptions.BatchPause).
	DefaultBatchPause = 20 * time.Microsecond
)

// DefaultMonitorOptions implements ttldb.DefaultMonitorOptions, whose documentation is the contract.
func DefaultMonitorOptions() MonitorOptions {
	return MonitorOptions{}.withDefaults()
}

func (o MonitorOptions) withDefaults() MonitorOptions {
	if o.Interval == 0 {
		o.Interval = DefaultMonitorInterval
	}
	if o.PerIndexMaxDeletes == 0 {
		o.PerIndexMaxDeletes = DefaultPerIndexMaxDeletes
	}
	if o.PerIndexMaxTime == 0 {
		o.PerIndexMaxTime = DefaultPerIndexMaxTime
	}
	if o.SubPassMaxTime == 0 {
		o.SubPassMaxTime = DefaultSubPassMaxTime
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultMonitorBatchSize
	}
	if o.ProposalBatchSize == 0 {
		o.ProposalBatchSize = 4 * o.BatchSize
	}
	if o.DeadlineWakeFloor == 0 {
		o.DeadlineWakeFloor = DefaultDeadlineWakeFloor
	}
	return o
}

func (o MonitorOptions) validate() error {
	switch {
	case o.Interval < 0, o.PerIndexMaxTime < 0, o.SubPassMaxTime < 0 && o.SubPassMaxTime != SubPassEveryRound, o.DeadlineWakeFloor < 0,
		o.BatchPause < 0 && o.BatchPause != NoBatchPause:
		return fmt.Errorf("%w: MonitorOptions: negative duration", ErrInvalidOptions)
	case o.PerIndexMaxDeletes < 0, o.MaxTotalRemoves < 0, o.MaxCollectionRemoves < 0, o.BatchSize < 0, o.ProposalBatchSize < 0,
		o.MaxDeletesPerSecond < 0:
		return fmt.Errorf("%w: MonitorOptions: negative count", ErrInvalidOptions)
	case !(o.MaxDutyCycle >= 0 && o.MaxDutyCycle <= 1): // NaN too
		return fmt.Errorf("%w: MonitorOptions: MaxDutyCycle %v is outside 0..1", ErrInvalidOptions, o.MaxDutyCycle)
	case o.RestoreGuard != nil && (o.RestoreGuard.Backlog < 0 || o.RestoreGuard.MaxDeletesPerSecond < 1):
		return fmt.Errorf("%w: MonitorOptions: RestoreGuard needs a Backlog of 0 or more and a MaxDeletesPerSecond of 1 or more", ErrInvalidOptions)
	}
	return nil
}

// WithMonitor implements ttldb.WithMonitor, whose documentation is the contract.
func WithMonitor(o MonitorOptions) Option {
	return func(cfg *config) error {
		if err := o.validate(); err != nil {
			return err
		}
		cfg.monitor = o.withDefaults()
		return nil
	}
}

// WithPrimary implements ttldb.WithPrimary, whose documentation is the contract.
func WithPrimary(isPrimary func() bool) Option {
	return func(cfg *config) error {
		if isPrimary == nil {
			return fmt.Errorf("%w: WithPrimary: nil func", ErrInvalidOptions)
		}
		cfg.primary = isPrimary
		return nil
	}
}

// ExpireHook receives a batch of expired documents (copies) chosen for
// deletion, before they are deleted and outside every collection lock: the
// place to archive them. ctx is cancelled when the DB closes.
//
// Delivery is at least once, in every mode (the monitor's passes with a
// fixed Interval or DeadlineWake, RunTTLPass, and a write that meets an
// expired document under HideExpired): a document is deleted only after
// every hook handled it, and it may be offered again after a hook handled
// it (it changed while the hook ran, a later hook failed, or Close came
// between the hook and the deletion). So a hook must be idempotent: a
// delivery's identity is the document's _id with its version
// (ExpiredBatch.Versions), and two deliveries with the same pair carry the
// same stored document. A DB opened WithDir gives each document of an
// ordinary collection its version again when it reopens (the log and the
// snapshot carry it), so the pair identifies a delivery across a restart
// too.
//
// Return nil when every document was handled. Return an *ExpireHookError
// naming the _id values that were not: the others are deleted. Any other
// error (or a panic) means none was. A document not handled stays stored
// and is set aside: it never blocks the other expired documents of its
// index, which go on being offered and deleted, and it is retried alone
// (one document per call). An index's retries back off while deliveries
// keep failing: the first retry comes MonitorOptions.DeadlineWakeFloor
// after the failure, and each pass with a failure doubles the wait, up to
// Interval; with DeadlineWake the monitor wakes for the retry. Errors
// count in PassResult.Errors and Metrics().TTL.HookErrors (a pass with a
// failure is not Complete); Metrics().TTL.FailedDeliveries shows, per
// index, the documents waiting and the age of the oldest failure.
//
// The monitor calls hooks one at a time, on its goroutine (or that of
// RunTTLPass). A write that meets an expired, hidden document (HideExpired)
// calls them on its own goroutine, possibly while the monitor does: with
// HideExpired, a hook must be safe for concurrent use. A hook may call
// DB.Close: Close returns at once, the documents are not deleted and the
// pass stops.
type ExpireHook func(ctx context.Context, batch ExpiredBatch) error

// ExpiredBatch is what an ExpireHook receives.
type ExpiredBatch struct {
	Collection string
	Index      string     // the TTL index under which the documents expired
	Docs       []Document // copies; the hook may keep or change them
	// Versions[i] is the version of Docs[i]: with its _id, the identity of
	// the delivery. A version is a number the DB gives every document
	// version it stores (an insert, or an update or replacement that
	// changes the document), never reused within the DB: it changes
	// exactly when the stored document changes, also across a delete and
	// an insert of the same _id.
	Versions []uint64
}

// WithOnExpire implements ttldb.WithOnExpire, whose documentation is the contract.
func WithOnExpire(h ExpireHook) Option {
	return func(cfg *config) error {
		if h == nil {
			return fmt.Errorf("%w: WithOnExpire: nil hook", ErrInvalidOptions)
		}
		cfg.hooks = append(cfg.hooks, expireHookEntry{h})
		return nil
	}
}

type expireHookEntry struct{ fn ExpireHook }

// DeleteEvent reports documents the TTL monitor deleted, after the deletion
// committed.
type DeleteEvent struct {
	Collection string
	Index      string
	// IDs are the deleted documents' _id values; for a time-series
	// collection, the removed measurements' (one each, not necessarily
	// unique), in the order Measurements yields them. The string values of
	// one event share one string's memory (a batch costs one allocation
	// for their bytes): keeping one of them keeps that memory.
	IDs     []any
	PassNow time.Time // the "now" of the pass that deleted them
	// removed holds, for a time-series collection, the removed
	// measurements in their bucket encoding: Measurements decodes them on
	// demand (tsexpiry.go).
	removed *tsRemoved
	// BatchNow is the instant this batch deleted against: every deleted
	// document's threshold is at or before it. It is the earlier of
	// PassNow and the clock read when the batch took the collection's write
	// lock, so a clock stepped back during a pass never deletes a document
	// before its threshold by the clock at the delete. A replica or a replay
	// applies the batch with this instant, without reading its own clock.
	// For a deletion by a write under HideExpired, it is that write's clock
	// reading, as PassNow is.
	BatchNow time.Time
}

// DeleteObserver is told of every committed TTL deletion, outside every
// lock: an application can replicate deletions to a secondary or a cache.
// It must not block for long. It runs on the monitor goroutine (or that of
// RunTTLPass), and, for an expired document a write deletes under
// HideExpired, on the writer's goroutine after the write committed (then
// PassNow is the write's clock reading). It may call DB.Close: Close
// returns at once and the pass stops before its next batch.
type DeleteObserver func(DeleteEvent)

// WithDeleteObserver implements ttldb.WithDeleteObserver, whose documentation is the contract.
func WithDeleteObserver(o DeleteObserver) Option {
	return func(cfg *config) error {
		if o == nil {
			return fmt.Errorf("%w: WithDeleteObserver: nil observer", ErrInvalidOptions)
		}
		cfg.observe = append(cfg.observe, o)
		return nil
	}
}

// WithHideExpired implements ttldb.WithHideExpired, whose documentation is the contract.
func WithHideExpired() Option {
	return func(cfg *config) error {
		cfg.hideExpired = true
		return nil
	}
}

// ErrNotPrimary is returned by RunTTLPass on a DB that is not the primary,
// or that stepped down during the pass.
var ErrNotPrimary = errors.New("ttldb: not primary")

// errSteppedDown ends a pass whose DB stopped being the primary.
var errSteppedDown = fmt.Errorf("%w: stepped down during the TTL pass", ErrNotPrimary)

// PassResult reports what one TTL pass did.
type PassResult struct {
	// Now is the pass's "now": no document whose threshold is after it is
	// deleted in this pass. Each batch deletes against the earlier of Now
	// and the clock at the batch (DeleteEvent.BatchNow).
	Now       time.Time
	Duration  time.Duration // clock time from start to end; 0 if the clock stepped back
	SubPasses int
	Deleted   int
	// Complete is false when a per-pass cap (MaxTotalRemoves or
	// MaxCollectionRemoves), Close or the context ended the pass with
	// expired documents (possibly) left, when Errors is not 0, and when
	// documents whose expire hook failed wait for a retry (see ExpireHook).
	Complete bool
	// Errors counts the index visits and the expire-hook calls that failed
	// in the pass (a hook call that failed for some documents counts
	// once); see the log.
	Errors int
}

// CurrentOp describes a TTL deletion in progress, as db.currentOp() shows
// MongoDB's.
type CurrentOp struct {
	Collection   string
	Index        string
	Deleted      int       // deleted so far in this index visit (buckets, for a time-series collection)
	RunningSince time.Time // when the visit began (DB clock)
	// TimeSeries marks the visit of a time-series collection's expiry rule
	// (Index is its partial TTL index or CollectionExpiryName): it deletes
	// buckets; Measurements counts the measurements removed so far.
	TimeSeries   bool
	Measurements int
}

// monitor is the TTL monitor: an owned goroutine with stop and done
// channels. Passes (its own and RunTTLPass's) are serialized by passSem.
type monitor struct {
	db   *DB
	opts atomic.Pointer[MonitorOptions]

	enabled atomic.Bool
	primary atomic.Bool

	wake     chan struct{} // one slot: re-arm the sleep now
	deadline atomic.Int64  // Unix ns the sleeping monitor will wake at (deadline mode)

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	done   chan struct{}

	// passSem holds one token while a pass runs: a semaphore rather than a
	// mutex so that waiting for a pass can be cancelled (by Close, or by
	// RunTTLPass's context).
	passSem  chan struct{}
	current  atomic.Pointer[CurrentOp]
	delivery *deliveries // failed expire-hook deliveries, retried with backoff

	// batch is the buffer a batch without expire hooks chooses its
	// documents into, reused from batch to batch (passes are serialized
	// by passSem). Empty between batches.
	batch []chosenDoc
	// gone is the buffer of a batch's deleted records (deleteBatch),
	// reused likewise. Cleared between batches.
	gone []record

	pace     pacer       // when to pause between batches (monitor_pace.go)
	guard    atomic.Bool // the RestoreGuard holds
	throttle throttle    // the rate and duty-cycle ceilings (monitor_pace.go)
	ids      idBatch     // the _id values of a batch, for the observers
	// lags counts the expiry lags of the batch under way, added to the
	// metrics once it is counted (expirylag.go).
	lags lagCounts

	started  bool
	loopGoid atomic.Uint64 // the monitor goroutine's id, for Close
}

func newMonitor(db *DB, o MonitorOptions) *monitor {
	m := &monitor{db: db, wake: make(chan struct{}, 1), done: make(chan struct{}), passSem: make(chan struct{}, 1), delivery: newDeliveries()}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	o = o.withDefaults()
	m.pace.adaptive = db.clock == SystemClock()
	m.pace.signals, m.pace.waits = defaultPaceSignals, &db.foregroundWaits
	if o.BatchPause == 0 {
		o.BatchPause = NoBatchPause
		if m.pace.adaptive {
			o.BatchPause = DefaultBatchPause
		}
	}
	m.opts.Store(&o)
	m.enabled.Store(!o.Disabled)
	m.primary.Store(true)
	m.deadline.Store(int64(^uint64(0) >> 1))
	return m
}

func (m *monitor) start() {
	if g := m.opts.Load().RestoreGuard; g != nil {
		db := m.db
		restored := db.cfg.durable.restore != nil
		if !restored && g.Backlog > 0 {
			var total int64
			for _, n := range db.backlogs(db.clock.Now()) {
				total += n
			}
			restored = total >= g.Backlog
		}
		m.guard.Store(restored)
	}
	m.started = true
	go m.loop()
}

// stop cancels the monitor and waits for its goroutine to exit, unless it
// runs on that goroutine (Close from a hook or observer of the monitor's
// pass): waiting there would wait for itself. The monitor then exits when
// the callback returns, stopping its pass before the next batch.
func (m *monitor) stop() {
	m.cancel()
	if m.started && !m.onLoopGoroutine() {
		<-m.done
	}
	// A RunTTLPass running on another goroutine stops before its next
	// batch (visitIndex and deleteBatch check m.ctx). Close does not wait
	// for it: Close may be called from a hook or observer, on that pass's
	// own goroutine.
}

// onLoopGoroutine reports whether the caller runs on the monitor goroutine.
func (m *monitor) onLoopGoroutine() bool {
	id := goid()
	return id != 0 && id == m.loopGoid.Load()
}

func (m *monitor) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *monitor) isPrimary() bool {
	if f := m.db.cfg.primary; f != nil && !f() {
		return false
	}
	return m.primary.Load()
}

// sleepFor returns how long to sleep before the next pass.
func (m *monitor) sleepFor(now time.Time) time.Duration {
	o := m.opts.Load()
	if !o.DeadlineWake {
		return o.Interval
	}
	d := o.Interval
	if next, ok := m.db.earliestThreshold(); ok {
		d = min(d, max(next.Sub(now), o.DeadlineWakeFloor))
	}
	if next, ok := m.delivery.nextRetry(now); ok {
		d = min(d, max(next.Sub(now), o.DeadlineWakeFloor))
	}
	m.deadline.Store(now.Add(d).UnixNano()) // d <= Interval: no overflow
	return d
}

func (m *monitor) loop() {
	defer close(m.done)
	m.loopGoid.Store(goid())
	for {
		now := m.db.clock.Now()
		timer := m.db.clock.NewTimer(m.sleepFor(now))
		select {
		case <-m.ctx.Done():
			timer.Stop()
			return
		case <-m.wake:
			timer.Stop() // abandoned: a fake clock must not count it as a waiter
			continue     // options changed or an earlier deadline: re-arm
		case <-timer.C():
		}
		m.deadline.Store(int64(^uint64(0) >> 1))
		if !m.enabled.Load() || !m.isPrimary() {
			continue
		}
		switch _, err := m.runPass(m.ctx); {
		case err == nil, errors.Is(err, context.Canceled):
		case errors.Is(err, ErrNotPrimary):
			m.db.logger.Info("ttl pass stopped", "err", err)
		default:
			m.db.logger.Error("ttl pass failed", "err", err)
		}
		if m.ctx.Err() != nil {
			return // closed during the pass, maybe from one of its callbacks
		}
	}
}

// notifyThreshold tells a deadline-mode monitor that a document now
// expires at th (zero: none), so that it wakes earlier if it must. It is on
// every TTL write's path, so it is one atomic load when there is nothing
// to do.
func (m *monitor) notifyThreshold(th time.Time) {
	if th.IsZero() || !m.opts.Load().DeadlineWake {
		return
	}
	if th.Before(time.Unix(0, m.deadline.Load())) {
		m.poke()
	}
}

// earliestThreshold returns the earliest expiry threshold in any TTL index,
// leaving out documents whose expire-hook delivery failed (their retry has
// its own time).
func (db *DB) earliestThreshold() (time.Time, bool) {
	var best time.Time
	found := false
	if db.ttlPaused.Load() {
		return best, false // SetTTLPaused: nothing is deleted
	}
	for _, s := range db.snapshotCollections() {
		if s.ttlPaused.Load() {
			continue // nothing of it is deleted: no reason to wake
		}
		if s.ts != nil {
			if th, ok := s.ts.earliestThreshold(); ok && (!found || th.Before(best)) {
				best, found = th, true // time-series: tsexpiry.go
			}
			continue
		}
		s.mu.RLock()
		for _, ix := range s.indexes {
			if ix.ttl == nil {
				continue
			}
			if e, ok := db.monitor.delivery.earliestUnparked(s, ix); ok {
				if th := ix.ttl.threshold(e); !found || th.Before(best) {
					best, found = th, true
				}
			}
		}
		s.mu.RUnlock()
	}
	return best, found
}

// SetTTLMonitorEnabled implements ttldb.DB.SetTTLMonitorEnabled, whose documentation is the contract.
func (db *DB) SetTTLMonitorEnabled(on bool) {
	db.monitor.enabled.Store(on)
	db.monitor.poke()
}

// SetTTLMonitorInterval implements ttldb.DB.SetTTLMonitorInterval, whose documentation is the contract.
func (db *DB) SetTTLMonitorInterval(d time.Duration) {
	if d <= 0 {
		return
	}
	m := db.monitor
	o := *m.opts.Load()
	o.Interval = d
	m.opts.Store(&o)
	m.poke()
}

// SetPrimary implements ttldb.DB.SetPrimary, whose documentation is the contract.
func (db *DB) SetPrimary(primary bool) {
	db.monitor.primary.Store(primary)
	db.monitor.poke()
}

// CurrentOp implements ttldb.DB.CurrentOp, whose documentation is the contract.
func (db *DB) CurrentOp() []CurrentOp {
	if op := db.monitor.current.Load(); op != nil {
		return []CurrentOp{*op}
	}
	return nil
}

// RunTTLPass implements ttldb.DB.RunTTLPass, whose documentation is the contract.
func (db *DB) RunTTLPass(ctx context.Context) (PassResult, error) {
	if err := db.writable(); err != nil {
		return PassResult{}, err
	}
	if !db.monitor.isPrimary() {
		return PassResult{}, ErrNotPrimary
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(db.monitor.ctx, cancel)
	defer stop()
	return db.monitor.runPass(ctx)
}

// ttlTarget is one TTL index to visit in a sub-pass.
type ttlTarget struct {
	coll *collState
	ix   *index
	ts   *tsExpiry // a time-series expiry rule (tsexpiry.go); ix stands for it
}

// ttlTargets returns the TTL indexes a pass visits: those of collections
// whose TTL deletion is not paused (SetTTLPaused, CollMod TTLPaused).
func (db *DB) ttlTargets() []ttlTarget {
	if db.ttlPaused.Load() {
		return nil
	}
	return db.ttlIndexes(false)
}

// ttlIndexes returns every TTL index (time-series expiry rules included),
// those of paused collections too if withPaused.
func (db *DB) ttlIndexes(withPaused bool) []ttlTarget {
	var out []ttlTarget
	for _, s := range db.snapshotCollections() {
		if s.ttlPaused.Load() && !withPaused {
			continue
		}
		s.mu.RLock()
		for _, ix := range s.indexes {
			if ix.ttl != nil {
				out = append(out, ttlTarget{coll: s, ix: ix})
			}
		}
		s.mu.RUnlock()
		out = append(out, s.tsTargets()...) // time-series: tsexpiry.go
	}
	return out
}

// stopped returns why a pass must stop: its ctx is done, or Close cancelled
// the monitor (a RunTTLPass's ctx learns that only asynchronously).
func (m *monitor) stopped(ctx context.Context) error {
	return cmp.Or(ctx.Err(), m.ctx.Err())
}

// passState is what a pass tracks across its sub-passes.
type passState struct {
	now          time.Time
	deleted      int
	byCollection map[*collState]int
	failed       map[*index]bool // visits that errored: not retried this pass
	capped       bool            // MaxCollectionRemoves held a collection back
}

// lockPass waits until no other pass runs, or until ctx is done or the
// monitor stopped. Waiting must be cancellable: a RunTTLPass whose hook
// calls Close holds the pass while Close waits for the monitor goroutine,
// which may be waiting here for that very pass.
func (m *monitor) lockPass(ctx context.Context) error {
	if err := m.stopped(ctx); err != nil {
		return err
	}
	select {
	case m.passSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-m.ctx.Done():
		return m.ctx.Err()
	}
	if err := m.stopped(ctx); err != nil {
		<-m.passSem
		return err
	}
	return nil
}

// runPass deletes, in sub-passes, everything expired at the pass's now.
// The pass and each sub-pass count when they end, however they end (as
// MongoDB counts them on scope exit): a pass stopped by Close, its context
// or a step-down is still a pass.
func (m *monitor) runPass(ctx context.Context) (res PassResult, err error) {
	if err := m.lockPass(ctx); err != nil {
		return PassResult{}, err
	}
	defer func() { <-m.passSem }()
	db, o := m.db, m.opts.Load()
	ps := &passState{now: db.clock.Now(), byCollection: map[*collState]int{}, failed: map[*index]bool{}}
	res.Now = ps.now
	if db.txns.nopen.Load() > 0 {
		db.txns.reapExpired(ps.now) // abandoned transactions hold documents
	}
	m.delivery.beginPass()
	defer func() {
		res.Deleted = ps.deleted
		m.delivery.endPass(db, &res)
		// A clock stepped back during the pass gives 0, not a negative.
		end := db.clock.Now()
		res.Duration = max(end.Sub(ps.now), 0)
		db.metrics.passDone(ps.now, res.Duration, ps.deleted)
		backlogs := db.backlogs(end)
		db.metrics.passEnded(end, backlogs)
		if m.guard.Load() && err == nil {
			var left int64
			for _, n := range backlogs {
				left += n
			}
			if left == 0 {
				m.guard.Store(false) // drained: the restore guard is released
			}
		}
	}()
	for {
		if err := m.stopped(ctx); err != nil {
			return res, err
		}
		more, err := m.subPass(ctx, o, ps, &res)
		res.SubPasses++
		db.metrics.subPasses.Add(1)
		if err != nil {
			return res, err
		}
		if !more {
			res.Complete = !ps.capped
			return res, nil
		}
		if o.MaxTotalRemoves > 0 && ps.deleted >= o.MaxTotalRemoves {
			return res, nil
		}
	}
}

// subPass is one sub-pass, as MongoDB's TTL monitor runs it: it re-reads
// the list of TTL indexes, then repeats rounds (each index still in the
// list visited once) over the indexes a budget cut short, until none is
// left or the sub-pass target time has passed. The target is checked only
// between rounds, so every sub-pass visits each index at least once and
// deletes at least one batch from each that has expired documents: no
// budget, however short, makes a pass spin without progress. more reports
// whether indexes cut short are left for the next sub-pass.
func (m *monitor) subPass(ctx context.Context, o *MonitorOptions, ps *passState, res *PassResult) (more bool, err error) {
	db := m.db
	start := db.clock.Now()
	work := db.ttlTargets()
	for {
		var cutShort []ttlTarget
		for _, t := range work {
			if err := m.stopped(ctx); err != nil {
				return false, err
			}
			if ps.failed[t.ix] {
				continue
			}
			if o.MaxTotalRemoves > 0 && ps.deleted >= o.MaxTotalRemoves {
				return true, nil
			}
			if o.MaxCollectionRemoves > 0 && ps.byCollection[t.coll] >= o.MaxCollectionRemoves {
				ps.capped = true // this collection may have expired documents left
				continue
			}
			cut, err := m.visitIndex(ctx, o, ps, t)
			if err != nil {
				if err := m.stopped(ctx); err != nil {
					return false, err
				}
				if errors.Is(err, ErrNotPrimary) {
					return false, err
				}
				ps.failed[t.ix] = true
				res.Errors++
				db.metrics.indexErrors.Add(1)
				db.logger.Warn("ttl index visit failed", "collection", t.coll.name, "index", t.ix.name, "err", err)
				continue
			}
			if cut {
				cutShort = append(cutShort, t)
			}
		}
		work = cutShort
		if len(work) == 0 {
			return false, nil
		}
		if o.SubPassMaxTime <= 0 || db.clock.Now().Sub(start) >= o.SubPassMaxTime {
			return true, nil
		}
	}
}

// visitIndex deletes expired documents from one index, batch by batch,
// until nothing expired is left (cut=false) or a budget ends the visit
// (cut=true). The per-index budgets are checked after each batch.
func (m *monitor) visitIndex(ctx context.Context, o *MonitorOptions, ps *passState, t ttlTarget) (cut bool, err error) {
	db := m.db
	visitStart := db.clock.Now()
	op := &CurrentOp{Collection: t.coll.name, Index: t.ix.name, RunningSince: visitStart, TimeSeries: t.ts != nil}
	m.current.Store(op)
	defer m.current.Store(nil)
	ref := IndexRef{t.coll.name, t.ix.name}
	deleted := 0
	if t.ts == nil {
		defer t.coll.settleStore()
	}
	m.pace.begin()
	for batches := 0; ; batches++ {
		if batches > 0 {
			if err := m.betweenBatches(ctx, o); err != nil {
				return false, err
			}
		}
		if err := m.stopped(ctx); err != nil {
			return false, err
		}
		if !m.isPrimary() {
			return false, errSteppedDown
		}
		size := o.BatchSize
		if t.ts == nil && db.cfg.proposer != nil {
			size = o.ProposalBatchSize
		}
		limit := min(m.pace.batchSize(size), o.PerIndexMaxDeletes-deleted)
		if o.MaxTotalRemoves > 0 {
			limit = min(limit, o.MaxTotalRemoves-ps.deleted)
		}
		if o.MaxCollectionRemoves > 0 {
			limit = min(limit, o.MaxCollectionRemoves-ps.byCollection[t.coll])
		}
		if limit <= 0 {
			return true, nil
		}
		limit, err := m.admit(ctx, o, limit) // the rate ceiling
		if err != nil {
			return false, err
		}
		busySince := db.clock.Now()
		if err := db.logErr(); err != nil {
			return false, err // deletions that cannot be logged would come back
		}
		n, ids, exhausted, batchNow, err := m.replicatedBatch(ctx, t, ps.now, limit)
		if err == nil && n > 0 {
			err = db.syncLog() // logged before it is counted and told
		}
		if err != nil {
			return false, err
		}
		deleted += n
		ps.deleted += n
		ps.byCollection[t.coll] += n
		db.metrics.addDeleted(ref, n)
		db.metrics.addLags(ref, &m.lags)
		if len(ids) > 0 {
			// Counted first: an observer sees metrics that include its event.
			m.observe(DeleteEvent{Collection: t.coll.name, Index: t.ix.name, IDs: ids, PassNow: ps.now, BatchNow: batchNow, removed: t.removed()})
		}
		busy := db.clock.Now().Sub(busySince)
		m.pace.lastBatch = busy
		if err := m.charge(ctx, o, n, busy); err != nil {
			return false, err
		}
		next := *m.current.Load()
		next.Deleted = deleted
		if t.ts != nil {
			next.Measurements += t.ts.lastMeasurements
		}
		m.current.Store(&next)
		if exhausted {
			return false, nil
		}
		if deleted >= o.PerIndexMaxDeletes {
			return true, nil
		}
		if db.clock.Now().Sub(visitStart) >= o.PerIndexMaxTime {
			return true, nil
		}
	}
}

// deleteBatch deletes up to limit expired documents from one TTL index in
// one hold of the collection's write lock (with expire hooks, it chooses
// them first under the read lock and re-checks each under the write lock).
// Expired means at batchNow, the earlier of passNow and the clock read
// under the write lock. It returns how many it deleted, their _id values
// when there are observers to tell, exhausted when the index had nothing
// more expired, and batchNow.
func (m *monitor) deleteBatch(ctx context.Context, t ttlTarget, passNow time.Time, limit int) (n int, ids []any, exhausted bool, batchNow time.Time, err error) {
	if t.ts != nil {
		return m.deleteBuckets(ctx, t, passNow, limit) // time-series: tsexpiry.go
	}
	s, ix := t.coll, t.ix
	var chosen []chosenDoc
	more := false
	if len(m.db.cfg.hooks) > 0 {
		// Choose under the read lock, run the hooks with no lock held, then
		// delete what still matches. Documents a hook failed are set
		// aside (expirehook.go), not in chosen.
		chosen, more, err = m.offer(ctx, t, earlier(passNow, m.db.clock.Now()), limit)
		if err != nil || len(chosen) == 0 {
			return 0, nil, !more && err == nil, batchNow, err
		}
		// A step-down while the hooks ran keeps the batch.
		if !m.isPrimary() {
			return 0, nil, false, batchNow, errSteppedDown
		}
	}
	// A hook may have closed the DB: nothing is deleted after Close returns.
	if err := m.stopped(ctx); err != nil {
		return 0, nil, false, batchNow, err
	}
	if err := s.lockWrite(); err != nil {
		return 0, nil, false, batchNow, err
	}
	if !s.hasIndex(ix) {
		// Dropped since the sub-pass listed it: its expiry tree is no
		// longer kept up to date, and deleting through it would spin on
		// stale entries.
		s.writeMu.Unlock()
		return 0, nil, false, batchNow, errIndexDropped
	}
	// The clock is read under the lock, as late as can be: with the clock
	// stepped back since the pass began, nothing is deleted before its
	// threshold by the clock at the moment of the delete.
	batchNow = earlier(passNow, m.db.clock.Now())
	// Chosen under this same hold of writeMu, the batch needs no re-check:
	// the TTL tree changes only under writeMu and always holds each
	// document's current date, so what it lists as expired now is.
	recheck := chosen != nil
	if !recheck {
		chosen = s.appendExpired(m.batch[:0], ix, batchNow, limit)
		more = len(chosen) >= limit
		// The buffer is reused by the next batch; cleared below, so that
		// it keeps no chunk memory alive.
		m.batch = chosen
		defer clear(m.batch)
	}
	if m.db.txns.nlocked.Load() > 0 {
		// A document an open transaction wrote waits for its end: a
		// later batch deletes it if it is still expired then.
		kept := chosen[:0]
		for _, c := range chosen {
			if m.db.txns.holder(s.name, c.rec.key, nil) == nil {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 && len(chosen) > 0 {
			more = false // only held documents: the next pass
		}
		chosen = kept
	}
	if p := m.db.cfg.proposer; p != nil {
		n, ids, retry, err := m.proposeBatch(p, s, ix, chosen, recheck, batchNow)
		s.writeMu.Unlock()
		return n, ids, !more && !retry, batchNow, err
	}
	observed := len(m.db.cfg.observe) > 0
	if observed {
		m.ids.start(len(chosen))
	}
	cutoff := ix.ttl.cutoff(batchNow)
	retry := false
	// The deleted records, in m.gone's array, reused from batch to batch
	// as m.batch is (it is grown once, not appended into from nil 256
	// times a batch); commitExpire copies what it keeps.
	if cap(m.gone) < len(chosen) {
		m.gone = make([]record, 0, len(chosen))
	}
	gone := m.gone[:0]
	defer func() { m.gone = gone; clear(gone) }()
	wantOps := m.db.ops.opsWanted()
	s.mu.Lock()
	for _, x := range s.indexes {
		if x.ttl != nil {
			x.ttl.counts.deferAdds()
		}
	}
	cutSec, cutNsec := cutoff.Unix(), int32(cutoff.Nanosecond())
	for _, c := range chosen {
		if recheck {
			var ok, changed bool
			var date time.Time
			c.rec, ok, changed, date = s.stillToDelete(ix, c, cutoff)
			retry = retry || changed
			if !ok {
				continue
			}
			c.sec, c.nsec = date.Unix(), int32(date.Nanosecond())
		}
		// Its lag: cutoff - date is batchNow - (date + expireAfter).
		m.lags.observeUnix(cutSec, cutNsec, c.sec, c.nsec)
		if observed {
			m.ids.add(&c.rec)
		}
		gone = append(gone, c.rec)
	}
	s.removeRecords(gone)
	n = len(gone)
	for _, x := range s.indexes {
		if x.ttl != nil {
			x.ttl.counts.flush()
		}
	}
	s.mu.Unlock()
	if len(gone) > 0 && wantOps {
		// The keys are built after the collection's lock is released:
		// readers do not wait for them.
		s.commitExpire(ix.name, batchNow, gone)
	}
	s.settleMemory(0)
	s.writeMu.Unlock()
	if observed {
		ids = m.ids.done()
	}
	return n, ids, !more && !retry, batchNow, nil
}

// idBatch builds the _id values of a batch's deleted documents for the
// DeleteObservers. String values (the usual kind) are views of one string
// holding the batch's: a batch costs one allocation for their bytes and one
// per value for its interface, where decoding each cost two.
type idBatch struct {
	ids   []any
	buf   []byte   // the bytes of the string values; reused
	spans []idSpan // where each string value is in buf; reused
}

// idSpan says that ids[i] is buf[from:to].
type idSpan struct{ i, from, to int }

// start begins a batch of up to n values.
func (b *idBatch) start(n int) {
	b.ids = make([]any, 0, n)
	b.buf, b.spans = b.buf[:0], b.spans[:0]
}

// add appends the _id of rec.
func (b *idBatch) add(rec *record) {
	if s, ok := codec.EncodedString(rec.enc, "_id"); ok {
		b.spans = append(b.spans, idSpan{len(b.ids), len(b.buf), len(b.buf) + len(s)})
		b.buf = append(b.buf, s...)
		b.ids = append(b.ids, nil)
		return
	}
	b.ids = append(b.ids, rec.id())
}

// done returns the batch's values; the caller owns them.
func (b *idBatch) done() []any {
	all := string(b.buf)
	for _, sp := range b.spans {
		b.ids[sp.i] = all[sp.from:sp.to]
	}
	ids := b.ids
	b.ids = nil
	return ids
}

// settleStore moves the survivors out of the chunks a visit's batches left
// mostly dead (store.Settle), under the collection's locks: once per
// visit.
func (s *collState) settleStore() {
	if s.lockWrite() != nil {
		return // dropped
	}
	s.mu.Lock()
	s.store().Settle()
	s.mu.Unlock()
	s.settleMemory(0)
	s.writeMu.Unlock()
}

// commitExpire commits the OpExpire of a TTL batch that deleted recs from
// index under the instant batchNow: its keys in one buffer, packed while
// only change streams take ops (deletedKeys), its pre-images only while
// they are asked for. Call holding writeMu, after the deletion.
func (s *collState) commitExpire(index string, batchNow time.Time, recs []record) {
	gone := deletedKeys{pre: s.db.ops.preImagesWanted(), pack: s.db.ops.keysPackable()}
	for i := range recs {
		gone.add(&recs[i], len(recs))
	}
	keys, packed := gone.op()
	at := opTime(batchNow)
	s.db.ops.commit([]Op{{Kind: OpExpire, Collection: s.name, Time: at, Index: index, Cutoff: at, Keys: keys, Before: gone.before, packed: packed}})
}

// proposeBatch replicates a batch proposal-first (ExpireProposer): it
// re-checks the chosen documents (when recheck: they were chosen before
// the write lock), proposes the OpExpire of those still to delete with the
// next sequence number, and applies it once committed, holding the DB's
// commit lock throughout. It returns what apply deleted, and retry when a
// chosen document changed but is still expired (its new version goes to
// the hooks in the next batch). A batch not committed deletes nothing: its
// error matches ErrNotPrimary. Call holding s.writeMu.
func (m *monitor) proposeBatch(p ExpireProposer, s *collState, ix *index, chosen []chosenDoc, recheck bool, batchNow time.Time) (n int, ids []any, retry bool, err error) {
	cutoff := ix.ttl.cutoff(batchNow)
	keep := m.gone[:0] // reused from batch to batch, as in deleteBatch
	defer func() { clear(keep); m.gone = keep[:0] }()
	var lags lagCounts // counted once the batch committed
	for _, c := range chosen {
		date := time.Unix(c.sec, int64(c.nsec))
		if recheck {
			var ok, changed bool
			c.rec, ok, changed, date = s.stillToDelete(ix, c, cutoff)
			retry = retry || changed
			if !ok {
				continue
			}
		}
		lags.observe(cutoff, date)
		keep = append(keep, c.rec)
	}
	if len(keep) == 0 {
		return 0, nil, retry, nil
	}
	at := opTime(batchNow)
	op := Op{Kind: OpExpire, Collection: s.name, Time: at, Index: ix.name, Cutoff: at, Keys: recordKeys(keep)}
	if m.db.ops.preImagesWanted() {
		op.Before = recordDocs(keep)
	}
	err = m.db.proposeExpire(p, &op, func(op *Op) (err error) {
		n, ids, err = s.applyExpire(op, keep)
		return err
	})
	if err != nil {
		return 0, nil, retry, err
	}
	lags.addTo(&m.lags)
	return n, ids, retry, nil
}

// replicatedBatch is deleteBatch as one write under the DB's Replicator,
// if any: a replica that may not write (Begin refuses) deletes nothing and
// ends the pass, as a step-down does.
func (m *monitor) replicatedBatch(ctx context.Context, t ttlTarget, passNow time.Time, limit int) (n int, ids []any, exhausted bool, batchNow time.Time, err error) {
	end, err := m.db.beginWrite()
	if err != nil {
		if !errors.Is(err, ErrNotPrimary) && !errors.Is(err, ErrClosed) {
			err = fmt.Errorf("%w: %w", ErrNotPrimary, err)
		}
		return 0, nil, false, batchNow, err
	}
	n, ids, exhausted, batchNow, err = m.deleteBatch(ctx, t, passNow, limit)
	if err = end(err); err != nil {
		return 0, nil, false, batchNow, err
	}
	return n, ids, exhausted, batchNow, nil
}

// earlier returns the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// errIndexDropped ends a TTL visit to an index dropped mid-pass.
var errIndexDropped = fmt.Errorf("%w: index dropped", ErrNotFound)

// hasIndex reports whether ix is still one of the collection's indexes.
// Call holding mu or writeMu.
func (s *collState) hasIndex(ix *index) bool {
	return slices.Contains(s.indexes, ix)
}

// recheckResult is the verdict on a document chosen for deletion before
// the write lock was taken.
type recheckResult int

const (
	recheckDelete  recheckResult = iota // the version chosen, still expired
	recheckGone                         // deleted, or no longer expired: keep it
	recheckChanged                      // another version, still expired: retry
)

// recheck re-checks a document chosen for deletion before the lock was
// taken: still stored, still expired under the index as it is now, and the
// same version (an update stores a new version) the hooks saw. It returns
// the document's current record. Call holding writeMu.
func (s *collState) recheck(ix *index, c chosenDoc, cutoff time.Time) (recheckResult, record, time.Time) {
	cur, found := s.lookup(c.rec.key)
	if !found {
		return recheckGone, cur, time.Time{}
	}
	d, ok := ix.storedDate(&docRef{rec: cur})
	switch {
	case !ok || d.After(cutoff):
		return recheckGone, cur, d
	case cur.ver != c.rec.ver:
		return recheckChanged, cur, d
	}
	return recheckDelete, cur, d
}

// stillToDelete re-checks a chosen document (recheck) for a batch: ok when
// the version chosen is still expired, with its current record (the same
// version, but Compact may have moved it to another slot since it was
// chosen); changed when another version is still expired: the hooks have
// not seen it, so the caller offers it in the next batch rather than leave
// it for the next pass. Call holding writeMu.
func (s *collState) stillToDelete(ix *index, c chosenDoc, cutoff time.Time) (rec record, ok, changed bool, date time.Time) {
	verdict, rec, date := s.recheck(ix, c, cutoff)
	return rec, verdict == recheckDelete, verdict == recheckChanged, date
}

// chosenDoc is a document picked for deletion: the record (a version of
// it, whose bytes never change) found under the lock that chose it.
type chosenDoc struct {
	rec record
	// sec and nsec are the date the TTL tree listed it under, when
	// appendExpired chose it (a re-check reads the date again).
	sec  int64
	nsec int32
}

// appendExpired appends to out up to limit records at the head of ix's
// expiry tree that are expired at now. Call holding mu or writeMu.
func (s *collState) appendExpired(out []chosenDoc, ix *index, now time.Time, limit int) []chosenDoc {
	cutoff := ix.ttl.cutoff(now)
	ix.ttl.expiry.Ascend(func(e expiryEntry) bool {
		if !entryNotAfter(e, cutoff) {
			return false
		}
		out = append(out, chosenDoc{rec: s.rec(e.slot), sec: e.sec, nsec: e.nsec})
		return len(out) < limit
	})
	return out
}

func (m *monitor) observe(ev DeleteEvent) {
	for _, o := range m.db.cfg.observe {
		func() {
			defer func() {
				if r := recover(); r != nil {
					m.db.logger.Error("ttl delete observer panicked", slog.Any("panic", r))
				}
			}()
			o(ev)
		}()
	}
}

// drainRate returns the deletions per second the monitor achieves under
// options o: the rate of its last pass that deleted anything, capped by
// its rate ceiling (MaxDeletesPerSecond, the restore guard's); the cap
// alone before such a pass; 0 (unknown) without either.
func (db *DB) drainRate(o *MonitorOptions) float64 {
	r := db.metrics
	r.mu.Lock()
	rate := r.lastRate
	r.mu.Unlock()
	if c := float64(db.monitor.rateCeiling(o)); c > 0 && (rate == 0 || c < rate) {
		rate = c
	}
	return rate
}

// ExplainTTLDelete implements ttldb.Collection.ExplainTTLDelete, whose documentation is the contract.
func (c *Collection) ExplainTTLDelete(ctx context.Context, indexName string) (Explanation, error) {
	if err := c.usable(); err != nil {
		return Explanation{}, err
	}
	if err := c.started(ctx); err != nil {
		return Explanation{}, err
	}
	if ts := c.timeSeries(); ts != nil {
		return c.tsExplainTTLDelete(ts, indexName) // time-series: tsexpiry.go
	}
	s, err := c.read()
	if err != nil {
		return Explanation{}, err
	}
	if s == nil {
		return Explanation{}, fmt.Errorf("%w: collection %q: no index %q", ErrNotFound, c.name, indexName)
	}
	o := c.db.monitor.opts.Load()
	now := c.db.clock.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	var ix *index
	for _, cand := range s.indexes {
		if cand.name == indexName {
			ix = cand
			break
		}
	}
	switch {
	case ix == nil:
		return Explanation{}, fmt.Errorf("%w: collection %q: no index %q", ErrNotFound, c.name, indexName)
	case ix.ttl == nil:
		return Explanation{}, fmt.Errorf("%w: collection %q: index %q is not a TTL index", ErrInvalidIndex, c.name, indexName)
	}
	limit := o.PerIndexMaxDeletes
	if o.MaxTotalRemoves > 0 {
		limit = min(limit, o.MaxTotalRemoves)
	}
	if o.MaxCollectionRemoves > 0 {
		limit = min(limit, o.MaxCollectionRemoves)
	}
	cutoff := ix.ttl.cutoff(now)
	n := 0
	if limit > 0 {
		ix.ttl.expiry.Ascend(func(e expiryEntry) bool {
			if !entryNotAfter(e, cutoff) {
				return false
			}
			n++
			return n < limit
		})
	}
	secs := int32(ix.ttl.expireAfter.Load())
	due, _, _, _ := ix.ttl.backlog(now)
	rate := c.db.drainRate(o)
	var drain time.Duration
	if rate > 0 {
		drain = time.Duration(float64(due) / rate * float64(time.Second))
	}
	return Explanation{
		Due:             due,
		DrainRate:       rate,
		DrainTime:       drain,
		Collection:      c.name,
		Stage:           "BATCHED_DELETE",
		IndexName:       ix.name,
		IndexKeys:       append([]IndexKey(nil), ix.keys...),
		IndexBounds:     []string{fmt.Sprintf("[MinDate, %s]", cutoff.UTC().Format(time.RFC3339Nano))},
		Filter:          Document{ix.ttl.field: Document{"$lte": cutoff}},
		KeysExamined:    n,
		DocsExamined:    n,
		BatchSize:       o.BatchSize,
		Batches:         (n + o.BatchSize - 1) / o.BatchSize,
		ExpireAfterSecs: &secs,
	}, nil
}
