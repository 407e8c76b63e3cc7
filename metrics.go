package ttldb

import (
	"github.com/ttldb/ttldb/internal/engine"
)

// Metrics is a snapshot of a DB's counters, taken by DB.Metrics. It is a
// plain value: keep it, compare it, subtract another from it (Sub).
type Metrics = engine.Metrics

// DurabilityMetrics describe a DB's data directory. The counters count
// from Open, as every counter of Metrics does: they restart from zero with
// the process.
type DurabilityMetrics = engine.DurabilityMetrics

// ChangeStreamMetrics describe a DB's change streams and their buffer
// (Metrics().ChangeStreams): gauges, but for each stream's Events.
type ChangeStreamMetrics = engine.ChangeStreamMetrics

// StreamMetrics describe one change stream named by
// ChangeStreamOptions.Name: how far behind it is, in ops and in time,
// and how much of the buffer its unread ops fill.
type StreamMetrics = engine.StreamMetrics

// MaxStreamNameLen bounds ChangeStreamOptions.Name, in bytes.
const MaxStreamNameLen = engine.MaxStreamNameLen

// IndexRef names an index of a collection. As a map key it makes Metrics
// JSON-encodable: its text form is "collection.index" (see MarshalText).
type IndexRef = engine.IndexRef

// TTLMetrics are the TTL monitor's counters. Passes, SubPasses and
// DeletedDocuments are counted exactly as MongoDB's
// serverStatus().metrics.ttl: a pass and each of its sub-passes count when
// they end, also when they deleted nothing (an idle pass is one pass and one
// sub-pass) and when Close, a cancelled context or a step-down cut them
// short; only committed deletions count. Passes run by RunTTLPass count
// too.
type TTLMetrics = engine.TTLMetrics

// IndexBacklog is one TTL index's backlog (see TTLMetrics.Backlog).
type IndexBacklog = engine.IndexBacklog

// IndexExpiry is one TTL index's expiry telemetry
// (TTLMetrics.ExpiryByIndex): the histogram of how late the monitor
// deleted its documents, the keeping-up ratio, and whether it is stalled
// and why.
type IndexExpiry = engine.IndexExpiry

// The causes of a stalled TTL index (IndexExpiry.StallCause).
const (
	StallPaused          = engine.StallPaused          // CollMod with TTLPaused, or SetTTLPaused
	StallMonitorDisabled = engine.StallMonitorDisabled // SetTTLMonitorEnabled(false), MonitorOptions.Disabled
	StallNotPrimary      = engine.StallNotPrimary      // a replica whose leader deletes
	StallHooksFailing    = engine.StallHooksFailing    // FailedDeliveries holds documents of the index
	StallUnknown         = engine.StallUnknown
)

// DurationHistogram counts observed durations in cumulative buckets, as a
// Prometheus histogram does. Buckets are sorted by UpperBound; each counts
// the observations at or below its bound, so a bucket's Count includes the
// earlier buckets' and Count is the implicit +Inf bucket.
type DurationHistogram = engine.DurationHistogram

// HistogramBucket is one cumulative bucket of a DurationHistogram.
type HistogramBucket = engine.HistogramBucket

// Metrics returns a snapshot of the DB's counters. It is safe to call at
// any time from any goroutine, also after Close, and it never blocks
// writers. Its cost does not grow with the number of documents or with the
// backlog: the backlog is read from counts each TTL index keeps up to date
// as entries come and go (a few hundred map reads per TTL index at most,
// under the collection's read lock), never by visiting expired documents.
// It is O(collections + indexes): a map entry per collection and per TTL
// index, and the histogram's 15 buckets. After Close it reports no
// backlog.
func (db *DB) Metrics() Metrics {
	return (*engine.DB)(db).Metrics()
}
