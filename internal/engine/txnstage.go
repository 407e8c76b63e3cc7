package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
	"github.com/ttldb/ttldb/internal/store"
)

// A transaction's writes run the collection's write methods as any write
// does (matching, updates, upserts, validation, results), holding the
// collection's write lock; where a write would change the store, it
// stages the change in the transaction instead (collState.txw): the
// change's document in the transaction's overlay, its op in the
// transaction's list, its document's key in the DB's lock table. Nothing
// is visible outside the transaction until the commit (txncommit.go)
// applies the list.

// stagedWrite is one change a transaction will commit, in order: an
// insert, update or replacement of the document enc (the transaction's
// copy), or the deletion of the document of key.
type stagedWrite struct {
	coll   string
	kind   OpKind // OpInsert, OpUpdate, OpReplace, OpDelete
	key    []byte
	id     string      // key as a string: the overlay's and the lock table's key
	enc    []byte      // the new document (not OpDelete)
	extra  []byte      // its TTL extra bytes, under HideExpired (the view hides it by them)
	update RawDocument // OpUpdate: the update as applied, for change events
}

// txnWrite is a transaction's write running in one collection.
type txnWrite struct {
	t    *txn
	v    *txnView // &view
	view txnView
	// replaceKind and update describe the next replaceEncoded, as
	// opRecorder's do.
	replaceKind OpKind
	update      RawDocument
	// after is the document the last staged insert, update or
	// replacement left (FindOneAnd*'s After).
	after []byte
}

// writeInTxn runs fn, a write of c, inside t: holding the collection's
// write lock, with the transaction's view (collState.txw), so that the
// write stages its changes. A write that fails aborts t (a write error
// ends a MongoDB transaction too); a conflict or a limit gets its label.
func (c *Collection) writeInTxn(t *txn, fn func(*collState) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usableLocked(); err != nil {
		return err
	}
	if err := c.db.writable(); err != nil {
		return err
	}
	t.beginReadLocked()
	s, err := c.db.state(c.name, true)
	if err != nil {
		return err
	}
	if err := s.inTxnAllowed(); err != nil {
		return err
	}
	if err := s.lockForegroundWrite(); err != nil {
		return err
	}
	// One txnWrite per transaction, reset for each write.
	w := &t.w
	*w = txnWrite{t: t, view: t.viewOf(s)}
	w.v = &w.view
	s.txw = w
	err = fn(s)
	s.txw = nil
	s.writeMu.Unlock()
	if err != nil {
		if !errors.Is(err, ErrWriteConflict) && !errors.Is(err, ErrTransactionLimit) {
			t.abortLocked(abortByError)
			return err
		}
		return t.failLocked(err)
	}
	return nil
}

// writeFor runs fn, a write of c with ctx: inside the transaction ctx
// carries (writeInTxn), else as its own write, made durable by the caller
// (durableByCaller: writeDurableByCallerCtx) or here (Collection.write).
// A function rather than a returned closure: the write path allocates
// nothing for the choice.
func (c *Collection) writeFor(ctx context.Context, durableByCaller bool, fn func(*collState) error) (err error) {
	if t := txnIn(ctx, c.db); t != nil {
		return c.writeInTxn(t, fn)
	}
	if !durableByCaller && c.db.persist != nil {
		defer c.db.durable(&err)
	}
	return c.writeDurableByCallerCtx(ctx, fn)
}

// inTxnAllowed refuses the collections a transaction cannot write or read
// (as MongoDB: time-series and capped collections).
func (s *collState) inTxnAllowed() error {
	switch {
	case s.ts != nil:
		return fmt.Errorf("%w: collection %q is a time-series collection", ErrNotInTransaction, s.name)
	case s.opts.Capped:
		return fmt.Errorf("%w: collection %q is capped", ErrNotInTransaction, s.name)
	}
	return nil
}

// stage adds one change to the transaction: its document's key is locked
// (ErrWriteConflict if another transaction holds it, or a commit changed it
// since the snapshot), its bytes are counted against the limits and the
// memory budget, and the overlay shows its result.
func (w *txnWrite) stage(s *collState, sw stagedWrite, extra []byte) error {
	t, v := w.t, w.v
	if v.changedSince(sw.key) {
		return fmt.Errorf("%w: collection %q: document %v changed after the transaction's snapshot", ErrWriteConflict, s.name, keyID(sw))
	}
	if len(t.staged) >= t.db.txns.limits.MaxOps {
		return fmt.Errorf("%w: more than %d writes (TransactionLimits.MaxOps)", ErrTransactionLimit, t.db.txns.limits.MaxOps)
	}
	n := int64(len(sw.enc) + len(sw.key) + len(extra))
	if t.bytes+n > t.db.txns.limits.MaxBytes {
		return fmt.Errorf("%w: its documents pass %d bytes (TransactionLimits.MaxBytes)", ErrTransactionLimit, t.db.txns.limits.MaxBytes)
	}
	if limit := t.db.cfg.memLimit; limit > 0 && t.db.mem.Add(n) > limit {
		t.db.mem.Add(-n)
		return fmt.Errorf("collection %q: %w: the transaction needs %d more bytes, %d of %d are in use", s.name, ErrMemoryLimit, n, t.db.mem.Load(), limit)
	} else if limit == 0 {
		t.db.mem.Add(n)
	}
	t.bytes += n
	sw.id = string(sw.key)
	if err := t.db.txns.acquire(t, s.name, sw.id); err != nil {
		return err
	}
	sw.coll = s.name
	if t.staged == nil {
		t.staged = make([]stagedWrite, 0, 16)
	}
	t.staged = append(t.staged, sw)
	if t.over == nil {
		t.over = map[string]*overlay{}
	}
	t.staged[len(t.staged)-1].extra = extra
	ov := t.over[s.name]
	if ov == nil {
		ov = &overlay{t: t, coll: s, docs: map[string]int32{}}
		t.over[s.name] = ov
		v.ov = ov
	}
	ov.docs[sw.id] = int32(len(t.staged) - 1)
	if sw.kind != OpDelete {
		w.after = sw.enc
	}
	return nil
}

// keyID names a staged write's document in an error.
func keyID(sw stagedWrite) any {
	if sw.enc != nil {
		if d := codec.Decode(sw.enc); d != nil {
			return d["_id"]
		}
	}
	return fmt.Sprintf("%x", sw.key)
}

// ttlExtraOf returns the TTL extra bytes of a document: what HideExpired
// reads to hide it.
func (s *collState) ttlExtraOf(enc []byte, doc Document) ([]byte, error) {
	if !s.hideExpiredActive() {
		return nil, nil // no read hides anything: the commit computes the keys
	}
	dk, err := s.computeKeys(&docRef{rec: record{enc: enc}, doc: doc})
	if err != nil {
		return nil, err
	}
	return s.appendTTLExtra(nil, dk, enc), nil
}

// stageInserts is insertPrepared inside a transaction.
func (w *txnWrite) stageInserts(s *collState, docs []newDoc) error {
	for i, d := range docs {
		ref := &docRef{rec: record{enc: d.enc}, doc: d.doc}
		if s.validator != nil {
			if err := s.validator.Validate(ref.get()); err != nil {
				return &docIndexError{index: i, err: fmt.Errorf("collection %q: %w", s.name, err)}
			}
		}
		t := w.t
		kb, err := appendIDKey(t.scratch[:0], d.id)
		t.scratch = kb[:0]
		if err != nil {
			return &docIndexError{index: i, err: fmt.Errorf("collection %q: %w", s.name, err)}
		}
		if w.idTaken(kb) {
			return &docIndexError{index: i, err: &DuplicateKeyError{Collection: s.name, Index: idIndexName, Key: d.id}}
		}
		key := t.keep(kb)
		enc := t.keep(d.enc)
		extra, err := s.ttlExtraOf(enc, d.doc)
		if err != nil {
			return &docIndexError{index: i, err: err}
		}
		if err := store.CheckSize(len(key), len(enc), len(extra)); err != nil {
			return &docIndexError{index: i, err: fmt.Errorf("collection %q: %w: %w", s.name, ErrInvalidDocument, err)}
		}
		if err := w.stage(s, stagedWrite{kind: OpInsert, key: key, enc: enc}, extra); err != nil {
			return err
		}
	}
	return nil
}

// idTaken reports whether an insert of key in the transaction meets a
// document: one the view sees, or an expired document HideExpired hides
// but the monitor has not deleted yet (outside a transaction, the write
// would delete it first, through the expire hooks; inside one, the insert
// fails).
func (w *txnWrite) idTaken(key []byte) bool {
	if _, present, decided := w.v.versionAt(key); decided {
		return present
	}
	_, ok := w.v.s.store().Lookup(key)
	return ok
}

// stageReplaces is replaceEncoded inside a transaction: refs (found
// through the view) get newDocs (nil: unchanged). It returns how many
// changed.
func (w *txnWrite) stageReplaces(s *collState, refs []*docRef, newDocs []Document) (int, error) {
	n := 0
	kind := w.replaceKind
	if kind == 0 {
		kind = OpUpdate
	}
	for i, ref := range refs {
		nd := newDocs[i]
		if nd == nil {
			continue
		}
		id := ref.get()["_id"]
		if query.Compare(nd["_id"], id) != 0 {
			return n, fmt.Errorf("collection %q: document %v: %w: %w", s.name, id, ErrInvalidUpdate, ErrImmutableID)
		}
		if err := s.validator.Validate(nd); err != nil {
			return n, fmt.Errorf("collection %q: document %v: %w", s.name, id, err)
		}
		enc, err := codec.Encode(nd, nil)
		if err != nil {
			return n, fmt.Errorf("collection %q: document %v: %w", s.name, id, err)
		}
		extra, err := s.ttlExtraOf(enc, nd)
		if err != nil {
			return n, fmt.Errorf("document %v: %w", id, err)
		}
		key := w.t.keep(ref.rec.key)
		if err := store.CheckSize(len(key), len(enc), len(extra)); err != nil {
			return n, fmt.Errorf("collection %q: document %v: %w: %w", s.name, id, ErrInvalidDocument, err)
		}
		sw := stagedWrite{kind: kind, key: key, enc: enc}
		if kind == OpUpdate {
			sw.update = w.update
		}
		if err := w.stage(s, sw, extra); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// stageDeletes is the deletion of refs (found through the view) inside a
// transaction.
func (w *txnWrite) stageDeletes(s *collState, refs []*docRef) error {
	for _, ref := range refs {
		key := w.t.keep(ref.rec.key)
		if err := w.stage(s, stagedWrite{kind: OpDelete, key: key}, nil); err != nil {
			return err
		}
	}
	return nil
}

// removeFound deletes the records a write found (DeleteOne, DeleteMany,
// FindOneAndDelete), or stages their deletion inside a transaction. Call
// holding writeMu.
func (s *collState) removeFound(refs []*docRef) error {
	if w := s.txw; w != nil {
		return w.stageDeletes(s, refs)
	}
	if err := s.waitForTxns(refs); err != nil {
		return err
	}
	s.mu.Lock()
	for _, ref := range refs {
		s.removeRecord(&ref.rec)
	}
	s.mu.Unlock()
	if r := s.oprec; r != nil {
		recs := make([]record, len(refs))
		for i, ref := range refs {
			recs[i] = ref.rec
		}
		r.deleted(s, recs)
	}
	s.settleMemory(0)
	return nil
}

// waitForTxns returns a txnWaitError if an open transaction holds one of
// refs' documents: a write outside any transaction waits for it to end,
// then runs again. Call holding writeMu.
func (s *collState) waitForTxns(refs []*docRef) error {
	if s.db.txns.nlocked.Load() == 0 {
		return nil
	}
	for _, ref := range refs {
		if err := s.waitForKey(ref.rec.key); err != nil {
			return err
		}
	}
	return nil
}

// waitForKey is waitForTxns of one _id key.
func (s *collState) waitForKey(key []byte) error {
	if h := s.db.txns.holder(s.name, key, nil); h != nil {
		return &txnWaitError{t: h}
	}
	return nil
}

// refuse returns the error of an operation t cannot contain, on what (a
// collection's kind, or the operation).
func (t *txn) refuse(coll, what string) error {
	return fmt.Errorf("%w: collection %q: %s", ErrNotInTransaction, coll, what)
}

// refuseIn returns ErrNotInTransaction if ctx carries an open transaction
// of c's DB: op (an index or collection change, Watch,
// EstimatedDocumentCount) cannot run inside one.
func (c *Collection) refuseIn(ctx context.Context, op string) error {
	if t := txnIn(ctx, c.db); t != nil {
		return t.refuse(c.name, op)
	}
	return nil
}

// refuseTxn returns ErrNotInTransaction if ctx carries an open transaction
// of db: op changes indexes, collections or the DB, or watches, which a
// transaction cannot contain (as in MongoDB).
func (db *DB) refuseTxn(ctx context.Context, op string) error {
	if t := txnIn(ctx, db); t != nil {
		return fmt.Errorf("%w: %s", ErrNotInTransaction, op)
	}
	return nil
}

// txnArenaChunk is the largest chunk a transaction copies its staged keys
// and documents into (txn.keep).
const txnArenaChunk = 32 << 10

// keep returns a copy of b in the transaction's arena: chunks of memory
// that are only appended to, never rewritten, so that the copies stay as
// they are for as long as anything holds them (the staged writes, then
// the committed ops), at one allocation per chunk rather than per copy.
func (t *txn) keep(b []byte) []byte {
	if len(b) > txnArenaChunk/4 {
		return append([]byte(nil), b...)
	}
	if cap(t.arena)-len(t.arena) < len(b) {
		// Chunks double from 512 bytes: a small transaction takes little.
		size := min(max(2*cap(t.arena), 512, 2*len(b)), txnArenaChunk)
		t.arena = make([]byte, 0, size)
	}
	at := len(t.arena)
	t.arena = append(t.arena, b...)
	return t.arena[at:len(t.arena):len(t.arena)]
}
