package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
	"github.com/ttldb/ttldb/internal/query"
)

// tsIndex is an index of a time-series collection. As in MongoDB it
// indexes buckets, not measurements: a key on the metaField (or a path
// inside it) is the bucket's meta value there; a key on the timeField is
// the bucket's start; a key led by a measurement field is the bucket's
// [min, max] of that field (tsmindex.go). A query bounded on its leading
// field visits only the buckets whose key is in bounds (for the time field,
// widened by the bucket span: a bucket starting up to a span before a bound
// may hold later measurements), then unpacks and filters their
// measurements.
type tsIndex struct {
	name     string
	keys     []IndexKey
	partial  *query.Filter // on the metaField only
	partDoc  Document
	tree     *btree.BTreeG[tsEntry]
	exp      *tsExpiry // set for a partial TTL index
	multikey bool      // a bucket's meta path (or measurement field) held an array
	// measured is set when the leading field is a measurement field: tree
	// then holds the buckets by their min key of it (tsmindex.go).
	measured *tsMeasured
}

// tsEntry is one bucket's key in a tsIndex: each field's key ascending
// (internal/keys), concatenated. The order of an IndexKey only matters for
// sort, which time-series reads do in memory.
type tsEntry struct {
	key string
	b   *bucket
}

func tsEntryLess(a, b tsEntry) bool {
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.b.seq < b.b.seq
}

// keyOf returns a bucket's key in ix.
func (ix *tsIndex) keyOf(ts *tsColl, b *bucket) (string, bool) {
	var buf []byte
	multi := false
	for _, k := range ix.keys {
		var v any
		if k.Field == ts.opts.TimeField {
			v = b.start
		} else if got, ok := codec.GetPath(ts.metaDoc(b), k.Field); ok {
			v = got
		}
		if codec.IsArray(v) {
			multi = true
		}
		var err error
		if buf, err = keys.Append(buf, v); err != nil {
			// Stored values always have a key; keep the bucket findable.
			buf = append(buf, keys.Null...)
		}
	}
	return string(buf), multi
}

func (ix *tsIndex) member(ts *tsColl, b *bucket) bool {
	return ix.partial == nil || ix.partial.Matches(ts.metaDoc(b))
}

func (ix *tsIndex) add(ts *tsColl, b *bucket) {
	if !ix.member(ts, b) {
		return
	}
	if ix.measured != nil {
		ix.addMeasured(b)
		return
	}
	k, multi := ix.keyOf(ts, b)
	ix.multikey = ix.multikey || multi
	ix.tree.ReplaceOrInsert(tsEntry{k, b})
}

func (ix *tsIndex) remove(ts *tsColl, b *bucket) {
	if ix.measured != nil {
		ix.removeMeasured(b)
		return
	}
	k, _ := ix.keyOf(ts, b)
	ix.tree.Delete(tsEntry{k, b})
}

func (ix *tsIndex) spec() IndexSpec {
	s := IndexSpec{Name: ix.name, Keys: slices.Clone(ix.keys), Multikey: ix.multikey}
	if ix.partDoc != nil {
		s.PartialFilterExpression = codec.CopyDocument(ix.partDoc)
	}
	if ix.exp != nil {
		s.ExpireAfterSeconds = Seconds(int32(ix.exp.expireAfter.Load()))
		s.TTLValueForms = TTLValuesDatesOnly
	}
	return s
}

// tsExpiry is one expiry rule of a time-series collection: the
// collection-level ExpireAfterSeconds, or a partial TTL index. Its tree
// holds the buckets the rule applies to, by their expiry key: the bucket's
// start (MongoDB's rule: the bucket goes when start + span + E <= now), or,
// with PreciseExpiry, its earliest measurement (trimmed when min + E <=
// now).
type tsExpiry struct {
	ts          *tsColl
	name        string
	partial     *query.Filter // nil: every bucket
	ix          *index        // stands for the rule in the monitor's per-index bookkeeping
	expireAfter atomic.Int64  // seconds; -1: off
	tree        *btree.BTreeG[tsExpEntry]

	// setAside holds the buckets whose expire hook failed, with the pass
	// that failed them: not offered again in that pass. Guarded by the
	// collection's mu; written in a pass.
	setAside map[*bucket]uint64
	// backoff schedules the set-aside buckets' retry, as a TTL index's
	// failed deliveries (expirehook.go): until it is due they are not
	// offered, nor do they wake the monitor. Reset when none is set aside.
	// Guarded like setAside.
	backoff hookBackoff
	// lastMeasurements and lastRemoved are the last batch's removals, for
	// the monitor to report (CurrentOp, DeleteEvent). Written and read by
	// the pass only.
	lastMeasurements int
	lastRemoved      *tsRemoved
	// marks is the buffer of a batch's measurements to remove, reused
	// from batch to batch (cleared after each). Used by the pass only.
	marks tsMarks
}

type tsExpEntry struct {
	sec  int64
	nsec int32
	b    *bucket
}

func tsExpLess(a, b tsExpEntry) bool {
	if a.sec != b.sec {
		return a.sec < b.sec
	}
	if a.nsec != b.nsec {
		return a.nsec < b.nsec
	}
	return a.b.seq < b.b.seq
}

func newTSExpiry(ts *tsColl, name string, partial *query.Filter, _ *tsIndex) *tsExpiry {
	return &tsExpiry{
		ts:       ts,
		name:     name,
		partial:  partial,
		ix:       &index{name: name},
		tree:     btree.NewG(btreeDegree, tsExpLess),
		setAside: map[*bucket]uint64{},
	}
}

// expiryKey is the time a bucket is kept in expiry order by.
func (ts *tsColl) expiryKey(b *bucket) time.Time {
	if ts.opts.PreciseExpiry {
		return b.min
	}
	return b.start
}

func (ts *tsColl) expEntry(b *bucket) tsExpEntry {
	k := ts.expiryKey(b)
	return tsExpEntry{sec: k.Unix(), nsec: int32(k.Nanosecond()), b: b}
}

func (e *tsExpiry) member(b *bucket) bool {
	return e.partial == nil || e.partial.Matches(e.ts.metaDoc(b))
}

// expiries lists the collection's expiry rules. Call holding mu.
func (ts *tsColl) expiries() []*tsExpiry {
	out := []*tsExpiry{ts.collExp}
	for _, ix := range ts.indexes {
		if ix.exp != nil {
			out = append(out, ix.exp)
		}
	}
	return out
}

func (ts *tsColl) attachExpiry(b *bucket) {
	e := ts.expEntry(b)
	for _, x := range ts.expiries() {
		if x.member(b) {
			x.tree.ReplaceOrInsert(e)
		}
	}
}

func (ts *tsColl) detachExpiry(b *bucket) {
	e := ts.expEntry(b)
	for _, x := range ts.expiries() {
		x.tree.Delete(e)
		delete(x.setAside, b)
	}
}

// cutoff returns the latest expiry key that is expired at now, and false
// when the rule is off. With MongoDB's rule that is now - E - span (its
// safeExpirationDate: a bucket whose start is at or before it holds nothing
// newer than start + span, all expired); with PreciseExpiry, now - E.
func (e *tsExpiry) cutoff(now time.Time) (time.Time, bool) {
	secs := e.expireAfter.Load()
	if secs < 0 {
		return time.Time{}, false
	}
	d := time.Duration(secs) * time.Second
	if !e.ts.opts.PreciseExpiry {
		d += time.Duration(e.ts.span) * time.Second
	}
	return now.Add(-d), true
}

// thresholdOf returns when a bucket's first measurements expire under the
// rule: its whole bucket (start + span + E), or with PreciseExpiry its
// earliest measurement (min + E).
func (e *tsExpiry) thresholdOf(b *bucket) (time.Time, bool) {
	secs := e.expireAfter.Load()
	if secs < 0 || !e.member(b) {
		return time.Time{}, false
	}
	d := time.Duration(secs) * time.Second
	if !e.ts.opts.PreciseExpiry {
		d += time.Duration(e.ts.span) * time.Second
	}
	return e.ts.expiryKey(b).Add(d), true
}

// earliestThreshold returns the earliest threshold of any bucket under the
// rule. Call holding the collection's mu.
func (e *tsExpiry) earliestThreshold() (time.Time, bool) {
	// Set-aside buckets wake the monitor at their retry, not at their
	// threshold: the walk passes over at most len(setAside) of them.
	var best time.Time
	found := false
	e.tree.Ascend(func(en tsExpEntry) bool {
		if _, aside := e.setAside[en.b]; aside {
			return true
		}
		best, found = e.thresholdOf(en.b)
		return false
	})
	if len(e.setAside) > 0 && (!found || e.backoff.retryAt.Before(best)) {
		best, found = e.backoff.retryAt, true
	}
	return best, found
}

// backOff sets failed buckets aside and backs the rule off (see
// tsExpiry.backoff). Call holding the collection's mu, in a pass.
func (e *tsExpiry) backOff(failed []*bucket, pass uint64, now time.Time, o *MonitorOptions) {
	for _, b := range failed {
		if !b.removed {
			e.setAside[b] = pass
		}
	}
	if len(e.setAside) == 0 {
		e.backoff = hookBackoff{}
		return
	}
	if len(failed) > 0 {
		e.backoff.bump(pass, now, o)
	}
}

// earliestThresholdOf returns when a bucket's first measurements expire
// under any of the collection's rules. Call holding mu.
func (ts *tsColl) earliestThresholdOf(b *bucket) (time.Time, bool) {
	var best time.Time
	found := false
	for _, x := range ts.expiries() {
		if th, ok := x.thresholdOf(b); ok && (!found || th.Before(best)) {
			best, found = th, true
		}
	}
	return best, found
}

// measurementThreshold returns when measurement i of b expires: under
// MongoDB's rule with its bucket, with PreciseExpiry at its own time + E
// (the shortest E of the rules that apply).
func (ts *tsColl) measurementThreshold(b *bucket, i int) (time.Time, bool) {
	var best time.Time
	found := false
	for _, x := range ts.expiries() {
		secs := x.expireAfter.Load()
		if secs < 0 || !x.member(b) {
			continue
		}
		var th time.Time
		if ts.opts.PreciseExpiry {
			th = b.timeAt(i).Add(time.Duration(secs) * time.Second)
		} else {
			th = b.start.Add(time.Duration(ts.span+secs) * time.Second)
		}
		if !found || th.Before(best) {
			best, found = th, true
		}
	}
	return best, found
}

// metaOnly checks that a filter names only the metaField (or paths in it),
// through $and, $or and $nor.
func (ts *tsColl) metaOnly(f Document) error {
	mf := ts.opts.MetaField
	for k, v := range f {
		switch {
		case k == "$and" || k == "$or" || k == "$nor":
			elems, _ := codec.ArrayElements(v)
			for _, e := range elems {
				if d, ok := codec.AsDocument(e); ok {
					if err := ts.metaOnly(d); err != nil {
						return err
					}
				}
			}
		case k == "$comment":
		case mf != "" && (k == mf || strings.HasPrefix(k, mf+".")):
		default:
			if mf == "" {
				return fmt.Errorf("%q: the collection has no metaField", k)
			}
			return fmt.Errorf("%q is not the metaField %q", k, mf)
		}
	}
	return nil
}

// createIndex creates an index of a time-series collection (see
// CreateIndex for the rules).
// createIndex creates index m (applied: the op DB.Apply applies), under
// the DB's memory limit outside recovery (mode other than modeReplay).
func (ts *tsColl) createIndex(m IndexModel, applied *Op, mode applyMode) (string, error) {
	where := fmt.Sprintf("collection %q index %q", ts.name, m.Name)
	tf, mf := ts.opts.TimeField, ts.opts.MetaField
	if m.ExpireAfterSeconds != nil {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: %w: %s: %s", ErrInvalidTTL, ErrTimeSeries, where, fmt.Sprintf(format, args...))
		}
		switch secs := *m.ExpireAfterSeconds; {
		case secs < 0:
			return "", bad("expireAfterSeconds %d is negative (valid: 0 to %d)", secs, math.MaxInt32)
		case len(m.Keys) != 1:
			return "", bad("TTL indexes are single-field; the key has %d fields", len(m.Keys))
		case m.Keys[0].Field != tf:
			return "", bad("a TTL index on a time-series collection must be on the timeField %q, not %q (the collection-level ExpireAfterSeconds expires by time)", tf, m.Keys[0].Field)
		case len(m.PartialFilterExpression) == 0:
			return "", bad("a TTL index on the timeField needs a partialFilterExpression on the metaField (use the collection-level ExpireAfterSeconds for all measurements)")
		case mf == "":
			return "", bad("the collection has no metaField to filter a partial TTL index on")
		}
		if err := ts.metaOnly(m.PartialFilterExpression); err != nil {
			return "", bad("the partialFilterExpression may only name the metaField: %v", err)
		}
	}
	if len(m.Keys) == 0 {
		return "", fmt.Errorf("%w: %s: no keys", ErrInvalidIndex, where)
	}
	seen := map[string]bool{}
	for _, k := range m.Keys {
		if err := validateFieldPath(k.Field); err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrInvalidIndex, where, err)
		}
		if k.Order != 1 && k.Order != -1 {
			return "", fmt.Errorf("%w: %s: field %q: order must be 1 or -1, not %d", ErrInvalidIndex, where, k.Field, k.Order)
		}
		if seen[k.Field] {
			return "", fmt.Errorf("%w: %s: field %q appears twice", ErrInvalidIndex, where, k.Field)
		}
		seen[k.Field] = true
		if strings.HasPrefix(k.Field, tf+".") {
			return "", fmt.Errorf("%w: %w: %s: field %q is a path inside the timeField %q, which holds a date", ErrInvalidIndex, ErrTimeSeries, where, k.Field, tf)
		}
	}
	switch {
	case m.Unique:
		return "", fmt.Errorf("%w: %w: %s: a time-series collection cannot have a unique index", ErrInvalidIndex, ErrTimeSeries, where)
	case m.Sparse:
		return "", fmt.Errorf("%w: %w: %s: sparse indexes are not supported on a time-series collection", ErrInvalidIndex, ErrTimeSeries, where)
	case m.Name == idIndexName || m.Name == CollectionExpiryName:
		return "", fmt.Errorf("%w: %s: the name is reserved", ErrInvalidIndex, where)
	}
	ix := &tsIndex{name: m.Name, keys: slices.Clone(m.Keys), tree: btree.NewG(btreeDegree, tsEntryLess)}
	if ts.isMeasurementField(m.Keys[0].Field) {
		ix.measured = &tsMeasured{bounds: map[*bucket]tsBounds{}, byMax: btree.NewG(btreeDegree, tsEntryLess)}
	}
	if len(m.PartialFilterExpression) > 0 {
		if err := ts.metaOnly(m.PartialFilterExpression); err != nil {
			return "", fmt.Errorf("%w: %w: %s: the partialFilterExpression may only name the metaField: %v", ErrInvalidIndex, ErrTimeSeries, where, err)
		}
		compile := query.CompileFilter
		if applied != nil || mode == modeReplay {
			compile = query.CompileStoredFilter // a definition the DB holds: as it was accepted
		}
		f, err := compile(m.PartialFilterExpression)
		if err != nil {
			return "", fmt.Errorf("%w: %s: partialFilterExpression: %w", ErrInvalidIndex, where, err)
		}
		ix.partial, ix.partDoc = f, f.Doc()
	}
	if m.ExpireAfterSeconds != nil {
		ix.exp = newTSExpiry(ts, m.Name, ix.partial, ix)
		ix.exp.expireAfter.Store(int64(*m.ExpireAfterSeconds))
	}
	ts.mu.Lock()
	defer ts.unlockWrite()
	if ts.dropped {
		return "", ts.errDropped()
	}
	for _, cur := range ts.indexes {
		if cur.name != m.Name && !sameKeys(cur.keys, m.Keys) {
			continue
		}
		same := cur.name == m.Name && sameKeys(cur.keys, m.Keys) && (cur.partDoc == nil) == (ix.partDoc == nil) &&
			(cur.partDoc == nil || query.Compare(cur.partDoc, ix.partDoc) == 0) && (cur.exp == nil) == (ix.exp == nil) &&
			(cur.exp == nil || cur.exp.expireAfter.Load() == ix.exp.expireAfter.Load())
		if same && applied == nil {
			return cur.name, nil
		}
		return "", fmt.Errorf("%w: %s: index %q exists with other options", ErrIndexOptionsConflict, where, cur.name)
	}
	if mode != modeReplay {
		// Its entries, and keys about as large as the buckets' meta keys.
		per, metas := tsIndexEntryBytes, ts.memMetas
		if ix.measured != nil {
			per, metas = tsMeasuredEntryBytes, 0
		}
		if ix.exp != nil {
			per += tsExpiryEntryBytes
		}
		if err := ts.reserveGrowth(int64(ts.buckets.Len())*per + metas); err != nil {
			return "", err
		}
	}
	ts.buckets.Ascend(func(b *bucket) bool {
		ix.add(ts, b)
		if ix.exp != nil && ix.exp.member(b) {
			ix.exp.tree.ReplaceOrInsert(ts.expEntry(b))
		}
		return true
	})
	ts.indexes = append(slices.Clone(ts.indexes), ix)
	err := ts.emit(applied, func() Op {
		spec := IndexModel{Name: ix.name, Keys: slices.Clone(ix.keys), PartialFilterExpression: ix.partDoc, ExpireAfterSeconds: m.ExpireAfterSeconds}
		return Op{Kind: OpCreateIndex, Index: ix.name, Spec: indexSpecDoc(spec)}
	})
	if err != nil {
		return "", err
	}
	if ix.exp != nil {
		if th, ok := ix.exp.earliestThreshold(); ok {
			ts.db.monitor.notifyThreshold(th)
		}
	}
	return ix.name, nil
}

func (ts *tsColl) dropIndex(name string, applied *Op) error {
	ts.mu.Lock()
	defer ts.unlockWrite()
	if ts.dropped {
		return ts.errDropped()
	}
	i := slices.IndexFunc(ts.indexes, func(ix *tsIndex) bool { return ix.name == name })
	if i < 0 {
		return fmt.Errorf("%w: collection %q: no index %q", ErrNotFound, ts.name, name)
	}
	ts.indexes = slices.Delete(slices.Clone(ts.indexes), i, i+1)
	return ts.emit(applied, func() Op { return Op{Kind: OpDropIndex, Index: name} })
}

func (ts *tsColl) indexSpecs() ([]IndexSpec, error) {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	out := []IndexSpec{}
	for _, ix := range ts.indexes {
		out = append(out, ix.spec())
	}
	return out, nil
}

// collModIndex changes the ExpireAfterSeconds of a partial TTL index.
func (ts *tsColl) collModIndex(m CollModIndex, applied *Op) (CollModResult, error) {
	where := fmt.Sprintf("collMod %q", ts.name)
	if m.ExpireAfterSeconds == nil {
		return CollModResult{}, fmt.Errorf("%w: %s: ExpireAfterSeconds is required", ErrInvalidTTL, where)
	}
	if *m.ExpireAfterSeconds < 0 {
		return CollModResult{}, fmt.Errorf("%w: %s: expireAfterSeconds %d is negative (valid: 0 to %d)", ErrInvalidTTL, where, *m.ExpireAfterSeconds, math.MaxInt32)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.dropped {
		return CollModResult{}, ts.errDropped()
	}
	for _, ix := range ts.indexes {
		if (m.Name == "" || ix.name == m.Name) && (len(m.KeyPattern) == 0 || sameKeys(ix.keys, m.KeyPattern)) && (m.Name != "" || len(m.KeyPattern) > 0) {
			if ix.exp == nil {
				return CollModResult{}, fmt.Errorf("%w: %w: %s: index %q: only a partial TTL index on the timeField can expire measurements; use CollModTimeSeries for the collection", ErrInvalidTTL, ErrTimeSeries, where, ix.name)
			}
			old := int32(ix.exp.expireAfter.Swap(int64(*m.ExpireAfterSeconds)))
			if err := ts.emit(applied, func() Op {
				return Op{Kind: OpCollMod, Index: ix.name, Spec: collModSpec(m.ExpireAfterSeconds)}
			}); err != nil {
				return CollModResult{}, err
			}
			if th, ok := ix.exp.earliestThreshold(); ok {
				ts.db.monitor.notifyThreshold(th)
			}
			return CollModResult{IndexName: ix.name, ExpireAfterSecondsOld: Seconds(old), ExpireAfterSecondsNew: *m.ExpireAfterSeconds}, nil
		}
	}
	return CollModResult{}, fmt.Errorf("%w: %s: no index with name %q and key pattern %v", ErrNotFound, where, m.Name, m.KeyPattern)
}
