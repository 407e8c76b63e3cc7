package store

import "sync/atomic"

// Memory accounting. A Store counts the bytes it holds: its chunks (the
// one being filled up to its written bytes, the others whole, dead bytes
// included until the chunk is dropped), its slot table, its free-slot list
// and its _id tables' cells.

// MapEntryBytes is the measured heap cost of one entry of a Go map with
// small keys and values (a uint64 key and a uint32 value in Go's swiss
// tables, at their average load): for callers that account Go maps.
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
		s.tableBytes
	s.acct.v.Store(total)
}

// InsertPlan bounds what a batch of inserts adds to Bytes, before the
// batch runs: Add each record in the order the inserts will come. The zero
// value is ready for use.
type InsertPlan struct {
	added [numShards]int // keys the batch adds to each shard so far
	cells [numShards]int // the cells each shard's table will have (0: as now)
}

// Add returns what inserting a record with this key and these part sizes
// adds to Bytes, after the inserts added before it: the record, a slot, and
// the doubling of its shard's table if the key fills it (a doubling the
// table's later keys then use: its bytes are counted once). (The tail of a
// chunk left unfilled when a record does not fit, counted when the chunk is
// sealed, is not in the bound: it is smaller than that record.) Read the
// tables as the writer, before the batch.
func (s *Store) PlanInsert(p *InsertPlan, key []byte, doc, extra int) int64 {
	cost := int64(recordSize(len(key), doc, extra)) + entrySize
	i := s.hash(key) >> (64 - 6)
	t := &s.shards[i].tab
	if p.cells[i] == 0 {
		p.cells[i] = len(t.cells)
	}
	p.added[i]++
	if n := t.n + p.added[i]; n*4 > p.cells[i]*3 {
		grown := grownSize(p.cells[i])
		cost += int64(grown-p.cells[i]) * 8
		p.cells[i] = grown
	}
	return cost
}

// UpdateCost bounds what rewriting a record with these part sizes adds to
// Bytes until its old bytes are reclaimed.
func UpdateCost(key, doc, extra int) int64 {
	return int64(recordSize(key, doc, extra))
}
