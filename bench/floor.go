package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
)

// floorBatch is the floor remover's batch: the same as ttldb's default
// monitor batch (ttldb.DefaultMonitorBatchSize).
const floorBatch = 256

// floorEntry is one stored document in the floor store.
type floorEntry struct {
	exp int64 // threshold, Unix ns
	doc Doc
}

func floorLess(a, b *floorEntry) bool {
	if a.exp != b.exp {
		return a.exp < b.exp
	}
	return a.doc.ID < b.doc.ID
}

// floor is the lower bound: a map by key plus a B-tree ordered by
// (expiry, id). Its remover wakes at the earliest threshold, deletes the
// minimum in batches and releases the lock between batches. Nothing that
// keeps an ordered expiry index can do less work per document.
type floor struct {
	mu    sync.RWMutex
	m     map[string]*floorEntry
	t     *btree.BTreeG[*floorEntry]
	count atomic.Int64

	batch     int
	armed     atomic.Int64 // the threshold the remover sleeps until
	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	onRemoved func(ids []string, at time.Time)
}

func newFloor(batch int, onRemoved func([]string, time.Time)) *floor {
	f := &floor{
		m:         map[string]*floorEntry{},
		t:         btree.NewG(32, floorLess),
		batch:     batch,
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		onRemoved: onRemoved,
	}
	f.armed.Store(1<<63 - 1)
	go f.remover()
	return f
}

func (f *floor) prepare(docs []Doc) any {
	out := make([]*floorEntry, len(docs))
	for i, d := range docs {
		out[i] = &floorEntry{exp: threshold(d).UnixNano(), doc: d}
	}
	return out
}

func (f *floor) insert(b any) error {
	es := b.([]*floorEntry)
	earliest := int64(1<<63 - 1)
	f.mu.Lock()
	for _, e := range es {
		if old, ok := f.m[e.doc.ID]; ok {
			f.t.Delete(old)
			f.count.Add(-1)
		}
		f.m[e.doc.ID] = e
		f.t.ReplaceOrInsert(e)
		earliest = min(earliest, e.exp)
	}
	f.mu.Unlock()
	f.count.Add(int64(len(es)))
	if earliest < f.armed.Load() {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

func (f *floor) get(key string) bool {
	f.mu.RLock()
	e, ok := f.m[key]
	f.mu.RUnlock()
	_ = e
	return ok
}

func (f *floor) remaining() int { return int(f.count.Load()) }

func (f *floor) close() {
	close(f.stop)
	<-f.done
}

func (f *floor) remover() {
	defer close(f.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var ids []string
	for {
		f.mu.Lock()
		now := time.Now().UnixNano()
		n := 0
		ids = ids[:0]
		for n < f.batch {
			e, ok := f.t.Min()
			if !ok || e.exp > now {
				break
			}
			f.t.DeleteMin()
			delete(f.m, e.doc.ID)
			if f.onRemoved != nil {
				ids = append(ids, e.doc.ID)
			}
			n++
		}
		wait := time.Hour
		if n < f.batch {
			if e, ok := f.t.Min(); ok {
				wait = time.Duration(e.exp - now)
				f.armed.Store(e.exp)
			} else {
				f.armed.Store(1<<63 - 1)
			}
		}
		f.mu.Unlock()
		f.count.Add(-int64(n))
		if len(ids) > 0 {
			f.onRemoved(ids, time.Now())
		}
		if n == f.batch {
			continue // more may be expired: next batch, readers ran in between
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(wait, 0))
		select {
		case <-f.stop:
			return
		case <-f.wake:
		case <-timer.C:
		}
	}
}
