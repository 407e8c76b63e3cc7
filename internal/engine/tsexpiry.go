package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
)

// The TTL monitor visits a time-series collection's expiry rules (its
// collection-level ExpireAfterSeconds and its partial TTL indexes) as it
// visits TTL indexes, in the same passes and sub-passes with the same
// budgets: each rule is one target of a sub-pass (ttlTarget.ts), whose
// batches delete buckets. BatchSize, PerIndexMaxDeletes and the per-pass
// caps count buckets, as MongoDB's batched deletes count bucket documents;
// Metrics().TTL.DeletedDocuments counts the buckets deleted and
// DeletedMeasurements the measurements they held. With PreciseExpiry a
// batch also trims expired measurements out of buckets that keep others: a
// trimmed bucket counts in BatchSize but not as deleted.

// tsTargets lists the expiry rules of a time-series collection that are
// on, for a sub-pass.
func (s *collState) tsTargets() []ttlTarget {
	ts := s.ts
	if ts == nil {
		return nil
	}
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	if ts.dropped {
		return nil
	}
	var out []ttlTarget
	for _, e := range ts.expiries() {
		if e.expireAfter.Load() >= 0 {
			out = append(out, ttlTarget{coll: s, ix: e.ix, ts: e})
		}
	}
	return out
}

// tsRuleDue is a time-series expiry rule's name and whether any of its
// measurements is due at the instant asked (expiryMetrics).
type tsRuleDue struct {
	name string
	due  bool
}

// tsRulesDue lists s's time-series expiry rules that are on (none for an
// ordinary collection), each with whether a measurement is due at now.
func (s *collState) tsRulesDue(now time.Time) []tsRuleDue {
	targets := s.tsTargets()
	if len(targets) == 0 {
		return nil
	}
	s.ts.mu.RLock()
	defer s.ts.mu.RUnlock()
	out := make([]tsRuleDue, len(targets))
	for i, t := range targets {
		th, ok := t.ts.earliestThreshold()
		out[i] = tsRuleDue{t.ix.name, ok && !th.After(now)}
	}
	return out
}

// removed returns the measurements the target's last batch removed, for a
// DeleteEvent (nil for a TTL index).
func (t ttlTarget) removed() *tsRemoved {
	if t.ts == nil {
		return nil
	}
	return t.ts.lastRemoved
}

// tsRemoved is what a DeleteEvent carries of the measurements a batch
// removed: the buckets' encodings, decoded only when an observer asks.
// A bucket's slices are never written in place once they hold a
// measurement (a trim or a delete installs new ones) and are Go memory,
// not the store's reusable slabs, so the event can share them after the
// lock is released (were buckets to move into slabs, add must copy).
type tsRemoved struct {
	timeField, metaField string
	parts                []tsRemovedPart
}

// tsRemovedPart is one bucket's removed measurements: all of them (sel
// nil) or those at the positions in sel.
type tsRemovedPart struct {
	b   *bucket // a copy of the bucket as it was when they were removed
	sel []int32
}

// add records the measurements of b that keep marks false, and appends
// their _id values to ids. Call holding the collection's mu, before the
// bucket is rewritten.
func (r *tsRemoved) add(b *bucket, keep []bool, ids []any) []any {
	snap := *b
	p := tsRemovedPart{b: &snap}
	all := !slices.Contains(keep, true)
	for i, k := range keep {
		if k {
			continue
		}
		if !all {
			p.sel = append(p.sel, int32(i))
		}
		id, _ := codec.EncodedField(b.enc(i), "_id")
		ids = append(ids, id)
	}
	r.parts = append(r.parts, p)
	return ids
}

// Measurements yields, for a time-series collection, the measurements the
// deletion removed (whole buckets, or trimmed with PreciseExpiry), in the
// order of IDs, as Find returns them; for an ordinary collection it yields
// nothing. Each is decoded from its bucket when yielded (the cost of a
// FindOne per measurement, nothing until asked): an observer that needs
// only the _id values reads IDs and pays nothing here, and one that stops
// early decodes no more. Every document yielded is new and the caller's
// own; each call decodes afresh. slices.Collect(ev.Measurements()) gives a
// slice. Safe to call from any goroutine, also after the observer returned.
func (ev DeleteEvent) Measurements() iter.Seq[Document] {
	return func(yield func(Document) bool) {
		r := ev.removed
		if r == nil {
			return
		}
		for _, p := range r.parts {
			if p.sel == nil {
				for i := range p.b.offs {
					if !yield(decodeMeasurement(r.timeField, r.metaField, p.b, i)) {
						return
					}
				}
				continue
			}
			for _, i := range p.sel {
				if !yield(decodeMeasurement(r.timeField, r.metaField, p.b, int(i))) {
					return
				}
			}
		}
	}
}

// live reports whether the rule still exists. Call holding the
// collection's mu.
func (e *tsExpiry) live() bool {
	ts := e.ts
	return e == ts.collExp || slices.ContainsFunc(ts.indexes, func(ix *tsIndex) bool { return ix.exp == e })
}

// tsChosen is a bucket chosen for deletion (whole) or trimming (its
// measurements at or before cut), in the version ver.
type tsChosen struct {
	b     *bucket
	ver   uint64
	whole bool
	cut   time.Time
}

// choose returns up to limit buckets expired at cutoff (see
// tsExpiry.cutoff), skipping those set aside in this pass or whose retry
// is not due at now (a zero now: every set-aside bucket not of this pass,
// for Explain). Call holding the collection's mu.
func (e *tsExpiry) choose(cutoff time.Time, limit int, pass uint64, now time.Time) (out []tsChosen, more bool) {
	cs, cn := cutoff.Unix(), int32(cutoff.Nanosecond())
	e.tree.Ascend(func(en tsExpEntry) bool {
		if en.sec > cs || en.sec == cs && en.nsec > cn {
			return false
		}
		if p, ok := e.setAside[en.b]; ok && (p == pass || !now.IsZero() && !e.backoff.due(now)) {
			return true
		}
		out = append(out, tsChosen{b: en.b, ver: en.b.ver, cut: cutoff, whole: !e.ts.opts.PreciseExpiry || !en.b.max.After(cutoff)})
		return len(out) < limit
	})
	return out, len(out) >= limit
}

// removes reports whether c removes measurement i of its bucket.
func (c *tsChosen) removes(i int) bool {
	return c.whole || !c.b.timeAt(i).After(c.cut)
}

// deleteBuckets is deleteBatch for a time-series expiry rule: it deletes
// (or trims) up to limit expired buckets in one hold of the collection's
// lock. With expire hooks it chooses them first under the read lock, offers
// their measurements to the hooks with no lock held, and deletes those
// still in the version offered; a bucket a hook failed for (any of its
// measurements) is kept whole and set aside until the next pass. n counts
// whole buckets deleted; ids are the removed measurements' _id values when
// there are observers (and e.lastDocs the measurements).
func (m *monitor) deleteBuckets(ctx context.Context, t ttlTarget, passNow time.Time, limit int) (n int, ids []any, exhausted bool, batchNow time.Time, err error) {
	e := t.ts
	ts := e.ts
	e.lastMeasurements, e.lastRemoved = 0, nil
	pass := m.delivery.pass // written only between passes
	observe := len(m.db.cfg.observe) > 0
	hooks := len(m.db.cfg.hooks) > 0
	var chosen []tsChosen
	var failed []*bucket
	more := false
	if hooks {
		ts.mu.RLock()
		switch {
		case ts.dropped:
			ts.mu.RUnlock()
			return 0, nil, false, batchNow, errCollectionDropped
		case !e.live():
			ts.mu.RUnlock()
			return 0, nil, false, batchNow, errIndexDropped
		}
		now := earlier(passNow, m.db.clock.Now())
		cut, on := e.cutoff(now)
		if on {
			chosen, more = e.choose(cut, limit, pass, now)
		}
		offered := make([][]Document, len(chosen))
		for j := range chosen {
			c := &chosen[j]
			for i := range c.b.offs {
				if c.removes(i) {
					offered[j] = append(offered[j], ts.measurement(c.b, i))
				}
			}
		}
		ts.mu.RUnlock()
		if len(chosen) == 0 {
			return 0, nil, !more, batchNow, nil
		}
		bad := m.runBucketHooks(ctx, ts.name, e.name, chosen, offered)
		if err := m.stopped(ctx); err != nil {
			return 0, nil, false, batchNow, err
		}
		kept := chosen[:0]
		for j, c := range chosen {
			if bad[j] {
				failed = append(failed, c.b)
			} else {
				kept = append(kept, c)
			}
		}
		chosen = kept
		if !m.isPrimary() {
			return 0, nil, false, batchNow, errSteppedDown
		}
	}
	if err := m.stopped(ctx); err != nil {
		return 0, nil, false, batchNow, err
	}
	ts.mu.Lock()
	switch {
	case ts.dropped:
		ts.mu.Unlock()
		return 0, nil, false, batchNow, errCollectionDropped
	case !e.live():
		ts.mu.Unlock()
		return 0, nil, false, batchNow, errIndexDropped
	}
	batchNow = earlier(passNow, m.db.clock.Now())
	e.backOff(failed, pass, batchNow, m.opts.Load())
	cut, on := e.cutoff(batchNow)
	if !on {
		ts.mu.Unlock()
		return 0, nil, true, batchNow, nil // turned off by CollModTimeSeries meanwhile
	}
	if !hooks {
		chosen, more = e.choose(cut, limit, pass, batchNow)
	}
	retry := false
	// Each removed measurement's lag, from its own threshold (its time
	// plus expireAfterSeconds: without PreciseExpiry it waits for its
	// bucket, and the lag says so), counted once the batch is done.
	lagCut := batchNow.Add(-time.Duration(e.expireAfter.Load()) * time.Second)
	var lags lagCounts
	// The measurements to remove: a bucket of chosen at most once each.
	marks := &e.marks
	defer marks.reset()
	for _, c := range chosen {
		b := c.b
		if hooks {
			// Re-checked under the lock: only the version the hooks saw,
			// and only what is still expired, goes.
			if b.removed {
				continue
			}
			key := ts.expiryKey(b)
			if b.ver != c.ver {
				retry = retry || !key.After(cut)
				continue
			}
			if cut.Before(c.cut) {
				c.cut = cut
				if !ts.opts.PreciseExpiry && key.After(cut) {
					continue
				}
				c.whole = !ts.opts.PreciseExpiry || !b.max.After(cut)
			}
		}
		keep := make([]bool, b.len())
		for i := range keep {
			keep[i] = !c.removes(i)
			if !keep[i] {
				lags.observe(lagCut, b.timeAt(i))
			}
		}
		marks.add(b, keep)
	}
	var op Op // the batch's OpExpire, when ops are wanted
	if m.db.ops.opsWanted() && len(marks.order) > 0 {
		op = ts.removalOp(OpExpire, marks) // before the buckets change
		at := opTime(batchNow)
		op.Collection, op.Index, op.Cutoff, op.Time = ts.name, e.name, at, at
	}
	removed := 0
	var rem *tsRemoved
	if p := m.db.cfg.proposer; p != nil && len(op.Keys) > 0 {
		// Proposal-first: nothing goes before the op is committed, and
		// then through DB.Apply's code (its re-check, its metrics).
		n, removed, ids, rem, err = ts.proposeRemoval(p, op, marks)
		ts.unlockWrite()
		if err != nil {
			return 0, nil, false, batchNow, err
		}
	} else {
		if observe {
			rem = &tsRemoved{timeField: ts.opts.TimeField, metaField: ts.opts.MetaField}
		}
		n, removed, ids = ts.removeMarked(marks, rem)
		if len(op.Keys) > 0 {
			ts.commitOps(batchNow, op)
		}
		ts.unlockWrite()
		m.db.countDeletedMeasurements(ts.name, removed)
	}
	e.lastMeasurements, e.lastRemoved = removed, rem
	lags.addTo(&m.lags)
	return n, ids, !more && !retry, batchNow, nil
}

// proposeRemoval proposes a TTL batch's OpExpire (proposeExpire) and,
// once it is committed, removes its measurements (marks, which its keys
// name) as DB.Apply does (applyRemoval). Call holding mu for writing,
// since marks were chosen. (A function of its own: op and the results
// escape here, not in deleteBuckets.)
func (ts *tsColl) proposeRemoval(p ExpireProposer, op Op, marks *tsMarks) (n, removed int, ids []any, rem *tsRemoved, err error) {
	err = ts.db.proposeExpire(p, &op, func(op *Op) (err error) {
		n, removed, ids, rem, err = ts.applyRemoval(op, true, marks)
		ts.db.countDeletedMeasurements(ts.name, removed)
		return err
	})
	return n, removed, ids, rem, err
}

// runBucketHooks offers the measurements of the chosen buckets to the
// expire hooks, in order. bad[j] reports that some hook did not handle a
// measurement of chosen[j] (named in an *ExpireHookError, or any other
// error for all): that bucket is kept whole and offered to no later hook.
func (m *monitor) runBucketHooks(ctx context.Context, coll, name string, chosen []tsChosen, offered [][]Document) []bool {
	bad := make([]bool, len(chosen))
	for _, h := range m.db.cfg.hooks {
		batch := ExpiredBatch{Collection: coll, Index: name}
		var owner []int // owner[k]: the chosen bucket of batch.Docs[k]
		for j, docs := range offered {
			if bad[j] {
				continue
			}
			for _, d := range docs {
				batch.Docs = append(batch.Docs, codec.CopyDocument(d))
				batch.Versions = append(batch.Versions, chosen[j].ver)
				owner = append(owner, j)
			}
		}
		if len(batch.Docs) == 0 {
			break
		}
		err := m.callHook(ctx, h.fn, batch)
		if err == nil {
			continue
		}
		m.db.metrics.hookErrors.Add(1)
		m.delivery.mu.Lock()
		m.delivery.failures++
		m.delivery.mu.Unlock()
		named := 0
		var he *ExpireHookError
		if errors.As(err, &he) {
			for _, id := range he.Failed {
				for k, d := range batch.Docs {
					if !bad[owner[k]] && compareIDs(d["_id"], id) == 0 {
						bad[owner[k]] = true
						named++
					}
				}
			}
		}
		m.db.logger.Warn("ttl expire hook failed", "collection", coll, "index", name,
			"documents", len(batch.Docs), "failedBuckets", named, "err", err)
		if named == 0 {
			for j := range bad {
				bad[j] = true
			}
			break
		}
	}
	return bad
}

// compareIDs compares two _id values as the filter {_id: v} would.
func compareIDs(a, b any) int {
	ka, errA := idKey(a)
	kb, errB := idKey(b)
	if errA != nil || errB != nil {
		return 1
	}
	return cmp.Compare(ka, kb)
}

// earliestThreshold returns the earliest threshold of any bucket under the
// collection's rules that are on.
func (ts *tsColl) earliestThreshold() (time.Time, bool) {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	if ts.dropped {
		return time.Time{}, false
	}
	var best time.Time
	found := false
	for _, e := range ts.expiries() {
		if th, ok := e.earliestThreshold(); ok && (!found || th.Before(best)) {
			best, found = th, true
		}
	}
	return best, found
}

// explainTTLDelete is ExplainTTLDelete for a time-series collection: the
// rule is named CollectionExpiryName or by its partial TTL index's name.
// The deletion is over buckets: IndexKeys is the timeField, IndexBounds the
// bucket starts (control.min) that are expired (at or before now - E -
// span; with PreciseExpiry, the measurement times at or before now - E),
// KeysExamined and DocsExamined the buckets the first visit would delete or
// trim, Measurements the measurements it would remove.
func (c *Collection) tsExplainTTLDelete(ts *tsColl, name string) (Explanation, error) {
	o := c.db.monitor.opts.Load()
	now := c.db.clock.Now()
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	var e *tsExpiry
	for _, x := range ts.expiries() {
		if x.name == name {
			e = x
		}
	}
	if e == nil {
		if slices.ContainsFunc(ts.indexes, func(ix *tsIndex) bool { return ix.name == name }) {
			return Explanation{}, fmt.Errorf("%w: collection %q: index %q is not a TTL index", ErrInvalidIndex, c.name, name)
		}
		return Explanation{}, fmt.Errorf("%w: collection %q: no index %q (the collection-level expiry is %q)", ErrNotFound, c.name, name, CollectionExpiryName)
	}
	cut, on := e.cutoff(now)
	if !on {
		return Explanation{}, fmt.Errorf("%w: %w: collection %q: the collection-level expireAfterSeconds is off", ErrInvalidIndex, ErrTimeSeries, c.name)
	}
	limit := o.PerIndexMaxDeletes
	if o.MaxTotalRemoves > 0 {
		limit = min(limit, o.MaxTotalRemoves)
	}
	if o.MaxCollectionRemoves > 0 {
		limit = min(limit, o.MaxCollectionRemoves)
	}
	chosen, _ := e.choose(cut, max(limit, 1), 0, time.Time{})
	if limit <= 0 {
		chosen = nil
	}
	measurements := 0
	for j := range chosen {
		for i := range chosen[j].b.offs {
			if chosen[j].removes(i) {
				measurements++
			}
		}
	}
	secs := int32(e.expireAfter.Load())
	field := "control.min." + ts.opts.TimeField
	if ts.opts.PreciseExpiry {
		field = ts.opts.TimeField
	}
	return Explanation{
		Collection:      c.name,
		Stage:           "BATCHED_DELETE",
		IndexName:       e.name,
		IndexKeys:       []IndexKey{Asc(ts.opts.TimeField)},
		IndexBounds:     []string{fmt.Sprintf("[MinDate, %s]", cut.UTC().Format(time.RFC3339Nano))},
		Filter:          Document{field: Document{"$lte": cut}},
		KeysExamined:    len(chosen),
		DocsExamined:    len(chosen),
		BucketsExamined: len(chosen),
		Measurements:    measurements,
		BatchSize:       o.BatchSize,
		Batches:         (len(chosen) + o.BatchSize - 1) / o.BatchSize,
		ExpireAfterSecs: &secs,
	}, nil
}
