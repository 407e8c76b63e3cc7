package engine

import (
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
)

// A hint (FindOptions.Hint, UpdateOptions.Hint, …) names the index a
// query is answered with, as MongoDB's: by the index's name, or by its key
// pattern. ttldb takes a hint only where it cannot change the answer: an
// index that may not hold every matching document (partial or sparse), or
// a TTL index that keeps only dates, is refused, so that a hint makes a
// query faster or slower but never wrong.

// hintKeys reads a key pattern given as a hint: []IndexKey, or a document
// ({a: 1, b: -1}, a Document or bson.D) whose values are 1 or -1. ok is
// false for a value of another type.
func hintKeys(h any) (keys []IndexKey, ok bool, err error) {
	switch x := h.(type) {
	case []IndexKey:
		return x, true, nil
	case bson.D:
		for _, e := range x {
			k, err := hintKey(e.Key, e.Value)
			if err != nil {
				return nil, true, err
			}
			keys = append(keys, k)
		}
		return keys, true, nil
	case map[string]any:
		if len(x) != 1 {
			return nil, true, fmt.Errorf("a key pattern given as a map must have one field (a map has no order): use []IndexKey or a bson.D")
		}
		for f, v := range x {
			k, err := hintKey(f, v)
			if err != nil {
				return nil, true, err
			}
			keys = append(keys, k)
		}
		return keys, true, nil
	}
	return nil, false, nil
}

func hintKey(field string, v any) (IndexKey, error) {
	switch n, _ := codec.ExprValue(v); n {
	case 1, int32(1), int64(1), 1.0:
		return Asc(field), nil
	case -1, int32(-1), int64(-1), -1.0:
		return Desc(field), nil
	}
	return IndexKey{}, fmt.Errorf("key %q of the hint: want 1 or -1, not %v", field, v)
}

// resolveHint returns the index h names (idIndex for the _id index), or
// an ErrInvalidOptions error. Call holding writeMu or mu.
func (s *collState) resolveHint(h any) (*index, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: collection %q: hint: %s", ErrInvalidOptions, s.name, fmt.Sprintf(format, args...))
	}
	var ix *index
	if name, ok := h.(string); ok {
		if name == idIndexName {
			return idIndex, nil
		}
		for _, x := range s.indexes {
			if x.name == name {
				ix = x
			}
		}
		if ix == nil {
			return nil, bad("the collection has no index named %q", name)
		}
	} else {
		keys, ok, err := hintKeys(h)
		switch {
		case !ok:
			return nil, bad("want an index name or a key pattern, not %T", h)
		case err != nil:
			return nil, bad("%v", err)
		case slices.Equal(keys, idIndex.keys):
			return idIndex, nil
		}
		for _, x := range s.indexes {
			if slices.Equal(x.keys, keys) {
				ix = x
			}
		}
		if ix == nil {
			return nil, bad("the collection has no index with keys %v", keys)
		}
	}
	switch {
	case ix.partial != nil:
		return nil, bad("index %q is partial: it may not hold every matching document", ix.name)
	case ix.sparse:
		return nil, bad("index %q is sparse: it may not hold every matching document", ix.name)
	case ix.tree == nil:
		return nil, bad("index %q is a TTL index that keeps only dates: it cannot answer every query", ix.name)
	}
	return ix, nil
}

// hintedPlan is the plan of a query with a resolved hint: the hinted
// index, bounded by the filter where it can be, else walked whole; nil if
// the index is no longer the collection's (dropped since it was resolved:
// the planner then chooses). Call holding writeMu or mu.
func (s *collState) hintedPlan(q *findQuery) *plan {
	if q.hint == idIndex {
		if ivs, score := boundsFor(q.filterDoc, "_id", idIndex); score >= 2 {
			return &plan{byID: true, intervals: ivs}
		}
		return &plan{}
	}
	if !slices.Contains(s.indexes, q.hint) {
		return nil
	}
	ivs, score := boundsFor(q.filterDoc, q.hint.keys[0].Field, q.hint)
	if score == 0 {
		ivs = []interval{fullInterval}
	}
	p := &plan{ix: q.hint, intervals: ivs}
	if len(ivs) == 1 {
		p.sorted, p.reverse = sortFromIndex(q.hint, q.opts.Sort)
	}
	return p
}

// applyHint resolves q's hint (opts.Hint) into q.hint. Call holding
// writeMu or mu.
func (s *collState) applyHint(q *findQuery) error {
	if q.opts.Hint == nil {
		return nil
	}
	ix, err := s.resolveHint(q.opts.Hint)
	q.hint = ix
	return err
}
