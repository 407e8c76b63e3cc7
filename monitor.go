package ttldb

import (
	"context"
	"time"

	"github.com/ttldb/ttldb/internal/engine"
)

// ExpireHookError is what an ExpireHook returns when it handled some
// documents of its batch but not others: the documents it names in Failed
// are kept and retried (see ExpireHook), the others are deleted. Match it
// with errors.As. An ExpireHookError that names no document of the batch
// means, as any other error does, that the whole batch failed.
type ExpireHookError = engine.ExpireHookError

// FailedDeliveries describes the expired documents of one TTL index whose
// delivery to the expire hooks failed and that wait for a retry.
type FailedDeliveries = engine.FailedDeliveries

// MonitorOptions configure the TTL monitor, the one goroutine per DB that
// deletes expired documents. A zero field takes the default shown; the
// defaults are MongoDB's.
type MonitorOptions = engine.MonitorOptions

// RestoreGuard bounds the TTL monitor's deletion rate after Open
// (MonitorOptions.RestoreGuard): from Open when the DB was loaded
// WithRestore, or when the backlog at Open is at least Backlog, until a
// pass leaves no backlog, the monitor deletes at most MaxDeletesPerSecond
// a second. Metrics().TTL.RestoreGuard reports whether it holds.
type RestoreGuard = engine.RestoreGuard

// SubPassEveryRound, as MonitorOptions.SubPassMaxTime, is a sub-pass target
// of 0: every round ends its sub-pass, and the next sub-pass re-reads the
// list of TTL indexes. (A zero SubPassMaxTime takes the default.) It is the
// only negative duration MonitorOptions accepts.
const (
	SubPassEveryRound = engine.SubPassEveryRound
)

// NoBatchPause, as MonitorOptions.BatchPause, makes the monitor delete
// batch after batch with no pause. (A zero BatchPause takes the default.)
const (
	NoBatchPause = engine.NoBatchPause
)

// Defaults of MonitorOptions.
const (
	DefaultMonitorInterval    = engine.DefaultMonitorInterval
	DefaultPerIndexMaxDeletes = engine.DefaultPerIndexMaxDeletes
	DefaultPerIndexMaxTime    = engine.DefaultPerIndexMaxTime
	DefaultSubPassMaxTime     = engine.DefaultSubPassMaxTime
	DefaultMonitorBatchSize   = engine.DefaultMonitorBatchSize
	DefaultDeadlineWakeFloor  = engine.DefaultDeadlineWakeFloor
	// DefaultBatchPause is the pause between batches with the system
	// clock (MonitorOptions.BatchPause).
	DefaultBatchPause = engine.DefaultBatchPause
)

// DefaultMonitorOptions returns the options Open uses unless WithMonitor
// gives others.
func DefaultMonitorOptions() MonitorOptions {
	return engine.DefaultMonitorOptions()
}

// WithMonitor sets the TTL monitor's options (zero fields take defaults).
func WithMonitor(o MonitorOptions) Option {
	return engine.WithMonitor(o)
}

// WithPrimary makes the DB ask isPrimary whether it is the primary of a
// replicated set: before every pass, before every index visit and before
// every batch (after the batch's expire hooks, just before its delete), as
// MongoDB checks before each index visit. On a secondary the monitor is
// idle and counts nothing, as MongoDB's is; a pass that finds itself on a
// secondary stops with ErrNotPrimary and deletes no further batch.
// isPrimary is called on the pass's goroutine with no lock held, about
// twice per batch: it must be cheap and safe for concurrent use. Default:
// always primary. See also DB.SetPrimary.
func WithPrimary(isPrimary func() bool) Option {
	return engine.WithPrimary(isPrimary)
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
type ExpireHook = engine.ExpireHook

// ExpiredBatch is what an ExpireHook receives.
type ExpiredBatch = engine.ExpiredBatch

// WithOnExpire adds an ExpireHook. Several run in the order given: each
// receives the documents every earlier hook handled, and a document is
// deleted once the last hook handled it.
func WithOnExpire(h ExpireHook) Option {
	return engine.WithOnExpire(h)
}

// DeleteEvent reports documents the TTL monitor deleted, after the deletion
// committed.
type DeleteEvent = engine.DeleteEvent

// DeleteObserver is told of every committed TTL deletion, outside every
// lock: an application can replicate deletions to a secondary or a cache.
// It must not block for long. It runs on the monitor goroutine (or that of
// RunTTLPass), and, for an expired document a write deletes under
// HideExpired, on the writer's goroutine after the write committed (then
// PassNow is the write's clock reading). It may call DB.Close: Close
// returns at once and the pass stops before its next batch.
type DeleteObserver = engine.DeleteObserver

// WithDeleteObserver adds a DeleteObserver.
func WithDeleteObserver(o DeleteObserver) Option {
	return engine.WithDeleteObserver(o)
}

// WithHideExpired sets CollectionOptions.HideExpired for every collection
// of the DB: expired documents disappear from reads at their threshold, not
// at the next pass.
func WithHideExpired() Option {
	return engine.WithHideExpired()
}

// ErrNotPrimary is returned by RunTTLPass on a DB that is not the primary,
// or that stepped down during the pass.
var (
	ErrNotPrimary = engine.ErrNotPrimary
)

// PassResult reports what one TTL pass did.
type PassResult = engine.PassResult

// CurrentOp describes a TTL deletion in progress, as db.currentOp() shows
// MongoDB's.
type CurrentOp = engine.CurrentOp

// SetTTLMonitorEnabled turns the monitor on or off while it runs
// (MongoDB's setParameter ttlMonitorEnabled). It takes effect at the next
// wake-up; a pass already running finishes.
func (db *DB) SetTTLMonitorEnabled(on bool) {
	(*engine.DB)(db).SetTTLMonitorEnabled(on)
}

// SetTTLPaused pauses (true) or resumes (false) the TTL deletion of every
// collection of the DB, as CollMod's TTLPaused does for one: the monitor
// deletes nothing while it holds (a pass already running ends after its
// batch under way), and HideExpired collections still hide their expired
// documents. Unlike SetTTLMonitorEnabled, which switches this process's
// monitor in memory, the pause is an op: logged under WithDir, replicated
// (on a replica.Node only the leader accepts it, and it holds on every
// node and after a failover), kept by snapshots and backups, so it
// survives a restart. A collection paused by CollMod stays paused when the
// DB resumes. Resuming wakes the monitor. It makes no change event.
//
// It fails, changing nothing, with the ctx's error, ErrClosed,
// ErrLogFailed, or ErrNotPrimary on a replica that is not the leader; and,
// as any write, with the log's or the replicator's failure to make it
// durable.
func (db *DB) SetTTLPaused(ctx context.Context, paused bool) error {
	return (*engine.DB)(db).SetTTLPaused(ctx, paused)
}

// TTLPaused reports whether SetTTLPaused(true) holds.
func (db *DB) TTLPaused() bool { return (*engine.DB)(db).TTLPaused() }

// SetTTLMonitorInterval changes the sleep between passes while the monitor
// runs; the new interval takes effect at once (the current sleep is
// re-armed from now). A d <= 0 is ignored.
func (db *DB) SetTTLMonitorInterval(d time.Duration) {
	(*engine.DB)(db).SetTTLMonitorInterval(d)
}

// SetPrimary tells the DB whether it is the primary of a replicated set. On
// a secondary (false) the monitor is idle and counts nothing. A pass running
// when it turns false deletes no further batch (the batch whose delete is
// under way completes) and ends with ErrNotPrimary. Default true.
func (db *DB) SetPrimary(primary bool) {
	(*engine.DB)(db).SetPrimary(primary)
}

// CurrentOp lists the TTL deletions in progress (at most one: the monitor
// is single-threaded).
func (db *DB) CurrentOp() []CurrentOp {
	return (*engine.DB)(db).CurrentOp()
}

// RunTTLPass runs one full TTL pass now, synchronously, and reports what it
// did: for applications that want expiry on demand, and for their tests. It
// waits for a pass already running to end first (or for ctx). It runs even
// when the monitor is disabled, but not on a secondary (ErrNotPrimary, also
// when the DB steps down during the pass, with what was done so far). ctx
// (and Close) stop it between two batches, with ctx's error.
func (db *DB) RunTTLPass(ctx context.Context) (PassResult, error) {
	return (*engine.DB)(db).RunTTLPass(ctx)
}

// ExplainTTLDelete describes, without deleting anything, the deletion a TTL
// pass starting now would run on the named TTL index in its first visit, as
// MongoDB 6.1+ explains a TTL deletion: stage BATCHED_DELETE over an index
// scan of the dates at or before the cutoff (now - ExpireAfterSeconds).
// KeysExamined and DocsExamined are the documents the visit would delete
// (capped at PerIndexMaxDeletes and the per-pass caps; the time budgets are
// not modelled), BatchSize the monitor's batch size and Batches the number
// of write-lock holds that would delete them. As a dry run of the whole
// drain, Due is every document of the index due now (counted to the
// second, as Metrics counts the backlog), DrainRate the deletions per
// second the monitor achieves at the current budgets (its last pass that
// deleted anything, capped by MonitorOptions.MaxDeletesPerSecond; 0 when
// unknown) and DrainTime how long deleting Due takes at that rate (for a
// time-series collection's rule, these three are 0). A missing collection
// or index is ErrNotFound; an index without TTL is ErrInvalidIndex.
func (c *Collection) ExplainTTLDelete(ctx context.Context, indexName string) (Explanation, error) {
	return (*engine.Collection)(c).ExplainTTLDelete(ctx, indexName)
}
