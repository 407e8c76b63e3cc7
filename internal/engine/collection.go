package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
	"github.com/ttldb/ttldb/internal/ordtree"
	"github.com/ttldb/ttldb/internal/schema"
	"github.com/ttldb/ttldb/internal/seqlog"
	"github.com/ttldb/ttldb/internal/store"
)

// Collection is a handle on a named collection of a DB. It is cheap to make
// (DB.Collection) and safe for concurrent use. See DB.Collection for how it
// relates to the collection's existence.
type Collection struct {
	db      *DB
	name    string
	nameErr error
}

// Name implements ttldb.Collection.Name, whose documentation is the contract.
func (c *Collection) Name() string { return c.name }

// CollectionOptions configures CreateCollection. The zero value is an
// ordinary collection.
type CollectionOptions struct {
	// Capped makes the collection keep insertion order and, when an insert
	// would exceed MaxDocuments or MaxBytes, drop the oldest documents
	// first. At least one of the two limits must be set. A capped
	// collection cannot have a TTL index.
	Capped bool
	// MaxDocuments caps the number of documents (0: no count cap).
	MaxDocuments int
	// MaxBytes caps the approximate size of the documents in bytes (0: no
	// size cap). A document's size is estimated from its values.
	MaxBytes int64

	// Validator is a document {"$jsonSchema": {...}} every insert, update and
	// replacement must satisfy (ErrValidation otherwise).
	Validator Document

	// HideExpired, if set, hides documents that are expired under any of the
	// collection's TTL indexes from every read (FindOne, Find,
	// CountDocuments, Explain's counts) and every write's filter before the
	// monitor deletes them. A write that would fail because of one (an
	// insert or upsert of its _id, or a key of a unique index only it
	// holds) deletes it first as the monitor would: the expire hooks see it
	// first, with no lock held; the deletion commits with the write, counts
	// in Metrics and is told to the DeleteObservers. If a hook fails for
	// it, the write fails with ErrExpireHook and changes nothing. By
	// default, as in MongoDB and ArangoDB, an expired document stays
	// visible until it is deleted. WithHideExpired sets it for every
	// collection of a DB.
	HideExpired bool

	// TimeSeries, if set, makes a time-series collection (timeseries.go):
	// measurements stored in buckets, expiring by bucket.
	TimeSeries *TimeSeriesOptions
	// ExpireAfterSeconds is a time-series collection's collection-level
	// expiry period (MongoDB's expireAfterSeconds collection option), 0 to
	// 2147483647 seconds; nil: none. Refused (ErrTimeSeries) without
	// TimeSeries. Change it with CollModTimeSeries.
	ExpireAfterSeconds *int32
}

// record is one stored document version, as read from the collection's
// store (internal/store): where it lives (slot), its insertion order, its
// version, its _id key and its encoding. The bytes are never written again
// once stored, so a record read under a lock may be decoded after the lock
// is released (or, for a lookup by _id, without the collection lock), and
// a TTL batch can tell that a document changed by comparing versions.
type record struct {
	slot store.Slot
	seq  uint64 // insertion order; ties in every index tree break on it
	// ver is the document's version: a number from the DB's write
	// counter, given to every record a write stores (an insert, or an
	// update or replacement that changes the document) and never reused
	// within the DB, not even for a document deleted and inserted again.
	// It is the version in an expire hook's delivery identity (_id, ver).
	ver   uint64
	key   []byte // the _id key (idKey): the document's key in the store
	enc   []byte // the document
	extra []byte // its TTL entries (ttlindex.go)
}

func recordOf(r store.Record) record {
	return record{slot: r.Slot, seq: r.Seq, ver: r.Ver, key: r.Key, enc: r.Doc, extra: r.Extra}
}

// document decodes a new copy of the stored document.
func (r *record) document() Document { return codec.Decode(r.enc) }

// id decodes the document's _id.
func (r *record) id() any {
	v, _ := codec.EncodedField(r.enc, "_id")
	return v
}

// docRef is a record met by a scan, with its document decoded at most once
// and only if someone needs it.
type docRef struct {
	rec record
	doc Document
}

func (d *docRef) get() Document {
	if d.doc == nil {
		d.doc = d.rec.document()
	}
	return d.doc
}

// natItem is a document's place in the natural (insertion) order: a plain
// value, so that the tree holds no pointer per document.
type natItem struct {
	seq  uint64
	slot store.Slot
}

// natOrder is a collection's natural (insertion) order: a log of
// (seq, slot) pairs in pointer-free pages (internal/seqlog), with the
// methods of the B-tree it replaced. Changed under the collection's write
// lock, read under its read lock.
type natOrder struct{ log seqlog.Log }

func newNatOrder() *natOrder { return &natOrder{} }

// Len returns the number of documents.
func (n *natOrder) Len() int { return n.log.Len() }

// push appends a document, whose seq is greater than every other's.
func (n *natOrder) push(it natItem) { n.log.Push(it.seq, it.slot) }

// Delete removes the document with it's seq.
func (n *natOrder) Delete(it natItem) { n.log.Delete(it.seq) }

// Min returns the oldest document.
func (n *natOrder) Min() (natItem, bool) {
	it, ok := n.log.Min()
	return natItem{seq: it.Seq, slot: it.Slot}, ok
}

// AscendGreaterOrEqual calls fn for each document from seq from.seq on,
// in insertion order, until fn returns false.
func (n *natOrder) AscendGreaterOrEqual(from natItem, fn func(natItem) bool) {
	n.log.AscendFrom(from.seq, func(it seqlog.Item) bool { return fn(natItem{seq: it.Seq, slot: it.Slot}) })
}

// Ascend calls fn for each document in insertion order until fn returns
// false.
func (n *natOrder) Ascend(fn func(natItem) bool) { n.AscendGreaterOrEqual(natItem{}, fn) }

// bytes returns the heap the order holds.
func (n *natOrder) bytes() int64 { return n.log.Bytes() }

// growthFor returns what k more documents, of sequences from seq on, add
// to bytes.
func (n *natOrder) growthFor(seq uint64, k int) int64 { return n.log.GrowthFor(seq, k) }

// collState is a collection's data.
//
// Locking (the only place it is described):
//   - writeMu serializes everything that changes the collection: writes,
//     index builds and drops, CollMod, Compact, TTL batches. A writer does
//     its slow preparation (planning, copying, validation, index keys,
//     unique checks) holding only writeMu, reading the data freely since no
//     other goroutine can change it.
//   - mu guards the data against readers: a writer holds mu for writing only
//     while it applies a change already prepared, and readers hold mu for
//     reading. Readers never wait for a writer's preparation nor for an
//     index build, and never for each other.
//   - The store (internal/store) changes only under both: every change to
//     the store happens while the writer holds mu for writing, so readers
//     holding mu may read any slot. Its _id map has a lock per shard, which
//     a writer takes for each change of a document's slot and a reader by
//     _id takes instead of mu (FindOne by _id): the record's bytes never
//     change, so it decodes them after releasing the shard lock.
//   - Lock order: DB.mu (briefly, to find the collection), then writeMu,
//     then mu, then a store shard lock. No callback (expiry hooks,
//     observers, logging) runs with either lock held.
type collState struct {
	db        *DB
	name      string
	opts      CollectionOptions
	validator *schema.Validator

	writeMu sync.Mutex
	mu      sync.RWMutex

	// ttlPaused: TTL deletion of the collection is paused (CollMod with
	// TTLPaused; an op, logged and replicated, kept in snapshots). Set
	// under writeMu; read by the monitor without a lock.
	ttlPaused atomic.Bool

	// st holds the documents and the _id map. Lookups by _id load it
	// without the collection lock; Compact replaces it (under both locks)
	// by a compacted copy, and a reader still in the old one reads a
	// consistent, unchanging past.
	st      atomic.Pointer[store.Store]
	natural *natOrder // by seq: insertion order
	indexes []*index  // secondary indexes, in creation order
	nextSeq uint64
	nextIx  uint32 // the id of the next index created (index.id)
	bytes   int64
	dropped bool

	// memAcct is the memory the DB's budget counts for the collection
	// (memory.go; tsmemory.go). Guarded by writeMu, for a time-series
	// collection by its ts.mu (a drop holds both); memPub publishes it
	// for Metrics.
	memAcct int64
	memPub  atomic.Int64

	// builds are the index builds under way (indexbuild.go); every write
	// records its changes in their side tables. Guarded by writeMu.
	builds []*indexBuild

	// inWay is the running write's record of the expired documents it
	// met (expiredwrite.go); nil without HideExpired. Guarded by writeMu.
	inWay *expiredInWay

	// writeCtx, if not nil, stops the running write's preparation
	// (UpdateMany's context; replaceRecords looks at it). Guarded by
	// writeMu.
	writeCtx context.Context

	// ts holds a time-series collection's buckets (timeseries.go); nil
	// for an ordinary collection, whose other fields it leaves unused.
	ts *tsColl

	// oprec records the running write's ops while a sink wants them
	// (oplog.go); nil otherwise. Guarded by writeMu.
	oprec *opRecorder
	opBuf opRecorder // what oprec points to while set (oplog.go)
	// applying is set while DB.Apply changes the collection (opapply.go):
	// the write stores what the op says, with no eviction and no
	// validation of its own. Guarded by writeMu.
	applying bool
	// applyVers are the record versions the op being applied gives its
	// documents (Op.Versions, parallel to Docs), nil when it gives none.
	// Guarded by writeMu.
	applyVers []uint64
	// undo holds, while transactions' snapshots are open, the versions of
	// documents that changes replaced, by _id key, oldest first
	// (txnview.go): written holding writeMu and mu, read holding either.
	// undoLen counts them; undoTS, when set, stamps every version kept
	// by the running change (a transaction's commit, one instant).
	undo    map[string][]undoVer
	undoLen atomic.Int32
	undoTS  uint64
	// txw is set while a transaction's write runs: the write stages its
	// changes in the transaction instead of applying them (txnstage.go).
	// Guarded by writeMu.
	txw *txnWrite
	// delSlots are removeRecords' slots, reused from batch to batch.
	// Guarded by writeMu (recovery: its inserter, the only writer).
	delSlots []store.Slot
	// goneRecs are the records an applied OpDelete or OpExpire deletes,
	// reused from op to op as delSlots. Guarded by writeMu.
	goneRecs []record
}

// newVersion returns the record version of the i-th document a write
// stores: the applied op's when it carries versions (the DB's counter
// then moves past it, so that versions given later are greater), else
// the next of the DB's counter.
//
// The store keeps versions and insertion sequences in 48 bits
// (store.MaxSeq): a write checks first that it stays below (checkCounters).
func (s *collState) newVersion(i int) uint64 {
	if i < len(s.applyVers) {
		v := s.applyVers[i]
		s.db.raiseVersions(v)
		return v
	}
	return s.db.writes.Add(1)
}

// versionSlack is the room checkVersions leaves below store.MaxSeq for the
// versions of writes to other collections that pass the check at the same
// moment (the DB's counter is shared): far more than the writers running
// at once take.
const versionSlack = 1 << 32

// checkCounters refuses, with ErrCounterLimit, a write that would store
// inserts new documents past the collection's last insertion sequence
// (store.MaxSeq) or give versions new record versions past the DB's
// bound (checkVersions). Versions an applied op carries are not counted:
// checkVersions bounded them. Call holding writeMu, before the write
// changes anything.
func (s *collState) checkCounters(inserts, versions int) error {
	if s.nextSeq-1+uint64(inserts) > store.MaxSeq {
		return fmt.Errorf("collection %q: %w: the insertion sequence would pass %d", s.name, ErrCounterLimit, uint64(store.MaxSeq))
	}
	if err := s.db.checkNewVersions(versions - len(s.applyVers)); err != nil {
		return fmt.Errorf("collection %q: %w", s.name, err)
	}
	return nil
}

// checkNewVersions refuses, with ErrCounterLimit, n new record versions
// that would take the DB's counter within versionSlack of store.MaxSeq.
func (db *DB) checkNewVersions(n int) error {
	if n > 0 && db.writes.Load()+uint64(n) > store.MaxSeq-versionSlack {
		return fmt.Errorf("%w: the record versions would pass %d", ErrCounterLimit, uint64(store.MaxSeq-versionSlack))
	}
	return nil
}

func newCollState(db *DB, name string, opts CollectionOptions) (*collState, error) {
	if opts.TimeSeries != nil || opts.ExpireAfterSeconds != nil {
		return newTimeSeriesCollState(db, name, opts) // timeseries.go
	}
	if opts.Capped && opts.MaxDocuments <= 0 && opts.MaxBytes <= 0 {
		return nil, fmt.Errorf("%w: collection %q: a capped collection needs MaxDocuments or MaxBytes", ErrInvalidOptions, name)
	}
	if opts.MaxDocuments < 0 || opts.MaxBytes < 0 {
		return nil, fmt.Errorf("%w: collection %q: negative cap", ErrInvalidOptions, name)
	}
	if !opts.Capped && (opts.MaxDocuments != 0 || opts.MaxBytes != 0) {
		return nil, fmt.Errorf("%w: collection %q: MaxDocuments and MaxBytes need Capped", ErrInvalidOptions, name)
	}
	v, err := schema.CompileValidator(opts.Validator)
	if err != nil {
		return nil, fmt.Errorf("collection %q: validator: %w", name, err)
	}
	if opts.Validator != nil {
		opts.Validator = codec.CopyDocument(opts.Validator)
	}
	if db.cfg.hideExpired {
		opts.HideExpired = true
	}
	s := &collState{
		db:        db,
		name:      name,
		opts:      opts,
		validator: v,
		natural:   newNatOrder(),
		nextSeq:   1,
	}
	s.st.Store(store.New(storeOptions(db)))
	return s, nil
}

// store returns the collection's store.
func (s *collState) store() *store.Store { return s.st.Load() }

// rec reads the record in slot. Call holding mu or writeMu.
func (s *collState) rec(slot store.Slot) record { return recordOf(s.store().Record(slot)) }

// recAt reads the record in slot if it still holds the document with
// insertion sequence seq. Call holding mu or writeMu.
func (s *collState) recAt(slot store.Slot, seq uint64) (record, bool) {
	st := s.store()
	if !st.Live(slot) {
		return record{}, false
	}
	r := st.Record(slot)
	if r.Seq != seq {
		return record{}, false
	}
	return recordOf(r), true
}

// lookup returns the record with _id key k. Call holding mu or writeMu.
func (s *collState) lookup(k []byte) (record, bool) {
	r, ok := s.store().Get(k)
	return recordOf(r), ok
}

// lockWrite takes writeMu for a writer and checks that the collection still
// exists. It returns errCollectionDropped (retried by the caller against the
// recreated collection) if it was dropped.
func (s *collState) lockWrite() error {
	s.writeMu.Lock()
	return s.unlessDropped()
}

// unlessDropped returns errCollectionDropped, releasing writeMu, if the
// collection was dropped. Call just after taking writeMu.
func (s *collState) unlessDropped() error {
	if s.dropped {
		s.writeMu.Unlock()
		return errCollectionDropped
	}
	return nil
}

// lockForegroundWrite is lockWrite for a write of the program (not the
// monitor's, nor Apply's), counting it in DB.foregroundWaits if writeMu
// was held: the TTL monitor's pacer gives way when that count moves. The
// count costs nothing when the lock is free (TryLock is the same atomic
// operation as Lock's fast path).
func (s *collState) lockForegroundWrite() error {
	if !s.writeMu.TryLock() {
		s.db.foregroundWaits.Add(1)
		s.writeMu.Lock()
	}
	return s.unlessDropped()
}

// rlock takes mu for reading for a read of the program, counting it in
// DB.foregroundWaits if it had to wait (a writer held mu: a write, or a
// TTL batch): as lockForegroundWrite.
func (s *collState) rlock() {
	if !s.mu.TryRLock() {
		s.db.foregroundWaits.Add(1)
		s.mu.RLock()
	}
}

// errCollectionDropped tells a write that raced with DropCollection to look
// the collection up again.
var errCollectionDropped = fmt.Errorf("%w: collection dropped", ErrNotFound)

// writeState runs fn on the collection's state, creating the collection if
// needed and retrying once if it was dropped between lookup and lock.
func (c *Collection) write(fn func(s *collState) error) (err error) {
	if c.db.persist != nil {
		defer c.db.durable(&err)
	}
	return c.writeDurableByCaller(fn)
}

// writeDurableByCaller is write for a caller that makes the write durable
// itself (it defers DB.durable): the call then waits for the log once. A
// second wait, after the first returned, would wait for whatever other
// writers committed meanwhile: under SyncAlways a second fsync per write.
func (c *Collection) writeDurableByCaller(fn func(s *collState) error) (err error) {
	return c.writeDurableByCallerCtx(context.Background(), fn)
}

// writeDurableByCallerCtx is writeDurableByCaller whose waits for open
// transactions end with ctx (writeBegunCtx).
func (c *Collection) writeDurableByCallerCtx(ctx context.Context, fn func(s *collState) error) (err error) {
	if err := c.usable(); err != nil {
		return err
	}
	if c.db.persist != nil {
		if err := c.db.logErr(); err != nil {
			return err
		}
	}
	end, err := c.db.beginWrite()
	if err != nil {
		return err
	}
	return end(c.writeBegunCtx(ctx, fn))
}

// writeBegunCtx is a write once the replicator (if any) let it begin. A
// wait for an open transaction holding a document in the way ends with
// waitCtx, or the transaction's lifetime.
func (c *Collection) writeBegunCtx(waitCtx context.Context, fn func(s *collState) error) error {
	var approved map[uint64]bool // expired versions the hooks handled
	for attempt, rounds := 0, 0; ; attempt++ {
		s, err := c.db.state(c.name, true)
		if err != nil {
			return err
		}
		if err := s.lockForegroundWrite(); err != nil {
			if attempt < 3 {
				continue
			}
			return err
		}
		w := s.beginInWay(approved)
		s.beginOps()
		err = fn(s)
		s.endOps(err)
		s.inWay = nil
		s.writeMu.Unlock()
		if tw := asTxnWait(err); tw != nil {
			// An open transaction holds a document in the way: wait for
			// its end (bounded by its lifetime, or the write's ctx), then
			// run again from the start.
			if err := c.db.txns.waitFor(waitCtx, tw.t); err != nil {
				return err
			}
			attempt = -1
			continue
		}
		if w == nil {
			return err
		}
		if errors.Is(err, errHooksFirst) {
			// Expired documents stand in the write's way: the hooks see
			// them with no lock held, then the write runs again and
			// re-checks them.
			if rounds++; rounds > maxInWayRounds {
				return fmt.Errorf("collection %q: %w: the expired documents in the write's way kept changing while their hooks ran", c.name, ErrExpireHook)
			}
			if approved, err = c.db.monitor.deliverInWay(s, w.pending, approved); err != nil {
				return err
			}
			attempt = -1
			continue
		}
		if err == nil {
			w.report(s)
		}
		return err
	}
}

// read returns the collection's state for a reader, or nil if the
// collection does not exist.
func (c *Collection) read() (*collState, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	return c.db.state(c.name, false)
}

// usable returns why no call can go through c: ErrClosed once the DB is
// closed, else the handle's invalid name. Every public method checks it
// before its arguments, so that a closed DB answers ErrClosed whatever else
// is wrong with the call.
func (c *Collection) usable() error {
	if err := c.db.checkOpen(); err != nil {
		return err
	}
	return c.nameErr
}

// storeOptions are the options of a collection's store: the DB's hash
// seed, and documents hold their _id key when their first field is a
// string or ObjectID _id (idKey), which saves the key's copy (about 15
// bytes a document).
func storeOptions(db *DB) store.Options {
	return store.Options{Seed: db.seed, KeyOffset: idValueOffset}
}

// idValueOffset is where a stored document may hold its _id key: its first
// field's value, if that field is _id (the encoder writes _id first).
func idValueOffset(enc []byte) int { return codec.FirstValueOffset(enc, "_id") }

// idKey returns the key of an _id value in the collection's store, such
// that two _id values share a key exactly when they compare equal: for a
// string or an ObjectID, its encoding as a document holds it
// (codec.AppendHeldValue), which the stored document then holds for the
// store (storeOptions); for any other value its order-preserving key
// (internal/keys: numbers of any kind with the same value, dates by
// instant, typed and untyped arrays with equal elements, embedded documents
// field by field). The two forms never meet: keys' first bytes are not the
// codec's string and ObjectID tags. Keys are equal or not, never ordered:
// nothing sorts by them. An array is not a valid _id.
func idKey(v any) (string, error) {
	var buf [64]byte
	k, err := appendIDKey(buf[:0], v)
	if err != nil {
		return "", err
	}
	return string(k), nil
}

// appendIDKey is idKey into a caller's buffer, for lookups that need no
// copy of the key.
func appendIDKey(dst []byte, v any) ([]byte, error) {
	if k, ok := codec.AppendHeldValue(dst, v); ok {
		return k, nil
	}
	if codec.IsArray(v) {
		return dst, fmt.Errorf("%w: _id may not be an array", ErrInvalidDocument)
	}
	k, err := keys.Append(dst, v)
	if err != nil {
		return dst, fmt.Errorf("_id: %w", err)
	}
	return k, nil
}

// Compact implements ttldb.Collection.Compact, whose documentation is the contract.
func (c *Collection) Compact(ctx context.Context) error {
	if err := c.started(ctx); err != nil {
		return err
	}
	if err := c.db.refuseTxn(ctx, "Compact"); err != nil {
		return err
	}
	if ts := c.timeSeries(); ts != nil {
		return ts.compact() // time-series: tsbucket.go
	}
	s, err := c.read()
	if err != nil || s == nil {
		return err
	}
	for {
		var wait chan struct{}
		err := c.write(func(s *collState) error {
			if len(s.builds) > 0 {
				// A build's private trees hold slots, which compacting
				// renumbers: let it end first.
				wait = s.builds[0].done
				return nil
			}
			s.compact()
			return nil
		})
		if err != nil || wait == nil {
			return err
		}
		<-wait
	}
}

// compact replaces the store and the trees by compacted copies. Call
// holding writeMu, with no index build running.
func (s *collState) compact() {
	{
		old := s.store()
		ns := old.Fork(old.Len())
		remap := make([]store.Slot, old.Stats().Slots)
		natural := newNatOrder()
		s.natural.Ascend(func(it natItem) bool {
			n := ns.CopyFrom(old, it.slot)
			remap[it.slot] = n
			natural.push(natItem{seq: it.seq, slot: n})
			return true
		})
		trees := make([]*btree.BTreeG[indexEntry], len(s.indexes))
		expiries := make([]*ordtree.Tree[expiryEntry], len(s.indexes))
		counts := make([]*expiryCounts, len(s.indexes))
		for i, ix := range s.indexes {
			if ix.tree != nil {
				trees[i] = btree.NewG(btreeDegree, ix.less)
				ix.tree.Ascend(func(e indexEntry) bool {
					e.slot = remap[e.slot]
					trees[i].ReplaceOrInsert(e)
					return true
				})
			}
			if ix.ttl != nil {
				expiries[i] = ordtree.New(expiryLess)
				ix.ttl.expiry.Ascend(func(e expiryEntry) bool {
					e.slot = remap[e.slot]
					expiries[i].ReplaceOrInsert(e)
					return true
				})
				counts[i] = ix.ttl.counts.clone()
			}
		}
		s.mu.Lock()
		s.st.Store(ns)
		s.natural = natural
		for i, ix := range s.indexes {
			ix.tree = trees[i]
			if ix.ttl != nil {
				ix.ttl.expiry, ix.ttl.counts = expiries[i], counts[i]
			}
		}
		s.mu.Unlock()
		s.settleMemory(0)
	}
}
