package ttldb

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics is a snapshot of a DB's counters, taken by DB.Metrics. It is a
// plain value: keep it, compare it, subtract another from it (Sub).
type Metrics struct {
	TTL     TTLMetrics
	Storage StorageMetrics // gauges: Sub keeps m's
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

	LastPassStart    time.Time     // the "now" of the last pass to end (zero before the first)
	LastPassDuration time.Duration // clock time the last pass to end took (0 if the clock stepped back)

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

	IndexErrors int64 // index visits that failed (a collection dropped mid-pass, …)
	HookErrors  int64 // OnExpire calls that failed, wholly or for some documents (these were kept)
	HookPanics  int64 // OnExpire calls that panicked (also counted in HookErrors)

	// FailedDeliveries lists, per TTL index, the expired documents whose
	// expire hook failed and that wait for a retry (see ExpireHook): how
	// many, and how long ago the oldest failure was. An index without any
	// is absent. A document deleted or revived by a write meanwhile leaves
	// the count at its index's next retry. A gauge: Sub keeps m's.
	FailedDeliveries map[IndexRef]FailedDeliveries
}

// Sub returns the change from prev to m: every counter and per-collection
// and per-index count minus prev's. Gauges (LastPass*, Backlog,
// OldestBacklogAge, FailedDeliveries) keep m's values.
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
	return d
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
}

func newMetricsRecorder() *metricsRecorder {
	return &metricsRecorder{byCollection: map[string]int64{}, byIndex: map[IndexRef]int64{}}
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

func (r *metricsRecorder) passDone(start time.Time, dur time.Duration) {
	r.mu.Lock()
	r.lastPassStart, r.lastPassDur = start, dur
	r.mu.Unlock()
	r.passes.Add(1)
}

// Metrics returns a snapshot of the DB's counters. It is safe to call at
// any time from any goroutine, also after Close, and it never blocks
// writers. Its cost does not grow with the number of documents or with the
// backlog: the backlog is read from counts each TTL index keeps up to date
// as entries come and go (a few hundred map reads per TTL index at most,
// under the collection's read lock), never by visiting expired documents.
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
	t.DeletedByIndex = maps.Clone(r.byIndex)
	t.LastPassStart, t.LastPassDuration = r.lastPassStart, r.lastPassDur
	r.mu.Unlock()
	t.FailedDeliveries = db.monitor.delivery.snapshot(db.clock)
	m.Storage = db.storageMetrics()
	if !db.closed.Load() {
		now := db.clock.Now()
		work := 0
		for _, s := range db.snapshotCollections() {
			n, oldest, expired, w := s.backlog(now)
			t.Backlog += n
			work += w
			if expired {
				t.OldestBacklogAge = max(t.OldestBacklogAge, now.Sub(oldest))
			}
		}
		r.backlogWork.Add(int64(work))
	}
	return m
}

// backlog sums the backlog of the collection's TTL indexes at now and
// returns the earliest expired threshold among them (expired=false if none
// is); work is how many counts and entries it read.
func (s *collState) backlog(now time.Time) (n int64, oldest time.Time, expired bool, work int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.dropped {
		return 0, time.Time{}, false, 0
	}
	for _, ix := range s.indexes {
		if ix.ttl == nil {
			continue
		}
		in, th, exp, w := ix.ttl.backlog(now)
		n += in
		work += w
		if exp && (!expired || th.Before(oldest)) {
			oldest, expired = th, true
		}
	}
	return n, oldest, expired, work
}
