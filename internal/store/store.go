package store

import (
	"bytes"
	"errors"
	"hash/maphash"
	"math"
)

// Slot addresses a stored record. A slot keeps its record for as long as
// the record is stored (updates and relocations keep the slot); a deleted
// record's slot is reused by a later insert, with another version.
type Slot = uint32

// Record is a stored record as read. Its slices are read-only views of
// chunk memory that is never written again (see the package comment): they
// may be kept and read after every lock is released, but never changed.
type Record struct {
	Slot  Slot
	Seq   uint64 // the insertion sequence the caller gave
	Ver   uint64 // the version the caller gave at the last Insert or Update
	Key   []byte // the _id key bytes (a view of Doc when Doc holds them: Options.KeyOffset)
	Doc   []byte // the encoded document
	Extra []byte // the caller's extra bytes (index keys, dates)
}

// Options configure New. The zero value is usable.
type Options struct {
	// Seed seeds the key hash. Give every Store of a DB the same seed (so
	// a Compact's new Store hashes alike); the zero Seed makes a new one.
	Seed maphash.Seed
	// HashBits, if not 0, keeps only the low HashBits bits of the key
	// hash: for tests, to force collisions (1 bit: two hash values).
	HashBits uint
	// KeyOffset, if set, returns where a document may hold its own key
	// (its first field's value, say), or -1: a record whose document holds
	// its key there does not store the key again. The Store compares the
	// bytes before it relies on them. It must not retain doc.
	KeyOffset func(doc []byte) int
	// MaxChunk is the size of the largest chunk, in bytes. Default 1 MiB.
	// Chunks start at MinChunk and grow with the store; a record larger
	// than a quarter of the current chunk size gets a chunk of its own.
	MaxChunk int
}

// Default chunk sizes.
const (
	DefaultMaxChunk = 1 << 20
	MinChunk        = 16 << 10
)

// MaxRecord is the largest record (key, document and extra bytes, plus a
// few bytes of header) a Store holds.
const MaxRecord = math.MaxInt32

// ErrTooLarge is returned for a record larger than MaxRecord.
var ErrTooLarge = errors.New("store: record too large")

// Store holds the records of one collection. See the package comment for
// its concurrency rules.
type Store struct {
	opts Options
	mask uint64 // of the hash: all ones but with Options.HashBits

	shards [numShards]shard

	pages  published[*page]
	chunks published[*chunk]

	active     int64 // the chunk being filled, -1 if none
	freeIDs    []uint32
	sparse     []*chunk // sealed chunks less than half live, to reclaim
	freeSlots  []Slot
	nslots     uint32 // slots handed out so far (the table's high-water mark)
	nrec       int
	reclaiming bool

	chunkBytes int64 // the active chunk's written bytes + the others' capacity
	liveBytes  int64 // bytes of live records
	tableBytes int64 // the shards' tables' cells
	relocated  int64 // records moved out of mostly-dead chunks, ever
	dropped    int64 // chunks dropped, ever

	pending  []pendingDelete // DeleteMany's scratch
	hashes   []uint64        // DeleteMany's scratch
	touched  []uint32        // DeleteMany's chunks to look at
	touchSum uint64          // keeps the reads of DeleteMany's touch pass
	batches  uint64          // DeleteMany calls, ever
	deferred []*chunk        // chunks whose records DeleteMany will move (chunk.go)

	shardLocks int64 // holds of a shard lock by the writer, ever (tests)

	acct acctCounter
}

// New returns an empty Store.
func New(opts Options) *Store {
	if opts.Seed == (maphash.Seed{}) {
		opts.Seed = maphash.MakeSeed()
	}
	if opts.MaxChunk <= 0 {
		opts.MaxChunk = DefaultMaxChunk
	}
	opts.MaxChunk = max(opts.MaxChunk, MinChunk)
	s := &Store{opts: opts, active: -1, mask: ^uint64(0)}
	if opts.HashBits > 0 && opts.HashBits < 64 {
		s.mask = 1<<opts.HashBits - 1
	}
	for i := range s.shards {
		s.shards[i].tab = newIDTable(minTable)
	}
	s.tableBytes = numShards * minTable * 8
	s.account()
	return s
}

// Fork returns an empty Store with s's options, ready to receive about
// sizeHint records: the target of a compaction (CopyFrom).
func (s *Store) Fork(sizeHint int) *Store {
	n := New(s.opts)
	per := tableHolding(sizeHint / numShards)
	for i := range n.shards {
		n.shards[i].tab = newIDTable(per)
	}
	n.tableBytes = int64(numShards * per * 8)
	n.account()
	return n
}

// hash is the key's 64-bit hash. A direct call (not through a func value),
// so that a caller's key buffer can stay on its stack.
func (s *Store) hash(key []byte) uint64 { return maphash.Bytes(s.opts.Seed, key) & s.mask }

// Len returns the number of records.
func (s *Store) Len() int { return s.nrec }

// Lookup returns the slot of the record with this key. Call it from the
// writer or holding a lock that excludes the writer: the slot may be freed
// and reused as soon as the writer runs.
func (s *Store) Lookup(key []byte) (Slot, bool) {
	h := s.hash(key)
	sh := s.shard(h)
	sh.mu.RLock()
	slot, ok := s.find(sh, h, key)
	sh.mu.RUnlock()
	return slot, ok
}

// Get returns the record with this key. It is safe concurrently with the
// writer: it holds only the key's shard lock, for one map lookup and the
// reading of a slot, and the record's bytes never change afterwards.
func (s *Store) Get(key []byte) (Record, bool) {
	h := s.hash(key)
	sh := s.shard(h)
	sh.mu.RLock()
	slot, ok := s.find(sh, h, key)
	var r Record
	if ok {
		r = s.record(slot)
	}
	sh.mu.RUnlock()
	return r, ok
}

// Record returns the record in slot, which must hold one. Call it from the
// writer or holding a lock that excludes the writer.
func (s *Store) Record(slot Slot) Record { return s.record(slot) }

// Live reports whether slot holds a record. Same rule as Record.
func (s *Store) Live(slot Slot) bool {
	return slot < s.nslots && s.ent(slot).live()
}

// Ascend calls fn for each record in slot order until fn returns false.
// Same rule as Record.
func (s *Store) Ascend(fn func(Record) bool) {
	for slot := range s.nslots {
		if s.ent(slot).live() && !fn(s.record(slot)) {
			return
		}
	}
}

// CheckSize returns ErrTooLarge if a record of these parts cannot be stored.
func CheckSize(key, doc, extra int) error {
	if int64(key)+int64(doc)+int64(extra)+maxHeader > MaxRecord {
		return ErrTooLarge
	}
	return nil
}

// Insert stores a new record with the caller's insertion sequence and
// version (a non-zero number that identifies this version of the record),
// both at most MaxSeq, and returns its slot. The key must not be stored already (the caller
// checks with Lookup), and the record must pass CheckSize. A Store holds at
// most 2^32-1 records at once (its slot table would take 80 GiB). Writer
// only.
func (s *Store) Insert(key, doc, extra []byte, seq, ver uint64) Slot {
	mustSeq(seq, ver)
	return s.insert(key, doc, extra, seq, ver)
}

// InsertHashed is Insert for a key whose hash PrefetchHashed gave: a batch
// then hashes each key once. It returns the record as Record would read it
// (its slices the store's copies), without reading it back. Writer only.
func (s *Store) InsertHashed(h uint64, key, doc, extra []byte, seq, ver uint64) Record {
	mustSeq(seq, ver)
	return s.insertHashed(h, key, doc, extra, seq, ver)
}

// LookupHashed is Lookup for the writer, with the key's hash from
// PrefetchHashed: only the writer changes the table, so it takes no lock.
// Writer only.
func (s *Store) LookupHashed(h uint64, key []byte) (Slot, bool) {
	return s.find(s.shard(h), h, key)
}

// InsertNew is Insert for a key that may be stored already: it stores the
// record only if no record has the key and reports whether it did;
// otherwise it returns the slot of the record that has it. When the key is
// new it hashes the key once and probes the map once, where Lookup then
// Insert do each twice: for bulk loads. Writer only.
func (s *Store) InsertNew(key, doc, extra []byte, seq, ver uint64) (slot Slot, inserted bool) {
	// The writer reads the table without the shard lock: only it changes
	// it.
	return s.InsertNewHashed(s.hash(key), key, doc, extra, seq, ver)
}

// CopyFrom inserts the record of another Store (the one s was forked
// from) keeping its sequence and version, and returns its new slot.
// Writer of s only; from must not change meanwhile.
func (s *Store) CopyFrom(from *Store, slot Slot) Slot {
	r := from.record(slot)
	return s.insert(r.Key, r.Doc, r.Extra, r.Seq, r.Ver)
}

func (s *Store) insert(key, doc, extra []byte, seq, ver uint64) Slot {
	return s.insertHashed(s.hash(key), key, doc, extra, seq, ver).Slot
}

func (s *Store) insertHashed(h uint64, key, doc, extra []byte, seq, ver uint64) Record {
	slot := s.allocSlot()
	ci, off, k, d, x := s.write(slot, key, doc, extra)
	e := s.ent(slot)
	sh := s.shard(h)
	if sh.tab.needsGrow() {
		s.resize(sh, grownSize(len(sh.tab.cells)))
	}
	s.lockShard(sh)
	*e = makeEntry(seq, ver, ci, off)
	sh.tab.put(tagOf(h), slot)
	sh.mu.Unlock()
	s.nrec++
	s.account()
	return Record{Slot: slot, Seq: seq, Ver: ver, Key: k, Doc: d, Extra: x}
}

// resize rebuilds a shard's table in cells cells, with no lock held while
// it rehashes (only the writer changes a table), and swaps it in under the
// shard lock. Writer only.
func (s *Store) resize(sh *shard, cells int) {
	nt := sh.tab.rebuilt(cells)
	s.tableBytes += int64(len(nt.cells)-len(sh.tab.cells)) * 8
	s.lockShard(sh)
	sh.tab = nt
	sh.mu.Unlock()
}

// Update replaces the document and extra bytes of the record in slot (its
// key and sequence stay), giving it version ver (non-zero, at most
// MaxSeq). Readers that read the old version keep it unchanged. Writer
// only.
func (s *Store) Update(slot Slot, doc, extra []byte, ver uint64) {
	mustSeq(0, ver)
	e := s.ent(slot)
	old, oldSize := s.recordSized(slot)
	ci, off, _, _, _ := s.write(slot, old.Key, doc, extra)
	oldChunk := e.chunk // read after write, which may have moved the old version
	sh := s.shard(s.hash(old.Key))
	s.lockShard(sh)
	e.chunk, e.off = ci, off
	e.setVer(ver)
	sh.mu.Unlock()
	s.release(oldChunk, oldSize)
	s.account()
}

// Delete removes the record in slot and frees the slot. Writer only.
func (s *Store) Delete(slot Slot) {
	e := s.ent(slot)
	old, size := s.recordSized(slot)
	oldChunk := e.chunk
	h := s.hash(old.Key)
	sh := s.shard(h)
	s.lockShard(sh)
	sh.tab.remove(tagOf(h), slot)
	*e = entry{}
	sh.mu.Unlock()
	if sh.tab.needsShrink() {
		s.resize(sh, tableFor(sh.tab.n))
	}
	s.freeSlots = append(s.freeSlots, slot)
	s.nrec--
	s.release(oldChunk, size)
	s.account()
}

// find returns the slot holding key. Call holding sh.mu.
func (s *Store) find(sh *shard, h uint64, key []byte) (Slot, bool) {
	t := &sh.tab
	tag := tagOf(h)
	mask := len(t.cells) - 1
	for i := t.home(tag); ; i = (i + 1) & mask {
		c := t.cells[i]
		if c == 0 {
			return 0, false
		}
		if cellTag(c) == tag {
			if slot := Slot(c); bytes.Equal(s.keyOf(slot), key) {
				return slot, true
			}
		}
	}
}

func (s *Store) allocSlot() Slot {
	if n := len(s.freeSlots); n > 0 {
		slot := s.freeSlots[n-1]
		s.freeSlots = s.freeSlots[:n-1]
		return slot
	}
	slot := s.nslots
	if int(slot>>pageShift) == len(s.pages.load()) {
		s.pages.append(new(page))
	}
	s.nslots++
	return slot
}

// Stats describe a Store's memory, for tests and metrics.
type Stats struct {
	Records    int
	Slots      int   // slots handed out (live and free)
	Chunks     int   // chunks held
	ChunkBytes int64 // their bytes (the chunk being filled: written bytes only)
	LiveBytes  int64 // bytes of live records in them
	Relocated  int64 // records ever moved out of mostly-dead chunks
	Dropped    int64 // chunks ever dropped
}

// Stats returns the Store's figures. Same rule as Record.
func (s *Store) Stats() Stats {
	n := 0
	for _, c := range s.chunks.load() {
		if c != nil {
			n++
		}
	}
	return Stats{Records: s.nrec, Slots: int(s.nslots), Chunks: n, ChunkBytes: s.chunkBytes,
		LiveBytes: s.liveBytes, Relocated: s.relocated, Dropped: s.dropped}
}

// pendingDelete is a record DeleteMany is removing, with its key's hash.
type pendingDelete struct {
	hash uint64
	slot Slot
}

// DeleteMany removes the records in slots (distinct, each holding a
// record) and frees the slots, as Delete would one by one, with one hold
// of each shard's lock for all the batch's keys in that shard: the home
// cells of a shard's keys are read first, before the lock, one after the
// other with no dependence between the reads, so that their cache misses
// overlap, and then the keys are removed under the lock. Writer only.
func (s *Store) DeleteMany(slots []Slot) {
	if len(slots) == 0 {
		return
	}
	// The records' bytes go first (without reclaiming: a chunk dropped or
	// reused now would be released again below), then the keys, shard by
	// shard, then the chunks are looked at.
	var perShard [numShards + 1]int
	touched := s.touched[:0]
	s.batches++
	if cap(s.hashes) < len(slots) {
		s.hashes = make([]uint64, len(slots))
	}
	hashes := s.hashes[:len(slots)]
	for j, slot := range slots {
		e := s.ent(slot)
		c := s.chunks.load()[e.chunk]
		_, key, _, _, _, size := parseRecord(c.buf, e.off)
		h := s.hash(key)
		hashes[j] = h
		c.batch = s.batches
		c.live -= size
		s.liveBytes -= int64(size)
		perShard[h>>(64-6)+1]++
		if n := len(touched); n == 0 || touched[n-1] != e.chunk {
			touched = append(touched, e.chunk)
		}
	}
	for i := 1; i <= numShards; i++ {
		perShard[i] += perShard[i-1]
	}
	if cap(s.pending) < len(slots) {
		s.pending = make([]pendingDelete, len(slots))
	}
	byShard := s.pending[:len(slots)]
	next := perShard
	for j, slot := range slots {
		h := hashes[j]
		i := h >> (64 - 6)
		byShard[next[i]] = pendingDelete{hash: h, slot: slot}
		next[i]++
	}
	for i := range numShards {
		group := byShard[perShard[i]:perShard[i+1]]
		if len(group) == 0 {
			continue
		}
		sh := &s.shards[i]
		// Read before the lock (only the writer changes a table): readers
		// of the shard wait for the removals alone.
		var sum uint64
		for _, d := range group {
			sum += sh.tab.touch(tagOf(d.hash))
		}
		s.touchSum += sum
		s.lockShard(sh)
		for _, d := range group {
			sh.tab.remove(tagOf(d.hash), d.slot)
			*s.ent(d.slot) = entry{}
		}
		sh.mu.Unlock()
		if sh.tab.needsShrink() {
			s.resize(sh, tableFor(sh.tab.n))
		}
	}
	s.freeSlots = append(s.freeSlots, slots...)
	s.nrec -= len(slots)
	// A chunk the batch left less than a quarter live is moved out of
	// only once a batch no longer deletes from it (or at Settle): deletions
	// in insertion order empty chunks one after the other, and moving the
	// last quarter of each would copy a quarter of what they delete.
	for _, ci := range touched {
		if s.chunks.load()[ci] != nil {
			s.reclaimOrDefer(ci, true)
		}
	}
	s.settleDeferred(false)
	s.touched = touched[:0]
	s.account()
}

// lockShard takes a shard's lock for writing, counting the holds.
func (s *Store) lockShard(sh *shard) {
	sh.mu.Lock()
	s.shardLocks++
}

// PrefetchHashed is Prefetch that also appends each key's hash to hashes
// and returns it, for InsertNewHashed: a batch then hashes each key once.
// Writer only.
func (s *Store) PrefetchHashed(keys [][]byte, hashes []uint64) []uint64 {
	var sum uint64
	for _, k := range keys {
		h := s.hash(k)
		hashes = append(hashes, h)
		sum += s.shard(h).tab.touch(tagOf(h))
	}
	s.touchSum += sum
	return hashes
}

// InsertNewHashed is InsertNew for a key whose hash PrefetchHashed gave.
// Writer only.
func (s *Store) InsertNewHashed(h uint64, key, doc, extra []byte, seq, ver uint64) (slot Slot, inserted bool) {
	mustSeq(seq, ver)
	sh := s.shard(h)
	if slot, found := s.find(sh, h, key); found {
		return slot, false
	}
	return s.insertHashed(h, key, doc, extra, seq, ver).Slot, true
}

// Prefetch reads the home cells of these keys' _id table entries, so that
// the lookups that follow (a batch of inserts checks each new key) find
// them in the cache: the reads depend on nothing, so their cache misses
// overlap, where the lookups' would come one after another. Writer only.
func (s *Store) Prefetch(keys [][]byte) {
	var sum uint64
	for _, k := range keys {
		h := s.hash(k)
		sum += s.shard(h).tab.touch(tagOf(h))
	}
	s.touchSum += sum
}
