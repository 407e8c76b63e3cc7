package store

import "sync/atomic"

// Memory accounting. A Store counts the bytes it holds: its chunks (the
// one being filled up to its written bytes, the others whole, dead bytes
// included until the chunk is dropped), its slot table, its free-slot list
// and its hash map, whose per-entry cost is measured (TestMapEntryBytes).
// Go maps never shrink, so a shard counts the most entries it has held.

// MapEntryBytes is the measured heap cost of one entry of a shard's map
// (a uint64 key and a uint32 slot in Go's swiss tables, at their average
// load).
const MapEntryBytes = 30

// acctCounter is the published total, readable from any goroutine.
type acctCounter struct{ v atomic.Int64 }

// Bytes returns the bytes the Store holds, as accounted. Safe from any
// goroutine: it is the figure the writer published last.
func (s *Store) Bytes() int64 { return s.acct.v.Load() }

// account recomputes and publishes the total. Writer only.
func (s *Store) account() {
	total := s.chunkBytes +
		int64(s.nslots)*entrySize +
		int64(cap(s.freeSlots))*4 +
		int64(s.mapPeak)*MapEntryBytes
	s.acct.v.Store(total)
}

// InsertCost bounds what inserting a record with these part sizes adds to
// Bytes: the record, a slot and a map entry. (The tail of a chunk left
// unfilled when a record does not fit, counted when the chunk is sealed,
// is not in the bound: it is smaller than that record.)
func InsertCost(key, doc, extra int) int64 {
	return int64(recordSize(key, doc, extra)) + entrySize + MapEntryBytes
}

// UpdateCost bounds what rewriting a record with these part sizes adds to
// Bytes until its old bytes are reclaimed.
func UpdateCost(key, doc, extra int) int64 {
	return int64(recordSize(key, doc, extra))
}
