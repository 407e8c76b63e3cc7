package store

import (
	"sync"
	"sync/atomic"
)

// entry is a slot's row in the slot table. It keeps no hash of the key:
// the writer hashes the key again (a few nanoseconds) where it needs the
// shard, and each entry is 8 bytes smaller.
type entry struct {
	seq   uint64
	ver   uint64 // 0: the slot is free
	chunk uint32
	off   uint32
}

const (
	pageShift = 10
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
	entrySize = 24 // bytes of an entry
)

// page is a fixed block of the slot table. Pages never move: the table
// grows by adding pages, so a reader can read a slot while the writer adds
// pages.
type page [pageSize]entry

func (s *Store) ent(slot Slot) *entry {
	return &s.pages.load()[slot>>pageShift][slot&pageMask]
}

// published is a slice that only the writer changes and that readers read
// without the writer's lock: the writer sets elements readers are not
// reading (a reader reads an element only once a happens-before edge, such
// as a shard lock, told it the element is in use) and publishes a longer
// slice, when it appends, with an atomic pointer. The backing array is
// copied only when full.
type published[T any] struct {
	p atomic.Pointer[[]T]
}

func (t *published[T]) load() []T {
	if p := t.p.Load(); p != nil {
		return *p
	}
	return nil
}

// append adds v and returns its index.
func (t *published[T]) append(v T) int {
	s := t.load()
	if len(s) == cap(s) {
		ns := make([]T, len(s), max(4, 2*cap(s)))
		copy(ns, s)
		s = ns
	}
	s = append(s, v)
	t.p.Store(&s)
	return len(s) - 1
}

const numShards = 64

// shard is one of the _id map's shards: a table from the key's hash to
// its slot (idtable.go), collisions resolved against the stored keys.
type shard struct {
	mu  sync.RWMutex
	tab idTable
	_   [128 - 56]byte // keep neighbouring shards' locks off one cache line pair
}

func (s *Store) shard(h uint64) *shard { return &s.shards[h>>(64-6)] }
