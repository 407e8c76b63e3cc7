package store

import (
	"encoding/binary"
	"math/bits"
)

// A record in a chunk is its slot (4 bytes, little-endian, so that a walk
// over a chunk can tell live records from dead ones), a uvarint telling the
// key's length and where it is, the uvarint lengths of its document and
// extra bytes, then those bytes. The key is stored before the document
// (the uvarint is its length times 2), unless the document holds it
// (Options.KeyOffset): then the uvarint is its length times 2 plus 1, a
// uvarint of its offset in the document follows, and the key is not
// stored again (a string _id's 15 bytes or so, most of the time).
const maxHeader = 4 + 4*binary.MaxVarintLen32

func uvarintLen(n int) int { return (bits.Len64(uint64(n)|1) + 6) / 7 }

// recordSize is the size of a record with its key stored: no record of
// these parts is larger (a key is kept in the document only when that is
// smaller).
func recordSize(key, doc, extra int) int {
	return 4 + uvarintLen(key<<1) + uvarintLen(doc) + uvarintLen(extra) + key + doc + extra
}

// noKeyOffset marks a record that stores its key.
const noKeyOffset = -1

// recordLen is the size of a record whose key is at keyOff in the
// document, or stored if keyOff is noKeyOffset.
func recordLen(key, keyOff, doc, extra int) int {
	if keyOff == noKeyOffset {
		return recordSize(key, doc, extra)
	}
	return 4 + uvarintLen(key<<1|1) + uvarintLen(keyOff) + uvarintLen(doc) + uvarintLen(extra) + doc + extra
}

// keyOffset returns where doc holds key, if Options.KeyOffset says it does
// and that makes the record smaller, else noKeyOffset.
func (s *Store) keyOffset(key, doc []byte) int {
	if s.opts.KeyOffset == nil {
		return noKeyOffset
	}
	off := s.opts.KeyOffset(doc)
	if off < 0 || off > len(doc)-len(key) || uvarintLen(off) >= len(key) ||
		string(doc[off:off+len(key)]) != string(key) {
		return noKeyOffset
	}
	return off
}

// putRecord writes a record into dst, which has exactly its size
// (recordLen), and returns its key, document and extra bytes as parseRecord
// would read them back: views of dst, each capped at its end.
func putRecord(dst []byte, slot Slot, key []byte, keyOff int, doc, extra []byte) (k, d, e []byte) {
	binary.LittleEndian.PutUint32(dst, slot)
	i := 4
	if keyOff == noKeyOffset {
		i += binary.PutUvarint(dst[i:], uint64(len(key))<<1)
	} else {
		i += binary.PutUvarint(dst[i:], uint64(len(key))<<1|1)
		i += binary.PutUvarint(dst[i:], uint64(keyOff))
	}
	i += binary.PutUvarint(dst[i:], uint64(len(doc)))
	i += binary.PutUvarint(dst[i:], uint64(len(extra)))
	if keyOff == noKeyOffset {
		ke := i + copy(dst[i:], key)
		k, i = dst[i:ke:ke], ke
	}
	de := i + copy(dst[i:], doc)
	d = dst[i:de:de]
	ee := de + copy(dst[de:], extra)
	e = dst[de:ee:ee]
	if keyOff != noKeyOffset {
		ke := keyOff + len(key)
		k = d[keyOff:ke:ke]
	}
	return k, d, e
}

// parseRecord reads the record at off. Each slice is capped at its end, so
// that an append to it can never write into the chunk; a key held in the
// document is a view of it. keyOff is where the document holds the key,
// or noKeyOffset.
func parseRecord(buf []byte, off uint32) (slot Slot, key, doc, extra []byte, keyOff, size int) {
	b := buf[off:]
	slot = binary.LittleEndian.Uint32(b)
	i := 4
	kf, n := binary.Uvarint(b[i:])
	i += n
	kl := int(kf >> 1)
	keyOff = noKeyOffset
	if kf&1 != 0 {
		ko, n := binary.Uvarint(b[i:])
		i += n
		keyOff = int(ko)
	}
	dl, n := binary.Uvarint(b[i:])
	i += n
	el, n := binary.Uvarint(b[i:])
	i += n
	if keyOff != noKeyOffset {
		d, e := i+int(dl), i+int(dl)+int(el)
		ks, ke := i+keyOff, i+keyOff+kl
		return slot, b[ks:ke:ke], b[i:d:d], b[d:e:e], keyOff, e
	}
	k, d, e := i+kl, i+kl+int(dl), i+kl+int(dl)+int(el)
	return slot, b[i:k:k], b[k:d:d], b[d:e:e], keyOff, e
}

// chunk is a block of records. Its buf never changes once made; bytes
// [0, used) are written once and never again. used and live are the
// writer's.
type chunk struct {
	buf    []byte
	id     uint32
	used   int
	live   int  // bytes of live records
	sparse bool // listed in Store.sparse
	// deferred: listed in Store.deferred; batch: the DeleteMany batch that
	// last deleted from it.
	deferred bool
	batch    uint64
}

// record reads the record in slot. Call as the writer, holding a lock that
// excludes it, or holding the shard lock of the record's key.
func (s *Store) record(slot Slot) Record {
	r, _ := s.recordSized(slot)
	return r
}

// recordSized is record, with the record's size in its chunk.
func (s *Store) recordSized(slot Slot) (Record, int) {
	e := s.ent(slot)
	c := s.chunks.load()[e.chunk]
	_, key, doc, extra, _, size := parseRecord(c.buf, e.off)
	return Record{Slot: slot, Seq: e.seq(), Ver: e.ver(), Key: key, Doc: doc, Extra: extra}, size
}

func (s *Store) keyOf(slot Slot) []byte {
	e := s.ent(slot)
	_, key, _, _, _, _ := parseRecord(s.chunks.load()[e.chunk].buf, e.off)
	return key
}

// chunkTarget is the size of the next shared chunk: an eighth of what the
// chunks hold now, between MinChunk and MaxChunk, so that a small
// collection does not sit on a megabyte.
func (s *Store) chunkTarget() int {
	t := MinChunk
	for t < s.opts.MaxChunk && int64(t) < s.chunkBytes/8 {
		t *= 2
	}
	return min(t, s.opts.MaxChunk)
}

// write appends a record to the chunk being filled (or to a chunk of its
// own if it is large) and returns where it went, and the record's parts
// there (putRecord).
func (s *Store) write(slot Slot, key, doc, extra []byte) (ci, off uint32, k, d, e []byte) {
	keyOff := s.keyOffset(key, doc)
	n := recordLen(len(key), keyOff, len(doc), len(extra))
	s.liveBytes += int64(n)
	if n > s.chunkTarget()/4 {
		ci := s.newChunk(n)
		c := s.chunks.load()[ci]
		k, d, e = putRecord(c.buf, slot, key, keyOff, doc, extra)
		c.used, c.live = n, n
		s.chunkBytes += int64(n)
		return ci, 0, k, d, e
	}
	for !s.fits(n) {
		if s.active >= 0 {
			s.seal() // which may move records into a new active chunk
			continue
		}
		s.active = int64(s.newChunk(max(s.chunkTarget(), n)))
		s.reclaim(int64(len(s.chunks.load()[s.active].buf)))
	}
	ci = uint32(s.active)
	c := s.chunks.load()[ci]
	off = uint32(c.used)
	k, d, e = putRecord(c.buf[c.used:c.used+n], slot, key, keyOff, doc, extra)
	c.used += n
	c.live += n
	s.chunkBytes += int64(n)
	return ci, off, k, d, e
}

// fits reports whether the active chunk has room for n bytes.
func (s *Store) fits(n int) bool {
	if s.active < 0 {
		return false
	}
	c := s.chunks.load()[s.active]
	return len(c.buf)-c.used >= n
}

// seal ends the filling of the active chunk: its unwritten tail now counts
// (it is held, and nothing will use it), and it is reclaimed like any other
// chunk if little of it is live.
func (s *Store) seal() {
	if s.active < 0 {
		return
	}
	ci := uint32(s.active)
	c := s.chunks.load()[ci]
	s.chunkBytes += int64(len(c.buf) - c.used)
	s.active = -1
	s.maybeReclaim(ci)
}

func (s *Store) newChunk(size int) uint32 {
	c := &chunk{buf: make([]byte, size)}
	if n := len(s.freeIDs); n > 0 {
		c.id = s.freeIDs[n-1]
		s.freeIDs = s.freeIDs[:n-1]
		s.chunks.load()[c.id] = c
		return c.id
	}
	c.id = uint32(len(s.chunks.load()))
	s.chunks.append(c)
	return c.id
}

// release marks size bytes of chunk ci dead.
func (s *Store) release(ci uint32, size int) {
	c := s.chunks.load()[ci]
	c.live -= size
	s.liveBytes -= int64(size)
	s.maybeReclaim(ci)
}

// maybeReclaim drops chunk ci if nothing in it is live, moves its live
// records to the chunk being filled (and drops it) if less than a quarter
// of it is live, and lists it for reclaiming when a new chunk starts if
// less than half of it is. The chunk being filled is left alone. Moving
// costs a copy of the bytes and a shard lock per record, little beside
// what deleting the other three quarters cost (index and tree updates), so
// a deletion that leaves survivors scattered (a TTL pass expiring 90%)
// gives its memory back without waiting for Compact.
func (s *Store) maybeReclaim(ci uint32) { s.reclaimOrDefer(ci, false) }

// reclaimOrDefer is maybeReclaim; with deferMoves, a chunk whose records
// would move is listed in s.deferred instead (and for reclaiming when a
// new chunk starts): DeleteMany defers the moves out of chunks its batch
// is deleting from, which the next batches may well empty.
func (s *Store) reclaimOrDefer(ci uint32, deferMoves bool) {
	if int64(ci) == s.active {
		return
	}
	c := s.chunks.load()[ci]
	switch {
	case c.live == 0:
		s.dropChunk(ci)
	case 4*c.live < len(c.buf) && deferMoves:
		if !c.deferred {
			c.deferred = true
			s.deferred = append(s.deferred, c)
		}
		if !c.sparse {
			c.sparse = true
			s.sparse = append(s.sparse, c)
		}
	case 4*c.live < len(c.buf) && !s.reclaiming:
		s.reclaiming = true
		s.relocate(ci)
		s.reclaiming = false
		s.dropChunk(ci)
	case 2*c.live < len(c.buf) && !c.sparse:
		c.sparse = true
		s.sparse = append(s.sparse, c)
	}
}

// reclaim moves the live records of listed mostly-dead chunks to the chunk
// being filled, and drops those chunks, until it has moved at least budget
// bytes (budget < 0: all). It runs when a new chunk is started. Each chunk
// moved frees at least twice what is copied, so reclaiming costs O(1) per
// byte deleted.
func (s *Store) reclaim(budget int64) {
	if s.reclaiming {
		return
	}
	s.reclaiming = true
	defer func() { s.reclaiming = false }()
	moved := int64(0)
	for len(s.sparse) > 0 && (budget < 0 || moved < budget) {
		c := s.sparse[0]
		s.sparse[0] = nil
		s.sparse = s.sparse[1:]
		if c.buf == nil {
			continue // dropped since it was listed
		}
		moved += int64(c.live)
		s.relocate(c.id)
		s.dropChunk(c.id)
	}
	if len(s.sparse) == 0 {
		s.sparse = nil
	}
}

// settleDeferred moves the live records out of the chunks DeleteMany
// deferred (those still less than a quarter live), except, unless all,
// those the current batch deleted from.
func (s *Store) settleDeferred(all bool) {
	kept := s.deferred[:0]
	for _, c := range s.deferred {
		switch {
		case c.buf == nil:
			// dropped since it was listed
		case !all && c.batch == s.batches:
			kept = append(kept, c)
		default:
			c.deferred = false
			s.maybeReclaim(c.id)
		}
	}
	clear(s.deferred[len(kept):])
	s.deferred = kept
}

// Settle moves the live records out of the chunks whose moves DeleteMany
// deferred, as the batches that deferred them would have: the TTL monitor
// calls it when a visit ends, so that an expiry that leaves survivors
// scattered gives their chunks' memory back at once. Writer only.
func (s *Store) Settle() {
	s.settleDeferred(true)
	s.account()
}

// Reclaim moves the live records of every mostly-dead chunk and drops the
// chunks, returning what Bytes no longer counts. For a writer about to be
// refused for want of memory. Writer only.
func (s *Store) Reclaim() int64 {
	before := s.chunkBytes
	s.reclaim(-1)
	s.account()
	return before - s.chunkBytes
}

// relocate copies the live records of chunk ci to the chunk being filled,
// repointing each slot under its key's shard lock.
func (s *Store) relocate(ci uint32) {
	c := s.chunks.load()[ci]
	for off := 0; off < c.used; {
		slot, key, doc, extra, _, n := parseRecord(c.buf, uint32(off))
		if slot < s.nslots {
			if e := s.ent(slot); e.live() && e.chunk == ci && e.off == uint32(off) {
				s.liveBytes -= int64(n) // write counts it again
				nci, noff, _, _, _ := s.write(slot, key, doc, extra)
				sh := s.shard(s.hash(key))
				s.lockShard(sh)
				e.chunk, e.off = nci, noff
				sh.mu.Unlock()
				s.relocated++
			}
		}
		off += n
	}
}

func (s *Store) dropChunk(ci uint32) {
	c := s.chunks.load()[ci]
	s.chunkBytes -= int64(len(c.buf))
	// The sparse list may still point at c: let the bytes go now (no
	// reader reads a chunk without live records).
	c.buf = nil
	s.chunks.load()[ci] = nil
	s.freeIDs = append(s.freeIDs, ci)
	s.dropped++
}
