package aggregate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// Field is one field of a document whose fields' order matters (a stage
// document, a $sort specification).
type Field struct {
	Key   string
	Value any
}

// OrderedFields returns the fields of a document in their order: a
// bson.D's as given; a bson.Raw's as encoded; a map's (Document, bson.M)
// in key order, which is only meaningful for one field — callers that
// need an order refuse a map of several fields (as the driver refuses a
// multi-key map for a sort).
func OrderedFields(v any) ([]Field, bool) {
	switch x := v.(type) {
	case bson.D:
		out := make([]Field, len(x))
		for i, e := range x {
			out[i] = Field{e.Key, e.Value}
		}
		return out, true
	case bson.Raw:
		var d bson.D
		if err := bson.Unmarshal(x, &d); err != nil {
			return nil, false
		}
		return OrderedFields(d)
	case bson.M:
		return OrderedFields(map[string]any(x))
	}
	m, ok := codec.AsDocument(v)
	if !ok {
		return nil, false
	}
	out := make([]Field, 0, len(m))
	for _, k := range query.SortedKeys(m) {
		out = append(out, Field{k, m[k]})
	}
	return out, true
}
