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

// Distinct implements ttldb.Collection.Distinct, whose documentation is the contract.
func (c *Collection) Distinct(ctx context.Context, field string, filterArgument any) ([]any, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	filter, err := filterArg(filterArgument)
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", c.name, err)
	}
	if err := checkCtx(ctx); err != nil {
		return nil, ctxError(c.name, err)
	}
	if err := query.CompileSort([]query.Key{{Field: field, Order: 1}}); err != nil {
		return nil, fmt.Errorf("collection %q: distinct: %w", c.name, err)
	}
	var set distinctSet
	if ts := c.timeSeries(); ts != nil {
		if err := c.refuseIn(ctx, "a time-series collection"); err != nil {
			return nil, err
		}
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
	collect := func(r *docRef) bool {
		var vals []any
		if r.doc != nil {
			vals, _ = codec.PathValues(r.doc, field)
		} else {
			vals, _ = codec.EncodedPathValues(r.rec.enc, field)
		}
		set.add(vals)
		return true
	}
	if inTxn, err := c.txnExecute(ctx, q, collect); inTxn {
		if err != nil {
			return nil, err
		}
		return set.sorted(), nil
	}
	s, err := c.read()
	if err != nil || s == nil {
		return []any{}, err
	}
	s.rlock()
	s.execute(s.plan(q), q, c.db.clock.Now(), collect)
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

// EstimatedDocumentCount implements ttldb.Collection.EstimatedDocumentCount, whose documentation is the contract.
func (c *Collection) EstimatedDocumentCount(ctx context.Context) (int64, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	if err := c.started(ctx); err != nil {
		return 0, err
	}
	if err := c.refuseIn(ctx, "EstimatedDocumentCount (MongoDB's count command) cannot run in a transaction: use CountDocuments"); err != nil {
		return 0, err
	}
	if ts := c.timeSeries(); ts != nil {
		ts.mu.RLock()
		defer ts.mu.RUnlock()
		if ts.dropped {
			return 0, nil
		}
		return int64(ts.count), nil
	}
	s, err := c.read()
	if err != nil || s == nil {
		return 0, err
	}
	s.rlock()
	defer s.mu.RUnlock()
	return int64(s.natural.Len()), nil
}
