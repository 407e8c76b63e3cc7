package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// An index is built in the background, as MongoDB's hybrid index build
// does, so that writers never wait for a scan of the whole collection:
//
//  1. Under the write lock, for an instant: the build is registered with
//     the collection's next insertion sequence (its snapshot: the
//     documents stored then are those with a smaller sequence), so that
//     from then on every write also appends the records it changes to the
//     build's side table.
//  2. The snapshot's documents still stored are scanned into the new
//     index's private trees, in natural order, a few hundred per hold of
//     the read lock.
//  3. Without any lock: the side table is drained into the trees, again
//     and again, until what is left is at most finalCatchUpMax changes
//     (checked again once the write lock is taken: a write that held it
//     meanwhile may have added more, which is then drained unlocked too).
//  4. Under the write lock: the last changes are applied, a unique index
//     checks the keys that were ever duplicated, and the index is
//     published (under mu, as any change readers see).
//
// Writers thus wait at most for step 4, whose work is bounded by
// finalCatchUpMax changes (plus, for a unique index, the keys found
// duplicated and not yet resolved). The scan reads each document as it is
// when read: a document changed or deleted since the snapshot is in the
// side table,
// whose changes, applied in order, leave each document's entries as its
// last version's whatever version the scan met (a change is "remove the old
// version's entries, add the new one's", and both are sets of (key, seq)).
// Record bytes never change once stored, so the rest runs without a lock.
// Compact waits for builds to end: it renumbers the slots the private
// trees hold.

// finalCatchUpMax bounds the side-table changes applied under the write
// lock at the end of a build. Applying one costs a few microseconds (a
// field decoded, a B-tree delete and insert per key), so writers wait a
// few milliseconds at most for it, even on a loaded machine.
const finalCatchUpMax = 256

// maxDrainRounds bounds the unlocked drains of the side table. Each round
// applies what the writers added during the previous one, faster than they
// added it (applying a change costs less than making it), so the table
// shrinks geometrically; the bound only guards against writers that would
// always outpace the drain.
const maxDrainRounds = 100

// sideWrite is one change made to the collection during a build: a record
// inserted (old nil), removed (new nil) or replaced. The records are
// copies; their bytes never change.
type sideWrite struct {
	old, new *record
}

// indexBuild is an index being built. Its index is private to the build
// (not in collState.indexes) until it is published.
type indexBuild struct {
	s        *collState
	ix       *index
	snapshot uint64        // the collection's next insertion sequence when the build began
	done     chan struct{} // closed when the build has ended, either way
	// ctx stops the build (CreateIndex's context), looked at before each
	// chunk of the scan and each drain of the side table; nil: never.
	ctx context.Context

	mu   sync.Mutex
	side []sideWrite // changes since the snapshot, in order; guarded by mu

	// Keys found held by two records at some point; a unique build fails
	// if one still is when the index is published.
	dupCandidates []dupCandidate

	figures buildFigures
}

// buildFigures count what a build did, for tests.
type buildFigures struct {
	scanned      int // snapshot records read (those still stored when read)
	drained      int // side-table changes applied without the lock
	drainRounds  int
	finalCatchUp int // side-table changes applied under the write lock
}

// buildStage names a point of a build at which indexBuildHook runs.
type buildStage string

const (
	buildScanning buildStage = "scanning" // registered, snapshot taken, no lock held
	buildCatchUp  buildStage = "catch-up" // drained, about to take the write lock
	buildEnded    buildStage = "ended"    // published or abandoned, no lock held
)

// indexBuildHook, if set, runs at each stage of every build (tests pause a
// build there, or read its figures).
var indexBuildHook atomic.Pointer[func(buildStage, *indexBuild)]

func (b *indexBuild) hook(stage buildStage) {
	if h := indexBuildHook.Load(); h != nil {
		(*h)(stage, b)
	}
}

// noteWrite records a change in every running build's side table. Call it
// holding writeMu (and mu) wherever a record is inserted, replaced or
// removed.
func (s *collState) noteWrite(old, new *record) {
	if len(s.builds) == 0 {
		return
	}
	var w sideWrite
	if old != nil {
		o := *old
		w.old = &o
	}
	if new != nil {
		n := *new
		w.new = &n
	}
	for _, b := range s.builds {
		b.mu.Lock()
		b.side = append(b.side, w)
		b.mu.Unlock()
	}
}

// createIndex is CreateIndex after its arguments are checked: it finds an
// existing index of the same specification (a no-op), a conflicting one
// (ErrIndexOptionsConflict) or a build of the same keys or name under way
// (it waits for it to end, then looks again); else it builds the index.
func (c *Collection) createIndex(ctx context.Context, m IndexModel) (string, error) {
	for {
		var (
			name string
			b    *indexBuild
			wait chan struct{}
		)
		err := c.write(func(s *collState) error {
			for _, ix := range s.indexes {
				if !sameKeys(ix.keys, m.Keys) && ix.name != m.Name {
					continue
				}
				if ix.sameOptions(m) {
					name = ix.name
					return nil
				}
				return fmt.Errorf("%w: collection %q: index %q exists with keys %v and other options", ErrIndexOptionsConflict, s.name, ix.name, ix.keys)
			}
			for _, ob := range s.builds {
				if sameKeys(ob.ix.keys, m.Keys) || ob.ix.name == m.Name {
					wait = ob.done
					return nil
				}
			}
			ix, err := newIndex(s.name, m, s.opts.Capped)
			if err != nil {
				return err
			}
			s.nextIx++
			ix.id = s.nextIx
			b = s.startBuild(ix)
			return nil
		})
		switch {
		case err != nil:
			return "", err
		case wait != nil:
			select {
			case <-wait:
			case <-ctx.Done():
				return "", ctxError(c.name, ctx.Err()) // the other build goes on
			}
			continue
		case b == nil:
			return name, nil
		}
		b.ctx = ctx
		if err := b.run(); err != nil {
			return "", err
		}
		return b.ix.name, nil
	}
}

// startBuild registers a build of ix over a snapshot of the collection.
// Call holding writeMu.
func (s *collState) startBuild(ix *index) *indexBuild {
	b := &indexBuild{s: s, ix: ix, done: make(chan struct{})}
	s.mu.Lock()
	b.snapshot = s.nextSeq
	s.mu.Unlock()
	s.builds = append(slices.Clip(s.builds), b)
	return b
}

// run performs steps 2 to 4 and ends the build, publishing the index or
// leaving nothing of it.
func (b *indexBuild) run() (err error) {
	s := b.s
	defer func() {
		close(b.done)
		b.hook(buildEnded)
	}()
	b.hook(buildScanning)
	if err := b.scan(); err != nil {
		b.abandon()
		return err
	}
	for {
		for b.figures.drainRounds < maxDrainRounds && b.sideLen() > finalCatchUpMax {
			b.figures.drainRounds++
			if err := checkCtx(b.ctx); err != nil {
				b.abandon()
				return ctxError(s.name, err)
			}
			n, err := b.drain()
			b.figures.drained += n
			if err != nil {
				b.abandon()
				return err
			}
			b.pruneCandidates()
		}
		b.hook(buildCatchUp)
		s.writeMu.Lock()
		// A write that held the lock meanwhile (a TTL batch, a large
		// UpdateMany) may have grown the table again: drain it unlocked.
		if b.sideLen() <= finalCatchUpMax || b.figures.drainRounds >= maxDrainRounds {
			break
		}
		s.writeMu.Unlock()
	}
	defer s.writeMu.Unlock()
	s.unregister(b)
	if s.dropped {
		return fmt.Errorf("%w: collection %q: dropped while index %q was being built", ErrNotFound, s.name, b.ix.name)
	}
	if err := s.db.checkOpen(); err != nil {
		return err
	}
	n, err := b.drain()
	b.figures.finalCatchUp = n
	if err != nil {
		return err
	}
	if err := b.checkUnique(); err != nil {
		return err
	}
	ix := b.ix
	cost := ix.keyBytes
	if ix.tree != nil {
		cost += treeBytes(ix.tree.Len(), indexEntrySize, treeFactorRandom)
	}
	if ix.ttl != nil {
		cost += treeBytes(ix.ttl.expiry.Len(), expiryEntrySize, treeFactorDates) + ix.ttl.counts.bytes()
	}
	if err := s.reserve(cost); err != nil {
		return fmt.Errorf("building index %q: %w", ix.name, err)
	}
	s.addIndex(b.ix)
	if s.db.ops.opsWanted() {
		s.db.ops.commit([]Op{{Kind: OpCreateIndex, Collection: s.name, Time: opTime(s.db.clock.Now()), Index: ix.name, Spec: builtIndexSpec(ix)}})
	}
	s.settleMemory(cost)
	if ix := b.ix; ix.ttl != nil {
		if e, ok := ix.ttl.earliest(); ok {
			s.db.monitor.notifyThreshold(ix.ttl.threshold(e))
		}
	}
	return nil
}

// abandon unregisters a failed build: writers stop recording for it.
func (b *indexBuild) abandon() {
	b.s.writeMu.Lock()
	b.s.unregister(b)
	b.s.writeMu.Unlock()
}

// unregister removes b from the running builds. Call holding writeMu.
func (s *collState) unregister(b *indexBuild) {
	if i := slices.Index(s.builds, b); i >= 0 {
		s.builds = slices.Delete(slices.Clone(s.builds), i, i+1)
	}
}

// scanChunk is how many snapshot documents the scan reads per hold of
// the read lock.
const scanChunk = 256

// scan indexes every record of the snapshot still stored (step 2).
func (b *indexBuild) scan() error {
	s := b.s
	recs := make([]record, 0, scanChunk)
	from, more := natItem{}, true
	for more {
		if err := s.db.checkOpen(); err != nil {
			return err
		}
		if err := checkCtx(b.ctx); err != nil {
			return ctxError(s.name, err)
		}
		// Read each document as it is now; one deleted since the snapshot
		// is in the side table, and one inserted since (a later sequence)
		// too.
		recs, more = recs[:0], false
		s.mu.RLock()
		s.natural.AscendGreaterOrEqual(from, func(it natItem) bool {
			if it.seq >= b.snapshot {
				return false
			}
			if len(recs) == scanChunk {
				from, more = it, true
				return false
			}
			recs = append(recs, s.rec(it.slot))
			return true
		})
		s.mu.RUnlock()
		b.figures.scanned += len(recs)
		for i := range recs {
			if err := b.add(&recs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *indexBuild) sideLen() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.side)
}

// drain applies the side table's changes so far, in order, and returns how
// many it applied.
func (b *indexBuild) drain() (int, error) {
	b.mu.Lock()
	side := b.side
	b.side = nil
	b.mu.Unlock()
	for _, w := range side {
		if w.old != nil {
			b.remove(w.old)
		}
		if w.new != nil {
			if err := b.add(w.new); err != nil {
				return len(side), err
			}
		}
	}
	return len(side), nil
}

// add puts rec's entries in the index's private trees, noting any key a
// unique index now holds twice. Adding entries the trees hold already
// changes nothing (see the comment at the top).
func (b *indexBuild) add(rec *record) error {
	ix := b.ix
	ref := &docRef{rec: *rec}
	if ix.tree != nil {
		ik, err := ix.keysOfStored(ref)
		if err != nil {
			return fmt.Errorf("collection %q: building index %q: document %v: %w", b.s.name, ix.name, rec.id(), err)
		}
		for i, k := range ik.keys {
			if ix.unique && ix.conflict(k, rec.seq) {
				b.dupCandidates = append(b.dupCandidates, dupCandidate{key: k, value: ik.value(i)})
			}
			if _, replaced := ix.tree.ReplaceOrInsert(indexEntry{key: k, seq: rec.seq, slot: rec.slot}); !replaced {
				ix.keyBytes += keyHeapBytes(k)
			}
		}
		ix.multikey = ix.multikey || ik.multikey
	}
	if ix.ttl != nil {
		// A record has no entry of an index built after it was stored:
		// computed from its bytes, by the code writes use.
		k := ix.storedTTL(ref)
		ix.multikey = ix.multikey || k.kind == ttlMulti
		if k.ok {
			ix.ttl.addEntry(entryFor(k.date, rec), k)
		}
	}
	return nil
}

// remove takes rec's entries out of the private trees. Its keys are
// computed from the same bytes by the same code as when it was added (if
// it was), so they match.
func (b *indexBuild) remove(rec *record) {
	ix := b.ix
	ref := &docRef{rec: *rec}
	if ix.tree != nil {
		ik, err := ix.keysOfStored(ref)
		if err != nil {
			return // never added: add refused it and the build has failed
		}
		ix.removeKeys(rec, ik)
	}
	if ix.ttl != nil {
		if k := ix.storedTTL(ref); k.ok {
			ix.ttl.removeEntry(entryFor(k.date, rec), k)
		}
	}
}

// dupCandidate is a key a unique build found held twice, with the value
// it was made from, for the error.
type dupCandidate struct {
	key   string
	value any
}

// holders counts the records the private tree holds under key, up to 2.
func (ix *index) holders(key string) int {
	n := 0
	ix.tree.AscendGreaterOrEqual(indexEntry{key: key}, func(e indexEntry) bool {
		if e.key != key {
			return false
		}
		n++
		return n < 2
	})
	return n
}

// pruneCandidates forgets the duplicated keys that writes have since
// resolved, so that the check under the lock looks only at live ones.
func (b *indexBuild) pruneCandidates() {
	b.dupCandidates = slices.DeleteFunc(b.dupCandidates, func(c dupCandidate) bool { return b.ix.holders(c.key) < 2 })
}

// checkUnique fails a unique build if a key is still held by two records.
func (b *indexBuild) checkUnique() error {
	for _, c := range b.dupCandidates {
		if b.ix.holders(c.key) >= 2 {
			return fmt.Errorf("collection %q: building index %q: %w", b.s.name, b.ix.name,
				&DuplicateKeyError{Collection: b.s.name, Index: b.ix.name, Key: c.value})
		}
	}
	return nil
}
