package ttldb

import (
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

// IndexRef names an index of a collection.
type IndexRef struct {
	Collection string
	Index      string
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
	DeletedDocuments int64 // documents the monitor deleted

	DeletedByCollection map[string]int64   // DeletedDocuments split by collection
	DeletedByIndex      map[IndexRef]int64 // DeletedDocuments split by TTL index

	LastPassStart    time.Time     // the "now" of the last pass to end (zero before the first)
	LastPassDuration time.Duration // clock time the last pass to end took (0 if the clock stepped back)

	// Backlog is the number of documents expired at the snapshot's time but
	// not yet deleted, over all TTL indexes (a document expired under two
	// indexes counts twice); OldestBacklogAge is how long ago the oldest of
	// them expired (0 without backlog).
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
	indexErrors, hookErrors, hookPan atomic.Int64

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
// any time from any goroutine, also after Close; it never blocks writers
// (the backlog is counted under collection read locks held for at most a
// few thousand entries at a time).
func (db *DB) Metrics() Metrics {
	r := db.metrics
	var m Metrics
	t := &m.TTL
	t.Passes = r.passes.Load()
	t.SubPasses = r.subPasses.Load()
	t.DeletedDocuments = r.deleted.Load()
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
		for _, s := range db.snapshotCollections() {
			n, oldest := s.backlog(now)
			t.Backlog += n
			if n > 0 {
				if age := now.Sub(oldest); age > t.OldestBacklogAge {
					t.OldestBacklogAge = age
				}
			}
		}
	}
	return m
}

// backlogChunk bounds how many expiry entries backlog counts per read-lock
// hold.
const backlogChunk = 4096

// backlog counts the collection's documents expired at now, over all TTL
// indexes, and returns the earliest threshold among them.
func (s *collState) backlog(now time.Time) (n int64, oldest time.Time) {
	s.mu.RLock()
	var ttls []*ttlIndex
	for _, ix := range s.indexes {
		if ix.ttl != nil {
			ttls = append(ttls, ix.ttl)
		}
	}
	s.mu.RUnlock()
	for _, ttl := range ttls {
		var from *expiryEntry
		for {
			count := 0
			var last expiryEntry
			done := true
			s.mu.RLock()
			if s.dropped {
				s.mu.RUnlock()
				return n, oldest
			}
			cut := ttl.cutoff(now)
			visit := func(e expiryEntry) bool {
				if from != nil && !expiryLess(*from, e) {
					return true // the pivot itself, already counted
				}
				if !entryNotAfter(e, cut) {
					return false
				}
				if from == nil && count == 0 {
					// The index's first expired entry is its oldest.
					if th := ttl.threshold(e); oldest.IsZero() || th.Before(oldest) {
						oldest = th
					}
				}
				n++
				count++
				last = e
				if count == backlogChunk {
					done = false
					return false
				}
				return true
			}
			if from == nil {
				ttl.expiry.Ascend(visit)
			} else {
				ttl.expiry.AscendGreaterOrEqual(*from, visit)
			}
			s.mu.RUnlock()
			if done {
				break
			}
			from = &last
		}
	}
	return n, oldest
}
