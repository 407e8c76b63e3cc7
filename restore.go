package ttldb

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	snapfile "github.com/ttldb/ttldb/internal/snapshot"
)

// Loading a DB from a snapshot and ops (a data directory's log, or the ops
// a snapshot captured while it was taken).
//
// Ops are applied idempotently, as a snapshot's documents need (see
// snapshot.go and docs/FORMAT.md): an insert, update or replacement
// stores its document whether or not the _id is present; a delete or TTL
// batch removes the documents present; a collection create starts the
// collection anew; index creates and drops go by name. Unique indexes are
// not checked while ops are applied (a snapshot may hold two documents
// copied at different moments with the same key, one of which a later op
// changes); finishLoad checks them once every op is in.
//
// A TTL batch deletes its documents without the re-check DB.Apply makes:
// after the batch, the document exists again only through a later op that
// stores it whole, so deleting whatever the loader holds under its _id
// converges whatever version of it the snapshot copied.
//
// Nothing here takes a lock: the DB is not yet shared.

// loader builds a DB's state.
type loader struct {
	db      *DB
	byID    map[uint32]*collState // collections by their number in the snapshot
	asOf    map[*collState]uint64 // time-series collections copied whole at a sequence number
	lastSeq uint64                // the last op applied (or the snapshot's end)
	maxVer  uint64                // the greatest record version met
	docs    int                   // documents loaded from the snapshot
	ops     int                   // ops applied
	salvage bool                  // accept gaps in the sequence (WithSalvage)
}

func newLoader(db *DB) *loader {
	return &loader{db: db, byID: map[uint32]*collState{}, asOf: map[*collState]uint64{}}
}

// corrupt wraps an error about loaded data with ErrCorrupt.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errs.ErrCorrupt}, args...)...)
}

// loadSnapshot reads a whole snapshot into the (empty) DB.
func (l *loader) loadSnapshot(r *snapfile.Reader) error {
	start := r.Header().StartSeq
	l.lastSeq = start
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch b.Kind {
		case snapfile.KindCollection:
			err = l.collection(b.Payload)
		case snapfile.KindDocs:
			var n int
			n, err = snapfile.ParseDocs(b.Payload, l.doc)
			l.docs += n
		case snapfile.KindBuckets:
			_, err = snapfile.ParseBuckets(b.Payload, l.bucket)
		case snapfile.KindOps:
			_, err = snapfile.ParseOps(b.Payload, func(raw []byte) error {
				var op Op
				if err := op.UnmarshalBinary(raw); err != nil {
					return corrupt("snapshot op: %v", err)
				}
				return l.apply(op)
			})
		}
		if err != nil {
			return fmt.Errorf("snapshot block at offset %d: %w", b.Offset, err)
		}
	}
	t, ok := r.Trailer()
	if !ok {
		// Salvage mode with the trailer lost: what was read is all there is.
		return nil
	}
	if l.lastSeq != t.EndSeq {
		return corrupt("snapshot ends at op %d but holds ops up to %d", t.EndSeq, l.lastSeq)
	}
	l.maxVer = max(l.maxVer, t.MaxVersion)
	return nil
}

// collection creates a collection a snapshot defines.
func (l *loader) collection(payload []byte) error {
	c, err := snapfile.ParseCollection(payload)
	if err != nil {
		return err
	}
	if _, dup := l.byID[c.ID]; dup {
		return corrupt("collection number %d defined twice", c.ID)
	}
	if err := validateCollectionName(c.Name); err != nil {
		return corrupt("collection name: %v", err)
	}
	if _, dup := l.db.collections[c.Name]; dup {
		return corrupt("collection %q defined twice", c.Name)
	}
	opts, err := collectionOptionsOf(c.Spec)
	if err != nil {
		return corrupt("collection %q: %v", c.Name, err)
	}
	s, err := newCollState(l.db, c.Name, opts)
	if err != nil {
		return corrupt("collection %q: %v", c.Name, err)
	}
	for _, spec := range c.Indexes {
		m, err := indexModelOf(spec)
		if err != nil {
			return corrupt("collection %q: %v", c.Name, err)
		}
		if err := s.loadCreateIndex(m); err != nil {
			return corrupt("collection %q: %v", c.Name, err)
		}
	}
	multikey, tsExpire, err := parseCollectionState(c.State)
	if err != nil {
		return corrupt("collection %q: %v", c.Name, err)
	}
	if s.ts != nil {
		if tsExpire == nil {
			return corrupt("collection %q: no current expiry", c.Name)
		}
		s.ts.collExp.expireAfter.Store(*tsExpire)
		for _, ix := range s.ts.indexes {
			ix.multikey = multikey[ix.name]
		}
	} else {
		for _, ix := range s.indexes {
			ix.multikey = ix.multikey || multikey[ix.name]
		}
	}
	l.db.collections[c.Name] = s
	l.byID[c.ID] = s
	if s.ts != nil {
		l.asOf[s] = c.AsOf
		s.ts.nextSeq = max(c.Next, 1)
	}
	return nil
}

// doc stores a document a snapshot holds.
func (l *loader) doc(id uint32, ver uint64, enc []byte) error {
	s := l.byID[id]
	switch {
	case s == nil:
		return corrupt("document of undefined collection number %d", id)
	case s.ts != nil:
		return corrupt("document in time-series collection %q", s.name)
	}
	if err := codec.Validate(enc); err != nil {
		return corrupt("collection %q: document: %v", s.name, err)
	}
	l.maxVer = max(l.maxVer, ver)
	return s.loadPut(enc, ver)
}

// bucket stores a time-series bucket a snapshot holds.
func (l *loader) bucket(id uint32, raw []byte) error {
	s := l.byID[id]
	if s == nil || s.ts == nil {
		return corrupt("bucket of collection number %d, which is not a time-series collection", id)
	}
	ver, err := s.ts.loadBucket(raw)
	l.maxVer = max(l.maxVer, ver)
	return err
}

// apply applies one op, the next in sequence.
func (l *loader) apply(op Op) error {
	if op.Seq != l.lastSeq+1 && !(l.salvage && op.Seq > l.lastSeq) {
		return corrupt("op %d follows op %d", op.Seq, l.lastSeq)
	}
	l.lastSeq = op.Seq
	l.ops++
	if l.db.writes.Load() < l.maxVer {
		// Versions given while applying (time-series buckets) come after
		// every version loaded so far.
		l.db.writes.Store(l.maxVer)
	}
	if err := l.applyOp(op); err != nil {
		return fmt.Errorf("op %d (kind %d, collection %q): %w", op.Seq, op.Kind, op.Collection, err)
	}
	return nil
}

func (l *loader) applyOp(op Op) error {
	db := l.db
	if err := validateCollectionName(op.Collection); err != nil {
		return corrupt("%v", err)
	}
	switch op.Kind {
	case OpCreateCollection:
		opts, err := collectionOptionsOf(op.Spec)
		if err != nil {
			return corrupt("%v", err)
		}
		s, err := newCollState(db, op.Collection, opts)
		if err != nil {
			return corrupt("%v", err)
		}
		db.collections[op.Collection] = s // anew: every op of it follows
		return nil
	case OpDropCollection:
		delete(db.collections, op.Collection)
		return nil
	}
	s := db.collections[op.Collection]
	if s == nil {
		// Created implicitly by a write before ops recorded creations.
		var err error
		if s, err = newCollState(db, op.Collection, CollectionOptions{}); err != nil {
			return corrupt("%v", err)
		}
		db.collections[op.Collection] = s
	}
	if s.ts != nil {
		if op.Seq <= l.asOf[s] {
			return nil // the snapshot's copy holds it already
		}
		return l.tsApply(s.ts, op)
	}
	switch op.Kind {
	case OpInsert, OpUpdate, OpReplace:
		for i, d := range op.Docs {
			if err := codec.Validate(d); err != nil {
				return corrupt("document: %v", err)
			}
			ver := opVersion(op, i)
			if ver == 0 {
				ver = l.maxVer + 1
			}
			l.maxVer = max(l.maxVer, ver)
			if err := s.loadPut(d, ver); err != nil {
				return err
			}
		}
	case OpDelete, OpExpire:
		for _, k := range op.Keys {
			if err := s.loadDelete(k); err != nil {
				return err
			}
		}
	case OpCreateIndex:
		m, err := indexModelOf(op.Spec)
		if err != nil {
			return corrupt("%v", err)
		}
		return s.loadCreateIndex(m)
	case OpDropIndex:
		s.indexes = slices.DeleteFunc(slices.Clone(s.indexes), func(ix *index) bool { return ix.name == op.Index })
	case OpCollMod:
		secs, _, err := collModOf(op.Spec)
		if err != nil || secs == nil {
			return corrupt("collMod spec: %v", err)
		}
		return s.loadCollMod(op.Index, *secs)
	default:
		return corrupt("unknown op kind %d", op.Kind)
	}
	return nil
}

// opVersion returns the record version op stored its i-th document with,
// 0 if the op does not say.
func opVersion(op Op, i int) uint64 {
	if i < len(op.Versions) {
		return op.Versions[i]
	}
	return 0
}

// idKeyOf returns the _id key of an encoded document (or document key).
func idKeyOf(enc []byte) ([]byte, error) {
	id, ok := codec.EncodedField(enc, "_id")
	if !ok {
		return nil, corrupt("document without _id")
	}
	k, err := appendIDKey(nil, id)
	if err != nil {
		return nil, corrupt("%v", err)
	}
	return k, nil
}

// loadPut stores enc (validated) as the document of its _id, replacing
// the one there is, with record version ver, keeping every index up to
// date but checking no unique index.
func (s *collState) loadPut(enc []byte, ver uint64) error {
	k, err := idKeyOf(enc)
	if err != nil {
		return err
	}
	dk, err := s.computeKeys(&docRef{rec: record{enc: enc}})
	if err != nil {
		return corrupt("%v", err)
	}
	extra := s.appendTTLExtra(nil, dk)
	st := s.store()
	if cur, found := s.lookup(k); found {
		s.removeFromIndexes(&cur, s.storedKeys(&cur))
		st.Update(cur.slot, enc, extra, ver)
		rec := cur
		rec.enc, rec.extra, rec.ver = enc, extra, ver
		s.addToIndexes(&rec, dk)
		s.bytes += int64(len(enc) - len(cur.enc))
		return nil
	}
	rec := record{key: k, enc: enc, extra: extra, seq: s.nextSeq, ver: ver}
	s.nextSeq++
	rec.slot = st.Insert(k, enc, extra, rec.seq, ver)
	s.natural.ReplaceOrInsert(natItem{seq: rec.seq, slot: rec.slot})
	s.addToIndexes(&rec, dk)
	s.bytes += int64(len(enc))
	return nil
}

// loadDelete deletes the document whose key ({_id: v}) key is, if present.
func (s *collState) loadDelete(key []byte) error {
	if err := codec.Validate(key); err != nil {
		return corrupt("document key: %v", err)
	}
	k, err := idKeyOf(key)
	if err != nil {
		return err
	}
	if cur, found := s.lookup(k); found {
		s.removeRecord(&cur)
	}
	return nil
}

// loadCreateIndex builds index m over the documents loaded so far,
// replacing an index of the same name.
func (s *collState) loadCreateIndex(m IndexModel) error {
	if s.ts != nil {
		_, err := s.ts.createIndex(m, nil)
		return err
	}
	ix, err := newIndex(s.name, m, s.opts.Capped)
	if err != nil {
		return err
	}
	s.nextIx++
	ix.id = s.nextIx
	var ierr error
	s.natural.Ascend(func(it natItem) bool {
		rec := s.rec(it.slot)
		ref := &docRef{rec: rec}
		if ix.tree != nil {
			ik, err := ix.keysOfStored(ref)
			if err != nil {
				ierr = fmt.Errorf("index %q: document %v: %w", ix.name, rec.id(), err)
				return false
			}
			ix.insertKeys(&rec, ik)
		}
		if ix.ttl != nil {
			k := ix.storedTTL(ref)
			ix.multikey = ix.multikey || k.kind == ttlMulti
			if k.ok {
				ix.ttl.addEntry(entryFor(k.date, &rec), k)
			}
		}
		return true
	})
	if ierr != nil {
		return ierr
	}
	s.indexes = slices.DeleteFunc(slices.Clone(s.indexes), func(o *index) bool { return o.name == ix.name })
	s.indexes = append(s.indexes, ix)
	return nil
}

// loadCollMod sets index name's ExpireAfterSeconds, making it a TTL index
// if it is not one.
func (s *collState) loadCollMod(name string, secs int32) error {
	i := slices.IndexFunc(s.indexes, func(ix *index) bool { return ix.name == name })
	if i < 0 {
		return nil // dropped later: its drop is among the ops
	}
	ix := s.indexes[i]
	if ix.ttl != nil {
		ix.ttl.expireAfter.Store(int64(secs))
		return nil
	}
	m := ix.model()
	m.ExpireAfterSeconds = &secs
	return s.loadCreateIndex(m)
}

// finishLoad checks what could not be checked while ops were applied (the
// unique indexes), accounts the memory, and sets the DB's counters after
// the loaded ones.
func (l *loader) finishLoad() error {
	db := l.db
	for _, s := range db.collections {
		if s.ts == nil {
			for _, ix := range s.indexes {
				if err := ix.checkLoadedUnique(s); err != nil {
					return err
				}
			}
		}
		s.settleMemory(0)
	}
	db.ops.seq = l.lastSeq
	if db.writes.Load() < l.maxVer {
		db.writes.Store(l.maxVer)
	}
	return nil
}

// checkLoadedUnique fails if a unique index holds a key twice.
func (ix *index) checkLoadedUnique(s *collState) error {
	if !ix.unique || ix.tree == nil {
		return nil
	}
	var prev *indexEntry
	var err error
	ix.tree.Ascend(func(e indexEntry) bool {
		if prev != nil && prev.key == e.key && prev.slot != e.slot {
			rec := s.rec(e.slot)
			err = corrupt("collection %q: unique index %q holds a key twice once every op is applied (document %v)", s.name, ix.name, rec.id())
			return false
		}
		prev = &e
		return true
	})
	return err
}

// isCorrupt reports whether err is about bad data (as opposed to an I/O
// error).
func isCorrupt(err error) bool { return errors.Is(err, errs.ErrCorrupt) }
