package query

import (
	"math"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

type updateCase struct {
	name    string
	doc     D
	update  D
	want    D
	changed bool
}

func runUpdateCases(t *testing.T, cases []updateCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			u, err := CompileUpdate(tt.update)
			require.NoError(t, err)
			before := codec.CopyDocument(tt.doc)
			out, changed, err := u.Apply(tt.doc, testNow)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out)
			assert.Equal(t, tt.changed, changed)
			assert.Equal(t, before, tt.doc, "apply modified its input")
			_, err = codec.CloneDocument(out)
			assert.NoError(t, err, "the result is not a valid document")
		})
	}
}

func TestUpdatePush(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{"appends", D{"a": []any{1}}, D{"$push": D{"a": 2}}, D{"a": []any{1, 2}}, true},
		{"missing field creates the array", D{}, D{"$push": D{"a": 2}}, D{"a": []any{2}}, true},
		{"missing nested path", D{}, D{"$push": D{"a.b": "x"}}, D{"a": D{"b": []any{"x"}}}, true},
		{"typed slice becomes []any", D{"a": []string{"x"}}, D{"$push": D{"a": "y"}}, D{"a": []any{"x", "y"}}, true},
		{"an array value is one element", D{"a": []any{}}, D{"$push": D{"a": []any{1, 2}}}, D{"a": []any{[]any{1, 2}}}, true},
		{"a document value", D{"a": []any{}}, D{"$push": D{"a": D{"b": 1}}}, D{"a": []any{D{"b": 1}}}, true},
		{"$each", D{"a": []any{1}}, D{"$push": D{"a": D{"$each": []any{2, 3}}}}, D{"a": []any{1, 2, 3}}, true},
		{"$each typed", D{"a": []any{1}}, D{"$push": D{"a": D{"$each": []int{2, 3}}}}, D{"a": []any{1, 2, 3}}, true},
		{"$each empty on a missing field", D{}, D{"$push": D{"a": D{"$each": []any{}}}}, D{"a": []any{}}, true},
		{"$each empty on an array", D{"a": []any{1}}, D{"$push": D{"a": D{"$each": []any{}}}}, D{"a": []any{1}}, false},
		{"$position 0", D{"a": []any{1, 2}}, D{"$push": D{"a": D{"$each": []any{9}, "$position": 0}}}, D{"a": []any{9, 1, 2}}, true},
		{"$position middle", D{"a": []any{1, 2}}, D{"$push": D{"a": D{"$each": []any{8, 9}, "$position": 1}}}, D{"a": []any{1, 8, 9, 2}}, true},
		{"$position past the end", D{"a": []any{1}}, D{"$push": D{"a": D{"$each": []any{9}, "$position": 5}}}, D{"a": []any{1, 9}}, true},
		{"$position negative counts from the end", D{"a": []any{1, 2, 3}}, D{"$push": D{"a": D{"$each": []any{9}, "$position": -1}}}, D{"a": []any{1, 2, 9, 3}}, true},
		{"$position very negative", D{"a": []any{1, 2}}, D{"$push": D{"a": D{"$each": []any{9}, "$position": -5}}}, D{"a": []any{9, 1, 2}}, true},
		{"$slice keeps the first", D{"a": []any{1, 2}}, D{"$push": D{"a": D{"$each": []any{3, 4}, "$slice": 3}}}, D{"a": []any{1, 2, 3}}, true},
		{"$slice negative keeps the last", D{"a": []any{1, 2}}, D{"$push": D{"a": D{"$each": []any{3, 4}, "$slice": -3}}}, D{"a": []any{2, 3, 4}}, true},
		{"$slice 0 empties", D{"a": []any{1, 2}}, D{"$push": D{"a": D{"$each": []any{3}, "$slice": 0}}}, D{"a": []any{}}, true},
		{"$slice larger than the array", D{"a": []any{1}}, D{"$push": D{"a": D{"$each": []any{2}, "$slice": 10}}}, D{"a": []any{1, 2}}, true},
		{"$slice float that is whole, back to the same array", D{"a": []any{1}}, D{"$push": D{"a": D{"$each": []any{2}, "$slice": 1.0}}}, D{"a": []any{1}}, false},
		{"$sort ascending", D{"a": []any{3, 1}}, D{"$push": D{"a": D{"$each": []any{2}, "$sort": 1}}}, D{"a": []any{1, 2, 3}}, true},
		{"$sort descending, BSON order", D{"a": []any{"x", 1}}, D{"$push": D{"a": D{"$each": []any{nil}, "$sort": -1}}}, D{"a": []any{"x", 1, nil}}, true},
		{"$sort by field then $slice", D{"q": []any{D{"s": 5}, D{"s": 9}}}, D{"$push": D{"q": D{"$each": []any{D{"s": 7}}, "$sort": D{"s": -1}, "$slice": 2}}}, D{"q": []any{D{"s": 9}, D{"s": 7}}}, true},
		{"$position, then $sort", D{"a": []any{2, 1}}, D{"$push": D{"a": D{"$each": []any{3}, "$position": 0, "$sort": 1}}}, D{"a": []any{1, 2, 3}}, true},
		{"$sort with empty $each", D{"a": []any{2, 1}}, D{"$push": D{"a": D{"$each": []any{}, "$sort": 1}}}, D{"a": []any{1, 2}}, true},
		{"array element path", D{"a": []any{[]any{1}}}, D{"$push": D{"a.0": 2}}, D{"a": []any{[]any{1, 2}}}, true},
		{"value with a pattern-like string", D{}, D{"$push": D{"a": "^x"}}, D{"a": []any{"^x"}}, true},
	})
}

func TestUpdateAddToSet(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{"adds a new value", D{"a": []any{1}}, D{"$addToSet": D{"a": 2}}, D{"a": []any{1, 2}}, true},
		{"present value is not added", D{"a": []any{1, 2}}, D{"$addToSet": D{"a": 2}}, D{"a": []any{1, 2}}, false},
		{"equal number of another kind is present", D{"a": []int{1, 2}}, D{"$addToSet": D{"a": 2.0}}, D{"a": []int{1, 2}}, false},
		{"missing field creates the array", D{}, D{"$addToSet": D{"a": "x"}}, D{"a": []any{"x"}}, true},
		{"document by value", D{"a": []any{D{"x": 1, "y": 2}}}, D{"$addToSet": D{"a": D{"y": 2, "x": 1}}}, D{"a": []any{D{"x": 1, "y": 2}}}, false},
		{"array value is one element", D{"a": []any{1}}, D{"$addToSet": D{"a": []any{1}}}, D{"a": []any{1, []any{1}}}, true},
		{"$each adds the missing ones once", D{"a": []any{"x"}}, D{"$addToSet": D{"a": D{"$each": []any{"x", "y", "y", "z"}}}}, D{"a": []any{"x", "y", "z"}}, true},
		{"$each all present", D{"a": []string{"x", "y"}}, D{"$addToSet": D{"a": D{"$each": []any{"y", "x"}}}}, D{"a": []string{"x", "y"}}, false},
		{"$each empty on a missing field", D{}, D{"$addToSet": D{"a": D{"$each": []any{}}}}, D{"a": []any{}}, true},
		{"nested path", D{"s": D{"t": []any{1}}}, D{"$addToSet": D{"s.t": 2}}, D{"s": D{"t": []any{1, 2}}}, true},
	})
}

func TestUpdatePull(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{"equal values", D{"a": []any{1, 2, 1, 3}}, D{"$pull": D{"a": 1}}, D{"a": []any{2, 3}}, true},
		{"equal across kinds", D{"a": []int64{1, 2}}, D{"$pull": D{"a": 1.0}}, D{"a": []any{int64(2)}}, true},
		{"no element equal", D{"a": []any{1, 2}}, D{"$pull": D{"a": 5}}, D{"a": []any{1, 2}}, false},
		{"missing field is a no-op", D{}, D{"$pull": D{"a": 1}}, D{}, false},
		{"path through a scalar is a no-op", D{"a": 5}, D{"$pull": D{"a.b": 1}}, D{"a": 5}, false},
		{"condition", D{"a": []any{3, 6, 9}}, D{"$pull": D{"a": D{"$gte": 6}}}, D{"a": []any{3}}, true},
		{"condition $in", D{"fruits": []string{"apples", "pears", "oranges"}}, D{"$pull": D{"fruits": D{"$in": []any{"apples", "oranges"}}}}, D{"fruits": []any{"pears"}}, true},
		{"array value exactly", D{"a": []any{[]any{1, 2}, []any{2, 1}, 1}}, D{"$pull": D{"a": []any{1, 2}}}, D{"a": []any{[]any{2, 1}, 1}}, true},
		{"document condition on document elements", D{"r": []any{D{"item": "A", "score": 5}, D{"item": "B", "score": 8, "extra": 1}}},
			D{"$pull": D{"r": D{"score": 8, "item": "B"}}}, D{"r": []any{D{"item": "A", "score": 5}}}, true},
		{"document condition with operators", D{"r": []any{D{"s": 5}, D{"s": 9}, 7}}, D{"$pull": D{"r": D{"s": D{"$gt": 6}}}}, D{"r": []any{D{"s": 5}, 7}}, true},
		{"empty document removes every document element", D{"r": []any{D{"s": 5}, 7, D{}}}, D{"$pull": D{"r": D{}}}, D{"r": []any{7}}, true},
		{"document condition with $elemMatch", D{"r": []any{D{"ans": []any{D{"q": 2, "a": 9}}}, D{"ans": []any{D{"q": 2, "a": 1}}}}},
			D{"$pull": D{"r": D{"ans": D{"$elemMatch": D{"q": 2, "a": D{"$gte": 8}}}}}}, D{"r": []any{D{"ans": []any{D{"q": 2, "a": 1}}}}}, true},
		{"pattern", D{"a": []any{"apple", "banana", 1}}, D{"$pull": D{"a": regexp.MustCompile("^a")}}, D{"a": []any{"banana", 1}}, true},
		{"$regex condition", D{"a": []any{"Apple", "banana"}}, D{"$pull": D{"a": D{"$regex": "^a", "$options": "i"}}}, D{"a": []any{"banana"}}, true},
		{"removes everything", D{"a": []any{1, 1}}, D{"$pull": D{"a": 1}}, D{"a": []any{}}, true},
		{"array element path", D{"a": []any{[]any{1, 2}}}, D{"$pull": D{"a.0": 1}}, D{"a": []any{[]any{2}}}, true},
	})
}

func TestUpdatePop(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{"last", D{"a": []any{1, 2, 3}}, D{"$pop": D{"a": 1}}, D{"a": []any{1, 2}}, true},
		{"first", D{"a": []any{1, 2, 3}}, D{"$pop": D{"a": -1}}, D{"a": []any{2, 3}}, true},
		{"float 1", D{"a": []int{1, 2}}, D{"$pop": D{"a": 1.0}}, D{"a": []any{1}}, true},
		{"int64 -1", D{"a": []int{1, 2}}, D{"$pop": D{"a": int64(-1)}}, D{"a": []any{2}}, true},
		{"single element", D{"a": []any{1}}, D{"$pop": D{"a": 1}}, D{"a": []any{}}, true},
		{"empty array is a no-op", D{"a": []any{}}, D{"$pop": D{"a": 1}}, D{"a": []any{}}, false},
		{"missing is a no-op", D{}, D{"$pop": D{"a.b": 1}}, D{}, false},
		{"nested", D{"a": D{"b": []any{1, 2}}}, D{"$pop": D{"a.b": -1}}, D{"a": D{"b": []any{2}}}, true},
	})
}

func TestUpdateMinMax(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{"$min lower", D{"n": 5}, D{"$min": D{"n": 3}}, D{"n": 3}, true},
		{"$min higher", D{"n": 5}, D{"$min": D{"n": 7}}, D{"n": 5}, false},
		{"$min equal of another kind keeps", D{"n": 5}, D{"$min": D{"n": 5.0}}, D{"n": 5}, false},
		{"$min missing sets", D{}, D{"$min": D{"a.n": 1}}, D{"a": D{"n": 1}}, true},
		{"$min across types: number before string", D{"n": "x"}, D{"$min": D{"n": 1}}, D{"n": 1}, true},
		{"$min null is lowest", D{"n": 1}, D{"$min": D{"n": nil}}, D{"n": nil}, true},
		{"$min dates", D{"d": testNow}, D{"$min": D{"d": testNow.Add(-1)}}, D{"d": testNow.Add(-1)}, true},
		{"$max higher", D{"n": 5}, D{"$max": D{"n": 7}}, D{"n": 7}, true},
		{"$max lower", D{"n": 5}, D{"$max": D{"n": 3}}, D{"n": 5}, false},
		{"$max missing sets", D{}, D{"$max": D{"n": 3}}, D{"n": 3}, true},
		{"$max across types: date after number", D{"n": 5}, D{"$max": D{"n": testNow}}, D{"n": testNow}, true},
		{"$max array element", D{"a": []any{1, 9}}, D{"$max": D{"a.0": 4}}, D{"a": []any{4, 9}}, true},
	})
}

func TestUpdateMul(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{"int", D{"n": 3}, D{"$mul": D{"n": 4}}, D{"n": 12}, true},
		{"keeps the stored kind", D{"n": int32(3)}, D{"$mul": D{"n": int64(2)}}, D{"n": int32(6)}, true},
		{"beyond the stored kind gives int64", D{"n": int8(100)}, D{"$mul": D{"n": 2}}, D{"n": int64(200)}, true},
		{"float factor", D{"n": 3}, D{"$mul": D{"n": 0.5}}, D{"n": 1.5}, true},
		{"float field", D{"n": 1.5}, D{"$mul": D{"n": 2}}, D{"n": 3.0}, true},
		{"by one changes nothing", D{"n": 3}, D{"$mul": D{"n": 1}}, D{"n": 3}, false},
		{"missing field is zero of the factor's type", D{}, D{"$mul": D{"n": int64(5)}}, D{"n": int64(0)}, true},
		{"missing field, float factor", D{}, D{"$mul": D{"a.n": 2.5}}, D{"a": D{"n": 0.0}}, true},
		{"negative", D{"n": uint8(3)}, D{"$mul": D{"n": -1}}, D{"n": int64(-3)}, true},
		{"array element", D{"a": []int{2, 3}}, D{"$mul": D{"a.1": 3}}, D{"a": []any{2, 9}}, true},
	})
}

func TestUpdateRename(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{"renames", D{"a": 1, "b": 2}, D{"$rename": D{"a": "c"}}, D{"c": 1, "b": 2}, true},
		{"overwrites the target", D{"a": 1, "c": 2}, D{"$rename": D{"a": "c"}}, D{"c": 1}, true},
		{"missing source is a no-op", D{"c": 2}, D{"$rename": D{"a": "c"}}, D{"c": 2}, false},
		{"source through a scalar is a no-op", D{"a": 5}, D{"$rename": D{"a.b": "c"}}, D{"a": 5}, false},
		{"into a nested document", D{"a": 1}, D{"$rename": D{"a": "x.y.z"}}, D{"x": D{"y": D{"z": 1}}}, true},
		{"out of a nested document", D{"x": D{"y": 1, "k": 2}}, D{"$rename": D{"x.y": "y"}}, D{"x": D{"k": 2}, "y": 1}, true},
		{"within a document", D{"x": D{"y": 1}}, D{"$rename": D{"x.y": "x.z"}}, D{"x": D{"z": 1}}, true},
		{"an array field as a whole", D{"a": []any{1}}, D{"$rename": D{"a": "b"}}, D{"b": []any{1}}, true},
		{"two renames", D{"a": 1, "b": 2}, D{"$rename": D{"a": "c", "b": "d"}}, D{"c": 1, "d": 2}, true},
	})
}

func TestUpdateSetOnInsert(t *testing.T) {
	u, err := CompileUpdate(D{"$set": D{"a": 1}, "$setOnInsert": D{"created": "now", "n.x": 2}})
	require.NoError(t, err)
	out, changed, err := u.Apply(D{"_id": 1}, testNow)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, D{"_id": 1, "a": 1}, out, "an update of an existing document ignores $setOnInsert")

	out, changed, err = u.ApplyInsert(D{"k": "v"}, testNow)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, D{"k": "v", "a": 1, "created": "now", "n": D{"x": 2}}, out)

	only, err := CompileUpdate(D{"$setOnInsert": D{"a": 1}})
	require.NoError(t, err)
	out, changed, err = only.Apply(D{"_id": 1}, testNow)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, D{"_id": 1}, out)

	// _id: may be set on insert, may not change a seed's _id.
	id, err := CompileUpdate(D{"$setOnInsert": D{"_id": 7}})
	require.NoError(t, err)
	out, _, err = id.ApplyInsert(D{"k": 1}, testNow)
	require.NoError(t, err)
	assert.Equal(t, D{"_id": 7, "k": 1}, out)
	_, _, err = id.ApplyInsert(D{"_id": 1}, testNow)
	assert.ErrorIs(t, err, errs.ErrImmutableID)
	out, changed, err = id.Apply(D{"_id": 1}, testNow)
	require.NoError(t, err, "not inserting: $setOnInsert of _id is ignored")
	assert.False(t, changed)
	assert.Equal(t, D{"_id": 1}, out)
}

func TestCompileUpdateOperatorErrors(t *testing.T) {
	tests := []struct {
		name   string
		update D
		want   []error
		text   []string
	}{
		{"$set and $push one path", D{"$set": D{"a": 1}, "$push": D{"a": 2}}, nil, []string{"conflict", `"a"`}},
		{"$push and $pull one path", D{"$push": D{"a": 1}, "$pull": D{"a": 2}}, nil, []string{"conflict"}},
		{"$inc and $mul one path", D{"$inc": D{"n": 1}, "$mul": D{"n": 2}}, nil, []string{"conflict"}},
		{"$set and $setOnInsert one path", D{"$set": D{"a": 1}, "$setOnInsert": D{"a": 2}}, nil, []string{"conflict"}},
		{"$min and $max prefix", D{"$min": D{"a": 1}, "$max": D{"a.b": 2}}, nil, []string{"conflict", `"a.b"`}},
		{"$pop and $set of an element", D{"$pop": D{"a": 1}, "$set": D{"a.0": 2}}, nil, []string{"conflict", `"a.0"`}},
		{"$rename target and $set", D{"$rename": D{"a": "b"}, "$set": D{"b": 1}}, nil, []string{"conflict", `"b"`}},
		{"$rename source and $set", D{"$rename": D{"a": "b"}, "$set": D{"a.x": 1}}, nil, []string{"conflict", `"a.x"`}},
		{"$rename target under another's path", D{"$rename": D{"a": "b.c"}, "$unset": D{"b": 1}}, nil, []string{"conflict"}},
		{"two renames to one target", D{"$rename": D{"a": "c", "b": "c"}}, nil, []string{"conflict", `"c"`}},
		{"rename chain", D{"$rename": D{"a": "b", "b": "c"}}, nil, []string{"conflict", `"b"`}},
		{"$rename to itself", D{"$rename": D{"a": "a"}}, nil, []string{"$rename", "differ"}},
		{"$rename into itself", D{"$rename": D{"a": "a.b"}}, nil, []string{"same path"}},
		{"$rename out of itself", D{"$rename": D{"a.b": "a"}}, nil, []string{"same path"}},
		{"$rename from _id", D{"$rename": D{"_id": "x"}}, []error{errs.ErrImmutableID}, []string{"$rename", `"_id"`}},
		{"$rename to _id", D{"$rename": D{"x": "_id"}}, nil, []string{"$rename", "_id"}},
		{"$rename into _id", D{"$rename": D{"x": "_id.y"}}, nil, []string{"_id"}},
		{"$rename target not a string", D{"$rename": D{"a": 1}}, nil, []string{"$rename", "string"}},
		{"$rename empty target", D{"$rename": D{"a": ""}}, nil, []string{"$rename", "empty"}},
		{"$rename target with $", D{"$rename": D{"a": "b.$"}}, nil, []string{"$rename"}},
		{"$push _id", D{"$push": D{"_id": 1}}, []error{errs.ErrImmutableID}, []string{"$push"}},
		{"$min _id", D{"$min": D{"_id": 1}}, []error{errs.ErrImmutableID}, nil},
		{"$push modifiers without $each", D{"$push": D{"a": D{"$slice": 1}}}, nil, []string{"$push", "$each"}},
		{"$push $each not an array", D{"$push": D{"a": D{"$each": 1}}}, nil, []string{"$each", "array"}},
		{"$push unknown modifier", D{"$push": D{"a": D{"$each": []any{1}, "$foo": 1}}}, nil, []string{"$foo"}},
		{"$push $slice not a number", D{"$push": D{"a": D{"$each": []any{1}, "$slice": "1"}}}, nil, []string{"$slice", "integer"}},
		{"$push $slice fraction", D{"$push": D{"a": D{"$each": []any{1}, "$slice": 1.5}}}, nil, []string{"$slice"}},
		{"$push $position fraction", D{"$push": D{"a": D{"$each": []any{1}, "$position": 0.5}}}, nil, []string{"$position"}},
		{"$push $position huge", D{"$push": D{"a": D{"$each": []any{1}, "$position": uint64(math.MaxUint64)}}}, nil, []string{"$position"}},
		{"$push $sort 2", D{"$push": D{"a": D{"$each": []any{1}, "$sort": 2}}}, nil, []string{"$sort", "1 or -1"}},
		{"$push $sort empty document", D{"$push": D{"a": D{"$each": []any{1}, "$sort": D{}}}}, nil, []string{"$sort"}},
		{"$push $sort bad field order", D{"$push": D{"a": D{"$each": []any{1}, "$sort": D{"s": 0}}}}, nil, []string{"$sort", `"s"`}},
		{"$push $sort bad field", D{"$push": D{"a": D{"$each": []any{1}, "$sort": D{"a..b": 1}}}}, nil, []string{"$sort"}},
		{"$push invalid value", D{"$push": D{"a": make(chan int)}}, []error{errs.ErrInvalidDocument}, []string{"$push", `"a"`}},
		{"$push invalid $each element", D{"$push": D{"a": D{"$each": []any{func() {}}}}}, []error{errs.ErrInvalidDocument}, nil},
		{"$addToSet other modifier", D{"$addToSet": D{"a": D{"$each": []any{1}, "$slice": 1}}}, nil, []string{"$addToSet", "$slice", "only $each"}},
		{"$addToSet modifiers without $each", D{"$addToSet": D{"a": D{"$position": 1}}}, nil, []string{"$each"}},
		{"$pop 2", D{"$pop": D{"a": 2}}, nil, []string{"$pop", "1 or -1"}},
		{"$pop 0", D{"$pop": D{"a": 0}}, nil, []string{"$pop", "1 or -1"}},
		{"$pop string", D{"$pop": D{"a": "1"}}, nil, []string{"$pop"}},
		{"$mul of a string", D{"$mul": D{"n": "2"}}, nil, []string{"$mul", `"n"`, "number"}},
		{"$mul of null", D{"$mul": D{"n": nil}}, nil, []string{"$mul"}},
		{"$min invalid value", D{"$min": D{"n": make(chan int)}}, []error{errs.ErrInvalidDocument}, []string{"$min"}},
		{"$setOnInsert invalid value", D{"$setOnInsert": D{"n": make(chan int)}}, []error{errs.ErrInvalidDocument}, nil},
		{"$pull bad condition", D{"$pull": D{"a": D{"$foo": 1}}}, []error{errs.ErrInvalidFilter}, []string{"$pull", "$foo"}},
		{"$pull mixed condition", D{"$pull": D{"a": D{"$gt": 1, "b": 1}}}, []error{errs.ErrInvalidFilter}, []string{"mixes"}},
		{"$pull invalid value", D{"$pull": D{"a": make(chan int)}}, []error{errs.ErrInvalidDocument}, nil},
		{"a pattern $pull beside a bad $push", D{"$pull": D{"a": regexp.MustCompile("x")}, "$push": D{"b": D{"$each": 1}}}, nil, []string{"$each"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := CompileUpdate(tt.update)
			require.Error(t, err)
			assert.Nil(t, u)
			assert.ErrorIs(t, err, errs.ErrInvalidUpdate)
			for _, want := range tt.want {
				assert.ErrorIs(t, err, want)
			}
			for _, s := range tt.text {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestUpdateOperatorApplyErrors(t *testing.T) {
	tests := []struct {
		name   string
		doc    D
		update D
		text   []string
	}{
		{"$push to a number", D{"a": 1}, D{"$push": D{"a": 2}}, []string{"$push", `"a"`, "array", "int"}},
		{"$push to a document", D{"a": D{}}, D{"$push": D{"a": 2}}, []string{"$push", "array"}},
		{"$push to binary", D{"a": []byte{1}}, D{"$push": D{"a": 2}}, []string{"array"}},
		{"$push through a scalar", D{"a": 1}, D{"$push": D{"a.b": 2}}, []string{"$push", `"a.b"`}},
		{"$push to null", D{"a": nil}, D{"$push": D{"a": 2}}, []string{"null"}},
		{"$addToSet to a string", D{"a": "x"}, D{"$addToSet": D{"a": "y"}}, []string{"$addToSet", "array", "string"}},
		{"$pull from a number", D{"a": 1}, D{"$pull": D{"a": 1}}, []string{"$pull", "array"}},
		{"$pop of a string", D{"a": "x"}, D{"$pop": D{"a": 1}}, []string{"$pop", "array"}},
		{"$pop of null", D{"a": nil}, D{"$pop": D{"a": -1}}, []string{"$pop", "null"}},
		{"$mul a string", D{"n": "x"}, D{"$mul": D{"n": 2}}, []string{"$mul", `"n"`, "non-numeric"}},
		{"$mul an array", D{"n": []int{1}}, D{"$mul": D{"n": 2}}, []string{"$mul"}},
		{"$mul overflow", D{"n": int64(math.MaxInt64)}, D{"$mul": D{"n": 2}}, []string{"$mul", "overflow"}},
		{"$inc a string", D{"n": "x"}, D{"$inc": D{"n": 2}}, []string{"$inc"}},
		{"$min through a scalar", D{"a": 1}, D{"$min": D{"a.b": 2}}, []string{"$min"}},
		{"$rename from an array element", D{"a": []any{D{"b": 1}}}, D{"$rename": D{"a.0.b": "c"}}, []string{"$rename", "source", "array element"}},
		{"$rename from inside an array", D{"a": []any{1}}, D{"$rename": D{"a.0": "c"}}, []string{"source", "array element"}},
		{"$rename into an array element", D{"a": 1, "b": []any{D{}}}, D{"$rename": D{"a": "b.0.c"}}, []string{"$rename", "target", "array element"}},
		{"$rename into an array", D{"a": 1, "b": []any{}}, D{"$rename": D{"a": "b.x"}}, []string{"target", "array element"}},
		{"$rename through a scalar target", D{"a": 1, "b": 5}, D{"$rename": D{"a": "b.c"}}, []string{"$rename"}},
		{"an error in one operator undoes the others", D{"a": 1, "n": "x"}, D{"$set": D{"a": 2}, "$push": D{"n": 1}}, []string{"$push"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := CompileUpdate(tt.update)
			require.NoError(t, err)
			before := codec.CopyDocument(tt.doc)
			out, changed, err := u.Apply(tt.doc, testNow)
			require.Error(t, err)
			assert.ErrorIs(t, err, errs.ErrInvalidUpdate)
			assert.Nil(t, out)
			assert.False(t, changed)
			for _, s := range tt.text {
				assert.Contains(t, err.Error(), s)
			}
			assert.Equal(t, before, tt.doc, "a failed update changed its input")
		})
	}
}

// TestUpdateOperatorsShareNothing checks that values an update writes are
// copies: changing the result changes neither the update (applied again)
// nor the input.
func TestUpdateOperatorsShareNothing(t *testing.T) {
	u, err := CompileUpdate(D{
		"$push":        D{"p": D{"$each": []any{D{"x": 1}}}},
		"$addToSet":    D{"s": D{"y": []any{1}}},
		"$min":         D{"m": D{"z": 1}},
		"$setOnInsert": D{"o": D{"w": 1}},
	})
	require.NoError(t, err)
	first, _, err := u.ApplyInsert(D{}, testNow)
	require.NoError(t, err)
	vandalize(first)
	second, _, err := u.ApplyInsert(D{}, testNow)
	require.NoError(t, err)
	assert.Equal(t, D{"p": []any{D{"x": 1}}, "s": []any{D{"y": []any{1}}}, "m": D{"z": 1}, "o": D{"w": 1}}, second)
}
