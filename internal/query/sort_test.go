package query

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

func TestCompileSort(t *testing.T) {
	assert.NoError(t, CompileSort(nil))
	assert.NoError(t, CompileSort([]Key{Asc("a"), Desc("b.c"), {Field: "d", Order: 1}}))

	tests := []struct {
		name string
		keys []Key
		text string
	}{
		{"empty field", []Key{Asc("")}, "empty"},
		{"empty component", []Key{Asc("a..b")}, `"a..b"`},
		{"leading dot", []Key{Desc(".a")}, `".a"`},
		{"dollar component", []Key{Asc("$natural")}, `"$natural"`},
		{"order zero", []Key{{Field: "a"}}, "order"},
		{"order two", []Key{{Field: "a", Order: 2}}, "order"},
		{"field twice", []Key{Asc("a"), Desc("b"), Desc("a")}, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CompileSort(tt.keys)
			require.ErrorIs(t, err, errs.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tt.text)
		})
	}
}

// sortedIDs sorts docs by keys and returns their _id values in order.
func sortedIDs(docs []codec.Document, keys []Key) []any {
	docs = slices.Clone(docs)
	slices.SortStableFunc(docs, func(a, b codec.Document) int { return CompareForSort(a, b, keys) })
	ids := make([]any, len(docs))
	for i, d := range docs {
		ids[i] = d["_id"]
	}
	return ids
}

func TestCompareForSort(t *testing.T) {
	t0 := time.Unix(0, 0)
	tests := []struct {
		name string
		docs []codec.Document
		keys []Key
		want []any
	}{
		{"ascending numbers across kinds", []codec.Document{{"_id": 1, "n": 3.5}, {"_id": 2, "n": int8(1)}, {"_id": 3, "n": uint64(2)}}, []Key{Asc("n")}, []any{2, 3, 1}},
		{"descending", []codec.Document{{"_id": 1, "n": 1}, {"_id": 2, "n": 3}, {"_id": 3, "n": 2}}, []Key{Desc("n")}, []any{2, 3, 1}},
		{"missing sorts as null", []codec.Document{{"_id": 1, "n": 1}, {"_id": 2}, {"_id": 4, "n": -5}}, []Key{Asc("n")}, []any{2, 4, 1}},
		{"missing last descending", []codec.Document{{"_id": 1}, {"_id": 2, "n": 1}}, []Key{Desc("n")}, []any{2, 1}},
		{"mixed types in BSON order", []codec.Document{{"_id": 1, "v": true}, {"_id": 2, "v": "s"}, {"_id": 3, "v": 9}, {"_id": 4, "v": t0}, {"_id": 5, "v": codec.Document{"a": 1}}, {"_id": 6, "v": nil}}, []Key{Asc("v")}, []any{6, 3, 2, 5, 1, 4}},
		{"array ascending by smallest element", []codec.Document{{"_id": 1, "v": []int{5, 1}}, {"_id": 2, "v": 3}, {"_id": 3, "v": []any{2, 9}}}, []Key{Asc("v")}, []any{1, 3, 2}},
		{"array descending by largest element", []codec.Document{{"_id": 1, "v": []int{5, 1}}, {"_id": 2, "v": 3}, {"_id": 3, "v": []any{2, 9}}}, []Key{Desc("v")}, []any{3, 1, 2}},
		{"array with mixed types", []codec.Document{{"_id": 1, "v": []any{"a", 100}}, {"_id": 2, "v": 50}}, []Key{Asc("v")}, []any{2, 1}},
		{"array with mixed types descending", []codec.Document{{"_id": 1, "v": []any{"a", 100}}, {"_id": 2, "v": "b"}}, []Key{Desc("v")}, []any{2, 1}},
		{"empty array before null ascending", []codec.Document{{"_id": 1, "v": nil}, {"_id": 2, "v": []any{}}, {"_id": 4, "v": 1}}, []Key{Asc("v")}, []any{2, 1, 4}},
		{"empty array before missing ascending", []codec.Document{{"_id": 1}, {"_id": 2, "v": []string{}}}, []Key{Asc("v")}, []any{2, 1}},
		{"empty array last descending", []codec.Document{{"_id": 1, "v": []any{}}, {"_id": 2, "v": nil}, {"_id": 3, "v": 1}}, []Key{Desc("v")}, []any{3, 2, 1}},
		{"nested array compares as array", []codec.Document{{"_id": 1, "v": []any{[]any{1, 2}}}, {"_id": 2, "v": []any{"z"}}}, []Key{Asc("v")}, []any{2, 1}},
		{"dotted path", []codec.Document{{"_id": 1, "a": codec.Document{"b": 2}}, {"_id": 2, "a": codec.Document{"b": 1}}, {"_id": 3, "a": 7}}, []Key{Asc("a.b")}, []any{3, 2, 1}},
		{"dotted through array of documents ascending", []codec.Document{{"_id": 1, "a": []map[string]any{{"b": 4}, {"b": 1}}}, {"_id": 2, "a": []any{codec.Document{"b": 2}}}}, []Key{Asc("a.b")}, []any{1, 2}},
		{"dotted through array of documents descending", []codec.Document{{"_id": 1, "a": []map[string]any{{"b": 4}, {"b": 1}}}, {"_id": 2, "a": []any{codec.Document{"b": 2}, codec.Document{"b": []int{3, 5}}}}}, []Key{Desc("a.b")}, []any{2, 1}},
		{"numeric component", []codec.Document{{"_id": 1, "a": []int{9, 1}}, {"_id": 2, "a": []int{2, 8}}}, []Key{Asc("a.0")}, []any{2, 1}},
		{"multi-key", []codec.Document{{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 0, "b": 5}, {"_id": 3, "a": 1, "b": 3}, {"_id": 4, "a": 0, "b": 2}}, []Key{Asc("a"), Desc("b")}, []any{2, 4, 3, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, CompileSort(tt.keys))
			assert.Equal(t, tt.want, sortedIDs(tt.docs, tt.keys))
			// The order must not depend on the input order.
			assert.Equal(t, tt.want, sortedIDs(reversed(tt.docs), tt.keys), "reversed input")
		})
	}
}

func reversed(docs []codec.Document) []codec.Document {
	out := slices.Clone(docs)
	slices.Reverse(out)
	return out
}

func TestCompareForSortIsAntisymmetric(t *testing.T) {
	docs := []codec.Document{{}, {"v": nil}, {"v": []any{}}, {"v": []any{1, "a"}}, {"v": 1}, {"v": "a"}, {"v": []any{nil}}}
	for _, keys := range [][]Key{{Asc("v")}, {Desc("v")}} {
		for _, a := range docs {
			for _, b := range docs {
				assert.Equal(t, CompareForSort(a, b, keys), -CompareForSort(b, a, keys), "%v %v %v", a, b, keys)
			}
		}
	}
}

func TestCompareForSortEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b codec.Document
		keys []Key
	}{
		{"missing equals null", codec.Document{}, codec.Document{"v": nil}, []Key{Asc("v")}},
		{"missing equals null descending", codec.Document{"v": nil}, codec.Document{}, []Key{Desc("v")}},
		{"numbers across kinds", codec.Document{"v": 1, "w": 2}, codec.Document{"v": 1.0, "w": int64(2)}, []Key{Asc("v"), Desc("w")}},
		{"array equals its smallest element ascending", codec.Document{"v": []int{3, 1}}, codec.Document{"v": 1}, []Key{Asc("v")}},
		{"array equals its largest element descending", codec.Document{"v": []int{3, 1}}, codec.Document{"v": 3}, []Key{Desc("v")}},
		{"no keys", codec.Document{"v": 1}, codec.Document{"v": 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, 0, CompareForSort(tt.a, tt.b, tt.keys))
		})
	}
}

func Asc(field string) Key  { return Key{Field: field, Order: 1} }
func Desc(field string) Key { return Key{Field: field, Order: -1} }
