package main

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
)

// floorBatch is the floor remover's batch: ttldb's default monitor batch
// when the floor was fixed as the yardstick of issue 8 (ttldb's is now
// 1024, paced); it stays 256 so that the floor's removal rate compares
// across runs.
const floorBatch = 256

// floorShards is the number of shards of the floor's key map: as many as
// ttldb's _id map has.
const floorShards = 64

// floorEntry is one stored document in the floor store.
type floorEntry[V value] struct {
	exp int64 // threshold, Unix ns
	doc V
}

func floorLess[V value](a, b *floorEntry[V]) bool {
	if a.exp != b.exp {
		return a.exp < b.exp
	}
	return a.doc.key() < b.doc.key()
}

// floorShard is one shard of the key map, behind its own lock held for one
// map operation only.
type floorShard[V value] struct {
	mu sync.RWMutex
	m  map[string]*floorEntry[V]
	_  [32]byte // keep neighbouring shards' locks off one cache line
}

// floor is the lower bound: a sharded map by key plus a B-tree ordered by
// (expiry, id). Writers (inserts and the remover) hold mu, which guards the
// tree, and take a shard's lock for each map change; readers take only the
// shard's read lock, so a read waits at most for one map operation, never
// for a remover's batch (the best known read path, as ttldb's _id map).
// The remover wakes at the earliest threshold, deletes the minimum in
// batches and releases mu between batches, with no pause: its removal rate
// is the yardstick, so it stays as it is. Nothing that keeps an ordered
// expiry index can do less work per document.
type floor[V value] struct {
	mu     sync.Mutex // writers: the tree, and the order of map changes
	t      *btree.BTreeG[*floorEntry[V]]
	seed   maphash.Seed
	shards [floorShards]floorShard[V]
	count  atomic.Int64
	conv   func(Doc) V

	batch     int
	armed     atomic.Int64 // the threshold the remover sleeps until
	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	onRemoved func(ids []string, at time.Time)
}

func newFloor[V value](batch int, onRemoved func([]string, time.Time), conv func(Doc) V) *floor[V] {
	f := &floor[V]{
		conv:      conv,
		t:         btree.NewG(32, floorLess[V]),
		seed:      maphash.MakeSeed(),
		batch:     batch,
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		onRemoved: onRemoved,
	}
	for i := range f.shards {
		f.shards[i].m = map[string]*floorEntry[V]{}
	}
	f.armed.Store(1<<63 - 1)
	go f.remover()
	return f
}

func (f *floor[V]) shard(key string) *floorShard[V] {
	return &f.shards[maphash.String(f.seed, key)%floorShards]
}

func (f *floor[V]) prepare(docs []Doc) any {
	out := make([]*floorEntry[V], len(docs))
	for i, d := range docs {
		out[i] = &floorEntry[V]{exp: threshold(d).UnixNano(), doc: f.conv(d)}
	}
	return out
}

func (f *floor[V]) insert(b any) error {
	es := b.([]*floorEntry[V])
	earliest := int64(1<<63 - 1)
	f.mu.Lock()
	for _, e := range es {
		sh := f.shard(e.doc.key())
		sh.mu.Lock()
		old, ok := sh.m[e.doc.key()]
		sh.m[e.doc.key()] = e
		sh.mu.Unlock()
		if ok {
			f.t.Delete(old)
			f.count.Add(-1)
		}
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

func (f *floor[V]) get(key string) bool {
	sh := f.shard(key)
	sh.mu.RLock()
	_, ok := sh.m[key]
	sh.mu.RUnlock()
	return ok
}

func (f *floor[V]) remaining() int { return int(f.count.Load()) }

func (f *floor[V]) close() {
	close(f.stop)
	<-f.done
}

func (f *floor[V]) remover() {
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
			sh := f.shard(e.doc.key())
			sh.mu.Lock()
			delete(sh.m, e.doc.key())
			sh.mu.Unlock()
			if f.onRemoved != nil {
				ids = append(ids, e.doc.key())
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
			continue // more may be expired: next batch, no pause
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
