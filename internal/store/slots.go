package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// entry is a slot's row in the slot table: 20 bytes. It keeps no hash of
// the key: the writer hashes the key again (a few nanoseconds) where it
// needs the shard, and each entry is 8 bytes smaller. The insertion
// sequence and the version take 48 bits each (MaxSeq), split in a low and
// a high part so that the entry needs no 8-byte alignment.
//
// An entry is changed by the writer holding its key's shard lock, and read
// by the writer, by a reader holding that shard lock, or by a reader
// holding a lock that excludes the writer: never torn.
type entry struct {
	seqLo uint32
	seqHi uint16
	verHi uint16
	verLo uint32 // verLo and verHi 0: the slot is free
	chunk uint32
	off   uint32
}

// MaxSeq is the largest insertion sequence and the largest version a
// Store keeps: each takes 48 bits of a slot's entry. At a million writes a
// second, 2^48 lasts about nine years; the caller refuses a write beyond
// it (CheckSeq), and Insert and Update panic on one.
const MaxSeq = 1<<48 - 1

// ErrSeqRange is returned by CheckSeq for an insertion sequence or a
// version above MaxSeq.
var ErrSeqRange = errors.New("store: insertion sequence or version above 2^48-1")

// CheckSeq returns ErrSeqRange if seq or ver is above MaxSeq.
func CheckSeq(seq, ver uint64) error {
	if seq > MaxSeq || ver > MaxSeq {
		return ErrSeqRange
	}
	return nil
}

func mustSeq(seq, ver uint64) {
	if ver == 0 {
		panic("store: version 0")
	}
	if seq > MaxSeq || ver > MaxSeq {
		panic(fmt.Sprintf("store: sequence %d or version %d above 2^48-1", seq, ver))
	}
}

func makeEntry(seq, ver uint64, chunk, off uint32) entry {
	e := entry{seqLo: uint32(seq), seqHi: uint16(seq >> 32), chunk: chunk, off: off}
	e.setVer(ver)
	return e
}

func (e *entry) seq() uint64 { return uint64(e.seqLo) | uint64(e.seqHi)<<32 }
func (e *entry) ver() uint64 { return uint64(e.verLo) | uint64(e.verHi)<<32 }
func (e *entry) setVer(v uint64) {
	e.verLo, e.verHi = uint32(v), uint16(v>>32)
}

// live reports whether the slot holds a record.
func (e *entry) live() bool { return e.verLo != 0 || e.verHi != 0 }

const (
	pageShift = 10
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
	entrySize = 20 // bytes of an entry
)

// entrySize is the entry's size, which the accounting counts.
var _ [entrySize - unsafe.Sizeof(entry{})]byte
var _ [unsafe.Sizeof(entry{}) - entrySize]byte

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
