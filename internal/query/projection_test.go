package query

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

func projectionDocument() codec.Document {
	return codec.Document{
		"_id":  1,
		"a":    "x",
		"b":    codec.Document{"c": 1, "d": 2, "e": codec.Document{"f": 3, "g": 4}},
		"arr":  []map[string]any{{"c": 1, "d": 2}, {"d": 3}},
		"mix":  []any{codec.Document{"c": 1, "d": 2}, 5, []any{codec.Document{"c": 6, "d": 7}, "s"}},
		"tags": []string{"t1", "t2"},
		"s":    "scalar",
	}
}

func TestProjectionApply(t *testing.T) {
	tests := []struct {
		name string
		proj map[string]any
		want codec.Document
	}{
		{"include one field keeps _id", map[string]any{"a": 1}, codec.Document{"_id": 1, "a": "x"}},
		{"include with true", map[string]any{"a": true, "s": true}, codec.Document{"_id": 1, "a": "x", "s": "scalar"}},
		{"include with other number kinds", map[string]any{"a": int8(1), "s": 1.0, "tags": uint(1)}, codec.Document{"_id": 1, "a": "x", "s": "scalar", "tags": []string{"t1", "t2"}}},
		{"any non-zero number includes", map[string]any{"a": -1, "s": 2.5}, codec.Document{"_id": 1, "a": "x", "s": "scalar"}},
		{"include excluding _id", map[string]any{"a": 1, "_id": 0}, codec.Document{"a": "x"}},
		{"include with _id false", map[string]any{"a": 1, "_id": false}, codec.Document{"a": "x"}},
		{"include _id explicitly", map[string]any{"a": 1, "_id": 1}, codec.Document{"_id": 1, "a": "x"}},
		{"only _id", map[string]any{"_id": 1}, codec.Document{"_id": 1}},
		{"include missing field", map[string]any{"zz": 1}, codec.Document{"_id": 1}},
		{"include dotted", map[string]any{"b.c": 1, "b.e.g": 1}, codec.Document{"_id": 1, "b": codec.Document{"c": 1, "e": codec.Document{"g": 4}}}},
		{"include dotted missing leaf leaves empty document", map[string]any{"b.zz": 1}, codec.Document{"_id": 1, "b": codec.Document{}}},
		{"include dotted through a scalar leaves nothing", map[string]any{"s.c": 1}, codec.Document{"_id": 1}},
		{"include dotted through array of documents", map[string]any{"arr.c": 1}, codec.Document{"_id": 1, "arr": []any{codec.Document{"c": 1}, codec.Document{}}}},
		{"include dotted through mixed array", map[string]any{"mix.c": 1}, codec.Document{"_id": 1, "mix": []any{codec.Document{"c": 1}, []any{codec.Document{"c": 6}}}}},
		{"include dotted through scalar array", map[string]any{"tags.x": 1}, codec.Document{"_id": 1, "tags": []any{}}},
		{"include inside _id", map[string]any{"_id.k": 1, "a": 1}, codec.Document{"a": "x"}},
		{"exclude one field", map[string]any{"a": 0}, codec.Document{"_id": 1, "b": codec.Document{"c": 1, "d": 2, "e": codec.Document{"f": 3, "g": 4}}, "arr": []map[string]any{{"c": 1, "d": 2}, {"d": 3}}, "mix": []any{codec.Document{"c": 1, "d": 2}, 5, []any{codec.Document{"c": 6, "d": 7}, "s"}}, "tags": []string{"t1", "t2"}, "s": "scalar"}},
		{"exclude several and _id", map[string]any{"_id": 0, "b": false, "arr": 0.0, "mix": int64(0), "tags": 0}, codec.Document{"a": "x", "s": "scalar"}},
		{"only _id excluded", map[string]any{"_id": 0, "b": 0, "arr": 0, "mix": 0, "tags": 0}, codec.Document{"a": "x", "s": "scalar"}},
		{"exclude with _id included", map[string]any{"_id": 1, "a": 0, "b": 0, "arr": 0, "mix": 0, "tags": 0}, codec.Document{"_id": 1, "s": "scalar"}},
		{"exclude dotted", map[string]any{"b.c": 0, "b.e.f": 0, "a": 0, "arr": 0, "mix": 0, "tags": 0, "s": 0}, codec.Document{"_id": 1, "b": codec.Document{"d": 2, "e": codec.Document{"g": 4}}}},
		{"exclude dotted through arrays", map[string]any{"arr.c": 0, "mix.d": 0, "a": 0, "b": 0, "tags": 0, "s": 0, "_id": 0}, codec.Document{"arr": []any{codec.Document{"d": 2}, codec.Document{"d": 3}}, "mix": []any{codec.Document{"c": 1}, 5, []any{codec.Document{"c": 6}, "s"}}}},
		{"exclude dotted through a scalar keeps it", map[string]any{"s.c": 0, "a": 0, "b": 0, "arr": 0, "mix": 0, "tags": 0, "_id": 0}, codec.Document{"s": "scalar"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := CompileProjection(tt.proj)
			require.NoError(t, err)
			doc := projectionDocument()
			got := p.Apply(doc)
			assert.Equal(t, tt.want, got)
			vandalize(got)
			assert.Equal(t, projectionDocument(), doc, "apply modified its input or shares values with it")
		})
	}
}

func TestProjectionOnlyIDExcluded(t *testing.T) {
	p, err := CompileProjection(map[string]any{"_id": 0})
	require.NoError(t, err)
	got := p.Apply(codec.Document{"_id": 1, "a": 2, "b": codec.Document{"c": 3}})
	assert.Equal(t, codec.Document{"a": 2, "b": codec.Document{"c": 3}}, got)
}

func TestProjectionInsideID(t *testing.T) {
	p, err := CompileProjection(map[string]any{"_id.k": 1})
	require.NoError(t, err)
	assert.Equal(t, codec.Document{"_id": codec.Document{"k": 1}}, p.Apply(codec.Document{"_id": codec.Document{"k": 1, "j": 2}, "a": 1}))
}

func TestProjectionNilIsWholeDocument(t *testing.T) {
	for _, spec := range []map[string]any{nil, {}} {
		p, err := CompileProjection(spec)
		require.NoError(t, err)
		assert.Nil(t, p)
		doc := projectionDocument()
		got := p.Apply(doc)
		assert.Equal(t, projectionDocument(), got)
		vandalize(got)
		assert.Equal(t, projectionDocument(), doc, "nil projection shares values with its input")
	}
}

func TestCompileProjectionErrors(t *testing.T) {
	tests := []struct {
		name string
		proj map[string]any
		text string
	}{
		{"mix inclusion and exclusion", map[string]any{"a": 1, "b": 0}, "mix"},
		{"mix with booleans", map[string]any{"a": true, "b.c": false}, "mix"},
		{"string value", map[string]any{"a": "1"}, `"a"`},
		{"null value", map[string]any{"a": nil}, `"a"`},
		{"operator value", map[string]any{"a": map[string]any{"$slice": 1}}, `"a"`},
		{"NaN", map[string]any{"a": math.NaN()}, `"a"`},
		{"empty path", map[string]any{"": 1}, "empty"},
		{"empty component", map[string]any{"a..b": 1}, `"a..b"`},
		{"positional", map[string]any{"a.$": 1}, `"a.$"`},
		{"path collision", map[string]any{"a": 1, "a.b": 1}, `"a.b"`},
		{"_id and inside _id", map[string]any{"_id": 1, "_id.k": 1}, `"_id.k"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := CompileProjection(tt.proj)
			require.ErrorIs(t, err, errs.ErrInvalidOptions)
			assert.Nil(t, p)
			assert.Contains(t, err.Error(), tt.text)
		})
	}
}
