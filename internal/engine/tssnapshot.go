package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
	snapfile "github.com/ttldb/ttldb/internal/snapshot"
)

// A time-series collection goes into a snapshot exactly as of one op (its
// collection block's AsOf), not in chunks: its ops name buckets by
// creation number and measurements by position, so they must be applied
// to the very buckets they were made on. The copy under the read lock
// takes only each bucket's slice headers (a bucket's bytes below its
// length never change: appends go past them, trims and clips build new
// slices), so writers wait for O(buckets) work, not for the bytes; the
// encoding happens after the lock is released.

// tsSnapBucket is a bucket as the walk copied it.
type tsSnapBucket struct {
	seq, ver uint64
	hasMeta  bool
	meta     any
	open     bool
	start    time.Time
	offs     []int64
	ends     []uint32
	data     []byte
}

// tsWriteTo writes a time-series collection to sw as collection id.
func (s *collState) tsWriteTo(sw *snapfile.Writer, id uint32) error {
	ts := s.ts
	ts.mu.RLock()
	if ts.dropped {
		ts.mu.RUnlock()
		return nil // its drop is among the captured ops
	}
	c := snapfile.Collection{ID: id, Name: s.name, Spec: collectionSpec(s.opts), Next: ts.nextSeq}
	var multikey []any
	for _, ix := range ts.indexes {
		m := IndexModel{Name: ix.name, Keys: ix.keys, PartialFilterExpression: ix.partDoc}
		if ix.exp != nil {
			m.ExpireAfterSeconds = Seconds(int32(ix.exp.expireAfter.Load()))
		}
		c.Indexes = append(c.Indexes, indexSpecDoc(m))
		if ix.multikey {
			multikey = append(multikey, ix.name)
		}
	}
	exp := ts.collExp.expireAfter.Load()
	c.State = collectionState(multikey, &exp, ts.state.ttlPaused.Load())
	bs := make([]tsSnapBucket, 0, ts.buckets.Len())
	ts.buckets.Ascend(func(b *bucket) bool {
		n := len(b.offs)
		bs = append(bs, tsSnapBucket{
			seq: b.seq, ver: b.ver, hasMeta: b.hasMeta, meta: b.meta, open: ts.open[b.metaKey] == b, start: b.start,
			offs: b.offs[:n:n], ends: b.ends[:n:n], data: b.data[:len(b.data):len(b.data)],
		})
		return true
	})
	// Every op of the collection committed so far is in the buckets (ops
	// commit under mu held for writing), and none after.
	c.AsOf = s.db.ops.lastSeq()
	ts.mu.RUnlock()
	if err := sw.Collection(c); err != nil {
		return err
	}
	var buf []byte
	for i := range bs {
		var err error
		if buf, err = bs[i].append(buf[:0]); err != nil {
			return fmt.Errorf("collection %q: bucket %d: %w", s.name, bs[i].seq, err)
		}
		if err := sw.Bucket(id, buf); err != nil {
			return err
		}
	}
	return nil
}

// append appends the bucket's encoding (docs/FORMAT.md, buckets blocks).
func (b *tsSnapBucket) append(dst []byte) ([]byte, error) {
	dst = binary.AppendUvarint(dst, b.seq)
	dst = binary.AppendUvarint(dst, b.ver)
	var flags byte
	if b.hasMeta {
		flags |= 1
	}
	if b.open {
		flags |= 2
	}
	dst = append(dst, flags)
	if b.hasMeta {
		m, err := codec.Encode(Document{"m": b.meta}, nil)
		if err != nil {
			return nil, err
		}
		dst = binary.AppendUvarint(dst, uint64(len(m)))
		dst = append(dst, m...)
	}
	dst = binary.AppendVarint(dst, b.start.Unix())
	dst = binary.AppendUvarint(dst, uint64(b.start.Nanosecond()))
	dst = binary.AppendUvarint(dst, uint64(len(b.offs)))
	for _, o := range b.offs {
		dst = binary.AppendVarint(dst, o)
	}
	lo := uint32(0)
	for _, hi := range b.ends {
		dst = binary.AppendUvarint(dst, uint64(hi-lo))
		dst = append(dst, b.data[lo:hi]...)
		lo = hi
	}
	return dst, nil
}

// loadBucket stores a bucket a snapshot holds (its encoding raw, which it
// does not keep) and returns its version.
func (ts *tsColl) loadBucket(raw []byte) (uint64, error) {
	bad := func(what string) error {
		return corrupt("collection %q: bucket: malformed %s", ts.name, what)
	}
	p := raw
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	seq, ok1 := uv()
	ver, ok2 := uv()
	if !ok1 || !ok2 || len(p) == 0 || ver == 0 {
		return 0, bad("header")
	}
	flags := p[0]
	p = p[1:]
	if flags&^3 != 0 {
		return 0, bad("flags")
	}
	b := &bucket{seq: seq, ver: ver}
	if seq == 0 || seq >= ts.nextSeq {
		return 0, corrupt("collection %q: bucket %d, but the next bucket is %d", ts.name, seq, ts.nextSeq)
	}
	if ts.buckets.Len() > 0 {
		if last, _ := ts.buckets.Max(); last.seq >= seq {
			return 0, corrupt("collection %q: bucket %d after bucket %d", ts.name, seq, last.seq)
		}
	}
	if flags&1 != 0 {
		n, ok := uv()
		if !ok || n > uint64(len(p)) {
			return 0, bad("meta")
		}
		m := p[:n]
		p = p[n:]
		if err := codec.Validate(m); err != nil {
			return 0, bad("meta: " + err.Error())
		}
		meta, found := codec.EncodedField(m, "m")
		if !found || codec.IsArray(meta) {
			return 0, bad("meta")
		}
		k, err := keys.Encode(meta)
		if err != nil {
			return 0, bad("meta: " + err.Error())
		}
		b.meta, b.hasMeta, b.metaKey = meta, true, k
	}
	sec, n := binary.Varint(p)
	if n <= 0 {
		return 0, bad("start")
	}
	p = p[n:]
	nsec, ok := uv()
	if !ok || nsec >= 1e9 {
		return 0, bad("start")
	}
	b.start = time.Unix(sec, int64(nsec)).UTC()
	count, ok := uv()
	if !ok || count == 0 || count > uint64(len(p)) || count > TimeSeriesBucketMaxCount {
		return 0, bad("count")
	}
	b.offs = make([]int64, count)
	b.ends = make([]uint32, count)
	for i := range b.offs {
		o, n := binary.Varint(p)
		if n <= 0 || o < 0 {
			return 0, bad("offset")
		}
		p = p[n:]
		b.offs[i] = o
		t := b.start.Add(time.Duration(o))
		if i == 0 || t.Before(b.min) {
			b.min = t
		}
		if i == 0 || t.After(b.max) {
			b.max = t
		}
	}
	var data bytes.Buffer
	for i := range b.ends {
		n, ok := uv()
		if !ok || n > uint64(len(p)) {
			return 0, bad("measurement")
		}
		m := p[:n]
		p = p[n:]
		if err := codec.Validate(m); err != nil {
			return 0, bad("measurement: " + err.Error())
		}
		data.Write(m)
		b.ends[i] = uint32(data.Len())
	}
	if len(p) != 0 {
		return 0, bad("bucket (trailing bytes)")
	}
	b.data = data.Bytes()
	ts.attach(b)
	ts.count += b.len()
	ts.bytesLen += int64(len(b.data))
	if flags&2 != 0 {
		ts.open[b.metaKey] = b
	}
	return ver, nil
}

// loadApply applies an op of the time-series collection as the loader
// does: the collection's state is exact at its snapshot's AsOf, so the
// ops after it apply as DB.Apply applies them, but without telling the
// metrics or the observers (it is history being reloaded).
func (l *loader) tsApply(ts *tsColl, op Op) error {
	switch op.Kind {
	case OpCreateIndex, OpDropIndex, OpCollMod:
		l.db.ops.seq.Store(op.Seq - 1) // applyOp commits it: no sink is attached
		return ts.applyOp(&op)
	}
	ts.mu.Lock()
	defer ts.unlockWrite()
	var err error
	switch op.Kind {
	case OpInsert:
		err = ts.applyInsert(&op, modeReplay)
	case OpUpdate:
		err = ts.applyMetaUpdate(&op, modeReplay)
	case OpDelete:
		_, _, _, _, err = ts.applyRemoval(&op, false, nil)
	case OpExpire:
		_, _, _, _, err = ts.applyRemoval(&op, true, nil)
	default:
		err = fmt.Errorf("a time-series collection has no %s ops", op.Kind)
	}
	if err != nil {
		return corrupt("%v", err)
	}
	return nil
}
