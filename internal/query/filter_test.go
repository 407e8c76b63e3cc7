package query

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// filterCase is one row of the matching table: a filter, a document and
// whether the filter must match it.
type filterCase struct {
	name   string
	filter codec.Document
	doc    codec.Document
	want   bool
}

var (
	filterT0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	filterT1 = filterT0.Add(time.Hour)
	filterT2 = filterT0.Add(2 * time.Hour)
)

func runFilterCases(t *testing.T, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := CompileFilter(tc.filter)
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.Matches(tc.doc), "filter %#v on %#v", tc.filter, tc.doc)
		})
	}
}

func TestFilterImplicitEquality(t *testing.T) {
	oid := codec.ObjectID{1, 2, 3}
	runFilterCases(t, []filterCase{
		{"equal int", codec.Document{"a": 1}, codec.Document{"a": 1}, true},
		{"different int", codec.Document{"a": 1}, codec.Document{"a": 2}, false},
		{"missing field", codec.Document{"a": 1}, codec.Document{"b": 1}, false},
		{"int equals float64", codec.Document{"a": int(3)}, codec.Document{"a": float64(3)}, true},
		{"float64 equals int", codec.Document{"a": float64(3)}, codec.Document{"a": int(3)}, true},
		{"uint8 equals int64", codec.Document{"a": uint8(3)}, codec.Document{"a": int64(3)}, true},
		{"float32 equals int", codec.Document{"a": float32(2.5)}, codec.Document{"a": 2.5}, true},
		{"fraction differs", codec.Document{"a": 3.5}, codec.Document{"a": 3}, false},
		{"string is not number", codec.Document{"a": "1"}, codec.Document{"a": 1}, false},
		{"bool", codec.Document{"a": true}, codec.Document{"a": true}, true},
		{"bool differs", codec.Document{"a": true}, codec.Document{"a": false}, false},
		{"bool is not number", codec.Document{"a": true}, codec.Document{"a": 1}, false},
		{"date", codec.Document{"a": filterT1}, codec.Document{"a": filterT1}, true},
		{"date in other zone", codec.Document{"a": filterT1.In(time.FixedZone("x", 3600))}, codec.Document{"a": filterT1}, true},
		{"date differs", codec.Document{"a": filterT1}, codec.Document{"a": filterT2}, false},
		{"*time.Time as time", codec.Document{"a": &filterT1}, codec.Document{"a": filterT1}, true},
		{"nil *time.Time as null", codec.Document{"a": (*time.Time)(nil)}, codec.Document{}, true},
		{"ObjectID", codec.Document{"_id": oid}, codec.Document{"_id": oid}, true},
		{"ObjectID differs", codec.Document{"_id": oid}, codec.Document{"_id": codec.ObjectID{9}}, false},
		{"binary", codec.Document{"a": []byte{1, 2}}, codec.Document{"a": []byte{1, 2}}, true},
		{"binary is not an array", codec.Document{"a": byte(1)}, codec.Document{"a": []byte{1}}, false},
		{"NaN equals NaN", codec.Document{"a": math.NaN()}, codec.Document{"a": math.NaN()}, true},
		{"NaN is not a number value", codec.Document{"a": math.NaN()}, codec.Document{"a": 0}, false},
		{"document by value", codec.Document{"a": codec.Document{"x": 1, "y": 2}}, codec.Document{"a": codec.Document{"y": 2.0, "x": 1}}, true},
		{"document missing a field", codec.Document{"a": codec.Document{"x": 1, "y": 2}}, codec.Document{"a": codec.Document{"x": 1}}, false},
		{"document with extra field", codec.Document{"a": codec.Document{"x": 1}}, codec.Document{"a": codec.Document{"x": 1, "y": 2}}, false},
		{"empty document", codec.Document{"a": codec.Document{}}, codec.Document{"a": codec.Document{}}, true},
		{"empty document is not other", codec.Document{"a": codec.Document{}}, codec.Document{"a": codec.Document{"x": 1}}, false},
		{"several fields all match", codec.Document{"a": 1, "b": "x"}, codec.Document{"a": 1, "b": "x"}, true},
		{"several fields one differs", codec.Document{"a": 1, "b": "x"}, codec.Document{"a": 1, "b": "y"}, false},
	})
}

func TestFilterPaths(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"dotted", codec.Document{"a.b": 1}, codec.Document{"a": codec.Document{"b": 1}}, true},
		{"dotted deep", codec.Document{"a.b.c": "x"}, codec.Document{"a": codec.Document{"b": codec.Document{"c": "x"}}}, true},
		{"dotted differs", codec.Document{"a.b": 1}, codec.Document{"a": codec.Document{"b": 2}}, false},
		{"dotted through scalar", codec.Document{"a.b": 1}, codec.Document{"a": 1}, false},
		{"dotted missing", codec.Document{"a.b": 1}, codec.Document{"a": codec.Document{}}, false},
		{"through array of documents", codec.Document{"a.b": 1}, codec.Document{"a": []any{codec.Document{"b": 0}, codec.Document{"b": 1}}}, true},
		{"through []map[string]any", codec.Document{"a.b": 1}, codec.Document{"a": []map[string]any{{"b": 0}, {"b": 1}}}, true},
		{"through array none match", codec.Document{"a.b": 5}, codec.Document{"a": []any{codec.Document{"b": 0}, codec.Document{"b": 1}}}, false},
		{"position", codec.Document{"a.1": "y"}, codec.Document{"a": []any{"x", "y"}}, true},
		{"position differs", codec.Document{"a.0": "y"}, codec.Document{"a": []any{"x", "y"}}, false},
		{"position in typed slice", codec.Document{"a.1": 20}, codec.Document{"a": []int{10, 20}}, true},
		{"position then field", codec.Document{"a.0.b": 1}, codec.Document{"a": []any{codec.Document{"b": 1}, codec.Document{"b": 2}}}, true},
		{"position then field differs", codec.Document{"a.1.b": 1}, codec.Document{"a": []any{codec.Document{"b": 1}, codec.Document{"b": 2}}}, false},
		{"equal document inside array", codec.Document{"a": codec.Document{"b": 1}}, codec.Document{"a": []any{codec.Document{"b": 1}, codec.Document{"b": 2}}}, true},
		{"range through array of documents", codec.Document{"a.b": codec.Document{"$gt": 1}}, codec.Document{"a": []any{codec.Document{"b": 0}, codec.Document{"b": 2}}}, true},
	})
}

func TestFilterArrays(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"element", codec.Document{"tags": "x"}, codec.Document{"tags": []any{"x", "y"}}, true},
		{"no element", codec.Document{"tags": "z"}, codec.Document{"tags": []any{"x", "y"}}, false},
		{"whole array", codec.Document{"tags": []any{"x", "y"}}, codec.Document{"tags": []any{"x", "y"}}, true},
		{"whole array order matters", codec.Document{"tags": []any{"x", "y"}}, codec.Document{"tags": []any{"y", "x"}}, false},
		{"prefix is not whole array", codec.Document{"tags": []any{"x"}}, codec.Document{"tags": []any{"x", "y"}}, false},
		{"typed []string element", codec.Document{"tags": "y"}, codec.Document{"tags": []string{"x", "y"}}, true},
		{"typed []string whole", codec.Document{"tags": []any{"x", "y"}}, codec.Document{"tags": []string{"x", "y"}}, true},
		{"filter typed slice", codec.Document{"tags": []string{"x", "y"}}, codec.Document{"tags": []any{"x", "y"}}, true},
		{"typed []int element cross kind", codec.Document{"n": 2.0}, codec.Document{"n": []int{1, 2}}, true},
		{"typed []time.Time element", codec.Document{"d": filterT1}, codec.Document{"d": []time.Time{filterT0, filterT1}}, true},
		{"array element that is an array", codec.Document{"a": []any{1, 2}}, codec.Document{"a": []any{[]any{1, 2}, 3}}, true},
		{"only one level expanded", codec.Document{"a": 1}, codec.Document{"a": []any{[]any{1, 2}}}, false},
		{"$gt any element", codec.Document{"n": codec.Document{"$gt": 5}}, codec.Document{"n": []any{1, 10}}, true},
		{"$gt no element", codec.Document{"n": codec.Document{"$gt": 5}}, codec.Document{"n": []any{1, 2}}, false},
		{"$gt typed slice", codec.Document{"n": codec.Document{"$gt": 5}}, codec.Document{"n": []int64{1, 10}}, true},
		{"each operator may match another element", codec.Document{"n": codec.Document{"$gt": 1, "$lt": 5}}, codec.Document{"n": []any{0, 10}}, true},
		{"$eq on array element", codec.Document{"tags": codec.Document{"$eq": "x"}}, codec.Document{"tags": []any{"x"}}, true},
		{"empty array equals empty array", codec.Document{"a": []any{}}, codec.Document{"a": []any{}}, true},
		{"empty array is not null", codec.Document{"a": nil}, codec.Document{"a": []any{}}, false},
	})
}

func TestFilterNullAndMissing(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"null matches missing", codec.Document{"a": nil}, codec.Document{}, true},
		{"null matches null", codec.Document{"a": nil}, codec.Document{"a": nil}, true},
		{"null does not match zero", codec.Document{"a": nil}, codec.Document{"a": 0}, false},
		{"null matches null element", codec.Document{"a": nil}, codec.Document{"a": []any{nil, 1}}, true},
		{"null matches path through scalar", codec.Document{"a.b": nil}, codec.Document{"a": 5}, true},
		{"null matches missing nested", codec.Document{"a.b": nil}, codec.Document{"a": codec.Document{}}, true},
		{"$eq null matches missing", codec.Document{"a": codec.Document{"$eq": nil}}, codec.Document{}, true},
		{"$eq null does not match value", codec.Document{"a": codec.Document{"$eq": nil}}, codec.Document{"a": "x"}, false},
		{"$ne null excludes missing", codec.Document{"a": codec.Document{"$ne": nil}}, codec.Document{}, false},
		{"$ne null excludes null", codec.Document{"a": codec.Document{"$ne": nil}}, codec.Document{"a": nil}, false},
		{"$ne null matches value", codec.Document{"a": codec.Document{"$ne": nil}}, codec.Document{"a": 1}, true},
		{"$ne null excludes array holding null", codec.Document{"a": codec.Document{"$ne": nil}}, codec.Document{"a": []any{1, nil}}, false},
		{"$gte null matches missing", codec.Document{"a": codec.Document{"$gte": nil}}, codec.Document{}, true},
		{"$lte null matches null", codec.Document{"a": codec.Document{"$lte": nil}}, codec.Document{"a": nil}, true},
		{"$gte null does not match number", codec.Document{"a": codec.Document{"$gte": nil}}, codec.Document{"a": 1}, false},
		{"$gt null matches nothing", codec.Document{"a": codec.Document{"$gt": nil}}, codec.Document{"a": nil}, false},
		{"$lt null matches nothing", codec.Document{"a": codec.Document{"$lt": nil}}, codec.Document{}, false},
		{"$in null matches missing", codec.Document{"a": codec.Document{"$in": []any{nil, 1}}}, codec.Document{}, true},
		{"$nin null excludes missing", codec.Document{"a": codec.Document{"$nin": []any{nil}}}, codec.Document{}, false},
	})
}

func TestFilterComparison(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"$eq", codec.Document{"a": codec.Document{"$eq": 2}}, codec.Document{"a": 2.0}, true},
		{"$eq differs", codec.Document{"a": codec.Document{"$eq": 2}}, codec.Document{"a": 3}, false},
		{"$eq document", codec.Document{"a": codec.Document{"$eq": codec.Document{"x": 1}}}, codec.Document{"a": codec.Document{"x": 1}}, true},
		{"$ne", codec.Document{"a": codec.Document{"$ne": 2}}, codec.Document{"a": 3}, true},
		{"$ne equal", codec.Document{"a": codec.Document{"$ne": 2}}, codec.Document{"a": int8(2)}, false},
		{"$ne missing", codec.Document{"a": codec.Document{"$ne": 2}}, codec.Document{}, true},
		{"$ne array holding value", codec.Document{"a": codec.Document{"$ne": 2}}, codec.Document{"a": []any{1, 2}}, false},
		{"$ne array without value", codec.Document{"a": codec.Document{"$ne": 3}}, codec.Document{"a": []any{1, 2}}, true},
		{"$gt", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": 6}, true},
		{"$gt equal", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": 5.0}, false},
		{"$gt cross kind", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": 5.5}, true},
		{"$gt uint64", codec.Document{"a": codec.Document{"$gt": 5.5}}, codec.Document{"a": uint64(math.MaxUint64)}, true},
		{"$gte", codec.Document{"a": codec.Document{"$gte": 5}}, codec.Document{"a": float32(5)}, true},
		{"$gte less", codec.Document{"a": codec.Document{"$gte": 5}}, codec.Document{"a": 4}, false},
		{"$lt", codec.Document{"a": codec.Document{"$lt": 5}}, codec.Document{"a": -1}, true},
		{"$lt equal", codec.Document{"a": codec.Document{"$lt": 5}}, codec.Document{"a": 5}, false},
		{"$lte", codec.Document{"a": codec.Document{"$lte": 5}}, codec.Document{"a": 5}, true},
		{"$lte greater", codec.Document{"a": codec.Document{"$lte": 5}}, codec.Document{"a": 5.01}, false},
		{"$gt missing", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{}, false},
		{"$lt missing", codec.Document{"a": codec.Document{"$lt": 5}}, codec.Document{}, false},
		{"range ANDed inside", codec.Document{"a": codec.Document{"$gt": 1, "$lt": 5}}, codec.Document{"a": 3}, true},
		{"range ANDed upper", codec.Document{"a": codec.Document{"$gt": 1, "$lt": 5}}, codec.Document{"a": 5}, false},
		{"range ANDed lower", codec.Document{"a": codec.Document{"$gt": 1, "$lt": 5}}, codec.Document{"a": 1}, false},
		{"$gt strings", codec.Document{"a": codec.Document{"$gt": "b"}}, codec.Document{"a": "c"}, true},
		{"$lt strings", codec.Document{"a": codec.Document{"$lt": "b"}}, codec.Document{"a": "c"}, false},
		{"$gt documents", codec.Document{"a": codec.Document{"$gt": codec.Document{"x": 1}}}, codec.Document{"a": codec.Document{"x": 2}}, true},
		{"$lt dates", codec.Document{"d": codec.Document{"$lt": filterT1}}, codec.Document{"d": filterT0}, true},
		{"$lt dates later", codec.Document{"d": codec.Document{"$lt": filterT1}}, codec.Document{"d": filterT2}, false},
		{"$lt *time.Time", codec.Document{"d": codec.Document{"$lt": &filterT1}}, codec.Document{"d": filterT0}, true},
		{"$gte date in array", codec.Document{"d": codec.Document{"$gte": filterT2}}, codec.Document{"d": []time.Time{filterT0, filterT2}}, true},
		{"$lt ObjectID", codec.Document{"a": codec.Document{"$lt": codec.ObjectID{5}}}, codec.Document{"a": codec.ObjectID{4}}, true},
		{"$gt binary", codec.Document{"a": codec.Document{"$gt": []byte{1}}}, codec.Document{"a": []byte{2}}, true},
		{"$gt bool", codec.Document{"a": codec.Document{"$gt": false}}, codec.Document{"a": true}, true},
		{"$gt arrays", codec.Document{"a": codec.Document{"$gt": []any{1, 2}}}, codec.Document{"a": []any{1, 3}}, true},
	})
}

func TestFilterTypeBracketing(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"number range skips string", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": "6"}, false},
		{"number range skips date", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": filterT0}, false},
		{"number range skips bool", codec.Document{"a": codec.Document{"$lt": 5}}, codec.Document{"a": true}, false},
		{"number range skips null", codec.Document{"a": codec.Document{"$lt": 5}}, codec.Document{"a": nil}, false},
		{"number range skips document", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": codec.Document{"x": 1}}, false},
		{"number range skips ObjectID", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": codec.ObjectID{1}}, false},
		{"number range skips binary", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": []byte{9}}, false},
		{"string range skips number", codec.Document{"a": codec.Document{"$lt": "b"}}, codec.Document{"a": 1}, false},
		{"date range skips number", codec.Document{"d": codec.Document{"$lt": filterT1}}, codec.Document{"d": 0}, false},
		{"date range skips string", codec.Document{"d": codec.Document{"$lt": filterT1}}, codec.Document{"d": "2020"}, false},
		{"date range skips ObjectID", codec.Document{"d": codec.Document{"$gte": filterT0}}, codec.Document{"d": codec.ObjectID{0xff}}, false},
		{"mixed array uses same type", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": []any{"z", 6}}, true},
		{"mixed array no number", codec.Document{"a": codec.Document{"$gt": 5}}, codec.Document{"a": []any{"z", filterT0}}, false},
		{"NaN not greater", codec.Document{"a": codec.Document{"$gt": 0}}, codec.Document{"a": math.NaN()}, false},
		{"NaN not less", codec.Document{"a": codec.Document{"$lt": 0}}, codec.Document{"a": math.NaN()}, false},
		{"NaN $gte NaN", codec.Document{"a": codec.Document{"$gte": math.NaN()}}, codec.Document{"a": math.NaN()}, true},
		{"NaN $lte NaN float32", codec.Document{"a": codec.Document{"$lte": math.NaN()}}, codec.Document{"a": float32(math.NaN())}, true},
		{"NaN $gt NaN", codec.Document{"a": codec.Document{"$gt": math.NaN()}}, codec.Document{"a": math.NaN()}, false},
		{"number not $lte NaN", codec.Document{"a": codec.Document{"$lte": math.NaN()}}, codec.Document{"a": 1}, false},
	})
}

func TestFilterSetOperators(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"$in", codec.Document{"a": codec.Document{"$in": []any{1, 2}}}, codec.Document{"a": 2}, true},
		{"$in cross kind", codec.Document{"a": codec.Document{"$in": []any{1, 2}}}, codec.Document{"a": 2.0}, true},
		{"$in absent", codec.Document{"a": codec.Document{"$in": []any{1, 2}}}, codec.Document{"a": 3}, false},
		{"$in array element", codec.Document{"a": codec.Document{"$in": []any{1, 2}}}, codec.Document{"a": []any{3, 1}}, true},
		{"$in whole array", codec.Document{"a": codec.Document{"$in": []any{[]any{1, 2}}}}, codec.Document{"a": []any{1, 2}}, true},
		{"$in missing", codec.Document{"a": codec.Document{"$in": []any{1, 2}}}, codec.Document{}, false},
		{"$in typed slice", codec.Document{"a": codec.Document{"$in": []string{"x", "y"}}}, codec.Document{"a": "y"}, true},
		{"$in []int", codec.Document{"a": codec.Document{"$in": []int{7}}}, codec.Document{"a": int64(7)}, true},
		{"$in empty matches nothing", codec.Document{"a": codec.Document{"$in": []any{}}}, codec.Document{"a": 1}, false},
		{"$in empty missing", codec.Document{"a": codec.Document{"$in": []any{}}}, codec.Document{}, false},
		{"$in mixed types", codec.Document{"a": codec.Document{"$in": []any{"1", filterT0}}}, codec.Document{"a": filterT0}, true},
		{"$nin", codec.Document{"a": codec.Document{"$nin": []any{1, 2}}}, codec.Document{"a": 3}, true},
		{"$nin present", codec.Document{"a": codec.Document{"$nin": []any{1, 2}}}, codec.Document{"a": 1}, false},
		{"$nin missing", codec.Document{"a": codec.Document{"$nin": []any{1, 2}}}, codec.Document{}, true},
		{"$nin array element", codec.Document{"a": codec.Document{"$nin": []any{1, 2}}}, codec.Document{"a": []any{3, 1}}, false},
		{"$nin empty matches all", codec.Document{"a": codec.Document{"$nin": []any{}}}, codec.Document{"a": 1}, true},
		{"$exists true", codec.Document{"a": codec.Document{"$exists": true}}, codec.Document{"a": 1}, true},
		{"$exists true null", codec.Document{"a": codec.Document{"$exists": true}}, codec.Document{"a": nil}, true},
		{"$exists true missing", codec.Document{"a": codec.Document{"$exists": true}}, codec.Document{}, false},
		{"$exists false missing", codec.Document{"a": codec.Document{"$exists": false}}, codec.Document{}, true},
		{"$exists false present", codec.Document{"a": codec.Document{"$exists": false}}, codec.Document{"a": nil}, false},
		{"$exists 1", codec.Document{"a": codec.Document{"$exists": 1}}, codec.Document{"a": 1}, true},
		{"$exists 0", codec.Document{"a": codec.Document{"$exists": 0}}, codec.Document{"a": 1}, false},
		{"$exists 0.0 missing", codec.Document{"a": codec.Document{"$exists": 0.0}}, codec.Document{}, true},
		{"$exists -1", codec.Document{"a": codec.Document{"$exists": int64(-1)}}, codec.Document{}, false},
		{"$exists through array", codec.Document{"a.b": codec.Document{"$exists": true}}, codec.Document{"a": []any{codec.Document{"c": 1}, codec.Document{"b": 2}}}, true},
		{"$exists through array none", codec.Document{"a.b": codec.Document{"$exists": true}}, codec.Document{"a": []any{codec.Document{"c": 1}}}, false},
		{"$exists position", codec.Document{"a.2": codec.Document{"$exists": true}}, codec.Document{"a": []any{1, 2}}, false},
	})
}

func TestFilterNot(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"$not inner false", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 5}}}, codec.Document{"a": 3}, true},
		{"$not inner true", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 5}}}, codec.Document{"a": 6}, false},
		{"$not missing", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 5}}}, codec.Document{}, true},
		{"$not other type", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 5}}}, codec.Document{"a": "x"}, true},
		{"$not array with match", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 5}}}, codec.Document{"a": []any{1, 10}}, false},
		{"$not of conjunction", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 1, "$lt": 5}}}, codec.Document{"a": 7}, true},
		{"$not of conjunction inside", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 1, "$lt": 5}}}, codec.Document{"a": 3}, false},
		{"$not $in", codec.Document{"a": codec.Document{"$not": codec.Document{"$in": []any{1}}}}, codec.Document{"a": 2}, true},
		{"$not $exists", codec.Document{"a": codec.Document{"$not": codec.Document{"$exists": true}}}, codec.Document{}, true},
		{"$not $not", codec.Document{"a": codec.Document{"$not": codec.Document{"$not": codec.Document{"$eq": 1}}}}, codec.Document{"a": 1}, true},
		{"$not with sibling", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 5}, "$gt": 1}}, codec.Document{"a": 3}, true},
		{"$not with sibling fails", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 5}, "$gt": 1}}, codec.Document{"a": 0}, false},
	})
}

func TestFilterLogical(t *testing.T) {
	ab := []any{codec.Document{"a": 1}, codec.Document{"b": 2}}
	runFilterCases(t, []filterCase{
		{"$and all", codec.Document{"$and": ab}, codec.Document{"a": 1, "b": 2}, true},
		{"$and one", codec.Document{"$and": ab}, codec.Document{"a": 1, "b": 3}, false},
		{"$and []Document", codec.Document{"$and": []codec.Document{{"a": 1}, {"a": codec.Document{"$lt": 5}}}}, codec.Document{"a": 1}, true},
		{"$and empty document", codec.Document{"$and": []any{codec.Document{}}}, codec.Document{"z": 1}, true},
		{"$or one", codec.Document{"$or": ab}, codec.Document{"a": 0, "b": 2}, true},
		{"$or none", codec.Document{"$or": ab}, codec.Document{"a": 0, "b": 0}, false},
		{"$nor none", codec.Document{"$nor": ab}, codec.Document{"a": 0, "b": 0}, true},
		{"$nor one", codec.Document{"$nor": ab}, codec.Document{"a": 1}, false},
		{"$nor missing", codec.Document{"$nor": ab}, codec.Document{}, true},
		{"$and with field", codec.Document{"$or": ab, "c": 3}, codec.Document{"a": 1, "c": 3}, true},
		{"$and with field fails", codec.Document{"$or": ab, "c": 3}, codec.Document{"a": 1, "c": 4}, false},
		{"nested", codec.Document{"$or": []any{
			codec.Document{"$and": []any{codec.Document{"a": 1}, codec.Document{"b": codec.Document{"$gt": 1}}}},
			codec.Document{"$nor": []any{codec.Document{"c": codec.Document{"$exists": true}}}},
		}}, codec.Document{"a": 1, "b": 2, "c": 0}, true},
		{"nested fails", codec.Document{"$or": []any{
			codec.Document{"$and": []any{codec.Document{"a": 1}, codec.Document{"b": codec.Document{"$gt": 1}}}},
			codec.Document{"$nor": []any{codec.Document{"c": codec.Document{"$exists": true}}}},
		}}, codec.Document{"a": 1, "b": 1, "c": 0}, false},
	})
}

func TestFilterEmptyMatchesAll(t *testing.T) {
	var nilFilter *Filter
	assert.True(t, nilFilter.Matches(codec.Document{"a": 1}))
	for _, fd := range []codec.Document{nil, {}} {
		f, err := CompileFilter(fd)
		require.NoError(t, err)
		assert.True(t, f.Matches(codec.Document{"a": 1}))
		assert.True(t, f.Matches(codec.Document{}))
		assert.True(t, f.Matches(nil))
	}
}

func TestCompileFilterErrors(t *testing.T) {
	tests := []struct {
		name   string
		filter codec.Document
		want   []string // substrings the error must contain
	}{
		{"unknown top-level", codec.Document{"$foo": 1}, []string{"$foo"}},
		{"$where", codec.Document{"$where": "true"}, []string{"$where"}},
		{"$expr unknown operator", codec.Document{"$expr": codec.Document{"$noSuchOperator": 1}}, []string{"$expr", "$noSuchOperator"}},
		{"$expr inside $elemMatch", codec.Document{"a": codec.Document{"$elemMatch": codec.Document{"$and": []any{codec.Document{"$expr": true}}}}}, []string{"$expr", "$elemMatch"}},
		{"unknown field operator", codec.Document{"a": codec.Document{"$foo": 1}}, []string{"$foo", `"a"`}},
		{"unknown operator lists the supported ones", codec.Document{"a": codec.Document{"$near": 1}}, []string{"$near", `"a"`, "supported: $eq", "$regex", "$elemMatch", "$size", "$all", "$type", "$mod"}},
		{"unknown top-level lists the supported ones", codec.Document{"$text": 1}, []string{"$text", "supported: $and, $or, $nor"}},
		{"$and inside field", codec.Document{"a": codec.Document{"$and": []any{codec.Document{}}}}, []string{"$and", `"a"`}},
		{"unknown among known", codec.Document{"a": codec.Document{"$gt": 1, "$where": 2}}, []string{"$where"}},
		{"mixed operators and fields", codec.Document{"a": codec.Document{"$gt": 1, "b": 2}}, []string{`"a"`, "mixes"}},
		{"empty field name", codec.Document{"": 1}, []string{"empty"}},
		{"empty middle component", codec.Document{"a..b": 1}, []string{`"a..b"`}},
		{"leading dot", codec.Document{".a": 1}, []string{`".a"`}},
		{"trailing dot", codec.Document{"a.": 1}, []string{`"a."`}},
		{"$and scalar", codec.Document{"$and": 1}, []string{"$and"}},
		{"$and nil", codec.Document{"$and": nil}, []string{"$and"}},
		{"$and empty", codec.Document{"$and": []any{}}, []string{"$and"}},
		{"$or document", codec.Document{"$or": codec.Document{"a": 1}}, []string{"$or"}},
		{"$or element not document", codec.Document{"$or": []any{codec.Document{"a": 1}, 2}}, []string{"$or", "element 1"}},
		{"$nor string", codec.Document{"$nor": "x"}, []string{"$nor"}},
		{"error inside $and", codec.Document{"$and": []any{codec.Document{"b.c": codec.Document{"$bad": 1}}}}, []string{"$bad", `"b.c"`}},
		{"$in scalar", codec.Document{"a": codec.Document{"$in": 1}}, []string{"$in", `"a"`}},
		{"$in nil", codec.Document{"a": codec.Document{"$in": nil}}, []string{"$in"}},
		{"$in binary", codec.Document{"a": codec.Document{"$in": []byte{1}}}, []string{"$in"}},
		{"$in document", codec.Document{"a": codec.Document{"$in": codec.Document{"x": 1}}}, []string{"$in"}},
		{"$nin string", codec.Document{"a": codec.Document{"$nin": "x"}}, []string{"$nin", `"a"`}},
		{"$in bad element", codec.Document{"a": codec.Document{"$in": []any{1, make(chan int)}}}, []string{"$in", "chan"}},
		{"$in slice of channels", codec.Document{"a": codec.Document{"$in": []chan int{nil}}}, []string{"$in"}},
		{"$exists string", codec.Document{"a": codec.Document{"$exists": "yes"}}, []string{"$exists", `"a"`}},
		{"$exists nil", codec.Document{"a": codec.Document{"$exists": nil}}, []string{"$exists"}},
		{"$not scalar", codec.Document{"a": codec.Document{"$not": 5}}, []string{"$not", `"a"`}},
		{"$not empty", codec.Document{"a": codec.Document{"$not": codec.Document{}}}, []string{"$not"}},
		{"$not fields", codec.Document{"a": codec.Document{"$not": codec.Document{"b": 1}}}, []string{"$not"}},
		{"$not unknown", codec.Document{"a": codec.Document{"$not": codec.Document{"$foo": 1}}}, []string{"$foo"}},
		{"$not mixed", codec.Document{"a": codec.Document{"$not": codec.Document{"$gt": 1, "b": 1}}}, []string{"mixes"}},
		{"channel value", codec.Document{"a": make(chan int)}, []string{`"a"`, "chan"}},
		{"func value", codec.Document{"a": func() {}}, []string{`"a"`}},
		{"channel value", codec.Document{"a": make(chan int)}, []string{`"a"`}},
		{"func in $eq", codec.Document{"a": codec.Document{"$eq": func() {}}}, []string{"$eq"}},
		{"complex in $gt", codec.Document{"a": codec.Document{"$gt": complex64(1)}}, []string{"$gt"}},
		{"channel in $ne", codec.Document{"a": codec.Document{"$ne": make(chan int)}}, []string{"$ne"}},
		{"nested bad value", codec.Document{"a": codec.Document{"b": make(chan int)}}, []string{`"a.b"`}},
		{"map with other key type", codec.Document{"a": map[int]any{1: 1}}, []string{`"a"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := CompileFilter(tc.filter)
			require.Error(t, err)
			assert.Nil(t, f)
			assert.True(t, errors.Is(err, errs.ErrInvalidFilter), "%v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// nestedFilter builds n levels of op around {a: 1}: with op "$and",
// {$and: [{$and: [… {a: 1}]}]}; with "$not", {a: {$not: {$not: … {$eq: 1}}}}.
func nestedFilter(op string, n int) codec.Document {
	if op == "$not" {
		inner := codec.Document{"$eq": 1}
		for range n {
			inner = codec.Document{"$not": inner}
		}
		return codec.Document{"a": inner}
	}
	f := codec.Document{"a": 1}
	for range n {
		f = codec.Document{op: []any{f}}
	}
	return f
}

func TestFilterDepthLimit(t *testing.T) {
	for _, op := range []string{"$and", "$or", "$nor", "$not"} {
		t.Run(op, func(t *testing.T) {
			f, err := CompileFilter(nestedFilter(op, maxFilterDepth))
			require.NoError(t, err)
			// An even number of negations cancels out.
			want := op != "$nor" || maxFilterDepth%2 == 0
			assert.Equal(t, want, f.Matches(codec.Document{"a": 1}))

			_, err = CompileFilter(nestedFilter(op, maxFilterDepth+1))
			require.ErrorIs(t, err, errs.ErrInvalidFilter)
			assert.Contains(t, err.Error(), "nested deeper")
		})
	}
	t.Run("$and then $not", func(t *testing.T) {
		f := nestedFilter("$not", maxFilterDepth/2)
		for range maxFilterDepth/2 + 1 {
			f = codec.Document{"$and": []any{f}}
		}
		_, err := CompileFilter(f)
		require.ErrorIs(t, err, errs.ErrInvalidFilter)
	})
	t.Run("cyclic filter", func(t *testing.T) {
		f := codec.Document{}
		f["$or"] = []any{f}
		_, err := CompileFilter(f)
		require.ErrorIs(t, err, errs.ErrInvalidFilter)
	})
	t.Run("cyclic value", func(t *testing.T) {
		v := codec.Document{}
		v["x"] = v
		_, err := CompileFilter(codec.Document{"a": v})
		require.ErrorIs(t, err, errs.ErrInvalidFilter)
	})
	t.Run("too deep value", func(t *testing.T) {
		v := codec.Document{}
		for range codec.MaxDepth + 1 {
			v = codec.Document{"x": v}
		}
		_, err := CompileFilter(codec.Document{"a": codec.Document{"$eq": v}})
		require.ErrorIs(t, err, errs.ErrInvalidFilter)
	})
}

// filterSampleDocument holds every kind of value a document may store (no
// NaN, so that reflect-based equality can check it is left unchanged).
func filterSampleDocument() codec.Document {
	return codec.Document{
		"_id":   codec.ObjectID{1},
		"n":     int64(7),
		"f":     2.5,
		"s":     "x",
		"b":     true,
		"z":     nil,
		"d":     filterT1,
		"bin":   []byte{1, 2},
		"tags":  []string{"x", "y"},
		"nums":  []int{1, 10},
		"dates": []time.Time{filterT0, filterT2},
		"arr":   []any{1, "a", codec.Document{"k": 1}, []any{2, 3}},
		"docs":  []map[string]any{{"k": 1}, {"k": 2}},
		"sub":   codec.Document{"a": codec.Document{"b": []any{codec.Document{"c": 1}}}},
	}
}

func filterSampleFilters() []codec.Document {
	return []codec.Document{
		{"n": 7},
		{"n": codec.Document{"$gt": 5, "$lte": 7.0}},
		{"tags": "y"},
		{"tags": []any{"x", "y"}},
		{"nums": codec.Document{"$gt": 5}},
		{"dates": codec.Document{"$lt": filterT1}},
		{"arr": []any{2, 3}},
		{"arr.k": 1},
		{"docs.k": codec.Document{"$in": []int{2, 3}}},
		{"sub.a.b.c": 1},
		{"sub.a.b.0.c": codec.Document{"$exists": true}},
		{"z": nil},
		{"s": codec.Document{"$ne": nil}, "missing": codec.Document{"$exists": false}},
		{"$or": []any{codec.Document{"s": "y"}, codec.Document{"b": true}}},
		{"$nor": []any{codec.Document{"f": codec.Document{"$lt": 2}}}},
		{"d": codec.Document{"$not": codec.Document{"$gte": filterT2}}},
		{"_id": codec.Document{"$nin": []any{codec.ObjectID{2}}}},
		{"bin": []byte{1, 2}},
	}
}

func TestFilterDeterministicAndDoesNotMutate(t *testing.T) {
	for _, fd := range filterSampleFilters() {
		f, err := CompileFilter(fd)
		require.NoError(t, err)
		doc := filterSampleDocument()
		first := f.Matches(doc)
		assert.True(t, first, "filter %#v", fd)
		for range 10 {
			assert.Equal(t, first, f.Matches(doc))
		}
		assert.Equal(t, filterSampleDocument(), doc, "filter %#v changed the document", fd)
	}
}

func TestFilterDoesNotAliasFilterValues(t *testing.T) {
	in := []any{1, 2}
	eq := codec.Document{"x": 1}
	when := filterT1
	fd := codec.Document{"a": codec.Document{"$in": in}, "b": eq, "d": &when}
	f, err := CompileFilter(fd)
	require.NoError(t, err)
	doc := codec.Document{"a": 1, "b": codec.Document{"x": 1}, "d": filterT1}
	require.True(t, f.Matches(doc))

	in[0] = 99
	eq["x"] = 2
	when = filterT2
	fd["c"] = codec.Document{"$foo": 1}
	assert.True(t, f.Matches(doc), "the compiled filter must not see later changes to the filter document")
}

func TestFilterConcurrentMatches(t *testing.T) {
	f, err := CompileFilter(codec.Document{"$or": []any{
		codec.Document{"tags": codec.Document{"$in": []string{"y"}}},
		codec.Document{"n": codec.Document{"$gt": 100}},
	}})
	require.NoError(t, err)
	doc := filterSampleDocument()
	var wg sync.WaitGroup
	results := make([]bool, 8)
	for i := range results {
		wg.Add(1) // not wg.Go: the module's go directive is 1.24
		go func() {
			defer wg.Done()
			ok := true
			for range 200 {
				ok = ok && f.Matches(doc)
			}
			results[i] = ok
		}()
	}
	wg.Wait()
	for _, ok := range results {
		assert.True(t, ok)
	}
}

func TestFilterErrorsAreDeterministic(t *testing.T) {
	fd := codec.Document{"b": codec.Document{"$bad2": 1}, "a": codec.Document{"$bad1": 1}}
	_, err := CompileFilter(fd)
	require.Error(t, err)
	for range 20 {
		_, again := CompileFilter(fd)
		assert.Equal(t, err.Error(), again.Error())
	}
	assert.True(t, strings.Contains(err.Error(), "$bad1"), "keys are checked in sorted order: %v", err)
}
