package engine

import (
	"errors"
	"fmt"
	"time"
)

// expiredInWay is what a write does, under HideExpired, with the expired
// documents it meets where they would make it fail: a stored document with
// the _id it inserts, or the only holder of a key it needs in a unique
// index. Hidden from every read, such a document must not be in the way
// either: the write deletes it first, as the monitor would have, through
// the monitor's path. The expire hooks see it first (with no lock held:
// the write gives up its lock, runs the hooks, then runs again and
// re-checks), its deletion commits with the write, is counted in Metrics
// and told to the DeleteObservers. If a hook fails, the write fails with
// ErrExpireHook and changes nothing.
//
// An expired document a write does not need out of the way (one its
// filter would match, say) stays for the monitor: a write never fails
// because of an unrelated document's hook.
type expiredInWay struct {
	now      time.Time         // the clock's reading at the first meeting
	approved map[uint64]bool   // versions (record.ver) the hooks handled, in earlier rounds
	met      map[uint64]*index // versions met in this round: the index they expired under
	doomed   []metDoc          // deleted with the write's commit
	pending  []metDoc          // the hooks must see them first
	removed  []metDoc          // deleted: to count and report
}

type metDoc struct {
	rec record
	ix  *index
}

// maxInWayRounds bounds how often a write runs the hooks for documents
// that keep changing while the hooks run.
const maxInWayRounds = 8

// errHooksFirst tells Collection.write that the write met expired
// documents the expire hooks have not seen.
var errHooksFirst = errors.New("ttldb: expire hooks first")

// beginInWay starts recording the expired documents a write meets; nil
// when the collection does not hide expired documents. Call holding
// writeMu.
func (s *collState) beginInWay(approved map[uint64]bool) *expiredInWay {
	if !s.opts.HideExpired {
		return nil
	}
	s.inWay = &expiredInWay{approved: approved, met: map[uint64]*index{}}
	return s.inWay
}

// expiredInWay reports whether rec, a stored document that would make the
// running write fail, is expired and hidden: then it is not in the way,
// and the write deletes it before its own change (or, if the hooks have
// not seen this version, runs them first). Call holding writeMu.
func (s *collState) expiredInWay(rec record) bool {
	w := s.inWay
	if w == nil {
		return false
	}
	if _, ok := w.met[rec.ver]; ok {
		return true
	}
	if w.now.IsZero() {
		w.now = s.db.clock.Now()
	}
	ix := s.expiredUnder(&docRef{rec: rec}, w.now)
	if ix == nil {
		return false
	}
	w.met[rec.ver] = ix
	if len(s.db.cfg.hooks) == 0 || w.approved[rec.ver] {
		w.doomed = append(w.doomed, metDoc{rec, ix})
	} else {
		w.pending = append(w.pending, metDoc{rec, ix})
	}
	return true
}

// expiredUnder returns the TTL index under which a stored document expired
// first, if it is expired at now; nil otherwise.
func (s *collState) expiredUnder(ref *docRef, now time.Time) *index {
	var (
		best   *index
		bestTh time.Time
	)
	for _, ix := range s.indexes {
		d, ok := ix.storedDate(ref)
		if !ok {
			continue
		}
		if th := ix.ttl.thresholdFor(d); !th.After(now) && (best == nil || th.Before(bestTh)) {
			best, bestTh = ix, th
		}
	}
	return best
}

// ready returns errHooksFirst if the write met expired documents the hooks
// must see before they go. Call before the write commits.
func (w *expiredInWay) ready() error {
	if w != nil && len(w.pending) > 0 {
		return errHooksFirst
	}
	return nil
}

// remove deletes the expired documents in the write's way, as part of its
// commit. Call holding mu for writing, before the write stores anything.
func (w *expiredInWay) remove(s *collState) {
	if w == nil {
		return
	}
	for _, d := range w.doomed {
		s.removeRecord(&d.rec)
	}
	if r := s.oprec; r != nil {
		w.recordOps(s, r)
	}
	w.removed, w.doomed = append(w.removed, w.doomed...), nil
}

// recordOps records the deletions of the doomed documents as the running
// write's first ops: one OpDelete per TTL index they expired under, marked
// Expired, with the write's clock reading as the cutoff.
func (w *expiredInWay) recordOps(s *collState, r *opRecorder) {
	var order []*index
	byIndex := map[*index][]record{}
	for _, d := range w.doomed {
		if _, ok := byIndex[d.ix]; !ok {
			order = append(order, d.ix)
		}
		byIndex[d.ix] = append(byIndex[d.ix], d.rec)
	}
	for _, ix := range order {
		recs := byIndex[ix]
		op := Op{Kind: OpDelete, Keys: recordKeys(recs), Index: ix.name, Cutoff: opTime(w.now), Expired: true}
		if r.pre {
			op.Before = recordDocs(recs)
		}
		r.add(s, op)
	}
}

// report counts the deletions of a committed write and tells the
// observers, as the monitor does for its own. Call with no lock held.
func (w *expiredInWay) report(s *collState) {
	byIndex := map[*index][]any{}
	var order []*index
	for _, d := range w.removed {
		if _, ok := byIndex[d.ix]; !ok {
			order = append(order, d.ix)
		}
		byIndex[d.ix] = append(byIndex[d.ix], d.rec.id())
	}
	m := s.db.monitor
	for _, ix := range order {
		ids := byIndex[ix]
		s.db.metrics.addDeleted(IndexRef{s.name, ix.name}, len(ids))
		if len(s.db.cfg.observe) > 0 {
			m.observe(DeleteEvent{Collection: s.name, Index: ix.name, IDs: ids, PassNow: w.now, BatchNow: w.now})
		}
	}
}

// deliverInWay offers the expired documents a write met to the expire
// hooks, one index at a time, with no lock held, and returns the versions
// they handled (added to approved). If a hook failed for any of them, the
// write fails with ErrExpireHook.
func (m *monitor) deliverInWay(s *collState, met []metDoc, approved map[uint64]bool) (map[uint64]bool, error) {
	if approved == nil {
		approved = map[uint64]bool{}
	}
	byIndex := map[*index][]chosenDoc{}
	var order []*index
	for _, d := range met {
		if _, ok := byIndex[d.ix]; !ok {
			order = append(order, d.ix)
		}
		byIndex[d.ix] = append(byIndex[d.ix], chosenDoc{rec: d.rec})
	}
	for _, ix := range order {
		docs := byIndex[ix]
		bad, _, herr := m.runHooks(m.ctx, s.name, ix.name, docs)
		for i, c := range docs {
			if bad[i] {
				return nil, fmt.Errorf("collection %q: %w for document %v, expired under index %q (hidden) and in the write's way: %w",
					s.name, ErrExpireHook, c.rec.id(), ix.name, herr)
			}
			approved[c.rec.ver] = true
		}
	}
	return approved, nil
}
