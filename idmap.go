package ttldb

import (
	"hash/maphash"
	"sync"
)

// idMap maps _id keys (idKey values: order-preserving keys, as strings) to
// records. Its interface is load/lookup, store, delete and compact. It is split into shards,
// each behind its own lock held only for one map operation, so that a
// lookup by _id never waits for a collection-wide lock: a reader by _id
// keeps its latency while the TTL monitor deletes batch after batch. It is
// changed only by writers holding the collection's locks, which keeps it
// consistent with the other structures for readers that hold the read lock.
type idMap struct {
	seed   maphash.Seed
	shards [idMapShards]idShard
}

const idMapShards = 64

type idShard struct {
	mu sync.RWMutex
	m  map[string]*record
	_  [24]byte // keep neighbouring shards' locks off one cache line
}

func newIDMap(sizeHint int) *idMap {
	im := &idMap{seed: maphash.MakeSeed()}
	for i := range im.shards {
		im.shards[i].m = make(map[string]*record, sizeHint/idMapShards)
	}
	return im
}

func (im *idMap) shard(k string) *idShard {
	return &im.shards[maphash.String(im.seed, k)%idMapShards]
}

// load returns the record stored under key k, or nil.
func (im *idMap) load(k string) *record {
	sh := im.shard(k)
	sh.mu.RLock()
	r := sh.m[k]
	sh.mu.RUnlock()
	return r
}

// lookup is load for a key in a caller's buffer; it allocates nothing.
func (im *idMap) lookup(k []byte) *record {
	sh := &im.shards[maphash.Bytes(im.seed, k)%idMapShards]
	sh.mu.RLock()
	r := sh.m[string(k)]
	sh.mu.RUnlock()
	return r
}

func (im *idMap) store(k string, r *record) {
	sh := im.shard(k)
	sh.mu.Lock()
	sh.m[k] = r
	sh.mu.Unlock()
}

func (im *idMap) delete(k string) {
	sh := im.shard(k)
	sh.mu.Lock()
	delete(sh.m, k)
	sh.mu.Unlock()
}

// compact moves each shard into a fresh map (Go maps never shrink), for
// Compact. Each shard is locked only while it is copied.
func (im *idMap) compact() {
	for i := range im.shards {
		sh := &im.shards[i]
		sh.mu.Lock()
		m := make(map[string]*record, len(sh.m))
		for k, r := range sh.m {
			m[k] = r
		}
		sh.m = m
		sh.mu.Unlock()
	}
}
