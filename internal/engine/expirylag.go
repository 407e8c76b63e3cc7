package engine

import (
	"math/bits"
	"time"
)

// Expiry telemetry: how late the monitor deletes (a histogram of expiry
// lag per TTL index), whether it keeps up with what becomes due, and
// whether it is stalled, and why.

// The expiry-lag histogram's buckets: four per doubling, bound i being
// 2^k·(1+(j+1)/4) ns for i = 4(k-lagMinShift)+j, from 81.9 µs (2^16 ns ·
// 1.25) to 2^44 ns (4 h 53 min); adjacent bounds are at most 1.25 apart
// (from 2^k to 1.25·2^k), so that a quantile read from the histogram is
// within 25% of the true lag. A lag above the last bound counts in
// Count only (+Inf).
const (
	lagMinShift = 16
	lagMaxShift = 44
	lagBuckets  = 4 * (lagMaxShift - lagMinShift)
)

// lagBucket returns the bucket of a lag of d (lagBuckets for +Inf). A
// few instructions: it runs once per deleted document.
func lagBucket(d time.Duration) int {
	v := uint64(max(d, 0))
	if v <= 1<<lagMinShift {
		return 0
	}
	k := bits.Len64(v-1) - 1 // 2^k < v <= 2^(k+1)
	if k >= lagMaxShift {
		return lagBuckets
	}
	j := int((v - 1<<k - 1) >> (k - 2)) // which quarter of (2^k, 2^(k+1)]
	return 4*(k-lagMinShift) + j
}

// lagBound returns the upper bound of bucket i.
func lagBound(i int) time.Duration {
	k, j := lagMinShift+i/4, i%4
	return time.Duration(uint64(1)<<k + uint64(j+1)<<(k-2))
}

// lagCounts counts lags per bucket (not cumulative; the last is +Inf).
type lagCounts struct {
	n   [lagBuckets + 1]int64
	sum time.Duration
}

// observe counts a document whose threshold was at th, deleted at now.
func (c *lagCounts) observe(now, th time.Time) {
	c.observeUnix(now.Unix(), int32(now.Nanosecond()), th.Unix(), int32(th.Nanosecond()))
}

// observeUnix is observe with both instants as Unix seconds and
// nanoseconds: the monitor's per-document path, a subtraction and a few
// bit operations (no time.Time arithmetic).
func (c *lagCounts) observeUnix(nowSec int64, nowNsec int32, thSec int64, thNsec int32) {
	ds := nowSec - thSec
	switch {
	case ds < 0 || ds == 0 && nowNsec <= thNsec:
		c.n[0]++ // on time (a clock stepped back): no lag
		return
	case ds >= 1<<(lagMaxShift-29): // beyond the last bound (2^44 ns is about 2^14.3 s)
		c.n[lagBuckets]++
		c.sum += time.Duration(min(ds, 1<<33)) * time.Second
		return
	}
	d := time.Duration(ds)*time.Second + time.Duration(nowNsec-thNsec)
	c.n[lagBucket(d)]++
	c.sum += d
}

// total returns how many lags c counts.
func (c *lagCounts) total() (n int64) {
	for _, x := range c.n {
		n += x
	}
	return n
}

// addTo adds c into dst and clears c.
func (c *lagCounts) addTo(dst *lagCounts) {
	for i, x := range c.n {
		dst.n[i] += x
	}
	dst.sum += c.sum
	*c = lagCounts{}
}

// histogram renders c as a cumulative DurationHistogram.
func (c *lagCounts) histogram() DurationHistogram {
	h := DurationHistogram{Sum: c.sum, Buckets: make([]HistogramBucket, lagBuckets)}
	for i := range lagBuckets {
		h.Count += c.n[i]
		h.Buckets[i] = HistogramBucket{UpperBound: lagBound(i), Count: h.Count}
	}
	h.Count += c.n[lagBuckets]
	return h
}

// IndexExpiry is one TTL index's expiry telemetry
// (TTLMetrics.ExpiryByIndex).
type IndexExpiry struct {
	// Lag is the distribution of how late the monitor deleted the index's
	// documents: from a document's threshold (its date plus
	// expireAfterSeconds) to the instant its batch deleted against
	// (DeleteEvent.BatchNow), one observation per document, since Open.
	// Buckets are four per doubling from 81.9 µs to 4 h 53 min (adjacent
	// bounds at most 1.25 apart), so a quantile read from it is within
	// 25% of the truth. A counter: Sub subtracts prev's. For a
	// time-series expiry rule, one observation per measurement, from its
	// own threshold (its time plus expireAfterSeconds): without
	// PreciseExpiry a measurement waits for its whole bucket to expire,
	// and the lag includes that wait.
	Lag DurationHistogram
	// KeepUp is the monitor's keeping-up ratio over the last interval
	// between the ends of two of its passes: the documents it deleted under
	// the index over those that became due (deleted plus the growth of
	// the backlog). 1 means it keeps up (also when nothing new became
	// due); below 1 it falls behind; above 1 it drains a backlog as well.
	// 1 before the second pass.
	KeepUp float64
	// Stalled reports a backlog that grew over the last interval while the
	// monitor deleted nothing under the index, or any backlog while the
	// collection's TTL is paused, the monitor is off or this DB is not the
	// primary (a replica whose leader deletes); StallCause says why, as
	// far as the DB knows: StallPaused, StallMonitorDisabled,
	// StallNotPrimary, StallHooksFailing, or StallUnknown. A time-series
	// rule keeps no backlog count: its KeepUp stays 1, and it is stalled
	// only while a measurement is due and the collection or the DB is
	// paused, the monitor is off or this DB is not the primary.
	Stalled    bool
	StallCause string
}

// The causes of a stalled TTL index (IndexExpiry.StallCause).
const (
	StallPaused          = "ttl paused"          // CollMod with TTLPaused
	StallMonitorDisabled = "monitor disabled"    // SetTTLMonitorEnabled(false), MonitorOptions.Disabled
	StallNotPrimary      = "not primary"         // a replica whose ExpireProposer is not the leader
	StallHooksFailing    = "expire hook failing" // FailedDeliveries holds documents of the index
	StallUnknown         = "unknown"
)

// indexExpiry is what the recorder keeps per TTL index.
type indexExpiry struct {
	lag lagCounts
	// The last pass end's figures: the backlog then and the deletions
	// counted until then; keepUp and grewIdle were computed then, from
	// the end before.
	at       time.Time
	backlog  int64
	deleted  int64
	keepUp   float64
	grewIdle bool // the backlog grew while nothing was deleted
}

// addLags adds a batch's lags under ref (and clears them).
func (r *metricsRecorder) addLags(ref IndexRef, c *lagCounts) {
	if c.total() == 0 {
		return
	}
	r.mu.Lock()
	e := r.expiry(ref)
	c.addTo(&e.lag)
	r.mu.Unlock()
}

// expiry returns ref's record, made if need be. Call holding r.mu.
func (r *metricsRecorder) expiry(ref IndexRef) *indexExpiry {
	e := r.byIndexExpiry[ref]
	if e == nil {
		e = &indexExpiry{keepUp: 1}
		r.byIndexExpiry[ref] = e
	}
	return e
}

// passEnded records, at a pass's end (now), each TTL index's backlog and
// the deletions counted so far, and from the previous end's figures the
// keeping-up ratio of the interval between them.
func (r *metricsRecorder) passEnded(now time.Time, backlogs map[IndexRef]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for ref, b := range backlogs {
		e := r.expiry(ref)
		deleted := r.byIndex[ref]
		if !e.at.IsZero() {
			d := deleted - e.deleted
			due := d + b - e.backlog
			if due <= 0 {
				e.keepUp = 1 // nothing new became due: kept up
			} else {
				e.keepUp = float64(d) / float64(due)
			}
			e.grewIdle = d == 0 && b > e.backlog
		}
		e.at, e.backlog, e.deleted = now, b, deleted
	}
}

// backlogs returns every TTL index's backlog at now (counted to the
// second, as Metrics counts it: O(indexes), no document visited).
func (db *DB) backlogs(now time.Time) map[IndexRef]int64 {
	out := map[IndexRef]int64{}
	for _, s := range db.snapshotCollections() {
		if s.ts != nil {
			continue // its expiry rule keeps no backlog count
		}
		s.mu.RLock()
		if !s.dropped {
			for _, ix := range s.indexes {
				if ix.ttl != nil {
					n, _, _, _ := ix.ttl.backlog(now)
					out[IndexRef{s.name, ix.name}] = n
				}
			}
		}
		s.mu.RUnlock()
	}
	return out
}

// expiryMetrics fills t.ExpiryByIndex for every index of
// t.BacklogByIndex, from the recorder and the monitor's state.
func (db *DB) expiryMetrics(t *TTLMetrics) {
	r := db.metrics
	enabled, primary := db.monitor.enabled.Load(), db.monitor.isPrimary()
	paused := map[string]bool{}
	// Time-series expiry rules keep no backlog count: whether one has a
	// measurement due stands for it.
	tsDue := map[IndexRef]bool{}
	now := db.clock.Now()
	for _, s := range db.snapshotCollections() {
		if s.ttlPaused.Load() || db.ttlPaused.Load() {
			paused[s.name] = true
		}
		for _, rule := range s.tsRulesDue(now) {
			tsDue[IndexRef{s.name, rule.name}] = rule.due
		}
	}
	// Whether each index has a document due: from its backlog, or for a
	// time-series rule from its earliest threshold. (A rule's keep-up
	// ratio stays 1 and it never "grew idle": passEnded sees backlogs only.)
	due := tsDue
	for ref, b := range t.BacklogByIndex {
		due[ref] = b.Documents > 0 || b.OldestAge > 0
	}
	t.ExpiryByIndex = make(map[IndexRef]IndexExpiry, len(due))
	r.mu.Lock()
	defer r.mu.Unlock()
	for ref, d := range due {
		x := IndexExpiry{KeepUp: 1}
		grewIdle := false
		if e := r.byIndexExpiry[ref]; e != nil {
			x.Lag, x.KeepUp, grewIdle = e.lag.histogram(), e.keepUp, e.grewIdle
		} else {
			x.Lag = (&lagCounts{}).histogram()
		}
		switch {
		case !d:
		case paused[ref.Collection]:
			x.Stalled, x.StallCause = true, StallPaused
		case !enabled:
			x.Stalled, x.StallCause = true, StallMonitorDisabled
		case !primary:
			x.Stalled, x.StallCause = true, StallNotPrimary
		case !grewIdle:
		case t.FailedDeliveries[ref].Count > 0:
			x.Stalled, x.StallCause = true, StallHooksFailing
		default:
			x.Stalled, x.StallCause = true, StallUnknown
		}
		t.ExpiryByIndex[ref] = x
	}
}
