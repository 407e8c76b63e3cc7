package query

import (
	"fmt"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// Key is one field of a sort order: a dotted path and a direction, 1 for
// ascending or -1 for descending. The root package's IndexKey converts to it.
type Key struct {
	Field string
	Order int
}

// CompileSort validates sort keys: each Field a non-empty dotted path without
// empty components or components starting with '$', each Order 1 or -1, and
// no field twice. No keys at all is valid (no sort). Errors wrap
// errs.ErrInvalidOptions and name the field.
func CompileSort(keys []Key) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if _, err := splitFieldPath(k.Field); err != nil {
			return fmt.Errorf("%w: sort field %q: %v", errs.ErrInvalidOptions, k.Field, err)
		}
		if k.Order != 1 && k.Order != -1 {
			return fmt.Errorf("%w: sort field %q: order must be 1 or -1, not %d", errs.ErrInvalidOptions, k.Field, k.Order)
		}
		if seen[k.Field] {
			return fmt.Errorf("%w: sort field %q appears twice", errs.ErrInvalidOptions, k.Field)
		}
		seen[k.Field] = true
	}
	return nil
}

// CompareForSort orders two documents by keys (validated by CompileSort) as
// MongoDB sorts, returning -1, 0 or 1: the first key that differs decides.
// Each document's key for a field is SortKey's value, compared with
// Compare (BSON type order), reversed for Order -1.
func CompareForSort(a, b codec.Document, keys []Key) int {
	for _, k := range keys {
		c := Compare(SortKey(a, k), SortKey(b, k))
		if c != 0 {
			return c * k.Order
		}
	}
	return 0
}

// SortKey is the value a document sorts by on one key, as MongoDB computes
// it: the values PathValues reaches, with arrays among them replaced by
// their elements (one level); the smallest of those ascending, the largest
// descending. A missing field sorts as null. An empty array (no values at
// all) sorts as MinKey: before null ascending, after everything descending,
// as MongoDB's "undefined" key does.
func SortKey(doc codec.Document, k Key) any {
	vals, found := codec.PathValues(doc, k.Field)
	if !found {
		return nil
	}
	var (
		best any
		have bool
	)
	consider := func(v any) {
		if !have || Compare(v, best)*k.Order < 0 {
			best, have = v, true
		}
	}
	for _, v := range vals {
		if elems, ok := codec.ArrayElements(v); ok {
			for _, e := range elems {
				consider(e)
			}
			continue
		}
		consider(v)
	}
	if !have {
		return MinKey
	}
	return best
}
