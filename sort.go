package ttldb

import "fmt"

// compileSort validates sort keys: each Field a non-empty dotted path without
// empty components or components starting with '$', each Order 1 or -1, and
// no field twice. No keys at all is valid (no sort). Errors wrap
// ErrInvalidOptions and name the field.
func compileSort(keys []IndexKey) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if _, err := splitFieldPath(k.Field); err != nil {
			return fmt.Errorf("%w: sort field %q: %v", ErrInvalidOptions, k.Field, err)
		}
		if k.Order != 1 && k.Order != -1 {
			return fmt.Errorf("%w: sort field %q: order must be 1 or -1, not %d", ErrInvalidOptions, k.Field, k.Order)
		}
		if seen[k.Field] {
			return fmt.Errorf("%w: sort field %q appears twice", ErrInvalidOptions, k.Field)
		}
		seen[k.Field] = true
	}
	return nil
}

// compareForSort orders two documents by keys (validated by compileSort) as
// MongoDB sorts, returning -1, 0 or 1: the first key that differs decides.
// Each document's key for a field is sortKey's value, compared with
// compareValues (BSON type order), reversed for Order -1.
func compareForSort(a, b Document, keys []IndexKey) int {
	for _, k := range keys {
		c := compareValues(sortKey(a, k), sortKey(b, k))
		if c != 0 {
			return c * k.Order
		}
	}
	return 0
}

// sortKey is the value a document sorts by on one key, as MongoDB computes
// it: the values pathValues reaches, with arrays among them replaced by
// their elements (one level); the smallest of those ascending, the largest
// descending. A missing field sorts as null. An empty array (no values at
// all) sorts as minKey: before null ascending, after everything descending,
// as MongoDB's "undefined" key does.
func sortKey(doc Document, k IndexKey) any {
	vals, found := pathValues(doc, k.Field)
	if !found {
		return nil
	}
	var (
		best any
		have bool
	)
	consider := func(v any) {
		if !have || compareValues(v, best)*k.Order < 0 {
			best, have = v, true
		}
	}
	for _, v := range vals {
		if elems, ok := arrayElements(v); ok {
			for _, e := range elems {
				consider(e)
			}
			continue
		}
		consider(v)
	}
	if !have {
		return minKey
	}
	return best
}
