package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
	"github.com/ttldb/ttldb/internal/query"
)

// Distinct returns the distinct values of field (a dotted path) among the
// documents matching filter (nil or empty: all), as MongoDB's distinct
// command does: a document whose field holds an array contributes each of
// its elements (an element that is itself an array stays whole); a path
// through an array of documents reaches the field in each; a document
// without the field contributes nothing, one whose field is null
// contributes null. Values are distinct by BSON equality, so 1, int64(1)
// and 1.0 are one value (the first met is returned), and the result is in
// BSON order (numbers before strings before documents …), as the server
// returns it (it gathers values in a set ordered by BSON comparison).
//
// It examines every matching document under one hold of the read lock,
// decoding only the field's top-level part of each; ctx stops it (looked
// at every 256 documents examined) with an error matching ctx.Err().
// Errors: ErrInvalidOptions (an invalid path), ErrInvalidFilter,
// ErrClosed, ctx's error.
func (c *Collection) Distinct(ctx context.Context, field string, filter Document) ([]any, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx); err != nil {
		return nil, ctxError(c.name, err)
	}
	if err := query.CompileSort([]query.Key{{Field: field, Order: 1}}); err != nil {
		return nil, fmt.Errorf("collection %q: distinct: %w", c.name, err)
	}
	var set distinctSet
	if ts := c.timeSeries(); ts != nil {
		docs, _, err := c.tsFind(ctx, ts, filter, nil) // time-series: tsread.go
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			vals, _ := codec.PathValues(d, field)
			set.add(vals)
		}
		return set.sorted(), nil
	}
	q, err := c.compileQuery(filter, nil)
	if err != nil {
		return nil, err
	}
	q.ctx = ctx
	s, err := c.read()
	if err != nil || s == nil {
		return []any{}, err
	}
	s.mu.RLock()
	s.execute(s.plan(q), q, c.db.clock.Now(), func(r *docRef) bool {
		var vals []any
		if r.doc != nil {
			vals, _ = codec.PathValues(r.doc, field)
		} else {
			vals, _ = codec.EncodedPathValues(r.rec.enc, field)
		}
		set.add(vals)
		return true
	})
	s.mu.RUnlock()
	if q.err != nil {
		return nil, ctxError(c.name, q.err)
	}
	return set.sorted(), nil
}

// distinctSet gathers values by their order-preserving key, which two
// values share exactly when they compare equal (internal/keys).
type distinctSet struct {
	byKey map[string]int // key -> index in vals
	keys  []string
	vals  []any
}

func (d *distinctSet) add(vals []any) {
	for _, v := range vals {
		if elems, ok := codec.ArrayElements(v); ok {
			for _, e := range elems {
				d.addOne(e)
			}
			continue
		}
		d.addOne(v)
	}
}

func (d *distinctSet) addOne(v any) {
	k, err := keys.Encode(v)
	if err != nil {
		return // a stored value always has a key; nothing else reaches here
	}
	if d.byKey == nil {
		d.byKey = map[string]int{}
	}
	if _, dup := d.byKey[k]; dup {
		return
	}
	d.byKey[k] = len(d.vals)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
}

// sorted returns the values in BSON order (their keys' byte order).
func (d *distinctSet) sorted() []any {
	idx := make([]int, len(d.vals))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(d.keys[a], d.keys[b]) })
	out := make([]any, len(idx))
	for i, j := range idx {
		out[i] = d.vals[j]
	}
	return out
}

// EstimatedDocumentCount returns how many documents the collection holds,
// from a count kept up to date by every write: O(1), whatever the size,
// holding the read lock only to read it. It counts every stored document,
// including expired ones that HideExpired hides from reads but the
// monitor has not deleted yet (as MongoDB's count from metadata counts
// what is stored); CountDocuments(ctx, nil) counts what reads see. On a
// time-series collection it counts measurements. A missing collection
// holds 0.
func (c *Collection) EstimatedDocumentCount() (int, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	if ts := c.timeSeries(); ts != nil {
		ts.mu.RLock()
		defer ts.mu.RUnlock()
		if ts.dropped {
			return 0, nil
		}
		return ts.count, nil
	}
	s, err := c.read()
	if err != nil || s == nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.natural.Len(), nil
}
