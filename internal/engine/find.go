package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
	"github.com/ttldb/ttldb/internal/query"
	"github.com/ttldb/ttldb/internal/store"
)

// FindOptions adjusts Find, FindOne and Explain. The zero value returns
// every matching document, whole, in natural (insertion) order.
type FindOptions struct {
	// Sort orders the results by these keys (MongoDB's rules: a missing
	// field sorts as null; an array by its smallest element ascending, its
	// largest descending). An index whose keys match serves the order.
	Sort []IndexKey
	// Skip drops the first Skip results (after sorting). Must be >= 0.
	Skip int
	// Limit returns at most Limit results; 0 means no limit. Must be >= 0.
	Limit int
	// Projection selects fields: {a: 1, "b.c": 1} keeps only those (and
	// _id unless {_id: 0}); {a: 0} drops a. Nil returns whole documents.
	Projection Document
	// Hint names the index the filter is answered with: an index's name,
	// or its keys ([]IndexKey, or a bson.D such as {a: 1}). An index the
	// collection lacks, or one that may not hold every matching document
	// (partial, sparse, a TTL index that keeps only dates), is an
	// ErrInvalidOptions error. Nil: the planner chooses.
	Hint any
	// Collation must be nil or the simple collation (see Collation).
	Collation *Collation
}

// CountOptions adjusts CountDocuments, with the driver's option names.
type CountOptions struct {
	// Skip leaves out the first Skip matching documents from the count.
	// Must be >= 0.
	Skip int64
	// Limit counts at most Limit documents (after Skip); 0: no limit.
	// Must be >= 0.
	Limit int64
	// Hint names the index the filter is answered with (see
	// FindOptions.Hint).
	Hint any
	// Collation must be nil or the simple collation (see Collation).
	Collation *Collation
}

func mergeFindOptions(opts []FindOptions) (FindOptions, error) {
	var o FindOptions
	for _, x := range opts {
		if x.Sort != nil {
			o.Sort = x.Sort
		}
		if x.Skip != 0 {
			o.Skip = x.Skip
		}
		if x.Limit != 0 {
			o.Limit = x.Limit
		}
		if x.Projection != nil {
			o.Projection = x.Projection
		}
		if x.Hint != nil {
			o.Hint = x.Hint
		}
		if x.Collation != nil {
			o.Collation = x.Collation
		}
	}
	if o.Skip < 0 || o.Limit < 0 {
		return o, fmt.Errorf("%w: negative skip (%d) or limit (%d)", ErrInvalidOptions, o.Skip, o.Limit)
	}
	if err := query.CompileSort(sortKeys(o.Sort)); err != nil {
		return o, err
	}
	return o, nil
}

// findQuery is a compiled Find.
type findQuery struct {
	filterDoc Document // filter.Doc(): the filter in stored form, for the planner
	filter    *query.Filter
	opts      FindOptions
	hint      *index      // opts.Hint resolved (applyHint), or nil
	sort      []query.Key // opts.Sort
	proj      *query.Projection
	// ctx, if not nil, stops execute (checked every cancelEvery
	// documents examined); err is then its error.
	ctx context.Context
	err error
	// from, if not nil, resumes a walk just after that position (a
	// cursor's next batch); at is the position of the last document
	// examined. budget, if > 0, pauses the walk (paused set) before it
	// examines more than budget documents.
	from   *scanPos
	at     scanPos
	budget int
	paused bool
	// view, if not nil, is the transaction's view the query reads
	// through (txnview.go): execute skips the live documents it replaces
	// and visits its versions after the walk, and the plan's order is
	// not trusted (an in-memory sort orders the whole).
	view *txnView
}

// scanPos is a walk's position: the interval (in walk order) and the
// entry of the tree walked, which a resumed walk starts just after. Trees
// are ordered by value then insertion seq, both of which a document keeps
// when it is updated in place, and Compact keeps them too.
type scanPos struct {
	iv   int
	nat  natItem
	ent  indexEntry
	date expiryEntry
}

// sortKeys converts a sort specification for the query package.
func sortKeys(keys []IndexKey) []query.Key {
	out := make([]query.Key, len(keys))
	for i, k := range keys {
		out[i] = query.Key(k)
	}
	return out
}

func (c *Collection) compileQuery(filterArgument any, opts []FindOptions) (*findQuery, error) {
	filterDoc, err := filterArg(filterArgument)
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", c.name, err)
	}
	f, err := query.CompileFilterWith(filterDoc, &query.ExprOptions{Now: c.db.clock.Now()})
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", c.name, err)
	}
	o, err := mergeFindOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", c.name, err)
	}
	if err := checkCollation(c.name, o.Collation); err != nil {
		return nil, err
	}
	p, err := query.CompileProjection(o.Projection)
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", c.name, err)
	}
	return &findQuery{filterDoc: f.Doc(), filter: f, opts: o, sort: sortKeys(o.Sort), proj: p}, nil
}

// Find implements ttldb.Collection.Find, whose documentation is the contract.
func (c *Collection) Find(ctx context.Context, filterArgument any, opts ...FindOptions) (*Cursor, error) {
	cur, err := c.find(ctx, filterArgument, opts)
	if cur != nil {
		cur.opts = c.db.cfg.bson
	}
	return cur, err
}

func (c *Collection) find(ctx context.Context, filterArgument any, opts []FindOptions) (*Cursor, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx); err != nil {
		return nil, ctxError(c.name, err)
	}
	if ts := c.timeSeries(); ts != nil {
		if err := c.refuseIn(ctx, "a time-series collection"); err != nil {
			return nil, err
		}
		filter, err := filterArg(filterArgument)
		if err != nil {
			return nil, fmt.Errorf("collection %q: %w", c.name, err)
		}
		docs, _, err := c.tsFind(ctx, ts, filter, opts) // time-series: tsread.go
		if err != nil {
			return nil, err
		}
		return docsCursor(docs), nil
	}
	q, err := c.compileQuery(filterArgument, opts)
	if err != nil {
		return nil, err
	}
	if docs, inTxn, err := c.txnRun(ctx, q); inTxn {
		if err != nil {
			return nil, err
		}
		return &Cursor{batch: docs, done: true}, nil
	}
	s, err := c.read()
	if err != nil {
		return nil, err
	}
	if s == nil {
		return &Cursor{done: true}, nil
	}
	s.rlock()
	err = s.applyHint(q)
	p := s.plan(q)
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if p.byID || p.needsSort(q) {
		// A few points, or a sort done in memory: read them all now.
		q.ctx = ctx
		docs, _ := s.run(q, c.db.clock.Now())
		if q.err != nil {
			return nil, ctxError(c.name, q.err)
		}
		return &Cursor{batch: docs, done: true}, nil
	}
	cur := &Cursor{s: s, q: q, p: p, skip: q.opts.Skip, left: -1}
	if q.opts.Limit > 0 {
		cur.left = q.opts.Limit
	}
	cur.fetch(ctx) // the first batch, under Find's ctx
	if cur.err != nil {
		return nil, cur.err
	}
	return cur, nil
}

// FindOne implements ttldb.Collection.FindOne, whose documentation is the contract.
func (c *Collection) FindOne(ctx context.Context, filterArgument any, opts ...FindOptions) SingleResult {
	r := c.findOne(ctx, filterArgument, opts)
	r.opts = c.db.cfg.bson
	return r
}

func (c *Collection) findOne(ctx context.Context, filterArgument any, opts []FindOptions) SingleResult {
	if err := c.usable(); err != nil {
		return SingleResult{err: err}
	}
	if err := c.started(ctx); err != nil {
		return SingleResult{err: err}
	}
	if ts := c.timeSeries(); ts != nil {
		if err := c.refuseIn(ctx, "a time-series collection"); err != nil {
			return SingleResult{err: err}
		}
		filter, err := filterArg(filterArgument)
		if err != nil {
			return SingleResult{err: fmt.Errorf("collection %q: %w", c.name, err)}
		}
		doc, err := c.tsFindOne(ts, filter, opts) // time-series: tsread.go
		return SingleResult{doc: doc, err: err}
	}
	t := txnIn(ctx, c.db)
	if filter, isDoc := filterArgument.(map[string]any); isDoc && len(opts) == 0 && t == nil {
		if enc, ok, err := c.findByID(filter); ok {
			return SingleResult{enc: enc, err: err}
		}
	}
	o, err := mergeFindOptions(opts)
	if err != nil {
		return SingleResult{err: fmt.Errorf("collection %q: %w", c.name, err)}
	}
	o.Limit = 1
	q, err := c.compileQuery(filterArgument, []FindOptions{o})
	if err != nil {
		return SingleResult{err: err}
	}
	var docs []cursorDoc
	if t != nil {
		docs, _, err := c.txnRun(ctx, q)
		if err != nil {
			return SingleResult{err: err}
		}
		if len(docs) == 0 {
			return SingleResult{err: fmt.Errorf("%w: collection %q: no document matches", ErrNotFound, c.name)}
		}
		return SingleResult{enc: docs[0].enc, doc: docs[0].doc}
	}
	s, err := c.read()
	if err != nil {
		return SingleResult{err: err}
	}
	if s != nil {
		s.rlock()
		err := s.applyHint(q)
		s.mu.RUnlock()
		if err != nil {
			return SingleResult{err: err}
		}
		q.ctx = ctx
		docs, _ = s.run(q, c.db.clock.Now())
		if q.err != nil {
			return SingleResult{err: ctxError(c.name, q.err)}
		}
	}
	if len(docs) == 0 {
		return SingleResult{err: fmt.Errorf("%w: collection %q: no document matches", ErrNotFound, c.name)}
	}
	return SingleResult{enc: docs[0].enc, doc: docs[0].doc}
}

// findByID answers FindOne({_id: v}) (v a plain value) straight from the
// _id map, without compiling a filter or planning, with the document's
// encoding (which no one changes: the caller may decode it at leisure).
// ok is false when filter is not of that form; the caller then takes the
// general path.
func (c *Collection) findByID(filter Document) (enc []byte, ok bool, err error) {
	if len(filter) != 1 {
		return nil, false, nil
	}
	id, present := filter["_id"]
	if !present {
		return nil, false, nil
	}
	if m, isDoc := codec.AsDocument(id); isDoc {
		for k := range m {
			if strings.HasPrefix(k, "$") {
				return nil, false, nil // an operator: {_id: {$in: …}}
			}
		}
	}
	// Validated (no cycle, bounded depth) and in stored form before it is
	// keyed, as the filter compiler would have it. The common scalar kinds
	// are in stored form already: no copy (and no allocation) for them.
	switch x := id.(type) {
	case int, int64, ObjectID:
	case string:
		if !utf8.ValidString(x) {
			return nil, false, nil // let the filter compiler report it
		}
	default:
		var verr error
		if id, verr = codec.CloneValue(id, "_id"); verr != nil {
			return nil, false, nil // let the filter compiler report it
		}
	}
	var buf [64]byte
	k, kerr := appendIDKey(buf[:0], id)
	if kerr != nil {
		return nil, false, nil // let the filter compiler report it
	}
	s, err := c.read()
	if err != nil {
		return nil, true, err
	}
	enc, found := s.findID(k)
	if !found {
		return nil, true, fmt.Errorf("%w: collection %q: no document matches", ErrNotFound, c.name)
	}
	return enc, true, nil
}

// findID returns the encoding of the document with _id key k: the read
// primitive of FindOne by _id. found is false if there is no such document
// (or it is hidden as expired), and for a nil s (a missing collection).
// The bytes are the store's and never change (internal/store): the caller
// decodes them (codec.DecodeInto, into memory it owns) after every lock is
// released, and must not change them.
//
// It takes no collection lock (unless the collection hides expired
// documents): the store's shard lock covers the lookup, so a lookup by _id
// never waits for a writer's batch.
func (s *collState) findID(k []byte) (enc []byte, found bool) {
	if s == nil {
		return nil, false
	}
	var r store.Record
	if s.opts.HideExpired {
		s.rlock()
		r, found = s.store().Get(k)
		if found && s.hideExpiredActive() && s.expiredAt(&docRef{rec: recordOf(r)}, s.db.clock.Now()) {
			found = false
		}
		s.mu.RUnlock()
	} else {
		r, found = s.store().Get(k)
	}
	if !found {
		return nil, false
	}
	return r.Doc, true
}

// CountDocuments implements ttldb.Collection.CountDocuments, whose documentation is the contract.
func (c *Collection) CountDocuments(ctx context.Context, filterArgument any, opts ...CountOptions) (int64, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	if err := checkCtx(ctx); err != nil {
		return 0, ctxError(c.name, err)
	}
	var o CountOptions
	for _, x := range opts {
		if x.Skip != 0 {
			o.Skip = x.Skip
		}
		if x.Limit != 0 {
			o.Limit = x.Limit
		}
		if x.Hint != nil {
			o.Hint = x.Hint
		}
		if x.Collation != nil {
			o.Collation = x.Collation
		}
	}
	if err := checkCollation(c.name, o.Collation); err != nil {
		return 0, err
	}
	if o.Skip < 0 || o.Limit < 0 {
		return 0, fmt.Errorf("%w: collection %q: negative skip (%d) or limit (%d)", ErrInvalidOptions, c.name, o.Skip, o.Limit)
	}
	// The count of the matches after Skip, capped by Limit (MongoDB's).
	capped := func(n int64) int64 {
		n = max(n-o.Skip, 0)
		if o.Limit > 0 {
			n = min(n, o.Limit)
		}
		return n
	}
	if ts := c.timeSeries(); ts != nil {
		if err := c.refuseIn(ctx, "a time-series collection"); err != nil {
			return 0, err
		}
		if o.Hint != nil {
			return 0, fmt.Errorf("%w: collection %q: a time-series collection takes no hint", ErrInvalidOptions, c.name)
		}
		filter, err := filterArg(filterArgument)
		if err != nil {
			return 0, fmt.Errorf("collection %q: %w", c.name, err)
		}
		n, err := c.tsCount(ctx, ts, filter) // time-series: tsread.go
		return capped(int64(n)), err
	}
	q, err := c.compileQuery(filterArgument, []FindOptions{{Hint: o.Hint}})
	if err != nil {
		return 0, err
	}
	q.ctx = ctx
	var n int64
	enough := int64(-1) // no need to count past Skip+Limit
	if o.Limit > 0 {
		enough = o.Skip + o.Limit
	}
	if inTxn, err := c.txnExecute(ctx, q, func(*docRef) bool { n++; return n != enough }); inTxn {
		return capped(n), err
	}
	s, err := c.read()
	if err != nil || s == nil {
		return 0, err
	}
	s.rlock()
	defer s.mu.RUnlock()
	if err := s.applyHint(q); err != nil {
		return 0, err
	}
	s.execute(s.plan(q), q, c.db.clock.Now(), func(*docRef) bool { n++; return n != enough })
	if q.err != nil {
		return 0, ctxError(c.name, q.err)
	}
	return capped(n), nil
}

// run executes q under one hold of the read lock and returns every
// result: their encodings (which never change) and, where the query
// decoded them, the documents. With an in-memory sort and a Limit, it
// keeps only the Skip+Limit best documents as it goes (topK). It returns
// nil results and q.err if q.ctx ended during the scan.
func (s *collState) run(q *findQuery, now time.Time) ([]cursorDoc, *Explanation) {
	s.rlock()
	defer s.mu.RUnlock()
	return s.runLocked(q, now)
}

// runLocked is run; call holding mu (for reading).
func (s *collState) runLocked(q *findQuery, now time.Time) ([]cursorDoc, *Explanation) {
	p := s.plan(q)
	ex := &Explanation{}
	var refs []*docRef
	switch {
	case p.needsSort(q):
		var top topK
		top.init(q, q.opts.Limit > 0 && !topKOff, q.opts.Skip+q.opts.Limit)
		ex = s.execute(p, q, now, func(r *docRef) bool { top.add(r); return true })
		refs = top.sorted()
		ex.InMemorySort = true
	default:
		// Without an in-memory sort, skip and limit apply as records stream.
		need := -1
		if q.opts.Limit > 0 {
			need = q.opts.Skip + q.opts.Limit
		}
		ex = s.execute(p, q, now, func(r *docRef) bool {
			refs = append(refs, r)
			return need < 0 || len(refs) < need
		})
	}
	if q.err != nil {
		return nil, ex
	}
	refs = refs[min(q.opts.Skip, len(refs)):]
	if q.opts.Limit > 0 && len(refs) > q.opts.Limit {
		refs = refs[:q.opts.Limit]
	}
	docs := make([]cursorDoc, len(refs))
	for i, r := range refs {
		docs[i] = cursorDoc{enc: r.rec.enc, doc: r.doc, seq: r.rec.seq}
		if q.proj != nil {
			docs[i] = cursorDoc{doc: q.proj.Apply(r.get())}
		}
	}
	ex.NReturned = len(docs)
	return docs, ex
}

// selection is what a write's filter picks: up to limit (0: all) records
// matching f; with sort and a limit of 1, the first in that order; through
// the index hint names (FindOptions.Hint), if not nil.
type selection struct {
	f     *query.Filter
	limit int
	sort  []IndexKey
	hint  any
}

// matchingRecordsCtx returns the records sel picks, in the order Find
// would give without sort, or ctx's error if ctx ended during the scan
// (nil: never), or the hint's error. Call holding writeMu or mu.
func (s *collState) matchingRecordsCtx(ctx context.Context, sel selection, now time.Time) ([]*docRef, error) {
	q := &findQuery{filterDoc: sel.f.Doc(), filter: sel.f, ctx: ctx, opts: FindOptions{Sort: sel.sort, Hint: sel.hint}, sort: sortKeys(sel.sort)}
	if w := s.txw; w != nil {
		q.view, now = w.v, w.v.now
	}
	if err := s.applyHint(q); err != nil {
		return nil, err
	}
	p := s.plan(q)
	var refs []*docRef
	if sel.limit == 1 && p.needsSort(q) {
		var best *docRef
		s.execute(p, q, now, func(r *docRef) bool {
			if best == nil || query.CompareForSort(r.get(), best.get(), q.sort) < 0 {
				best = r
			}
			return true
		})
		if best != nil {
			refs = []*docRef{best}
		}
	} else {
		s.execute(p, q, now, func(r *docRef) bool {
			refs = append(refs, r)
			return sel.limit <= 0 || len(refs) < sel.limit
		})
	}
	if q.err != nil {
		return nil, q.err
	}
	return refs, nil
}

// idIndex stands for the implicit unique _id index (a hash map, not a
// tree) when the planner derives bounds on _id.
var idIndex = &index{name: idIndexName, keys: []IndexKey{Asc("_id")}, unique: true}

// interval is a range of values of an index's leading field, in value
// order (Compare), whatever the index's direction. Its bounds are held as
// keys (internal/keys, ascending), which the walk compares as bytes, and as
// values, for Explain.
type interval struct {
	lo, hi       any
	loKey, hiKey string
	loInc, hiInc bool
}

func (iv interval) String() string {
	l, r := "(", ")"
	if iv.loInc {
		l = "["
	}
	if iv.hiInc {
		r = "]"
	}
	return fmt.Sprintf("%s%s, %s%s", l, boundString(iv.lo), boundString(iv.hi), r)
}

func boundString(v any) string {
	switch v.(type) {
	case query.MinKeyType:
		return "MinKey"
	case query.MaxKeyType:
		return "MaxKey"
	case string:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%v", v)
}

// contains reports whether the value whose key is k lies in iv.
func (iv interval) contains(k string) bool {
	c := strings.Compare(k, iv.loKey)
	if c < 0 || c == 0 && !iv.loInc {
		return false
	}
	c = strings.Compare(k, iv.hiKey)
	return c < 0 || c == 0 && iv.hiInc
}

var fullInterval = interval{lo: query.MinKey, hi: query.MaxKey, loKey: keys.MinKey, hiKey: keys.MaxKey, loInc: true, hiInc: true}

// plan is how a query reads the collection.
type plan struct {
	byID      bool       // look up the points of intervals in the _id index
	ix        *index     // nil: COLLSCAN in natural order (unless byID)
	intervals []interval // on ix's leading field, ascending by value
	reverse   bool       // walk the index backwards (for a sort)
	sorted    bool       // the walk yields the requested sort order
}

// A transaction's view visits its own versions after the walk: its
// results are sorted in memory whatever the walk's order.
func (p *plan) needsSort(q *findQuery) bool {
	return len(q.opts.Sort) > 0 && (!p.sorted || q.view != nil)
}

// plan picks an index: one whose leading field the filter bounds (equality
// beats $in beats a range), else one whose keys give the requested sort,
// else a collection scan.
func (s *collState) plan(q *findQuery) *plan {
	if q.hint != nil {
		if p := s.hintedPlan(q); p != nil {
			return p
		}
	}
	if ivs, score := boundsFor(q.filterDoc, "_id", idIndex); score >= 2 {
		return &plan{byID: true, intervals: ivs} // points: lo is hi
	}
	var best *plan
	bestScore := 0
	for _, ix := range s.indexes {
		if ix.partial != nil {
			continue // it may not hold every matching document
		}
		ivs, score := boundsFor(q.filterDoc, ix.keys[0].Field, ix)
		if ix.tree == nil && !ix.dateTreeServes(ivs) {
			continue // a TTL index's date tree, which cannot answer this
		}
		if score > bestScore {
			best, bestScore = &plan{ix: ix, intervals: ivs}, score
		}
	}
	if best != nil {
		if len(best.intervals) == 1 {
			best.sorted, best.reverse = sortFromIndex(best.ix, q.opts.Sort)
		}
		return best
	}
	if len(q.opts.Sort) > 0 {
		for _, ix := range s.indexes {
			if ix.partial != nil || ix.sparse {
				continue
			}
			if ix.tree == nil && ix.ttl.exact != s.natural.Len() {
				continue // the date tree lacks documents without one date
			}
			if ok, rev := sortFromIndex(ix, q.opts.Sort); ok {
				return &plan{ix: ix, intervals: []interval{fullInterval}, sorted: true, reverse: rev}
			}
		}
	}
	return &plan{}
}

// sortFromIndex reports whether walking ix (forwards, or backwards if
// reverse) yields documents in the order of sort.
func sortFromIndex(ix *index, sort []IndexKey) (ok, reverse bool) {
	if len(sort) == 0 || len(sort) > len(ix.keys) || ix.multikey {
		return false, false
	}
	same, flipped := true, true
	for i, k := range sort {
		if k.Field != ix.keys[i].Field {
			return false, false
		}
		same = same && k.Order == ix.keys[i].Order
		flipped = flipped && k.Order == -ix.keys[i].Order
	}
	switch {
	case same:
		return true, false
	case flipped:
		return true, true
	}
	return false, false
}

// execute walks the plan, calling visit for each record that matches the
// filter (and is not hidden as expired) until visit returns false. Call
// holding mu (or writeMu).
func (s *collState) execute(p *plan, q *findQuery, now time.Time, visit func(*docRef) bool) *Explanation {
	ex := &Explanation{Collection: s.name, Stage: "COLLSCAN", Filter: q.filterDoc}
	hide := s.hideExpiredActive()
	matchAll := len(q.filterDoc) == 0
	consider := func(slot store.Slot, pos scanPos) bool {
		if q.budget > 0 && ex.DocsExamined >= q.budget {
			q.paused = true
			return false
		}
		q.at = pos
		ex.DocsExamined++
		if q.ctx != nil && ex.DocsExamined%cancelEvery == 0 {
			if q.err = checkCtx(q.ctx); q.err != nil {
				return false
			}
		}
		ref := &docRef{rec: s.rec(slot)}
		if q.view != nil {
			if _, _, decided := q.view.versionAt(ref.rec.key); decided {
				return true // extras visits the view's version
			}
		}
		if hide && s.expiredAt(ref, now) {
			return true
		}
		if !matchAll {
			ok, err := q.filter.MatchesErr(ref.get())
			if err != nil { // a $expr failed: the query fails, as MongoDB's
				q.err = err
				return false
			}
			if !ok {
				return true
			}
		}
		return visit(ref)
	}
	if q.view != nil {
		// The walk below, then the versions the view has of its own.
		stopped := false
		inner := visit
		visit = func(r *docRef) bool {
			if !inner(r) {
				stopped = true
				return false
			}
			return true
		}
		defer func() {
			if stopped || q.err != nil || q.paused {
				return
			}
			q.view.extras(func(rec record) bool {
				ref := &docRef{rec: rec}
				ex.DocsExamined++
				if hide && s.expiredAt(ref, now) {
					return true
				}
				ok, err := q.filter.MatchesErr(ref.get())
				if err != nil {
					q.err = err
					return false
				}
				if !ok {
					return true
				}
				return visit(ref)
			})
		}()
	}
	if p.byID {
		ex.Stage, ex.IndexName, ex.IndexKeys = "IXSCAN", idIndexName, []IndexKey{Asc("_id")}
		var buf [64]byte
		for i, iv := range p.intervals {
			ex.IndexBounds = append(ex.IndexBounds, iv.String())
			if q.from != nil && i <= q.from.iv {
				continue
			}
			// The point's store key (idKey), which for a string or an
			// ObjectID is not its ordered key (loKey).
			k, err := appendIDKey(buf[:0], iv.lo)
			if err != nil {
				continue // no document has it
			}
			if slot, ok := s.store().Lookup(k); ok {
				ex.KeysExamined++
				if !consider(slot, scanPos{iv: i}) {
					break
				}
			}
		}
		return ex
	}
	if p.ix == nil {
		var start natItem
		if q.from != nil {
			start.seq = q.from.nat.seq + 1
		}
		s.natural.AscendGreaterOrEqual(start, func(it natItem) bool { return consider(it.slot, scanPos{nat: it}) })
		return ex
	}
	ex.Stage, ex.IndexName = "IXSCAN", p.ix.name
	ex.IndexKeys = append([]IndexKey(nil), p.ix.keys...)
	for _, iv := range p.intervals {
		ex.IndexBounds = append(ex.IndexBounds, iv.String())
	}
	if p.ix.tree == nil {
		s.scanDates(p, q.from, func(e expiryEntry, i int) bool {
			ex.KeysExamined++
			return consider(e.slot, scanPos{iv: i, date: e})
		})
		return ex
	}
	var seen map[store.Slot]bool
	if p.ix.multikey || len(p.intervals) > 1 {
		seen = map[store.Slot]bool{}
	}
	ivs := p.intervals
	if p.ix.keys[0].Order < 0 != p.reverse {
		ivs = slices.Clone(ivs)
		slices.Reverse(ivs)
	}
	for i, iv := range ivs {
		var from *indexEntry
		if q.from != nil {
			if i < q.from.iv {
				continue
			}
			if i == q.from.iv {
				from = &q.from.ent
			}
		}
		if !s.scanInterval(p, iv, from, func(e indexEntry) bool {
			ex.KeysExamined++
			if seen != nil {
				if seen[e.slot] {
					return true
				}
				seen[e.slot] = true
			}
			return consider(e.slot, scanPos{iv: i, ent: e})
		}) {
			break
		}
	}
	return ex
}

// scanInterval visits the entries of p.ix whose leading value lies in iv,
// in the walk's direction, from just after from if it is not nil. It
// returns false if visit stopped the walk.
func (s *collState) scanInterval(p *plan, iv interval, from *indexEntry, visit func(indexEntry) bool) bool {
	ix := p.ix
	// The tree holds a descending leading field's keys inverted: compare
	// entries with the bounds' keys in that form, and turn the result back
	// into value order.
	desc := ix.keys[0].Order < 0
	treeKey := func(k string) string {
		if desc {
			return keys.Inverted(k)
		}
		return k
	}
	lo, hi := treeKey(iv.loKey), treeKey(iv.hiKey)
	valueCmp := func(e indexEntry, bound string) int {
		c := keys.CompareFirst(e.key, bound)
		if desc {
			c = -c
		}
		return c
	}
	contains := func(e indexEntry) bool {
		c := valueCmp(e, lo)
		if c < 0 || c == 0 && !iv.loInc {
			return false
		}
		c = valueCmp(e, hi)
		return c < 0 || c == 0 && iv.hiInc
	}
	// In tree order, an ascending leading field runs lo..hi; a descending
	// one hi..lo. forward says whether the walk runs in tree order.
	forward := !p.reverse
	// start is where the walk begins, in value terms.
	start, startInc := lo, iv.loInc
	if desc == forward {
		start, startInc = hi, iv.hiInc
	}
	stopped := false
	walk := func(e indexEntry) bool {
		if from != nil && e.seq == from.seq && e.key == from.key {
			return true // the last entry visited
		}
		if !startInc && valueCmp(e, start) == 0 {
			return true
		}
		if !contains(e) {
			return false
		}
		if !visit(e) {
			stopped = true
			return false
		}
		return true
	}
	// Every key whose leading field is start begins with start's key: the
	// first such entry is at or after (start, lowest seq), the last at or
	// before (start then 0xFF, highest seq).
	switch {
	case from != nil && forward:
		ix.tree.AscendGreaterOrEqual(*from, walk)
	case from != nil:
		ix.tree.DescendLessOrEqual(*from, walk)
	case forward:
		ix.tree.AscendGreaterOrEqual(indexEntry{key: start, seq: pivotSeq(true)}, walk)
	default:
		ix.tree.DescendLessOrEqual(indexEntry{key: keys.After(start), seq: pivotSeq(false)}, walk)
	}
	return !stopped
}

// dateTreeServes reports whether the date tree of ix, a TTL index without
// a key tree, holds every document a filter bounded by ivs (its intervals
// on the indexed field) can match, so that scanning the tree over ivs
// gives the same answer as a collection scan. The tree holds each
// document's earliest date under the index's value forms. Comparisons are
// type-bracketed, so intervals bounded by dates match only dates; a
// document whose field holds one date is in the tree under that date; one
// with several values (an array) under the earliest, which is no later
// than the element that matches, so such documents only allow intervals
// open below ($lt, $lte). Numbers and strings read as dates (ArangoDB's
// forms) are in the tree but match no date bound: the filter, applied to
// every document examined, drops them.
func (ix *index) dateTreeServes(ivs []interval) bool {
	if len(ivs) == 0 {
		return false
	}
	for _, iv := range ivs {
		_, loDate := iv.lo.(time.Time)
		_, hiDate := iv.hi.(time.Time)
		_, loMin := iv.lo.(query.MinKeyType)
		_, hiMax := iv.hi.(query.MaxKeyType)
		switch {
		case !loDate && !loMin, !hiDate && !hiMax, !loDate && !hiDate:
			return false
		case ix.multikey && !loMin:
			return false
		}
	}
	return true
}

// scanDates visits the entries of p.ix's date tree whose dates lie in
// p.intervals, in the walk's direction (resuming just after from's entry
// if from is not nil), with the interval's index in walk order, until
// visit returns false.
func (s *collState) scanDates(p *plan, from *scanPos, visit func(expiryEntry, int) bool) {
	tree := p.ix.ttl.expiry
	desc := p.ix.keys[0].Order < 0 != p.reverse
	ivs := p.intervals
	if desc {
		ivs = slices.Clone(ivs)
		slices.Reverse(ivs)
	}
	for i, iv := range ivs {
		if from != nil && i < from.iv {
			continue
		}
		resume := from != nil && i == from.iv
		lo, loDate := iv.lo.(time.Time)
		hi, hiDate := iv.hi.(time.Time)
		stopped := false
		walk := func(e expiryEntry) bool {
			if resume && e == from.date {
				return true // the last entry visited
			}
			if loDate {
				c := compareEntry(e, lo)
				if c < 0 || c == 0 && !iv.loInc {
					if desc {
						return false // below the interval: done
					}
					return true
				}
			}
			if hiDate {
				c := compareEntry(e, hi)
				if c > 0 || c == 0 && !iv.hiInc {
					if desc {
						return true
					}
					return false // above the interval: done
				}
			}
			if !visit(e, i) {
				stopped = true
				return false
			}
			return true
		}
		switch {
		case resume && !desc:
			tree.AscendGreaterOrEqual(from.date, walk)
		case resume:
			tree.DescendLessOrEqual(from.date, walk)
		case !desc && loDate:
			tree.AscendGreaterOrEqual(expiryEntry{sec: lo.Unix(), nsec: int32(lo.Nanosecond())}, walk)
		case !desc:
			tree.Ascend(walk)
		case hiDate:
			tree.DescendLessOrEqual(expiryEntry{sec: hi.Unix(), nsec: int32(hi.Nanosecond()), seq: ^uint64(0)}, walk)
		default:
			tree.Descend(walk)
		}
		if stopped {
			return
		}
	}
}

// compareEntry orders an entry's date against t.
func compareEntry(e expiryEntry, t time.Time) int {
	if c := cmp.Compare(e.sec, t.Unix()); c != 0 {
		return c
	}
	return cmp.Compare(e.nsec, int32(t.Nanosecond()))
}

// pivotSeq is the tie-break of a walk's first entry: before (forward) or
// after (backward) every document with the same key.
func pivotSeq(forward bool) uint64 {
	if forward {
		return 0
	}
	return ^uint64(0)
}

// boundsFor derives, from the filter's top-level conditions (and those of a
// top-level $and), the intervals of values that path must take in a
// matching document, and scores how selective they are (0: the filter does
// not bound path; 1 a range; 2 an $in; 3 an equality). The intervals may be
// wider than the filter (the filter is still applied to every document);
// they are never narrower.
func boundsFor(filterDoc Document, path string, ix *index) ([]interval, int) {
	var conds [][]interval
	var scores []int
	var collect func(d Document)
	collect = func(d Document) {
		for k, v := range d {
			if k == "$and" {
				if elems, ok := codec.ArrayElements(v); ok {
					for _, e := range elems {
						if sub, ok := codec.AsDocument(e); ok {
							collect(sub)
						}
					}
				}
				continue
			}
			if k != path {
				continue
			}
			if ivs, score := conditionBounds(v, ix); score > 0 {
				conds = append(conds, ivs)
				scores = append(scores, score)
			}
		}
	}
	collect(filterDoc)
	if len(conds) == 0 {
		return nil, 0
	}
	if ix.multikey {
		// Conditions on a multikey field may be met by different elements,
		// so their intervals must not be intersected: use the best one.
		best := 0
		for i := range conds {
			if scores[i] > scores[best] {
				best = i
			}
		}
		return conds[best], scores[best]
	}
	ivs, score := conds[0], scores[0]
	for i := 1; i < len(conds); i++ {
		ivs = intersectIntervals(ivs, conds[i])
		score = max(score, scores[i])
	}
	return ivs, score
}

// conditionBounds turns one field condition into intervals.
func conditionBounds(v any, ix *index) ([]interval, int) {
	point := func(x any) (interval, bool) {
		// A *regexp.Regexp matches by pattern, not equality: no bounds.
		if codec.IsArray(x) || x == nil && (ix.sparse || ix.multikey) || query.IsRegex(x) {
			return interval{}, false
		}
		k, err := keys.Encode(x)
		if err != nil {
			return interval{}, false // no key (not a storable value): no bounds
		}
		return interval{lo: x, hi: x, loKey: k, hiKey: k, loInc: true, hiInc: true}, true
	}
	ops, isOps := codec.AsDocument(v)
	if isOps && len(ops) > 0 {
		for k := range ops {
			if !strings.HasPrefix(k, "$") {
				isOps = false
			}
		}
	}
	if !isOps || len(ops) == 0 {
		if iv, ok := point(v); ok {
			return []interval{iv}, 3
		}
		return nil, 0
	}
	iv, score := fullInterval, 0
	var points []interval
	for op, arg := range ops {
		switch op {
		case "$eq":
			p, ok := point(arg)
			if !ok {
				return nil, 0
			}
			points, score = []interval{p}, 3
		case "$in":
			if score == 3 {
				continue
			}
			elems, ok := codec.ArrayElements(arg)
			if !ok {
				return nil, 0
			}
			points = points[:0]
			for _, e := range elems {
				p, ok := point(e)
				if !ok {
					return nil, 0
				}
				points = append(points, p)
			}
			score = 2
		case "$gt", "$gte":
			if codec.IsArray(arg) {
				// An array operand compares with a whole array value,
				// which index keys (the elements of a multikey field) do
				// not hold: no bounds.
				return nil, 0
			}
			k, err := keys.Encode(arg)
			if err != nil {
				return nil, 0
			}
			if c := strings.Compare(k, iv.loKey); c > 0 || c == 0 && op == "$gt" {
				iv.lo, iv.loKey, iv.loInc = arg, k, op == "$gte"
			}
			score = max(score, 1)
		case "$lt", "$lte":
			if codec.IsArray(arg) {
				return nil, 0
			}
			k, err := keys.Encode(arg)
			if err != nil {
				return nil, 0
			}
			if c := strings.Compare(k, iv.hiKey); c < 0 || c == 0 && op == "$lt" {
				iv.hi, iv.hiKey, iv.hiInc = arg, k, op == "$lte"
			}
			score = max(score, 1)
		}
	}
	if score >= 2 {
		slices.SortFunc(points, func(a, b interval) int { return strings.Compare(a.loKey, b.loKey) })
		points = slices.CompactFunc(points, func(a, b interval) bool { return a.loKey == b.loKey })
		if ix.multikey {
			return points, score
		}
		return intersectIntervals(points, []interval{iv}), score
	}
	if score == 1 {
		if ix.sparse && iv.contains(keys.Null) {
			// The range matches null, so documents missing the field,
			// which a sparse index leaves out: no bounds.
			return nil, 0
		}
		if ix.multikey && iv.loKey != keys.MinKey && iv.hiKey != keys.MaxKey {
			// Two bounds on a multikey field may be met by two elements.
			iv.hi, iv.hiKey, iv.hiInc = query.MaxKey, keys.MaxKey, true
		}
		return []interval{iv}, 1
	}
	return nil, 0
}

// intersectIntervals intersects two sorted lists of disjoint intervals.
func intersectIntervals(a, b []interval) []interval {
	var out []interval
	for _, x := range a {
		for _, y := range b {
			iv := x
			if c := strings.Compare(y.loKey, iv.loKey); c > 0 || c == 0 && !y.loInc {
				iv.lo, iv.loKey, iv.loInc = y.lo, y.loKey, y.loInc
			}
			if c := strings.Compare(y.hiKey, iv.hiKey); c < 0 || c == 0 && !y.hiInc {
				iv.hi, iv.hiKey, iv.hiInc = y.hi, y.hiKey, y.hiInc
			}
			if c := strings.Compare(iv.loKey, iv.hiKey); c < 0 || c == 0 && iv.loInc && iv.hiInc {
				out = append(out, iv)
			}
		}
	}
	return out
}

// Explanation describes how Find would run a query, with counts from
// actually running it (MongoDB's explain "executionStats", in brief).
type Explanation struct {
	Collection   string
	Stage        string     // "IXSCAN" (the _id index "_id_" included) or "COLLSCAN" (or "BATCHED_DELETE" for a TTL deletion)
	IndexName    string     // the index an IXSCAN walks
	IndexKeys    []IndexKey // its keys
	IndexBounds  []string   // the intervals walked on the leading field, e.g. "[3, 3]"
	Filter       Document   // the filter applied to each document examined
	InMemorySort bool       // the results were sorted after matching (no index gave the order)
	KeysExamined int        // index entries visited
	DocsExamined int        // documents the filter was applied to
	NReturned    int        // documents returned (after skip and limit)
	// Deleted is the number of documents a BATCHED_DELETE deleted; the
	// batch fields describe its batching.
	Deleted         int
	BatchSize       int
	Batches         int
	ExpireAfterSecs *int32
	// The dry run of ExplainTTLDelete: Due is how many of the index's
	// documents are due now, all of them (counted to the second, as
	// Metrics counts the backlog); DrainRate the deletions per second the
	// estimate assumes (the monitor's last pass that deleted anything,
	// capped by MaxDeletesPerSecond; 0: unknown); DrainTime how long
	// deleting Due takes at that rate, from a pass's start (0: unknown).
	Due       int64
	DrainRate float64
	DrainTime time.Duration

	// Time-series collections: BucketsExamined is the buckets the scan
	// visited (for a BATCHED_DELETE, the buckets it would delete or trim),
	// BucketsUnpacked those whose meta value and min/max time could not
	// rule them out, whose measurements were read (DocsExamined counts
	// measurements). Measurements is the measurements a BATCHED_DELETE
	// would remove.
	BucketsExamined int
	BucketsUnpacked int
	Measurements    int
}

// Explain implements ttldb.Collection.Explain, whose documentation is the contract.
func (c *Collection) Explain(ctx context.Context, filterArgument any, opts ...FindOptions) (Explanation, error) {
	if err := c.usable(); err != nil {
		return Explanation{}, err
	}
	if err := c.started(ctx); err != nil {
		return Explanation{}, err
	}
	filter, err := filterArg(filterArgument)
	if err != nil {
		return Explanation{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	if ts := c.timeSeries(); ts != nil {
		return c.tsExplain(ts, filter, opts) // time-series: tsread.go
	}
	q, err := c.compileQuery(filter, opts)
	if err != nil {
		return Explanation{}, err
	}
	s, err := c.read()
	if err != nil {
		return Explanation{}, err
	}
	if s == nil {
		return Explanation{Collection: c.name, Stage: "EOF", Filter: filter}, nil
	}
	s.rlock()
	err = s.applyHint(q)
	s.mu.RUnlock()
	if err != nil {
		return Explanation{}, err
	}
	_, ex := s.run(q, c.db.clock.Now())
	if q.err != nil {
		return Explanation{}, fmt.Errorf("collection %q: %w", c.name, q.err)
	}
	return *ex, nil
}
