package query

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// matchingIDs compiles filter (with opts) and lists the _id of the
// documents it matches, in order.
func matchingIDs(t *testing.T, filter codec.Document, opts *ExprOptions, docs []codec.Document) []any {
	t.Helper()
	f, err := CompileFilterWith(filter, opts)
	require.NoError(t, err)
	ids := []any{}
	for _, d := range docs {
		if f.Matches(d) {
			ids = append(ids, d["_id"])
		}
	}
	return ids
}

// monthlyBudget is the manual's $expr example collection.
var monthlyBudget = []codec.Document{
	{"_id": 1, "category": "food", "budget": 400, "spent": 450},
	{"_id": 2, "category": "drinks", "budget": 100, "spent": 150},
	{"_id": 3, "category": "clothes", "budget": 100, "spent": 50},
	{"_id": 4, "category": "misc", "budget": 500, "spent": 300},
	{"_id": 5, "category": "travel", "budget": 200, "spent": 650},
}

// TestManual_expr reproduces the manual's $expr example: the categories
// that spent more than their budget. It needs $gt, an operator of its
// own family.
func TestManual_expr(t *testing.T) {
	if !IsExprOperator("$gt") {
		t.Skip("$gt is not registered")
	}
	assert.Equal(t, []any{1, 2, 5}, matchingIDs(t, codec.Document{"$expr": codec.Document{"$gt": []any{"$spent", "$budget"}}}, nil, monthlyBudget))
}

// TestFilterExprTruthiness: $expr matches when its value is truthy, as
// $cond and $and read it.
func TestFilterExprTruthiness(t *testing.T) {
	docs := []codec.Document{
		{"_id": "true", "v": true}, {"_id": "false", "v": false}, {"_id": "one", "v": 1},
		{"_id": "zero", "v": 0}, {"_id": "zero float", "v": 0.0}, {"_id": "null", "v": nil},
		{"_id": "missing"}, {"_id": "empty string", "v": ""}, {"_id": "empty array", "v": []any{}},
		{"_id": "document", "v": codec.Document{}}, {"_id": "date", "v": time.Unix(0, 0).UTC()},
	}
	assert.Equal(t, []any{"true", "one", "empty string", "empty array", "document", "date"},
		matchingIDs(t, codec.Document{"$expr": "$v"}, nil, docs))
	assert.Equal(t, []any{"false", "zero", "zero float", "null", "missing"},
		matchingIDs(t, codec.Document{"$expr": codec.Document{"$not": "$v"}}, nil, docs))
	assert.Len(t, matchingIDs(t, codec.Document{"$expr": true}, nil, docs), len(docs))
	assert.Empty(t, matchingIDs(t, codec.Document{"$expr": nil}, nil, docs))
	assert.Len(t, matchingIDs(t, codec.Document{"$expr": codec.Document{}}, nil, docs), len(docs), "an empty document is truthy")
}

// TestFilterExprLogical: $expr beside field conditions, and inside
// $and, $or and $nor; $$ROOT and $$CURRENT are the document.
func TestFilterExprLogical(t *testing.T) {
	overBudget := codec.Document{"$cond": codec.Document{
		"if":   codec.Document{"$dateDiff": codec.Document{"startDate": "$from", "endDate": "$to", "unit": "day"}},
		"then": true, "else": false}}
	day := func(s string) time.Time { return dtDate(t, s) }
	docs := []codec.Document{
		{"_id": 1, "kind": "a", "from": day("2021-01-01"), "to": day("2021-01-01")},
		{"_id": 2, "kind": "a", "from": day("2021-01-01"), "to": day("2021-01-03")},
		{"_id": 3, "kind": "b", "from": day("2021-01-01"), "to": day("2021-01-02")},
		{"_id": 4, "kind": "b"},
	}
	assert.Equal(t, []any{2, 3}, matchingIDs(t, codec.Document{"$expr": overBudget}, nil, docs))
	assert.Equal(t, []any{2}, matchingIDs(t, codec.Document{"$expr": overBudget, "kind": "a"}, nil, docs))
	assert.Equal(t, []any{2}, matchingIDs(t, codec.Document{"$and": []any{codec.Document{"kind": "a"}, codec.Document{"$expr": overBudget}}}, nil, docs))
	assert.Equal(t, []any{2, 3, 4}, matchingIDs(t, codec.Document{"$or": []any{codec.Document{"kind": "b"}, codec.Document{"$expr": overBudget}}}, nil, docs))
	assert.Equal(t, []any{1, 4}, matchingIDs(t, codec.Document{"$nor": []any{codec.Document{"$expr": overBudget}}}, nil, docs))
	assert.Equal(t, []any{1}, matchingIDs(t, codec.Document{"$expr": codec.Document{"$and": []any{
		codec.Document{"$not": overBudget}, "$$ROOT.from", "$$CURRENT.to"}}}, nil, docs))
}

// TestFilterExprNowAndLet: CompileFilterWith gives $$NOW and the let
// variables; CompileFilter knows $$NOW as the zero time and no variable.
func TestFilterExprNowAndLet(t *testing.T) {
	now := dtDate(t, "2021-06-15T12:00:00Z")
	docs := []codec.Document{
		{"_id": 1, "logout": dtDate(t, "2021-06-14T09:00:00Z")},
		{"_id": 2, "logout": dtDate(t, "2021-06-01T09:00:00Z")},
		{"_id": 3, "logout": dtDate(t, "2021-06-15T09:00:00Z")},
	}
	isNow := codec.Document{"$expr": codec.Document{"$not": codec.Document{"$dateDiff": codec.Document{
		"startDate": "$$NOW", "endDate": now, "unit": "millisecond"}}}}
	assert.Equal(t, []any{1, 2, 3}, matchingIDs(t, isNow, &ExprOptions{Now: now}, docs), "$$NOW is ExprOptions.Now")
	assert.Empty(t, matchingIDs(t, isNow, &ExprOptions{Now: now.Add(time.Millisecond)}, docs))
	sameDay := codec.Document{"$expr": codec.Document{"$not": codec.Document{"$dateDiff": codec.Document{
		"startDate": "$logout", "endDate": "$$NOW", "unit": "day"}}}}
	assert.Equal(t, []any{3}, matchingIDs(t, sameDay, &ExprOptions{Now: now}, docs))
	assert.Empty(t, matchingIDs(t, sameDay, nil, docs), "$$NOW is the zero time")

	withLet := codec.Document{"$or": []any{codec.Document{"$expr": codec.Document{"$not": codec.Document{"$dateDiff": codec.Document{
		"startDate": "$logout", "endDate": "$$cutoff", "unit": "day"}}}}}}
	assert.Equal(t, []any{2}, matchingIDs(t, withLet, &ExprOptions{Vars: map[string]any{"cutoff": dtDate(t, "2021-06-01T23:00:00Z")}}, docs))
	_, err := CompileFilter(withLet)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrInvalidFilter), "%v", err)
	assert.True(t, errors.Is(err, errs.ErrInvalidOptions), "%v", err)
	assert.Contains(t, err.Error(), "cutoff")
}

// TestFilterExprErrors: a bad expression is a filter error (wrapping
// the expression's), $expr inside $elemMatch is refused, and an
// expression that fails on a document matches nothing (so $nor of it
// matches).
func TestFilterExprErrors(t *testing.T) {
	for name, filter := range map[string]codec.Document{
		"unknown operator":         {"$expr": codec.Document{"$frobnicate": 1}},
		"bad operator argument":    {"$expr": codec.Document{"$dateAdd": 1}},
		"in $and":                  {"$and": []any{codec.Document{"$expr": codec.Document{"$year": []any{1, 2}}}}},
		"inside $elemMatch":        {"a": codec.Document{"$elemMatch": codec.Document{"$or": []any{codec.Document{"$expr": true}}}}},
		"$elemMatch operator form": {"a": codec.Document{"$elemMatch": codec.Document{"$expr": true}}},
		"as a field operator":      {"a": codec.Document{"$expr": true}},
	} {
		_, err := CompileFilter(filter)
		require.Error(t, err, name)
		assert.True(t, errors.Is(err, errs.ErrInvalidFilter), "%s: %v", name, err)
		assert.Contains(t, err.Error(), "$expr", name)
	}
	docs := []codec.Document{{"_id": 1, "d": "not a date"}, {"_id": 2, "d": dtDate(t, "2021-01-01")}}
	failing := codec.Document{"$expr": codec.Document{"$year": "$d"}}
	assert.Equal(t, []any{2}, matchingIDs(t, failing, nil, docs))
	assert.Equal(t, []any{1}, matchingIDs(t, codec.Document{"$nor": []any{failing}}, nil, docs))
}

// TestFilterExprDoc: Doc shows $expr's expression (in stored form, not
// shared with the caller's filter), the conditions beside it unchanged.
func TestFilterExprDoc(t *testing.T) {
	expr := codec.Document{"$year": "$d"}
	f, err := CompileFilter(codec.Document{"$expr": expr, "a": int32(1)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"$expr": map[string]any{"$year": "$d"}, "a": int32(1)}, f.Doc())
	expr["$year"] = "$e"
	assert.Equal(t, "$d", f.Doc()["$expr"].(map[string]any)["$year"])
	seed, err := UpsertSeed(f.Doc())
	require.NoError(t, err)
	assert.Equal(t, codec.Document{"a": int32(1)}, seed, "an upsert takes no field from $expr")
}

// TestFilterExprConcurrent matches one compiled $expr (with variables
// bound by $let) from several goroutines: each evaluation has its own
// Env.
func TestFilterExprConcurrent(t *testing.T) {
	f, err := CompileFilter(codec.Document{"$expr": codec.Document{"$let": codec.Document{
		"vars": codec.Document{"y": codec.Document{"$year": "$d"}},
		"in":   codec.Document{"$cond": []any{"$$y", "$want", false}},
	}}})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				want := (i+g)%2 == 0
				doc := codec.Document{"d": time.Date(2000+i, 1, 1, 0, 0, 0, 0, time.UTC), "want": want}
				if f.Matches(doc) != want {
					t.Errorf("goroutine %d document %d: Matches is not %v", g, i, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestFilterExprMatchAllocs: matching a simple $expr allocates nothing
// per document (the Env comes from a pool).
func TestFilterExprMatchAllocs(t *testing.T) {
	f, err := CompileFilter(codec.Document{"$expr": codec.Document{"$or": []any{"$a", "$b.c"}}})
	require.NoError(t, err)
	doc := codec.Document{"a": 0, "b": codec.Document{"c": true}}
	require.True(t, f.Matches(doc))
	allocs := testing.AllocsPerRun(100, func() { f.Matches(doc) })
	assert.Zero(t, allocs)
}

// TestMatchesErrReportsAFailingExpr: MatchesErr returns the error of a
// $expr that fails on the document (Matches says false), through $and,
// $or and $nor; a branch not evaluated raises nothing.
func TestMatchesErrReportsAFailingExpr(t *testing.T) {
	doc := map[string]any{"s": "text", "n": 1}
	bad := map[string]any{"$expr": map[string]any{"$add": []any{"$s", 1}}}
	if !IsExprOperator("$add") {
		t.Skip("$add is registered by expr_arith.go")
	}
	for _, tc := range []struct {
		name   string
		filter map[string]any
		fails  bool
		match  bool
	}{
		{"top level", bad, true, false},
		{"in $and", map[string]any{"$and": []any{map[string]any{"n": 1}, bad}}, true, false},
		{"$and stops first", map[string]any{"$and": []any{map[string]any{"n": 2}, bad}}, false, false},
		{"$or after a match", map[string]any{"$or": []any{map[string]any{"n": 1}, bad}}, false, true},
		{"$or before a match", map[string]any{"$or": []any{bad, map[string]any{"n": 1}}}, true, false},
		{"$nor", map[string]any{"$nor": []any{bad}}, true, false},
		{"no $expr", map[string]any{"n": 1}, false, true},
	} {
		f, err := CompileFilter(tc.filter)
		require.NoError(t, err, tc.name)
		ok, err := f.MatchesErr(doc)
		if tc.fails {
			require.ErrorIs(t, err, errs.ErrExpression, tc.name)
			assert.Contains(t, err.Error(), "$add", tc.name)
		} else {
			require.NoError(t, err, tc.name)
		}
		assert.Equal(t, tc.match, ok, tc.name)
		if !tc.fails { // Matches reads a failing $expr as false, and goes on
			assert.Equal(t, tc.match, f.Matches(doc), "%s: Matches agrees", tc.name)
		}
	}
}
