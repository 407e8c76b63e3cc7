package engine

import (
	"fmt"

	"github.com/ttldb/ttldb/internal/store"
)

// WithMemoryLimit implements ttldb.WithMemoryLimit, whose documentation is the contract.
func WithMemoryLimit(bytes int64) Option {
	return func(cfg *config) error {
		if bytes < 0 {
			return fmt.Errorf("%w: WithMemoryLimit: negative limit %d", ErrInvalidOptions, bytes)
		}
		cfg.memLimit = bytes
		return nil
	}
}

// Estimated bytes per B-tree entry, per byte of the item. google/btree
// nodes (index trees) filled in key order end about half full; in random
// order about two-thirds full. The TTL indexes' date trees
// (internal/ordtree) keep full leaves when dates arrive in order (about 1.03
// bytes per item byte), and about three-quarters full ones otherwise.
const (
	treeFactorOrdered = 2.1
	treeFactorRandom  = 1.8
	treeFactorDates   = 1.15
)

// Sizes of the tree items, in bytes.
const (
	indexEntrySize  = 32
	expiryEntrySize = 24
)

func treeBytes(n int, itemSize int, factor float64) int64 {
	return int64(float64(n*itemSize) * factor)
}

// keyHeapBytes is the heap an index key holds besides its entry: its
// bytes (the keys of one document share one allocation).
func keyHeapBytes(k string) int64 { return int64((len(k) + 7) &^ 7) }

// memBytes is the collection's accounted memory. Call holding writeMu.
func (s *collState) memBytes() int64 {
	b := s.store().Bytes() + s.natural.bytes()
	for _, ix := range s.indexes {
		if ix.tree != nil {
			b += treeBytes(ix.tree.Len(), indexEntrySize, treeFactorRandom) + ix.keyBytes
		}
		if ix.ttl != nil {
			b += treeBytes(ix.ttl.expiry.Len(), expiryEntrySize, treeFactorDates) + ix.ttl.counts.bytes()
		}
	}
	return b
}

// bytes estimates the memory of the backlog counts: their maps' entries.
func (c *expiryCounts) bytes() int64 {
	n := 0
	for _, m := range c.levels {
		n += len(m)
	}
	return int64(n) * store.MapEntryBytes
}

// reserve books cost bytes of the DB's budget for a write about to commit,
// or fails with ErrMemoryLimit, first reclaiming what the collection's
// store can. The write then calls settleMemory(cost). Call holding
// writeMu.
func (s *collState) reserve(cost int64) error {
	limit := s.db.cfg.memLimit
	if limit == 0 || cost <= 0 {
		return nil
	}
	for attempt := 0; ; attempt++ {
		if s.db.mem.Add(cost) <= limit {
			return nil
		}
		s.db.mem.Add(-cost)
		if attempt > 0 {
			return fmt.Errorf("collection %q: %w: the write needs about %d bytes, %d of %d are in use",
				s.name, ErrMemoryLimit, cost, s.db.mem.Load(), limit)
		}
		s.mu.Lock()
		s.store().Reclaim()
		s.mu.Unlock()
		s.settleMemory(0)
	}
}

// settleMemory replaces a write's reservation (0: none) by what the
// collection now holds. Call holding writeMu, after every change.
func (s *collState) settleMemory(reserved int64) {
	if s.ts != nil {
		return // a time-series collection settles under its own lock (tsmemory.go)
	}
	cur := s.memBytes()
	s.db.mem.Add(cur - s.memAcct - reserved)
	s.memAcct = cur
	s.memPub.Store(cur)
}

// insertCost bounds what storing a new document adds to the accounted
// memory, after the documents of its batch planned before it in plan: its
// record (and any growth of the _id table), and its index and TTL entries.
// (The natural order's growth is the batch's: natOrder.growthFor.)
func (s *collState) insertCost(plan *store.InsertPlan, key, enc, extra []byte, dk docKeys) int64 {
	c := s.store().PlanInsert(plan, key, len(enc), len(extra))
	return c + s.keysCost(dk)
}

// keysCost bounds what a document's index and TTL entries add.
func (s *collState) keysCost(dk docKeys) int64 {
	var c int64
	for i := range dk {
		c += treeBytes(len(dk[i].keys), indexEntrySize, treeFactorOrdered)
		for _, k := range dk[i].keys {
			c += keyHeapBytes(k)
		}
		if dk[i].ttl.ok {
			// The entry, and at worst a new bucket at every level of the
			// backlog counts.
			c += treeBytes(1, expiryEntrySize, treeFactorDates) + countLevels*store.MapEntryBytes
		}
	}
	return c
}

// StorageMetrics report the memory a DB holds, as it accounts it for
// WithMemoryLimit (see there for what counts).
type StorageMetrics struct {
	Bytes        int64            // accounted bytes of all collections
	Limit        int64            // the WithMemoryLimit limit; 0: none
	ByCollection map[string]int64 // Bytes split by collection
}

// storageMetrics snapshots the accounted memory without taking any
// collection lock.
func (db *DB) storageMetrics() StorageMetrics {
	m := StorageMetrics{Limit: db.cfg.memLimit, ByCollection: map[string]int64{}}
	for _, s := range db.snapshotCollections() {
		b := s.memPub.Load()
		m.ByCollection[s.name] = b
		m.Bytes += b
	}
	return m
}
