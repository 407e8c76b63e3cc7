package engine

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
)

// How writes describe themselves as ops (op.go) for the committer
// (commit.go). Nothing here runs unless db.ops.opsWanted(): a write then
// records its ops in its collection's opRecorder while it changes the
// collection, and Collection.write commits them in one call, still holding
// the write lock, once the write succeeded. Writes that do not go through
// Collection.write (TTL batches, index publication, collection creation
// and drop, time-series writes) commit their own, under the lock that
// orders them.

// opRecorder collects the ops of the write running on a collection.
// Guarded by the collection's writeMu.
type opRecorder struct {
	ops []Op
	pre bool // fill Op.Before
	// natFrom is the collection's nextSeq when the write began: what it
	// inserts comes after (committer.commitWrite).
	natFrom uint64
	now     time.Time // the clock reading the write resolved its values with; zero: none yet

	// replaceKind and update describe the next replaceRecords: OpUpdate
	// with the update document as resolved, or OpReplace.
	replaceKind OpKind
	update      RawDocument

	// one holds ops, when its write's only op was added with addOne:
	// endOps pools it if no sink keeps the ops.
	one *oneDocOp
}

// beginOps starts recording the running write's ops, when a sink wants
// them. Call holding writeMu.
func (s *collState) beginOps() {
	if !s.db.ops.opsWanted() {
		return
	}
	// The recorder lives in the collection (no allocation per write); a
	// fresh value each time, so that its ops slice, which the committed
	// ops keep, is never reused.
	s.opBuf = opRecorder{pre: s.db.ops.preImagesWanted(), natFrom: s.nextSeq}
	s.oprec = &s.opBuf
}

// endOps commits the recorded ops if the write succeeded (err == nil) and
// stops recording. Call holding writeMu, after the write's change.
func (s *collState) endOps(err error) {
	r := s.oprec
	if r == nil {
		return
	}
	s.oprec = nil
	kept := false
	if err == nil && len(r.ops) > 0 {
		kept = s.db.ops.commitWrite(r.ops, r.natFrom)
	}
	if r.one != nil && !kept {
		r.one.release()
		r.ops, r.one = nil, nil // the recorder stays in the collection: no view into the pool
	}
}

// opTime is an instant as ops carry it: in UTC, without a monotonic
// reading.
func opTime(t time.Time) time.Time { return t.Round(0).UTC() }

// time returns the clock reading of the write, reading the clock once if
// the write did not.
func (r *opRecorder) time(s *collState) time.Time {
	if r.now.IsZero() {
		r.now = s.db.clock.Now()
	}
	return opTime(r.now)
}

// add appends an op of the running write.
func (r *opRecorder) add(s *collState, op Op) {
	op.Collection = s.name
	if op.Time.IsZero() {
		op.Time = r.time(s)
	}
	r.ops = append(r.ops, op)
}

// oneDocOp is the memory of the op of a one-document write (an
// InsertOne): the op, its document and version, and the recorder's slice
// of ops, in one allocation where separate ones took three. Its arrays
// are the op's slices, so it lives as long as the op does: until the
// commit when no sink keeps ops (then it is pooled: endOps), as long as
// a sink keeps the op otherwise.
type oneDocOp struct {
	op  [1]Op
	doc [1]RawDocument
	ver [1]uint64
}

// addOne is add for the first op of a write, held in one (whose doc and
// ver arrays op's slices may use): the recorder's ops become one's array,
// which a later add leaves for a grown copy.
func (r *opRecorder) addOne(s *collState, one *oneDocOp, op Op) {
	if len(r.ops) > 0 {
		r.add(s, op)
		return
	}
	op.Collection = s.name
	if op.Time.IsZero() {
		op.Time = r.time(s)
	}
	one.op[0] = op
	r.ops = one.op[:1:1]
	r.one = one
}

// oneDocOps pools the memory of one-document ops that no sink kept (a DB
// whose only sink is its log): a durable InsertOne then allocates no op.
var oneDocOps = sync.Pool{New: func() any { return new(oneDocOp) }}

// newOneDocOp returns a zero oneDocOp, pooled or new.
func newOneDocOp() *oneDocOp { return oneDocOps.Get().(*oneDocOp) }

// release zeroes o, so that the pool keeps no document alive, and pools
// it. Call only once nothing refers to o: its op was committed to sinks
// that keep none (commitWrite), or never committed.
func (o *oneDocOp) release() {
	*o = oneDocOp{}
	oneDocOps.Put(o)
}

// keysOf returns the document keys ({_id: v}) of encoded documents, in
// one buffer sized from sizeHint (bytes; a short hint only costs the
// buffer's growth: keys already cut from it stay valid). Each document is
// walked once.
func keysOf(n, sizeHint int, enc func(i int) []byte) []RawDocument {
	buf := make([]byte, 0, sizeHint)
	out := make([]RawDocument, n)
	for i := range n {
		start := len(buf)
		buf, _ = codec.AppendIDDoc(buf, enc(i))
		out[i] = RawDocument(buf[start:len(buf):len(buf)])
	}
	return out
}

// deletedKeys builds the Keys of a deletion op (a TTL batch), and its
// Before when pre is set, one deleted record at a time, into one buffer
// (keys already cut from it stay valid if it grows). Pre-images are the
// stored encodings, shared (they never change).
//
// With pack set (only change streams take ops: committer.keysPackable),
// the keys stay packed in that buffer with their end offsets (packedKeys)
// instead of a slice header each: a mass expiry's garbage is mostly these
// keys, and every byte of it is memory the pass must fault in.
type deletedKeys struct {
	keys   []RawDocument
	before []RawDocument
	buf    []byte
	ends   []uint32 // packed: where each key ends in buf
	n      int      // keys added
	pack   bool
	pre    bool
}

// keySlack is what the key buffer of a deletion op allows each key beyond
// the length of the first: the _id values of a batch are most often of
// one type and of about one length (a growing integer gains a byte now
// and then).
const keySlack = 2

// maxPackedKeys bounds a packed key buffer (its offsets are uint32): a
// batch whose keys outgrow it goes on unpacked. A variable for tests.
var maxPackedKeys = math.MaxUint32

// add appends rec's key (and pre-image); n is how many records the op
// may hold, for the first add's allocations. The buffer is sized from the
// first key.
func (d *deletedKeys) add(rec *record, n int) {
	if d.n == 0 {
		var first [64]byte
		k, _ := codec.AppendIDDoc(first[:0], rec.enc)
		d.buf = make([]byte, 0, n*(len(k)+keySlack))
		if d.pack {
			d.ends = make([]uint32, 0, n)
		} else {
			d.keys = make([]RawDocument, 0, n)
		}
		if d.pre {
			d.before = make([]RawDocument, 0, n)
		}
	}
	d.n++
	start := len(d.buf)
	d.buf, _ = codec.AppendIDDoc(d.buf, rec.enc)
	if d.pack && len(d.buf) > maxPackedKeys {
		d.unpack()
	}
	if d.pack {
		d.ends = append(d.ends, uint32(len(d.buf)))
	} else {
		d.keys = append(d.keys, RawDocument(d.buf[start:len(d.buf):len(d.buf)]))
	}
	if d.pre {
		d.before = append(d.before, rec.enc)
	}
}

// unpack turns the keys packed so far into Keys, and the next ones go
// there too.
func (d *deletedKeys) unpack() {
	p := packedKeys{buf: d.buf, ends: d.ends}
	d.keys = slices.Grow(p.unpack(), cap(d.ends)-len(d.ends))
	d.ends, d.pack = nil, false
}

// op returns the op's Keys, or its packed keys.
func (d *deletedKeys) op() (keys []RawDocument, packed *packedKeys) {
	if d.pack {
		return nil, &packedKeys{buf: d.buf, ends: d.ends}
	}
	return d.keys, nil
}

// recordKeys returns the keys of recs. The _id's index key (rec.key) is
// as long as its encoding for strings and ObjectIDs, longer for most
// numbers: with the 5 bytes around it, one buffer nearly always holds
// them all.
func recordKeys(recs []record) []RawDocument {
	size := 0
	for i := range recs {
		size += len(recs[i].key) + 5
	}
	return keysOf(len(recs), size, func(i int) []byte { return recs[i].enc })
}

// recordDocs returns the stored encodings of records (shared: they never
// change).
func recordDocs(recs []record) []RawDocument {
	out := make([]RawDocument, len(recs))
	for i := range recs {
		out[i] = recs[i].enc
	}
	return out
}

// deleted records an OpDelete of recs (nothing if recs is empty).
func (r *opRecorder) deleted(s *collState, recs []record) {
	if len(recs) == 0 {
		return
	}
	op := Op{Kind: OpDelete, Keys: recordKeys(recs)}
	if r.pre {
		op.Before = recordDocs(recs)
	}
	r.add(s, op)
}

// resolvedUpdate returns the update document as applied at now: the
// fields of $currentDate set, under $set, to the time it wrote. nil if it
// cannot be encoded (it can: CompileUpdate checked its values).
func resolvedUpdate(update Document, now time.Time) RawDocument {
	u := update
	if cd, ok := update["$currentDate"]; ok {
		fields, _ := codec.AsDocument(cd)
		u = make(Document, len(update))
		for k, v := range update {
			if k != "$currentDate" {
				u[k] = v
			}
		}
		set := Document{}
		if old, ok := codec.AsDocument(update["$set"]); ok {
			for k, v := range old {
				set[k] = v
			}
		}
		at := opTime(now)
		for f := range fields {
			set[f] = at
		}
		u["$set"] = set
	}
	enc, err := codec.EncodeExpr(u)
	if err != nil {
		return nil
	}
	return enc
}

// collectionSpec describes a collection's options as a document:
// {capped, max, size, validator, hideExpired, timeseries: {timeField,
// metaField, granularity | bucketMaxSpanSeconds + bucketRoundingSeconds,
// preciseExpiry, reopenBuckets}, expireAfterSeconds}, each present only
// when set. reopenBuckets marks a collection whose inserts reopen buckets
// (all but those created before ttldb did): its ops replay only so.
func collectionSpec(o CollectionOptions) RawDocument {
	d := Document{}
	if o.Capped {
		d["capped"] = true
		if o.MaxDocuments > 0 {
			d["max"] = int64(o.MaxDocuments)
		}
		if o.MaxBytes > 0 {
			d["size"] = o.MaxBytes
		}
	}
	if o.Validator != nil {
		d["validator"] = o.Validator
	}
	if o.HideExpired {
		d["hideExpired"] = true
	}
	if t := o.TimeSeries; t != nil {
		td := Document{"timeField": t.TimeField}
		if t.MetaField != "" {
			td["metaField"] = t.MetaField
		}
		if t.Granularity != "" {
			td["granularity"] = string(t.Granularity)
		} else {
			td["bucketMaxSpanSeconds"] = t.BucketMaxSpanSeconds
			td["bucketRoundingSeconds"] = t.BucketRoundingSeconds
		}
		if t.PreciseExpiry {
			td["preciseExpiry"] = true
		}
		if !t.legacyPlacement {
			td["reopenBuckets"] = true
		}
		d["timeseries"] = td
	}
	if o.ExpireAfterSeconds != nil {
		d["expireAfterSeconds"] = *o.ExpireAfterSeconds
	}
	enc, err := codec.EncodeExpr(d)
	if err != nil {
		// The validator was compiled from a copy in stored form: it
		// encodes. Nothing else can fail.
		panic("ttldb: internal error: collection options do not encode: " + err.Error())
	}
	return enc
}

// indexSpecDoc describes an index model (name resolved) as a document:
// {name, key: [{field, order}…], unique, sparse, partialFilterExpression,
// expireAfterSeconds, ttlValueForms}, each option present only when set.
func indexSpecDoc(m IndexModel) RawDocument { return encodeIndexSpec(indexSpecFields(m)) }

// builtIndexSpec is an OpCreateIndex's Spec: indexSpecDoc with
// multikey: true when the build met an array. The origin's build may have
// met it in a document written and deleted while the build ran, which a
// replay of the ops never sees; every DB applying the op marks the index
// alike (multikeyOf).
func builtIndexSpec(ix *index) RawDocument {
	d := indexSpecFields(ix.model())
	if ix.multikey {
		d["multikey"] = true
	}
	return encodeIndexSpec(d)
}

// multikeyOf reads builtIndexSpec's multikey flag.
func multikeyOf(spec RawDocument) bool {
	v, _ := spec.Lookup("multikey")
	b, _ := v.(bool)
	return b
}

func indexSpecFields(m IndexModel) Document {
	keys := make([]any, len(m.Keys))
	for i, k := range m.Keys {
		keys[i] = Document{"field": k.Field, "order": int32(k.Order)}
	}
	d := Document{"name": m.Name, "key": keys}
	if m.Unique {
		d["unique"] = true
	}
	if m.Sparse {
		d["sparse"] = true
	}
	if len(m.PartialFilterExpression) > 0 {
		d["partialFilterExpression"] = m.PartialFilterExpression
	}
	if m.ExpireAfterSeconds != nil {
		d["expireAfterSeconds"] = *m.ExpireAfterSeconds
		if m.TTLValueForms != TTLValuesDatesAndArango {
			d["ttlValueForms"] = int32(m.TTLValueForms)
		}
	}
	return d
}

func encodeIndexSpec(d Document) RawDocument {
	enc, err := codec.EncodeExpr(d)
	if err != nil {
		panic("ttldb: internal error: index specification does not encode: " + err.Error())
	}
	return enc
}

// collModSpec describes a CollMod: {expireAfterSeconds: n}, or {off: true}
// for a time-series collection's expiry turned off.
func collModSpec(secs *int32) RawDocument {
	d := Document{"off": true}
	if secs != nil {
		d = Document{"expireAfterSeconds": *secs}
	}
	enc, _ := codec.EncodeExpr(d)
	return enc
}

// pauseSpec is the Spec of an OpCollMod that pauses (or resumes) a
// collection's TTL deletion: {ttlPaused: paused}, with no Index.
func pauseSpec(paused bool) RawDocument {
	enc, _ := codec.EncodeExpr(Document{"ttlPaused": paused})
	return enc
}

// pausedOf reads a pauseSpec.
func pausedOf(spec RawDocument) (bool, error) {
	d, err := decodeSpec(spec)
	if err != nil {
		return false, err
	}
	r := &specReader{d: d}
	r.known("ttlPaused")
	p, ok := d["ttlPaused"].(bool)
	if r.err == nil && !ok {
		r.err = fmt.Errorf("%w: a collMod without an index needs ttlPaused", ErrInvalidOp)
	}
	return p, r.err
}

// specReader reads the fields of a decoded specification, refusing
// values of the wrong type.
type specReader struct {
	d   Document
	err error
}

func (r *specReader) bad(field string, v any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: spec field %q: unexpected %T", ErrInvalidOp, field, v)
	}
}

func (r *specReader) bool(f string) bool {
	v, ok := r.d[f]
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.bad(f, v)
	}
	return b
}

func (r *specReader) str(f string) string {
	v, ok := r.d[f]
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		r.bad(f, v)
	}
	return s
}

func (r *specReader) int32p(f string) *int32 {
	v, ok := r.d[f]
	if !ok {
		return nil
	}
	n, isInt := v.(int32)
	if !isInt {
		r.bad(f, v)
		return nil
	}
	return &n
}

func (r *specReader) int64(f string) int64 {
	v, ok := r.d[f]
	if !ok {
		return 0
	}
	n, isInt := v.(int64)
	if !isInt {
		r.bad(f, v)
	}
	return n
}

func (r *specReader) doc(f string) Document {
	v, ok := r.d[f]
	if !ok {
		return nil
	}
	d, isDoc := v.(map[string]any)
	if !isDoc {
		r.bad(f, v)
	}
	return d
}

// known refuses fields a specification does not have.
func (r *specReader) known(fields ...string) {
	for k := range r.d {
		found := false
		for _, f := range fields {
			found = found || f == k
		}
		if !found && r.err == nil {
			r.err = fmt.Errorf("%w: unknown spec field %q", ErrInvalidOp, k)
		}
	}
}

// decodeSpec checks and decodes a specification.
func decodeSpec(spec RawDocument) (Document, error) {
	if spec == nil {
		return nil, fmt.Errorf("%w: no spec", ErrInvalidOp)
	}
	if err := codec.ValidateExpr(spec); err != nil {
		return nil, fmt.Errorf("%w: spec: %w", ErrInvalidOp, err)
	}
	return codec.Decode(spec), nil
}

// collectionOptionsOf reads collectionSpec's document.
func collectionOptionsOf(spec RawDocument) (CollectionOptions, error) {
	d, err := decodeSpec(spec)
	if err != nil {
		return CollectionOptions{}, err
	}
	r := &specReader{d: d}
	r.known("capped", "max", "size", "validator", "hideExpired", "timeseries", "expireAfterSeconds")
	o := CollectionOptions{
		Capped:             r.bool("capped"),
		MaxDocuments:       int(r.int64("max")),
		MaxBytes:           r.int64("size"),
		Validator:          r.doc("validator"),
		HideExpired:        r.bool("hideExpired"),
		ExpireAfterSeconds: r.int32p("expireAfterSeconds"),
	}
	if td := r.doc("timeseries"); td != nil {
		tr := &specReader{d: td}
		tr.known("timeField", "metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds", "preciseExpiry", "reopenBuckets")
		t := &TimeSeriesOptions{
			TimeField:       tr.str("timeField"),
			MetaField:       tr.str("metaField"),
			Granularity:     Granularity(tr.str("granularity")),
			PreciseExpiry:   tr.bool("preciseExpiry"),
			legacyPlacement: !tr.bool("reopenBuckets"),
		}
		if p := tr.int32p("bucketMaxSpanSeconds"); p != nil {
			t.BucketMaxSpanSeconds = *p
		}
		if p := tr.int32p("bucketRoundingSeconds"); p != nil {
			t.BucketRoundingSeconds = *p
		}
		if tr.err != nil {
			return o, tr.err
		}
		o.TimeSeries = t
	}
	return o, r.err
}

// indexModelOf reads indexSpecDoc's document.
func indexModelOf(spec RawDocument) (IndexModel, error) {
	d, err := decodeSpec(spec)
	if err != nil {
		return IndexModel{}, err
	}
	r := &specReader{d: d}
	r.known("name", "key", "unique", "sparse", "partialFilterExpression", "expireAfterSeconds", "ttlValueForms", "multikey")
	r.bool("multikey") // read by multikeyOf; its type is checked here
	m := IndexModel{
		Name:                    r.str("name"),
		Unique:                  r.bool("unique"),
		Sparse:                  r.bool("sparse"),
		PartialFilterExpression: r.doc("partialFilterExpression"),
		ExpireAfterSeconds:      r.int32p("expireAfterSeconds"),
	}
	if p := r.int32p("ttlValueForms"); p != nil {
		m.TTLValueForms = TTLValueForms(*p)
	}
	keys, ok := d["key"].([]any)
	if !ok || len(keys) == 0 {
		return m, fmt.Errorf("%w: index spec without keys", ErrInvalidOp)
	}
	for _, k := range keys {
		kd, ok := k.(map[string]any)
		if !ok {
			return m, fmt.Errorf("%w: index spec: a key is a %T", ErrInvalidOp, k)
		}
		kr := &specReader{d: kd}
		kr.known("field", "order")
		f := kr.str("field")
		o := kr.int32p("order")
		if kr.err != nil || o == nil {
			return m, fmt.Errorf("%w: index spec: bad key %v", ErrInvalidOp, kd)
		}
		m.Keys = append(m.Keys, IndexKey{Field: f, Order: int(*o)})
	}
	if m.Name == "" {
		return m, fmt.Errorf("%w: index spec without a name", ErrInvalidOp)
	}
	return m, r.err
}

// collModOf reads collModSpec's document: the new period, nil for off.
func collModOf(spec RawDocument) (secs *int32, off bool, err error) {
	d, err := decodeSpec(spec)
	if err != nil {
		return nil, false, err
	}
	r := &specReader{d: d}
	r.known("expireAfterSeconds", "off")
	secs, off = r.int32p("expireAfterSeconds"), r.bool("off")
	if r.err == nil && (secs == nil) == !off {
		r.err = fmt.Errorf("%w: collMod spec needs expireAfterSeconds or off", ErrInvalidOp)
	}
	return secs, off, r.err
}
