package ttldb

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filterCase is one row of the matching table: a filter, a document and
// whether the filter must match it.
type filterCase struct {
	name   string
	filter Document
	doc    Document
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
			f, err := compileFilter(tc.filter)
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.matches(tc.doc), "filter %#v on %#v", tc.filter, tc.doc)
		})
	}
}

func TestFilterImplicitEquality(t *testing.T) {
	oid := ObjectID{1, 2, 3}
	runFilterCases(t, []filterCase{
		{"equal int", Document{"a": 1}, Document{"a": 1}, true},
		{"different int", Document{"a": 1}, Document{"a": 2}, false},
		{"missing field", Document{"a": 1}, Document{"b": 1}, false},
		{"int equals float64", Document{"a": int(3)}, Document{"a": float64(3)}, true},
		{"float64 equals int", Document{"a": float64(3)}, Document{"a": int(3)}, true},
		{"uint8 equals int64", Document{"a": uint8(3)}, Document{"a": int64(3)}, true},
		{"float32 equals int", Document{"a": float32(2.5)}, Document{"a": 2.5}, true},
		{"fraction differs", Document{"a": 3.5}, Document{"a": 3}, false},
		{"string is not number", Document{"a": "1"}, Document{"a": 1}, false},
		{"bool", Document{"a": true}, Document{"a": true}, true},
		{"bool differs", Document{"a": true}, Document{"a": false}, false},
		{"bool is not number", Document{"a": true}, Document{"a": 1}, false},
		{"date", Document{"a": filterT1}, Document{"a": filterT1}, true},
		{"date in other zone", Document{"a": filterT1.In(time.FixedZone("x", 3600))}, Document{"a": filterT1}, true},
		{"date differs", Document{"a": filterT1}, Document{"a": filterT2}, false},
		{"*time.Time as time", Document{"a": &filterT1}, Document{"a": filterT1}, true},
		{"nil *time.Time as null", Document{"a": (*time.Time)(nil)}, Document{}, true},
		{"ObjectID", Document{"_id": oid}, Document{"_id": oid}, true},
		{"ObjectID differs", Document{"_id": oid}, Document{"_id": ObjectID{9}}, false},
		{"binary", Document{"a": []byte{1, 2}}, Document{"a": []byte{1, 2}}, true},
		{"binary is not an array", Document{"a": byte(1)}, Document{"a": []byte{1}}, false},
		{"NaN equals NaN", Document{"a": math.NaN()}, Document{"a": math.NaN()}, true},
		{"NaN is not a number value", Document{"a": math.NaN()}, Document{"a": 0}, false},
		{"document by value", Document{"a": Document{"x": 1, "y": 2}}, Document{"a": Document{"y": 2.0, "x": 1}}, true},
		{"document missing a field", Document{"a": Document{"x": 1, "y": 2}}, Document{"a": Document{"x": 1}}, false},
		{"document with extra field", Document{"a": Document{"x": 1}}, Document{"a": Document{"x": 1, "y": 2}}, false},
		{"empty document", Document{"a": Document{}}, Document{"a": Document{}}, true},
		{"empty document is not other", Document{"a": Document{}}, Document{"a": Document{"x": 1}}, false},
		{"several fields all match", Document{"a": 1, "b": "x"}, Document{"a": 1, "b": "x"}, true},
		{"several fields one differs", Document{"a": 1, "b": "x"}, Document{"a": 1, "b": "y"}, false},
	})
}

func TestFilterPaths(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"dotted", Document{"a.b": 1}, Document{"a": Document{"b": 1}}, true},
		{"dotted deep", Document{"a.b.c": "x"}, Document{"a": Document{"b": Document{"c": "x"}}}, true},
		{"dotted differs", Document{"a.b": 1}, Document{"a": Document{"b": 2}}, false},
		{"dotted through scalar", Document{"a.b": 1}, Document{"a": 1}, false},
		{"dotted missing", Document{"a.b": 1}, Document{"a": Document{}}, false},
		{"through array of documents", Document{"a.b": 1}, Document{"a": []any{Document{"b": 0}, Document{"b": 1}}}, true},
		{"through []map[string]any", Document{"a.b": 1}, Document{"a": []map[string]any{{"b": 0}, {"b": 1}}}, true},
		{"through array none match", Document{"a.b": 5}, Document{"a": []any{Document{"b": 0}, Document{"b": 1}}}, false},
		{"position", Document{"a.1": "y"}, Document{"a": []any{"x", "y"}}, true},
		{"position differs", Document{"a.0": "y"}, Document{"a": []any{"x", "y"}}, false},
		{"position in typed slice", Document{"a.1": 20}, Document{"a": []int{10, 20}}, true},
		{"position then field", Document{"a.0.b": 1}, Document{"a": []any{Document{"b": 1}, Document{"b": 2}}}, true},
		{"position then field differs", Document{"a.1.b": 1}, Document{"a": []any{Document{"b": 1}, Document{"b": 2}}}, false},
		{"equal document inside array", Document{"a": Document{"b": 1}}, Document{"a": []any{Document{"b": 1}, Document{"b": 2}}}, true},
		{"range through array of documents", Document{"a.b": Document{"$gt": 1}}, Document{"a": []any{Document{"b": 0}, Document{"b": 2}}}, true},
	})
}

func TestFilterArrays(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"element", Document{"tags": "x"}, Document{"tags": []any{"x", "y"}}, true},
		{"no element", Document{"tags": "z"}, Document{"tags": []any{"x", "y"}}, false},
		{"whole array", Document{"tags": []any{"x", "y"}}, Document{"tags": []any{"x", "y"}}, true},
		{"whole array order matters", Document{"tags": []any{"x", "y"}}, Document{"tags": []any{"y", "x"}}, false},
		{"prefix is not whole array", Document{"tags": []any{"x"}}, Document{"tags": []any{"x", "y"}}, false},
		{"typed []string element", Document{"tags": "y"}, Document{"tags": []string{"x", "y"}}, true},
		{"typed []string whole", Document{"tags": []any{"x", "y"}}, Document{"tags": []string{"x", "y"}}, true},
		{"filter typed slice", Document{"tags": []string{"x", "y"}}, Document{"tags": []any{"x", "y"}}, true},
		{"typed []int element cross kind", Document{"n": 2.0}, Document{"n": []int{1, 2}}, true},
		{"typed []time.Time element", Document{"d": filterT1}, Document{"d": []time.Time{filterT0, filterT1}}, true},
		{"array element that is an array", Document{"a": []any{1, 2}}, Document{"a": []any{[]any{1, 2}, 3}}, true},
		{"only one level expanded", Document{"a": 1}, Document{"a": []any{[]any{1, 2}}}, false},
		{"$gt any element", Document{"n": Document{"$gt": 5}}, Document{"n": []any{1, 10}}, true},
		{"$gt no element", Document{"n": Document{"$gt": 5}}, Document{"n": []any{1, 2}}, false},
		{"$gt typed slice", Document{"n": Document{"$gt": 5}}, Document{"n": []int64{1, 10}}, true},
		{"each operator may match another element", Document{"n": Document{"$gt": 1, "$lt": 5}}, Document{"n": []any{0, 10}}, true},
		{"$eq on array element", Document{"tags": Document{"$eq": "x"}}, Document{"tags": []any{"x"}}, true},
		{"empty array equals empty array", Document{"a": []any{}}, Document{"a": []any{}}, true},
		{"empty array is not null", Document{"a": nil}, Document{"a": []any{}}, false},
	})
}

func TestFilterNullAndMissing(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"null matches missing", Document{"a": nil}, Document{}, true},
		{"null matches null", Document{"a": nil}, Document{"a": nil}, true},
		{"null does not match zero", Document{"a": nil}, Document{"a": 0}, false},
		{"null matches null element", Document{"a": nil}, Document{"a": []any{nil, 1}}, true},
		{"null matches path through scalar", Document{"a.b": nil}, Document{"a": 5}, true},
		{"null matches missing nested", Document{"a.b": nil}, Document{"a": Document{}}, true},
		{"$eq null matches missing", Document{"a": Document{"$eq": nil}}, Document{}, true},
		{"$eq null does not match value", Document{"a": Document{"$eq": nil}}, Document{"a": "x"}, false},
		{"$ne null excludes missing", Document{"a": Document{"$ne": nil}}, Document{}, false},
		{"$ne null excludes null", Document{"a": Document{"$ne": nil}}, Document{"a": nil}, false},
		{"$ne null matches value", Document{"a": Document{"$ne": nil}}, Document{"a": 1}, true},
		{"$ne null excludes array holding null", Document{"a": Document{"$ne": nil}}, Document{"a": []any{1, nil}}, false},
		{"$gte null matches missing", Document{"a": Document{"$gte": nil}}, Document{}, true},
		{"$lte null matches null", Document{"a": Document{"$lte": nil}}, Document{"a": nil}, true},
		{"$gte null does not match number", Document{"a": Document{"$gte": nil}}, Document{"a": 1}, false},
		{"$gt null matches nothing", Document{"a": Document{"$gt": nil}}, Document{"a": nil}, false},
		{"$lt null matches nothing", Document{"a": Document{"$lt": nil}}, Document{}, false},
		{"$in null matches missing", Document{"a": Document{"$in": []any{nil, 1}}}, Document{}, true},
		{"$nin null excludes missing", Document{"a": Document{"$nin": []any{nil}}}, Document{}, false},
	})
}

func TestFilterComparison(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"$eq", Document{"a": Document{"$eq": 2}}, Document{"a": 2.0}, true},
		{"$eq differs", Document{"a": Document{"$eq": 2}}, Document{"a": 3}, false},
		{"$eq document", Document{"a": Document{"$eq": Document{"x": 1}}}, Document{"a": Document{"x": 1}}, true},
		{"$ne", Document{"a": Document{"$ne": 2}}, Document{"a": 3}, true},
		{"$ne equal", Document{"a": Document{"$ne": 2}}, Document{"a": int8(2)}, false},
		{"$ne missing", Document{"a": Document{"$ne": 2}}, Document{}, true},
		{"$ne array holding value", Document{"a": Document{"$ne": 2}}, Document{"a": []any{1, 2}}, false},
		{"$ne array without value", Document{"a": Document{"$ne": 3}}, Document{"a": []any{1, 2}}, true},
		{"$gt", Document{"a": Document{"$gt": 5}}, Document{"a": 6}, true},
		{"$gt equal", Document{"a": Document{"$gt": 5}}, Document{"a": 5.0}, false},
		{"$gt cross kind", Document{"a": Document{"$gt": 5}}, Document{"a": 5.5}, true},
		{"$gt uint64", Document{"a": Document{"$gt": 5.5}}, Document{"a": uint64(math.MaxUint64)}, true},
		{"$gte", Document{"a": Document{"$gte": 5}}, Document{"a": float32(5)}, true},
		{"$gte less", Document{"a": Document{"$gte": 5}}, Document{"a": 4}, false},
		{"$lt", Document{"a": Document{"$lt": 5}}, Document{"a": -1}, true},
		{"$lt equal", Document{"a": Document{"$lt": 5}}, Document{"a": 5}, false},
		{"$lte", Document{"a": Document{"$lte": 5}}, Document{"a": 5}, true},
		{"$lte greater", Document{"a": Document{"$lte": 5}}, Document{"a": 5.01}, false},
		{"$gt missing", Document{"a": Document{"$gt": 5}}, Document{}, false},
		{"$lt missing", Document{"a": Document{"$lt": 5}}, Document{}, false},
		{"range ANDed inside", Document{"a": Document{"$gt": 1, "$lt": 5}}, Document{"a": 3}, true},
		{"range ANDed upper", Document{"a": Document{"$gt": 1, "$lt": 5}}, Document{"a": 5}, false},
		{"range ANDed lower", Document{"a": Document{"$gt": 1, "$lt": 5}}, Document{"a": 1}, false},
		{"$gt strings", Document{"a": Document{"$gt": "b"}}, Document{"a": "c"}, true},
		{"$lt strings", Document{"a": Document{"$lt": "b"}}, Document{"a": "c"}, false},
		{"$gt documents", Document{"a": Document{"$gt": Document{"x": 1}}}, Document{"a": Document{"x": 2}}, true},
		{"$lt dates", Document{"d": Document{"$lt": filterT1}}, Document{"d": filterT0}, true},
		{"$lt dates later", Document{"d": Document{"$lt": filterT1}}, Document{"d": filterT2}, false},
		{"$lt *time.Time", Document{"d": Document{"$lt": &filterT1}}, Document{"d": filterT0}, true},
		{"$gte date in array", Document{"d": Document{"$gte": filterT2}}, Document{"d": []time.Time{filterT0, filterT2}}, true},
		{"$lt ObjectID", Document{"a": Document{"$lt": ObjectID{5}}}, Document{"a": ObjectID{4}}, true},
		{"$gt binary", Document{"a": Document{"$gt": []byte{1}}}, Document{"a": []byte{2}}, true},
		{"$gt bool", Document{"a": Document{"$gt": false}}, Document{"a": true}, true},
		{"$gt arrays", Document{"a": Document{"$gt": []any{1, 2}}}, Document{"a": []any{1, 3}}, true},
	})
}

func TestFilterTypeBracketing(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"number range skips string", Document{"a": Document{"$gt": 5}}, Document{"a": "6"}, false},
		{"number range skips date", Document{"a": Document{"$gt": 5}}, Document{"a": filterT0}, false},
		{"number range skips bool", Document{"a": Document{"$lt": 5}}, Document{"a": true}, false},
		{"number range skips null", Document{"a": Document{"$lt": 5}}, Document{"a": nil}, false},
		{"number range skips document", Document{"a": Document{"$gt": 5}}, Document{"a": Document{"x": 1}}, false},
		{"number range skips ObjectID", Document{"a": Document{"$gt": 5}}, Document{"a": ObjectID{1}}, false},
		{"number range skips binary", Document{"a": Document{"$gt": 5}}, Document{"a": []byte{9}}, false},
		{"string range skips number", Document{"a": Document{"$lt": "b"}}, Document{"a": 1}, false},
		{"date range skips number", Document{"d": Document{"$lt": filterT1}}, Document{"d": 0}, false},
		{"date range skips string", Document{"d": Document{"$lt": filterT1}}, Document{"d": "2020"}, false},
		{"date range skips ObjectID", Document{"d": Document{"$gte": filterT0}}, Document{"d": ObjectID{0xff}}, false},
		{"mixed array uses same type", Document{"a": Document{"$gt": 5}}, Document{"a": []any{"z", 6}}, true},
		{"mixed array no number", Document{"a": Document{"$gt": 5}}, Document{"a": []any{"z", filterT0}}, false},
		{"NaN not greater", Document{"a": Document{"$gt": 0}}, Document{"a": math.NaN()}, false},
		{"NaN not less", Document{"a": Document{"$lt": 0}}, Document{"a": math.NaN()}, false},
		{"NaN $gte NaN", Document{"a": Document{"$gte": math.NaN()}}, Document{"a": math.NaN()}, true},
		{"NaN $lte NaN float32", Document{"a": Document{"$lte": math.NaN()}}, Document{"a": float32(math.NaN())}, true},
		{"NaN $gt NaN", Document{"a": Document{"$gt": math.NaN()}}, Document{"a": math.NaN()}, false},
		{"number not $lte NaN", Document{"a": Document{"$lte": math.NaN()}}, Document{"a": 1}, false},
	})
}

func TestFilterSetOperators(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"$in", Document{"a": Document{"$in": []any{1, 2}}}, Document{"a": 2}, true},
		{"$in cross kind", Document{"a": Document{"$in": []any{1, 2}}}, Document{"a": 2.0}, true},
		{"$in absent", Document{"a": Document{"$in": []any{1, 2}}}, Document{"a": 3}, false},
		{"$in array element", Document{"a": Document{"$in": []any{1, 2}}}, Document{"a": []any{3, 1}}, true},
		{"$in whole array", Document{"a": Document{"$in": []any{[]any{1, 2}}}}, Document{"a": []any{1, 2}}, true},
		{"$in missing", Document{"a": Document{"$in": []any{1, 2}}}, Document{}, false},
		{"$in typed slice", Document{"a": Document{"$in": []string{"x", "y"}}}, Document{"a": "y"}, true},
		{"$in []int", Document{"a": Document{"$in": []int{7}}}, Document{"a": int64(7)}, true},
		{"$in empty matches nothing", Document{"a": Document{"$in": []any{}}}, Document{"a": 1}, false},
		{"$in empty missing", Document{"a": Document{"$in": []any{}}}, Document{}, false},
		{"$in mixed types", Document{"a": Document{"$in": []any{"1", filterT0}}}, Document{"a": filterT0}, true},
		{"$nin", Document{"a": Document{"$nin": []any{1, 2}}}, Document{"a": 3}, true},
		{"$nin present", Document{"a": Document{"$nin": []any{1, 2}}}, Document{"a": 1}, false},
		{"$nin missing", Document{"a": Document{"$nin": []any{1, 2}}}, Document{}, true},
		{"$nin array element", Document{"a": Document{"$nin": []any{1, 2}}}, Document{"a": []any{3, 1}}, false},
		{"$nin empty matches all", Document{"a": Document{"$nin": []any{}}}, Document{"a": 1}, true},
		{"$exists true", Document{"a": Document{"$exists": true}}, Document{"a": 1}, true},
		{"$exists true null", Document{"a": Document{"$exists": true}}, Document{"a": nil}, true},
		{"$exists true missing", Document{"a": Document{"$exists": true}}, Document{}, false},
		{"$exists false missing", Document{"a": Document{"$exists": false}}, Document{}, true},
		{"$exists false present", Document{"a": Document{"$exists": false}}, Document{"a": nil}, false},
		{"$exists 1", Document{"a": Document{"$exists": 1}}, Document{"a": 1}, true},
		{"$exists 0", Document{"a": Document{"$exists": 0}}, Document{"a": 1}, false},
		{"$exists 0.0 missing", Document{"a": Document{"$exists": 0.0}}, Document{}, true},
		{"$exists -1", Document{"a": Document{"$exists": int64(-1)}}, Document{}, false},
		{"$exists through array", Document{"a.b": Document{"$exists": true}}, Document{"a": []any{Document{"c": 1}, Document{"b": 2}}}, true},
		{"$exists through array none", Document{"a.b": Document{"$exists": true}}, Document{"a": []any{Document{"c": 1}}}, false},
		{"$exists position", Document{"a.2": Document{"$exists": true}}, Document{"a": []any{1, 2}}, false},
	})
}

func TestFilterNot(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"$not inner false", Document{"a": Document{"$not": Document{"$gt": 5}}}, Document{"a": 3}, true},
		{"$not inner true", Document{"a": Document{"$not": Document{"$gt": 5}}}, Document{"a": 6}, false},
		{"$not missing", Document{"a": Document{"$not": Document{"$gt": 5}}}, Document{}, true},
		{"$not other type", Document{"a": Document{"$not": Document{"$gt": 5}}}, Document{"a": "x"}, true},
		{"$not array with match", Document{"a": Document{"$not": Document{"$gt": 5}}}, Document{"a": []any{1, 10}}, false},
		{"$not of conjunction", Document{"a": Document{"$not": Document{"$gt": 1, "$lt": 5}}}, Document{"a": 7}, true},
		{"$not of conjunction inside", Document{"a": Document{"$not": Document{"$gt": 1, "$lt": 5}}}, Document{"a": 3}, false},
		{"$not $in", Document{"a": Document{"$not": Document{"$in": []any{1}}}}, Document{"a": 2}, true},
		{"$not $exists", Document{"a": Document{"$not": Document{"$exists": true}}}, Document{}, true},
		{"$not $not", Document{"a": Document{"$not": Document{"$not": Document{"$eq": 1}}}}, Document{"a": 1}, true},
		{"$not with sibling", Document{"a": Document{"$not": Document{"$gt": 5}, "$gt": 1}}, Document{"a": 3}, true},
		{"$not with sibling fails", Document{"a": Document{"$not": Document{"$gt": 5}, "$gt": 1}}, Document{"a": 0}, false},
	})
}

func TestFilterLogical(t *testing.T) {
	ab := []any{Document{"a": 1}, Document{"b": 2}}
	runFilterCases(t, []filterCase{
		{"$and all", Document{"$and": ab}, Document{"a": 1, "b": 2}, true},
		{"$and one", Document{"$and": ab}, Document{"a": 1, "b": 3}, false},
		{"$and []Document", Document{"$and": []Document{{"a": 1}, {"a": Document{"$lt": 5}}}}, Document{"a": 1}, true},
		{"$and empty document", Document{"$and": []any{Document{}}}, Document{"z": 1}, true},
		{"$or one", Document{"$or": ab}, Document{"a": 0, "b": 2}, true},
		{"$or none", Document{"$or": ab}, Document{"a": 0, "b": 0}, false},
		{"$nor none", Document{"$nor": ab}, Document{"a": 0, "b": 0}, true},
		{"$nor one", Document{"$nor": ab}, Document{"a": 1}, false},
		{"$nor missing", Document{"$nor": ab}, Document{}, true},
		{"$and with field", Document{"$or": ab, "c": 3}, Document{"a": 1, "c": 3}, true},
		{"$and with field fails", Document{"$or": ab, "c": 3}, Document{"a": 1, "c": 4}, false},
		{"nested", Document{"$or": []any{
			Document{"$and": []any{Document{"a": 1}, Document{"b": Document{"$gt": 1}}}},
			Document{"$nor": []any{Document{"c": Document{"$exists": true}}}},
		}}, Document{"a": 1, "b": 2, "c": 0}, true},
		{"nested fails", Document{"$or": []any{
			Document{"$and": []any{Document{"a": 1}, Document{"b": Document{"$gt": 1}}}},
			Document{"$nor": []any{Document{"c": Document{"$exists": true}}}},
		}}, Document{"a": 1, "b": 1, "c": 0}, false},
	})
}

func TestFilterEmptyMatchesAll(t *testing.T) {
	var nilFilter *filter
	assert.True(t, nilFilter.matches(Document{"a": 1}))
	for _, fd := range []Document{nil, {}} {
		f, err := compileFilter(fd)
		require.NoError(t, err)
		assert.True(t, f.matches(Document{"a": 1}))
		assert.True(t, f.matches(Document{}))
		assert.True(t, f.matches(nil))
	}
}

func TestCompileFilterErrors(t *testing.T) {
	x := 5
	tests := []struct {
		name   string
		filter Document
		want   []string // substrings the error must contain
	}{
		{"unknown top-level", Document{"$foo": 1}, []string{"$foo"}},
		{"$where", Document{"$where": "true"}, []string{"$where"}},
		{"$expr", Document{"$expr": Document{}}, []string{"$expr"}},
		{"$comment", Document{"$comment": "x"}, []string{"$comment"}},
		{"unknown field operator", Document{"a": Document{"$foo": 1}}, []string{"$foo", `"a"`}},
		{"$regex unsupported", Document{"a": Document{"$regex": "x"}}, []string{"$regex", `"a"`}},
		{"$and inside field", Document{"a": Document{"$and": []any{Document{}}}}, []string{"$and", `"a"`}},
		{"unknown among known", Document{"a": Document{"$gt": 1, "$size": 2}}, []string{"$size"}},
		{"mixed operators and fields", Document{"a": Document{"$gt": 1, "b": 2}}, []string{`"a"`, "mixes"}},
		{"empty field name", Document{"": 1}, []string{"empty"}},
		{"empty middle component", Document{"a..b": 1}, []string{`"a..b"`}},
		{"leading dot", Document{".a": 1}, []string{`".a"`}},
		{"trailing dot", Document{"a.": 1}, []string{`"a."`}},
		{"$and scalar", Document{"$and": 1}, []string{"$and"}},
		{"$and nil", Document{"$and": nil}, []string{"$and"}},
		{"$and empty", Document{"$and": []any{}}, []string{"$and"}},
		{"$or document", Document{"$or": Document{"a": 1}}, []string{"$or"}},
		{"$or element not document", Document{"$or": []any{Document{"a": 1}, 2}}, []string{"$or", "element 1"}},
		{"$nor string", Document{"$nor": "x"}, []string{"$nor"}},
		{"error inside $and", Document{"$and": []any{Document{"b.c": Document{"$bad": 1}}}}, []string{"$bad", `"b.c"`}},
		{"$in scalar", Document{"a": Document{"$in": 1}}, []string{"$in", `"a"`}},
		{"$in nil", Document{"a": Document{"$in": nil}}, []string{"$in"}},
		{"$in binary", Document{"a": Document{"$in": []byte{1}}}, []string{"$in"}},
		{"$in document", Document{"a": Document{"$in": Document{"x": 1}}}, []string{"$in"}},
		{"$nin string", Document{"a": Document{"$nin": "x"}}, []string{"$nin", `"a"`}},
		{"$in bad element", Document{"a": Document{"$in": []any{1, make(chan int)}}}, []string{"$in", "chan"}},
		{"$in slice of structs", Document{"a": Document{"$in": []struct{}{{}}}}, []string{"$in"}},
		{"$exists string", Document{"a": Document{"$exists": "yes"}}, []string{"$exists", `"a"`}},
		{"$exists nil", Document{"a": Document{"$exists": nil}}, []string{"$exists"}},
		{"$not scalar", Document{"a": Document{"$not": 5}}, []string{"$not", `"a"`}},
		{"$not empty", Document{"a": Document{"$not": Document{}}}, []string{"$not"}},
		{"$not fields", Document{"a": Document{"$not": Document{"b": 1}}}, []string{"$not"}},
		{"$not unknown", Document{"a": Document{"$not": Document{"$foo": 1}}}, []string{"$foo"}},
		{"$not mixed", Document{"a": Document{"$not": Document{"$gt": 1, "b": 1}}}, []string{"mixes"}},
		{"channel value", Document{"a": make(chan int)}, []string{`"a"`, "chan"}},
		{"func value", Document{"a": func() {}}, []string{`"a"`}},
		{"struct value", Document{"a": struct{}{}}, []string{`"a"`}},
		{"struct in $eq", Document{"a": Document{"$eq": struct{ X int }{1}}}, []string{"$eq"}},
		{"pointer in $gt", Document{"a": Document{"$gt": &x}}, []string{"$gt"}},
		{"channel in $ne", Document{"a": Document{"$ne": make(chan int)}}, []string{"$ne"}},
		{"nested bad value", Document{"a": Document{"b": make(chan int)}}, []string{`"a.b"`}},
		{"map with other key type", Document{"a": map[string]int{"x": 1}}, []string{`"a"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := compileFilter(tc.filter)
			require.Error(t, err)
			assert.Nil(t, f)
			assert.True(t, errors.Is(err, ErrInvalidFilter), "%v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// nestedFilter builds n levels of op around {a: 1}: with op "$and",
// {$and: [{$and: [… {a: 1}]}]}; with "$not", {a: {$not: {$not: … {$eq: 1}}}}.
func nestedFilter(op string, n int) Document {
	if op == "$not" {
		inner := Document{"$eq": 1}
		for range n {
			inner = Document{"$not": inner}
		}
		return Document{"a": inner}
	}
	f := Document{"a": 1}
	for range n {
		f = Document{op: []any{f}}
	}
	return f
}

func TestFilterDepthLimit(t *testing.T) {
	for _, op := range []string{"$and", "$or", "$nor", "$not"} {
		t.Run(op, func(t *testing.T) {
			f, err := compileFilter(nestedFilter(op, maxFilterDepth))
			require.NoError(t, err)
			// An even number of negations cancels out.
			want := op != "$nor" || maxFilterDepth%2 == 0
			assert.Equal(t, want, f.matches(Document{"a": 1}))

			_, err = compileFilter(nestedFilter(op, maxFilterDepth+1))
			require.ErrorIs(t, err, ErrInvalidFilter)
			assert.Contains(t, err.Error(), "nested deeper")
		})
	}
	t.Run("$and then $not", func(t *testing.T) {
		f := nestedFilter("$not", maxFilterDepth/2)
		for range maxFilterDepth/2 + 1 {
			f = Document{"$and": []any{f}}
		}
		_, err := compileFilter(f)
		require.ErrorIs(t, err, ErrInvalidFilter)
	})
	t.Run("cyclic filter", func(t *testing.T) {
		f := Document{}
		f["$or"] = []any{f}
		_, err := compileFilter(f)
		require.ErrorIs(t, err, ErrInvalidFilter)
	})
	t.Run("cyclic value", func(t *testing.T) {
		v := Document{}
		v["x"] = v
		_, err := compileFilter(Document{"a": v})
		require.ErrorIs(t, err, ErrInvalidFilter)
	})
	t.Run("too deep value", func(t *testing.T) {
		v := Document{}
		for range maxDocumentDepth + 1 {
			v = Document{"x": v}
		}
		_, err := compileFilter(Document{"a": Document{"$eq": v}})
		require.ErrorIs(t, err, ErrInvalidFilter)
	})
}

// filterSampleDocument holds every kind of value a document may store (no
// NaN, so that reflect-based equality can check it is left unchanged).
func filterSampleDocument() Document {
	return Document{
		"_id":   ObjectID{1},
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
		"arr":   []any{1, "a", Document{"k": 1}, []any{2, 3}},
		"docs":  []map[string]any{{"k": 1}, {"k": 2}},
		"sub":   Document{"a": Document{"b": []any{Document{"c": 1}}}},
	}
}

func filterSampleFilters() []Document {
	return []Document{
		{"n": 7},
		{"n": Document{"$gt": 5, "$lte": 7.0}},
		{"tags": "y"},
		{"tags": []any{"x", "y"}},
		{"nums": Document{"$gt": 5}},
		{"dates": Document{"$lt": filterT1}},
		{"arr": []any{2, 3}},
		{"arr.k": 1},
		{"docs.k": Document{"$in": []int{2, 3}}},
		{"sub.a.b.c": 1},
		{"sub.a.b.0.c": Document{"$exists": true}},
		{"z": nil},
		{"s": Document{"$ne": nil}, "missing": Document{"$exists": false}},
		{"$or": []any{Document{"s": "y"}, Document{"b": true}}},
		{"$nor": []any{Document{"f": Document{"$lt": 2}}}},
		{"d": Document{"$not": Document{"$gte": filterT2}}},
		{"_id": Document{"$nin": []any{ObjectID{2}}}},
		{"bin": []byte{1, 2}},
	}
}

func TestFilterDeterministicAndDoesNotMutate(t *testing.T) {
	for _, fd := range filterSampleFilters() {
		f, err := compileFilter(fd)
		require.NoError(t, err)
		doc := filterSampleDocument()
		first := f.matches(doc)
		assert.True(t, first, "filter %#v", fd)
		for range 10 {
			assert.Equal(t, first, f.matches(doc))
		}
		assert.Equal(t, filterSampleDocument(), doc, "filter %#v changed the document", fd)
	}
}

func TestFilterDoesNotAliasFilterValues(t *testing.T) {
	in := []any{1, 2}
	eq := Document{"x": 1}
	when := filterT1
	fd := Document{"a": Document{"$in": in}, "b": eq, "d": &when}
	f, err := compileFilter(fd)
	require.NoError(t, err)
	doc := Document{"a": 1, "b": Document{"x": 1}, "d": filterT1}
	require.True(t, f.matches(doc))

	in[0] = 99
	eq["x"] = 2
	when = filterT2
	fd["c"] = Document{"$foo": 1}
	assert.True(t, f.matches(doc), "the compiled filter must not see later changes to the filter document")
}

func TestFilterConcurrentMatches(t *testing.T) {
	f, err := compileFilter(Document{"$or": []any{
		Document{"tags": Document{"$in": []string{"y"}}},
		Document{"n": Document{"$gt": 100}},
	}})
	require.NoError(t, err)
	doc := filterSampleDocument()
	var wg sync.WaitGroup
	results := make([]bool, 8)
	for i := range results {
		goWG(&wg, func() {
			ok := true
			for range 200 {
				ok = ok && f.matches(doc)
			}
			results[i] = ok
		})
	}
	wg.Wait()
	for _, ok := range results {
		assert.True(t, ok)
	}
}

func TestFilterErrorsAreDeterministic(t *testing.T) {
	fd := Document{"b": Document{"$bad2": 1}, "a": Document{"$bad1": 1}}
	_, err := compileFilter(fd)
	require.Error(t, err)
	for range 20 {
		_, again := compileFilter(fd)
		assert.Equal(t, err.Error(), again.Error())
	}
	assert.True(t, strings.Contains(err.Error(), "$bad1"), "keys are checked in sorted order: %v", err)
}
