package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/store"
)

// Apply implements ttldb.DB.Apply, whose documentation is the contract.
func (db *DB) Apply(ctx context.Context, ops ...Op) (err error) {
	if err := db.writable(); err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return err
	}
	defer db.durable(&err)
	if err := db.checkOpen(); err != nil {
		return err
	}
	db.applyMu.Lock()
	defer db.applyMu.Unlock()
	last := db.ops.lastSeq()
	for i := range ops {
		if want := last + 1 + uint64(i); ops[i].Seq != want {
			return fmt.Errorf("%w: op %d has sequence number %d, the DB expects %d", ErrOpSequence, i, ops[i].Seq, want)
		}
	}
	for i := 0; i < len(ops); i++ {
		if err := db.checkOpen(); err != nil {
			return err
		}
		if id := ops[i].Txn; !id.IsZero() {
			// A transaction's ops: applied as one change.
			j := i + 1
			for j < len(ops) && ops[j].Txn == id {
				j++
			}
			// A copy: the sinks keep the group's ops, and Apply's
			// argument must not escape (one allocation per applied op).
			if err := db.applyTxnOps(slices.Clone(ops[i:j])); err != nil {
				return fmt.Errorf("ops %d to %d (transaction %d): %w", ops[i].Seq, ops[j-1].Seq, id.Number, err)
			}
			i = j - 1
			continue
		}
		if err := db.applyOp(&ops[i]); err != nil {
			return fmt.Errorf("op %d (%s): %w", ops[i].Seq, ops[i].Kind, err)
		}
	}
	return nil
}

// String names the kind: "insert", "update", "replace", "delete",
// "expire", "createCollection", "dropCollection", "createIndex",
// "dropIndex", "collMod", "dbMod", or "OpKind(n)" for another value.
func (k OpKind) String() string {
	switch k {
	case OpInsert:
		return "insert"
	case OpUpdate:
		return "update"
	case OpReplace:
		return "replace"
	case OpDelete:
		return "delete"
	case OpExpire:
		return "expire"
	case OpCreateCollection:
		return "createCollection"
	case OpDropCollection:
		return "dropCollection"
	case OpCreateIndex:
		return "createIndex"
	case OpDropIndex:
		return "dropIndex"
	case OpCollMod:
		return "collMod"
	case OpDBMod:
		return "dbMod"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// applyOp applies one op and commits it.
func (db *DB) applyOp(op *Op) error {
	if op.Kind == OpCreateCollection {
		return db.applyCreate(op)
	}
	if op.Kind == OpDBMod {
		return db.applyDBMod(op)
	}
	if op.Kind < OpInsert || op.Kind > OpCollMod {
		return fmt.Errorf("%w: unknown kind %d", ErrInvalidOp, uint8(op.Kind))
	}
	db.mu.RLock()
	s := db.collections[op.Collection]
	db.mu.RUnlock()
	if s == nil {
		return fmt.Errorf("%w: %w: no collection %q", ErrInvalidOp, ErrNotFound, op.Collection)
	}
	if op.Kind == OpDropCollection {
		dropped, err := s.dropIfCurrent(db, op)
		if err == nil && !dropped {
			err = fmt.Errorf("%w: %w: no collection %q", ErrInvalidOp, ErrNotFound, op.Collection)
		}
		return err
	}
	if s.ts != nil {
		return s.ts.applyOp(op)
	}
	if err := s.lockWrite(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOp, err)
	}
	if err := checkVersions(op); err != nil {
		s.writeMu.Unlock()
		return err
	}
	s.applying = true
	natFrom := s.nextSeq // what the op inserts comes after (commitWrite)
	if op.Kind == OpInsert || op.Kind == OpUpdate || op.Kind == OpReplace {
		s.applyVers = op.Versions
	}
	var (
		err      error
		n        int   // the documents an expiry deleted
		expired  []any // their _id values, for the observers
		observed bool
	)
	switch op.Kind {
	case OpInsert:
		err = s.applyInsert(op)
	case OpUpdate, OpReplace:
		err = s.applyUpdate(op)
	case OpDelete:
		expired, err = s.applyDelete(op)
		n, observed = len(expired), op.Expired
	case OpExpire:
		n, expired, err = s.applyExpire(op, nil)
		observed = true
	case OpCreateIndex:
		err = s.applyCreateIndex(op)
	case OpDropIndex:
		err = s.applyDropIndex(op)
	case OpCollMod:
		err = s.applyCollMod(op)
	}
	if err == nil {
		err = db.ops.commitAppliedFrom([]Op{*op}, natFrom)
	}
	s.applying, s.applyVers = false, nil
	s.writeMu.Unlock()
	if err == nil && observed {
		db.reportApplied(op, n, expired, nil)
	}
	return err
}

// checkVersions checks an op's record versions: none, or one per
// document, each > 0 and at most store.MaxSeq.
func checkVersions(op *Op) error {
	if len(op.Versions) == 0 {
		return nil
	}
	if len(op.Versions) != len(op.Docs) {
		return fmt.Errorf("%w: %d versions for %d documents", ErrInvalidOp, len(op.Versions), len(op.Docs))
	}
	if slices.Contains(op.Versions, 0) {
		return fmt.Errorf("%w: record version 0", ErrInvalidOp)
	}
	if v := slices.Max(op.Versions); v > store.MaxSeq {
		return fmt.Errorf("%w: %w: record version %d", ErrInvalidOp, ErrCounterLimit, v)
	}
	return nil
}

// raiseVersions makes the DB's version counter at least v: the versions
// it gives later are greater than every version applied.
func (db *DB) raiseVersions(v uint64) {
	for {
		cur := db.writes.Load()
		if cur >= v || db.writes.CompareAndSwap(cur, v) {
			return
		}
	}
}

// reportApplied counts the deletions of an applied OpExpire (or Expired
// OpDelete) and tells the observers, as the origin did: n documents (or
// buckets), the _id values ids, the measurements rem.
func (db *DB) reportApplied(op *Op, n int, ids []any, rem *tsRemoved) {
	if n == 0 && len(ids) == 0 {
		return
	}
	db.metrics.addDeleted(IndexRef{op.Collection, op.Index}, n)
	if len(db.cfg.observe) > 0 && len(ids) > 0 {
		db.monitor.observe(DeleteEvent{Collection: op.Collection, Index: op.Index, IDs: ids, PassNow: op.Cutoff, BatchNow: op.Cutoff, removed: rem})
	}
}

// applyCreate creates the collection an OpCreateCollection describes.
func (db *DB) applyCreate(op *Op) error {
	if err := validateCollectionName(op.Collection); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOp, err)
	}
	opts, err := collectionOptionsOf(op.Spec)
	if err != nil {
		return err
	}
	st, err := newCollState(db, op.Collection, opts)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOp, err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.collections[op.Collection]; ok {
		return fmt.Errorf("%w: %w: collection %q", ErrInvalidOp, ErrCollectionExists, op.Collection)
	}
	if err := db.ops.commitApplied([]Op{*op}); err != nil {
		return err
	}
	db.collections[op.Collection] = st
	return nil
}

// checkedID returns the _id of an op's document (checked as a stored
// document) and its key in the store.
func checkedID(d RawDocument) (id any, key []byte, err error) {
	if err := codec.Validate(d); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidOp, err)
	}
	id, ok := codec.EncodedField(d, "_id")
	if !ok {
		return nil, nil, fmt.Errorf("%w: %w: document without an _id", ErrInvalidOp, ErrInvalidDocument)
	}
	key, err = appendIDKey(nil, id)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidOp, err)
	}
	return id, key, nil
}

// invalid wraps an error of a change an op asked for.
func invalid(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOp, err)
}

// applyInsert stores an OpInsert's documents. Call holding writeMu, with
// applying set.
func (s *collState) applyInsert(op *Op) error {
	docs := make([]newDoc, len(op.Docs))
	for i, d := range op.Docs {
		id, _, err := checkedID(d)
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		docs[i] = newDoc{enc: d, id: id}
	}
	return invalid(s.insertPrepared(docs, nil))
}

// findAll returns the stored records of keys (documents or keys: their
// _id values), failing if one is missing or named twice.
func (s *collState) findAll(what string, docs []RawDocument) ([]*docRef, error) {
	refs := make([]*docRef, len(docs))
	seen := make(map[string]bool, len(docs))
	for i, d := range docs {
		id, k, err := checkedID(d)
		if err != nil {
			return nil, fmt.Errorf("%s %d: %w", what, i, err)
		}
		if seen[string(k)] {
			return nil, fmt.Errorf("%w: %s %d: _id %v appears twice", ErrInvalidOp, what, i, id)
		}
		seen[string(k)] = true
		rec, ok := s.lookup(k)
		if !ok {
			return nil, fmt.Errorf("%w: %w: %s %d: collection %q has no document with _id %v", ErrInvalidOp, ErrNotFound, what, i, s.name, id)
		}
		refs[i] = &docRef{rec: rec}
	}
	return refs, nil
}

// applyUpdate stores the documents of an OpUpdate or OpReplace in place of
// those with their _id values.
func (s *collState) applyUpdate(op *Op) error {
	refs, err := s.findAll("document", op.Docs)
	if err != nil {
		return err
	}
	encs := make([][]byte, len(op.Docs))
	for i, d := range op.Docs {
		encs[i] = d
	}
	_, err = s.replaceEncoded(refs, make([]Document, len(refs)), encs)
	return invalid(err)
}

// removeRefs deletes records under mu.
func (s *collState) removeRefs(refs []*docRef) []any {
	ids := make([]any, len(refs))
	recs := s.goneRecs[:0]
	defer func() { clear(recs); s.goneRecs = recs[:0] }()
	for i, ref := range refs {
		ids[i] = ref.rec.id()
		recs = append(recs, ref.rec)
	}
	s.mu.Lock()
	s.removeRecords(recs)
	s.mu.Unlock()
	s.settleMemory(0)
	return ids
}

// applyDelete deletes the documents of an OpDelete's keys; every one must
// be stored. It returns their _id values.
func (s *collState) applyDelete(op *Op) ([]any, error) {
	refs, err := s.findAll("key", op.Keys)
	if err != nil {
		return nil, err
	}
	return s.removeRefs(refs), nil
}

// applyExpire deletes the documents of an OpExpire's keys that are stored
// and expired at its Cutoff under its index (the monitor's re-check), and
// returns how many it deleted and, when the DB has DeleteObservers, their
// _id values. Call holding writeMu. DB.Apply and the leader of a
// proposal-first replica (proposeBatch) both delete through it: every
// replica decides alike.
//
// known, when not nil, are the stored records of op.Keys (parallel to
// them), found under this same hold of writeMu: the leader's own batch,
// whose keys it took from those records. The lookups are then skipped;
// the re-check of each date is not.
func (s *collState) applyExpire(op *Op, known []record) (n int, ids []any, err error) {
	ix := s.indexNamed(op.Index)
	switch {
	case ix == nil:
		return 0, nil, fmt.Errorf("%w: %w: collection %q has no index %q", ErrInvalidOp, ErrNotFound, s.name, op.Index)
	case ix.ttl == nil:
		return 0, nil, fmt.Errorf("%w: %w: index %q of collection %q is not a TTL index", ErrInvalidOp, ErrInvalidIndex, op.Index, s.name)
	}
	cutoff := ix.ttl.cutoff(op.Cutoff)
	expired := func(rec *record) bool {
		d, ok := ix.storedDate(&docRef{rec: *rec})
		return ok && !d.After(cutoff)
	}
	// A batch usually names the documents at the head of this DB's expiry
	// tree, in its order (the primary chose them from the same tree):
	// while it does, each key is found by comparing it with the next
	// entry's _id, with no lookup by _id, and is valid (it is a stored
	// document's). The head stops at the first entry not expired: the
	// entry holds the document's current date under ix, so the entries
	// before it are expired, with no date read from their records. The
	// rest are checked, then looked up. Every key is checked before
	// anything changes: the op applies whole or not at all.
	var heads []record // the documents of op.Keys[:len(heads)], all expired
	var keys []byte    // the store forms of the other keys
	var ends []int     // where each ends in keys
	if known == nil {
		heads = s.db.expireHeads[:0]
		defer func() { clear(heads); s.db.expireHeads = heads[:0] }()
		ix.ttl.expiry.Ascend(func(e expiryEntry) bool {
			if len(heads) == len(op.Keys) || !entryNotAfter(e, cutoff) {
				return false
			}
			rec := s.rec(e.slot)
			id, ok := codec.EncodedFieldRaw(rec.enc, "_id")
			if !ok || !codec.IsIDDocOf(op.Keys[len(heads)], id) {
				return false
			}
			heads = append(heads, rec)
			return true
		})
		rest := op.Keys[len(heads):]
		if len(rest) > 0 {
			size := 0
			for _, k := range rest {
				size += len(k) // a key's store form is about as long as {_id: v}
			}
			keys = make([]byte, 0, size)
			ends = make([]int, len(rest))
			for i, k := range rest {
				if keys, err = expireKey(keys, k); err != nil {
					return 0, nil, fmt.Errorf("key %d: %w", len(heads)+i, err)
				}
				ends[i] = len(keys)
			}
		}
	}
	observed := len(s.db.cfg.observe) > 0
	var b idBatch
	if observed {
		b.start(len(op.Keys))
	}
	s.mu.Lock()
	for _, x := range s.indexes {
		if x.ttl != nil {
			x.ttl.counts.deferAdds()
		}
	}
	if known != nil {
		gone := s.goneRecs[:0]
		defer func() { clear(gone); s.goneRecs = gone[:0] }()
		for i := range known {
			if rec := &known[i]; expired(rec) {
				if observed {
					b.add(rec)
				}
				gone = append(gone, *rec)
			}
		}
		s.removeRecords(gone)
		n = len(gone)
	} else {
		// The head's documents (distinct: each has its own entry; all
		// expired) leave the store together, before the first lookup, so
		// that a key named again later finds nothing.
		if observed {
			for i := range heads {
				b.add(&heads[i])
			}
		}
		s.removeRecords(heads)
		n = len(heads)
		from := 0
		for _, to := range ends {
			rec, ok := s.lookup(keys[from:to])
			from = to
			if !ok || !expired(&rec) {
				continue
			}
			if observed {
				b.add(&rec)
			}
			// Deleted from the store at once: a key named twice is not
			// found again.
			s.removeRecord(&rec)
			n++
		}
	}
	for _, x := range s.indexes {
		if x.ttl != nil {
			x.ttl.counts.flush()
		}
	}
	s.mu.Unlock()
	s.settleMemory(0)
	if observed {
		ids = b.done()
	}
	return n, ids, nil
}

// expireKey appends to dst the store key of an OpExpire's key document
// ({_id: v}), checked as a stored document is.
func expireKey(dst []byte, k RawDocument) ([]byte, error) {
	if err := codec.Validate(k); err != nil {
		return dst, fmt.Errorf("%w: %w", ErrInvalidOp, err)
	}
	id, ok := codec.EncodedField(k, "_id")
	if !ok {
		return dst, fmt.Errorf("%w: %w: document without an _id", ErrInvalidOp, ErrInvalidDocument)
	}
	dst, err := appendIDKey(dst, id)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrInvalidOp, err)
	}
	return dst, nil
}

// indexNamed returns the index called name, nil if none. Call holding mu
// or writeMu.
func (s *collState) indexNamed(name string) *index {
	for _, ix := range s.indexes {
		if ix.name == name {
			return ix
		}
	}
	return nil
}

// applyCreateIndex builds an OpCreateIndex's index, synchronously: the
// writers of the collection wait for the build (they are the applier's).
func (s *collState) applyCreateIndex(op *Op) error {
	m, err := indexModelOf(op.Spec)
	if err != nil {
		return err
	}
	if op.Index != "" && op.Index != m.Name {
		return fmt.Errorf("%w: index %q, spec of index %q", ErrInvalidOp, op.Index, m.Name)
	}
	for _, ix := range s.indexes {
		if ix.name == m.Name || sameKeys(ix.keys, m.Keys) {
			return fmt.Errorf("%w: %w: collection %q: index %q exists", ErrInvalidOp, ErrIndexOptionsConflict, s.name, ix.name)
		}
	}
	ix, err := newIndex(s.name, m, s.opts.Capped)
	if err != nil {
		return invalid(err)
	}
	b, err := s.buildIndex(ix)
	if err != nil {
		return invalid(err)
	}
	if err := b.checkUnique(); err != nil {
		return invalid(err)
	}
	cost := ix.keyBytes
	if ix.tree != nil {
		cost += treeBytes(ix.tree.Len(), indexEntrySize, treeFactorRandom)
	}
	if ix.ttl != nil {
		cost += treeBytes(ix.ttl.expiry.Len(), expiryEntrySize, treeFactorDates) + ix.ttl.counts.bytes()
	}
	if err := s.reserve(cost); err != nil {
		return err
	}
	ix.multikey = ix.multikey || multikeyOf(op.Spec)
	s.addIndex(ix)
	s.settleMemory(cost)
	return nil
}

// markMultikey sets the multikey flag of index name when on is set (an
// OpCreateIndex whose origin's build met an array: builtIndexSpec).
func (s *collState) markMultikey(name string, on bool) {
	if !on {
		return
	}
	for _, ix := range s.indexes {
		if ix.name == name {
			ix.multikey = true
		}
	}
}

func (s *collState) applyDropIndex(op *Op) error {
	if !s.dropIndex(op.Index) {
		return fmt.Errorf("%w: %w: collection %q has no index %q", ErrInvalidOp, ErrNotFound, s.name, op.Index)
	}
	s.settleMemory(0)
	return nil
}

func (s *collState) applyCollMod(op *Op) error {
	if op.Index == "" {
		paused, err := pausedOf(op.Spec)
		if err != nil {
			return err
		}
		s.setPaused(paused)
		return nil
	}
	secs, off, err := collModOf(op.Spec)
	if err != nil {
		return err
	}
	if off || op.Index == "" {
		return fmt.Errorf("%w: collection %q is not a time-series collection: a collMod needs an index and expireAfterSeconds", ErrInvalidOp, s.name)
	}
	if *secs < 0 {
		return fmt.Errorf("%w: %w: expireAfterSeconds %d", ErrInvalidOp, ErrInvalidTTL, *secs)
	}
	var res CollModResult
	return invalid(s.collMod(fmt.Sprintf("collMod %q", s.name), CollModIndex{Name: op.Index, ExpireAfterSeconds: secs}, &res))
}

// applyOp applies an op to a time-series collection and commits it.
func (ts *tsColl) applyOp(op *Op) error {
	switch op.Kind {
	case OpCreateIndex:
		m, err := indexModelOf(op.Spec)
		if err != nil {
			return err
		}
		ts.mu.RLock()
		exists := slices.ContainsFunc(ts.indexes, func(ix *tsIndex) bool { return ix.name == m.Name || sameKeys(ix.keys, m.Keys) })
		ts.mu.RUnlock()
		if exists {
			return fmt.Errorf("%w: %w: collection %q: index %q exists", ErrInvalidOp, ErrIndexOptionsConflict, ts.name, m.Name)
		}
		_, err = ts.createIndex(m, op, modeApply)
		return invalid(err)
	case OpDropIndex:
		return invalid(ts.dropIndex(op.Index, op))
	case OpCollMod:
		if op.Index == "" {
			if paused, err := pausedOf(op.Spec); err == nil {
				return invalid(ts.setPaused(paused, op))
			}
		}
		secs, off, err := collModOf(op.Spec)
		if err != nil {
			return err
		}
		if secs != nil && *secs < 0 {
			return fmt.Errorf("%w: %w: expireAfterSeconds %d", ErrInvalidOp, ErrInvalidTTL, *secs)
		}
		if op.Index == "" {
			_, err = ts.setCollExpiry(secs, op)
			return invalid(err)
		}
		if off {
			return fmt.Errorf("%w: collMod of index %q needs expireAfterSeconds", ErrInvalidOp, op.Index)
		}
		_, err = ts.collModIndex(CollModIndex{Name: op.Index, ExpireAfterSeconds: secs}, op)
		return invalid(err)
	}
	ts.mu.Lock()
	if ts.dropped {
		ts.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrInvalidOp, ts.errDropped())
	}
	var (
		err  error
		n    int
		ids  []any
		rem  *tsRemoved
		note bool
	)
	switch op.Kind {
	case OpInsert:
		err = ts.applyInsert(op, modeApply)
	case OpUpdate:
		err = ts.applyMetaUpdate(op, modeApply)
	case OpDelete:
		_, _, _, _, err = ts.applyRemoval(op, false, nil)
	case OpExpire:
		var removed int
		n, removed, ids, rem, err = ts.applyRemoval(op, true, nil)
		ts.db.countDeletedMeasurements(ts.name, removed)
		note = true
	default:
		err = fmt.Errorf("%w: %w: a time-series collection has no %s ops", ErrInvalidOp, ErrTimeSeries, op.Kind)
	}
	if err == nil {
		err = ts.db.ops.commitApplied([]Op{*op})
	}
	ts.unlockWrite()
	if err == nil && note {
		ts.db.reportApplied(op, n, ids, rem)
	}
	return err
}

// applyInsert places an OpInsert's measurements, in order, as the insert
// did: under the memory limit outside recovery (modeApply; modeReplay
// loads history whole). Call holding mu for writing.
func (ts *tsColl) applyInsert(op *Op, mode applyMode) error {
	ms := make([]tsMeasurement, len(op.Docs))
	for i, d := range op.Docs {
		m, err := ts.splitMeasurement(d)
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if err := store.CheckSize(0, len(m.enc), 0); err != nil {
			return fmt.Errorf("%w: document %d: %w", ErrInvalidOp, i, err)
		}
		ms[i] = m
	}
	_, err := ts.placeAll(ms, mode)
	return err
}

// countDeletedMeasurements adds n expired measurements removed from
// collection coll to the metrics (DeletedMeasurements and its split by
// collection).
func (db *DB) countDeletedMeasurements(coll string, n int) {
	if n > 0 {
		r := db.metrics
		r.deletedMeasurements.Add(int64(n))
		r.mu.Lock()
		r.measurementsByCollection[coll] += int64(n)
		r.mu.Unlock()
	}
}

// applyRemoval removes the measurements an OpDelete or OpExpire names.
// For an OpExpire (expire set) only those still expired at its Cutoff
// under its rule go, and it returns the buckets deleted whole, the
// measurements removed and, when the DB has DeleteObservers, their _id
// values and the measurements, for the observers. The callers that count
// the removal in the metrics do so (countDeletedMeasurements); the loader
// replaying a log does not. The TTL monitor of a proposal-first replica
// deletes its own batches through it too (deleteBuckets): every replica
// decides alike. Call holding mu for writing.
//
// known, when not nil, are the measurements op.Keys name, found under
// this same hold of mu (the leader's own batch, whose keys were built
// from them): the keys are then not parsed and looked up again; the
// re-check of each measurement is made all the same.
func (ts *tsColl) applyRemoval(op *Op, expire bool, known *tsMarks) (n, removed int, ids []any, rem *tsRemoved, err error) {
	marks := known
	if marks == nil {
		if marks, err = ts.locate(op.Keys); err != nil {
			return 0, 0, nil, nil, err
		}
	}
	if expire {
		var e *tsExpiry
		for _, x := range ts.expiries() {
			if x.name == op.Index {
				e = x
			}
		}
		if e == nil {
			return 0, 0, nil, nil, fmt.Errorf("%w: %w: collection %q has no expiry rule %q", ErrInvalidOp, ErrNotFound, ts.name, op.Index)
		}
		cut, on := e.cutoff(op.Cutoff)
		for j, b := range marks.order {
			keep := marks.keeps[j]
			for i := range keep {
				// The monitor's rule: a bucket of the rule whose expiry key
				// is at or before the cutoff; with PreciseExpiry, each
				// measurement at or before it.
				expired := on && e.member(b) && !ts.expiryKey(b).After(cut) &&
					(!ts.opts.PreciseExpiry || !b.timeAt(i).After(cut))
				if !expired {
					keep[i] = true
				}
			}
		}
		if len(ts.db.cfg.observe) > 0 {
			rem = &tsRemoved{timeField: ts.opts.TimeField, metaField: ts.opts.MetaField}
		}
	}
	n, removed, ids = ts.removeMarked(marks, rem)
	return n, removed, ids, rem, nil
}

// removeMarked removes the measurements marks lists, and returns the
// buckets deleted whole and the measurements removed; with rem, it records
// them there and returns their _id values. Call holding mu for writing.
func (ts *tsColl) removeMarked(marks *tsMarks, rem *tsRemoved) (n, removed int, ids []any) {
	for j, b := range marks.order {
		keep := marks.keeps[j]
		if rem != nil && slices.Contains(keep, false) {
			ids = rem.add(b, keep, ids)
		}
		removed += ts.keep(b, keep)
		if b.removed {
			n++
		}
	}
	return n, removed, ids
}

// applyMetaUpdate sets the meta value of the buckets an OpUpdate's keys
// name to that of its documents. Every measurement of each bucket must be
// named, each with the bucket's new meta value. The meta values' growth
// must fit the memory limit outside recovery (mode other than
// modeReplay). Call holding mu for writing.
func (ts *tsColl) applyMetaUpdate(op *Op, mode applyMode) error {
	if len(op.Keys) != len(op.Docs) {
		return fmt.Errorf("%w: a time-series update has %d documents and %d keys", ErrInvalidOp, len(op.Docs), len(op.Keys))
	}
	marks, err := ts.locate(op.Keys)
	if err != nil {
		return err
	}
	order := marks.order
	for j, b := range order {
		if slices.Contains(marks.keeps[j], true) {
			return fmt.Errorf("%w: collection %q: a time-series update names only part of bucket %d", ErrInvalidOp, ts.name, b.seq)
		}
	}
	type change struct {
		meta    any
		hasMeta bool
		key     string
	}
	changes := map[*bucket]*change{}
	for i, d := range op.Docs {
		m, err := ts.splitMeasurement(d)
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		_, seq, _, _ := tsKeyOf(op.Keys[i])
		b, _ := ts.bucketBySeq(seq)
		ch := &change{meta: m.meta, hasMeta: m.hasMeta, key: m.metaKey}
		if prev, ok := changes[b]; ok {
			if prev.key != ch.key || prev.hasMeta != ch.hasMeta {
				return fmt.Errorf("%w: collection %q: two meta values for bucket %d", ErrInvalidOp, ts.name, seq)
			}
			continue
		}
		changes[b] = ch
	}
	if mode != modeReplay {
		var grow int64
		for b, ch := range changes {
			grow += metaGrowth(b, ch.hasMeta, ch.key)
		}
		if err := ts.reserveMeta(grow); err != nil {
			return err
		}
	}
	for _, b := range order {
		ch := changes[b]
		ts.detachExpiry(b)
		for _, ix := range ts.indexes {
			ix.remove(ts, b)
		}
		if ts.open[b.metaKey] == b {
			delete(ts.open, b.metaKey)
		}
		// The reopen tree and the meta's bytes follow the new meta key.
		if ts.reopen != nil {
			ts.reopen.Delete(b)
		}
		ts.untrack(b)
		b.meta, b.hasMeta, b.metaKey = ch.meta, ch.hasMeta, ch.key
		ts.track(b)
		ts.indexReopen(b)
		b.ver = ts.db.writes.Add(1)
		for _, ix := range ts.indexes {
			ix.add(ts, b)
		}
		ts.attachExpiry(b)
	}
	return nil
}
