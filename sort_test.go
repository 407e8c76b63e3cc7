package ttldb

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompileSort(t *testing.T) {
	assert.NoError(t, compileSort(nil))
	assert.NoError(t, compileSort([]IndexKey{Asc("a"), Desc("b.c"), {Field: "d", Order: 1}}))

	tests := []struct {
		name string
		keys []IndexKey
		text string
	}{
		{"empty field", []IndexKey{Asc("")}, "empty"},
		{"empty component", []IndexKey{Asc("a..b")}, `"a..b"`},
		{"leading dot", []IndexKey{Desc(".a")}, `".a"`},
		{"dollar component", []IndexKey{Asc("$natural")}, `"$natural"`},
		{"order zero", []IndexKey{{Field: "a"}}, "order"},
		{"order two", []IndexKey{{Field: "a", Order: 2}}, "order"},
		{"field twice", []IndexKey{Asc("a"), Desc("b"), Desc("a")}, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := compileSort(tt.keys)
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), tt.text)
		})
	}
}

// sortedIDs sorts docs by keys and returns their _id values in order.
func sortedIDs(docs []Document, keys []IndexKey) []any {
	docs = slices.Clone(docs)
	slices.SortStableFunc(docs, func(a, b Document) int { return compareForSort(a, b, keys) })
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
		docs []Document
		keys []IndexKey
		want []any
	}{
		{"ascending numbers across kinds", []Document{{"_id": 1, "n": 3.5}, {"_id": 2, "n": int8(1)}, {"_id": 3, "n": uint64(2)}}, []IndexKey{Asc("n")}, []any{2, 3, 1}},
		{"descending", []Document{{"_id": 1, "n": 1}, {"_id": 2, "n": 3}, {"_id": 3, "n": 2}}, []IndexKey{Desc("n")}, []any{2, 3, 1}},
		{"missing sorts as null", []Document{{"_id": 1, "n": 1}, {"_id": 2}, {"_id": 4, "n": -5}}, []IndexKey{Asc("n")}, []any{2, 4, 1}},
		{"missing last descending", []Document{{"_id": 1}, {"_id": 2, "n": 1}}, []IndexKey{Desc("n")}, []any{2, 1}},
		{"mixed types in BSON order", []Document{{"_id": 1, "v": true}, {"_id": 2, "v": "s"}, {"_id": 3, "v": 9}, {"_id": 4, "v": t0}, {"_id": 5, "v": Document{"a": 1}}, {"_id": 6, "v": nil}}, []IndexKey{Asc("v")}, []any{6, 3, 2, 5, 1, 4}},
		{"array ascending by smallest element", []Document{{"_id": 1, "v": []int{5, 1}}, {"_id": 2, "v": 3}, {"_id": 3, "v": []any{2, 9}}}, []IndexKey{Asc("v")}, []any{1, 3, 2}},
		{"array descending by largest element", []Document{{"_id": 1, "v": []int{5, 1}}, {"_id": 2, "v": 3}, {"_id": 3, "v": []any{2, 9}}}, []IndexKey{Desc("v")}, []any{3, 1, 2}},
		{"array with mixed types", []Document{{"_id": 1, "v": []any{"a", 100}}, {"_id": 2, "v": 50}}, []IndexKey{Asc("v")}, []any{2, 1}},
		{"array with mixed types descending", []Document{{"_id": 1, "v": []any{"a", 100}}, {"_id": 2, "v": "b"}}, []IndexKey{Desc("v")}, []any{2, 1}},
		{"empty array before null ascending", []Document{{"_id": 1, "v": nil}, {"_id": 2, "v": []any{}}, {"_id": 4, "v": 1}}, []IndexKey{Asc("v")}, []any{2, 1, 4}},
		{"empty array before missing ascending", []Document{{"_id": 1}, {"_id": 2, "v": []string{}}}, []IndexKey{Asc("v")}, []any{2, 1}},
		{"empty array last descending", []Document{{"_id": 1, "v": []any{}}, {"_id": 2, "v": nil}, {"_id": 3, "v": 1}}, []IndexKey{Desc("v")}, []any{3, 2, 1}},
		{"nested array compares as array", []Document{{"_id": 1, "v": []any{[]any{1, 2}}}, {"_id": 2, "v": []any{"z"}}}, []IndexKey{Asc("v")}, []any{2, 1}},
		{"dotted path", []Document{{"_id": 1, "a": Document{"b": 2}}, {"_id": 2, "a": Document{"b": 1}}, {"_id": 3, "a": 7}}, []IndexKey{Asc("a.b")}, []any{3, 2, 1}},
		{"dotted through array of documents ascending", []Document{{"_id": 1, "a": []map[string]any{{"b": 4}, {"b": 1}}}, {"_id": 2, "a": []any{Document{"b": 2}}}}, []IndexKey{Asc("a.b")}, []any{1, 2}},
		{"dotted through array of documents descending", []Document{{"_id": 1, "a": []map[string]any{{"b": 4}, {"b": 1}}}, {"_id": 2, "a": []any{Document{"b": 2}, Document{"b": []int{3, 5}}}}}, []IndexKey{Desc("a.b")}, []any{2, 1}},
		{"numeric component", []Document{{"_id": 1, "a": []int{9, 1}}, {"_id": 2, "a": []int{2, 8}}}, []IndexKey{Asc("a.0")}, []any{2, 1}},
		{"multi-key", []Document{{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 0, "b": 5}, {"_id": 3, "a": 1, "b": 3}, {"_id": 4, "a": 0, "b": 2}}, []IndexKey{Asc("a"), Desc("b")}, []any{2, 4, 3, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, compileSort(tt.keys))
			assert.Equal(t, tt.want, sortedIDs(tt.docs, tt.keys))
			// The order must not depend on the input order.
			assert.Equal(t, tt.want, sortedIDs(reversed(tt.docs), tt.keys), "reversed input")
		})
	}
}

func reversed(docs []Document) []Document {
	out := slices.Clone(docs)
	slices.Reverse(out)
	return out
}

func TestCompareForSortIsAntisymmetric(t *testing.T) {
	docs := []Document{{}, {"v": nil}, {"v": []any{}}, {"v": []any{1, "a"}}, {"v": 1}, {"v": "a"}, {"v": []any{nil}}}
	for _, keys := range [][]IndexKey{{Asc("v")}, {Desc("v")}} {
		for _, a := range docs {
			for _, b := range docs {
				assert.Equal(t, compareForSort(a, b, keys), -compareForSort(b, a, keys), "%v %v %v", a, b, keys)
			}
		}
	}
}

func TestCompareForSortEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b Document
		keys []IndexKey
	}{
		{"missing equals null", Document{}, Document{"v": nil}, []IndexKey{Asc("v")}},
		{"missing equals null descending", Document{"v": nil}, Document{}, []IndexKey{Desc("v")}},
		{"numbers across kinds", Document{"v": 1, "w": 2}, Document{"v": 1.0, "w": int64(2)}, []IndexKey{Asc("v"), Desc("w")}},
		{"array equals its smallest element ascending", Document{"v": []int{3, 1}}, Document{"v": 1}, []IndexKey{Asc("v")}},
		{"array equals its largest element descending", Document{"v": []int{3, 1}}, Document{"v": 3}, []IndexKey{Desc("v")}},
		{"no keys", Document{"v": 1}, Document{"v": 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, 0, compareForSort(tt.a, tt.b, tt.keys))
		})
	}
}
