package engine

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/ttldb/ttldb/internal/store"
)

// A time-series collection's memory counts against the DB's budget
// (WithMemoryLimit) as an ordinary collection's does: its buckets (the
// capacity of their slices, their meta values) and, per bucket, its
// entries in the collection's trees and indexes. The account follows
// every change of a bucket (track, untrack) and is settled under the
// collection's lock by each write; an insert that would take the DB past
// its limit is undone before its op commits (tsUndo), so that it changes
// nothing.

// bucketFixedBytes is what a bucket costs besides its slices and meta
// value: the struct, and its entries in the bucket tree, the reopen tree
// and the open map.
var bucketFixedBytes = int64(unsafe.Sizeof(bucket{})) + 2*treeBytes(1, 8, treeFactorRandom) + store.MapEntryBytes

// Per bucket and index: a tree entry (tsEntry), or for an index on a
// measurement field two entries, a bounds map entry and the two bound
// keys.
var (
	tsIndexEntryBytes    = treeBytes(1, int(unsafe.Sizeof(tsEntry{})), treeFactorRandom)
	tsMeasuredEntryBytes = 2*tsIndexEntryBytes + store.MapEntryBytes + 2*keyHeapBytes("0123456789abcdef")
	tsExpiryEntryBytes   = treeBytes(1, int(unsafe.Sizeof(tsExpEntry{})), treeFactorDates)
)

// sliceBytes is the heap a bucket's slices hold.
func (b *bucket) sliceBytes() int64 {
	return int64(cap(b.offs))*8 + int64(cap(b.ends))*4 + int64(cap(b.data))
}

// metaBytes is the heap of a bucket's meta key; its meta value and its
// keys in indexes on the metaField are counted as as many again each.
func (b *bucket) metaBytes() int64 {
	if !b.hasMeta {
		return 0
	}
	return keyHeapBytes(b.metaKey)
}

// track adds a bucket's bytes to the collection's account; untrack takes
// them out. Call holding mu for writing, untrack before a change of b's
// slices or meta and track after.
func (ts *tsColl) track(b *bucket) {
	ts.memSlices += b.sliceBytes()
	ts.memMetas += b.metaBytes()
}

func (ts *tsColl) untrack(b *bucket) {
	ts.memSlices -= b.sliceBytes()
	ts.memMetas -= b.metaBytes()
}

// resize applies f (clip) to b's slices, keeping the account.
func (ts *tsColl) resize(b *bucket, f func(*bucket)) {
	ts.untrack(b)
	f(b)
	ts.track(b)
}

// memBytes is the collection's accounted memory. Call holding mu.
func (ts *tsColl) memBytes() int64 {
	perBucket := bucketFixedBytes + tsExpiryEntryBytes // the collection's own expiry tree
	metaCopies := int64(2)                             // the meta value and its key
	for _, ix := range ts.indexes {
		if ix.exp != nil {
			perBucket += tsExpiryEntryBytes
		}
		if ix.measured != nil {
			perBucket += tsMeasuredEntryBytes
		} else {
			perBucket += tsIndexEntryBytes
			metaCopies++ // its key: at most about the meta key's size
		}
	}
	return ts.memSlices + metaCopies*ts.memMetas + int64(ts.buckets.Len())*perBucket
}

// settle replaces the collection's account in the DB's by what it now
// holds: after a change that frees memory or that may not be refused
// (a load, a replay). Nothing once the collection is dropped (its drop
// took its account out). Call holding mu for writing.
func (ts *tsColl) settle() {
	if ts.dropped {
		return
	}
	s := ts.state
	cur := ts.memBytes()
	ts.db.mem.Add(cur - s.memAcct)
	s.memAcct = cur
	s.memPub.Store(cur)
}

// admit settles the account after a change made under the memory limit,
// before its op commits: if the change grew the collection past what the
// DB's limit leaves, it fails with ErrMemoryLimit and settles nothing
// (the caller undoes the change). need is the least the change is taken
// to add, its measurements' bytes: one that fits in the spare capacity of
// its buckets is still refused when the DB is at its limit. Call holding
// mu for writing.
func (ts *tsColl) admit(need int64) error {
	limit := ts.db.cfg.memLimit
	s := ts.state
	cur := ts.memBytes()
	grow := cur - s.memAcct
	if limit == 0 || max(grow, need) <= 0 || ts.dropped {
		ts.settle()
		return nil
	}
	if ts.db.mem.Add(grow)+max(need-grow, 0) > limit {
		ts.db.mem.Add(-grow)
		return fmt.Errorf("collection %q: %w: the write needs about %d bytes, %d of %d are in use",
			ts.name, ErrMemoryLimit, grow, ts.db.mem.Load(), limit)
	}
	s.memAcct = cur
	s.memPub.Store(cur)
	return nil
}

// lockForeground takes mu for writing for a write of the program, and
// rlock for reading for a read: each counts in DB.foregroundWaits a call
// that had to wait (as collState.rlock), a signal the TTL monitor gives
// way to (monitor_pace.go).
func (ts *tsColl) lockForeground() {
	if !ts.mu.TryLock() {
		ts.db.foregroundWaits.Add(1)
		ts.mu.Lock()
	}
}

func (ts *tsColl) rlock() {
	if !ts.mu.TryRLock() {
		ts.db.foregroundWaits.Add(1)
		ts.mu.RLock()
	}
}

// unlockWrite settles the account and releases mu held for writing.
func (ts *tsColl) unlockWrite() {
	ts.settle()
	ts.mu.Unlock()
}

// tsUndo records what an insert changed, so that one refused for the
// memory limit can be taken back exactly: the buckets it created, and of
// those it appended to or closed, their state before.
type tsUndo struct {
	created []*bucket
	touched []tsUndoBucket
	seen    map[*bucket]bool
	open    map[string]*bucket // the open bucket of each meta key it changed, before
	opened  map[string]bool    // the meta keys whose open bucket it changed

	nextSeq             uint64
	count               int
	bytesLen            int64
	memSlices, memMetas int64
	multikey            []bool
}

// tsUndoBucket is a bucket's state before an insert: the bytes below its
// slices' lengths never change (appends go past them, clips copy), so
// the slice headers are its measurements.
type tsUndoBucket struct {
	b        *bucket
	offs     []int64
	ends     []uint32
	data     []byte
	min, max time.Time
	ver      uint64
}

// beginUndo starts recording an insert's changes. Call holding mu for
// writing.
func (ts *tsColl) beginUndo() {
	u := &tsUndo{seen: map[*bucket]bool{}, open: map[string]*bucket{}, opened: map[string]bool{},
		nextSeq: ts.nextSeq, count: ts.count, bytesLen: ts.bytesLen, memSlices: ts.memSlices, memMetas: ts.memMetas}
	for _, ix := range ts.indexes {
		u.multikey = append(u.multikey, ix.multikey)
	}
	ts.undo = u
}

// noteTouched records b's state before the insert changes it (once).
func (ts *tsColl) noteTouched(b *bucket) {
	u := ts.undo
	if u == nil || u.seen[b] {
		return
	}
	u.seen[b] = true
	u.touched = append(u.touched, tsUndoBucket{b: b, offs: b.offs, ends: b.ends, data: b.data, min: b.min, max: b.max, ver: b.ver})
}

// noteCreated records a bucket the insert creates, and the open bucket it
// replaces.
func (ts *tsColl) noteCreated(b *bucket) {
	u := ts.undo
	if u == nil {
		return
	}
	u.seen[b] = true // new: nothing to restore but its removal
	u.created = append(u.created, b)
	if !u.opened[b.metaKey] {
		u.opened[b.metaKey] = true
		u.open[b.metaKey] = ts.open[b.metaKey]
	}
}

// rollback takes back what the insert being recorded changed, and stops
// recording. Call holding mu for writing.
func (ts *tsColl) rollback() {
	u := ts.undo
	ts.undo = nil
	for i := len(u.created) - 1; i >= 0; i-- {
		ts.removeBucket(u.created[i])
	}
	for _, t := range u.touched {
		b := t.b
		rekey := ts.opts.PreciseExpiry && !b.min.Equal(t.min) // keyed by min
		if rekey {
			ts.detachExpiry(b)
		}
		for _, ix := range ts.indexes {
			if ix.measured != nil {
				ix.remove(ts, b)
			}
		}
		b.offs, b.ends, b.data, b.min, b.max, b.ver = t.offs, t.ends, t.data, t.min, t.max, t.ver
		if rekey {
			ts.attachExpiry(b)
		}
		for _, ix := range ts.indexes {
			if ix.measured != nil {
				ix.add(ts, b)
			}
		}
		ts.indexReopen(b)
	}
	for k, b := range u.open {
		if b == nil {
			delete(ts.open, k)
		} else {
			ts.open[k] = b
		}
	}
	ts.nextSeq, ts.count, ts.bytesLen, ts.memSlices, ts.memMetas = u.nextSeq, u.count, u.bytesLen, u.memSlices, u.memMetas
	for i, ix := range ts.indexes {
		ix.multikey = u.multikey[i]
	}
}

// placeAll places measurements in order, all or none: outside recovery
// (modeLocal, modeApply), one that takes the DB past its memory limit is
// undone whole and fails with ErrMemoryLimit; in modeReplay (a load replaying
// history, which the README says is loaded whole), it is settled as it
// is. Call holding mu for writing; it returns the earliest threshold of
// the buckets it placed into.
func (ts *tsColl) placeAll(ms []tsMeasurement, mode applyMode) (time.Time, error) {
	if mode != modeReplay && ts.db.cfg.memLimit > 0 {
		ts.beginUndo()
	}
	var earliest time.Time
	need := int64(0)
	for _, m := range ms {
		need += int64(len(m.enc)) + 12 // its bytes, time offset and end
		b := ts.place(m)
		if th, ok := ts.earliestThresholdOf(b); ok && (earliest.IsZero() || th.Before(earliest)) {
			earliest = th
		}
	}
	if ts.undo == nil {
		ts.settle()
		return earliest, nil
	}
	if err := ts.admit(need); err != nil {
		ts.rollback()
		return time.Time{}, err
	}
	ts.undo = nil
	return earliest, nil
}

// metaGrowth is what changing b's meta value to one of key adds to the
// account (negative: frees), every copy of it counted (memBytes).
func metaGrowth(b *bucket, hasMeta bool, key string) int64 {
	after := int64(0)
	if hasMeta {
		after = keyHeapBytes(key)
	}
	return after - b.metaBytes()
}

// reserveMeta checks, before a meta update changes anything, that the
// growth of its buckets' meta keys (metaGrowth) fits the DB's memory
// limit, every copy counted; the update's unlockWrite settles the account.
// Call holding mu for writing.
func (ts *tsColl) reserveMeta(grow int64) error {
	copies := int64(2)
	for _, ix := range ts.indexes {
		if ix.measured == nil {
			copies++
		}
	}
	return ts.reserveGrowth(grow * copies)
}

// reserveGrowth checks, before a write changes anything, that growing the
// collection by about grow bytes fits the DB's memory limit; the write's
// unlockWrite then settles the account with what it holds. Call holding
// mu for writing.
func (ts *tsColl) reserveGrowth(grow int64) error {
	limit := ts.db.cfg.memLimit
	if limit == 0 || grow <= 0 {
		return nil
	}
	if used := ts.db.mem.Load(); used+grow > limit {
		return fmt.Errorf("collection %q: %w: the write needs about %d bytes, %d of %d are in use",
			ts.name, ErrMemoryLimit, grow, used, limit)
	}
	return nil
}
