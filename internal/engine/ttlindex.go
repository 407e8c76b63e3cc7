package engine

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/ordtree"
	"github.com/ttldb/ttldb/internal/store"
	"github.com/ttldb/ttldb/internal/ttlvalue"
)

// ttlIndex is the expiry side of a TTL index: a B+ tree (internal/ordtree)
// of the documents' indexed dates, earliest first. It is keyed by the date itself, not by
// date + ExpireAfterSeconds, so that CollMod can change ExpireAfterSeconds
// without re-keying anything (as MongoDB does). A document is expired at
// time now when date + expireAfter <= now, that is when date <= now -
// expireAfter: the expired documents are a prefix of the tree, and finding k
// of them costs O(k log n).
type ttlIndex struct {
	field       string
	dotted      bool // field is a path (holds a dot): read through EncodedPathValues
	forms       TTLValueForms
	expireAfter atomic.Int64 // seconds, 0..MaxInt32; changed only by CollMod
	// expiry and counts (and exact, multi) change together, through
	// addEntry and removeEntry (backlog.go), under the collection's write
	// lock once the index is published.
	expiry *ordtree.Tree[expiryEntry]
	counts *expiryCounts
	exact  int // entries whose field holds one date
	multi  int // entries that are the earliest of several values
	// walk is where the running pass offers this index's next documents
	// to the expire hooks from (expirehook.go).
	walk hookWalk
}

// expiryEntry is one document's place in a ttlIndex: its date as Unix
// seconds and nanoseconds (wide enough for any time.Time), then its
// insertion order (the tie-break) and its slot in the store. A plain
// value: the tree holds no pointer per document.
type expiryEntry struct {
	sec  int64
	nsec int32
	slot store.Slot
	seq  uint64
}

// compareExpiry orders entries as the tree does (expiryLess): by date,
// then insertion order; the slot is not part of an entry's identity.
func compareExpiry(a, b expiryEntry) int {
	return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.nsec, b.nsec), cmp.Compare(a.seq, b.seq))
}

// find returns the tree's entry equal to e (under compareExpiry), with its
// current slot.
func (t *ttlIndex) find(e expiryEntry) (found expiryEntry, ok bool) {
	t.expiry.AscendGreaterOrEqual(e, func(en expiryEntry) bool {
		found, ok = en, compareExpiry(en, e) == 0
		return false
	})
	return found, ok
}

func expiryLess(a, b expiryEntry) bool {
	if a.sec != b.sec {
		return a.sec < b.sec
	}
	if a.nsec != b.nsec {
		return a.nsec < b.nsec
	}
	return a.seq < b.seq
}

func newTTLIndex(where string, m IndexModel, capped bool) (*ttlIndex, error) {
	secs := *m.ExpireAfterSeconds
	switch {
	case secs < 0:
		return nil, fmt.Errorf("%w: %s: expireAfterSeconds %d is negative (valid: 0 to %d)", ErrInvalidTTL, where, secs, math.MaxInt32)
	case len(m.Keys) != 1:
		return nil, fmt.Errorf("%w: %s: TTL indexes are single-field; the key has %d fields", ErrInvalidTTL, where, len(m.Keys))
	case m.Keys[0].Field == "_id":
		return nil, fmt.Errorf("%w: %s: the _id field does not support TTL indexes", ErrInvalidTTL, where)
	case capped:
		return nil, fmt.Errorf("%w: %s: a capped collection cannot have a TTL index", ErrInvalidTTL, where)
	case m.TTLValueForms != TTLValuesDatesAndArango && m.TTLValueForms != TTLValuesDatesOnly:
		return nil, fmt.Errorf("%w: %s: unknown TTLValueForms %d", ErrInvalidTTL, where, m.TTLValueForms)
	}
	t := &ttlIndex{
		field:  m.Keys[0].Field,
		dotted: strings.Contains(m.Keys[0].Field, "."),
		forms:  m.TTLValueForms,
		expiry: ordtree.New(expiryLess),
		counts: newExpiryCounts(),
	}
	t.expireAfter.Store(int64(secs))
	return t, nil
}

// ttlKind says how a document's TTL date came from its indexed field.
type ttlKind byte

const (
	ttlNone   ttlKind = iota // no date: the document never expires under the index
	ttlExact                 // the field holds one date (time.Time)
	ttlSingle                // one value read as a date (an ArangoDB number or string)
	ttlMulti                 // the earliest date of several values (an array, a path through arrays)
)

// ttlKey is a document's entry in a TTL index: its date and how the date
// came from the field.
type ttlKey struct {
	date time.Time
	kind ttlKind
	ok   bool // kind != ttlNone
	// at is where the encoding the key was read from holds the date's
	// value, for a date in a top-level field (ttlExact): 0 if unknown. 32
	// bits, so that a ttlKey stays 32 bytes (documents are at most 2 GiB).
	at int32
}

// keyOfStored returns the entry of an encoded document in this TTL index.
// A top-level date is read without allocating.
func (t *ttlIndex) keyOfStored(enc []byte) ttlKey {
	if !t.dotted {
		d, at, isTime, found := codec.EncodedTimeAt(enc, t.field)
		if isTime {
			return ttlKey{date: d, kind: ttlExact, ok: true, at: int32(at)}
		}
		if !found {
			return ttlKey{}
		}
	}
	vals, found := codec.EncodedPathValues(enc, t.field)
	if !found {
		return ttlKey{}
	}
	d, ok := ttlvalue.Date(vals, t.forms)
	if !ok {
		return ttlKey{}
	}
	kind := ttlMulti
	if len(vals) == 1 && !codec.IsArray(vals[0]) {
		kind = ttlSingle
		if _, isTime := vals[0].(time.Time); isTime {
			kind = ttlExact
		}
	}
	return ttlKey{date: d, kind: kind, ok: true}
}

// count keeps the tree's counts of exact and multi-valued entries, by
// which the planner knows what queries the tree can serve (planDateTree).
func (t *ttlIndex) count(k ttlKey, delta int) {
	switch k.kind {
	case ttlExact:
		t.exact += delta
	case ttlMulti:
		t.multi += delta
	}
}

// A record's extra bytes keep its TTL entries, so that removing it (a TTL
// deletion above all) neither searches its encoding for its dates nor
// evaluates a partial filter: per TTL index, a uvarint of the index's id
// times 2, the kind, and for a date its Unix seconds (varint) and
// nanoseconds (uvarint). A date in a top-level field of an index with no
// partial filter is kept as where the encoding holds it instead: a uvarint
// of the id times 2 plus 1, then the date's offset in the encoding
// (uvarint), 3 bytes where the date takes 8 to 12, read back in place
// (codec.DateAt) at the cost of the date's cache line. A document stored
// before its TTL index existed has no entry for it; its entry is then
// computed from the encoding, by the same code as a new document's.

// appendTTLExtra appends the entries of dk's TTL indexes, read from enc,
// the encoding stored with them.
func (s *collState) appendTTLExtra(dst []byte, dk docKeys, enc []byte) []byte {
	for i, ix := range s.indexes {
		if ix.ttl == nil {
			continue
		}
		k := dk[i].ttl
		if ix.keptAt(k, enc) {
			dst = binary.AppendUvarint(dst, uint64(ix.id)<<1|1)
			dst = binary.AppendUvarint(dst, uint64(k.at))
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(ix.id)<<1)
		dst = append(dst, byte(k.kind))
		if k.ok {
			dst = binary.AppendVarint(dst, k.date.Unix())
			dst = binary.AppendUvarint(dst, uint64(k.date.Nanosecond()))
		}
	}
	return dst
}

// keptAt reports whether a record keeps its entry k in ix (a TTL index)
// as the date's offset in enc: a date read from a top-level field of enc
// under no partial filter (which can leave the document out whatever its
// date), found where k says.
func (ix *index) keptAt(k ttlKey, enc []byte) bool {
	if k.kind != ttlExact || k.at == 0 || ix.partial != nil || ix.ttl.dotted {
		return false
	}
	d, ok := codec.TimeAt(enc, int(k.at), ix.ttl.field)
	return ok && d.Equal(k.date)
}

// noDateAt panics: a record's extra bytes name an offset of its encoding
// that holds no date.
func (ix *index) noDateAt(at uint64) {
	panic(fmt.Sprintf("ttldb: internal error: TTL index %q: no date at offset %d of the stored document", ix.name, at))
}

// extraTTL finds index ix's entry in a record's extra bytes, reading a
// date kept as an offset from the record's encoding enc.
func (ix *index) extraTTL(extra, enc []byte) (k ttlKey, found bool) {
	for i := 0; i < len(extra); {
		x, n := binary.Uvarint(extra[i:])
		i += n
		id, atForm := uint32(x>>1), x&1 != 0
		if atForm {
			at, n := binary.Uvarint(extra[i:])
			i += n
			if id != ix.id {
				continue
			}
			// keptAt checked the field's name at this offset when the
			// record was written, and its bytes never change.
			d, ok := codec.DateAt(enc, int(at))
			if !ok {
				ix.noDateAt(at)
			}
			return ttlKey{date: d, kind: ttlExact, ok: true, at: int32(at)}, true
		}
		kind := ttlKind(extra[i])
		i++
		var sec int64
		var nsec uint64
		if kind != ttlNone {
			sec, n = binary.Varint(extra[i:])
			i += n
			nsec, n = binary.Uvarint(extra[i:])
			i += n
		}
		if id == ix.id {
			if kind == ttlNone {
				return ttlKey{}, true
			}
			return ttlKey{date: time.Unix(sec, int64(nsec)).UTC(), kind: kind, ok: true}, true
		}
	}
	return ttlKey{}, false
}

// cutoff returns the latest date that is expired at now: date <= cutoff
// exactly when date + expireAfter <= now.
func (t *ttlIndex) cutoff(now time.Time) time.Time {
	return now.Add(-time.Duration(t.expireAfter.Load())*time.Second + ttlCutoffSkew)
}

// ttlCutoffSkew is a test hook, always 0 outside tests: the model test sets
// it to 1ns to see its checker catch a cutoff one nanosecond late.
var ttlCutoffSkew time.Duration

func entryFor(d time.Time, rec *record) expiryEntry {
	return expiryEntry{sec: d.Unix(), nsec: int32(d.Nanosecond()), slot: rec.slot, seq: rec.seq}
}

// entryNotAfter reports whether e's date is at or before d.
func entryNotAfter(e expiryEntry, d time.Time) bool {
	s := d.Unix()
	return e.sec < s || e.sec == s && e.nsec <= int32(d.Nanosecond())
}

// threshold returns the instant the entry expires: its date + expireAfter.
func (t *ttlIndex) threshold(e expiryEntry) time.Time {
	return t.thresholdFor(time.Unix(e.sec, int64(e.nsec)))
}

// thresholdFor returns when a document keyed by date d expires: d +
// expireAfter (read now: CollMod may change it).
func (t *ttlIndex) thresholdFor(d time.Time) time.Time {
	return d.Add(time.Duration(t.expireAfter.Load()) * time.Second)
}

// earliest returns the first entry of the tree (the next to expire).
func (t *ttlIndex) earliest() (expiryEntry, bool) {
	return t.expiry.Min()
}

// storedDate returns the date a stored document is keyed by in ix (a TTL
// index), and false if it never expires under it: no date in the field, or
// left out by the partial filter.
func (ix *index) storedDate(ref *docRef) (time.Time, bool) {
	k := ix.storedTTL(ref)
	return k.date, k.ok
}

// storedTTL returns a document's entry in ix (a TTL index): from the
// record's extra bytes if they hold it, else computed as for a new
// document.
func (ix *index) storedTTL(ref *docRef) ttlKey {
	if ix.ttl == nil {
		return ttlKey{}
	}
	if k, found := ix.extraTTL(ref.rec.extra, ref.rec.enc); found {
		return k
	}
	return ix.ttlKeyOf(ref)
}

// ttlKeyOf computes a document's entry in ix (a TTL index).
func (ix *index) ttlKeyOf(ref *docRef) ttlKey {
	if ix.ttl == nil || ix.partial != nil && !ix.partial.Matches(ref.get()) {
		return ttlKey{}
	}
	return ix.ttl.keyOfStored(ref.rec.enc)
}

// earliestThresholdOf returns the earliest threshold of a stored document
// under all the collection's TTL indexes. Call holding mu or writeMu.
func (s *collState) earliestThresholdOf(ref *docRef) (time.Time, bool) {
	var best time.Time
	found := false
	for _, ix := range s.indexes {
		d, ok := ix.storedDate(ref)
		if !ok {
			continue
		}
		if th := ix.ttl.thresholdFor(d); !found || th.Before(best) {
			best, found = th, true
		}
	}
	return best, found
}

// hideExpiredActive reports whether reads must skip expired documents.
func (s *collState) hideExpiredActive() bool {
	if !s.opts.HideExpired {
		return false
	}
	for _, ix := range s.indexes {
		if ix.ttl != nil {
			return true
		}
	}
	return false
}

// expiredAt reports whether a stored document is expired at now under any
// TTL index.
func (s *collState) expiredAt(ref *docRef, now time.Time) bool {
	th, ok := s.earliestThresholdOf(ref)
	return ok && !th.After(now)
}

// ExpiresAt implements ttldb.Collection.ExpiresAt, whose documentation is the contract.
func (c *Collection) ExpiresAt(ctx context.Context, id any) (at time.Time, expires bool, err error) {
	if err := c.usable(); err != nil {
		return time.Time{}, false, err
	}
	if err := c.started(ctx); err != nil {
		return time.Time{}, false, err
	}
	if ts := c.timeSeries(); ts != nil {
		return c.tsExpiresAt(ts, id) // time-series: tsread.go
	}
	// Validated (no cycle, bounded depth) and in stored form before it is
	// keyed: an _id is looked up as the filter {_id: id} would match it.
	id, err = codec.CloneValue(id, "_id")
	if err != nil {
		return time.Time{}, false, fmt.Errorf("collection %q: %w", c.name, err)
	}
	k, err := appendIDKey(nil, id)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("collection %q: %w", c.name, err)
	}
	s, err := c.read()
	if err != nil {
		return time.Time{}, false, err
	}
	if s != nil {
		s.mu.RLock()
		defer s.mu.RUnlock()
		if rec, ok := s.lookup(k); ok {
			at, expires = s.earliestThresholdOf(&docRef{rec: rec})
			return at, expires, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("%w: collection %q: no document with _id %v", ErrNotFound, c.name, id)
}

// CollModIndex is the index part of MongoDB's collMod command:
// {collMod: <collection>, index: {keyPattern | name, expireAfterSeconds}}.
type CollModIndex struct {
	// KeyPattern or Name selects the index (give one; if both, they must
	// name the same index).
	KeyPattern []IndexKey
	Name       string
	// ExpireAfterSeconds is the new value, 0 to 2147483647. Required.
	ExpireAfterSeconds *int32
	// TTLPaused, given alone (no index selected, no
	// ExpireAfterSeconds), pauses (true) or resumes (false) TTL deletion
	// of the whole collection, as CockroachDB's ttl_pause: the monitor
	// skips its TTL indexes while reads still hide its expired documents
	// under HideExpired (a write that meets one still replaces it). The
	// pause is an op, logged and replicated, and kept by snapshots: it
	// survives a restart and a failover, unlike SetTTLMonitorEnabled,
	// which stops the whole monitor of this DB, in memory only.
	TTLPaused *bool
}

// CollModResult reports what CollMod changed, as MongoDB's reply does.
type CollModResult struct {
	IndexName string
	// ExpireAfterSecondsOld is nil when CollMod turned a non-TTL index into
	// a TTL index.
	ExpireAfterSecondsOld *int32
	ExpireAfterSecondsNew int32
	// TTLPaused is whether the collection's TTL deletion is paused after
	// the call.
	TTLPaused bool
}

// CollMod implements ttldb.DB.CollMod, whose documentation is the contract.
func (db *DB) CollMod(ctx context.Context, collection string, m CollModIndex) (CollModResult, error) {
	return db.Collection(collection).CollMod(ctx, m)
}

// CollMod implements ttldb.Collection.CollMod, whose documentation is the contract.
func (c *Collection) CollMod(ctx context.Context, m CollModIndex) (res CollModResult, err error) {
	if err := c.db.writable(); err != nil {
		return CollModResult{}, err
	}
	if err := c.started(ctx); err != nil {
		return CollModResult{}, err
	}
	if err := c.db.refuseTxn(ctx, "CollMod"); err != nil {
		return CollModResult{}, err
	}
	defer c.db.durable(&err)
	return replicated(c.db, func() (CollModResult, error) { return c.collModBegun(m) })
}

// collModBegun is CollMod once the replicator (if any) let it begin.
func (c *Collection) collModBegun(m CollModIndex) (CollModResult, error) {
	var res CollModResult
	if err := c.usable(); err != nil {
		return res, err
	}
	if m.TTLPaused != nil {
		return c.setTTLPaused(m)
	}
	if ts := c.timeSeries(); ts != nil {
		return ts.collModIndex(m, nil) // time-series: tsindex.go
	}
	where := fmt.Sprintf("collMod %q", c.name)
	if m.ExpireAfterSeconds == nil {
		return res, fmt.Errorf("%w: %s: ExpireAfterSeconds is required", ErrInvalidTTL, where)
	}
	if *m.ExpireAfterSeconds < 0 {
		sel := fmt.Sprintf("%q", m.Name)
		if m.Name == "" {
			sel = fmt.Sprintf("with key pattern %v", m.KeyPattern)
		}
		return res, fmt.Errorf("%w: %s index %s: expireAfterSeconds %d is negative (valid: 0 to %d)", ErrInvalidTTL, where, sel, *m.ExpireAfterSeconds, math.MaxInt32)
	}
	if m.Name == "" && len(m.KeyPattern) == 0 {
		return res, fmt.Errorf("%w: %s: give the index's KeyPattern or Name", ErrInvalidIndex, where)
	}
	if m.Name == idIndexName || len(m.KeyPattern) == 1 && m.KeyPattern[0].Field == "_id" {
		return res, fmt.Errorf("%w: %s: the _id field does not support TTL indexes", ErrInvalidTTL, where)
	}
	s, err := c.read()
	if err != nil {
		return res, err
	}
	if s == nil {
		return res, fmt.Errorf("%w: %s: no such collection", ErrNotFound, where)
	}
	err = c.write(func(s *collState) error {
		return s.collMod(where, m, &res)
	})
	if err != nil {
		// Nothing changed: report nothing (res may hold the index found).
		return CollModResult{}, err
	}
	return res, nil
}

// collMod is CollMod's change, holding writeMu: it finds the index m
// selects and sets its ExpireAfterSeconds (making it a TTL index if it was
// not), filling res. It changes nothing on error.
func (s *collState) collMod(where string, m CollModIndex, res *CollModResult) error {
	var ix *index
	for _, cand := range s.indexes {
		if (m.Name == "" || cand.name == m.Name) && (len(m.KeyPattern) == 0 || sameKeys(cand.keys, m.KeyPattern)) {
			ix = cand
			break
		}
	}
	if ix == nil {
		return fmt.Errorf("%w: %s: no index with name %q and key pattern %v", ErrNotFound, where, m.Name, m.KeyPattern)
	}
	res.IndexName = ix.name
	res.ExpireAfterSecondsNew = *m.ExpireAfterSeconds
	old, err := s.setIndexTTL(where, ix, *m.ExpireAfterSeconds, s.mode())
	if err != nil {
		return err
	}
	res.ExpireAfterSecondsOld = old
	if r := s.oprec; r != nil {
		r.add(s, Op{Kind: OpCollMod, Index: ix.name, Spec: collModSpec(m.ExpireAfterSeconds)})
	}
	if e, ok := ix.ttl.earliest(); ok {
		s.db.monitor.notifyThreshold(ix.ttl.threshold(e))
	}
	return nil
}

// setTTLPaused is CollMod with TTLPaused: it pauses or resumes the
// collection's TTL deletion, recording an OpCollMod without an index.
func (c *Collection) setTTLPaused(m CollModIndex) (CollModResult, error) {
	where := fmt.Sprintf("collMod %q", c.name)
	if m.Name != "" || len(m.KeyPattern) > 0 || m.ExpireAfterSeconds != nil {
		return CollModResult{}, fmt.Errorf("%w: %s: TTLPaused applies to the whole collection: give it alone, without an index or ExpireAfterSeconds", ErrInvalidOptions, where)
	}
	s, err := c.read()
	if err != nil {
		return CollModResult{}, err
	}
	if s == nil {
		return CollModResult{}, fmt.Errorf("%w: %s: no such collection", ErrNotFound, where)
	}
	if s.ts != nil {
		if err := s.ts.setPaused(*m.TTLPaused, nil); err != nil {
			return CollModResult{}, err
		}
		return CollModResult{TTLPaused: *m.TTLPaused}, nil
	}
	err = c.write(func(s *collState) error {
		s.setPaused(*m.TTLPaused)
		if r := s.oprec; r != nil {
			r.add(s, Op{Kind: OpCollMod, Spec: pauseSpec(*m.TTLPaused)})
		}
		return nil
	})
	if err != nil {
		return CollModResult{}, err
	}
	return CollModResult{TTLPaused: *m.TTLPaused}, nil
}

// setPaused pauses or resumes the collection's TTL deletion; resuming
// wakes a monitor that sleeps until a deadline. Call holding writeMu.
func (s *collState) setPaused(paused bool) {
	s.ttlPaused.Store(paused)
	if !paused {
		s.db.monitor.poke()
	}
}
