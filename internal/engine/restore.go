package engine

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	snapfile "github.com/ttldb/ttldb/internal/snapshot"
	"github.com/ttldb/ttldb/internal/store"
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

	// What loading a snapshot found (snapshotID, endSeq) and, under
	// salvage, lost: lossy is set when anything was, orphans counts the
	// documents (or buckets) of each collection whose definition was lost,
	// notes says what else.
	snapshotID [snapfile.IDLen]byte
	endSeq     uint64
	lossy      bool
	orphans    map[string]int
	notes      []string

	// While the log is replayed (pipeline), writes of documents go to ins
	// in batches (batch) and any other op waits for it to be idle: see
	// applyOp.
	ins   *inserter
	batch loadBatch
}

func newLoader(db *DB) *loader {
	return &loader{db: db, byID: map[uint32]*collState{}, asOf: map[*collState]uint64{}}
}

// corrupt wraps an error about loaded data with ErrCorrupt.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errs.ErrCorrupt}, args...)...)
}

// loadSnapshot reads a whole snapshot into the (empty) DB. Documents are
// loaded by two goroutines: this one reads the blocks, checks the
// documents and computes their _id keys; an inserter computes their index
// keys and stores them (the _id map, natural order, index trees) in order.
// Any other block waits for the inserter to be done with the documents
// before it. An error the inserter meets is about a document before
// anything this goroutine is reading: it is the one returned.
func (l *loader) loadSnapshot(r *snapfile.Reader) error {
	h, headerOK := r.Header()
	l.lastSeq = h.StartSeq
	l.snapshotID = h.ID
	paused, err := parseDBState(h.State)
	if err != nil {
		return corrupt("snapshot header state: %v", err)
	}
	l.db.ttlPaused.Store(paused)
	if !headerOK {
		l.lossy = true
	}
	l.notes = append(l.notes, r.Notes()...)
	ins := startInserter()
	defer ins.stop()
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return cmpOr(ins.drain(), err)
		}
		if b.Kind != snapfile.KindDocs && b.Kind != snapfile.KindCollection {
			if err := ins.drain(); err != nil {
				return err
			}
		}
		switch b.Kind {
		case snapfile.KindCollection:
			err = l.collection(b.Payload)
		case snapfile.KindDocs:
			if orphan, oerr := l.orphanBlock(b); orphan || oerr != nil {
				err = oerr
				break
			}
			var batch loadBatch
			var n int
			n, err = snapfile.ParseDocs(b, func(id uint32, ver uint64, enc []byte) error {
				s, err := l.docColl(id, enc)
				if err != nil {
					return err
				}
				if batch.s != s || batch.full() {
					if batch.s != nil {
						if err := ins.send(batch); err != nil {
							return err
						}
					}
					batch = newLoadBatch(s)
					batch.block = b.Offset
				}
				if err := l.noteVersion(ver); err != nil {
					return err
				}
				return batch.add(enc, ver, 0, 0)
			})
			if err == nil && batch.s != nil {
				err = ins.send(batch)
			}
			l.docs += n
		case snapfile.KindBuckets:
			if orphan, oerr := l.orphanBlock(b); orphan || oerr != nil {
				err = oerr
				break
			}
			_, err = snapfile.ParseBuckets(b, l.bucket)
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
			if ierr := ins.drain(); ierr != nil {
				return ierr
			}
			if _, stored := err.(*storeError); stored {
				return err
			}
			return fmt.Errorf("snapshot block at offset %d: %w", b.Offset, err)
		}
	}
	if err := ins.drain(); err != nil {
		return err
	}
	if blocks, _ := r.Skipped(); blocks > 0 {
		l.lossy = true
	}
	t, ok := r.Trailer()
	if !ok {
		// Salvage mode with the trailer lost: what was read is all there is.
		l.lossy = true
		l.endSeq = l.lastSeq
		return nil
	}
	if l.salvage && l.lastSeq < t.EndSeq {
		// Salvage: the ops block, or the header that said where the ops
		// start, was lost. The snapshot stands for the state after
		// EndSeq, less what was lost, and the log goes on from there.
		l.notes = append(l.notes, fmt.Sprintf("the snapshot's ops up to op %d were lost", t.EndSeq))
		l.lossy = true
		l.lastSeq = t.EndSeq
	}
	if l.lastSeq != t.EndSeq {
		return corrupt("snapshot ends at op %d but holds ops up to %d", t.EndSeq, l.lastSeq)
	}
	l.endSeq = t.EndSeq
	return l.noteVersion(t.MaxVersion)
}

// noteVersion notes a record version loaded, which must be within the
// store's bound (store.MaxSeq): a larger one fails the load rather than
// wrap.
func (l *loader) noteVersion(ver uint64) error {
	if ver > store.MaxSeq {
		return corrupt("record version %d: %w (%d)", ver, ErrCounterLimit, uint64(store.MaxSeq))
	}
	l.maxVer = max(l.maxVer, ver)
	return nil
}

// orphanBlock reports whether the docs or buckets block b is of a
// collection the snapshot did not define (its collection block was lost,
// or another has its number). Under salvage such a block is not loaded:
// loading documents without their collection's definition would give
// them no indexes (a TTL index's documents would never expire); they are
// counted under their collection's name (version 2 files name it) in
// l.orphans. Otherwise it is corruption.
func (l *loader) orphanBlock(b snapfile.Block) (bool, error) {
	id, name, err := snapfile.BlockCollection(b)
	if err != nil {
		return false, err
	}
	s := l.byID[id]
	if s != nil && (name == "" || name == s.name) {
		return false, nil
	}
	if !l.salvage {
		if s == nil {
			return false, corrupt("%s of undefined collection number %d", b.Kind, id)
		}
		return false, corrupt("%s block names collection %q, number %d is %q", b.Kind, name, id, s.name)
	}
	if name == "" {
		name = fmt.Sprintf("collection number %d", id)
	}
	var n int
	if b.Kind == snapfile.KindDocs {
		n, err = snapfile.ParseDocs(b, func(uint32, uint64, []byte) error { return nil })
	} else {
		n, err = snapfile.ParseBuckets(b, func(uint32, []byte) error { return nil })
	}
	if err != nil {
		return false, err
	}
	if l.orphans == nil {
		l.orphans = map[string]int{}
	}
	l.orphans[name] += n
	l.lossy = true
	return true, nil
}

// reset forgets everything loaded: salvage rebuilds the DB from the log
// alone when the log holds every op from the first and the snapshot lost
// something. Record versions keep counting from the greatest met.
func (l *loader) reset() {
	clear(l.db.collections)
	clear(l.byID)
	clear(l.asOf)
	l.lastSeq, l.docs, l.ops = 0, 0, 0
	l.orphans = nil
}

// cmpOr returns a if it is not nil, else b.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// loadBatch is writes of documents of one collection for the inserter, in
// order: documents checked and keyed by _id (add), and deletions by _id
// (addDelete). Their _id keys, index keys and TTL extra bytes are carved
// from buffers the batch shares instead of three allocations per
// document.
type loadBatch struct {
	s    *collState
	docs []loadDoc
	done chan struct{} // a barrier, not documents: closed when the batches before it are in

	block int64 // the snapshot block of the documents; -1: the log's ops

	keys, extras []byte
	dks          docKeys
}

// loadBatchSize is the number of documents (or deletions) a batch holds at
// most.
const loadBatchSize = 1024

func newLoadBatch(s *collState) loadBatch {
	return loadBatch{s: s, docs: make([]loadDoc, 0, loadBatchSize), block: -1}
}

func (b *loadBatch) full() bool { return len(b.docs) >= loadBatchSize }

// add adds enc (validated) to store with record version ver, for op seq of
// kind kind (0 for a snapshot's document). It computes the _id key; the
// inserter computes the rest (prepare).
func (b *loadBatch) add(enc []byte, ver, seq uint64, kind OpKind) error {
	at := len(b.keys)
	k, err := appendIDKeyOf(b.keys, enc)
	if err != nil {
		return err
	}
	b.keys = k
	b.docs = append(b.docs, loadDoc{docWrite: docWrite{key: b.keys[at:len(b.keys):len(b.keys)], enc: enc, ver: ver}, seq: seq, kind: kind})
	return nil
}

// addDelete adds the deletion of the document whose key ({_id: v},
// validated) key is.
func (b *loadBatch) addDelete(key []byte) error {
	at := len(b.keys)
	k, err := appendIDKeyOf(b.keys, key)
	if err != nil {
		return err
	}
	b.keys = k
	b.docs = append(b.docs, loadDoc{docWrite: docWrite{key: b.keys[at:len(b.keys):len(b.keys)]}, del: true})
	return nil
}

// prepare computes d's index keys and TTL extra bytes (prepareLoad), in
// the batch's buffers.
func (b *loadBatch) prepare(d *loadDoc) error {
	s := b.s
	n := len(s.indexes)
	if len(b.dks)+n > cap(b.dks) {
		b.dks = make(docKeys, 0, n*(len(b.docs)+1))
	}
	dk := b.dks[len(b.dks) : len(b.dks)+n : len(b.dks)+n]
	b.dks = b.dks[:len(b.dks)+n]
	dk, err := s.computeKeysInto(dk, &docRef{rec: record{enc: d.enc}})
	if err != nil {
		return corrupt("%v", err)
	}
	ex := len(b.extras)
	b.extras = s.appendTTLExtra(b.extras, dk, d.enc)
	d.dk, d.extra = dk, b.extras[ex:len(b.extras):len(b.extras)]
	return nil
}

// storeError is an error the inserter met, already placed: the op or the
// snapshot block it is about.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// store applies the batch: its documents keyed and stored, its deletions
// made, in order, up to the first document that does not key. Its TTL
// indexes' counts are summed per date over the batch
// (expiryCounts.deferAdds): documents loaded together mostly share dates.
func (b *loadBatch) store() error {
	s := b.s
	for _, ix := range s.indexes {
		if ix.ttl != nil {
			ix.ttl.counts.deferAdds()
		}
	}
	defer func() {
		for _, ix := range s.indexes {
			if ix.ttl != nil {
				ix.ttl.counts.flush()
			}
		}
	}()
	keys := make([][]byte, 0, prefetchRun)
	hashes := make([]uint64, 0, prefetchRun)
	for i := range b.docs {
		if i%prefetchRun == 0 {
			// The _id table's cells of the next keys, read together:
			// their cache misses overlap (Store.Prefetch).
			keys = keys[:0]
			for j := i; j < min(i+prefetchRun, len(b.docs)); j++ {
				keys = append(keys, b.docs[j].key)
			}
			hashes = s.store().PrefetchHashed(keys, hashes[:0])
		}
		d := &b.docs[i]
		d.hash = hashes[i%prefetchRun]
		if d.del {
			if cur, found := s.lookup(d.key); found {
				s.removeRecord(&cur)
			}
			continue
		}
		if err := b.prepare(d); err != nil {
			if b.block >= 0 {
				return &storeError{fmt.Errorf("snapshot block at offset %d: %w", b.block, err)}
			}
			return &storeError{fmt.Errorf("op %d (kind %d, collection %q): %w", d.seq, d.kind, s.name, err)}
		}
		s.putLoaded(d)
	}
	return nil
}

// prefetchRun is how many keys of a batch the inserter looks up together
// (Store.Prefetch): a few cache lines each, well within a core's cache.
const prefetchRun = 128

// inserter stores batches on a goroutine of its own. After its first
// error it stores nothing more; send and drain return that error.
type inserter struct {
	in     chan loadBatch
	exit   chan struct{}
	failed atomic.Pointer[error]
}

func startInserter() *inserter {
	ins := &inserter{in: make(chan loadBatch, 4), exit: make(chan struct{})}
	go func() {
		defer close(ins.exit)
		for b := range ins.in {
			switch {
			case b.done != nil:
				close(b.done)
			case ins.err() == nil:
				if err := b.store(); err != nil {
					ins.failed.Store(&err)
				}
			}
		}
	}()
	return ins
}

// err returns the inserter's error, nil while it has none.
func (ins *inserter) err() error {
	if e := ins.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// send hands b to the inserter. It returns the inserter's error, if it
// has met one (b is then dropped).
func (ins *inserter) send(b loadBatch) error {
	if err := ins.err(); err != nil {
		return err
	}
	ins.in <- b
	return nil
}

// drain returns once every batch sent is stored, with the inserter's
// error.
func (ins *inserter) drain() error {
	done := make(chan struct{})
	ins.in <- loadBatch{done: done}
	<-done
	return ins.err()
}

// stop ends the goroutine, after the batches sent.
func (ins *inserter) stop() {
	close(ins.in)
	<-ins.exit
}

// docColl checks a document of a snapshot (validated) and returns its
// collection.
func (l *loader) docColl(id uint32, enc []byte) (*collState, error) {
	s := l.byID[id]
	switch {
	case s == nil:
		return nil, corrupt("document of undefined collection number %d", id)
	case s.ts != nil:
		return nil, corrupt("document in time-series collection %q", s.name)
	}
	if err := codec.Validate(enc); err != nil {
		return nil, corrupt("collection %q: document: %v", s.name, err)
	}
	return s, nil
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
	if s.ts == nil && c.Docs > 0 {
		// Sized for what the snapshot holds: its _id map does not grow
		// (and rehash) a shard at a time while the documents are stored.
		s.st.Store(s.store().Fork(int(min(c.Docs, 1<<30))))
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
	multikey, tsExpire, paused, err := parseCollectionState(c.State)
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
	s.ttlPaused.Store(paused)
	l.db.collections[c.Name] = s
	l.byID[c.ID] = s
	if s.ts != nil {
		l.asOf[s] = c.AsOf
		s.ts.nextSeq = max(c.Next, 1)
	}
	return nil
}

// bucket stores a time-series bucket a snapshot holds.
func (l *loader) bucket(id uint32, raw []byte) error {
	s := l.byID[id]
	if s == nil || s.ts == nil {
		return corrupt("bucket of collection number %d, which is not a time-series collection", id)
	}
	ver, err := s.ts.loadBucket(raw)
	if err != nil {
		return err
	}
	return l.noteVersion(ver)
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
	if op.Kind == OpDBMod {
		if op.Collection != "" {
			return corrupt("a dbMod names collection %q", op.Collection)
		}
		paused, err := pausedOf(op.Spec)
		if err != nil {
			return corrupt("dbMod spec: %v", err)
		}
		db.ttlPaused.Store(paused)
		return nil
	}
	if err := validateCollectionName(op.Collection); err != nil {
		return corrupt("%v", err)
	}
	if !op.Txn.IsZero() {
		db.txns.noteApplied(op.Txn) // the log holds its whole record
	}
	switch op.Kind {
	case OpInsert, OpUpdate, OpReplace, OpDelete, OpExpire:
	default:
		// An op that is not a write of documents may read or change what
		// the inserter uses (a collection's indexes, its documents): it
		// waits until the inserter has stored every batch before it.
		if err := l.settle(); err != nil {
			return err
		}
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
	if s == nil && l.orphans[op.Collection] > 0 {
		// Salvage lost the collection's definition: its later writes are
		// not loaded either (they would make it anew without its indexes).
		l.orphans[op.Collection] += len(op.Docs)
		return nil
	}
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
		// op came from UnmarshalBinary (the log, a snapshot's ops), which
		// validated its documents in full: they are not checked again.
		for i, d := range op.Docs {
			ver := opVersion(op, i)
			if ver == 0 {
				ver = l.maxVer + 1
			}
			if err := l.noteVersion(ver); err != nil {
				return err
			}
			if l.ins == nil {
				if err := s.loadPut(d, ver); err != nil {
					return err
				}
				continue
			}
			if err := l.toBatch(s); err != nil {
				return err
			}
			if err := l.batch.add(d, ver, op.Seq, op.Kind); err != nil {
				return err
			}
		}
		return nil
	case OpDelete, OpExpire:
		for _, k := range op.Keys {
			if l.ins == nil {
				if err := s.loadDelete(k); err != nil {
					return err
				}
				continue
			}
			if err := l.toBatch(s); err != nil {
				return err
			}
			if err := l.batch.addDelete(k); err != nil {
				return err
			}
		}
	case OpCreateIndex:
		m, err := indexModelOf(op.Spec)
		if err != nil {
			return corrupt("%v", err)
		}
		if err := s.loadCreateIndex(m); err != nil {
			return err
		}
		s.markMultikey(m.Name, multikeyOf(op.Spec))
		return nil
	case OpDropIndex:
		s.dropIndex(op.Index)
	case OpCollMod:
		if op.Index == "" {
			paused, err := pausedOf(op.Spec)
			if err != nil {
				return corrupt("collMod spec: %v", err)
			}
			s.ttlPaused.Store(paused)
			return nil
		}
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

// Pipelined replay. While the log is replayed, two goroutines share the
// work, as when a snapshot is loaded: the one that reads the log checks
// each record's checksum, decodes its ops (which validates every document
// once, in UnmarshalBinary), checks their order and prepares the writes of
// documents (_id keys, index keys, TTL entries), in batches of one
// collection; the inserter stores the batches in order. Any other op waits
// for the inserter to be idle (settle) and is applied by the reader. An
// error is met by the reader alone, in log order: the first bad record or
// op stops the replay there, and nothing after it reaches the inserter.

// startPipeline starts the inserter for a replay.
func (l *loader) startPipeline() {
	l.ins = startInserter()
}

// toBatch makes l.batch a batch of s with room for one more entry,
// handing the current one to the inserter if it is of another collection
// or full. It returns the inserter's error.
func (l *loader) toBatch(s *collState) error {
	if l.batch.s == s && !l.batch.full() {
		return nil
	}
	err := l.flushBatch()
	l.batch = newLoadBatch(s)
	return err
}

// flushBatch hands l.batch, if it holds anything, to the inserter, and
// returns the inserter's error.
func (l *loader) flushBatch() error {
	b := l.batch
	l.batch = loadBatch{}
	if b.s == nil || len(b.docs) == 0 {
		return l.ins.err()
	}
	return l.ins.send(b)
}

// settle returns once the inserter has stored every write prepared so
// far (at once without a pipeline), with the inserter's error: the error
// of an op before every op read since.
func (l *loader) settle() error {
	if l.ins == nil {
		return nil
	}
	return cmpOr(l.flushBatch(), l.ins.drain())
}

// endPipeline stores what is prepared and stops the inserter. Call it
// once the replay has returned, whatever it returned.
func (l *loader) endPipeline() {
	if l.ins == nil {
		return
	}
	_ = l.settle()
	l.ins.stop()
	l.ins = nil
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

// appendIDKeyOf appends the _id key of an encoded document (or document
// key) to dst.
func appendIDKeyOf(dst, enc []byte) ([]byte, error) {
	id, ok := codec.EncodedField(enc, "_id")
	if !ok {
		return dst, corrupt("document without _id")
	}
	k, err := appendIDKey(dst, id)
	if err != nil {
		return dst, corrupt("%v", err)
	}
	return k, nil
}

// loadDoc is a document checked and keyed for loading: its _id key, its
// index keys and TTL entries, computed from enc alone.
type loadDoc struct {
	docWrite
	seq  uint64 // the op that stores it (the log's), for errors
	kind OpKind
	del  bool // a deletion of the document of key, not a document
}

// prepareLoad keys enc (validated) for loadPut. It reads the collection's
// index definitions only, so it may run beside putLoaded of earlier
// documents.
func (s *collState) prepareLoad(enc []byte, ver uint64) (loadDoc, error) {
	k, err := idKeyOf(enc)
	if err != nil {
		return loadDoc{}, err
	}
	dk, err := s.computeKeys(&docRef{rec: record{enc: enc}})
	if err != nil {
		return loadDoc{}, corrupt("%v", err)
	}
	return loadDoc{docWrite: docWrite{key: k, enc: enc, extra: s.appendTTLExtra(nil, dk, enc), dk: dk, ver: ver}}, nil
}

// loadPut stores enc (validated) as the document of its _id, replacing
// the one there is, with record version ver, keeping every index up to
// date but checking no unique index.
func (s *collState) loadPut(enc []byte, ver uint64) error {
	d, err := s.prepareLoad(enc, ver)
	if err != nil {
		return err
	}
	s.putLoaded(&d)
	return nil
}

// putLoaded stores a prepared document (loadPut), replacing the one of
// its _id if there is one: the interpreter's replay mode.
func (s *collState) putLoaded(d *loadDoc) {
	s.storeDoc(s.store(), &d.docWrite, modeReplay)
}

// loadDelete deletes the document whose key ({_id: v}, validated) key is,
// if present.
func (s *collState) loadDelete(key []byte) error {
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
		_, err := s.ts.createIndex(m, nil, modeReplay)
		return err
	}
	ix, err := newIndex(s.name, m, s.opts.Capped)
	if err != nil {
		return err
	}
	if _, err := s.buildIndex(ix); err != nil {
		return err
	}
	s.addIndex(ix)
	return nil
}

// loadCollMod sets index name's ExpireAfterSeconds, making it a TTL index
// if it is not one.
func (s *collState) loadCollMod(name string, secs int32) error {
	ix := s.indexNamed(name)
	if ix == nil {
		return nil // dropped later: its drop is among the ops
	}
	_, err := s.setIndexTTL(fmt.Sprintf("collMod %q", s.name), ix, secs, modeReplay)
	return err
}

// finishLoad checks what could not be checked while ops were applied (the
// unique indexes), accounts the memory, and sets the DB's counters after
// the loaded ones.
func (l *loader) finishLoad() error {
	db := l.db
	for _, s := range db.collections {
		if s.ts != nil {
			s.ts.mu.Lock()
			s.ts.settle()
			s.ts.mu.Unlock()
			continue
		}
		for _, ix := range s.indexes {
			if err := ix.checkLoadedUnique(s); err != nil {
				return err
			}
		}
		s.settleMemory(0)
	}
	db.ops.seq.Store(l.lastSeq)
	db.ops.committed.Store(l.lastSeq) // a loaded DB's ops are all committed
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
