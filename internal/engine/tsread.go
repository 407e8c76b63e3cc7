package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
	"github.com/ttldb/ttldb/internal/query"
)

// tsPlan is how a query reads a time-series collection: the buckets of an
// index within bounds on its leading field, or every bucket; each is then
// checked against the filter's bounds on the metaField and the timeField
// (its meta value, its min and max time) before its measurements are
// unpacked.
type tsPlan struct {
	ix        *tsIndex
	intervals []interval // on ix's leading field, in bucket-key terms
	shown     []interval // the same, as the filter gives them (for Explain)
	meta      []interval // bounds on the metaField (nil: none)
	time      []interval // bounds on the timeField (nil: none)
}

// plainBounds stands for an index that is neither sparse nor multikey when
// boundsFor derives bounds on a time-series field.
var plainBounds = &index{}

// tsPivot sorts before every bucket with the same key (buckets have seq 1
// and up).
var tsPivot = &bucket{}

func (ts *tsColl) plan(q *findQuery) *tsPlan {
	p := &tsPlan{}
	if mf := ts.opts.MetaField; mf != "" {
		if ivs, score := boundsFor(q.filterDoc, mf, plainBounds); score > 0 {
			p.meta = ivs
		}
	}
	if ivs, score := boundsFor(q.filterDoc, ts.opts.TimeField, plainBounds); score > 0 {
		p.time = ivs
	}
	best := 0
	for _, ix := range ts.indexes {
		if ix.partial != nil || ix.multikey && ix.measured == nil {
			continue
		}
		lead := ix.keys[0].Field
		standIn := plainBounds
		if ix.measured != nil {
			standIn = ix.measuredStandIn()
		}
		ivs, score := boundsFor(q.filterDoc, lead, standIn)
		if score <= best {
			continue
		}
		best, p.ix, p.shown = score, ix, ivs
		p.intervals = ivs
		if lead == ts.opts.TimeField {
			p.intervals = ts.widenToBuckets(ivs)
		}
	}
	return p
}

// widenToBuckets turns bounds on measurement times into bounds on bucket
// starts: a bucket starting up to a span before a date may hold it.
func (ts *tsColl) widenToBuckets(ivs []interval) []interval {
	out := make([]interval, 0, len(ivs))
	for _, iv := range ivs {
		if t, ok := iv.lo.(time.Time); ok {
			lo := t.Add(-time.Duration(ts.span) * time.Second)
			if k, err := keys.Encode(lo); err == nil {
				iv.lo, iv.loKey, iv.loInc = lo, k, true
			}
		}
		out = append(out, iv)
	}
	// Widened intervals may overlap: merge them so no bucket is met twice.
	merged := out[:0]
	for _, iv := range out {
		if n := len(merged); n > 0 && strings.Compare(iv.loKey, merged[n-1].hiKey) <= 0 {
			if strings.Compare(iv.hiKey, merged[n-1].hiKey) > 0 {
				merged[n-1].hi, merged[n-1].hiKey, merged[n-1].hiInc = iv.hi, iv.hiKey, iv.hiInc
			}
			continue
		}
		merged = append(merged, iv)
	}
	return merged
}

// mayHold reports whether a bucket may hold a measurement within the plan's
// bounds on meta and time.
func (ts *tsColl) mayHold(p *tsPlan, b *bucket) bool {
	if p.meta != nil {
		k := b.metaKey
		if !b.hasMeta {
			k = keys.Null // a missing field matches as null
		}
		if !slices.ContainsFunc(p.meta, func(iv interval) bool { return iv.contains(k) }) {
			return false
		}
	}
	if p.time != nil {
		lo, err1 := keys.Encode(b.min)
		hi, err2 := keys.Encode(b.max)
		if err1 == nil && err2 == nil && !slices.ContainsFunc(p.time, func(iv interval) bool {
			return strings.Compare(hi, iv.loKey) >= 0 && strings.Compare(lo, iv.hiKey) <= 0
		}) {
			return false
		}
	}
	return true
}

// scan visits the measurements the filter matches, bucket by bucket, until
// visit returns false. Call holding mu.
func (ts *tsColl) scan(p *tsPlan, q *findQuery, visit func(b *bucket, i int, doc Document) bool) *Explanation {
	ex := &Explanation{Collection: ts.name, Stage: "COLLSCAN", Filter: q.filterDoc}
	matchAll := len(q.filterDoc) == 0
	stopped := false
	consider := func(b *bucket) bool {
		ex.BucketsExamined++
		if !ts.mayHold(p, b) {
			return true
		}
		ex.BucketsUnpacked++
		for i := range b.offs {
			ex.DocsExamined++
			if q.ctx != nil && ex.DocsExamined%cancelEvery == 0 {
				if q.err = checkCtx(q.ctx); q.err != nil {
					stopped = true
					return false
				}
			}
			doc := ts.measurement(b, i)
			if !matchAll {
				ok, err := q.filter.MatchesErr(doc)
				if err != nil { // a $expr failed: the query fails
					q.err = err
					stopped = true
					return false
				}
				if !ok {
					continue
				}
			}
			if !visit(b, i, doc) {
				stopped = true
				return false
			}
		}
		return true
	}
	if p.ix == nil {
		ts.buckets.Ascend(consider)
		return ex
	}
	ex.Stage, ex.IndexName, ex.IndexKeys = "IXSCAN", p.ix.name, slices.Clone(p.ix.keys)
	for _, iv := range p.shown {
		ex.IndexBounds = append(ex.IndexBounds, iv.String())
	}
	if p.ix.measured != nil {
		p.ix.scanMeasured(p.intervals, &ex.KeysExamined, consider)
		return ex
	}
	var seen map[*bucket]bool
	if len(p.intervals) > 1 {
		seen = map[*bucket]bool{}
	}
	for _, iv := range p.intervals {
		if stopped {
			break
		}
		p.ix.tree.AscendGreaterOrEqual(tsEntry{key: iv.loKey, b: tsPivot}, func(e tsEntry) bool {
			c := keys.CompareFirst(e.key, iv.loKey)
			if c == 0 && !iv.loInc {
				return true
			}
			if c = keys.CompareFirst(e.key, iv.hiKey); c > 0 || c == 0 && !iv.hiInc {
				return false
			}
			ex.KeysExamined++
			if seen != nil {
				if seen[e.b] {
					return true
				}
				seen[e.b] = true
			}
			return consider(e.b)
		})
	}
	return ex
}

// run executes a Find.
func (ts *tsColl) run(q *findQuery) ([]Document, *Explanation, error) {
	ts.rlock()
	if ts.dropped {
		ts.mu.RUnlock()
		return nil, nil, nil
	}
	p := ts.plan(q)
	docs := []Document{} // as an ordinary collection: empty, not nil
	need := -1
	if q.opts.Limit > 0 && len(q.sort) == 0 {
		need = q.opts.Skip + q.opts.Limit
	}
	ex := ts.scan(p, q, func(_ *bucket, _ int, doc Document) bool {
		docs = append(docs, doc)
		return need < 0 || len(docs) < need
	})
	ts.mu.RUnlock()
	if len(q.sort) > 0 {
		ex.InMemorySort = true
		slices.SortStableFunc(docs, func(a, b Document) int { return query.CompareForSort(a, b, q.sort) })
	}
	docs = docs[min(q.opts.Skip, len(docs)):]
	if q.opts.Limit > 0 && len(docs) > q.opts.Limit {
		docs = docs[:q.opts.Limit]
	}
	if q.proj != nil {
		for i := range docs {
			docs[i] = q.proj.Apply(docs[i])
		}
	}
	ex.NReturned = len(docs)
	return docs, ex, nil
}

func (c *Collection) tsFind(ctx context.Context, ts *tsColl, filter Document, opts []FindOptions) ([]Document, *Explanation, error) {
	q, err := c.compileQuery(filter, opts)
	if err != nil {
		return nil, nil, err
	}
	q.ctx = ctx
	docs, ex, err := ts.run(q)
	if err == nil && q.err != nil {
		return nil, nil, ctxError(c.name, q.err)
	}
	return docs, ex, err
}

func (c *Collection) tsFindOne(ts *tsColl, filter Document, opts []FindOptions) (Document, error) {
	o, err := mergeFindOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", c.name, err)
	}
	o.Limit = 1
	docs, _, err := c.tsFind(context.Background(), ts, filter, []FindOptions{o})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w: collection %q: no document matches", ErrNotFound, c.name)
	}
	return docs[0], nil
}

func (c *Collection) tsCount(ctx context.Context, ts *tsColl, filter Document) (int, error) {
	q, err := c.compileQuery(filter, nil)
	if err != nil {
		return 0, err
	}
	q.ctx = ctx
	ts.rlock()
	defer ts.mu.RUnlock()
	if ts.dropped {
		return 0, nil
	}
	if len(q.filterDoc) == 0 {
		return ts.count, nil
	}
	n := 0
	ts.scan(ts.plan(q), q, func(*bucket, int, Document) bool { n++; return true })
	if q.err != nil {
		return 0, ctxError(c.name, q.err)
	}
	return n, nil
}

func (c *Collection) tsExplain(ts *tsColl, filter Document, opts []FindOptions) (Explanation, error) {
	_, ex, err := c.tsFind(context.Background(), ts, filter, opts)
	if err != nil {
		return Explanation{}, err
	}
	if ex == nil {
		return Explanation{Collection: c.name, Stage: "EOF", Filter: filter}, nil
	}
	return *ex, nil
}

// tsDelete deletes the measurements matching filter (up to limit; 0: all),
// as MongoDB deletes from a time-series collection: by filter, on any
// field. A bucket left empty is removed.
func (c *Collection) tsDelete(ctx context.Context, ts *tsColl, filter Document, limit int) (int, error) {
	f, err := query.CompileFilterWith(filter, &query.ExprOptions{Now: c.db.clock.Now()})
	if err != nil {
		return 0, fmt.Errorf("collection %q: %w", c.name, err)
	}
	q := &findQuery{filterDoc: f.Doc(), filter: f, ctx: ctx}
	ts.lockForeground()
	defer ts.unlockWrite()
	if ts.dropped {
		return 0, nil
	}
	marks := &tsMarks{}
	n := 0
	ts.scan(ts.plan(q), q, func(b *bucket, i int, _ Document) bool {
		marks.mark(b, i)
		n++
		return limit <= 0 || n < limit
	})
	if q.err != nil {
		return 0, ctxError(c.name, q.err) // nothing deleted yet
	}
	var op Op
	wantOps := ts.db.ops.opsWanted() && len(marks.order) > 0
	if wantOps {
		op = ts.removalOp(OpDelete, marks) // before the buckets change
	}
	ts.removeMarked(marks, nil)
	if wantOps {
		ts.commitOps(c.db.clock.Now(), op)
	}
	return n, nil
}

// tsUpdate applies an update to the metaField of every measurement a
// filter on the metaField matches, as MongoDB's time-series updates do:
// the filter may name only the metaField, the update may change only the
// metaField, and only UpdateMany (multi) is allowed. A whole bucket shares
// its meta value, so the update rewrites buckets, never measurements.
func (c *Collection) tsUpdate(ts *tsColl, filter, update Document, limit int, opts []UpdateOptions) (UpdateResult, error) {
	var res UpdateResult
	where := fmt.Sprintf("collection %q", c.name)
	refuse := func(format string, args ...any) (UpdateResult, error) {
		return res, fmt.Errorf("%w: %w: %s: %s", ErrInvalidUpdate, ErrTimeSeries, where, fmt.Sprintf(format, args...))
	}
	f, err := query.CompileFilterWith(filter, &query.ExprOptions{Now: c.db.clock.Now()})
	if err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	u, err := query.CompileUpdate(update)
	if err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	mf := ts.opts.MetaField
	switch {
	case mergeUpdateOptions(opts).Upsert:
		return refuse("upsert is not supported on a time-series collection")
	case limit == 1:
		return refuse("UpdateOne is not supported on a time-series collection: use UpdateMany (MongoDB's multi: true)")
	case mf == "":
		return refuse("updates may change only the metaField, and the collection has none")
	}
	if err := ts.metaOnly(f.Doc()); err != nil {
		return refuse("an update's filter may name only the metaField: %v", err)
	}
	for op, args := range update {
		fields, _ := codec.AsDocument(args)
		for path, v := range fields {
			paths := []string{path}
			if op == "$rename" {
				if s, ok := v.(string); ok {
					paths = append(paths, s)
				}
			}
			for _, p := range paths {
				if p != mf && !strings.HasPrefix(p, mf+".") {
					return refuse("an update may change only the metaField %q, not %q", mf, p)
				}
			}
		}
	}
	now := c.db.clock.Now()
	ts.lockForeground()
	defer ts.unlockWrite()
	if ts.dropped {
		return res, nil
	}
	type change struct {
		b       *bucket
		meta    any
		hasMeta bool
		key     string
	}
	var changes []change
	var matched []*bucket
	ts.buckets.Ascend(func(b *bucket) bool {
		if f.Matches(ts.metaDoc(b)) {
			matched = append(matched, b)
		}
		return true
	})
	for _, b := range matched {
		res.MatchedCount += int64(b.len())
		nd, changed, err := u.Apply(codec.CopyDocument(ts.metaDoc(b)), now)
		if err != nil {
			return UpdateResult{}, fmt.Errorf("%s: %w", where, err)
		}
		if !changed {
			continue
		}
		ch := change{b: b}
		ch.meta, ch.hasMeta = nd[mf]
		if ch.hasMeta {
			if codec.IsArray(ch.meta) {
				return UpdateResult{}, fmt.Errorf("%w: %w: %s: the update makes metaField %q an array", ErrInvalidUpdate, ErrTimeSeries, where, mf)
			}
			if ch.key, err = keys.Encode(ch.meta); err != nil {
				return UpdateResult{}, fmt.Errorf("%w: %s: metaField %q: %w", ErrInvalidUpdate, where, mf, err)
			}
		}
		changes = append(changes, ch)
	}
	var grow int64
	for _, ch := range changes {
		grow += metaGrowth(ch.b, ch.hasMeta, ch.key)
	}
	if err := ts.reserveMeta(grow); err != nil {
		return UpdateResult{}, err
	}
	wantOps := ts.db.ops.opsWanted() && len(changes) > 0
	var before [][]RawDocument
	if wantOps && ts.db.ops.preImagesWanted() {
		for _, ch := range changes {
			before = append(before, ts.measurements(nil, ch.b, nil))
		}
	}
	for _, ch := range changes {
		b := ch.b
		ts.detachExpiry(b)
		for _, ix := range ts.indexes {
			ix.remove(ts, b)
		}
		if ts.open[b.metaKey] == b {
			delete(ts.open, b.metaKey)
		}
		// The reopen tree and the meta's bytes follow the new meta key.
		if ts.reopen != nil {
			ts.reopen.Delete(b)
		}
		ts.untrack(b)
		b.meta, b.hasMeta, b.metaKey = ch.meta, ch.hasMeta, ch.key
		ts.track(b)
		ts.indexReopen(b)
		b.ver = ts.db.writes.Add(1)
		for _, ix := range ts.indexes {
			ix.add(ts, b)
		}
		ts.attachExpiry(b)
		res.ModifiedCount += int64(b.len())
	}
	if wantOps {
		changed := make([]*bucket, len(changes))
		for i, ch := range changes {
			changed[i] = ch.b
		}
		ts.commitOps(now, ts.metaUpdateOp(changed, before, resolvedUpdate(update, now)))
	}
	return res, nil
}

// tsExpiresAt answers ExpiresAt for a time-series collection: the earliest
// threshold of the measurements with that _id (measurement _id values need
// not be unique). It scans the collection.
func (c *Collection) tsExpiresAt(ts *tsColl, id any) (time.Time, bool, error) {
	id, err := codec.CloneValue(id, "_id")
	if err != nil {
		return time.Time{}, false, fmt.Errorf("collection %q: %w", c.name, err)
	}
	ts.rlock()
	defer ts.mu.RUnlock()
	var best time.Time
	found, expires := false, false
	ts.buckets.Ascend(func(b *bucket) bool {
		for i := range b.offs {
			v, ok := codec.EncodedField(b.enc(i), "_id")
			if !ok || query.Compare(v, id) != 0 {
				continue
			}
			found = true
			if th, ok := ts.measurementThreshold(b, i); ok && (!expires || th.Before(best)) {
				best, expires = th, true
			}
		}
		return true
	})
	if !found {
		return time.Time{}, false, fmt.Errorf("%w: collection %q: no measurement with _id %v", ErrNotFound, c.name, id)
	}
	return best, expires, nil
}
