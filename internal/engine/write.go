package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
	"github.com/ttldb/ttldb/internal/store"
)

// DuplicateKeyError reports a write refused because of a unique index. It
// wraps ErrDuplicateKey.
type DuplicateKeyError struct {
	Collection string
	Index      string // "_id_" for the _id index
	Key        any    // the duplicated key (a value, or []any for a compound index)
}

// Error names the collection, the index and the duplicated key.
func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("ttldb: duplicate key: collection %q index %q key %v", e.Collection, e.Index, e.Key)
}

// Unwrap lets errors.Is(err, ErrDuplicateKey) match.
func (e *DuplicateKeyError) Unwrap() error { return ErrDuplicateKey }

// docKeys are a document's entries in each secondary index of a collection,
// in the order of collState.indexes.
type docKeys []indexKeys

// indexKeys are a document's entries in one index.
type indexKeys struct {
	keys     []string // distinct entry keys (see indexEntry)
	multikey bool
	ttl      ttlKey // its entry in the TTL tree, if the index has one

	// The values the keys were made from, for error messages (value):
	// for a single-field index vals[i] is keys[i]'s value; for a compound
	// one fields holds each field's values and keys[i] is the i-th of
	// their combinations, the last field varying fastest.
	vals   []any
	fields [][]any
}

// value returns the value keys[i] was made from: the field's value, or an
// []any of the fields' values for a compound index.
func (ik *indexKeys) value(i int) any {
	if ik.fields == nil {
		return ik.vals[i]
	}
	out := make([]any, len(ik.fields))
	for f := len(ik.fields) - 1; f >= 0; f-- {
		n := len(ik.fields[f])
		out[f] = ik.fields[f][i%n]
		i /= n
	}
	return out
}

// computeKeys works out a document's entries in every index from its
// encoding (ref.rec.enc), decoding no more of it than the indexes read:
// keys for a new document and for removing a stored one come from the same
// bytes by the same code, so they always agree. It fails only for a
// document no index can hold (parallel arrays in a compound index), which
// is never stored.
func (s *collState) computeKeys(ref *docRef) (docKeys, error) {
	return s.computeKeysInto(make(docKeys, len(s.indexes)), ref)
}

// computeKeysInto is computeKeys into dk, of one element per index (a
// batch's documents share one slice). It sets every element whole: dk may
// hold an earlier document's entries (a pooled insert's scratch), which
// must not leak into this one's (a TTL index without a B-tree sets only
// ttl and multikey, and a stale multikey would mark the index multikey).
func (s *collState) computeKeysInto(dk docKeys, ref *docRef) (docKeys, error) {
	for i, ix := range s.indexes {
		dk[i] = indexKeys{}
		if ix.tree != nil {
			ik, err := ix.keysOfStored(ref)
			if err != nil {
				return nil, fmt.Errorf("collection %q: %w", s.name, err)
			}
			dk[i] = ik
		}
		if ix.ttl != nil {
			// A stored document's entry comes from its record's extra
			// bytes, a new one's from its encoding.
			dk[i].ttl = ix.storedTTL(ref)
			dk[i].multikey = dk[i].multikey || dk[i].ttl.kind == ttlMulti
		}
	}
	return dk, nil
}

// addToIndexes and removeFromIndexes change the trees: call them with mu
// held for writing.
func (s *collState) addToIndexes(rec *record, dk docKeys) {
	for i, ix := range s.indexes {
		ix.insertKeys(rec, dk[i])
		if dk[i].ttl.ok {
			ix.ttl.addEntry(entryFor(dk[i].ttl.date, rec), dk[i].ttl)
		}
	}
}

func (s *collState) removeFromIndexes(rec *record, dk docKeys) {
	for i, ix := range s.indexes {
		ix.removeKeys(rec, dk[i])
		if dk[i].ttl.ok {
			ix.ttl.removeEntry(entryFor(dk[i].ttl.date, rec), dk[i].ttl)
		}
	}
}

// storedKeys recomputes the keys of a stored document. They were computed
// without error when it was stored, so this cannot fail.
func (s *collState) storedKeys(rec *record) docKeys {
	dk, err := s.computeKeys(&docRef{rec: *rec})
	if err != nil {
		panic("ttldb: internal error: stored document no longer indexable: " + err.Error())
	}
	return dk
}

// unindexRecord takes rec out of every structure but the store: the
// natural order, the indexes, the TTL trees and the byte count
// (removeRecords then deletes it from the store). It is
// removeFromIndexes(rec, storedKeys(rec)) one index at a time, so that a
// deletion allocates no docKeys: a TTL batch deletes hundreds of documents
// per lock hold, and those allocations were most of the garbage of a mass
// expiry. Call with mu held for writing.
func (s *collState) unindexRecord(rec *record) {
	s.natural.Delete(natItem{seq: rec.seq})
	s.noteWrite(rec, nil)
	ref := docRef{rec: *rec}
	for _, ix := range s.indexes {
		if ix.tree != nil {
			ik, err := ix.keysOfStored(&ref)
			if err != nil {
				panic("ttldb: internal error: stored document no longer indexable: " + err.Error())
			}
			ix.removeKeys(rec, ik)
		}
		if ix.ttl != nil {
			if k := ix.storedTTL(&ref); k.ok {
				ix.ttl.removeEntry(entryFor(k.date, rec), k)
			}
		}
	}
	s.bytes -= int64(len(rec.enc))
}

// uniqueCheck finds unique-index conflicts for a batch of writes: against
// the stored documents not rewritten by the batch, and among the batch's
// own new keys. Call it holding writeMu.
type uniqueCheck struct {
	s     *collState
	batch map[store.Slot]bool // documents the batch rewrites or removes
	// pending maps each unique index's keys written by the batch to their
	// writer: a stored document's slot, or -1-i for its i-th new document.
	pending []map[string]int64
}

// newUniqueCheck returns nil, a check that passes everything, for a
// collection without unique secondary indexes.
func newUniqueCheck(s *collState) *uniqueCheck {
	if !slices.ContainsFunc(s.indexes, func(ix *index) bool { return ix.unique }) {
		return nil
	}
	u := &uniqueCheck{s: s, batch: map[store.Slot]bool{}, pending: make([]map[string]int64, len(s.indexes))}
	for i, ix := range s.indexes {
		if ix.unique {
			u.pending[i] = map[string]int64{}
		}
	}
	return u
}

// add checks the new keys dk of owner (a stored document's slot, or -1-i
// for a batch's i-th new document) and records them.
func (u *uniqueCheck) add(owner int64, dk docKeys) error {
	if u == nil {
		return nil
	}
	for i, ix := range u.s.indexes {
		if !ix.unique {
			continue
		}
		for j, key := range dk[i].keys {
			if other, ok := u.pending[i][key]; ok && other != owner {
				return u.dup(ix, dk[i].value(j))
			}
			if u.conflictsStored(ix, key, owner) {
				return u.dup(ix, dk[i].value(j))
			}
			u.pending[i][key] = owner
		}
	}
	return nil
}

func (u *uniqueCheck) conflictsStored(ix *index, key string, self int64) bool {
	found := false
	ix.tree.AscendGreaterOrEqual(indexEntry{key: key}, func(e indexEntry) bool {
		if e.key != key {
			return false
		}
		if int64(e.slot) != self && !u.batch[e.slot] && !u.s.expiredInWay(u.s.rec(e.slot)) {
			found = true
			return false
		}
		return true
	})
	return found
}

func (u *uniqueCheck) dup(ix *index, key any) error {
	return &DuplicateKeyError{Collection: u.s.name, Index: ix.name, Key: key}
}

// newDoc is a document checked and encoded for insertion.
type newDoc struct {
	enc []byte
	id  any      // its _id, in stored form
	doc Document // its decoding, when the caller has it already (else nil)
}

// prepareNewDocument checks and encodes a document for insertion, giving it
// an ObjectID _id if it has none. The encoding is the copy: doc is read
// once and never kept. A map is encoded at the end of *arena, the buffer
// of its batch, which grows to hold the batch (the encodings are copied
// into the store, and never written again).
func (c *Collection) prepareNewDocument(d any, arena *[]byte) (newDoc, error) {
	doc, isMap := d.(map[string]any)
	if !isMap {
		return c.prepareNewValue(d) // a struct, or another map type
	}
	id, has := doc["_id"]
	var genID any
	if !has {
		genID = NewObjectIDFromTime(c.db.clock.Now())
	}
	start := len(*arena)
	buf, err := codec.AppendEncode(*arena, doc, genID)
	if err != nil {
		return newDoc{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	*arena = buf
	enc := buf[start:len(buf):len(buf)]
	switch id.(type) {
	case string, int, int32, int64, ObjectID:
		// Stored as given: no need to decode it.
	default:
		if genID != nil {
			id = genID
		} else {
			id, _ = codec.EncodedField(enc, "_id")
		}
	}
	return newDoc{enc: enc, id: id}, nil
}

// encodeUpdated encodes a document built by an update or replacement from
// stored values, for the same code path as an insertion.
func encodeUpdated(doc Document) (newDoc, error) {
	enc, err := codec.Encode(doc, nil)
	if err != nil {
		return newDoc{}, err
	}
	return newDoc{enc: enc, id: doc["_id"], doc: doc}, nil
}

// InsertOneResult is what InsertOne did, as the driver's.
type InsertOneResult struct {
	// InsertedID is the document's _id: its own, or the ObjectID
	// generated for it.
	InsertedID any
}

// InsertManyResult is what InsertMany did, as the driver's.
type InsertManyResult struct {
	// InsertedIDs are the _ids of the documents inserted, in the order
	// given (an unordered InsertMany's failed documents are not among
	// them).
	InsertedIDs []any
}

// InsertManyOptions adjusts InsertMany, as the driver's options.
type InsertManyOptions struct {
	// Ordered (nil: true, the driver's default) makes the first failing
	// document end the call, and then nothing is inserted. Ordered false
	// attempts every document: those that can be inserted are, and each
	// failure is reported with its index in a *BulkWriteError.
	Ordered *bool
}

// InsertOne implements ttldb.Collection.InsertOne, whose documentation is the contract.
func (c *Collection) InsertOne(ctx context.Context, doc any) (*InsertOneResult, error) {
	if err := c.started(ctx); err != nil {
		return nil, err
	}
	ids, err := insertDocs(ctx, c, []any{doc})
	if err != nil {
		var de *docIndexError
		if errors.As(err, &de) {
			err = de.err // one document: no index to name
		}
		return nil, err
	}
	return &InsertOneResult{InsertedID: ids[0]}, nil
}

// InsertMany implements ttldb.Collection.InsertMany, whose documentation is the contract.
func (c *Collection) InsertMany(ctx context.Context, docs any, opts ...InsertManyOptions) (*InsertManyResult, error) {
	if err := c.started(ctx); err != nil {
		return nil, err
	}
	ordered := true
	for _, o := range opts {
		if o.Ordered != nil {
			ordered = *o.Ordered
		}
	}
	var list []any
	switch d := docs.(type) {
	case []Document:
		if ordered {
			ids, err := insertDocs(ctx, c, d)
			return insertManyResult(ids, err)
		}
		list = make([]any, len(d))
		for i, x := range d {
			list[i] = x
		}
	case []any:
		list = d
	case nil:
	default:
		if err := c.usable(); err != nil {
			return nil, err
		}
		var err error
		if list, err = documentList(docs); err != nil {
			return nil, fmt.Errorf("collection %q: %w", c.name, err)
		}
	}
	if ordered {
		ids, err := insertDocs(ctx, c, list)
		return insertManyResult(ids, err)
	}
	return c.insertUnordered(ctx, list)
}

// insertManyResult shapes an ordered InsertMany's outcome: all inserted,
// or none and the failing document's error as a *BulkWriteError.
func insertManyResult(ids []any, err error) (*InsertManyResult, error) {
	if err == nil {
		return &InsertManyResult{InsertedIDs: ids}, nil
	}
	var de *docIndexError
	if errors.As(err, &de) {
		return &InsertManyResult{}, &BulkWriteError{WriteErrors: []WriteError{{Index: de.index, Err: de.err}}}
	}
	return &InsertManyResult{}, err
}

// insertUnordered inserts every document of list that can be: all at once
// when none fails, else one at a time, so that each failure is the
// document's own. The error is a *BulkWriteError listing every failure.
func (c *Collection) insertUnordered(ctx context.Context, list []any) (*InsertManyResult, error) {
	ids, err := insertDocs(ctx, c, list)
	if err == nil {
		return &InsertManyResult{InsertedIDs: ids}, nil
	}
	var de *docIndexError
	var dup *DuplicateKeyError
	if !errors.As(err, &de) && !errors.As(err, &dup) {
		return &InsertManyResult{}, err // the DB's or the collection's: nothing to attribute
	}
	res := &InsertManyResult{InsertedIDs: []any{}}
	var failed []WriteError
	for i, d := range list {
		ids, err := insertDocs(ctx, c, []any{d})
		if err != nil {
			if errors.As(err, &de) {
				err = de.err
			}
			failed = append(failed, WriteError{Index: i, Err: err})
			continue
		}
		res.InsertedIDs = append(res.InsertedIDs, ids[0])
	}
	if len(failed) == 0 {
		return res, nil
	}
	return res, &BulkWriteError{WriteErrors: failed}
}

// docIndexError is the error of the document at index of an insert call.
type docIndexError struct {
	index int
	err   error
}

func (e *docIndexError) Error() string { return fmt.Sprintf("document %d: %v", e.index, e.err) }
func (e *docIndexError) Unwrap() error { return e.err }

func insertDocs[T any](ctx context.Context, c *Collection, docs []T) (ids []any, err error) {
	if err := c.db.writable(); err != nil {
		return nil, err
	}
	t := txnIn(ctx, c.db)
	if t == nil {
		defer c.db.durable(&err)
	}
	if err := c.usable(); err != nil {
		return nil, err
	}
	if ts := c.timeSeries(); ts != nil {
		if t != nil {
			return nil, t.refuse(c.name, "a time-series collection")
		}
		list := make([]any, len(docs))
		for i, d := range docs {
			list[i] = d
		}
		end, err := c.db.beginWrite()
		if err != nil {
			return nil, err
		}
		ids, err = ts.insert(list) // time-series: tsbucket.go
		if err = end(err); err != nil {
			return nil, err
		}
		return ids, nil
	}
	sc := getInsertScratch()
	defer sc.release()
	prepared := sc.preparedFor(len(docs))
	for i, d := range docs {
		p, err := c.prepareNewDocument(d, &sc.enc)
		if err != nil {
			return nil, &docIndexError{index: i, err: err}
		}
		prepared[i] = p
		if i == 0 && len(docs) > 1 && len(sc.enc) > 0 {
			if need := len(sc.enc) * len(docs) * 5 / 4; need > cap(sc.enc) {
				// Room for the batch, guessed from its first document.
				sc.enc = append(make([]byte, 0, need), sc.enc...)
				prepared[0].enc = sc.enc[:len(sc.enc):len(sc.enc)]
			}
		}
	}
	err = c.writeFor(ctx, true, func(s *collState) error {
		return s.insertPrepared(prepared, sc)
	})
	if err != nil {
		return nil, err
	}
	ids = make([]any, len(prepared))
	for i, d := range prepared {
		ids[i] = codec.CopyValue(d.id)
	}
	return ids, nil
}

// insertScratch is the working memory of an insert call: its documents'
// encodings, their _id keys and extra bytes, their index entries. The
// store copies what it keeps, and what outlives the call (an index build's
// side table, the ops) refers to the store's copy: so the scratch goes
// back to a pool when the call returns, and a stream of inserts allocates
// little beyond what it stores (each allocation brings the next garbage
// collection closer).
type insertScratch struct {
	prepared []newDoc
	enc      []byte // encodings
	batch    []docWrite
	keyBuf   []byte // _id keys and extra bytes
	keys     [][]byte
	hashes   []uint64 // the keys' hashes in the store
	dks      []indexKeys
	seen     batchIDs
}

var insertScratchPool = sync.Pool{New: func() any { return new(insertScratch) }}

// maxPooledScratch bounds the bytes a pooled scratch keeps: a huge
// InsertMany's buffers go to the garbage collector.
const maxPooledScratch = 4 << 20

func getInsertScratch() *insertScratch { return insertScratchPool.Get().(*insertScratch) }

// release clears what the scratch refers to and pools it.
func (sc *insertScratch) release() {
	numbers := 8*cap(sc.hashes) + 4*cap(sc.seen.cells) + 8*cap(sc.seen.hashes)
	if cap(sc.enc)+cap(sc.keyBuf)+numbers > maxPooledScratch || cap(sc.dks) > maxPooledScratch/64 {
		return
	}
	clear(sc.prepared)
	clear(sc.batch)
	clear(sc.keys)
	clear(sc.dks)
	sc.prepared, sc.enc, sc.batch, sc.keyBuf, sc.keys, sc.dks = sc.prepared[:0], sc.enc[:0], sc.batch[:0], sc.keyBuf[:0], sc.keys[:0], sc.dks[:0]
	insertScratchPool.Put(sc)
}

// preparedFor returns room for n prepared documents.
func (sc *insertScratch) preparedFor(n int) []newDoc {
	if cap(sc.prepared) < n {
		sc.prepared = make([]newDoc, n)
	}
	sc.prepared = sc.prepared[:n] // the length release clears
	return sc.prepared
}

// insertPrepared stores encoded documents, with sc's memory (nil: its
// own). Call holding writeMu.
func (s *collState) insertPrepared(docs []newDoc, sc *insertScratch) error {
	if w := s.txw; w != nil {
		return w.stageInserts(s, docs)
	}
	if sc == nil {
		sc = new(insertScratch)
	}
	if cap(sc.batch) < len(docs) {
		sc.batch = make([]docWrite, len(docs))
	}
	sc.batch = sc.batch[:len(docs)] // the length release clears
	batch := sc.batch
	// The batch's _id keys and extra bytes share one buffer, its index
	// keys one slice: no allocation per document (the store copies the
	// bytes).
	arena := sc.keyBuf[:0]
	if cap(arena) < 32*len(docs) {
		arena = make([]byte, 0, 32*len(docs))
	}
	if n := len(docs) * len(s.indexes); cap(sc.dks) < n {
		sc.dks = make([]indexKeys, n)
	}
	sc.dks = sc.dks[:len(docs)*len(s.indexes)]
	dks := sc.dks
	var seen *batchIDs // duplicates within docs
	if len(docs) > 1 {
		seen = &sc.seen
		seen.reset(len(docs))
	}
	defer func() { sc.keyBuf = arena[:0] }()
	// The _id keys first, so that the store reads their table cells
	// together (Prefetch); a key that cannot be made fails its document
	// when the checks below reach it, in document order.
	keys := sc.keys[:0]
	var keyErr error
	for _, d := range docs {
		start := len(arena)
		if arena, keyErr = appendIDKey(arena, d.id); keyErr != nil {
			break
		}
		keys = append(keys, arena[start:len(arena):len(arena)])
	}
	sc.keys = keys
	st := s.store()
	// Each key hashed once: for the prefetch, the duplicate check and the
	// insert. One document's hash stays on the stack (DB.Apply's inserts
	// come without a pooled scratch).
	var hashes []uint64
	if len(keys) == 1 {
		var one [1]uint64
		hashes = st.PrefetchHashed(keys, one[:0])
	} else {
		sc.hashes = st.PrefetchHashed(keys, sc.hashes[:0])
		hashes = sc.hashes
	}
	keyOf := func(j int) []byte { return batch[j].key }
	uc := newUniqueCheck(s)
	var cost int64
	var plan store.InsertPlan
	for i, d := range docs {
		ref := &docRef{rec: record{enc: d.enc}, doc: d.doc}
		if s.validator != nil && !s.applying {
			if err := s.validator.Validate(ref.get()); err != nil {
				return &docIndexError{index: i, err: fmt.Errorf("collection %q: %w", s.name, err)}
			}
		}
		id := d.id
		if i == len(keys) {
			return &docIndexError{index: i, err: fmt.Errorf("collection %q: %w", s.name, keyErr)}
		}
		k := keys[i]
		if s.db.txns.nlocked.Load() > 0 && !s.applying {
			if err := s.waitForKey(k); err != nil {
				return err
			}
		}
		if slot, ok := st.LookupHashed(hashes[i], k); ok && !s.expiredInWay(s.rec(slot)) {
			return &docIndexError{index: i, err: &DuplicateKeyError{Collection: s.name, Index: idIndexName, Key: id}}
		}
		if seen.add(k, hashes[i], i, keyOf) {
			return &docIndexError{index: i, err: &DuplicateKeyError{Collection: s.name, Index: idIndexName, Key: id}}
		}
		dk, err := s.computeKeysInto(dks[i*len(s.indexes):(i+1)*len(s.indexes):(i+1)*len(s.indexes)], ref)
		if err != nil {
			return &docIndexError{index: i, err: err}
		}
		if err := uc.add(-1-int64(i), dk); err != nil {
			return &docIndexError{index: i, err: err}
		}
		start := len(arena)
		arena = s.appendTTLExtra(arena, dk, d.enc)
		extra := arena[start:len(arena):len(arena)]
		if err := store.CheckSize(len(k), len(d.enc), len(extra)); err != nil {
			return &docIndexError{index: i, err: fmt.Errorf("collection %q: %w: %w", s.name, ErrInvalidDocument, err)}
		}
		batch[i] = docWrite{key: k, enc: d.enc, extra: extra, dk: dk, hash: hashes[i]}
		cost += s.insertCost(&plan, k, d.enc, extra, dk)
	}
	if err := s.inWay.ready(); err != nil {
		return err
	}
	cost += s.natural.growthFor(s.nextSeq, len(batch))
	if err := s.checkCounters(len(batch), len(batch)); err != nil {
		return err
	}
	if err := s.reserve(cost); err != nil {
		return err
	}
	var earliest time.Time
	var vers []uint64 // for the op
	var one *oneDocOp // the op of a one-document insert, in one allocation
	if s.oprec != nil {
		if len(batch) == 1 {
			one = newOneDocOp()
			vers = one.ver[:0]
		} else {
			vers = make([]uint64, 0, len(batch))
		}
	}
	s.mu.Lock()
	s.inWay.remove(s)
	s.deferCounts()
	for i := range batch {
		p := &batch[i]
		p.ver = s.newVersion(i)
		if vers != nil {
			vers = append(vers, p.ver)
		}
		rec := s.storeDoc(st, p, s.mode())
		// From here on, the store's copy: what outlives the call (a
		// build's side table, the ops) must not refer to the scratch.
		p.enc = rec.enc
		earliest = s.earliestThreshold(p.dk, earliest)
	}
	evicted := s.evictCapped()
	s.flushCounts()
	s.mu.Unlock()
	if r := s.oprec; r != nil {
		if one != nil {
			one.doc[0] = batch[0].enc
			r.addOne(s, one, Op{Kind: OpInsert, Docs: one.doc[:], Versions: vers})
		} else {
			r.add(s, Op{Kind: OpInsert, Docs: insertedDocs(batch, func(p docWrite) []byte { return p.enc }), Versions: vers})
		}
		r.deleted(s, evicted)
	}
	s.settleMemory(cost)
	s.db.monitor.notifyThreshold(earliest)
	return nil
}

// deferCounts makes the TTL indexes' backlog counts sum the changes of a
// batch per date before applying them (expiryCounts.deferAdds); flushCounts
// applies them. Call both holding mu for writing, in one hold.
func (s *collState) deferCounts() {
	for _, ix := range s.indexes {
		if ix.ttl != nil {
			ix.ttl.counts.deferAdds()
		}
	}
}

func (s *collState) flushCounts() {
	for _, ix := range s.indexes {
		if ix.ttl != nil {
			ix.ttl.counts.flush()
		}
	}
}

// batchIDs finds duplicate _id keys within a batch of new documents: an
// open-addressing table of the documents added, placed by their keys'
// hashes (the store's, which the batch computed for its prefetch), with
// linear probing; equal hashes are checked against the keys. Call reset
// before a batch.
type batchIDs struct {
	cells  []int32  // a document's index + 1; 0: empty
	hashes []uint64 // each document's hash, by index
}

// reset makes b ready for a batch of n documents: a table at most half
// full, cleared.
func (b *batchIDs) reset(n int) {
	size := 8
	for size < 2*n {
		size *= 2
	}
	if cap(b.cells) < size {
		b.cells = make([]int32, size)
	} else {
		b.cells = b.cells[:size]
		clear(b.cells)
	}
	if cap(b.hashes) < n {
		b.hashes = make([]uint64, n)
	}
	b.hashes = b.hashes[:n]
}

// add records document i's key k, whose hash is h, and reports whether an
// earlier document of the batch has the same key (keyOf returns document
// j's). A nil b (a batch of one) finds none.
func (b *batchIDs) add(k []byte, h uint64, i int, keyOf func(j int) []byte) (dup bool) {
	if b == nil {
		return false
	}
	mask := uint64(len(b.cells) - 1)
	// The high bits place the key: the store's shards take the low ones.
	for p := (h>>32 ^ h) & mask; ; p = (p + 1) & mask {
		c := b.cells[p]
		if c == 0 {
			b.cells[p] = int32(i + 1)
			b.hashes[i] = h
			return false
		}
		if j := int(c - 1); b.hashes[j] == h && bytes.Equal(keyOf(j), k) {
			return true
		}
	}
}

// insertedDocs lists the encodings of the documents an insert stored.
func insertedDocs[T any](batch []T, enc func(T) []byte) []RawDocument {
	out := make([]RawDocument, len(batch))
	for i, p := range batch {
		out[i] = enc(p)
	}
	return out
}

// earliestThreshold folds the TTL thresholds of dk into acc (zero: none).
func (s *collState) earliestThreshold(dk docKeys, acc time.Time) time.Time {
	for i, ix := range s.indexes {
		if !dk[i].ttl.ok {
			continue
		}
		th := ix.ttl.thresholdFor(dk[i].ttl.date)
		if acc.IsZero() || th.Before(acc) {
			acc = th
		}
	}
	return acc
}

// evictCapped drops the oldest documents of a capped collection until it
// is within its caps, and returns them when the write records its ops
// (else nil). Under DB.Apply it evicts nothing: the op log carries the
// evictions as deletes of their own. Call with mu held for writing.
func (s *collState) evictCapped() (evicted []record) {
	if !s.opts.Capped || s.applying {
		return nil
	}
	for s.natural.Len() > 0 &&
		(s.opts.MaxDocuments > 0 && s.natural.Len() > s.opts.MaxDocuments ||
			s.opts.MaxBytes > 0 && s.bytes > s.opts.MaxBytes) {
		oldest, _ := s.natural.Min()
		rec := s.rec(oldest.slot)
		s.removeRecord(&rec)
		if s.oprec != nil {
			evicted = append(evicted, rec)
		}
	}
	return evicted
}

// UpdateOptions adjusts UpdateOne, UpdateMany and ReplaceOne, with the
// driver's option names.
type UpdateOptions struct {
	// Upsert inserts a document when nothing matches: for updates, the
	// filter's equality conditions with the update applied; for ReplaceOne,
	// the replacement (with the filter's _id if it names one).
	Upsert bool
	// Hint names the index the filter is answered with: an index's name,
	// or its keys ([]IndexKey, or a Document or bson.D such as {a: 1}).
	// An index the collection lacks, or one that cannot answer every
	// query (partial or sparse), is an ErrInvalidOptions error and nothing
	// changes. Nil: the planner chooses.
	Hint any
	// Sort (UpdateOne and ReplaceOne only) updates the first document in
	// this order among those the filter matches; nil: the first found.
	Sort []IndexKey
	// Collation must be nil or the simple collation (see Collation).
	Collation *Collation
	// ArrayFilters (UpdateOne and UpdateMany) are the filters of the
	// update's "$[id]" paths, as MongoDB's arrayFilters: each a filter
	// document (Document, bson.D, bson.M) whose fields start with its
	// identifier ({"e.grade": {$gte: 85}} for "grades.$[e].mean"); "$[]"
	// needs none. Every identifier used needs one filter and every
	// filter must be used, else ErrInvalidUpdate.
	ArrayFilters []any
}

// UpdateResult says what an update did, as the driver's.
type UpdateResult struct {
	MatchedCount  int64 // documents the filter matched
	ModifiedCount int64 // documents actually changed
	UpsertedCount int64 // 1 if an upsert inserted a document, else 0
	UpsertedID    any   // the _id of the inserted document, if an upsert inserted one
}

// DeleteOptions adjusts DeleteOne and DeleteMany, with the driver's
// option names.
type DeleteOptions struct {
	// Hint names the index the filter is answered with (see
	// UpdateOptions.Hint).
	Hint any
	// Collation must be nil or the simple collation (see Collation).
	Collation *Collation
}

// DeleteResult says what a delete did, as the driver's.
type DeleteResult struct {
	DeletedCount int64 // documents deleted
}

// UpdateOne implements ttldb.Collection.UpdateOne, whose documentation is the contract.
func (c *Collection) UpdateOne(ctx context.Context, filter, update any, opts ...UpdateOptions) (*UpdateResult, error) {
	return c.update(ctx, filter, update, 1, opts)
}

// UpdateMany implements ttldb.Collection.UpdateMany, whose documentation is the contract.
func (c *Collection) UpdateMany(ctx context.Context, filter, update any, opts ...UpdateOptions) (*UpdateResult, error) {
	o := mergeUpdateOptions(opts)
	if o.Sort != nil {
		return &UpdateResult{}, fmt.Errorf("%w: collection %q: UpdateMany takes no Sort (UpdateOne and ReplaceOne do)", ErrInvalidOptions, c.name)
	}
	return c.update(ctx, filter, update, 0, opts)
}

// update is UpdateOne (limit 1) and UpdateMany (limit 0).
func (c *Collection) update(ctx context.Context, filter, update any, limit int, opts []UpdateOptions) (*UpdateResult, error) {
	if err := c.started(ctx); err != nil {
		return &UpdateResult{}, err
	}
	if err := checkCollation(c.name, mergeUpdateOptions(opts).Collation); err != nil {
		return &UpdateResult{}, err
	}
	f, err := filterArg(filter)
	if err != nil {
		return &UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	u, err := updateArg(update)
	if err != nil {
		return &UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// A failed update's result is zero, not nil, as a failed write's is
	// in the driver (a caller that reads a count after an error sees 0).
	res, err := c.updateMatching(ctx, f, u, limit, opts)
	if err != nil {
		res = UpdateResult{}
	}
	return &res, err
}

func mergeUpdateOptions(opts []UpdateOptions) UpdateOptions {
	var o UpdateOptions
	for _, x := range opts {
		o.Upsert = o.Upsert || x.Upsert
		if x.Hint != nil {
			o.Hint = x.Hint
		}
		if x.Sort != nil {
			o.Sort = x.Sort
		}
		if x.Collation != nil {
			o.Collation = x.Collation
		}
		if x.ArrayFilters != nil {
			o.ArrayFilters = x.ArrayFilters
		}
	}
	return o
}

func (c *Collection) updateMatching(ctx context.Context, filterDoc, updateDoc Document, limit int, opts []UpdateOptions) (res UpdateResult, err error) {
	if err := c.db.writable(); err != nil {
		return UpdateResult{}, err
	}
	defer c.db.durable(&err)
	if err := c.usable(); err != nil {
		return UpdateResult{}, err
	}
	if err := checkCtx(ctx); err != nil {
		return UpdateResult{}, ctxError(c.name, err)
	}
	if ts := c.timeSeries(); ts != nil {
		if t := txnIn(ctx, c.db); t != nil {
			return UpdateResult{}, t.refuse(c.name, "a time-series collection")
		}
		if o := mergeUpdateOptions(opts); o.Hint != nil || o.Sort != nil || o.ArrayFilters != nil {
			return UpdateResult{}, fmt.Errorf("%w: %w: collection %q: an update of a time-series collection takes no hint, sort or array filters", ErrInvalidOptions, ErrTimeSeries, c.name)
		}
		end, err := c.db.beginWrite()
		if err != nil {
			return UpdateResult{}, err
		}
		res, err := c.tsUpdate(ts, filterDoc, updateDoc, limit, opts) // time-series: tsread.go
		return res, end(err)
	}
	f, err := query.CompileFilterWith(filterDoc, &query.ExprOptions{Now: c.db.clock.Now()})
	if err != nil {
		return UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	o := mergeUpdateOptions(opts)
	u, err := query.CompileUpdateWithArrayFilters(updateDoc, o.ArrayFilters)
	if err != nil {
		return UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	if o.Sort != nil {
		if err := query.CompileSort(sortKeys(o.Sort)); err != nil {
			return UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
		}
	}
	sel := selection{f: f, limit: limit, sort: o.Sort, hint: o.Hint}
	err = c.writeMatchingCtx(ctx, true, sel, o.Upsert, &res, func(s *collState, refs []*docRef, now time.Time) error {
		if len(refs) == 0 {
			seed, err := query.UpsertSeed(f.Doc())
			if err != nil {
				return fmt.Errorf("collection %q: upsert: %w", s.name, err)
			}
			doc, _, err := u.ApplyInsert(seed, now) // $setOnInsert applies
			if err != nil {
				return fmt.Errorf("collection %q: upsert: %w", s.name, err)
			}
			res.UpsertedID, err = s.upsertInsert(doc, now)
			if err == nil {
				res.UpsertedCount = 1
			}
			return err
		}
		if r := s.oprec; r != nil {
			r.replaceKind, r.update = OpUpdate, resolvedUpdate(updateDoc, now)
		}
		if w := s.txw; w != nil {
			w.replaceKind, w.update = OpUpdate, resolvedUpdate(updateDoc, now)
		}
		newDocs := make([]Document, len(refs))
		for i, ref := range refs {
			if i%cancelEvery == cancelEvery-1 {
				if err := checkCtx(ctx); err != nil {
					return ctxError(s.name, err)
				}
			}
			nd, changed, err := u.Apply(ref.get(), now)
			if err != nil {
				return fmt.Errorf("collection %q: document %v: %w", s.name, ref.get()["_id"], err)
			}
			if changed {
				newDocs[i] = nd
			}
		}
		s.writeCtx = ctx
		n, err := s.replaceRecords(refs, newDocs)
		s.writeCtx = nil
		res.ModifiedCount = int64(n)
		return err
	})
	if err != nil && ctx != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		res = UpdateResult{} // cancelled: nothing matched, nothing changed
	}
	return res, err
}

// writeMatchingCtx runs fn holding the collection's write lock, with the
// records matching the filter (up to limit; 0: all) and the clock's now;
// res.MatchedCount is set. With no match, fn runs only for an upsert: an
// update without upsert of a missing collection must not create it. ctx
// (nil: never) stops it while it finds the records: it then returns ctx's
// error and fn does not run. It writes as writeFor does: inside the
// transaction ctx carries, or made durable by the caller
// (durableByCaller) or here.
func (c *Collection) writeMatchingCtx(ctx context.Context, durableByCaller bool, sel selection, upsert bool, res *UpdateResult,
	fn func(s *collState, refs []*docRef, now time.Time) error) error {
	if !upsert {
		if s, err := c.read(); err != nil || s == nil {
			return err
		}
	}
	return c.writeFor(ctx, durableByCaller, func(s *collState) error {
		now := c.db.clock.Now()
		if r := s.oprec; r != nil {
			r.now = now
		}
		refs, err := s.matchingRecordsCtx(ctx, sel, now)
		if err != nil {
			return ctxError(s.name, err)
		}
		res.MatchedCount = int64(len(refs))
		if len(refs) == 0 && !upsert {
			return nil
		}
		return fn(s, refs, now)
	})
}

// upsertInsert inserts the document an upsert built, giving it an
// ObjectID _id if it has none, and returns (a copy of) its _id. Call
// holding writeMu.
func (s *collState) upsertInsert(doc Document, now time.Time) (any, error) {
	if _, ok := doc["_id"]; !ok {
		doc["_id"] = NewObjectIDFromTime(now)
	}
	nd, err := encodeUpdated(doc)
	if err != nil {
		return nil, fmt.Errorf("collection %q: upsert: %w", s.name, err)
	}
	if err := s.insertPrepared([]newDoc{nd}, nil); err != nil {
		return nil, err
	}
	return codec.CopyValue(doc["_id"]), nil
}

// replaceRecords swaps in new documents for recs (a nil entry leaves that
// record alone), atomically: it checks every new document first and changes
// nothing on error. It returns how many records changed. Call holding
// writeMu.
func (s *collState) replaceRecords(refs []*docRef, newDocs []Document) (int, error) {
	return s.replaceEncoded(refs, newDocs, nil)
}

// replaceEncoded is replaceRecords with the new documents given encoded
// (encs, when not nil: DB.Apply stores an op's bytes as they are), newDocs
// then holding their decodings or nil.
func (s *collState) replaceEncoded(refs []*docRef, newDocs []Document, encs [][]byte) (int, error) {
	type change struct {
		rec    record
		enc    []byte
		extra  []byte
		oldKey docKeys
		newKey docKeys
	}
	if w := s.txw; w != nil && encs == nil {
		return w.stageReplaces(s, refs, newDocs)
	}
	if !s.applying {
		if err := s.waitForTxns(refs); err != nil {
			return 0, err
		}
	}
	uc := newUniqueCheck(s)
	for i, ref := range refs {
		if (encs != nil || newDocs[i] != nil) && uc != nil {
			uc.batch[ref.rec.slot] = true
		}
	}
	var changes []change
	var cost int64
	for i, ref := range refs {
		var (
			nd  Document
			enc []byte
			id  any
		)
		if encs != nil {
			// Applying an op: the _id is the one the record was found by.
			enc, id = encs[i], ref.rec.id()
		} else {
			if nd = newDocs[i]; nd == nil {
				continue
			}
			if i%cancelEvery == cancelEvery-1 {
				if err := checkCtx(s.writeCtx); err != nil {
					return 0, ctxError(s.name, err)
				}
			}
			id = ref.get()["_id"]
			if query.Compare(nd["_id"], id) != 0 {
				return 0, fmt.Errorf("collection %q: document %v: %w: %w", s.name, id, ErrInvalidUpdate, ErrImmutableID)
			}
			if err := s.validator.Validate(nd); err != nil {
				return 0, fmt.Errorf("collection %q: document %v: %w", s.name, id, err)
			}
			var err error
			if enc, err = codec.Encode(nd, nil); err != nil {
				return 0, fmt.Errorf("collection %q: document %v: %w", s.name, id, err)
			}
		}
		nk, err := s.computeKeys(&docRef{rec: record{enc: enc}, doc: nd})
		if err != nil {
			return 0, fmt.Errorf("document %v: %w", id, err)
		}
		extra := s.appendTTLExtra(nil, nk, enc)
		if err := store.CheckSize(len(ref.rec.key), len(enc), len(extra)); err != nil {
			return 0, fmt.Errorf("collection %q: document %v: %w: %w", s.name, id, ErrInvalidDocument, err)
		}
		if err := uc.add(int64(ref.rec.slot), nk); err != nil {
			return 0, fmt.Errorf("document %v: %w", id, err)
		}
		changes = append(changes, change{rec: ref.rec, enc: enc, extra: extra, oldKey: s.storedKeys(&ref.rec), newKey: nk})
		cost += store.UpdateCost(len(ref.rec.key), len(enc), len(extra)) + s.keysCost(nk)
	}
	if err := s.inWay.ready(); err != nil {
		return 0, err
	}
	if err := checkCtx(s.writeCtx); err != nil {
		return 0, ctxError(s.name, err) // the last look before the commit
	}
	if err := s.checkCounters(0, len(changes)); err != nil {
		return 0, err
	}
	if err := s.reserve(cost); err != nil {
		return 0, err
	}
	var earliest time.Time
	var vers []uint64 // for the op
	if s.oprec != nil {
		vers = make([]uint64, 0, len(changes))
	}
	st := s.store()
	s.mu.Lock()
	s.inWay.remove(s)
	for i := range changes {
		ch := &changes[i]
		w := docWrite{enc: ch.enc, extra: ch.extra, dk: ch.newKey, ver: s.newVersion(i)}
		if vers != nil {
			vers = append(vers, w.ver)
		}
		s.rewriteDoc(st, &ch.rec, ch.oldKey, &w)
		earliest = s.earliestThreshold(ch.newKey, earliest)
	}
	evicted := s.evictCapped()
	s.mu.Unlock()
	if r := s.oprec; r != nil && len(changes) > 0 {
		op := Op{Kind: r.replaceKind, Docs: make([]RawDocument, len(changes)), Versions: vers}
		if op.Kind == 0 {
			op.Kind = OpUpdate
		}
		for i, ch := range changes {
			op.Docs[i] = ch.enc
		}
		if op.Kind == OpUpdate && r.update != nil {
			op.Updates = make([]RawDocument, len(changes))
			for i := range op.Updates {
				op.Updates[i] = r.update
			}
		}
		if r.pre {
			op.Before = make([]RawDocument, len(changes))
			for i, ch := range changes {
				op.Before[i] = ch.rec.enc
			}
		}
		r.add(s, op)
		r.deleted(s, evicted)
	}
	s.settleMemory(cost)
	s.db.monitor.notifyThreshold(earliest)
	return len(changes), nil
}

// ReplaceOne implements ttldb.Collection.ReplaceOne, whose documentation is the contract.
func (c *Collection) ReplaceOne(ctx context.Context, filterArgument any, replacementDoc any, opts ...UpdateOptions) (*UpdateResult, error) {
	if err := c.usable(); err != nil {
		return &UpdateResult{}, err
	}
	if err := c.started(ctx); err != nil {
		return &UpdateResult{}, err
	}
	if c.timeSeries() != nil {
		return &UpdateResult{}, fmt.Errorf("%w: %w: collection %q: ReplaceOne is not supported on a time-series collection", ErrInvalidUpdate, ErrTimeSeries, c.name)
	}
	filterDoc, err := filterArg(filterArgument)
	if err != nil {
		return &UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	f, err := query.CompileFilterWith(filterDoc, &query.ExprOptions{Now: c.db.clock.Now()})
	if err != nil {
		return &UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	replacement, err := asDocument(replacementDoc)
	if err != nil {
		return &UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	if err := query.ValidateReplacement(replacement); err != nil {
		return &UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	repl, err := codec.CloneDocument(replacement)
	if err != nil {
		return &UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	o := mergeUpdateOptions(opts)
	if err := checkCollation(c.name, o.Collation); err != nil {
		return &UpdateResult{}, err
	}
	if o.ArrayFilters != nil {
		return &UpdateResult{}, fmt.Errorf("%w: collection %q: ReplaceOne takes no array filters", ErrInvalidOptions, c.name)
	}
	if o.Sort != nil {
		if err := query.CompileSort(sortKeys(o.Sort)); err != nil {
			return &UpdateResult{}, fmt.Errorf("collection %q: %w", c.name, err)
		}
	}
	var res UpdateResult
	err = c.writeMatchingCtx(ctx, false, selection{f: f, limit: 1, sort: o.Sort, hint: o.Hint}, o.Upsert, &res, func(s *collState, refs []*docRef, now time.Time) error {
		if len(refs) == 0 {
			doc := codec.CopyDocument(repl)
			if _, ok := doc["_id"]; !ok {
				if seed, err := query.UpsertSeed(f.Doc()); err == nil {
					if id, ok := seed["_id"]; ok {
						doc["_id"] = id
					}
				}
			}
			var err error
			res.UpsertedID, err = s.upsertInsert(doc, now)
			if err == nil {
				res.UpsertedCount = 1
			}
			return err
		}
		old := refs[0].get()
		doc := codec.CopyDocument(repl)
		if id, ok := doc["_id"]; ok && query.Compare(id, old["_id"]) != 0 {
			return fmt.Errorf("collection %q: document %v: %w: %w", s.name, old["_id"], ErrInvalidUpdate, ErrImmutableID)
		}
		doc["_id"] = old["_id"]
		if query.Compare(doc, old) == 0 {
			return nil
		}
		if r := s.oprec; r != nil {
			r.replaceKind = OpReplace
		}
		if w := s.txw; w != nil {
			w.replaceKind = OpReplace
		}
		n, err := s.replaceRecords(refs, []Document{doc})
		res.ModifiedCount = int64(n)
		return err
	})
	if err != nil {
		res = UpdateResult{}
	}
	return &res, err
}

// DeleteOne implements ttldb.Collection.DeleteOne, whose documentation is the contract.
func (c *Collection) DeleteOne(ctx context.Context, filter any, opts ...DeleteOptions) (*DeleteResult, error) {
	return c.delete(ctx, filter, 1, opts)
}

// DeleteMany implements ttldb.Collection.DeleteMany, whose documentation is the contract.
func (c *Collection) DeleteMany(ctx context.Context, filter any, opts ...DeleteOptions) (*DeleteResult, error) {
	return c.delete(ctx, filter, 0, opts)
}

// delete is DeleteOne (limit 1) and DeleteMany (limit 0).
func (c *Collection) delete(ctx context.Context, filterArgument any, limit int, opts []DeleteOptions) (*DeleteResult, error) {
	if err := c.started(ctx); err != nil {
		return &DeleteResult{}, err
	}
	filter, err := filterArg(filterArgument)
	if err != nil {
		return &DeleteResult{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	var hint any
	for _, o := range opts {
		if o.Hint != nil {
			hint = o.Hint
		}
		if err := checkCollation(c.name, o.Collation); err != nil {
			return &DeleteResult{}, err
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	n, err := c.deleteMatching(ctx, filter, limit, hint)
	if err != nil {
		n = 0
	}
	return &DeleteResult{DeletedCount: int64(n)}, err
}

func (c *Collection) deleteMatching(ctx context.Context, filterDoc Document, limit int, hint any) (n int, err error) {
	if err := c.db.writable(); err != nil {
		return 0, err
	}
	defer c.db.durable(&err)
	if err := c.usable(); err != nil {
		return 0, err
	}
	if err := checkCtx(ctx); err != nil {
		return 0, ctxError(c.name, err)
	}
	if ts := c.timeSeries(); ts != nil {
		if t := txnIn(ctx, c.db); t != nil {
			return 0, t.refuse(c.name, "a time-series collection")
		}
		if hint != nil {
			return 0, fmt.Errorf("%w: %w: collection %q: a delete of a time-series collection takes no hint", ErrInvalidOptions, ErrTimeSeries, c.name)
		}
		end, err := c.db.beginWrite()
		if err != nil {
			return 0, err
		}
		n, err := c.tsDelete(ctx, ts, filterDoc, limit) // time-series: tsread.go
		return n, end(err)
	}
	f, err := query.CompileFilterWith(filterDoc, &query.ExprOptions{Now: c.db.clock.Now()})
	if err != nil {
		return 0, fmt.Errorf("collection %q: %w", c.name, err)
	}
	s, err := c.read()
	if err != nil || s == nil {
		return 0, err
	}
	n = 0
	err = c.writeFor(ctx, true, func(s *collState) error {
		now := c.db.clock.Now()
		if r := s.oprec; r != nil {
			r.now = now
		}
		refs, err := s.matchingRecordsCtx(ctx, selection{f: f, limit: limit, hint: hint}, now)
		if err == nil {
			err = checkCtx(ctx)
		}
		if err != nil {
			return ctxError(s.name, err)
		}
		if err := s.removeFound(refs); err != nil {
			return err
		}
		n = len(refs)
		return nil
	})
	if errors.Is(err, errCollectionDropped) {
		return 0, nil
	}
	return n, err
}
