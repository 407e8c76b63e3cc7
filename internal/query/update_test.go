package query

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

var testNow = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func TestCompileUpdateRejects(t *testing.T) {
	tests := []struct {
		name   string
		update map[string]any
		want   []error
		text   []string // parts the message must name
	}{
		{"nil update", nil, []error{errs.ErrInvalidUpdate}, []string{"empty"}},
		{"empty update", map[string]any{}, []error{errs.ErrInvalidUpdate}, []string{"empty"}},
		{"plain field is a replacement", map[string]any{"a": 1}, []error{errs.ErrInvalidUpdate}, []string{`"a"`, "ReplaceOne"}},
		{"plain field beside an operator", map[string]any{"$set": map[string]any{"a": 1}, "b": 2}, []error{errs.ErrInvalidUpdate}, []string{`"b"`}},
		{"unknown operator", map[string]any{"$bit": map[string]any{"a": 1}}, []error{errs.ErrInvalidUpdate}, []string{"$bit", "supported: $set, $unset, $inc, $mul, $min, $max, $rename, $currentDate, $setOnInsert, $push, $addToSet, $pull, $pop"}},
		{"unknown operator with empty argument", map[string]any{"$pullAll": map[string]any{}}, []error{errs.ErrInvalidUpdate}, []string{"$pullAll"}},
		{"argument not a document", map[string]any{"$set": 1}, []error{errs.ErrInvalidUpdate}, []string{"$set", "document"}},
		{"argument an array", map[string]any{"$unset": []any{"a"}}, []error{errs.ErrInvalidUpdate}, []string{"$unset"}},
		{"empty path", map[string]any{"$set": map[string]any{"": 1}}, []error{errs.ErrInvalidUpdate}, []string{"$set"}},
		{"empty component", map[string]any{"$set": map[string]any{"a..b": 1}}, []error{errs.ErrInvalidUpdate}, []string{`"a..b"`}},
		{"trailing dot", map[string]any{"$unset": map[string]any{"a.": 1}}, []error{errs.ErrInvalidUpdate}, []string{`"a."`}},
		{"positional operator", map[string]any{"$set": map[string]any{"a.$.b": 1}}, []error{errs.ErrInvalidUpdate}, []string{`"a.$.b"`}},
		{"same path in two operators", map[string]any{"$set": map[string]any{"a": 1}, "$inc": map[string]any{"a": 1}}, []error{errs.ErrInvalidUpdate}, []string{`"a"`, "conflict"}},
		{"path and prefix in two operators", map[string]any{"$set": map[string]any{"a.b": 1}, "$unset": map[string]any{"a": ""}}, []error{errs.ErrInvalidUpdate}, []string{`"a.b"`, `"a"`}},
		{"path and prefix in one operator", map[string]any{"$set": map[string]any{"a": 1, "a.b.c": 2}}, []error{errs.ErrInvalidUpdate}, []string{`"a.b.c"`}},
		{"$inc of a string", map[string]any{"$inc": map[string]any{"n": "1"}}, []error{errs.ErrInvalidUpdate}, []string{"$inc", `"n"`}},
		{"$inc of null", map[string]any{"$inc": map[string]any{"n": nil}}, []error{errs.ErrInvalidUpdate}, []string{"$inc"}},
		{"$currentDate false", map[string]any{"$currentDate": map[string]any{"d": false}}, []error{errs.ErrInvalidUpdate}, []string{"$currentDate", `"d"`}},
		{"$currentDate string", map[string]any{"$currentDate": map[string]any{"d": "date"}}, []error{errs.ErrInvalidUpdate}, []string{`"d"`}},
		{"$currentDate timestamp", map[string]any{"$currentDate": map[string]any{"d": map[string]any{"$type": "timestamp"}}}, []error{errs.ErrInvalidUpdate}, []string{"timestamp"}},
		{"$currentDate other type", map[string]any{"$currentDate": map[string]any{"d": map[string]any{"$type": "string"}}}, []error{errs.ErrInvalidUpdate}, []string{`"d"`}},
		{"$currentDate extra key", map[string]any{"$currentDate": map[string]any{"d": map[string]any{"$type": "date", "x": 1}}}, []error{errs.ErrInvalidUpdate}, []string{`"d"`}},
		{"$unset _id", map[string]any{"$unset": map[string]any{"_id": ""}}, []error{errs.ErrInvalidUpdate, errs.ErrImmutableID}, []string{"$unset", `"_id"`}},
		{"$inc _id", map[string]any{"$inc": map[string]any{"_id": 1}}, []error{errs.ErrInvalidUpdate, errs.ErrImmutableID}, []string{"$inc"}},
		{"$inc inside _id", map[string]any{"$inc": map[string]any{"_id.n": 1}}, []error{errs.ErrInvalidUpdate, errs.ErrImmutableID}, []string{`"_id.n"`}},
		{"$currentDate _id", map[string]any{"$currentDate": map[string]any{"_id": true}}, []error{errs.ErrInvalidUpdate, errs.ErrImmutableID}, []string{"$currentDate"}},
		{"$set of a channel", map[string]any{"$set": map[string]any{"a.b": make(chan int)}}, []error{errs.ErrInvalidUpdate, errs.ErrInvalidDocument}, []string{"$set", `"a.b"`}},
		{"$set of a nested struct", map[string]any{"$set": map[string]any{"a": map[string]any{"x": func() {}}}}, []error{errs.ErrInvalidUpdate, errs.ErrInvalidDocument}, []string{`"a.x"`}},
		{"$set too deep", map[string]any{"$set": map[string]any{strings.Repeat("a.", codec.MaxDepth+1) + "a": 1}}, []error{errs.ErrInvalidUpdate, errs.ErrInvalidDocument}, []string{"deeper"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := CompileUpdate(tt.update)
			require.Error(t, err)
			assert.Nil(t, u)
			for _, want := range tt.want {
				assert.ErrorIs(t, err, want)
			}
			if !slices.Contains(tt.want, errs.ErrImmutableID) {
				assert.NotErrorIs(t, err, errs.ErrImmutableID)
			}
			for _, s := range tt.text {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestCompileUpdateAccepts(t *testing.T) {
	for _, u := range []map[string]any{
		{"$set": map[string]any{}},
		{"$set": map[string]any{"a": 1, "ab": 2, "a-b": 3, "b.c": nil}},
		{"$unset": map[string]any{"a": "", "b": 1, "c": map[string]any{"ignored": true}}},
		{"$inc": map[string]any{"i": int8(1), "u": uint64(2), "f": float32(-1.5)}},
		{"$currentDate": map[string]any{"d": true, "e": map[string]any{"$type": "date"}}},
		{"$set": map[string]any{"_id": 1, "_id2": 2}},
		{"$set": map[string]any{"a.b": 1}, "$unset": map[string]any{"a.c": 1}, "$inc": map[string]any{"ab": 1}},
	} {
		_, err := CompileUpdate(u)
		assert.NoError(t, err, "%v", u)
	}
}

func TestUpdateApply(t *testing.T) {
	tests := []struct {
		name    string
		doc     codec.Document
		update  map[string]any
		want    codec.Document
		changed bool
	}{
		// $set
		{"set new field", codec.Document{"_id": 1}, map[string]any{"$set": map[string]any{"a": "x"}}, codec.Document{"_id": 1, "a": "x"}, true},
		{"set replaces", codec.Document{"a": 1}, map[string]any{"$set": map[string]any{"a": "x"}}, codec.Document{"a": "x"}, true},
		{"set same value", codec.Document{"a": 1, "b": []any{1, "x"}}, map[string]any{"$set": map[string]any{"a": 1, "b": []any{1, "x"}}}, codec.Document{"a": 1, "b": []any{1, "x"}}, false},
		{"set equal value of another kind", codec.Document{"a": 1}, map[string]any{"$set": map[string]any{"a": int64(1)}}, codec.Document{"a": int64(1)}, true},
		{"set null", codec.Document{"a": 1}, map[string]any{"$set": map[string]any{"a": nil}}, codec.Document{"a": nil}, true},
		{"set creates intermediates", codec.Document{}, map[string]any{"$set": map[string]any{"a.b.c": 1}}, codec.Document{"a": codec.Document{"b": codec.Document{"c": 1}}}, true},
		{"set keeps siblings", codec.Document{"a": codec.Document{"x": 1, "b": codec.Document{"y": 2}}}, map[string]any{"$set": map[string]any{"a.b.c": 1}}, codec.Document{"a": codec.Document{"x": 1, "b": codec.Document{"y": 2, "c": 1}}}, true},
		{"set numeric component in a document is a field", codec.Document{"a": codec.Document{}}, map[string]any{"$set": map[string]any{"a.0": 1}}, codec.Document{"a": codec.Document{"0": 1}}, true},
		{"set array element", codec.Document{"tags": []string{"a", "b", "c"}}, map[string]any{"$set": map[string]any{"tags.1": "x"}}, codec.Document{"tags": []any{"a", "x", "c"}}, true},
		{"set array element same value", codec.Document{"tags": []string{"a", "b"}}, map[string]any{"$set": map[string]any{"tags.1": "b"}}, codec.Document{"tags": []string{"a", "b"}}, false},
		{"set past the end pads with null", codec.Document{"tags": []int{1}}, map[string]any{"$set": map[string]any{"tags.3": 4}}, codec.Document{"tags": []any{1, nil, nil, 4}}, true},
		{"set inside an array element", codec.Document{"a": []map[string]any{{"b": 1}, {"b": 2}}}, map[string]any{"$set": map[string]any{"a.1.b": 3}}, codec.Document{"a": []any{codec.Document{"b": 1}, codec.Document{"b": 3}}}, true},
		{"set past the end creates a document", codec.Document{"a": []any{}}, map[string]any{"$set": map[string]any{"a.1.b": 3}}, codec.Document{"a": []any{nil, codec.Document{"b": 3}}}, true},
		{"set array value", codec.Document{}, map[string]any{"$set": map[string]any{"a": []map[string]any{{"b": 1}}}}, codec.Document{"a": []map[string]any{{"b": 1}}}, true},
		{"set pointer to time stores time", codec.Document{}, map[string]any{"$set": map[string]any{"t": &testNow}}, codec.Document{"t": testNow}, true},
		{"empty argument does nothing", codec.Document{"a": 1}, map[string]any{"$set": map[string]any{}}, codec.Document{"a": 1}, false},

		// $unset
		{"unset removes", codec.Document{"a": 1, "b": 2}, map[string]any{"$unset": map[string]any{"a": ""}}, codec.Document{"b": 2}, true},
		{"unset missing is a no-op", codec.Document{"b": 2}, map[string]any{"$unset": map[string]any{"a": ""}}, codec.Document{"b": 2}, false},
		{"unset nested", codec.Document{"a": codec.Document{"b": 1, "c": 2}}, map[string]any{"$unset": map[string]any{"a.b": 1}}, codec.Document{"a": codec.Document{"c": 2}}, true},
		{"unset nested missing", codec.Document{"a": codec.Document{"c": 2}}, map[string]any{"$unset": map[string]any{"a.b.c": 1}}, codec.Document{"a": codec.Document{"c": 2}}, false},
		{"unset through a scalar is a no-op", codec.Document{"a": 5}, map[string]any{"$unset": map[string]any{"a.b": 1}}, codec.Document{"a": 5}, false},
		{"unset array element sets null", codec.Document{"a": []int{1, 2, 3}}, map[string]any{"$unset": map[string]any{"a.1": 1}}, codec.Document{"a": []any{1, nil, 3}}, true},
		{"unset null array element", codec.Document{"a": []any{1, nil}}, map[string]any{"$unset": map[string]any{"a.1": 1}}, codec.Document{"a": []any{1, nil}}, false},
		{"unset past the end", codec.Document{"a": []int{1}}, map[string]any{"$unset": map[string]any{"a.5": 1}}, codec.Document{"a": []int{1}}, false},
		{"unset field name on array is a no-op", codec.Document{"a": []map[string]any{{"b": 1}}}, map[string]any{"$unset": map[string]any{"a.b": 1}}, codec.Document{"a": []map[string]any{{"b": 1}}}, false},
		{"unset inside array element", codec.Document{"a": []map[string]any{{"b": 1, "c": 2}}}, map[string]any{"$unset": map[string]any{"a.0.b": 1}}, codec.Document{"a": []any{codec.Document{"c": 2}}}, true},
		{"unset missing inside array element", codec.Document{"a": []map[string]any{{"c": 2}}}, map[string]any{"$unset": map[string]any{"a.0.b": 1}}, codec.Document{"a": []map[string]any{{"c": 2}}}, false},

		// $inc
		{"inc missing sets", codec.Document{}, map[string]any{"$inc": map[string]any{"n": 5}}, codec.Document{"n": 5}, true},
		{"inc missing nested sets", codec.Document{}, map[string]any{"$inc": map[string]any{"a.n": 5}}, codec.Document{"a": codec.Document{"n": 5}}, true},
		{"inc int", codec.Document{"n": 1}, map[string]any{"$inc": map[string]any{"n": 2}}, codec.Document{"n": 3}, true},
		{"inc keeps stored kind", codec.Document{"n": int32(1)}, map[string]any{"$inc": map[string]any{"n": int64(2)}}, codec.Document{"n": int32(3)}, true},
		{"inc negative", codec.Document{"n": uint8(10)}, map[string]any{"$inc": map[string]any{"n": -3}}, codec.Document{"n": uint8(7)}, true},
		{"inc beyond stored kind gives int64", codec.Document{"n": int8(127)}, map[string]any{"$inc": map[string]any{"n": 1}}, codec.Document{"n": int64(128)}, true},
		{"inc uint below zero gives int64", codec.Document{"n": uint(1)}, map[string]any{"$inc": map[string]any{"n": -2}}, codec.Document{"n": int64(-1)}, true},
		{"inc large uint64", codec.Document{"n": uint64(math.MaxUint64 - 1)}, map[string]any{"$inc": map[string]any{"n": 1}}, codec.Document{"n": uint64(math.MaxUint64)}, true},
		{"inc by zero changes nothing", codec.Document{"n": int16(4)}, map[string]any{"$inc": map[string]any{"n": 0}}, codec.Document{"n": int16(4)}, false},
		{"inc float", codec.Document{"n": 1}, map[string]any{"$inc": map[string]any{"n": 0.5}}, codec.Document{"n": 1.5}, true},
		{"inc stored float", codec.Document{"n": 1.5}, map[string]any{"$inc": map[string]any{"n": 1}}, codec.Document{"n": 2.5}, true},
		{"inc stored float32 gives float64", codec.Document{"n": float32(1.5)}, map[string]any{"$inc": map[string]any{"n": 1}}, codec.Document{"n": 2.5}, true},
		{"inc array element", codec.Document{"a": []int{1, 2}}, map[string]any{"$inc": map[string]any{"a.1": 1}}, codec.Document{"a": []any{1, 3}}, true},

		// $currentDate
		{"currentDate true", codec.Document{}, map[string]any{"$currentDate": map[string]any{"d": true}}, codec.Document{"d": testNow}, true},
		{"currentDate type date nested", codec.Document{"a": codec.Document{}}, map[string]any{"$currentDate": map[string]any{"a.d": map[string]any{"$type": "date"}}}, codec.Document{"a": codec.Document{"d": testNow}}, true},
		{"currentDate same time", codec.Document{"d": testNow}, map[string]any{"$currentDate": map[string]any{"d": true}}, codec.Document{"d": testNow}, false},

		// together
		{"operators together", codec.Document{"_id": 1, "a": 1, "b": codec.Document{"c": 2}, "n": 1},
			map[string]any{"$set": map[string]any{"a": 2}, "$unset": map[string]any{"b.c": ""}, "$inc": map[string]any{"n": 1}, "$currentDate": map[string]any{"d": true}},
			codec.Document{"_id": 1, "a": 2, "b": codec.Document{}, "n": 2, "d": testNow}, true},

		// _id
		{"set _id to its value", codec.Document{"_id": 7, "a": 1}, map[string]any{"$set": map[string]any{"_id": 7}}, codec.Document{"_id": 7, "a": 1}, false},
		{"set _id to an equal value of another kind keeps it", codec.Document{"_id": 7}, map[string]any{"$set": map[string]any{"_id": 7.0}}, codec.Document{"_id": 7}, false},
		{"set inside _id to its value", codec.Document{"_id": codec.Document{"a": 1}}, map[string]any{"$set": map[string]any{"_id.a": 1}}, codec.Document{"_id": codec.Document{"a": 1}}, false},
		{"set _id of a seed", codec.Document{"a": 1}, map[string]any{"$set": map[string]any{"_id": 7}}, codec.Document{"_id": 7, "a": 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := CompileUpdate(tt.update)
			require.NoError(t, err)
			before := codec.CopyDocument(tt.doc)
			out, changed, err := u.Apply(tt.doc, testNow)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out)
			assert.Equal(t, tt.changed, changed)
			assert.Equal(t, before, tt.doc, "apply modified its input")
		})
	}
}

func TestUpdateApplyStripsMonotonicClock(t *testing.T) {
	now := time.Now() // has a monotonic reading; only the test reads the clock
	u, err := CompileUpdate(map[string]any{"$currentDate": map[string]any{"d": true}})
	require.NoError(t, err)
	out, _, err := u.Apply(codec.Document{}, now)
	require.NoError(t, err)
	assert.Equal(t, now.Round(0), out["d"])
	assert.Equal(t, out["d"], out["d"].(time.Time).Round(0))
}

func TestUpdateApplyErrors(t *testing.T) {
	tests := []struct {
		name   string
		doc    codec.Document
		update map[string]any
		want   []error
		text   []string
	}{
		{"set through a string", codec.Document{"a": "s"}, map[string]any{"$set": map[string]any{"a.b": 1}}, []error{errs.ErrInvalidUpdate}, []string{"$set", `"a.b"`, "string"}},
		{"set through a number", codec.Document{"a": codec.Document{"b": 5}}, map[string]any{"$set": map[string]any{"a.b.c": 1}}, []error{errs.ErrInvalidUpdate}, []string{`"a.b.c"`}},
		{"set through null", codec.Document{"a": nil}, map[string]any{"$set": map[string]any{"a.b": 1}}, []error{errs.ErrInvalidUpdate}, []string{"null"}},
		{"set field name in an array", codec.Document{"a": []map[string]any{{"b": 1}}}, map[string]any{"$set": map[string]any{"a.b": 1}}, []error{errs.ErrInvalidUpdate}, []string{"array"}},
		{"set non-canonical index", codec.Document{"a": []int{1, 2}}, map[string]any{"$set": map[string]any{"a.01": 1}}, []error{errs.ErrInvalidUpdate}, []string{`"a.01"`}},
		{"set through a null array element", codec.Document{"a": []any{nil}}, map[string]any{"$set": map[string]any{"a.0.b": 1}}, []error{errs.ErrInvalidUpdate}, []string{"null"}},
		{"set too far past the end", codec.Document{"a": []int{1}}, map[string]any{"$set": map[string]any{"a.10001": 1}}, []error{errs.ErrInvalidUpdate}, []string{"past the end"}},
		{"inc a string", codec.Document{"n": "1"}, map[string]any{"$inc": map[string]any{"n": 1}}, []error{errs.ErrInvalidUpdate}, []string{"$inc", `"n"`}},
		{"inc null", codec.Document{"n": nil}, map[string]any{"$inc": map[string]any{"n": 1}}, []error{errs.ErrInvalidUpdate}, []string{"null"}},
		{"inc an array", codec.Document{"n": []int{1}}, map[string]any{"$inc": map[string]any{"n": 1}}, []error{errs.ErrInvalidUpdate}, nil},
		{"inc overflow", codec.Document{"n": int64(math.MaxInt64)}, map[string]any{"$inc": map[string]any{"n": 1}}, []error{errs.ErrInvalidUpdate}, []string{"overflow"}},
		{"inc overflow below", codec.Document{"n": int64(math.MinInt64)}, map[string]any{"$inc": map[string]any{"n": -1}}, []error{errs.ErrInvalidUpdate}, []string{"overflow"}},
		{"currentDate through a scalar", codec.Document{"a": 1}, map[string]any{"$currentDate": map[string]any{"a.d": true}}, []error{errs.ErrInvalidUpdate}, []string{"$currentDate"}},
		{"set _id to another value", codec.Document{"_id": 1}, map[string]any{"$set": map[string]any{"_id": 2}}, []error{errs.ErrInvalidUpdate, errs.ErrImmutableID}, []string{`"_id"`}},
		{"set _id to another type", codec.Document{"_id": 1}, map[string]any{"$set": map[string]any{"_id": "1"}}, []error{errs.ErrInvalidUpdate, errs.ErrImmutableID}, nil},
		{"set inside _id to another value", codec.Document{"_id": codec.Document{"a": 1}}, map[string]any{"$set": map[string]any{"_id.a": 2}}, []error{errs.ErrInvalidUpdate, errs.ErrImmutableID}, []string{`"_id.a"`}},
		{"set new field inside _id", codec.Document{"_id": codec.Document{"a": 1}}, map[string]any{"$set": map[string]any{"_id.b": 1}}, []error{errs.ErrInvalidUpdate, errs.ErrImmutableID}, nil},
		{"set inside a scalar _id", codec.Document{"_id": 1}, map[string]any{"$set": map[string]any{"_id.b": 1}}, []error{errs.ErrInvalidUpdate}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := CompileUpdate(tt.update)
			require.NoError(t, err)
			before := codec.CopyDocument(tt.doc)
			out, changed, err := u.Apply(tt.doc, testNow)
			require.Error(t, err)
			assert.Nil(t, out)
			assert.False(t, changed)
			for _, want := range tt.want {
				assert.ErrorIs(t, err, want)
			}
			for _, s := range tt.text {
				assert.Contains(t, err.Error(), s)
			}
			assert.Equal(t, before, tt.doc, "apply modified its input")
		})
	}
}

// richDocument has every kind of container and scalar a stored document may
// hold.
func richDocument() codec.Document {
	return codec.Document{
		"_id":  codec.ObjectID{1, 2, 3},
		"s":    "str",
		"n":    int32(4),
		"f":    2.5,
		"t":    testNow,
		"bin":  []byte{1, 2},
		"tags": []string{"a", "b"},
		"ints": []int{1, 2, 3},
		"at":   []time.Time{testNow},
		"sub":  codec.Document{"x": 1, "deep": codec.Document{"y": []any{1, codec.Document{"z": 2}}}},
		"docs": []map[string]any{{"k": 1, "v": codec.Document{"w": 1}}, {"k": 2}},
		"mix":  []any{nil, "x", []any{1, 2}, codec.Document{"q": 1}},
	}
}

func TestUpdateApplyNeverModifiesItsInput(t *testing.T) {
	updates := []map[string]any{
		{"$set": map[string]any{"s": "new", "sub.x": 2, "sub.deep.y.1.z": 3, "tags.0": "z", "ints.1": 9, "docs.0.v.w": 5, "mix.3.q": 2, "bin": []byte{9}, "at.0": testNow.Add(time.Hour)}},
		{"$unset": map[string]any{"s": 1, "sub.deep.y.1.z": 1, "tags.1": 1, "docs.1.k": 1, "mix.2.0": 1}},
		{"$inc": map[string]any{"n": 1, "sub.x": 1.5, "ints.2": 1, "docs.0.k": 1, "mix.2.1": 1}},
		{"$currentDate": map[string]any{"t": true, "sub.deep.when": true, "at.1": true}},
		{"$set": map[string]any{"_id": codec.ObjectID{1, 2, 3}, "new.a.b": []any{1}}},
	}
	for _, um := range updates {
		doc := richDocument()
		u, err := CompileUpdate(um)
		require.NoError(t, err)
		out, changed, err := u.Apply(doc, testNow)
		require.NoError(t, err, "%v", um)
		assert.True(t, changed)
		assert.Equal(t, richDocument(), doc, "apply modified its input: %v", um)
		assert.NotEqual(t, doc, out)
		vandalize(out) // the result shares nothing with the input
		assert.Equal(t, richDocument(), doc, "result shares values with the input: %v", um)
	}
}

func TestUpdateCopiesSetValues(t *testing.T) {
	val := map[string]any{"list": []any{1, 2}, "ints": []int{1}}
	u, err := CompileUpdate(map[string]any{"$set": map[string]any{"a": val}})
	require.NoError(t, err)
	val["list"].([]any)[0] = "changed"
	val["ints"].([]int)[0] = 42
	val["extra"] = true

	want := codec.Document{"a": codec.Document{"list": []any{1, 2}, "ints": []int{1}}}
	out1, _, err := u.Apply(codec.Document{}, testNow)
	require.NoError(t, err)
	assert.Equal(t, want, out1, "the caller's later change reached the update")
	vandalize(out1)
	out2, _, err := u.Apply(codec.Document{}, testNow)
	require.NoError(t, err)
	assert.Equal(t, want, out2, "two results of one update share values")
}

// vandalize changes every map and slice reachable from v, so that a test can
// check that another value shares none of them.
func vandalize(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			vandalize(e)
		}
		x["vandalized"] = true
		return
	case []map[string]any:
		for _, e := range x {
			vandalize(e)
		}
		return
	case []any:
		for i, e := range x {
			vandalize(e)
			x[i] = "vandalized"
		}
		return
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		for i := range rv.Len() {
			rv.Index(i).SetZero()
		}
	}
}

func TestUpsertSeed(t *testing.T) {
	tests := []struct {
		name   string
		filter map[string]any
		want   codec.Document
	}{
		{"nil filter", nil, codec.Document{}},
		{"implicit equality", map[string]any{"a": 1, "b": "x"}, codec.Document{"a": 1, "b": "x"}},
		{"$eq", map[string]any{"a": map[string]any{"$eq": 1}}, codec.Document{"a": 1}},
		{"$eq with others", map[string]any{"a": map[string]any{"$eq": 1, "$gt": 0}}, codec.Document{"a": 1}},
		{"other operators ignored", map[string]any{"a": map[string]any{"$gt": 1}, "b": map[string]any{"$in": []any{1}}, "c": 3}, codec.Document{"c": 3}},
		{"dotted paths expanded", map[string]any{"a.b.c": 1, "a.d": 2, "a.b.e": map[string]any{"$eq": 3}}, codec.Document{"a": codec.Document{"b": codec.Document{"c": 1, "e": 3}, "d": 2}}},
		{"literal document", map[string]any{"a": map[string]any{"b": 1}}, codec.Document{"a": codec.Document{"b": 1}}},
		{"empty document is literal", map[string]any{"a": map[string]any{}}, codec.Document{"a": codec.Document{}}},
		{"array value", map[string]any{"tags": []string{"x", "y"}}, codec.Document{"tags": []string{"x", "y"}}},
		{"_id", map[string]any{"_id": 5, "n": nil}, codec.Document{"_id": 5, "n": nil}},
		{"top-level $and", map[string]any{"a": 1, "$and": []any{map[string]any{"b": 2}, map[string]any{"c.d": map[string]any{"$eq": 3}, "e": map[string]any{"$lt": 1}}}}, codec.Document{"a": 1, "b": 2, "c": codec.Document{"d": 3}}},
		{"nested $and", map[string]any{"$and": []map[string]any{{"$and": []any{map[string]any{"a": 1}}}}}, codec.Document{"a": 1}},
		{"same value twice", map[string]any{"a": 1, "$and": []any{map[string]any{"a": 1.0}}}, codec.Document{"a": 1}},
		{"other top-level operators ignored", map[string]any{"$or": []any{map[string]any{"a": 1}}, "$nor": []any{map[string]any{"b": 1}}, "c": 1}, codec.Document{"c": 1}},
		{"pointer to time", map[string]any{"t": &testNow}, codec.Document{"t": testNow}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := UpsertSeed(tt.filter)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestUpsertSeedCopiesValues(t *testing.T) {
	val := map[string]any{"b": []any{1}}
	filter := map[string]any{"a": val}
	seed, err := UpsertSeed(filter)
	require.NoError(t, err)
	vandalize(seed)
	assert.Equal(t, map[string]any{"a": map[string]any{"b": []any{1}}}, filter)
}

func TestUpsertSeedErrors(t *testing.T) {
	tests := []struct {
		name   string
		filter map[string]any
		want   []error
		text   []string
	}{
		{"two values for one path", map[string]any{"a": 1, "$and": []any{map[string]any{"a": 2}}}, []error{errs.ErrInvalidFilter}, []string{`"a"`}},
		{"two $eq for one path", map[string]any{"$and": []any{map[string]any{"a.b": map[string]any{"$eq": 1}}, map[string]any{"a.b": 2}}}, []error{errs.ErrInvalidFilter}, []string{`"a.b"`}},
		{"path and prefix", map[string]any{"a": 1, "a.b": 2}, []error{errs.ErrInvalidFilter}, []string{`"a"`, `"a.b"`}},
		{"document and path inside it", map[string]any{"a": map[string]any{"b": 1}, "a.b": 1}, []error{errs.ErrInvalidFilter}, nil},
		{"empty component", map[string]any{"a..b": 1}, []error{errs.ErrInvalidFilter}, []string{`"a..b"`}},
		{"$and not an array", map[string]any{"$and": map[string]any{"a": 1}}, []error{errs.ErrInvalidFilter}, []string{"$and"}},
		{"$and empty", map[string]any{"$and": []any{}}, []error{errs.ErrInvalidFilter}, []string{"$and"}},
		{"$and of a scalar", map[string]any{"$and": []any{1}}, []error{errs.ErrInvalidFilter}, []string{"$and"}},
		{"invalid value", map[string]any{"a": make(chan int)}, []error{errs.ErrInvalidFilter, errs.ErrInvalidDocument}, []string{`"a"`}},
		{"invalid $eq value", map[string]any{"a": map[string]any{"$eq": map[string]any{"x": make(chan int)}}}, []error{errs.ErrInvalidFilter, errs.ErrInvalidDocument}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := UpsertSeed(tt.filter)
			require.Error(t, err)
			assert.Nil(t, got)
			for _, want := range tt.want {
				assert.ErrorIs(t, err, want)
			}
			for _, s := range tt.text {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestUpsertSeedCyclicValueIsAnError(t *testing.T) {
	cyc := map[string]any{}
	cyc["self"] = cyc
	_, err := UpsertSeed(map[string]any{"a": cyc, "$and": []any{map[string]any{"a": cyc}}})
	assert.ErrorIs(t, err, errs.ErrInvalidDocument)
}

func TestValidateReplacement(t *testing.T) {
	assert.NoError(t, ValidateReplacement(nil))
	assert.NoError(t, ValidateReplacement(map[string]any{}))
	assert.NoError(t, ValidateReplacement(map[string]any{"a": 1, "b": map[string]any{"c": 2}, "_id": 3}))
	err := ValidateReplacement(map[string]any{"a": 1, "$set": map[string]any{"b": 1}})
	assert.ErrorIs(t, err, errs.ErrInvalidUpdate)
	assert.Contains(t, err.Error(), "$set")
}

// fuzzDocuments are the documents FuzzCompileUpdate applies updates to.
func fuzzDocuments() []codec.Document {
	return []codec.Document{
		{},
		{"_id": 1, "a": 1, "b": "x", "c": nil},
		{"_id": codec.Document{"k": 1}, "a": codec.Document{"b": codec.Document{"c": 1}}, "n": int32(5), "f": 1.5, "u": uint64(math.MaxUint64)},
		richDocument(),
	}
}

// decodeFuzzJSON decodes JSON with integers as int64 (floats as float64), so
// that the fuzzer reaches the integer paths of $inc.
func decodeFuzzJSON(data string) (map[string]any, bool) {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil {
		return nil, false
	}
	return convertNumbers(m).(map[string]any), true
}

func convertNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = convertNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = convertNumbers(e)
		}
	}
	return v
}

func FuzzCompileUpdate(f *testing.F) {
	for _, seed := range []string{
		`{"$set": {"a": 1}}`,
		`{"$set": {"a.b.c": [1, {"d": 2}], "tags.1": "x", "docs.0.k": 3}}`,
		`{"$set": {"_id": 1, "mix.3.q": null}}`,
		`{"$set": {"_id.k": 1}}`,
		`{"$unset": {"a": "", "sub.deep.y.1.z": 1, "ints.0": 1}}`,
		`{"$inc": {"n": 1, "u": -1, "f": 0.5, "a.b.c": 9223372036854775807}}`,
		`{"$inc": {"ints.5": 1}}`,
		`{"$currentDate": {"t": true, "x.y": {"$type": "date"}}}`,
		`{"$currentDate": {"t": {"$type": "timestamp"}}}`,
		`{"$set": {"a": 1}, "$unset": {"a.b": 1}}`,
		`{"a": 1}`,
		`{}`,
		`{"$push": {"a": 1}}`,
		`{"$push": {"ints": {"$each": [3, 1], "$position": -1, "$sort": -1, "$slice": -2}}}`,
		`{"$push": {"docs": {"$each": [{"k": 0}], "$sort": {"k": 1}}, "new.list": 1}}`,
		`{"$push": {"a": {"$slice": 1}}}`,
		`{"$addToSet": {"tags": {"$each": ["x", "x", "z"]}, "mix": 1}}`,
		`{"$pull": {"ints": {"$gte": 2}, "docs": {"k": 1}, "tags": "x"}}`,
		`{"$pull": {"mix": [1, 2], "a.b": {"$foo": 1}}}`,
		`{"$pop": {"ints": -1, "tags": 1, "missing.x": 1}}`,
		`{"$pop": {"ints": 2}}`,
		`{"$min": {"n": 0, "f": "s"}, "$max": {"u": 1e30, "new": null}}`,
		`{"$mul": {"n": 2, "f": 0.5, "missing": 3, "u": 9223372036854775807}}`,
		`{"$rename": {"sub.deep": "moved", "tags": "docs.0.x", "ints.0": "y"}}`,
		`{"$rename": {"a": "a.b"}}`,
		`{"$setOnInsert": {"_id": 9, "x": 1}, "$set": {"x.y": 1}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		um, ok := decodeFuzzJSON(data)
		if !ok {
			return
		}
		u, err := CompileUpdate(um)
		if err != nil {
			require.ErrorIs(t, err, errs.ErrInvalidUpdate)
			return
		}
		fresh := fuzzDocuments()
		for i, doc := range fuzzDocuments() {
			out, changed, err := u.Apply(doc, testNow)
			require.Equal(t, fresh[i], doc, "apply modified its input")
			if err != nil {
				require.ErrorIs(t, err, errs.ErrInvalidUpdate)
				continue
			}
			_, err = codec.CloneDocument(out)
			require.NoError(t, err, "apply produced an invalid document")
			if !changed {
				require.True(t, Identical(codec.Document(doc), codec.Document(out)), "unchanged result differs from the input")
			}
			vandalize(out)
			require.Equal(t, fresh[i], doc, "result shares values with the input")
		}
	})
}

func TestIdentical(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{1, 1, true},
		{1, int64(1), false},
		{1.0, 1, false},
		{math.NaN(), math.NaN(), true},
		{nil, nil, true},
		{nil, 0, false},
		{"a", "b", false},
		{codec.Document{"a": 1, "b": []any{1}}, codec.Document{"b": []any{1}, "a": 1}, true},
		{codec.Document{"a": 1}, codec.Document{"a": 1, "b": 2}, false},
		{codec.Document{"a": 1, "c": 2}, codec.Document{"a": 1, "b": 2}, false},
		{codec.Document{"a": 1}, codec.Document{"a": int32(1)}, false},
		{[]any{1, 2}, []any{1, 2}, true},
		{[]any{1, 2}, []any{1, 2, 3}, false},
		{[]any{1, 2}, []int{1, 2}, false},
		{[]string{"a"}, []string{"b"}, false},
		{[]byte{1}, []byte{1}, true},
		{[]byte{1}, []byte{2}, false},
		{testNow, testNow.In(time.FixedZone("x", 3600)), true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Identical(tt.a, tt.b), "identical(%#v, %#v)", tt.a, tt.b)
		assert.Equal(t, tt.want, Identical(tt.b, tt.a), "identical(%#v, %#v)", tt.b, tt.a)
	}
}
