package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
)

// bucket is one stored unit of a time-series collection: the measurements
// of one meta value within one time window, as MongoDB's bucket documents
// hold them. The meta value and the field names of the time and meta fields
// are stored once per bucket; each measurement keeps an 8-byte time offset
// and the encoding of its other fields (with its _id).
//
// A bucket changes only under its collection's mu held for writing; readers
// hold mu for reading.
type bucket struct {
	seq     uint64 // creation order
	ver     uint64 // a DB write-counter value, new at every change
	meta    any    // stored form; meaningful when hasMeta
	hasMeta bool
	metaKey string    // groups measurements: keys.Encode(meta), "" without meta
	start   time.Time // the first measurement's time rounded down: the range is [start, start+span)
	min     time.Time // control.min of the time field
	max     time.Time // control.max of the time field
	removed bool      // deleted from its collection

	offs []int64  // measurement i's time - start, ns (span <= 1 year: fits)
	ends []uint32 // end of measurement i's encoding in data
	data []byte   // the measurements' encodings, without time and meta fields
}

func bucketLess(a, b *bucket) bool { return a.seq < b.seq }

// len returns the number of measurements in the bucket.
func (b *bucket) len() int { return len(b.offs) }

// timeAt returns measurement i's time.
func (b *bucket) timeAt(i int) time.Time { return b.start.Add(time.Duration(b.offs[i])) }

// enc returns measurement i's encoding (without time and meta).
func (b *bucket) enc(i int) []byte {
	lo := uint32(0)
	if i > 0 {
		lo = b.ends[i-1]
	}
	return b.data[lo:b.ends[i]]
}

// measurement decodes measurement i as the documents reads return.
func (ts *tsColl) measurement(b *bucket, i int) Document {
	return decodeMeasurement(ts.opts.TimeField, ts.opts.MetaField, b, i)
}

// decodeMeasurement decodes measurement i of b, adding the time and meta
// fields under their names.
func decodeMeasurement(timeField, metaField string, b *bucket, i int) Document {
	doc := codec.Decode(b.enc(i))
	doc[timeField] = b.timeAt(i)
	if b.hasMeta {
		doc[metaField] = codec.CopyValue(b.meta)
	}
	return doc
}

// metaDoc is the part of a measurement a meta-only filter reads.
func (ts *tsColl) metaDoc(b *bucket) Document {
	if !b.hasMeta {
		return Document{}
	}
	return Document{ts.opts.MetaField: b.meta}
}

// floorStart rounds t down to a multiple of the rounding (floor division:
// times before 1970 round down too).
func (ts *tsColl) floorStart(t time.Time) time.Time {
	sec := t.Unix()
	m := sec % ts.rounding
	if m < 0 {
		m += ts.rounding
	}
	return time.Unix(sec-m, 0).UTC()
}

// tsMeasurement is a measurement checked and encoded for insertion.
type tsMeasurement struct {
	t       time.Time
	meta    any
	hasMeta bool
	metaKey string
	enc     []byte
	id      any
}

// prepare checks and encodes one measurement.
func (ts *tsColl) prepare(doc Document, now time.Time) (tsMeasurement, error) {
	var m tsMeasurement
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w: collection %q: %s", ErrInvalidDocument, ErrTimeSeries, ts.name, fmt.Sprintf(format, args...))
	}
	if doc == nil {
		return m, bad("document is nil")
	}
	tf, mf := ts.opts.TimeField, ts.opts.MetaField
	switch v := doc[tf].(type) {
	case time.Time:
		m.t = v
	case *time.Time:
		if v == nil {
			return m, bad("timeField %q is nil, not a date", tf)
		}
		m.t = *v
	default:
		if _, ok := doc[tf]; !ok {
			return m, bad("measurement has no timeField %q", tf)
		}
		return m, bad("timeField %q holds a %T, not a date (time.Time)", tf, v)
	}
	m.t = time.Unix(m.t.Unix(), int64(m.t.Nanosecond())).UTC() // stored form
	rest := make(map[string]any, len(doc))
	for k, v := range doc {
		if k != tf && k != mf {
			rest[k] = v
		}
	}
	if mf != "" {
		if v, ok := doc[mf]; ok {
			if codec.IsArray(v) {
				return m, bad("metaField %q holds an array; the meta value may be anything but an array", mf)
			}
			meta, err := codec.CloneValue(v, mf)
			if err != nil {
				return m, fmt.Errorf("%w: collection %q: %w", ErrTimeSeries, ts.name, err)
			}
			k, err := keys.Encode(meta)
			if err != nil {
				return m, fmt.Errorf("%w: %w: collection %q: metaField %q: %w", ErrInvalidDocument, ErrTimeSeries, ts.name, mf, err)
			}
			m.meta, m.hasMeta, m.metaKey = meta, true, k
		}
	}
	var genID any
	if _, ok := rest["_id"]; !ok {
		genID = NewObjectIDFromTime(now)
	}
	enc, err := codec.Encode(rest, genID)
	if err != nil {
		return m, fmt.Errorf("collection %q: %w", ts.name, err)
	}
	m.enc = enc
	m.id = genID
	if m.id == nil {
		m.id, _ = codec.EncodedField(enc, "_id")
	}
	if ts.validator != nil {
		full := codec.Decode(enc)
		full[tf] = m.t
		if m.hasMeta {
			full[mf] = m.meta
		}
		if err := ts.validator.Validate(full); err != nil {
			return m, fmt.Errorf("collection %q: %w", ts.name, err)
		}
	}
	return m, nil
}

// insert stores measurements atomically: every one is checked before any
// is stored.
func (ts *tsColl) insert(docs []any) ([]any, error) {
	now := ts.db.clock.Now()
	prepared := make([]tsMeasurement, len(docs))
	for i, v := range docs {
		d, err := asDocument(v) // a struct or another map type: in stored form
		if err != nil {
			return nil, &docIndexError{index: i, err: fmt.Errorf("collection %q: %w", ts.name, err)}
		}
		m, err := ts.prepare(d, now)
		if err != nil {
			return nil, &docIndexError{index: i, err: err}
		}
		prepared[i] = m
	}
	ts.lockForeground()
	if ts.dropped {
		ts.mu.Unlock()
		return nil, ts.errDropped()
	}
	earliest, err := ts.placeAll(prepared, modeLocal)
	if err != nil {
		ts.mu.Unlock()
		return nil, err
	}
	if ts.db.ops.opsWanted() && len(prepared) > 0 {
		ts.commitOps(now, ts.insertOp(prepared))
	}
	ts.mu.Unlock()
	ts.db.monitor.notifyThreshold(earliest)
	ids := make([]any, len(prepared))
	for i, m := range prepared {
		ids[i] = codec.CopyValue(m.id)
	}
	return ids, nil
}

// place adds one measurement to its meta value's open bucket if the
// measurement falls in its range and it has room; else, as MongoDB 6.3+
// reopens a bucket for a late measurement, to the bucket of that meta value
// not full whose range covers the measurement's time, the earliest
// starting one (the first to expire), if any; else to a new bucket, which
// becomes the open one. The choice depends only on the buckets (what a
// snapshot keeps) and the order of inserts, so that applying the same ops
// places alike. Call holding mu for writing.
func (ts *tsColl) place(m tsMeasurement) *bucket {
	b := ts.open[m.metaKey]
	if b != nil && ts.fits(b, m) {
		ts.appendTo(b, m)
		return b
	}
	if r := ts.reopenFor(m, b); r != nil {
		ts.appendTo(r, m)
		return r
	}
	if b != nil {
		ts.noteTouched(b)
		ts.resize(b, (*bucket).clip) // closed: it may be reopened, but seldom
	}
	start := ts.floorStart(m.t)
	nb := &bucket{seq: ts.nextSeq, meta: m.meta, hasMeta: m.hasMeta, metaKey: m.metaKey, start: start, min: m.t, max: m.t}
	ts.noteCreated(nb)
	ts.nextSeq++
	ts.open[m.metaKey] = nb
	nb.offs = append(nb.offs, int64(m.t.Sub(start)))
	nb.ends = append(nb.ends, uint32(len(m.enc)))
	nb.data = append(nb.data, m.enc...)
	nb.ver = ts.db.writes.Add(1)
	ts.count++
	ts.bytesLen += int64(len(m.enc))
	ts.attach(nb)
	return nb
}

// fits reports whether measurement m may go into bucket b: its time is in
// b's range, and b has room for it.
func (ts *tsColl) fits(b *bucket, m tsMeasurement) bool {
	return !m.t.Before(b.start) && m.t.Before(b.start.Add(time.Duration(ts.span)*time.Second)) &&
		b.len() < TimeSeriesBucketMaxCount && len(b.data)+len(m.enc) <= TimeSeriesBucketMaxBytes
}

// reopenLess orders the reopen tree: by meta key, start, then seq.
func reopenLess(a, b *bucket) bool {
	if a.metaKey != b.metaKey {
		return a.metaKey < b.metaKey
	}
	if !a.start.Equal(b.start) {
		return a.start.Before(b.start)
	}
	return a.seq < b.seq
}

// reopenFor returns the bucket a measurement that does not go into its
// open bucket (skip) goes into instead: the earliest starting bucket of
// its meta value whose range covers its time and that has room for it;
// nil if none (or with legacyPlacement). The candidates start after
// m.t - span and at or before m.t.
func (ts *tsColl) reopenFor(m tsMeasurement, skip *bucket) *bucket {
	if ts.reopen == nil {
		return nil
	}
	pivot := &bucket{metaKey: m.metaKey, start: m.t.Add(-time.Duration(ts.span) * time.Second), seq: math.MaxUint64}
	var found *bucket
	ts.reopen.AscendGreaterOrEqual(pivot, func(c *bucket) bool {
		if c.metaKey != m.metaKey || c.start.After(m.t) {
			return false
		}
		if c != skip && ts.fits(c, m) {
			found = c
			return false
		}
		return true
	})
	return found
}

// indexReopen lists b in the reopen tree if it is not full by count, and
// takes it out if it is. Call holding mu for writing, after b changed.
func (ts *tsColl) indexReopen(b *bucket) {
	if ts.reopen == nil {
		return
	}
	if b.removed || b.len() >= TimeSeriesBucketMaxCount {
		ts.reopen.Delete(b)
		return
	}
	ts.reopen.ReplaceOrInsert(b)
}

// appendTo adds measurement m to bucket b (which fits it). A bucket that
// becomes full by count leaves the reopen tree and, unless it is the open
// one (clipped when it is closed), gives back its spare capacity. Call
// holding mu for writing.
func (ts *tsColl) appendTo(b *bucket, m tsMeasurement) {
	ts.noteTouched(b)
	ts.untrack(b)
	if ts.opts.PreciseExpiry && m.t.Before(b.min) {
		ts.detachExpiry(b) // keyed by min: re-key
		b.min = m.t
		ts.attachExpiry(b)
	} else if m.t.Before(b.min) {
		b.min = m.t
	}
	if m.t.After(b.max) {
		b.max = m.t
	}
	b.offs = append(b.offs, int64(m.t.Sub(b.start)))
	b.data = append(b.data, m.enc...)
	b.ends = append(b.ends, uint32(len(b.data)))
	b.ver = ts.db.writes.Add(1)
	for _, ix := range ts.indexes {
		if ix.measured != nil {
			ix.extendMeasured(b, m.enc)
		}
	}
	ts.count++
	ts.bytesLen += int64(len(m.enc))
	if b.len() >= TimeSeriesBucketMaxCount {
		ts.indexReopen(b)
		if ts.open[b.metaKey] != b {
			b.clip()
		}
	}
	ts.track(b)
}

// clip gives back the spare capacity of a bucket's slices.
func (b *bucket) clip() {
	b.offs = slices.Clip(slices.Clone(b.offs))
	b.ends = slices.Clip(slices.Clone(b.ends))
	b.data = slices.Clip(slices.Clone(b.data))
}

// attach adds a new bucket to every structure. Call holding mu for writing.
func (ts *tsColl) attach(b *bucket) {
	ts.track(b)
	ts.indexReopen(b)
	ts.buckets.ReplaceOrInsert(b)
	for _, ix := range ts.indexes {
		ix.add(ts, b)
	}
	ts.attachExpiry(b)
}

// removeBucket deletes a bucket from every structure. Call holding mu for
// writing.
func (ts *tsColl) removeBucket(b *bucket) {
	ts.detachExpiry(b)
	for _, ix := range ts.indexes {
		ix.remove(ts, b)
	}
	ts.buckets.Delete(b)
	if ts.open[b.metaKey] == b {
		delete(ts.open, b.metaKey)
	}
	ts.count -= b.len()
	ts.bytesLen -= int64(len(b.data))
	ts.untrack(b)
	b.removed = true
	ts.indexReopen(b)
}

// keep rewrites a bucket keeping the measurements for which keep[i] is
// true, removing the bucket if none is kept. It returns how many it
// removed. Call holding mu for writing.
func (ts *tsColl) keep(b *bucket, keep []bool) int {
	n := 0
	for _, k := range keep {
		if !k {
			n++
		}
	}
	switch {
	case n == 0:
		return 0
	case n == b.len():
		ts.removeBucket(b)
		return n
	}
	ts.detachExpiry(b)
	ts.untrack(b)
	offs := make([]int64, 0, b.len()-n)
	ends := make([]uint32, 0, b.len()-n)
	var data []byte
	var lo, hi time.Time
	for i := range b.offs {
		if !keep[i] {
			continue
		}
		t := b.timeAt(i)
		if len(offs) == 0 || t.Before(lo) {
			lo = t
		}
		if len(offs) == 0 || t.After(hi) {
			hi = t
		}
		offs = append(offs, b.offs[i])
		data = append(data, b.enc(i)...)
		ends = append(ends, uint32(len(data)))
	}
	ts.bytesLen += int64(len(data) - len(b.data))
	b.offs, b.ends, b.data = offs, ends, slices.Clip(data)
	b.min, b.max = lo, hi
	b.ver = ts.db.writes.Add(1)
	ts.count -= n
	ts.track(b)
	ts.indexReopen(b)
	ts.attachExpiry(b)
	for _, ix := range ts.indexes {
		if ix.measured != nil {
			// The bounds shrink with the measurements: recomputed.
			ix.remove(ts, b)
			ix.add(ts, b)
		}
	}
	return n
}

// compact gives back the spare capacity of every bucket's slices.
func (ts *tsColl) compact() error {
	ts.mu.Lock()
	defer ts.unlockWrite()
	if ts.dropped {
		return ts.errDropped()
	}
	ts.buckets.Ascend(func(b *bucket) bool { ts.resize(b, (*bucket).clip); return true })
	return nil
}
