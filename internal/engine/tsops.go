package engine

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
)

// The ops of a time-series collection describe measurements, as reads see
// them, and say exactly where each is stored, so that applying them
// rebuilds identical buckets:
//
//   - A measurement in an op (OpInsert's and OpUpdate's Docs, Before) is
//     the document reads return, encoded as its bucket stores it: the
//     stored fields (its _id and every field but the time and meta
//     fields) in their stored order, then the time field, then the meta
//     field if it has one. Apply takes the stored fields back byte for
//     byte, and places the measurements in order as the insert did: bucket
//     placement depends only on the buckets and the order of inserts.
//   - A measurement's key ({_id, bucket, pos}, in Keys) names its bucket
//     by the bucket's creation number (1 for the first bucket of the
//     collection, in the order inserts open them: the same on every DB
//     that applied the same ops) and its position in the bucket as it was
//     before the op, as a sharded collection's document key carries its
//     shard key. The _id is checked against the measurement found there.
//   - A meta update (UpdateMany on the metaField) is an OpUpdate whose
//     Docs are every measurement of each bucket it changed, as they are
//     after it, with their keys in Keys (parallel).

// tsKeyFields are the fields of a measurement's key besides _id.
const (
	tsKeyBucket = "bucket"
	tsKeyPos    = "pos"
)

// appendTSKey appends the key of measurement i of b.
func appendTSKey(dst []byte, b *bucket, i int) []byte {
	dst = append(dst, 3)
	if raw, ok := codec.EncodedFieldRaw(b.enc(i), "_id"); ok {
		dst = codec.AppendRawField(dst, "_id", raw)
	} else {
		dst = codec.AppendRawField(dst, "_id", []byte{0}) // null: cannot happen, every measurement has an _id
	}
	var num [binary.MaxVarintLen64 + 1]byte
	dst = codec.AppendRawField(dst, tsKeyBucket, codec.AppendInt64Value(num[:0], int64(b.seq)))
	return codec.AppendRawField(dst, tsKeyPos, codec.AppendInt32Value(num[:0], int32(i)))
}

// tsKeys returns the keys of the measurements of b that remove marks
// (remove nil: all), in one allocation per call.
func tsKeys(out []RawDocument, buf []byte, b *bucket, remove func(i int) bool) ([]RawDocument, []byte) {
	for i := range b.offs {
		if remove != nil && !remove(i) {
			continue
		}
		start := len(buf)
		buf = appendTSKey(buf, b, i)
		out = append(out, RawDocument(buf[start:len(buf):len(buf)]))
	}
	return out, buf
}

// metaField returns the encoding of a bucket's meta field (name and
// value), nil without one.
func (ts *tsColl) metaField(b *bucket) []byte {
	if !b.hasMeta {
		return nil
	}
	enc, err := codec.Encode(Document{ts.opts.MetaField: b.meta}, nil)
	if err != nil {
		return nil // stored: it encodes
	}
	return enc[1:] // past the field count (1)
}

// appendMeasurement appends the encoding of a measurement as ops carry
// it: its stored fields, then the time field, then the meta field (meta,
// as metaField returns it; nil: none).
func (ts *tsColl) appendMeasurement(dst, stored []byte, t time.Time, meta []byte) []byte {
	n, k := binary.Uvarint(stored)
	extra := uint64(1)
	if meta != nil {
		extra++
	}
	dst = binary.AppendUvarint(dst, n+extra)
	dst = append(dst, stored[k:]...)
	dst = codec.AppendRawField(dst, ts.opts.TimeField, codec.AppendTimeValue(nil, t))
	return append(dst, meta...)
}

// measurements returns the measurements of b that remove marks (nil: all)
// as ops carry them.
func (ts *tsColl) measurements(out []RawDocument, b *bucket, remove func(i int) bool) []RawDocument {
	meta := ts.metaField(b)
	for i := range b.offs {
		if remove != nil && !remove(i) {
			continue
		}
		out = append(out, RawDocument(ts.appendMeasurement(nil, b.enc(i), b.timeAt(i), meta)))
	}
	return out
}

// commitOps commits ops of the collection. Call holding mu for writing,
// after the change.
func (ts *tsColl) commitOps(now time.Time, ops ...Op) {
	at := opTime(now)
	for i := range ops {
		ops[i].Collection = ts.name
		if ops[i].Time.IsZero() {
			ops[i].Time = at
		}
	}
	ts.db.ops.commit(ops)
}

// emit commits the op of a metadata change made holding mu for writing:
// the op DB.Apply applies (applied, keeping its number), else op (built
// by mk) when ops are wanted.
func (ts *tsColl) emit(applied *Op, mk func() Op) error {
	if applied != nil {
		return ts.db.ops.commitApplied([]Op{*applied})
	}
	if ts.db.ops.opsWanted() {
		ts.commitOps(ts.db.clock.Now(), mk())
	}
	return nil
}

// insertOp is the OpInsert of prepared measurements.
func (ts *tsColl) insertOp(prepared []tsMeasurement) Op {
	docs := make([]RawDocument, len(prepared))
	metas := map[string][]byte{}
	for i, m := range prepared {
		var meta []byte
		if m.hasMeta {
			var ok bool
			if meta, ok = metas[m.metaKey]; !ok {
				meta = ts.metaField(&bucket{meta: m.meta, hasMeta: true})
				metas[m.metaKey] = meta
			}
		}
		docs[i] = ts.appendMeasurement(nil, m.enc, m.t, meta)
	}
	return Op{Kind: OpInsert, Docs: docs}
}

// tsMarks lists measurements to remove, bucket by bucket: keeps[j] marks
// false those of order[j] that go.
type tsMarks struct {
	order []*bucket
	keeps [][]bool
	at    map[*bucket]int // the index of each bucket in order (mark)
}

// add lists b with keep (the TTL monitor's batch: each bucket once).
func (m *tsMarks) add(b *bucket, keep []bool) {
	m.order = append(m.order, b)
	m.keeps = append(m.keeps, keep)
}

// reset empties m for the next batch, keeping its memory (and no bucket
// alive).
func (m *tsMarks) reset() {
	clear(m.order)
	clear(m.keeps)
	clear(m.at)
	m.order, m.keeps = m.order[:0], m.keeps[:0]
}

// mark marks measurement i of b, listing b the first time; it reports
// false if i was marked already.
func (m *tsMarks) mark(b *bucket, i int) bool {
	if m.at == nil {
		m.at = map[*bucket]int{}
	}
	j, ok := m.at[b]
	if !ok {
		keep := make([]bool, b.len())
		for k := range keep {
			keep[k] = true
		}
		j = len(m.order)
		m.at[b] = j
		m.add(b, keep)
	}
	if !m.keeps[j][i] {
		return false
	}
	m.keeps[j][i] = false
	return true
}

// removalOp describes the measurements marks lists as an op of kind
// (OpDelete, OpExpire). Call before the buckets change.
func (ts *tsColl) removalOp(kind OpKind, marks *tsMarks) Op {
	op := Op{Kind: kind}
	var buf []byte
	pre := ts.db.ops.preImagesWanted()
	for j, b := range marks.order {
		keep := marks.keeps[j]
		removed := func(i int) bool { return !keep[i] }
		op.Keys, buf = tsKeys(op.Keys, buf, b, removed)
		if pre {
			op.Before = ts.measurements(op.Before, b, removed)
		}
	}
	return op
}

// metaUpdateOp describes buckets whose meta value an update changed
// (after the change): every measurement, with its key.
func (ts *tsColl) metaUpdateOp(changed []*bucket, before [][]RawDocument, update RawDocument) Op {
	op := Op{Kind: OpUpdate}
	var buf []byte
	for j, b := range changed {
		op.Docs = ts.measurements(op.Docs, b, nil)
		op.Keys, buf = tsKeys(op.Keys, buf, b, nil)
		if before != nil {
			op.Before = append(op.Before, before[j]...)
		}
	}
	if update != nil {
		op.Updates = make([]RawDocument, len(op.Docs))
		for i := range op.Updates {
			op.Updates[i] = update
		}
	}
	return op
}

// tsKeyOf reads a measurement's key: its _id's encoding, bucket and
// position.
func tsKeyOf(k RawDocument) (id []byte, seq uint64, pos int, err error) {
	if err := codec.Validate(k); err != nil {
		return nil, 0, 0, fmt.Errorf("%w: key: %w", ErrInvalidOp, err)
	}
	id, okID := codec.EncodedFieldRaw(k, "_id")
	b, okB := k.Lookup(tsKeyBucket)
	p, okP := k.Lookup(tsKeyPos)
	bs, isB := b.(int64)
	ps, isP := p.(int32)
	if !okID || !okB || !okP || !isB || !isP || bs <= 0 || ps < 0 {
		return nil, 0, 0, fmt.Errorf("%w: a time-series key is {_id, bucket: int64 > 0, pos: int32 >= 0}, not %v", ErrInvalidOp, k.Document())
	}
	return id, uint64(bs), int(ps), nil
}

// bucketBySeq returns the stored bucket with creation number seq. Call
// holding mu.
func (ts *tsColl) bucketBySeq(seq uint64) (*bucket, bool) {
	return ts.buckets.Get(&bucket{seq: seq})
}

// locate finds the measurements keys name, grouped by bucket in the order
// of their first key. Every key must name a stored measurement with its
// _id, and none twice. Call holding mu.
func (ts *tsColl) locate(ks []RawDocument) (*tsMarks, error) {
	marks := &tsMarks{}
	for _, k := range ks {
		id, seq, pos, err := tsKeyOf(k)
		if err != nil {
			return nil, err
		}
		b, ok := ts.bucketBySeq(seq)
		if !ok || pos >= b.len() {
			return nil, fmt.Errorf("%w: %w: collection %q: no measurement at bucket %d position %d", ErrInvalidOp, ErrNotFound, ts.name, seq, pos)
		}
		if have, _ := codec.EncodedFieldRaw(b.enc(pos), "_id"); !slices.Equal(have, id) {
			return nil, fmt.Errorf("%w: collection %q: the measurement at bucket %d position %d has another _id", ErrInvalidOp, ts.name, seq, pos)
		}
		if !marks.mark(b, pos) {
			return nil, fmt.Errorf("%w: collection %q: bucket %d position %d named twice", ErrInvalidOp, ts.name, seq, pos)
		}
	}
	return marks, nil
}

// splitMeasurement takes a measurement as ops carry it apart: its stored
// encoding (the fields but the time and meta fields, in their order), its
// time and its meta value.
func (ts *tsColl) splitMeasurement(d RawDocument) (tsMeasurement, error) {
	var m tsMeasurement
	if err := codec.Validate(d); err != nil {
		return m, fmt.Errorf("%w: %w", ErrInvalidOp, err)
	}
	tf, mf := ts.opts.TimeField, ts.opts.MetaField
	var rest []byte
	n, hasTime := 0, false
	codec.RawFields(d, func(name, raw []byte) {
		switch {
		case string(name) == tf:
			hasTime = true
		case mf != "" && string(name) == mf:
			m.hasMeta = true
		default:
			n++
			rest = codec.AppendRawField(rest, string(name), raw)
		}
	})
	if !hasTime {
		return m, fmt.Errorf("%w: %w: collection %q: measurement without its timeField %q", ErrInvalidOp, ErrTimeSeries, ts.name, tf)
	}
	t, isTime, _ := codec.EncodedTime(d, tf)
	if !isTime {
		return m, fmt.Errorf("%w: %w: collection %q: timeField %q is not a date", ErrInvalidOp, ErrTimeSeries, ts.name, tf)
	}
	m.t = t
	if m.hasMeta {
		m.meta, _ = codec.EncodedField(d, mf)
		if codec.IsArray(m.meta) {
			return m, fmt.Errorf("%w: %w: collection %q: metaField %q holds an array", ErrInvalidOp, ErrTimeSeries, ts.name, mf)
		}
		k, err := keys.Encode(m.meta)
		if err != nil {
			return m, fmt.Errorf("%w: collection %q: metaField %q: %w", ErrInvalidOp, ts.name, mf, err)
		}
		m.metaKey = k
	}
	m.enc = append(binary.AppendUvarint(make([]byte, 0, len(rest)+2), uint64(n)), rest...)
	id, ok := codec.EncodedField(m.enc, "_id")
	if !ok {
		return m, fmt.Errorf("%w: collection %q: measurement without an _id", ErrInvalidOp, ts.name)
	}
	m.id = id
	return m, nil
}
