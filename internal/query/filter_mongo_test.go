package query

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
)

// Issue 20 item 16: MongoDB refuses a $size that is not a whole number
// (BadValue "$size must be a whole number": 1.5, NaN, ±Inf) and a
// negative one, and accepts an integral double (2.0, -0.0) as that size.
func TestFilterSizeWholeNumber(t *testing.T) {
	for _, v := range []any{1.5, -0.5, 2.1, float32(0.25), math.NaN(), math.Inf(1), math.Inf(-1)} {
		f, err := CompileFilter(D{"a": D{"$size": v}})
		assert.Nil(t, f, "$size %v", v)
		require.Error(t, err, "$size %v is refused", v)
		assert.True(t, errors.Is(err, errs.ErrInvalidFilter), "%v", err)
		assert.Contains(t, err.Error(), "$size")
		assert.Contains(t, err.Error(), "whole number")
		// Inside $not, $elemMatch and a logical operator too.
		for _, filter := range []D{
			{"a": D{"$not": D{"$size": v}}},
			{"a": D{"$elemMatch": D{"$size": v}}},
			{"$or": []any{D{"a": D{"$size": v}}}},
		} {
			_, err := CompileFilter(filter)
			assert.True(t, errors.Is(err, errs.ErrInvalidFilter), "%v: %v", filter, err)
		}
	}
	runFilterCases(t, []filterCase{
		{"integral double", D{"a": D{"$size": 2.0}}, D{"a": []any{1, 2}}, true},
		{"negative zero is zero", D{"a": D{"$size": math.Copysign(0, -1)}}, D{"a": []any{}}, true},
		{"int32", D{"a": D{"$size": int32(1)}}, D{"a": []any{1}}, true},
		{"beyond any array", D{"a": D{"$size": uint64(math.MaxUint64)}}, D{"a": []any{1}}, false},
		{"huge integral double", D{"a": D{"$size": 1e300}}, D{"a": []any{1}}, false},
	})
}

// A stored filter (a partial index an earlier ttldb accepted) keeps a
// non-integral $size's old meaning, nested too: it matches nothing, where
// a new filter refuses it. Everything else is as strict as CompileFilter.
func TestStoredFilterKeepsNonIntegralSize(t *testing.T) {
	arrays := []any{[]any{}, []any{1}, []any{1, 2}, []any{1, 2, 3}}
	for _, v := range []any{1.5, -0.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, filter := range []D{
			{"a": D{"$size": v}},
			{"$or": []any{D{"a": D{"$size": v}}}},
			{"a": D{"$elemMatch": D{"$size": v}}},
		} {
			f, err := CompileStoredFilter(filter)
			require.NoError(t, err, "%v", filter)
			for _, a := range arrays {
				assert.False(t, f.Matches(D{"a": a}), "%v matches %v", filter, a)
			}
			_, err = CompileFilter(filter)
			assert.ErrorIs(t, err, errs.ErrInvalidFilter)
		}
	}
	_, err := CompileStoredFilter(D{"a": D{"$size": -1}})
	assert.ErrorIs(t, err, errs.ErrInvalidFilter, "a negative size was refused before too")
	f, err := CompileStoredFilter(D{"a": D{"$not": D{"$size": 1.5}}})
	require.NoError(t, err)
	assert.True(t, f.Matches(D{"a": []any{1}}), "$not of nothing matches")
}

// Issue 20 item 16: MongoDB accepts $comment (any value) beside the
// conditions of a filter document, at the top or inside $and, $or and
// $nor, and ignores it: it is neither a field nor a condition.
func TestFilterComment(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"alone matches everything", D{"$comment": "audit 42"}, D{"a": 1}, true},
		{"beside a condition that holds", D{"$comment": "x", "a": 1}, D{"a": 1}, true},
		{"beside a condition that fails", D{"$comment": "x", "a": 1}, D{"a": 2}, false},
		{"a document value", D{"$comment": D{"by": "job", "n": 3}}, D{"a": 1}, true},
		{"not a field", D{"$comment": "x"}, D{"$comment": "y"}, true},
		{"inside $or", D{"$or": []any{D{"$comment": "x", "a": 1}, D{"b": 1}}}, D{"b": 1}, true},
		{"inside $nor", D{"$nor": []any{D{"$comment": "x", "a": 1}}}, D{"a": 1}, false},
	})
	f, err := CompileFilter(D{"$comment": "x", "a": 1})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": 1}, f.Doc(), "the comment plans nothing")
	// A value no document could hold is still bad input.
	_, err = CompileFilter(D{"$comment": make(chan int)})
	assert.True(t, errors.Is(err, errs.ErrInvalidFilter), "%v", err)
	// Only at the level of conditions: as a field operator it is unknown.
	_, err = CompileFilter(D{"a": D{"$comment": "x"}})
	assert.True(t, errors.Is(err, errs.ErrInvalidFilter), "%v", err)
}
