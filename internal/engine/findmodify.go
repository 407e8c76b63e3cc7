package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// ReturnDocument says which version of the document FindOneAndUpdate and
// FindOneAndReplace return.
type ReturnDocument int

const (
	// Before returns the document as it was before the write (the
	// default, as in the MongoDB driver).
	Before ReturnDocument = iota
	// After returns the document as the write left it (the inserted one
	// for an upsert).
	After
)

// FindOneAndUpdateOptions adjusts FindOneAndUpdate. The zero value updates
// the first match in natural order and returns it as it was before.
type FindOneAndUpdateOptions struct {
	// ReturnDocument chooses the version returned: Before (default) or
	// After. With Before, an upsert that inserts returns ErrNotFound (there
	// was no document before), as the driver's ErrNoDocuments.
	ReturnDocument ReturnDocument
	// Sort picks which matching document is updated: the first in this
	// order (MongoDB's sort rules; an index whose keys match serves it,
	// else every match is read to find the first). Nil: natural order.
	Sort []IndexKey
	// Projection shapes the returned document (as FindOptions.Projection);
	// the stored document is whole.
	Projection Document
	// Upsert inserts a document when nothing matches: the filter's
	// equality conditions with the update applied, $setOnInsert included.
	Upsert bool
	// Hint names the index the filter is answered with (see
	// FindOptions.Hint).
	Hint any
	// Collation must be nil or the simple collation (see Collation).
	Collation *Collation
	// ArrayFilters are the filters of the update's "$[id]" paths (see
	// UpdateOptions.ArrayFilters).
	ArrayFilters []any
}

// FindOneAndReplaceOptions adjusts FindOneAndReplace: the fields of
// FindOneAndUpdateOptions, except that Upsert inserts the replacement
// (with the filter's _id if it names one and the replacement does not).
type FindOneAndReplaceOptions struct {
	ReturnDocument ReturnDocument
	Sort           []IndexKey
	Projection     Document
	Upsert         bool
	Hint           any
	Collation      *Collation
}

// FindOneAndDeleteOptions adjusts FindOneAndDelete: Sort picks which
// matching document is deleted, Projection shapes the one returned, Hint
// names the index.
type FindOneAndDeleteOptions struct {
	Sort       []IndexKey
	Projection Document
	Hint       any        // see FindOptions.Hint
	Collation  *Collation // nil or the simple collation (see Collation)
}

// findModify is a compiled find-and-modify: the query that picks the
// document and what to return.
type findModify struct {
	ctx    context.Context // the call's: the transaction it joins, if any
	q      *findQuery
	ret    ReturnDocument
	upsert bool
}

func (c *Collection) compileFindModify(ctx context.Context, op string, filter any, o FindOneAndUpdateOptions) (*findModify, error) {
	sort, proj, ret, upsert := o.Sort, o.Projection, o.ReturnDocument, o.Upsert
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := c.started(ctx); err != nil {
		return nil, err
	}
	if c.timeSeries() != nil {
		return nil, fmt.Errorf("%w: %w: collection %q: %s is not supported on a time-series collection", ErrInvalidUpdate, ErrTimeSeries, c.name, op)
	}
	if ret != Before && ret != After {
		return nil, fmt.Errorf("%w: collection %q: %s: ReturnDocument %d is neither Before nor After", ErrInvalidOptions, c.name, op, ret)
	}
	q, err := c.compileQuery(filter, []FindOptions{{Sort: sort, Projection: proj, Hint: o.Hint, Collation: o.Collation}})
	if err != nil {
		return nil, err
	}
	return &findModify{ctx: ctx, q: q, ret: ret, upsert: upsert}, nil
}

// FindOneAndUpdate implements ttldb.Collection.FindOneAndUpdate, whose documentation is the contract.
func (c *Collection) FindOneAndUpdate(ctx context.Context, filter, updateArgument any, opts ...FindOneAndUpdateOptions) SingleResult {
	var o FindOneAndUpdateOptions
	for _, x := range opts {
		o = mergeFindModifyOptions(o, x)
	}
	fm, err := c.compileFindModify(ctx, "FindOneAndUpdate", filter, o)
	if err != nil {
		return SingleResult{err: err}
	}
	update, err := updateArg(updateArgument)
	if err != nil {
		return SingleResult{err: fmt.Errorf("collection %q: %w", c.name, err)}
	}
	u, err := query.CompileUpdateWithArrayFilters(update, o.ArrayFilters)
	if err != nil {
		return SingleResult{err: fmt.Errorf("collection %q: %w", c.name, err)}
	}
	return c.runFindModify(fm, func(s *collState, ref *docRef, now time.Time) (Document, error) {
		if ref == nil {
			seed, err := query.UpsertSeed(fm.q.filterDoc)
			if err != nil {
				return nil, fmt.Errorf("collection %q: upsert: %w", s.name, err)
			}
			doc, _, err := u.ApplyInsert(seed, now) // $setOnInsert applies
			if err != nil {
				return nil, fmt.Errorf("collection %q: upsert: %w", s.name, err)
			}
			return doc, nil
		}
		nd, changed, err := u.Apply(ref.get(), now)
		if err != nil {
			return nil, fmt.Errorf("collection %q: document %v: %w", s.name, ref.get()["_id"], err)
		}
		if !changed {
			return nil, nil
		}
		if r := s.oprec; r != nil {
			r.replaceKind, r.update = OpUpdate, resolvedUpdate(update, now)
		}
		return nd, nil
	})
}

// FindOneAndReplace implements ttldb.Collection.FindOneAndReplace, whose documentation is the contract.
func (c *Collection) FindOneAndReplace(ctx context.Context, filter any, replacement any, opts ...FindOneAndReplaceOptions) SingleResult {
	var o FindOneAndUpdateOptions
	for _, x := range opts {
		o = mergeFindModifyOptions(o, FindOneAndUpdateOptions{ReturnDocument: x.ReturnDocument, Sort: x.Sort, Projection: x.Projection, Upsert: x.Upsert, Hint: x.Hint, Collation: x.Collation})
	}
	fm, err := c.compileFindModify(ctx, "FindOneAndReplace", filter, o)
	if err != nil {
		return SingleResult{err: err}
	}
	rd, err := asDocument(replacement)
	if err != nil {
		return SingleResult{err: fmt.Errorf("collection %q: %w", c.name, err)}
	}
	if err := query.ValidateReplacement(rd); err != nil {
		return SingleResult{err: fmt.Errorf("collection %q: %w", c.name, err)}
	}
	repl, err := codec.CloneDocument(rd)
	if err != nil {
		return SingleResult{err: fmt.Errorf("collection %q: %w", c.name, err)}
	}
	return c.runFindModify(fm, func(s *collState, ref *docRef, now time.Time) (Document, error) {
		doc := codec.CopyDocument(repl)
		if ref == nil {
			if _, ok := doc["_id"]; !ok {
				if seed, err := query.UpsertSeed(fm.q.filterDoc); err == nil {
					if id, ok := seed["_id"]; ok {
						doc["_id"] = id
					}
				}
			}
			return doc, nil
		}
		old := ref.get()
		if id, ok := doc["_id"]; ok && query.Compare(id, old["_id"]) != 0 {
			return nil, fmt.Errorf("collection %q: document %v: %w: %w", s.name, old["_id"], ErrInvalidUpdate, ErrImmutableID)
		}
		doc["_id"] = old["_id"]
		if query.Compare(doc, old) == 0 {
			return nil, nil
		}
		if r := s.oprec; r != nil {
			r.replaceKind = OpReplace
		}
		return doc, nil
	})
}

// FindOneAndDelete implements ttldb.Collection.FindOneAndDelete, whose documentation is the contract.
func (c *Collection) FindOneAndDelete(ctx context.Context, filter any, opts ...FindOneAndDeleteOptions) SingleResult {
	var o FindOneAndUpdateOptions
	for _, x := range opts {
		o = mergeFindModifyOptions(o, FindOneAndUpdateOptions{Sort: x.Sort, Projection: x.Projection, Hint: x.Hint, Collation: x.Collation})
	}
	o.ReturnDocument, o.Upsert = Before, false
	fm, err := c.compileFindModify(ctx, "FindOneAndDelete", filter, o)
	if err != nil {
		return SingleResult{err: err}
	}
	return c.runFindModify(fm, nil)
}

func mergeFindModifyOptions(o, x FindOneAndUpdateOptions) FindOneAndUpdateOptions {
	if x.ReturnDocument != Before {
		o.ReturnDocument = x.ReturnDocument
	}
	if x.Sort != nil {
		o.Sort = x.Sort
	}
	if x.Projection != nil {
		o.Projection = x.Projection
	}
	o.Upsert = o.Upsert || x.Upsert
	if x.Hint != nil {
		o.Hint = x.Hint
	}
	if x.Collation != nil {
		o.Collation = x.Collation
	}
	if x.ArrayFilters != nil {
		o.ArrayFilters = x.ArrayFilters
	}
	return o
}

// runFindModify picks the document and writes it in one hold of the
// collection's write path. build returns the new document for ref (nil
// ref: the document an upsert inserts), or nil to leave ref unchanged; a
// nil build deletes ref.
func (c *Collection) runFindModify(fm *findModify, build func(s *collState, ref *docRef, now time.Time) (Document, error)) SingleResult {
	r := c.runFindModifyOnce(fm, build)
	r.opts = c.db.cfg.bson
	return r
}

func (c *Collection) runFindModifyOnce(fm *findModify, build func(s *collState, ref *docRef, now time.Time) (Document, error)) SingleResult {
	if !fm.upsert {
		// A write that finds nothing must not create the collection.
		if s, err := c.read(); err != nil || s == nil {
			if err == nil {
				err = c.notFound()
			}
			return SingleResult{err: err}
		}
	}
	var before, after []byte // encodings: the store's, never changed
	var found bool
	err := c.writeFor(fm.ctx, false, func(s *collState) error {
		before, after, found = nil, nil, false // a run again after the hooks starts afresh
		now := c.db.clock.Now()
		if r := s.oprec; r != nil {
			r.now = now
		}
		if err := s.applyHint(fm.q); err != nil {
			return err
		}
		readAt := now
		fm.q.view = nil
		if w := s.txw; w != nil {
			fm.q.view, readAt = w.v, w.v.now
		}
		ref, err := s.firstMatch(fm.q, readAt)
		if err != nil {
			return err
		}
		if ref == nil && !fm.upsert {
			return nil
		}
		found = ref != nil
		if build == nil { // FindOneAndDelete
			before = ref.rec.enc
			return s.removeFound([]*docRef{ref})
		}
		nd, err := build(s, ref, now)
		if err != nil {
			return err
		}
		if ref == nil {
			id, err := s.upsertInsert(nd, now)
			if err != nil {
				return err
			}
			after = s.encOfID(id)
			return nil
		}
		before, after = ref.rec.enc, ref.rec.enc
		if nd == nil {
			return nil // nothing changes
		}
		if _, err := s.replaceRecords([]*docRef{ref}, []Document{nd}); err != nil {
			return err
		}
		if w := s.txw; w != nil {
			after = w.after
		} else if rec, ok := s.recAt(ref.rec.slot, ref.rec.seq); ok {
			after = rec.enc
		} else {
			// A capped collection evicted it to make room for itself.
			after = nil
			if enc, err := codec.Encode(nd, nil); err == nil {
				after = enc
			}
		}
		return nil
	})
	if err != nil {
		return SingleResult{err: err}
	}
	enc := before
	if fm.ret == After {
		enc = after
	}
	if enc == nil {
		if !found && fm.upsert && fm.ret == Before {
			return SingleResult{err: fmt.Errorf("%w: collection %q: no document matched (one was upserted)", ErrNotFound, c.name)}
		}
		return SingleResult{err: c.notFound()}
	}
	if fm.q.proj != nil {
		return SingleResult{doc: fm.q.proj.Apply(codec.Decode(enc))}
	}
	return SingleResult{enc: enc}
}

func (c *Collection) notFound() error {
	return fmt.Errorf("%w: collection %q: no document matches", ErrNotFound, c.name)
}

// firstMatch returns the first document q matches, in q's sort order (the
// first of equals in the order the plan reads them), or nil. Documents
// hidden as expired do not match. The error is the scan's (a $expr that
// failed on a document). Call holding writeMu or mu.
func (s *collState) firstMatch(q *findQuery, now time.Time) (*docRef, error) {
	p := s.plan(q)
	var best *docRef
	sorting := p.needsSort(q)
	q.err = nil
	s.execute(p, q, now, func(r *docRef) bool {
		if best == nil || sorting && query.CompareForSort(r.get(), best.get(), q.sort) < 0 {
			best = r
		}
		return sorting
	})
	if q.err != nil {
		return nil, fmt.Errorf("collection %q: %w", s.name, q.err)
	}
	return best, nil
}

// encOfID returns the stored encoding of the document with _id id (nil if
// none). Call holding writeMu or mu.
func (s *collState) encOfID(id any) []byte {
	k, err := appendIDKey(nil, id)
	if err != nil {
		return nil
	}
	var rec record
	var ok bool
	if w := s.txw; w != nil {
		rec, ok = w.v.lookupVisible(k)
	} else {
		rec, ok = s.lookup(k)
	}
	if !ok {
		return nil
	}
	return rec.enc
}
