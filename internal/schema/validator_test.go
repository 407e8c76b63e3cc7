package schema

import (
	"encoding/json"
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

// mustCompile compiles {$jsonSchema: schema} or fails the test.
func mustCompile(t *testing.T, schema map[string]any) *Validator {
	t.Helper()
	v, err := CompileValidator(map[string]any{"$jsonSchema": schema})
	require.NoError(t, err)
	require.NotNil(t, v)
	return v
}

// requireFailure asserts that err is a *ValidationError wrapping
// errs.ErrValidation with the given field and rule, and returns it.
func requireFailure(t *testing.T, err error, field, rule string) *ValidationError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, errs.ErrValidation)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, field, ve.Field, "field")
	assert.Equal(t, rule, ve.Rule, "rule")
	return ve
}

// eventlogSchema is the "TTL and schema validation" example of MongoDB's
// manual.
func eventlogSchema() map[string]any {
	return map[string]any{
		"bsonType": "object",
		"required": []any{"lastModifiedDate"},
		"properties": map[string]any{
			"lastModifiedDate": map[string]any{
				"bsonType":    "date",
				"description": "Must be a valid date.",
			},
		},
	}
}

func TestValidatorReferenceExample(t *testing.T) {
	v := mustCompile(t, eventlogSchema())
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

	require.NoError(t, v.Validate(codec.Document{"lastModifiedDate": now, "msg": "x"}))

	ve := requireFailure(t, v.Validate(codec.Document{"msg": "x"}), "lastModifiedDate", "required")
	assert.Contains(t, ve.Reason, "missing")

	ve = requireFailure(t, v.Validate(codec.Document{"lastModifiedDate": "2024-05-01"}), "lastModifiedDate", "bsonType")
	assert.Equal(t, `want bsonType "date", got string (description: "Must be a valid date.")`, ve.Reason)
}

func TestValidatorNilAndEmpty(t *testing.T) {
	for _, in := range []map[string]any{nil, {}} {
		v, err := CompileValidator(in)
		require.NoError(t, err)
		assert.Nil(t, v)
		assert.NoError(t, v.Validate(codec.Document{"a": 1}))
		assert.NoError(t, v.Validate(nil))
	}
	// An empty schema accepts every document.
	v := mustCompile(t, map[string]any{})
	assert.NoError(t, v.Validate(codec.Document{"a": []any{1, "x"}}))
}

func TestValidatorBSONTypes(t *testing.T) {
	id := codec.NewObjectIDFromTime(time.Unix(1700000000, 0))
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		accept []any
		reject []any
	}{
		{"object", []any{codec.Document{}, map[string]any{"a": 1}}, []any{[]any{}, nil, "x", []map[string]any{{}}}},
		{"array", []any{[]any{}, []any{1, "x"}, []string{"a"}, []int{1}, []map[string]any{{}}, []time.Time{date}, []codec.ObjectID{id}},
			[]any{[]byte("x"), codec.Document{}, "x", nil}},
		{"string", []any{"", "x"}, []any{[]byte("x"), 1, nil, []string{"x"}}},
		{"date", []any{date, time.Time{}}, []any{"2024-01-01", int64(1704067200), nil}},
		{"bool", []any{true, false}, []any{0, "true", nil}},
		{"null", []any{nil}, []any{0, "", false, codec.Document{}}},
		{"objectId", []any{id, codec.ObjectID{}}, []any{id.String(), [12]byte(id), nil}},
		{"binData", []any{[]byte{}, []byte("x")}, []any{"x", []any{}, []int{1}, nil}},
		{"int", []any{0, int8(-1), int16(2), int32(math.MinInt32), int64(math.MaxInt32), uint8(3), uint32(math.MaxInt32), uint64(7)},
			[]any{int64(math.MaxInt32 + 1), int64(math.MinInt32 - 1), uint32(math.MaxUint32), float64(1), float32(1), "1", nil}},
		{"long", []any{0, int32(1), int64(math.MaxInt64), int64(math.MinInt64), uint(5), uint64(math.MaxInt64)},
			[]any{uint64(math.MaxInt64 + 1), float64(1), "1", nil}},
		{"double", []any{float32(1.5), 2.0, math.NaN(), math.Inf(-1)}, []any{1, int64(1), "1.5", nil}},
		{"number", []any{1, int8(1), int16(1), int32(1), int64(1), uint(1), uint8(1), uint16(1), uint32(1), uint64(math.MaxUint64),
			float32(1), 1.5, math.NaN()}, []any{"1", true, nil, []int{1}, []byte{1}}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			v := mustCompile(t, map[string]any{"properties": map[string]any{"f": map[string]any{"bsonType": tt.name}}})
			for _, x := range tt.accept {
				assert.NoError(t, v.Validate(codec.Document{"f": x}), "%T %v", x, x)
			}
			for _, x := range tt.reject {
				ve := requireFailure(t, v.Validate(codec.Document{"f": x}), "f", "bsonType")
				assert.Contains(t, ve.Reason, `want bsonType "`+tt.name+`"`)
			}
		})
	}
	for _, n := range typeNames {
		assert.True(t, covered[n], "bsonType %q has no test", n)
	}
}

func TestValidatorGotTypeName(t *testing.T) {
	v := mustCompile(t, map[string]any{"properties": map[string]any{"f": map[string]any{"bsonType": "string"}}})
	tests := []struct {
		val  any
		want string
	}{
		{int32(1), "int"},
		{int64(math.MaxInt64), "long"},
		{uint64(math.MaxUint64), "number"},
		{1.5, "double"},
		{[]int{1}, "array"},
		{codec.Document{}, "object"},
		{nil, "null"},
		{struct{}{}, "struct {}"},
	}
	for _, tt := range tests {
		ve := requireFailure(t, v.Validate(codec.Document{"f": tt.val}), "f", "bsonType")
		assert.True(t, strings.HasSuffix(ve.Reason, "got "+tt.want), "%q", ve.Reason)
	}
}

func TestValidatorTypeArrays(t *testing.T) {
	for _, types := range []any{[]any{"int", "null"}, []string{"int", "null"}} {
		v := mustCompile(t, map[string]any{"properties": map[string]any{"n": map[string]any{"bsonType": types}}})
		assert.NoError(t, v.Validate(codec.Document{"n": 1}))
		assert.NoError(t, v.Validate(codec.Document{"n": nil}))
		assert.NoError(t, v.Validate(codec.Document{}))
		ve := requireFailure(t, v.Validate(codec.Document{"n": "x"}), "n", "bsonType")
		assert.Equal(t, `want bsonType one of ["null", "int"], got string`, ve.Reason)
	}
}

func TestValidatorRootType(t *testing.T) {
	v := mustCompile(t, map[string]any{"bsonType": "object"})
	assert.NoError(t, v.Validate(codec.Document{}))
	assert.NoError(t, v.Validate(nil))

	v = mustCompile(t, map[string]any{"bsonType": "array"})
	ve := requireFailure(t, v.Validate(codec.Document{}), "", "bsonType")
	assert.Equal(t, `ttldb: document failed validation: bsonType: want bsonType "array", got object`, ve.Error())
}

func TestValidatorNestedProperties(t *testing.T) {
	v := mustCompile(t, map[string]any{
		"properties": map[string]any{
			"a": map[string]any{
				"bsonType": "object",
				"required": []any{"c"},
				"properties": map[string]any{
					"b": map[string]any{"bsonType": "string"},
					"d": map[string]any{"properties": map[string]any{"e": map[string]any{"bsonType": "bool"}}},
				},
			},
		},
	})
	tests := []struct {
		name        string
		doc         codec.Document
		field, rule string
	}{
		{"ok", codec.Document{"a": codec.Document{"b": "x", "c": 1, "d": codec.Document{"e": true}}}, "", ""},
		{"absent parent is not checked", codec.Document{}, "", ""},
		{"nested type", codec.Document{"a": codec.Document{"b": 1, "c": 1}}, "a.b", "bsonType"},
		{"nested required", codec.Document{"a": codec.Document{"b": "x"}}, "a.c", "required"},
		{"two levels", codec.Document{"a": codec.Document{"c": 1, "d": codec.Document{"e": "no"}}}, "a.d.e", "bsonType"},
		{"parent type", codec.Document{"a": "x"}, "a", "bsonType"},
		// Without bsonType "object", document keywords ignore non-documents.
		{"non-document ignored", codec.Document{"a": codec.Document{"c": 1, "d": 5}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Validate(tt.doc)
			if tt.rule == "" {
				assert.NoError(t, err)
				return
			}
			ve := requireFailure(t, err, tt.field, tt.rule)
			assert.Contains(t, ve.Error(), `field "`+tt.field+`": `+tt.rule+": ")
		})
	}
}

func TestValidatorRequiredNullIsPresent(t *testing.T) {
	v := mustCompile(t, map[string]any{"required": []string{"a", "b"}})
	assert.NoError(t, v.Validate(codec.Document{"a": nil, "b": 0}))
	requireFailure(t, v.Validate(codec.Document{"a": 1}), "b", "required")
	// The first missing name, in the order given, is reported.
	requireFailure(t, v.Validate(codec.Document{}), "a", "required")
}

func TestValidatorItems(t *testing.T) {
	v := mustCompile(t, map[string]any{
		"properties": map[string]any{
			"tags": map[string]any{"bsonType": "array", "items": map[string]any{"bsonType": "string"}},
			"pts": map[string]any{"items": map[string]any{
				"bsonType": "object",
				"required": []any{"x"},
				"properties": map[string]any{
					"x":    map[string]any{"bsonType": "number"},
					"seen": map[string]any{"items": map[string]any{"bsonType": "date"}},
				},
			}},
		},
	})
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		doc         codec.Document
		field, rule string
	}{
		{"ok []any", codec.Document{"tags": []any{"a", "b"}}, "", ""},
		{"ok []string", codec.Document{"tags": []string{"a"}}, "", ""},
		{"empty", codec.Document{"tags": []any{}}, "", ""},
		{"bad element", codec.Document{"tags": []any{"a", 1}}, "tags.1", "bsonType"},
		{"typed slice", codec.Document{"tags": []int{1}}, "tags.0", "bsonType"},
		{"not an array", codec.Document{"tags": "a"}, "tags", "bsonType"},
		{"items ignores non-arrays", codec.Document{"pts": "x"}, "", ""},
		{"items ignores binData", codec.Document{"pts": []byte{1}}, "", ""},
		{"documents ok", codec.Document{"pts": []map[string]any{{"x": 1, "seen": []time.Time{date}}}}, "", ""},
		{"document missing", codec.Document{"pts": []any{codec.Document{"x": 1}, codec.Document{}}}, "pts.1.x", "required"},
		{"nested items", codec.Document{"pts": []any{codec.Document{"x": 1, "seen": []any{date, "x"}}}}, "pts.0.seen.1", "bsonType"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Validate(tt.doc)
			if tt.rule == "" {
				assert.NoError(t, err)
				return
			}
			requireFailure(t, err, tt.field, tt.rule)
		})
	}
}

func TestValidatorAdditionalProperties(t *testing.T) {
	closed := mustCompile(t, map[string]any{
		"additionalProperties": false,
		"properties": map[string]any{
			"_id": map[string]any{},
			"a":   map[string]any{"additionalProperties": false, "properties": map[string]any{"b": map[string]any{}}},
		},
	})
	assert.NoError(t, closed.Validate(codec.Document{"_id": 1, "a": codec.Document{"b": 2}}))
	requireFailure(t, closed.Validate(codec.Document{"_id": 1, "zz": 1, "c": 2}), "c", "additionalProperties")
	requireFailure(t, closed.Validate(codec.Document{"a": codec.Document{"b": 1, "x": 2}}), "a.x", "additionalProperties")

	// As in MongoDB, _id must be listed like any other field.
	noID := mustCompile(t, map[string]any{"additionalProperties": false, "properties": map[string]any{"a": map[string]any{}}})
	requireFailure(t, noID.Validate(codec.Document{"_id": 1, "a": 1}), "_id", "additionalProperties")
	// With no properties at all, only the empty document passes.
	bare := mustCompile(t, map[string]any{"additionalProperties": false})
	assert.NoError(t, bare.Validate(codec.Document{}))
	requireFailure(t, bare.Validate(codec.Document{"a": 1}), "a", "additionalProperties")

	open := mustCompile(t, map[string]any{"additionalProperties": true, "properties": map[string]any{"a": map[string]any{}}})
	assert.NoError(t, open.Validate(codec.Document{"a": 1, "b": 2}))
}

func TestValidatorEnum(t *testing.T) {
	v := mustCompile(t, map[string]any{"properties": map[string]any{
		"n": map[string]any{"enum": []any{1.0, 2.0, "x", nil, codec.Document{"k": []any{1}}}},
	}})
	for _, ok := range []any{1, int64(2), float32(2), "x", nil, codec.Document{"k": []int{1}}} {
		assert.NoError(t, v.Validate(codec.Document{"n": ok}), "%v", ok)
	}
	for _, bad := range []any{3, "y", true, codec.Document{"k": []any{2}}, []any{1}} {
		ve := requireFailure(t, v.Validate(codec.Document{"n": bad}), "n", "enum")
		assert.Contains(t, ve.Reason, "5 enum values")
	}
}

func TestValidatorEnumIsCopied(t *testing.T) {
	allowed := []any{codec.Document{"k": "a"}}
	schema := map[string]any{"properties": map[string]any{"n": map[string]any{"enum": allowed}}, "required": []any{"n"}}
	v := mustCompile(t, schema)
	allowed[0].(codec.Document)["k"] = "b"
	schema["required"].([]any)[0] = "m"
	assert.NoError(t, v.Validate(codec.Document{"n": codec.Document{"k": "a"}}))
	requireFailure(t, v.Validate(codec.Document{"n": codec.Document{"k": "b"}}), "n", "enum")
}

func TestValidatorBounds(t *testing.T) {
	v := mustCompile(t, map[string]any{"properties": map[string]any{
		"n": map[string]any{"minimum": 0, "maximum": 10.5},
	}})
	for _, ok := range []any{0, uint8(0), 10.5, float32(10.5), int64(10), "not a number", nil, []int{99}} {
		assert.NoError(t, v.Validate(codec.Document{"n": ok}), "%v", ok)
	}
	tests := []struct {
		val  any
		rule string
	}{
		{-1, "minimum"},
		{-0.0001, "minimum"},
		{math.Inf(-1), "minimum"},
		{math.NaN(), "minimum"}, // NaN orders below every number
		{11, "maximum"},
		{uint64(math.MaxUint64), "maximum"},
		{math.Inf(1), "maximum"},
	}
	for _, tt := range tests {
		requireFailure(t, v.Validate(codec.Document{"n": tt.val}), "n", tt.rule)
	}
}

func TestValidatorDescriptionAndTitle(t *testing.T) {
	v := mustCompile(t, map[string]any{
		"title":       "root",
		"description": "Needs a.",
		"required":    []any{"a"},
		"properties": map[string]any{
			"a": map[string]any{"title": "A", "bsonType": "int"},
		},
	})
	ve := requireFailure(t, v.Validate(codec.Document{}), "a", "required")
	assert.Equal(t, `missing required field (description: "Needs a.")`, ve.Reason)
	// The failing schema's own description, or none.
	ve = requireFailure(t, v.Validate(codec.Document{"a": "x"}), "a", "bsonType")
	assert.Equal(t, `want bsonType "int", got string`, ve.Reason)
}

func TestValidatorJSONSchema(t *testing.T) {
	var in map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"$jsonSchema": {
		"bsonType": "object",
		"required": ["name", "tags"],
		"properties": {
			"name": {"bsonType": "string"},
			"age": {"bsonType": ["double", "null"], "minimum": 0, "maximum": 150},
			"tags": {"bsonType": "array", "items": {"enum": ["a", "b"]}}
		}
	}}`), &in))
	v, err := CompileValidator(in)
	require.NoError(t, err)
	assert.NoError(t, v.Validate(codec.Document{"name": "n", "age": 30.0, "tags": []string{"a"}}))
	requireFailure(t, v.Validate(codec.Document{"name": "n", "age": 200.0, "tags": []any{}}), "age", "maximum")
	requireFailure(t, v.Validate(codec.Document{"name": "n", "tags": []any{"a", "c"}}), "tags.1", "enum")
}

func TestValidationErrorFormat(t *testing.T) {
	e := &ValidationError{Field: "a.b", Rule: "bsonType", Reason: "why"}
	assert.Equal(t, `ttldb: document failed validation: field "a.b": bsonType: why`, e.Error())
	assert.ErrorIs(t, e, errs.ErrValidation)
	assert.NotErrorIs(t, e, errs.ErrInvalidOptions)

	e = &ValidationError{Rule: "bsonType", Reason: "why"}
	assert.Equal(t, `ttldb: document failed validation: bsonType: why`, e.Error())

	// A *ValidationError survives further wrapping.
	wrapped := errors.Join(errors.New("collection events"), e)
	var got *ValidationError
	require.ErrorAs(t, wrapped, &got)
	assert.Same(t, e, got)
}

func TestCompileValidatorErrors(t *testing.T) {
	prop := func(s any) map[string]any {
		return map[string]any{"$jsonSchema": map[string]any{"properties": map[string]any{"f": s}}}
	}
	tests := []struct {
		name string
		in   map[string]any
		path string // the schema path the error must name
	}{
		{"other top-level key", map[string]any{"$jsonSchema": map[string]any{}, "x": map[string]any{"$gt": 1}}, "validator x:"},
		{"query-style validator", map[string]any{"a": 1}, "validator a:"},
		{"$jsonSchema not a document", map[string]any{"$jsonSchema": "object"}, "validator $jsonSchema:"},
		{"$jsonSchema nil", map[string]any{"$jsonSchema": nil}, "validator $jsonSchema:"},
		{"unknown keyword", map[string]any{"$jsonSchema": map[string]any{"type": "object"}}, "$jsonSchema.type:"},
		{"unknown nested keyword", prop(map[string]any{"pattern": "x"}), "$jsonSchema.properties.f.pattern:"},
		{"bsonType unknown name", prop(map[string]any{"bsonType": "decimal"}), "$jsonSchema.properties.f.bsonType:"},
		{"bsonType not a string", prop(map[string]any{"bsonType": 1}), "$jsonSchema.properties.f.bsonType:"},
		{"bsonType empty array", prop(map[string]any{"bsonType": []any{}}), "$jsonSchema.properties.f.bsonType:"},
		{"bsonType array non-string", prop(map[string]any{"bsonType": []any{"int", 2}}), "$jsonSchema.properties.f.bsonType.1:"},
		{"bsonType array unknown", prop(map[string]any{"bsonType": []string{"int", "Int"}}), "$jsonSchema.properties.f.bsonType.1:"},
		{"bsonType duplicate", prop(map[string]any{"bsonType": []any{"int", "int"}}), "$jsonSchema.properties.f.bsonType.1:"},
		{"required not an array", prop(map[string]any{"required": "a"}), "$jsonSchema.properties.f.required:"},
		{"required empty", prop(map[string]any{"required": []any{}}), "$jsonSchema.properties.f.required:"},
		{"required non-string", prop(map[string]any{"required": []any{"a", 1}}), "$jsonSchema.properties.f.required.1:"},
		{"required duplicate", prop(map[string]any{"required": []string{"a", "a"}}), "$jsonSchema.properties.f.required.1:"},
		{"required empty name", prop(map[string]any{"required": []string{""}}), "$jsonSchema.properties.f.required.0:"},
		{"required dotted", prop(map[string]any{"required": []string{"a.b"}}), "$jsonSchema.properties.f.required.0:"},
		{"required dollar", prop(map[string]any{"required": []string{"$a"}}), "$jsonSchema.properties.f.required.0:"},
		{"properties not a document", prop(map[string]any{"properties": []any{}}), "$jsonSchema.properties.f.properties:"},
		{"property not a schema", prop(map[string]any{"properties": map[string]any{"g": "string"}}), "$jsonSchema.properties.f.properties.g:"},
		{"property nil", prop(nil), "$jsonSchema.properties.f:"},
		{"property dotted", prop(map[string]any{"properties": map[string]any{"g.h": map[string]any{}}}), "$jsonSchema.properties.f.properties.g.h:"},
		{"items not a schema", prop(map[string]any{"items": []any{map[string]any{}}}), "$jsonSchema.properties.f.items:"},
		{"items bad keyword", prop(map[string]any{"items": map[string]any{"bsonType": "x"}}), "$jsonSchema.properties.f.items.bsonType:"},
		{"additionalProperties schema", prop(map[string]any{"additionalProperties": map[string]any{}}), "$jsonSchema.properties.f.additionalProperties:"},
		{"description not a string", prop(map[string]any{"description": 1}), "$jsonSchema.properties.f.description:"},
		{"title not a string", prop(map[string]any{"title": nil}), "$jsonSchema.properties.f.title:"},
		{"enum not an array", prop(map[string]any{"enum": "a"}), "$jsonSchema.properties.f.enum:"},
		{"enum empty", prop(map[string]any{"enum": []any{}}), "$jsonSchema.properties.f.enum:"},
		{"enum unstorable", prop(map[string]any{"enum": []any{1, map[string]any{"k": make(chan int)}}}), "$jsonSchema.properties.f.enum.1.k:"},
		{"minimum not a number", prop(map[string]any{"minimum": "1"}), "$jsonSchema.properties.f.minimum:"},
		{"maximum NaN", prop(map[string]any{"maximum": math.NaN()}), "$jsonSchema.properties.f.maximum:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := CompileValidator(tt.in)
			require.Error(t, err)
			assert.Nil(t, v)
			assert.ErrorIs(t, err, errs.ErrInvalidOptions)
			assert.NotErrorIs(t, err, errs.ErrInvalidDocument)
			assert.Contains(t, err.Error(), tt.path)
		})
	}
}

// nestedSchema returns a schema with levels schemas below the root, each
// reached through properties (or items, every other level if mixItems).
func nestedSchema(levels int, mixItems bool) map[string]any {
	s := map[string]any{"bsonType": "int"}
	for i := range levels {
		if mixItems && i%2 == 1 {
			s = map[string]any{"items": s}
		} else {
			s = map[string]any{"properties": map[string]any{"a": s}}
		}
	}
	return s
}

func TestValidatorDepthLimit(t *testing.T) {
	for _, mix := range []bool{false, true} {
		v := mustCompile(t, nestedSchema(maxSchemaDepth, mix))
		assert.NoError(t, v.Validate(codec.Document{}))

		_, err := CompileValidator(map[string]any{"$jsonSchema": nestedSchema(maxSchemaDepth+1, mix)})
		require.ErrorIs(t, err, errs.ErrInvalidOptions)
		assert.Contains(t, err.Error(), "nested deeper than 100 levels")
	}
	// A hostile schema far beyond the limit fails fast instead of
	// exhausting the stack.
	_, err := CompileValidator(map[string]any{"$jsonSchema": nestedSchema(10_000, false)})
	require.ErrorIs(t, err, errs.ErrInvalidOptions)

	// The deepest accepted schema still validates at full depth.
	v := mustCompile(t, nestedSchema(maxSchemaDepth, false))
	var doc any = "not an int"
	for range maxSchemaDepth {
		doc = codec.Document{"a": doc}
	}
	ve := requireFailure(t, v.Validate(doc.(codec.Document)), strings.Repeat("a.", maxSchemaDepth-1)+"a", "bsonType")
	assert.Contains(t, ve.Reason, "got string")
}

func TestValidatorConcurrent(t *testing.T) {
	v := mustCompile(t, eventlogSchema())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1) // not wg.Go: the module's go directive is 1.24
		go func() {
			defer wg.Done()
			for j := range 200 {
				doc := codec.Document{"lastModifiedDate": time.Unix(int64(i*j), 0)}
				if j%2 == 1 {
					doc = codec.Document{"lastModifiedDate": j}
				}
				err := v.Validate(doc)
				assert.Equal(t, j%2 == 1, err != nil)
			}
		}()
	}
	wg.Wait()
}

func FuzzValidator(f *testing.F) {
	seeds := []struct{ schema, doc string }{
		{`{"$jsonSchema": {"bsonType": "object", "required": ["lastModifiedDate"], "properties": {"lastModifiedDate": {"bsonType": "date", "description": "Must be a valid date."}}}}`,
			`{"lastModifiedDate": "2024-01-01"}`},
		{`{"$jsonSchema": {"properties": {"a": {"bsonType": ["object", "null"], "additionalProperties": false, "properties": {"b": {"items": {"bsonType": "number", "minimum": 0, "maximum": 5}}}}}}}`,
			`{"a": {"b": [1, 2, 7], "c": 1}}`},
		{`{"$jsonSchema": {"properties": {"e": {"enum": [1, "x", null, {"k": [true]}], "title": "t"}}}}`, `{"e": {"k": [true]}}`},
		{`{"$jsonSchema": {"bsonType": "array"}}`, `{}`},
		{`{"$jsonSchema": {"bsonType": ["int", "int"]}}`, `{}`},
		{`{"$jsonSchema": {"required": []}}`, `{}`},
		{`{"$jsonSchema": {"items": [{}]}, "x": 1}`, `{"a": []}`},
		{`{}`, `{}`},
	}
	for _, s := range seeds {
		f.Add(s.schema, s.doc)
	}
	f.Fuzz(func(t *testing.T, schemaJSON, docJSON string) {
		var in, doc map[string]any
		if json.Unmarshal([]byte(schemaJSON), &in) != nil || json.Unmarshal([]byte(docJSON), &doc) != nil {
			return
		}
		v, err := CompileValidator(in)
		if err != nil {
			require.ErrorIs(t, err, errs.ErrInvalidOptions)
			require.Nil(t, v)
			return
		}
		err = v.Validate(doc)
		if err == nil {
			return
		}
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		require.ErrorIs(t, err, errs.ErrValidation)
		require.NotEmpty(t, ve.Rule)
		require.Equal(t, err, v.Validate(doc), "validation must be deterministic")
	})
}
