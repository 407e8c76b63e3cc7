package query

import (
	"testing"

	"github.com/ttldb/ttldb/internal/errs"
)

func TestComparison(t *testing.T) {
	runOpCases(t, []opCase{
		{name: "eq numbers across types", expr: `{"$eq": [1, 1.0]}`, want: true},
		{name: "eq decimal", expr: `{"$eq": [{"$numberDecimal": "2"}, {"$numberLong": "2"}]}`, want: true},
		{name: "eq missing null", expr: `{"$eq": ["$nofield", null]}`, want: false},
		{name: "eq missing missing", expr: `{"$eq": ["$a", "$b"]}`, want: true},
		{name: "lt missing null", expr: `{"$lt": ["$nofield", null]}`, want: true},
		{name: "cmp missing null", expr: `{"$cmp": ["$nofield", null]}`, want: int32(-1)},
		{name: "cmp null missing", expr: `{"$cmp": [null, "$nofield"]}`, want: int32(1)},
		{name: "gt string number", expr: `{"$gt": ["a", 1]}`, want: true},
		{name: "lt number null", expr: `{"$lt": [1, null]}`, want: false},
		{name: "eq arrays", expr: `{"$eq": [[1, 2], [1, 2]]}`, want: true},
		{name: "eq documents", expr: `{"$eq": [{"a": 1}, {"a": 1.0}]}`, want: true},
		{name: "ne", expr: `{"$ne": ["a", "b"]}`, want: true},
		{name: "gte equal", expr: `{"$gte": [2, 2]}`, want: true},
		{name: "lte", expr: `{"$lte": [3, 2]}`, want: false},
		{name: "cmp strings", expr: `{"$cmp": ["b", "a"]}`, want: int32(1)},
		{name: "cmp dates", expr: `{"$cmp": [{"$date": "2020-01-01T00:00:00Z"}, {"$date": "2021-01-01T00:00:00Z"}]}`, want: int32(-1)},
		{name: "eq arity", expr: `{"$eq": [1]}`, err: errs.ErrInvalidOptions},
		{name: "cmp arity", expr: `{"$cmp": [1, 2, 3]}`, err: errs.ErrInvalidOptions},
	})
}

// TestManual_comparison reproduces the manual's inventory examples of
// $cmp, $eq, $gt, $gte, $lt, $lte and $ne (qty against 250).
func TestManual_comparison(t *testing.T) {
	qtys := []int{300, 200, 250, 300, 180}
	want := map[string][]any{
		"$cmp": {int32(1), int32(-1), int32(0), int32(1), int32(-1)},
		"$eq":  {false, false, true, false, false},
		"$gt":  {true, false, false, true, false},
		"$gte": {true, false, true, true, false},
		"$lt":  {false, true, false, false, true},
		"$lte": {false, true, true, false, true},
		"$ne":  {true, true, false, true, true},
	}
	var cases []opCase
	for op, results := range want {
		for i, q := range qtys {
			cases = append(cases, opCase{
				name: op + " qty " + string(rune('0'+i)),
				expr: map[string]any{op: []any{"$qty", int32(250)}},
				doc:  D{"qty": int32(q)},
				want: results[i],
			})
		}
	}
	runOpCases(t, cases)
}
