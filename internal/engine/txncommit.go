package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ttldb/ttldb/internal/store"
)

// TxnID identifies the transaction an op was committed by: its session's
// id (lsid, a UUID) and the transaction's number in the session
// (txnNumber), as MongoDB's oplog entries and change events carry them.
// The zero TxnID: the op was committed by a write outside any
// transaction.
type TxnID struct {
	LSID   [16]byte
	Number int64
}

// IsZero reports whether id is the zero TxnID.
func (id TxnID) IsZero() bool { return id == TxnID{} }

// txnChange is one change of a transaction being applied: the staged
// write (or the op) resolved against the collection it changes.
type txnChange struct {
	s      *collState
	kind   OpKind
	key    []byte
	id     string // key, as a string
	cur    int    // the document's entry in applyTxnChanges' states
	enc    []byte // the new document (not OpDelete)
	update RawDocument
	dk     docKeys
	extra  []byte
	ver    uint64
	base   record // the document the change replaces or deletes
}

// commit implements Session.CommitTransaction for t. Call holding the
// session's mu.
func (t *txn) commit(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.state {
	case txnCommitted:
		return nil // committed before: a retried commit reports it
	case txnCommitUnknown:
		return t.retryCommitLocked(ctx)
	}
	if err := t.usableLocked(); err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return err // the transaction stays open: commit again, or abort
	}
	// The commit reads no snapshot: with no other open, its changes keep
	// no versions.
	t.db.txns.releaseSnapshot(t)
	start := t.db.clock.Now()
	if len(t.staged) == 0 {
		t.state = txnCommitted
		t.db.txns.end(t, true, 0)
		t.db.txns.observeCommit(t.db.clock.Now().Sub(start))
		return nil
	}
	end, err := t.db.beginWrite()
	if err != nil {
		// Not the primary (or closed): nothing was applied.
		t.abortLocked(abortByError)
		return transient(fmt.Errorf("commit of transaction %d: %w", t.number, err))
	}
	seq, err := t.db.commitTxn(t)
	if err != nil {
		_ = end(err)
		if errors.Is(err, ErrWriteConflict) {
			t.abortLocked(abortByConflict)
			return transient(err)
		}
		t.abortLocked(abortByError)
		return err
	}
	// Applied and visible: the transaction holds nothing any more.
	t.state, t.commitSeq = txnCommitted, seq
	t.db.txns.end(t, true, 0)
	t.staged, t.over = nil, nil
	err = end(nil)
	if err == nil {
		t.db.durable(&err)
	}
	if err != nil {
		t.state = txnCommitUnknown
		t.commitErr = err
		return &LabeledError{Labels: []string{UnknownTransactionCommitResultLabel}, Err: fmt.Errorf("commit of transaction %d: %w", t.number, err)}
	}
	t.db.txns.observeCommit(t.db.clock.Now().Sub(start))
	return nil
}

// retryCommitLocked is a commit called again after one whose outcome was
// unknown. With a Replicator that resolves commits (CommitResolver), it
// reports the outcome once the replicated log decided it: nil if the
// transaction committed (never a second time), or the transaction aborted
// with TransientTransactionErrorLabel if it did not (run it again, on the
// DB that follows the log now). Otherwise, or while the outcome is not
// known, the first error again, with UnknownTransactionCommitResultLabel;
// without a CommitResolver, the first error without the label (nothing
// will settle it).
func (t *txn) retryCommitLocked(ctx context.Context) error {
	if r, ok := t.db.cfg.replicator.(CommitResolver); ok { // asked even when the DB was closed since
		if ctx == nil {
			ctx = context.Background()
		}
		committed, err := r.ResolveCommit(ctx, TxnID{LSID: t.sess.id, Number: t.number})
		switch {
		case err == nil && committed:
			t.state = txnCommitted
			return nil
		case err == nil:
			t.state, t.cause = txnAborted, abortByError
			return transient(fmt.Errorf("%w: transaction %d was not committed: %w", ErrNoTransaction, t.number, t.commitErr))
		}
		return &LabeledError{Labels: []string{UnknownTransactionCommitResultLabel}, Err: fmt.Errorf("commit of transaction %d: %w (outcome: %w)", t.number, t.commitErr, err)}
	}
	// Nothing can settle it here (the log failed: the DB refuses writes
	// until it is reopened, which loads what the disk holds): the error,
	// without the label, so that WithTransaction stops retrying.
	return fmt.Errorf("commit of transaction %d: its outcome is unknown and cannot be settled: %w", t.number, t.commitErr)
}

// commitTxn applies t's staged writes as one change of every collection
// they touch and commits their ops as one group (one log record, one
// replicated entry). It returns the Seq of the group's last op (0: no
// sink wanted ops). On error nothing changed.
func (db *DB) commitTxn(t *txn) (uint64, error) {
	var names []string
	for _, sw := range t.staged {
		if !slices.Contains(names, sw.coll) {
			names = append(names, sw.coll)
		}
	}
	slices.Sort(names) // the order a transaction takes collections' locks in
	states := map[string]*collState{}
	var locked []*collState
	defer func() {
		for _, s := range slices.Backward(locked) {
			s.writeMu.Unlock()
		}
	}()
	for _, name := range names {
		s, err := db.state(name, false)
		if err != nil {
			return 0, err
		}
		if s == nil || s != t.over[name].coll || s.lockForegroundWrite() != nil {
			// Dropped (and maybe created again) since the transaction
			// wrote in it: what it staged was against the old one.
			return 0, fmt.Errorf("%w: collection %q was dropped during the transaction", ErrWriteConflict, name)
		}
		locked = append(locked, s)
		states[name] = s
	}
	changes := make([]txnChange, len(t.staged))
	for i, sw := range t.staged {
		changes[i] = txnChange{s: states[sw.coll], kind: sw.kind, key: sw.key, id: sw.id, enc: sw.enc, update: sw.update}
	}
	id := TxnID{LSID: t.sess.id, Number: t.number}
	return db.applyTxnChanges(id, changes, locked, nil, modeLocal, db.clock.Now())
}

// applyTxnChanges checks changes against the collections (locked: their
// writeMu held, in name order), then applies them under every one's mu at
// once, so that no reader sees part of them, and commits their ops as one
// group. applied, for DB.Apply, are the ops being applied (their Seqs and
// versions are kept); nil for a local commit, whose ops are built here.
func (db *DB) applyTxnChanges(id TxnID, changes []txnChange, locked []*collState, applied []Op, mode applyMode, now time.Time) (uint64, error) {
	fail := func(format string, args ...any) error {
		err := fmt.Errorf(format, args...)
		if mode == modeApply {
			return fmt.Errorf("%w: %w", ErrInvalidOp, err)
		}
		return fmt.Errorf("%w: %w", ErrWriteConflict, err)
	}
	// The state each change meets, from the live one on.
	type cur struct {
		s       *collState
		rec     record
		present bool
		owner   int64 // the live document's slot, or -1-i for the i-th change's new one
		last    int   // the last change of the document
	}
	type stateKey struct {
		s   *collState
		key string
	}
	at := make(map[stateKey]int, len(changes)) // index in curs
	curs := make([]cur, 0, len(changes))
	// The changes' index keys and TTL extra bytes share one slice and one
	// buffer (the store copies the bytes), not an allocation each.
	nk := 0
	for i := range changes {
		nk += len(changes[i].s.indexes)
	}
	dks := make([]indexKeys, nk)
	extras := make([]byte, 0, 16*nk) // room for a typical TTL entry per index; more grows it (earlier extras keep the old array)
	for i := range changes {
		ch := &changes[i]
		s := ch.s
		j, seen := at[stateKey{s, ch.id}]
		if !seen {
			j = len(curs)
			at[stateKey{s, ch.id}] = j
			curs = append(curs, cur{s: s, owner: -1 - int64(i)})
		}
		ch.cur = j
		c := &curs[j]
		if !seen {
			if ch.kind == OpInsert {
				// Only its absence matters. A local commit knows it: the
				// transaction holds the _id since it found it free in its
				// snapshot, and no write takes a held _id (they wait).
				if mode == modeApply {
					_, c.present = s.store().Lookup(ch.key)
				}
			} else if c.rec, c.present = s.lookup(ch.key); c.present {
				c.owner = int64(c.rec.slot)
			}
		}
		switch {
		case ch.kind == OpInsert && c.present:
			return 0, fail("collection %q: an inserted document's _id is stored already", s.name)
		case ch.kind != OpInsert && !c.present:
			return 0, fail("collection %q: a document the transaction changes is missing", s.name)
		}
		ch.base, c.last = c.rec, i
		if ch.kind != OpDelete {
			n := len(s.indexes)
			dk, err := s.computeKeysInto(dks[:n:n], &docRef{rec: record{enc: ch.enc}})
			if err != nil {
				return 0, err
			}
			dks = dks[n:]
			start := len(extras)
			extras = s.appendTTLExtra(extras, dk, ch.enc)
			ch.dk, ch.extra = dk, extras[start:len(extras):len(extras)]
			if err := store.CheckSize(len(ch.key), len(ch.enc), len(ch.extra)); err != nil {
				return 0, fmt.Errorf("collection %q: %w: %w", s.name, ErrInvalidDocument, err)
			}
			c.rec = record{key: ch.key, enc: ch.enc, extra: ch.extra}
			c.present = true
		} else {
			c.present = false
		}
	}
	// Unique indexes, on the state the changes leave.
	// What each collection's change adds up to (locked's order).
	type collChange struct {
		uc       *uniqueCheck
		cost     int64
		earliest time.Time
	}
	per := make([]collChange, len(locked))
	pos := func(s *collState) int { return slices.Index(locked, s) }
	for i, s := range locked {
		per[i].uc = newUniqueCheck(s)
	}
	for _, c := range curs {
		if uc := per[pos(c.s)].uc; uc != nil && c.owner >= 0 {
			uc.batch[store.Slot(c.owner)] = true
		}
	}
	for i := range changes {
		ch := &changes[i]
		c := &curs[ch.cur]
		if ch.kind == OpDelete || c.last != i {
			continue // not the change that leaves the document's final state
		}
		if err := per[pos(ch.s)].uc.add(c.owner, ch.dk); err != nil {
			return 0, err
		}
	}
	// Memory: what the new versions add, reserved per collection. The
	// insertion sequences and versions they take stay in the store's
	// bound.
	inserts := make([]int, len(locked))
	versions := 0
	for i := range changes {
		ch := &changes[i]
		if ch.kind != OpDelete {
			per[pos(ch.s)].cost += store.UpdateCost(len(ch.key), len(ch.enc), len(ch.extra)) + ch.s.keysCost(ch.dk)
			versions++
		}
		if ch.kind == OpInsert {
			inserts[pos(ch.s)]++
		}
	}
	for i, s := range locked {
		if err := s.checkCounters(inserts[i], 0); err != nil {
			return 0, err
		}
	}
	if applied == nil {
		if err := db.checkNewVersions(versions); err != nil {
			return 0, err
		}
	}
	for i, s := range locked {
		if err := s.reserve(per[i].cost); err != nil {
			for _, r := range per[:i] {
				db.mem.Add(-r.cost)
			}
			return 0, err
		}
	}
	// Versions: the ops' when applying them, new ones otherwise.
	for i := range changes {
		ch := &changes[i]
		if ch.kind == OpDelete {
			continue
		}
		if applied != nil {
			ch.ver = applied[i].Versions[0]
			db.raiseVersions(ch.ver)
		} else {
			ch.ver = db.writes.Add(1)
		}
	}
	// Apply, holding every collection's mu.
	var natFrom map[string]uint64
	if applied != nil || db.ops.opsWanted() {
		natFrom = make(map[string]uint64, len(locked))
		for _, s := range locked {
			natFrom[s.name] = s.nextSeq
		}
	}
	var stamp uint64
	for _, s := range locked {
		s.mu.Lock()
	}
	if db.txns.nsnap.Load() > 0 {
		stamp = db.txns.clock.Add(1) // one instant for the whole transaction
	} else {
		// No snapshot open: a snapshot taken while the changes apply (its
		// reads wait for these locks) is at least this tick, so the
		// versions kept for it are before it, and it sees the whole
		// transaction. Unstamped, each would get a later tick of its own,
		// and the snapshot would see the changes applied before it opened
		// but not those after: part of the transaction.
		stamp = max(db.txns.clock.Load(), 1)
	}
	for _, s := range locked {
		s.undoTS = stamp
	}
	for i := range changes {
		ch := &changes[i]
		s := ch.s
		st := s.store()
		switch ch.kind {
		case OpInsert:
			w := docWrite{key: ch.key, enc: ch.enc, extra: ch.extra, dk: ch.dk, ver: ch.ver}
			s.storeDoc(st, &w, modeLocal)
			e := &per[pos(s)].earliest
			*e = s.earliestThreshold(ch.dk, *e)
		case OpUpdate, OpReplace:
			rec, _ := s.lookup(ch.key)
			w := docWrite{enc: ch.enc, extra: ch.extra, dk: ch.dk, ver: ch.ver}
			s.rewriteDoc(st, &rec, s.storedKeys(&rec), &w)
			e := &per[pos(s)].earliest
			*e = s.earliestThreshold(ch.dk, *e)
		case OpDelete:
			rec, _ := s.lookup(ch.key)
			s.removeRecords([]record{rec})
		}
	}
	for _, s := range slices.Backward(locked) {
		s.undoTS = 0
		s.mu.Unlock()
	}
	for i, s := range locked {
		s.settleMemory(per[i].cost)
		db.monitor.notifyThreshold(per[i].earliest)
	}
	db.txns.noteApplied(id)
	// The ops, one group.
	if applied != nil {
		return applied[len(applied)-1].Seq, db.ops.commitAppliedGroup(applied, natFrom)
	}
	if !db.ops.opsWanted() {
		return 0, nil
	}
	pre := db.ops.preImagesWanted()
	opAt := opTime(now)
	ops := make([]Op, len(changes))
	for i := range changes {
		ch := &changes[i]
		op := Op{Kind: ch.kind, Collection: ch.s.name, Time: opAt, Txn: id}
		switch ch.kind {
		case OpDelete:
			op.Keys = recordKeys([]record{ch.base})
			if pre {
				op.Before = []RawDocument{ch.base.enc}
			}
		default:
			op.Docs, op.Versions = []RawDocument{ch.enc}, []uint64{ch.ver}
			if ch.kind == OpUpdate && ch.update != nil {
				op.Updates = []RawDocument{ch.update}
			}
			if pre && ch.kind != OpInsert {
				op.Before = []RawDocument{ch.base.enc}
			}
		}
		ops[i] = op
	}
	return db.ops.commitGroup(ops, natFrom), nil
}

// applyTxnOps is DB.Apply of the ops of one transaction (consecutive ops
// with the same Txn): applied as one change of every collection they
// touch, as the primary committed them. Call holding applyMu.
func (db *DB) applyTxnOps(ops []Op) error {
	var names []string
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case OpInsert, OpUpdate, OpReplace:
			if len(op.Docs) != 1 || len(op.Versions) != 1 {
				return fmt.Errorf("%w: op %d: a transaction's %s op holds one document and its version", ErrInvalidOp, op.Seq, op.Kind)
			}
			if err := checkVersions(op); err != nil {
				return fmt.Errorf("op %d: %w", op.Seq, err)
			}
		case OpDelete:
			if len(op.Keys) != 1 {
				return fmt.Errorf("%w: op %d: a transaction's delete op holds one key", ErrInvalidOp, op.Seq)
			}
		default:
			return fmt.Errorf("%w: op %d: a transaction holds no %s op", ErrInvalidOp, op.Seq, op.Kind)
		}
		if !slices.Contains(names, op.Collection) {
			names = append(names, op.Collection)
		}
	}
	slices.Sort(names) // (Apply checked the ops' sequence numbers)
	states := map[string]*collState{}
	var locked []*collState
	defer func() {
		for _, s := range slices.Backward(locked) {
			s.writeMu.Unlock()
		}
	}()
	for _, name := range names {
		db.mu.RLock()
		s := db.collections[name]
		db.mu.RUnlock()
		if s == nil {
			return fmt.Errorf("%w: %w: no collection %q", ErrInvalidOp, ErrNotFound, name)
		}
		if s.ts != nil {
			return fmt.Errorf("%w: collection %q: a transaction cannot change a time-series collection", ErrInvalidOp, name)
		}
		if err := s.lockWrite(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidOp, err)
		}
		locked = append(locked, s)
		states[name] = s
	}
	changes := make([]txnChange, len(ops))
	for i := range ops {
		op := &ops[i]
		s := states[op.Collection]
		ch := txnChange{s: s, kind: op.Kind}
		var err error
		if op.Kind == OpDelete {
			_, ch.key, err = checkedID(op.Keys[0])
		} else {
			ch.enc = op.Docs[0]
			_, ch.key, err = checkedID(op.Docs[0])
			if op.Kind == OpUpdate && len(op.Updates) == 1 {
				ch.update = op.Updates[0]
			}
		}
		if err != nil {
			return fmt.Errorf("op %d: %w", op.Seq, err)
		}
		ch.id = string(ch.key)
		changes[i] = ch
	}
	_, err := db.applyTxnChanges(ops[0].Txn, changes, locked, ops, modeApply, time.Time{})
	return err
}
