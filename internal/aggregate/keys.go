package aggregate

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// valueKey is a string that two values share exactly when query.Equal
// holds between them (numbers of any type and value 1, 1.0 and
// NumberDecimal("1") alike): $group's and $addToSet's hashing.
func valueKey(v any) string {
	return string(appendValueKey(nil, v))
}

func appendValueKey(b []byte, v any) []byte {
	if query.IsMissing(v) {
		v = nil
	}
	b = append(b, byte(query.RankOf(v)))
	if n, ok := query.ToNumber(v); ok {
		return appendNumberKey(b, n)
	}
	switch x := v.(type) {
	case nil:
		return b
	case string:
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...)
	case bool:
		if x {
			return append(b, 1)
		}
		return append(b, 0)
	case time.Time:
		b = binary.AppendVarint(b, x.Unix())
		return binary.AppendVarint(b, int64(x.Nanosecond()))
	case []byte: // binary data of subtype 0, as bson.Binary's
		b = append(b, 0)
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...)
	case bson.Binary:
		b = append(b, x.Subtype)
		b = binary.AppendUvarint(b, uint64(len(x.Data)))
		return append(b, x.Data...)
	case map[string]any:
		keys := query.SortedKeys(x)
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			b = appendValueKey(b, x[k])
		}
		return b
	}
	if elems, ok := codec.ArrayElements(v); ok {
		b = binary.AppendUvarint(b, uint64(len(elems)))
		for _, e := range elems {
			b = appendValueKey(b, e)
		}
		return b
	}
	s := fmt.Sprintf("%T:%v", v, v)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendNumberKey writes a number in one form per value: whole numbers
// as integers, other doubles by their shortest text, other decimals as
// fractions.
func appendNumberKey(b []byte, n query.Number) []byte {
	switch n.Kind {
	case 'i':
		return append(append(b, 'i'), strconv.FormatInt(n.I, 10)...)
	case 'u':
		return append(append(b, 'i'), strconv.FormatUint(n.U, 10)...)
	case 'd':
		return append(append(b, 'r'), n.R.String()...)
	}
	switch {
	case math.IsNaN(n.F):
		return append(b, 'n')
	case math.IsInf(n.F, 0):
		return append(b, strconv.FormatFloat(n.F, 'g', -1, 64)...)
	case n.F == math.Trunc(n.F):
		i, _ := new(big.Float).SetFloat64(n.F).Int(nil)
		return append(append(b, 'i'), i.String()...)
	}
	return append(append(b, 'f'), strconv.FormatFloat(n.F, 'g', -1, 64)...)
}

// sortKeys reads a sort specification ({a: 1, b: -1}; a bson.D keeps
// its order, a map of several fields has none and is refused): $sort's
// and sortBy's.
func sortKeys(spec any) ([]query.Key, error) {
	fields, ok := OrderedFields(spec)
	if !ok {
		return nil, fmt.Errorf("the sort specification must be a document, not %T", spec)
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("the sort specification must have at least one field")
	}
	if len(fields) > 1 {
		switch spec.(type) {
		case bson.D, bson.Raw:
		default:
			return nil, fmt.Errorf("a sort specification of several fields must be ordered (a bson.D), not %T: a map's order is lost", spec)
		}
	}
	keys := make([]query.Key, len(fields))
	for i, f := range fields {
		if m, isDoc := codec.AsDocument(f.Value); isDoc {
			if _, meta := m["$meta"]; meta {
				return nil, fmt.Errorf("field %q: $meta sort is not supported", f.Key)
			}
		}
		if _, isDoc := OrderedFields(f.Value); isDoc {
			return nil, fmt.Errorf("field %q: the sort order must be 1 or -1, not a document (a $meta sort is not supported)", f.Key)
		}
		o, err := wholeNumber(fmt.Sprintf("field %q: the sort order", f.Key), f.Value, -1, 1)
		if err != nil || o == 0 {
			return nil, fmt.Errorf("field %q: the sort order must be 1 or -1, not %v", f.Key, f.Value)
		}
		keys[i] = query.Key{Field: f.Key, Order: int(o)}
	}
	if err := query.CompileSort(keys); err != nil {
		return nil, err
	}
	return keys, nil
}

// docSortKeys is the values doc sorts by on keys (query.SortKey's).
func docSortKeys(doc Document, keys []query.Key) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = query.SortKey(doc, k)
	}
	return out
}

// compareKeys orders two documents' sort key values (docSortKeys).
func compareKeys(a, b []any, keys []query.Key) int {
	for i, k := range keys {
		if c := query.Compare(a[i], b[i]); c != 0 {
			return c * k.Order
		}
	}
	return 0
}
