package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// ExpireHookError is what an ExpireHook returns when it handled some
// documents of its batch but not others: the documents it names in Failed
// are kept and retried (see ExpireHook), the others are deleted. Match it
// with errors.As. An ExpireHookError that names no document of the batch
// means, as any other error does, that the whole batch failed.
type ExpireHookError struct {
	// Failed are the _id values (as in ExpiredBatch.Docs) of the documents
	// the hook did not handle. An _id not in the batch is ignored.
	Failed []any
	// Err says why; it may be nil. Unwrap returns it.
	Err error
}

// Error says how many documents failed, and why.
func (e *ExpireHookError) Error() string {
	msg := fmt.Sprintf("ttldb: expire hook failed for %d document(s)", len(e.Failed))
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns Err.
func (e *ExpireHookError) Unwrap() error { return e.Err }

// FailedDeliveries describes the expired documents of one TTL index whose
// delivery to the expire hooks failed and that wait for a retry.
type FailedDeliveries struct {
	Count int64 // documents waiting
	// OldestAge is how long ago the delivery of the longest-waiting of them
	// first failed (DB clock).
	OldestAge time.Duration
}

// deliveries are the expire-hook deliveries that failed and wait for a
// retry, per TTL index, with each index's backoff. A pass (holding
// monitor.passSem) is the only writer and writes holding mu too, so a pass
// reads without mu; every other goroutine reads holding mu. Lock order: a
// collection's locks, then mu.
type deliveries struct {
	mu       sync.Mutex
	pass     uint64 // the number of the running (or last) pass
	failures int    // hook calls that failed in the running pass
	byIndex  map[*index]*indexDeliveries

	// walks are the TTL indexes (with their collections) whose hookWalk
	// the running pass set, to reset at its end; steps counts the expiry
	// entries its choices visited (tests). Only the pass uses them.
	walks map[*index]*collState
	steps int
}

// hookWalk is where a pass's offers of one TTL index's expired documents
// resume (deliveries.choose). Every entry at or before after was offered
// or skipped as parked by the running pass, so the next batch walks on
// from after: a hook that fails every document leaves its documents parked
// at the head of the tree, and walking them again for each batch made a
// pass quadratic in the expired documents. An entry added at or before
// after since it was walked (a write, or a chosen document that changed
// before its deletion) is kept in behind and offered first, as a walk from
// the head would have found it. The pass (the only one) writes it holding
// the collection's read lock, addEntry holding its write lock.
type hookWalk struct {
	pass    uint64 // the pass walking; 0: none
	started bool   // after is set; else the walk starts at the head
	after   expiryEntry
	behind  []expiryEntry
}

// added notes entry e, added to a tree that now holds n entries.
func (w *hookWalk) added(e expiryEntry, n int) {
	if !w.started || expiryLess(w.after, e) {
		return
	}
	if len(w.behind) >= max(n, 1024) {
		// More entries behind the walk than a walk from the head visits:
		// start again there (each such restart follows as many writes as
		// it walks entries, so the cost stays linear).
		*w = hookWalk{pass: w.pass}
		return
	}
	w.behind = append(w.behind, e)
}

// indexDeliveries are one TTL index's failed deliveries. It exists while
// at least one is parked.
type indexDeliveries struct {
	ref    IndexRef
	parked map[string]*parkedDoc // by _id key (idKey)
	oldest time.Time             // the earliest since among parked

	// Parked documents are retried when the backoff is due, in the first
	// pass at or after it (round).
	backoff hookBackoff
	round   uint64   // the pass retrying the parked documents
	queue   []string // keys of parked documents the round has still to try
}

// hookBackoff is the retry schedule of one index's (or time-series
// rule's) failed deliveries: every pass in which a delivery fails doubles
// delay, from the wake floor up to the monitor's Interval, and sets
// retryAt = now + delay. It is read on the wall clock, so backedOffAt (that
// now) tells when the clock has since stepped back: the retry is then due
// at once, never a step's length late.
type hookBackoff struct {
	delay       time.Duration
	retryAt     time.Time
	backedOffAt time.Time
	bumped      uint64 // the pass that last set delay
}

// bump backs off after a failure in pass, once per pass.
func (b *hookBackoff) bump(pass uint64, now time.Time, o *MonitorOptions) {
	if b.bumped == pass {
		return
	}
	b.bumped = pass
	b.delay = max(min(cmp.Or(2*b.delay, o.DeadlineWakeFloor), o.Interval), time.Nanosecond)
	b.retryAt, b.backedOffAt = now.Add(b.delay), now
}

// due reports whether the retry is due at now: retryAt has come, or the
// clock has stepped back behind the moment the backoff was set (a
// wall-clock deadline set by a clock that was fast would otherwise wait for
// as long as the clock was wrong).
func (b *hookBackoff) due(now time.Time) bool {
	return !now.Before(b.retryAt) || now.Before(b.backedOffAt)
}

// next returns when the retry is due, seen at now: now itself where the
// clock has stepped back since the backoff was set.
func (b *hookBackoff) next(now time.Time) time.Time {
	if now.Before(b.backedOffAt) {
		return now
	}
	return b.retryAt
}

// parkedDoc is one failed delivery.
type parkedDoc struct {
	rec   record    // the version last offered
	since time.Time // when its delivery first failed
}

func newDeliveries() *deliveries {
	return &deliveries{byIndex: map[*index]*indexDeliveries{}, walks: map[*index]*collState{}}
}

// beginPass starts counting a new pass's failures.
func (d *deliveries) beginPass() {
	d.mu.Lock()
	d.pass++
	d.failures = 0
	d.mu.Unlock()
}

// endPass adds the pass's failed hook calls to res.Errors, and makes res
// incomplete if any hook or index visit failed or if failed deliveries are
// left. It forgets the deliveries of TTL indexes that no longer exist.
func (d *deliveries) endPass(db *DB, res *PassResult) {
	// The walks end with the pass: the next one starts at the head of each
	// tree, and writes in between record nothing.
	for ix, s := range d.walks {
		s.mu.Lock()
		if ix.ttl != nil {
			ix.ttl.walk = hookWalk{}
		}
		s.mu.Unlock()
	}
	clear(d.walks)
	live := map[*index]bool{}
	for _, t := range db.ttlIndexes(true) { // a paused index keeps its deliveries
		live[t.ix] = true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for ix := range d.byIndex {
		if !live[ix] {
			delete(d.byIndex, ix)
		}
	}
	res.Errors += d.failures
	if res.Errors > 0 || len(d.byIndex) > 0 {
		res.Complete = false
	}
}

// choose picks the next documents of ix to offer to the hooks: the parked
// documents whose retry is due (retry is true), else up to limit expired
// documents at the head of the expiry tree, skipping parked ones. Call
// holding the collection's mu (or writeMu), in a pass.
func (d *deliveries) choose(s *collState, ix *index, passNow time.Time, limit int) (chosen []chosenDoc, retry bool) {
	cutoff := ix.ttl.cutoff(passNow)
	e := d.byIndex[ix]
	if e != nil && e.round != d.pass && e.backoff.due(passNow) {
		// The retry is due: this pass offers every parked document once.
		d.mu.Lock()
		e.round = d.pass
		e.queue = e.queue[:0]
		for k := range e.parked {
			e.queue = append(e.queue, k)
		}
		slices.SortFunc(e.queue, func(a, b string) int {
			pa, pb := e.parked[a], e.parked[b]
			return cmp.Or(pa.since.Compare(pb.since), cmp.Compare(pa.rec.seq, pb.rec.seq))
		})
		d.mu.Unlock()
	}
	if e != nil && e.round == d.pass && len(e.queue) > 0 {
		d.mu.Lock()
		for len(e.queue) > 0 && len(chosen) < limit {
			k := e.queue[0]
			e.queue = e.queue[1:]
			p := e.parked[k]
			if p == nil {
				continue
			}
			cur, found := s.lookup([]byte(k))
			if !found {
				d.unparkLocked(ix, e, k) // deleted meanwhile: nothing to deliver
				continue
			}
			if date, ok := ix.storedDate(&docRef{rec: cur}); !ok || date.After(cutoff) {
				d.unparkLocked(ix, e, k) // no longer expired
				continue
			}
			p.rec = cur
			chosen = append(chosen, chosenDoc{rec: cur})
		}
		d.mu.Unlock()
		if len(chosen) > 0 {
			return chosen, true
		}
	}
	w := &ix.ttl.walk
	if w.pass != d.pass {
		*w = hookWalk{pass: d.pass}
		d.walks[ix] = s
	}
	chosen = make([]chosenDoc, 0, min(limit, 1024))
	offer := func(en expiryEntry) {
		rec := s.rec(en.slot)
		if e != nil && e.parked[string(rec.key)] != nil {
			return // its retry is scheduled
		}
		chosen = append(chosen, chosenDoc{rec: rec})
	}
	if len(w.behind) > 0 {
		// Entries added behind the walk, in tree order: those still in the
		// tree and expired are offered first.
		slices.SortFunc(w.behind, compareExpiry)
		w.behind = slices.CompactFunc(w.behind, func(a, b expiryEntry) bool { return compareExpiry(a, b) == 0 })
		i := 0
		for ; i < len(w.behind) && len(chosen) < limit; i++ {
			d.steps++
			en, ok := ix.ttl.find(w.behind[i])
			if !ok {
				continue // deleted since
			}
			if !entryNotAfter(en, cutoff) {
				break // nor are the later ones expired: kept for a later batch
			}
			offer(en)
		}
		w.behind = append(w.behind[:0], w.behind[i:]...)
	}
	if len(chosen) >= limit {
		return chosen, false
	}
	walk := func(en expiryEntry) bool {
		if !entryNotAfter(en, cutoff) {
			return false
		}
		d.steps++
		w.after, w.started = en, true
		offer(en)
		return len(chosen) < limit
	}
	if !w.started {
		ix.ttl.expiry.Ascend(walk)
	} else {
		from := w.after
		ix.ttl.expiry.AscendGreaterOrEqual(from, func(en expiryEntry) bool {
			return compareExpiry(en, from) == 0 || walk(en) // from itself was walked
		})
	}
	return chosen, false
}

// park sets failed documents aside for a retry and backs the index off.
// Call in a pass.
func (d *deliveries) park(t ttlTarget, failed []chosenDoc, now time.Time, o *MonitorOptions) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.byIndex[t.ix]
	if e == nil {
		e = &indexDeliveries{ref: IndexRef{t.coll.name, t.ix.name}, parked: map[string]*parkedDoc{}}
		d.byIndex[t.ix] = e
	}
	for _, c := range failed {
		p := e.parked[string(c.rec.key)]
		if p == nil {
			p = &parkedDoc{since: now}
			e.parked[string(c.rec.key)] = p
			if e.oldest.IsZero() || now.Before(e.oldest) {
				e.oldest = now
			}
		}
		p.rec = c.rec
	}
	e.backoff.bump(d.pass, now, o)
}

// unpark forgets the failed deliveries of documents now delivered. Call in
// a pass.
func (d *deliveries) unpark(ix *index, done []chosenDoc) {
	e := d.byIndex[ix]
	if e == nil {
		return
	}
	d.mu.Lock()
	for _, c := range done {
		d.unparkLocked(ix, e, string(c.rec.key))
	}
	d.mu.Unlock()
}

func (d *deliveries) unparkLocked(ix *index, e *indexDeliveries, k string) {
	p := e.parked[k]
	if p == nil {
		return
	}
	delete(e.parked, k)
	if len(e.parked) == 0 {
		delete(d.byIndex, ix) // and with it the backoff
		return
	}
	if p.since.Equal(e.oldest) {
		e.oldest = time.Time{}
		for _, q := range e.parked {
			if e.oldest.IsZero() || q.since.Before(e.oldest) {
				e.oldest = q.since
			}
		}
	}
}

// earliestUnparked returns the first entry of ix's expiry tree whose
// delivery has not failed: what a deadline-mode monitor wakes for. Call
// holding the collection's mu.
func (d *deliveries) earliestUnparked(s *collState, ix *index) (expiryEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.byIndex[ix]
	if e == nil {
		return ix.ttl.earliest()
	}
	var first expiryEntry
	found := false
	ix.ttl.expiry.Ascend(func(en expiryEntry) bool {
		if e.parked[string(s.rec(en.slot).key)] != nil {
			return true
		}
		first, found = en, true
		return false
	})
	return first, found
}

// nextRetry returns the earliest time a retry of failed deliveries is due,
// now where the clock stepped back since an index backed off.
func (d *deliveries) nextRetry(now time.Time) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var at time.Time
	for _, e := range d.byIndex {
		next := e.backoff.next(now)
		if at.IsZero() || next.Before(at) {
			at = next
		}
	}
	return at, !at.IsZero()
}

// snapshot returns the failed deliveries per index, for Metrics. It costs
// one entry per index with failed deliveries.
func (d *deliveries) snapshot(clock Clock) map[IndexRef]FailedDeliveries {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[IndexRef]FailedDeliveries, len(d.byIndex))
	if len(d.byIndex) == 0 {
		return out
	}
	now := clock.Now()
	for _, e := range d.byIndex {
		f := out[e.ref]
		f.Count += int64(len(e.parked))
		f.OldestAge = max(f.OldestAge, now.Sub(e.oldest))
		out[e.ref] = f
	}
	return out
}

// offer chooses the next documents of a TTL index to delete and offers them
// to the expire hooks: fresh ones in one call, parked ones (retries) one per
// call, so that a failure is that document's own. It returns the documents
// every hook handled; those that failed are parked. more reports that the
// index may have more to offer in this pass. err is the collection's or
// index's drop, or the pass's stop.
func (m *monitor) offer(ctx context.Context, t ttlTarget, passNow time.Time, limit int) (delivered []chosenDoc, more bool, err error) {
	s, ix, d := t.coll, t.ix, m.delivery
	s.mu.RLock()
	if s.dropped {
		s.mu.RUnlock()
		return nil, false, errCollectionDropped
	}
	if !s.hasIndex(ix) {
		s.mu.RUnlock()
		return nil, false, errIndexDropped
	}
	chosen, retry := d.choose(s, ix, passNow, limit)
	s.mu.RUnlock()
	if len(chosen) == 0 {
		return nil, false, nil
	}
	more = retry || len(chosen) >= limit
	var failed []chosenDoc
	calls := 0
	if retry {
		for _, c := range chosen {
			if err := m.stopped(ctx); err != nil {
				return nil, false, err // the delivered ones stay parked: offered again
			}
			one := []chosenDoc{c}
			bad, n, _ := m.runHooks(ctx, s.name, ix.name, one)
			if err := m.stopped(ctx); err != nil && n > 0 {
				return nil, false, err
			}
			calls += n
			if bad[0] {
				failed = append(failed, c)
			} else {
				delivered = append(delivered, c)
			}
		}
		d.unpark(ix, delivered)
	} else {
		bad, n, _ := m.runHooks(ctx, s.name, ix.name, chosen)
		if err := m.stopped(ctx); err != nil && n > 0 {
			return nil, false, err
		}
		calls = n
		for i, c := range chosen {
			if bad[i] {
				failed = append(failed, c)
			} else {
				delivered = append(delivered, c)
			}
		}
	}
	if calls > 0 {
		d.mu.Lock()
		d.failures += calls
		d.mu.Unlock()
	}
	if len(failed) > 0 {
		d.park(t, failed, m.db.clock.Now(), m.opts.Load())
	}
	return delivered, more, nil
}

// runHooks offers copies of docs to the expire hooks, in order; a document
// a hook failed is not offered to the next. bad[i] reports that docs[i]
// was not handled by every hook; failedCalls counts the hook calls that
// failed (each also counted in Metrics and logged), and first is the first
// of their errors.
func (m *monitor) runHooks(ctx context.Context, coll, index string, docs []chosenDoc) (bad []bool, failedCalls int, first error) {
	bad = make([]bool, len(docs))
	decoded := make([]Document, len(docs))
	for i, c := range docs {
		decoded[i] = c.rec.document()
	}
	live := make([]int, len(docs)) // positions still offered
	for i := range live {
		live[i] = i
	}
	for _, h := range m.db.cfg.hooks {
		if len(live) == 0 {
			break
		}
		batch := ExpiredBatch{Collection: coll, Index: index, Docs: make([]Document, len(live)), Versions: make([]uint64, len(live))}
		for j, i := range live {
			batch.Docs[j], batch.Versions[j] = decoded[i], docs[i].rec.ver
		}
		err := m.callHook(ctx, h.fn, batch)
		if err == nil {
			continue
		}
		failedCalls++
		first = cmp.Or(first, err)
		m.db.metrics.hookErrors.Add(1)
		named := map[int]bool{}
		var he *ExpireHookError
		if errors.As(err, &he) {
			pos := make(map[string]int, len(live))
			for _, i := range live {
				pos[string(docs[i].rec.key)] = i
			}
			for _, id := range he.Failed {
				if k, kerr := idKey(id); kerr == nil {
					if i, ok := pos[k]; ok {
						named[i] = true
					}
				}
			}
		}
		m.db.logger.Warn("ttl expire hook failed", "collection", coll, "index", index,
			"documents", len(live), "failed", cmp.Or(len(named), len(live)), "err", err)
		if len(named) == 0 {
			for _, i := range live {
				bad[i] = true
			}
			break
		}
		live = slices.DeleteFunc(live, func(i int) bool {
			bad[i] = bad[i] || named[i]
			return named[i]
		})
	}
	return bad, failedCalls, first
}

func (m *monitor) callHook(ctx context.Context, h ExpireHook, batch ExpiredBatch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			m.db.metrics.hookPan.Add(1)
			m.db.logger.Error("ttl expire hook panicked", "collection", batch.Collection, "index", batch.Index, "panic", r)
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return h(ctx, batch)
}
