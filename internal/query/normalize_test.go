package query

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type tier string

// TestFilterDocIsInStoredForm checks that a compiled filter's Doc, which
// the planner reads, holds every value as matching sees it: pointers to
// times as times (nil for a nil one), dates in UTC, named types as their
// kind, json.Number as its number, through every operator and logical
// nesting, and shares no map with the caller's filter.
func TestFilterDocIsInStoredForm(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	var nilTime *time.Time
	in := map[string]any{
		"d":   &t0,
		"n":   nilTime,
		"dur": map[string]any{"$gte": time.Second, "$lt": json.Number("5e9")},
		"t":   map[string]any{"$in": []tier{"a", "b"}, "$exists": json.Number("1")},
		"$or": []any{map[string]any{"x": map[string]any{"$not": map[string]any{"$eq": tier("c")}}}},
		"doc": map[string]any{"k": json.Number("7")},
	}
	f, err := CompileFilter(in)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"d":   t0.UTC(),
		"n":   nil,
		"dur": map[string]any{"$gte": int64(time.Second), "$lt": 5e9},
		"t":   map[string]any{"$in": []string{"a", "b"}, "$exists": int64(1)},
		"$or": []any{map[string]any{"x": map[string]any{"$not": map[string]any{"$eq": "c"}}}},
		"doc": map[string]any{"k": int64(7)},
	}, f.Doc())
	in["doc"].(map[string]any)["k"] = 8
	assert.Equal(t, int64(7), f.Doc()["doc"].(map[string]any)["k"])
	assert.True(t, f.Matches(map[string]any{"d": t0.UTC(), "dur": int64(2e9), "t": "b", "x": "d", "doc": map[string]any{"k": 7}}))
	var empty *Filter
	assert.Nil(t, empty.Doc())
	f, err = CompileFilter(nil)
	require.NoError(t, err)
	assert.Nil(t, f.Doc())
}
