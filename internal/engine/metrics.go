package engine

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics is a snapshot of a DB's counters, taken by DB.Metrics. It is a
// plain value: keep it, compare it, subtract another from it (Sub).
type Metrics struct {
	TTL     TTLMetrics
	Storage StorageMetrics // gauges: Sub keeps m's

	// Documents is how many documents each collection stores, expired ones
	// not yet deleted (or hidden by HideExpired) included: what
	// CountDocuments(nil) counts without HideExpired (for a time-series
	// collection, its measurements). Every collection has an entry. Read
	// from counts the writes keep, in O(1) per collection. A gauge: Sub
	// keeps m's.
	Documents map[string]int64
	// DocumentBytes is the size of each collection's stored documents in
	// ttldb's encoding (docs/FORMAT.md), without the indexes and the
	// store's overhead (Storage counts those): for a time-series
	// collection, its measurements' encodings. A gauge: Sub keeps m's.
	DocumentBytes map[string]int64

	// Durability describes the data directory of a DB opened WithDir
	// (zero otherwise).
	Durability DurabilityMetrics

	// ChangeStreams describes the change streams and their buffer:
	// gauges (Sub keeps m's), read in O(open streams).
	ChangeStreams ChangeStreamMetrics

	// Transactions counts the DB's transactions (Session): counters
	// since Open, but Open, a gauge. Sub subtracts prev's counters.
	Transactions TransactionMetrics
}

// DurabilityMetrics describe a DB's data directory. The counters count
// from Open, as every counter of Metrics does: they restart from zero with
// the process.
type DurabilityMetrics struct {
	LogRecords int64 // records written to the log: one per write under SyncAlways, one per flush of the writes of a few ms otherwise
	LogBytes   int64 // bytes written to the log, framing included
	LogSyncs   int64 // fsyncs of the log (group commits, flushes, segment changes, Close)
	LogSize    int64 // bytes in the log's files now (a gauge)
	Snapshots  int64 // snapshots written (automatic and DB.Snapshot)
	// SnapshotBytes is the size of the current snapshot file (a gauge; 0:
	// none yet).
	SnapshotBytes int64
	// RetainedFromSeq is the oldest op the log holds (a gauge): a change
	// stream can resume from a token at or after it, across restarts.
	RetainedFromSeq uint64
	// RetainedLogBytes is the part of LogSize kept only for change
	// streams (a gauge): segments the last snapshot covers, kept by
	// WithLogRetention.
	RetainedLogBytes int64
	// LogSegments is how many segment files the log has (a gauge).
	LogSegments int
	// LogSyncDurations is the distribution of the log's fsyncs' durations
	// (by the DB's clock; bounds from 50 µs to 1 s), counted with
	// LogSyncs.
	LogSyncDurations DurationHistogram
	// RecoveredLogOps, RecoveryDuration and RecoveryTruncatedBytes repeat
	// what Open loaded (DB.Recovery): the ops applied from the log, how
	// long loading took, the bytes of a torn tail cut off. Gauges, fixed
	// at Open.
	RecoveredLogOps        int
	RecoveryDuration       time.Duration
	RecoveryTruncatedBytes int64
}

// IndexRef names an index of a collection. As a map key it makes Metrics
// JSON-encodable: its text form is "collection.index" (see MarshalText).
type IndexRef struct {
	Collection string
	Index      string
}

// MarshalText returns r as "collection.index", e.g.
// "sessions.lastSeen_1". A collection name may hold dots, and so may an
// index name ("a.b_1"): in the collection part each '.' and '\' is escaped
// with a '\', so the first unescaped '.' ends it
// ("logs\.2026.at_1" is collection "logs.2026", index "at_1"). Names
// without dots or backslashes read as they are.
func (r IndexRef) MarshalText() ([]byte, error) {
	out := make([]byte, 0, len(r.Collection)+1+len(r.Index))
	for i := 0; i < len(r.Collection); i++ {
		if c := r.Collection[i]; c == '.' || c == '\\' {
			out = append(out, '\\')
		}
		out = append(out, r.Collection[i])
	}
	out = append(out, '.')
	return append(out, r.Index...), nil
}

// UnmarshalText reads the form MarshalText writes. Text without an
// unescaped '.', or with a '\' before anything but '.' or '\', is
// ErrInvalidOptions.
func (r *IndexRef) UnmarshalText(text []byte) error {
	coll := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '\\':
			if i+1 == len(text) || text[i+1] != '.' && text[i+1] != '\\' {
				return fmt.Errorf("%w: IndexRef %q: '\\' must escape '.' or '\\'", ErrInvalidOptions, text)
			}
			i++
			coll = append(coll, text[i])
		case '.':
			*r = IndexRef{Collection: string(coll), Index: string(text[i+1:])}
			return nil
		default:
			coll = append(coll, c)
		}
	}
	return fmt.Errorf("%w: IndexRef %q: no '.' between collection and index", ErrInvalidOptions, text)
}

// TTLMetrics are the TTL monitor's counters. Passes, SubPasses and
// DeletedDocuments are counted exactly as MongoDB's
// serverStatus().metrics.ttl: a pass and each of its sub-passes count when
// they end, also when they deleted nothing (an idle pass is one pass and one
// sub-pass) and when Close, a cancelled context or a step-down cut them
// short; only committed deletions count. Passes run by RunTTLPass count
// too.
type TTLMetrics struct {
	Passes           int64 // passes ended, completed or cut short
	SubPasses        int64 // sub-passes ended, completed or cut short
	DeletedDocuments int64 // documents the monitor deleted (buckets, for a time-series collection, as MongoDB counts)
	// DeletedMeasurements counts the measurements the monitor removed from
	// time-series collections: with their buckets, or trimmed out of them
	// (PreciseExpiry).
	DeletedMeasurements int64

	DeletedByCollection map[string]int64   // DeletedDocuments split by collection
	DeletedByIndex      map[IndexRef]int64 // DeletedDocuments split by TTL index
	// DeletedMeasurementsByCollection splits DeletedMeasurements by
	// time-series collection.
	DeletedMeasurementsByCollection map[string]int64

	LastPassStart    time.Time     // the "now" of the last pass to end (zero before the first)
	LastPassDuration time.Duration // clock time the last pass to end took (0 if the clock stepped back)

	// PassDurations is the distribution of every ended pass's duration
	// (PassResult.Duration), counted with Passes: a histogram with fixed
	// bounds from 1 ms to 60 s (see DurationHistogram).
	PassDurations DurationHistogram

	// Backlog is the number of documents expired at the snapshot's time
	// but not yet deleted, over all TTL indexes (a document expired under
	// two indexes counts twice). It is counted to the second, without
	// visiting documents: a document counts once its threshold rounded up
	// to a whole second is at or before the snapshot's time rounded down to
	// a whole second. It is exact for thresholds on whole seconds (dates on
	// whole seconds); a document whose threshold has a fraction of a second
	// is counted up to 1 s after it expired, never before.
	//
	// OldestBacklogAge is how long ago the earliest expired, undeleted
	// document expired, to the nanosecond (0 if none has). It may be
	// positive with a Backlog of 0 during the second after that document
	// expired.
	Backlog          int64
	OldestBacklogAge time.Duration
	// BacklogByIndex splits Backlog and OldestBacklogAge by TTL index,
	// counted the same way. Every TTL index of the DB has an entry, also
	// one with nothing expired. A gauge: Sub keeps m's.
	BacklogByIndex map[IndexRef]IndexBacklog

	IndexErrors int64 // index visits that failed (a collection dropped mid-pass, …)
	HookErrors  int64 // OnExpire calls that failed, wholly or for some documents (these were kept)
	HookPanics  int64 // OnExpire calls that panicked (also counted in HookErrors)

	// FailedDeliveries lists, per TTL index, the expired documents whose
	// expire hook failed and that wait for a retry (see ExpireHook): how
	// many, and how long ago the oldest failure was. An index without any
	// is absent. A document deleted or revived by a write meanwhile leaves
	// the count at its index's next retry. A gauge: Sub keeps m's.
	FailedDeliveries map[IndexRef]FailedDeliveries

	// RestoreGuard reports that MonitorOptions.RestoreGuard holds: the
	// monitor deletes at its bounded rate until a pass leaves no backlog.
	RestoreGuard bool

	// ExpiryByIndex is each TTL index's expiry telemetry: the lag
	// histogram, the keeping-up ratio and whether the index is stalled
	// (see IndexExpiry). Every TTL index of the DB has an entry, as in
	// BacklogByIndex, and so has every time-series collection's expiry
	// rule that is on (its collection-level expireAfterSeconds, its
	// partial TTL indexes), under the rule's name as DeletedByIndex names
	// it. Its Lag is a counter (Sub subtracts prev's); the rest are
	// gauges.
	ExpiryByIndex map[IndexRef]IndexExpiry
}

// IndexBacklog is one TTL index's backlog (see TTLMetrics.Backlog).
type IndexBacklog struct {
	Documents int64         // expired, not yet deleted (counted to the second)
	OldestAge time.Duration // how long ago the earliest of them expired; 0 if none has
}

// DurationHistogram counts observed durations in cumulative buckets, as a
// Prometheus histogram does. Buckets are sorted by UpperBound; each counts
// the observations at or below its bound, so a bucket's Count includes the
// earlier buckets' and Count is the implicit +Inf bucket.
type DurationHistogram struct {
	Count   int64             // observations
	Sum     time.Duration     // their total
	Buckets []HistogramBucket // cumulative, by increasing UpperBound
}

// HistogramBucket is one cumulative bucket of a DurationHistogram.
type HistogramBucket struct {
	UpperBound time.Duration // inclusive
	Count      int64         // observations at or below UpperBound
}

// passDurationBounds are the upper bounds of TTLMetrics.PassDurations: an
// idle pass takes well under a millisecond; PerIndexMaxTime (1 s) bounds
// one index's visit and SubPassMaxTime (60 s) a sub-pass.
var passDurationBounds = [...]time.Duration{
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second,
	10 * time.Second, 30 * time.Second, 60 * time.Second,
}

// Sub returns the change from prev to m: every counter and per-collection
// and per-index count minus prev's, and the PassDurations histogram
// bucket by bucket. Gauges (LastPass*, Backlog, OldestBacklogAge,
// BacklogByIndex, FailedDeliveries, Documents) keep m's values.
func (m Metrics) Sub(prev Metrics) Metrics {
	d := m
	t, p := &d.TTL, prev.TTL
	t.Passes -= p.Passes
	t.SubPasses -= p.SubPasses
	t.DeletedDocuments -= p.DeletedDocuments
	t.DeletedMeasurements -= p.DeletedMeasurements
	t.IndexErrors -= p.IndexErrors
	t.HookErrors -= p.HookErrors
	t.HookPanics -= p.HookPanics
	t.DeletedByCollection = subMap(m.TTL.DeletedByCollection, p.DeletedByCollection)
	t.DeletedByIndex = subMap(m.TTL.DeletedByIndex, p.DeletedByIndex)
	t.DeletedMeasurementsByCollection = subMap(m.TTL.DeletedMeasurementsByCollection, p.DeletedMeasurementsByCollection)
	t.PassDurations = m.TTL.PassDurations.Sub(p.PassDurations)
	if m.TTL.ExpiryByIndex != nil {
		t.ExpiryByIndex = make(map[IndexRef]IndexExpiry, len(m.TTL.ExpiryByIndex))
		for ref, x := range m.TTL.ExpiryByIndex {
			x.Lag = x.Lag.Sub(p.ExpiryByIndex[ref].Lag)
			t.ExpiryByIndex[ref] = x
		}
	}
	d.Transactions = m.Transactions.Sub(prev.Transactions)
	dd, pd := &d.Durability, prev.Durability
	dd.LogRecords -= pd.LogRecords
	dd.LogBytes -= pd.LogBytes
	dd.LogSyncs -= pd.LogSyncs
	dd.Snapshots -= pd.Snapshots
	dd.LogSyncDurations = m.Durability.LogSyncDurations.Sub(pd.LogSyncDurations)
	return d
}

// Sub returns the observations h has and prev has not: counts and sum
// minus prev's, bucket by bucket (prev without buckets, such as a zero
// Metrics, subtracts nothing from them).
func (h DurationHistogram) Sub(prev DurationHistogram) DurationHistogram {
	d := DurationHistogram{Count: h.Count - prev.Count, Sum: h.Sum - prev.Sum, Buckets: slices.Clone(h.Buckets)}
	for i := range d.Buckets {
		if i < len(prev.Buckets) && prev.Buckets[i].UpperBound == d.Buckets[i].UpperBound {
			d.Buckets[i].Count -= prev.Buckets[i].Count
		}
	}
	return d
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) of the observations, as
// Prometheus's histogram_quantile does: it finds the bucket holding the
// rank q·Count and interpolates linearly between the bucket's lower bound
// (the previous bucket's UpperBound, 0 for the first) and its UpperBound.
// An estimate in the implicit +Inf bucket is the last UpperBound. It
// returns 0 for an empty histogram and clamps q to [0, 1]. Cost:
// O(len(Buckets)), no allocation.
func (h DurationHistogram) Quantile(q float64) time.Duration {
	if h.Count <= 0 || len(h.Buckets) == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := q * float64(h.Count)
	lower, below := time.Duration(0), int64(0)
	for _, b := range h.Buckets {
		if float64(b.Count) >= rank && b.Count > below {
			frac := (rank - float64(below)) / float64(b.Count-below)
			return lower + time.Duration(frac*float64(b.UpperBound-lower))
		}
		lower, below = b.UpperBound, b.Count
	}
	return h.Buckets[len(h.Buckets)-1].UpperBound
}

func subMap[K comparable](cur, prev map[K]int64) map[K]int64 {
	out := make(map[K]int64, len(cur))
	for k, v := range cur {
		if dv := v - prev[k]; dv != 0 {
			out[k] = dv
		}
	}
	return out
}

// metricsRecorder holds the live counters. The scalar counters are atomics;
// the per-collection maps sit behind their own mutex, which no collection
// lock is ever held with, so reading metrics never blocks a writer.
type metricsRecorder struct {
	passes, subPasses, deleted       atomic.Int64
	deletedMeasurements              atomic.Int64
	indexErrors, hookErrors, hookPan atomic.Int64
	// backlogWork adds up the counts and entries Metrics read to find the
	// backlog: tests check it does not grow with the backlog.
	backlogWork atomic.Int64

	mu            sync.Mutex
	byCollection  map[string]int64
	byIndex       map[IndexRef]int64
	lastPassStart time.Time
	lastPassDur   time.Duration
	// passDurs counts pass durations per bucket of passDurationBounds (not
	// cumulative; the last slot is +Inf); passDurSum is their total.
	passDurs   [len(passDurationBounds) + 1]int64
	passDurSum time.Duration
	// byIndexExpiry is each TTL index's expiry telemetry (expirylag.go).
	byIndexExpiry map[IndexRef]*indexExpiry
	// measurementsByCollection splits deletedMeasurements.
	measurementsByCollection map[string]int64
	// lastRate is the deletions per second of the last pass that deleted
	// anything (ExplainTTLDelete's drain estimate); 0 before one.
	lastRate float64
}

func newMetricsRecorder() *metricsRecorder {
	return &metricsRecorder{byCollection: map[string]int64{}, byIndex: map[IndexRef]int64{}, byIndexExpiry: map[IndexRef]*indexExpiry{},
		measurementsByCollection: map[string]int64{}}
}

func (r *metricsRecorder) addDeleted(ref IndexRef, n int) {
	if n == 0 {
		return
	}
	r.deleted.Add(int64(n))
	r.mu.Lock()
	r.byCollection[ref.Collection] += int64(n)
	r.byIndex[ref] += int64(n)
	r.mu.Unlock()
}

func (r *metricsRecorder) passDone(start time.Time, dur time.Duration, deleted int) {
	r.mu.Lock()
	r.lastPassStart, r.lastPassDur = start, dur
	if deleted > 0 && dur > 0 {
		r.lastRate = float64(deleted) / dur.Seconds()
	}
	b, _ := slices.BinarySearch(passDurationBounds[:], dur) // first bound >= dur
	r.passDurs[b]++
	r.passDurSum += dur
	r.mu.Unlock()
	r.passes.Add(1)
}

// Metrics implements ttldb.DB.Metrics, whose documentation is the contract.
func (db *DB) Metrics() Metrics {
	r := db.metrics
	var m Metrics
	t := &m.TTL
	t.Passes = r.passes.Load()
	t.SubPasses = r.subPasses.Load()
	t.DeletedDocuments = r.deleted.Load()
	t.DeletedMeasurements = r.deletedMeasurements.Load()
	t.IndexErrors = r.indexErrors.Load()
	t.HookErrors = r.hookErrors.Load()
	t.HookPanics = r.hookPan.Load()
	r.mu.Lock()
	t.DeletedByCollection = maps.Clone(r.byCollection)
	t.DeletedMeasurementsByCollection = maps.Clone(r.measurementsByCollection)
	t.DeletedByIndex = maps.Clone(r.byIndex)
	t.LastPassStart, t.LastPassDuration = r.lastPassStart, r.lastPassDur
	t.PassDurations = r.passDurations()
	r.mu.Unlock()
	t.FailedDeliveries = db.monitor.delivery.snapshot(db.clock)
	m.Storage = db.storageMetrics()
	t.BacklogByIndex = map[IndexRef]IndexBacklog{}
	m.Documents = map[string]int64{}
	m.DocumentBytes = map[string]int64{}
	if p := db.persist; p != nil {
		m.Durability = p.metrics()
	}
	open := !db.closed.Load()
	var now time.Time
	if open {
		now = db.clock.Now()
		m.ChangeStreams = db.changeStreamMetrics(now)
		m.Transactions = db.txns.metrics()
	}
	work := 0
	for _, s := range db.snapshotCollections() {
		work += s.readMetrics(now, open, &m)
	}
	for _, b := range t.BacklogByIndex {
		t.Backlog += b.Documents
		t.OldestBacklogAge = max(t.OldestBacklogAge, b.OldestAge)
	}
	db.expiryMetrics(t)
	t.RestoreGuard = db.monitor.guard.Load()
	r.backlogWork.Add(int64(work))
	return m
}

// passDurations renders the pass-duration counts as a cumulative
// histogram. Call holding r.mu.
func (r *metricsRecorder) passDurations() DurationHistogram {
	h := DurationHistogram{Sum: r.passDurSum, Buckets: make([]HistogramBucket, len(passDurationBounds))}
	for i, ub := range passDurationBounds {
		h.Count += r.passDurs[i]
		h.Buckets[i] = HistogramBucket{UpperBound: ub, Count: h.Count}
	}
	h.Count += r.passDurs[len(passDurationBounds)]
	return h
}

// readMetrics adds the collection's document count to m and, if ttl, the
// backlog of each of its TTL indexes at now; it returns how many counts and
// entries it read for the backlog.
func (s *collState) readMetrics(now time.Time, ttl bool, m *Metrics) (work int) {
	if ts := s.ts; ts != nil {
		// Its measurements live in ts, under ts.mu alone; it has no TTL
		// index of its own in s.indexes.
		ts.mu.RLock()
		defer ts.mu.RUnlock()
		if !ts.dropped {
			m.Documents[s.name] = int64(ts.count)
			m.DocumentBytes[s.name] = ts.bytesLen
		}
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.dropped {
		return 0
	}
	m.Documents[s.name] = int64(s.natural.Len())
	m.DocumentBytes[s.name] = s.bytes
	if !ttl {
		return 0
	}
	for _, ix := range s.indexes {
		if ix.ttl == nil {
			continue
		}
		n, th, exp, w := ix.ttl.backlog(now)
		work += w
		b := IndexBacklog{Documents: n}
		if exp {
			b.OldestAge = now.Sub(th)
		}
		m.TTL.BacklogByIndex[IndexRef{s.name, ix.name}] = b
	}
	return work
}
