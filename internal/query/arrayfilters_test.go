package query

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/internal/errs"
)

// applyAF compiles u with the array filters and applies it to doc.
func applyAF(t *testing.T, doc D, u D, filters ...any) D {
	t.Helper()
	upd, err := CompileUpdateWithArrayFilters(u, filters)
	require.NoError(t, err)
	out, _, err := upd.Apply(doc, time.Unix(0, 0))
	require.NoError(t, err)
	return out
}

// TestArrayFiltersMongoExamples runs the examples of MongoDB's manual for
// $[<identifier>] and $[].
func TestArrayFiltersMongoExamples(t *testing.T) {
	// Update all array elements that match arrayFilters.
	assert.Equal(t, D{"_id": 2, "grades": []any{98, 100, 100}},
		applyAF(t, D{"_id": 2, "grades": []any{98, 100, 102}}, D{"$set": D{"grades.$[element]": 100}}, D{"element": D{"$gte": 100}}))
	// Update specific elements of an array of documents.
	got := applyAF(t, D{"grades": []any{D{"grade": 80, "mean": 75}, D{"grade": 85, "mean": 90}, D{"grade": 85, "mean": 85}}},
		D{"$set": D{"grades.$[elem].mean": 100}}, D{"elem.grade": D{"$gte": 85}})
	assert.Equal(t, D{"grades": []any{D{"grade": 80, "mean": 75}, D{"grade": 85, "mean": 100}, D{"grade": 85, "mean": 100}}}, got)
	// Several conditions on one identifier.
	got = applyAF(t, D{"grades": []any{D{"grade": 80, "std": 6}, D{"grade": 90, "std": 4}, D{"grade": 95, "std": 7}}},
		D{"$inc": D{"grades.$[elem].std": -1}}, D{"elem.grade": D{"$gte": 80}, "elem.std": D{"$gt": 5}})
	assert.Equal(t, D{"grades": []any{D{"grade": 80, "std": 5}, D{"grade": 90, "std": 4}, D{"grade": 95, "std": 6}}}, got)
	// $[] with $inc: every element.
	assert.Equal(t, D{"grades": []any{95, 102, 100}}, applyAF(t, D{"grades": []any{85, 92, 90}}, D{"$inc": D{"grades.$[]": 10}}))
	// Nested: $[] and $[identifier] together.
	got = applyAF(t, D{"grades": []any{D{"type": "quiz", "questions": []any{10, 8, 5}}, D{"type": "hw", "questions": []any{5, 4, 5}}}},
		D{"$inc": D{"grades.$[].questions.$[score]": 2}}, D{"score": D{"$gte": 8}})
	assert.Equal(t, D{"grades": []any{D{"type": "quiz", "questions": []any{12, 10, 5}}, D{"type": "hw", "questions": []any{5, 4, 5}}}}, got)
	// Two identifiers, nested.
	got = applyAF(t, D{"a": []any{D{"k": 1, "b": []any{1, 2}}, D{"k": 2, "b": []any{1, 2}}}},
		D{"$set": D{"a.$[x].b.$[y]": 0}}, D{"x.k": 2}, D{"y": D{"$gt": 1}})
	assert.Equal(t, D{"a": []any{D{"k": 1, "b": []any{1, 2}}, D{"k": 2, "b": []any{1, 0}}}}, got)
	// $pull and $push through $[].
	got = applyAF(t, D{"r": []any{D{"ans": []any{1, 2}}, D{"ans": []any{2, 3}}, D{"other": 1}}}, D{"$pull": D{"r.$[].ans": 2}})
	assert.Equal(t, D{"r": []any{D{"ans": []any{1}}, D{"ans": []any{3}}, D{"other": 1}}}, got, "an element without the field is left alone")
	got = applyAF(t, D{"r": []any{D{"k": 1}, D{"k": 2}}}, D{"$push": D{"r.$[e].tags": "t"}}, D{"e.k": 2})
	assert.Equal(t, D{"r": []any{D{"k": 1}, D{"k": 2, "tags": []any{"t"}}}}, got)
	// $unset of elements sets them to null, as MongoDB does.
	assert.Equal(t, D{"a": []any{1, nil, nil}}, applyAF(t, D{"a": []any{1, 5, 6}}, D{"$unset": D{"a.$[big]": ""}}, D{"big": D{"$gt": 4}}))
	// No element matches: nothing changes.
	upd, err := CompileUpdateWithArrayFilters(D{"$set": D{"a.$[x]": 0}}, []any{D{"x": 99}})
	require.NoError(t, err)
	_, changed, err := upd.Apply(D{"a": []any{1, 2}}, time.Unix(0, 0))
	require.NoError(t, err)
	assert.False(t, changed)
}

// TestArrayFiltersErrors: MongoDB's refusals, as ErrInvalidUpdate, at
// compile time or (for a document's shape) when applied.
func TestArrayFiltersErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		u       D
		filters []any
		want    string
	}{
		"no filter for identifier": {D{"$set": D{"a.$[x]": 1}}, nil, `no array filter found for the identifier "x"`},
		"unused filter":            {D{"$set": D{"a.$[x]": 1}}, []any{D{"x": 1}, D{"y": 1}}, `"y" was not used`},
		"duplicate identifier":     {D{"$set": D{"a.$[x]": 1}}, []any{D{"x": 1}, D{"x": 2}}, "multiple array filters"},
		"two identifiers":          {D{"$set": D{"a.$[x]": 1}}, []any{D{"x": 1, "y": 2}}, "single identifier"},
		"bad identifier in path":   {D{"$set": D{"a.$[X]": 1}}, []any{D{"X": 1}}, "must begin with a lowercase letter"},
		"bad identifier in filter": {D{"$set": D{"a.$[]": 1}}, []any{D{"1x": 1}}, "must begin with a lowercase letter"},
		"empty filter":             {D{"$set": D{"a.$[]": 1}}, []any{D{}}, "needs a field"},
		"not a document":           {D{"$set": D{"a.$[]": 1}}, []any{5}, "must be a document"},
		"plain positional":         {D{"$set": D{"a.$.b": 1}}, nil, "positional operator $ is not supported"},
		"rename":                   {D{"$rename": D{"a.$[]": "b"}}, nil, "may not start with '$'"},
		"bad filter":               {D{"$set": D{"a.$[x]": 1}}, []any{D{"x": D{"$nope": 1}}}, "unknown operator"},
	} {
		_, err := CompileUpdateWithArrayFilters(tc.u, tc.filters)
		require.ErrorIs(t, err, errs.ErrInvalidUpdate, name)
		assert.ErrorContains(t, err, tc.want, name)
	}
	// The document's shape: a missing array, a scalar.
	upd, err := CompileUpdateWithArrayFilters(D{"$set": D{"a.$[]": 1}}, nil)
	require.NoError(t, err)
	_, _, err = upd.Apply(D{"b": 1}, time.Unix(0, 0))
	require.ErrorContains(t, err, `the path "a" must exist in the document in order to apply array updates`)
	_, _, err = upd.Apply(D{"a": 5}, time.Unix(0, 0))
	require.ErrorIs(t, err, errs.ErrInvalidUpdate)
	require.ErrorContains(t, err, "needs an array")
	// CompileUpdate alone refuses an identifier: it has no filters.
	_, err = CompileUpdate(D{"$set": D{"a.$[x]": 1}})
	require.ErrorIs(t, err, errs.ErrInvalidUpdate)
}
