package engine

import (
	"fmt"
	"slices"

	"github.com/ttldb/ttldb/internal/store"
)

// The interpreter of writes: the only functions that change an ordinary
// collection's documents and indexes. Every origin of a change goes
// through them — a local write (InsertOne, UpdateMany, FindOneAndDelete,
// BulkWrite, a TTL batch of the monitor, CreateIndex, DropIndex, CollMod),
// DB.Apply (a replica), the log's replay and a snapshot's load (recovery)
// — so that a replica and a restarted DB hold what the origin held: the
// same documents in the same natural order, with the same record
// versions, index entries, TTL entries and multikey flags.
//
// What differs between origins is the preparation, before these are
// called: a local write validates, encodes, computes keys and checks
// unique indexes and the memory budget; DB.Apply checks that the op
// applies to the DB as it is (strict); recovery trusts the log and the
// snapshot, which were checked when written, and is idempotent (replay:
// an insert of a stored _id replaces it, a deletion of a missing one is
// nothing; docs/FORMAT.md). The change itself is made here, once; an
// applyMode names the origin where a function's checks or idempotency
// rules depend on it.
//
// Time-series collections have their own interpreter (tsColl.placeAll,
// applyInsert, applyMetaUpdate, applyRemoval), shared in the same way by
// their writes, DB.Apply and recovery.
//
//	op kind                 function
//	OpInsert                collState.storeDoc
//	OpUpdate, OpReplace     collState.rewriteDoc (recovery: storeDoc)
//	OpDelete, OpExpire      collState.removeRecords (one: removeRecord)
//	OpCreateIndex           collState.buildIndex, then addIndex
//	OpDropIndex             collState.dropIndex
//	OpCollMod               collState.setIndexTTL

// applyMode is the origin of an op as the interpreter sees it. It decides
// only the checks and the idempotency rules of a change, never a different
// change: every mode stores, rewrites and removes through the same code.
type applyMode uint8

const (
	// modeLocal is a local write: validated and prepared by its method,
	// which checked the _id, the unique indexes and the memory budget.
	modeLocal applyMode = iota
	// modeApply is DB.Apply (a replica): strict, the op was checked
	// against the DB as it is and fails with ErrInvalidOp otherwise.
	modeApply
	// modeReplay is recovery (the log's replay, a snapshot's load):
	// idempotent as docs/FORMAT.md says, trusting what was checked when
	// it was written; memory is accounted once loaded.
	modeReplay
)

// mode is the origin of the change the collection is making: modeApply
// while DB.Apply changes it, modeLocal otherwise. Recovery passes
// modeReplay itself. Call holding writeMu.
func (s *collState) mode() applyMode {
	if s.applying {
		return modeApply
	}
	return modeLocal
}

// docWrite is one document an op stores, prepared by its origin: its _id
// key, its encoding, the TTL extra bytes the store keeps beside it, its
// index keys (one per index of the collection, in order) and its record
// version.
type docWrite struct {
	key, enc, extra []byte
	dk              docKeys
	ver             uint64
	hash            uint64 // the key's hash in the store, if known (0: not); recovery prefetches them
}

// storeDoc stores w as a new document: it takes the collection's next
// insertion sequence, joins the natural order and every index, and is
// counted. It returns the record, whose key, encoding and extra bytes are
// the store's copies (what outlives the call must refer to them, not to
// the caller's buffers), except in modeReplay, where they are w's.
//
// A local write or DB.Apply (modeLocal, modeApply) has checked that no
// stored document has w's _id. In modeReplay (recovery) one may: w then
// replaces it in place (rewriteDoc), as the log's replay is idempotent.
//
// Call holding writeMu and mu for writing; st is s.store().
func (s *collState) storeDoc(st *store.Store, w *docWrite, mode applyMode) record {
	rec := record{key: w.key, enc: w.enc, extra: w.extra, seq: s.nextSeq, ver: w.ver}
	if mode == modeReplay {
		// Recovery keeps none of the store's copies: rec keeps w's.
		var inserted bool
		if w.hash != 0 {
			rec.slot, inserted = st.InsertNewHashed(w.hash, w.key, w.enc, w.extra, s.nextSeq, w.ver)
		} else {
			rec.slot, inserted = st.InsertNew(w.key, w.enc, w.extra, s.nextSeq, w.ver)
		}
		if !inserted {
			cur := s.rec(rec.slot)
			return s.rewriteDoc(st, &cur, s.storedKeys(&cur), w)
		}
	} else {
		// The store's copies, for what outlives the call (the write's ops,
		// an index build's side table).
		var stored store.Record
		if w.hash != 0 {
			stored = st.InsertHashed(w.hash, w.key, w.enc, w.extra, s.nextSeq, w.ver)
		} else {
			stored = st.Record(st.Insert(w.key, w.enc, w.extra, s.nextSeq, w.ver))
		}
		rec.slot, rec.key, rec.enc, rec.extra = stored.Slot, stored.Key, stored.Doc, stored.Extra
		if s.snapshotsOpen() {
			s.keepBefore(rec.key, nil) // it did not exist
		}
	}
	s.nextSeq++
	s.natural.push(natItem{seq: rec.seq, slot: rec.slot})
	s.noteWrite(nil, &rec)
	s.addToIndexes(&rec, w.dk)
	s.bytes += int64(len(w.enc))
	return rec
}

// rewriteDoc stores w in place of the stored document cur (an update or a
// replacement): the new version keeps cur's slot, insertion sequence and
// _id key, and readers holding the old version keep it unchanged. oldKeys
// are cur's index keys (storedKeys). It returns the new record, whose
// encoding is w's.
//
// Call holding writeMu and mu for writing; st is s.store().
func (s *collState) rewriteDoc(st *store.Store, cur *record, oldKeys docKeys, w *docWrite) record {
	if s.snapshotsOpen() {
		s.keepBefore(cur.key, cur)
	}
	s.removeFromIndexes(cur, oldKeys)
	nr := record{slot: cur.slot, seq: cur.seq, key: cur.key, enc: w.enc, extra: w.extra, ver: w.ver}
	s.bytes += int64(len(nr.enc) - len(cur.enc))
	st.Update(nr.slot, nr.enc, nr.extra, nr.ver)
	s.noteWrite(cur, &nr)
	s.addToIndexes(&nr, w.dk)
	return nr
}

// removeRecords deletes recs (distinct stored documents) from every
// structure: the natural order, the indexes, the TTL trees, the byte
// count, then the store, which they leave together (one hold of each _id
// shard's lock for the batch: a TTL batch deletes hundreds per hold).
//
// Call holding writeMu and mu for writing.
func (s *collState) removeRecords(recs []record) {
	if s.snapshotsOpen() {
		for i := range recs {
			s.keepBefore(recs[i].key, &recs[i])
		}
	}
	if len(recs) == 1 {
		s.unindexRecord(&recs[0])
		s.store().Delete(recs[0].slot) // last: the key and bytes above are read from it
		return
	}
	slots := s.delSlots[:0]
	for i := range recs {
		s.unindexRecord(&recs[i])
		slots = append(slots, recs[i].slot)
	}
	s.store().DeleteMany(slots)
	s.delSlots = slots[:0]
}

// removeRecord is removeRecords of one record.
func (s *collState) removeRecord(rec *record) {
	s.removeRecords([]record{*rec})
}

// addIndex makes ix, built over the stored documents (buildIndex, or an
// index build that caught up with the writes), one of the collection's
// indexes, after the others. An index of the same name is replaced: only
// recovery meets one (a local write and DB.Apply refused it before).
//
// Call holding writeMu, not mu.
func (s *collState) addIndex(ix *index) {
	s.mu.Lock()
	s.indexes = append(slices.DeleteFunc(slices.Clone(s.indexes), func(o *index) bool { return o.name == ix.name }), ix)
	s.mu.Unlock()
}

// dropIndex removes the index called name, reporting whether there was
// one. Call holding writeMu, not mu.
func (s *collState) dropIndex(name string) bool {
	i := slices.IndexFunc(s.indexes, func(ix *index) bool { return ix.name == name })
	if i < 0 {
		return false
	}
	s.mu.Lock()
	s.indexes = slices.Delete(slices.Clone(s.indexes), i, i+1)
	s.mu.Unlock()
	return true
}

// buildIndex fills ix's trees from the documents stored, synchronously:
// the collection's writers wait (DB.Apply and recovery, which are them).
// A local CreateIndex builds while writes go on (indexBuild.run) with the
// same scan. It checks no unique index: the caller does (indexBuild's
// checkUnique; recovery's checkLoadedUnique once everything is loaded).
//
// Call holding writeMu.
func (s *collState) buildIndex(ix *index) (*indexBuild, error) {
	s.nextIx++
	ix.id = s.nextIx
	b := &indexBuild{s: s, ix: ix, snapshot: s.nextSeq, done: make(chan struct{})}
	return b, b.scan()
}

// setIndexTTL sets index ix's expireAfterSeconds to secs (OpCollMod). An
// index that is not a TTL index becomes one, keeping its place, name and
// id: its TTL tree is built from the stored documents and, unless it is
// unique, its key tree goes, as CreateIndex makes a TTL index (newIndex).
// So it is what a snapshot, which records the index's definition, loads
// again. It returns the
// value before (nil: ix was not a TTL index). Outside recovery (mode
// other than modeReplay), the new tree must fit the memory budget (ErrMemoryLimit). where
// names the call in errors.
//
// Call holding writeMu, not mu.
func (s *collState) setIndexTTL(where string, ix *index, secs int32, mode applyMode) (old *int32, err error) {
	if ix.ttl != nil {
		return Seconds(int32(ix.ttl.expireAfter.Swap(int64(secs)))), nil
	}
	ttl, err := newTTLIndex(fmt.Sprintf("%s index %q", where, ix.name),
		IndexModel{Keys: ix.keys, ExpireAfterSeconds: &secs}, s.opts.Capped)
	if err != nil {
		return nil, err
	}
	s.natural.Ascend(func(it natItem) bool {
		rec := s.rec(it.slot)
		if ix.partial == nil || ix.partial.Matches(rec.document()) {
			if k := ttl.keyOfStored(rec.enc); k.ok {
				ttl.addEntry(entryFor(k.date, &rec), k)
			}
		}
		return true
	})
	cost := int64(0)
	if mode != modeReplay {
		// Recovery accounts every collection's memory once loaded
		// (loader.finishLoad).
		cost = treeBytes(ttl.expiry.Len(), expiryEntrySize, treeFactorDates) + ttl.counts.bytes()
		if err := s.reserve(cost); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	ix.ttl = ttl
	if !ix.unique {
		ix.tree, ix.keyBytes = nil, 0
	}
	s.mu.Unlock()
	if mode != modeReplay {
		s.settleMemory(cost)
	}
	return nil, nil
}
