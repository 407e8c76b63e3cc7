package engine

import (
	"context"
	"slices"
	"time"
)

// A transaction's view of a collection: the documents as they were at its
// snapshot (the live ones, or the versions that later changes replaced,
// kept in the collection's undo lists), under the transaction's own
// writes (its overlay). Reads of the transaction and the matching of its
// writes walk the collection's plans as any read does (execute), skipping
// the documents whose version is not the live one, then visit those
// versions (txnView.extras).

// undoVer is a version of a document that a change replaced while some
// snapshot was open: the record as it was (present false: the document
// did not exist, and the change inserted it), stamped with the change's
// tick of the undo clock.
type undoVer struct {
	ts      uint64
	present bool
	rec     record // key, enc, extra: the store's bytes, never rewritten (internal/store)
}

// keepBefore keeps the version of a document that a change is replacing,
// while a snapshot is open: before is the record (present) or nothing (the
// change inserts the document). The interpreter of writes calls it for
// every change (apply.go). Call holding writeMu and mu for writing.
func (s *collState) keepBefore(key []byte, before *record) {
	ts := s.undoTS
	if ts == 0 {
		ts = s.db.txns.clock.Add(1)
	}
	if s.undo == nil {
		s.undo = map[string][]undoVer{}
	}
	u := undoVer{ts: ts}
	if before != nil {
		u.present, u.rec = true, *before
	} else {
		u.rec.key = key
	}
	k := string(key)
	s.undo[k] = append(s.undo[k], u)
	s.undoLen.Add(1)
}

// snapshotsOpen reports whether changes must keep their versions.
func (s *collState) snapshotsOpen() bool { return s.db.txns.nsnap.Load() > 0 }

// pruneUndoLocked drops the versions stamped at or before bound. Call
// holding writeMu and mu.
func (s *collState) pruneUndoLocked(bound uint64) {
	n := int32(0)
	for k, list := range s.undo {
		i := 0
		for i < len(list) && list[i].ts <= bound {
			i++
		}
		n += int32(i)
		if i == len(list) {
			delete(s.undo, k)
		} else if i > 0 {
			s.undo[k] = slices.Clone(list[i:])
		}
	}
	if len(s.undo) == 0 {
		s.undo = nil
	}
	s.undoLen.Add(-n)
}

// readLiveForTest breaks snapshot isolation (a transaction then reads the
// live documents under its own writes): set only by the model test, to
// show that it catches the anomalies that follow.
var readLiveForTest bool

// overlay is a transaction's documents in one collection, by _id key: the
// state its staged writes leave each one in.
type overlay struct {
	t    *txn
	coll *collState       // the collection as the transaction staged in it
	docs map[string]int32 // _id key -> its last staged write (t.staged)
}

// doc returns the document the staged write i leaves (present false: a
// deletion).
func (ov *overlay) doc(i int32) (rec record, present bool) {
	sw := &ov.t.staged[i]
	if sw.kind == OpDelete {
		return record{}, false
	}
	return record{key: sw.key, enc: sw.enc, extra: sw.extra}, true
}

// txnView is a transaction's view of one collection for one operation.
type txnView struct {
	t    *txn
	s    *collState
	snap uint64
	ov   *overlay  // nil: the transaction wrote nothing here yet
	now  time.Time // the transaction's read time: HideExpired's instant
}

// view returns t's view of s. Call holding t.mu, with the snapshot taken.
func (t *txn) view(s *collState) *txnView {
	v := t.viewOf(s)
	return &v
}

// viewOf is view, by value.
func (t *txn) viewOf(s *collState) txnView {
	return txnView{t: t, s: s, snap: t.snap, ov: t.over[s.name], now: t.readTime}
}

// versionAt returns the version of the document of key that the view
// sees, if it is not the live one (decided false: read the live one).
// Call holding s's mu (or writeMu).
func (v *txnView) versionAt(key []byte) (rec record, present, decided bool) {
	if v.ov != nil {
		if i, ok := v.ov.docs[string(key)]; ok {
			rec, present := v.ov.doc(i)
			return rec, present, true
		}
	}
	if list, ok := v.s.undo[string(key)]; ok && !readLiveForTest {
		for i := range list {
			if list[i].ts > v.snap {
				return list[i].rec, list[i].present, true
			}
		}
	}
	return record{}, false, false
}

// changedSince reports whether a change committed after the snapshot
// touched the document of key: the transaction may not write it (first
// writer wins). Call holding writeMu.
func (v *txnView) changedSince(key []byte) bool {
	list := v.s.undo[string(key)]
	return len(list) > 0 && list[len(list)-1].ts > v.snap
}

// extras visits the versions the view sees in place of live ones (or of
// none): the transaction's own documents, then the replaced versions of
// documents changed since the snapshot. It stops when visit returns
// false, and reports whether it went through.
func (v *txnView) extras(visit func(rec record) bool) bool {
	if v.ov != nil {
		for _, i := range v.ov.docs {
			if rec, present := v.ov.doc(i); present && !visit(rec) {
				return false
			}
		}
	}
	for k, list := range v.s.undo {
		if readLiveForTest {
			break
		}
		if v.ov != nil {
			if _, mine := v.ov.docs[k]; mine {
				continue
			}
		}
		for i := range list {
			if list[i].ts > v.snap {
				if list[i].present && !visit(list[i].rec) {
					return false
				}
				break
			}
		}
	}
	return true
}

// lookupVisible returns the document of key as the view sees it (the
// live store when the view has no version of its own), hiding an
// expired one under HideExpired. Call holding writeMu or mu.
func (v *txnView) lookupVisible(key []byte) (record, bool) {
	rec, present, decided := v.versionAt(key)
	if !decided {
		rec, present = v.s.lookup(key)
	}
	if present && v.s.hideExpiredActive() && v.s.expiredAt(&docRef{rec: rec}, v.now) {
		return record{}, false
	}
	return rec, present
}

// txnReadLock begins a read of c inside the transaction ctx carries: t
// is nil when ctx carries none (read outside). Otherwise, when the
// collection exists (s not nil), it holds t.mu and s.mu for reading, with
// the transaction's view v of s: release them with t.readUnlock(s); when
// it does not (s nil) or on error, it holds nothing. It takes
// the transaction's snapshot if this is its first operation. A
// transaction reads no time-series or capped collection
// (ErrNotInTransaction); one that does not exist reads as empty. (A
// function pair, not a callback: a query the read runs stays on its
// caller's stack, so a read outside a transaction allocates nothing for
// this.)
func (c *Collection) txnReadLock(ctx context.Context) (t *txn, s *collState, v *txnView, err error) {
	t = txnIn(ctx, c.db)
	if t == nil {
		return nil, nil, nil, nil
	}
	t.mu.Lock()
	fail := func(err error) (*txn, *collState, *txnView, error) {
		t.mu.Unlock()
		return t, nil, nil, err
	}
	if err := t.usableLocked(); err != nil {
		return fail(err)
	}
	if c.timeSeries() != nil {
		return fail(t.refuse(c.name, "a time-series collection"))
	}
	t.beginReadLocked()
	if s, err = c.read(); err != nil {
		return fail(err)
	}
	if s == nil {
		t.mu.Unlock() // nothing to read: the caller releases nothing
		return t, nil, nil, nil
	}
	if err := s.inTxnAllowed(); err != nil {
		return fail(err)
	}
	s.rlock()
	return t, s, t.view(s), nil
}

// readUnlock releases what txnReadLock took.
func (t *txn) readUnlock(s *collState) {
	if s != nil {
		s.mu.RUnlock()
	}
	t.mu.Unlock()
}

// txnRun runs q, a Find, inside the transaction ctx carries: every
// result (collState.run's). inTxn is false when ctx carries none.
func (c *Collection) txnRun(ctx context.Context, q *findQuery) (docs []cursorDoc, inTxn bool, err error) {
	t, s, v, err := c.txnReadLock(ctx)
	if t == nil || err != nil || s == nil {
		return nil, t != nil, err
	}
	defer t.readUnlock(s)
	if err := s.applyHint(q); err != nil {
		return nil, true, err
	}
	q.ctx, q.view = ctx, v
	docs, _ = s.runLocked(q, v.now)
	return docs, true, scanError(c.name, q.err)
}

// txnExecute is txnRun calling visit for each match, in the walk's order
// (CountDocuments, Distinct).
func (c *Collection) txnExecute(ctx context.Context, q *findQuery, visit func(*docRef) bool) (inTxn bool, err error) {
	t, s, v, err := c.txnReadLock(ctx)
	if t == nil || err != nil || s == nil {
		return t != nil, err
	}
	defer t.readUnlock(s)
	if err := s.applyHint(q); err != nil {
		return true, err
	}
	q.view = v
	s.execute(s.plan(q), q, v.now, visit)
	return true, scanError(c.name, q.err)
}
