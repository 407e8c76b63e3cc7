package store

import (
	"sync"
	"sync/atomic"
)

// entry is a slot's row in the slot table.
type entry struct {
	hash  uint64 // of the key: the record's shard and map key
	seq   uint64
	ver   uint64 // 0: the slot is free
	chunk uint32
	off   uint32
}

const (
	pageShift = 10
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
	entrySize = 32 // bytes of an entry
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

// shard is one of the _id map's shards: hash -> slot, with the slots of
// other keys of the same 64-bit hash (true collisions, vanishingly rare)
// in over.
type shard struct {
	mu   sync.RWMutex
	m    map[uint64]Slot
	over map[uint64][]Slot // nil until a collision
	peak int               // the most entries m has held: Go maps never shrink
	_    [128 - 48]byte    // keep neighbouring shards' locks off one cache line pair
}

func (s *Store) shard(h uint64) *shard { return &s.shards[h>>(64-6)] }

// put maps h to slot and reports whether the map reached a new peak. Call
// holding mu for writing.
func (sh *shard) put(h uint64, slot Slot) (grew bool) {
	if _, taken := sh.m[h]; taken {
		if sh.over == nil {
			sh.over = map[uint64][]Slot{}
		}
		sh.over[h] = append(sh.over[h], slot)
		return false
	}
	sh.m[h] = slot
	if len(sh.m) > sh.peak {
		sh.peak = len(sh.m)
		return true
	}
	return false
}

// remove unmaps slot from h. Call holding mu for writing.
func (sh *shard) remove(h uint64, slot Slot) {
	ov := sh.over[h]
	if sh.m[h] == slot {
		if len(ov) == 0 {
			delete(sh.m, h)
			return
		}
		sh.m[h] = ov[len(ov)-1]
		ov = ov[:len(ov)-1]
	} else {
		for i, o := range ov {
			if o == slot {
				ov = append(ov[:i], ov[i+1:]...)
				break
			}
		}
	}
	if len(ov) == 0 {
		delete(sh.over, h)
	} else {
		sh.over[h] = ov
	}
}
