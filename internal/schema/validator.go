package schema

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

// ValidationError reports why a document failed the collection's validator.
// It wraps errs.ErrValidation. When a nested schema fails, the error names the
// innermost keyword that failed and the full dotted path to the field.
type ValidationError struct {
	Field  string // dotted path of the failing field ("" for the document itself)
	Rule   string // the schema keyword that failed: "bsonType", "required", "items", …
	Reason string // human-readable detail, e.g. `want bsonType "date", got string`
}

// Error names the field (when there is one), the rule and the reason.
func (e *ValidationError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: %s: %s", errs.ErrValidation, e.Rule, e.Reason)
	}
	return fmt.Sprintf("%v: field %q: %s: %s", errs.ErrValidation, e.Field, e.Rule, e.Reason)
}

// Unwrap lets errors.Is(err, errs.ErrValidation) match.
func (e *ValidationError) Unwrap() error { return errs.ErrValidation }

// Validator is a compiled {$jsonSchema: …} collection Validator. It holds no
// reference to the document it was compiled from, so it is immutable and safe
// for concurrent use.
type Validator struct {
	root *schema
}

// schema is one compiled $jsonSchema (sub)schema. Zero fields mean "no
// constraint".
type schema struct {
	types       typeSet    // bsonType: allowed types; 0 = any
	required    []string   // required: field names, in the order given
	properties  []property // properties: sorted by name, for deterministic errors
	closed      bool       // additionalProperties: false
	items       *schema    // items: schema for every array element
	enum        []any      // enum: allowed values (deep copies)
	minimum     any        // minimum: a non-NaN number, or nil
	maximum     any        // maximum: a non-NaN number, or nil
	description string     // description: quoted in failure reasons
}

// property is one entry of a schema's properties keyword.
type property struct {
	name   string
	schema *schema
}

// maxSchemaDepth bounds schema nesting (through properties and items), as
// MaxDepth bounds documents, so that a hostile schema cannot exhaust
// the stack of the recursive compiler and checker.
const maxSchemaDepth = codec.MaxDepth

// CompileValidator compiles a validator document of the form
// {"$jsonSchema": {...}}. A nil or empty document means no validation and
// yields a nil *validator. A malformed schema is an error wrapping
// errs.ErrInvalidOptions that names the schema path at fault. The validator copies
// what it needs: later changes to v do not affect it.
func CompileValidator(v map[string]any) (*Validator, error) {
	if len(v) == 0 {
		return nil, nil
	}
	for _, k := range query.SortedKeys(v) {
		if k != "$jsonSchema" {
			return nil, schemaError(k, "unsupported validator key (only $jsonSchema is supported)")
		}
	}
	raw, ok := codec.AsDocument(v["$jsonSchema"])
	if !ok {
		return nil, schemaError("$jsonSchema", "must be a document, got %s", bsonTypeName(v["$jsonSchema"]))
	}
	root, err := compileSchema(raw, "$jsonSchema", 0)
	if err != nil {
		return nil, err
	}
	return &Validator{root: root}, nil
}

// Validate returns nil if doc satisfies the validator, or a *ValidationError
// naming the first failure found (checks run in a fixed order, so the same
// document always reports the same failure). A nil *validator accepts
// everything. doc should be in stored form (as CloneDocument returns it):
// a *time.Time, for instance, is not a date.
func (v *Validator) Validate(doc map[string]any) error {
	if v == nil {
		return nil
	}
	if e := v.root.check(doc, ""); e != nil {
		return e
	}
	return nil
}

// schemaError builds a compile error naming the schema path at fault.
func schemaError(path, format string, args ...any) error {
	return fmt.Errorf("%w: validator %s: %s", errs.ErrInvalidOptions, path, fmt.Sprintf(format, args...))
}

// compileSchema compiles one (sub)schema found at path, depth levels below
// the root. Keywords are compiled in sorted order so that a schema with
// several faults always reports the same one.
func compileSchema(m map[string]any, path string, depth int) (*schema, error) {
	if depth > maxSchemaDepth {
		return nil, schemaError(path, "schema nested deeper than %d levels", maxSchemaDepth)
	}
	s := &schema{}
	for _, k := range query.SortedKeys(m) {
		if err := s.compileKeyword(k, m[k], path+"."+k, depth); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// compileKeyword compiles one keyword of s; unknown keywords are errors so
// that a misspelt constraint is never silently ignored.
func (s *schema) compileKeyword(key string, val any, path string, depth int) error {
	var err error
	switch key {
	case "bsonType":
		s.types, err = compileTypes(val, path)
	case "required":
		s.required, err = compileRequired(val, path)
	case "properties":
		s.properties, err = compileProperties(val, path, depth)
	case "additionalProperties":
		allowed, ok := val.(bool)
		if !ok {
			return schemaError(path, "must be a bool, got %s", bsonTypeName(val))
		}
		s.closed = !allowed
	case "items":
		s.items, err = compileSubschema(val, path, depth)
	case "enum":
		s.enum, err = compileEnum(val, path)
	case "minimum":
		s.minimum, err = compileBound(val, path)
	case "maximum":
		s.maximum, err = compileBound(val, path)
	case "description":
		s.description, err = compileString(val, path)
	case "title":
		_, err = compileString(val, path)
	default:
		return schemaError(path, "unknown $jsonSchema keyword %q (supported: %s)", key, supportedKeywords)
	}
	return err
}

// supportedKeywords lists the keywords compileKeyword accepts, for errors.
const supportedKeywords = "bsonType, required, properties, additionalProperties, items, enum, minimum, maximum, description, title"

// compileSubschema compiles val, which must be a document, as a schema one
// level below depth.
func compileSubschema(val any, path string, depth int) (*schema, error) {
	m, ok := codec.AsDocument(val)
	if !ok {
		return nil, schemaError(path, "must be a schema document, got %s", bsonTypeName(val))
	}
	return compileSchema(m, path, depth+1)
}

func compileString(val any, path string) (string, error) {
	s, ok := val.(string)
	if !ok {
		return "", schemaError(path, "must be a string, got %s", bsonTypeName(val))
	}
	return s, nil
}

// compileTypes compiles a bsonType: one type name or a non-empty array of
// distinct names.
func compileTypes(val any, path string) (typeSet, error) {
	if name, ok := val.(string); ok {
		return lookupType(name, path)
	}
	elems, ok := codec.ArrayElements(val)
	if !ok || len(elems) == 0 {
		return 0, schemaError(path, "must be a type name or a non-empty array of type names")
	}
	var set typeSet
	for i, e := range elems {
		ep := path + "." + strconv.Itoa(i)
		name, ok := e.(string)
		if !ok {
			return 0, schemaError(ep, "must be a type name, got %s", bsonTypeName(e))
		}
		t, err := lookupType(name, ep)
		if err != nil {
			return 0, err
		}
		if set&t != 0 {
			return 0, schemaError(ep, "duplicate type name %q", name)
		}
		set |= t
	}
	return set, nil
}

func lookupType(name, path string) (typeSet, error) {
	if i := slices.Index(typeNames[:], name); i >= 0 {
		return 1 << i, nil
	}
	return 0, schemaError(path, "unknown type name %q (supported: %s)", name, strings.Join(typeNames[:], ", "))
}

// compileRequired compiles a non-empty array of distinct field names.
func compileRequired(val any, path string) ([]string, error) {
	elems, ok := codec.ArrayElements(val)
	if !ok || len(elems) == 0 {
		return nil, schemaError(path, "must be a non-empty array of field names")
	}
	names := make([]string, len(elems))
	for i, e := range elems {
		ep := path + "." + strconv.Itoa(i)
		name, ok := e.(string)
		if !ok {
			return nil, schemaError(ep, "must be a field name, got %s", bsonTypeName(e))
		}
		if err := checkFieldName(name, ep); err != nil {
			return nil, err
		}
		if slices.Contains(names[:i], name) {
			return nil, schemaError(ep, "duplicate field name %q", name)
		}
		names[i] = name
	}
	return names, nil
}

// checkFieldName refuses names no stored document can hold (see
// CloneDocument): a constraint on them could never apply, which is almost
// certainly a mistake such as a dotted path where nested properties were
// meant.
func checkFieldName(name, path string) error {
	switch {
	case name == "":
		return schemaError(path, "empty field name")
	case strings.HasPrefix(name, "$"):
		return schemaError(path, "field name %q may not start with '$'", name)
	case strings.Contains(name, "."):
		return schemaError(path, "field name %q may not contain '.' (use nested properties)", name)
	}
	return nil
}

// compileProperties compiles a document mapping field names to schemas.
func compileProperties(val any, path string, depth int) ([]property, error) {
	m, ok := codec.AsDocument(val)
	if !ok {
		return nil, schemaError(path, "must be a document of schemas, got %s", bsonTypeName(val))
	}
	props := make([]property, 0, len(m))
	for _, name := range query.SortedKeys(m) {
		pp := path + "." + name
		if err := checkFieldName(name, pp); err != nil {
			return nil, err
		}
		sub, err := compileSubschema(m[name], pp, depth)
		if err != nil {
			return nil, err
		}
		props = append(props, property{name: name, schema: sub})
	}
	return props, nil
}

// compileEnum compiles a non-empty array of storable values, deep-copied so
// that the caller may change its own.
func compileEnum(val any, path string) ([]any, error) {
	elems, ok := codec.ArrayElements(val)
	if !ok || len(elems) == 0 {
		return nil, schemaError(path, "must be a non-empty array")
	}
	out := make([]any, len(elems))
	for i, e := range elems {
		v, err := codec.CloneValue(e, path+"."+strconv.Itoa(i))
		if err != nil {
			// Report the encoder's path, which reaches inside the element.
			if de := (*codec.DocumentError)(nil); errors.As(err, &de) {
				return nil, schemaError(de.Path, "%s", de.Reason)
			}
			return nil, schemaError(path, "%v", err)
		}
		out[i] = v
	}
	return out, nil
}

// compileBound compiles a minimum or maximum: any number but NaN, which
// orders below every number and so would make a meaningless bound.
func compileBound(val any, path string) (any, error) {
	if _, ok := query.ToNumber(val); !ok || codec.IsNaN(val) {
		return nil, schemaError(path, "must be a number other than NaN, got %s", bsonTypeName(val))
	}
	return val, nil
}

// check validates v, found at path, against s. It runs the keywords in a
// fixed order: bsonType, enum, minimum, maximum, then (for documents)
// required, properties and additionalProperties, then (for arrays) items.
// As in JSON Schema, document keywords ignore non-documents, items ignores
// non-arrays and the bounds ignore non-numbers; bsonType is how a schema
// demands a type. The result is nil or a *ValidationError.
func (s *schema) check(v any, path string) *ValidationError {
	if s.types != 0 && typesOf(v)&s.types == 0 {
		return s.fail(path, "bsonType", "want bsonType %s, got %s", s.types, bsonTypeName(v))
	}
	if s.enum != nil && !slices.ContainsFunc(s.enum, func(e any) bool { return query.Equal(v, e) }) {
		return s.fail(path, "enum", "value is not one of the %d enum values", len(s.enum))
	}
	if e := s.checkBounds(v, path); e != nil {
		return e
	}
	if m, ok := codec.AsDocument(v); ok {
		return s.checkDocument(m, path)
	}
	if s.items != nil {
		elems, _ := codec.ArrayElements(v)
		for i, e := range elems {
			if err := s.items.check(e, path+"."+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkBounds applies minimum and maximum (both inclusive) to a number.
func (s *schema) checkBounds(v any, path string) *ValidationError {
	if _, ok := query.ToNumber(v); !ok {
		return nil
	}
	if s.minimum != nil && query.Compare(v, s.minimum) < 0 {
		return s.fail(path, "minimum", "%v is less than the minimum %v", v, s.minimum)
	}
	if s.maximum != nil && query.Compare(v, s.maximum) > 0 {
		return s.fail(path, "maximum", "%v is greater than the maximum %v", v, s.maximum)
	}
	return nil
}

// checkDocument applies required, properties and additionalProperties.
func (s *schema) checkDocument(m map[string]any, path string) *ValidationError {
	for _, name := range s.required {
		if _, ok := m[name]; !ok {
			return s.fail(codec.JoinPath(path, name), "required", "missing required field")
		}
	}
	for _, p := range s.properties {
		if v, ok := m[p.name]; ok {
			if err := p.schema.check(v, codec.JoinPath(path, p.name)); err != nil {
				return err
			}
		}
	}
	if s.closed {
		for _, k := range query.SortedKeys(m) {
			if !s.hasProperty(k) {
				return s.fail(codec.JoinPath(path, k), "additionalProperties", "field is not listed in properties")
			}
		}
	}
	return nil
}

func (s *schema) hasProperty(name string) bool {
	_, found := slices.BinarySearchFunc(s.properties, name, func(p property, n string) int {
		return strings.Compare(p.name, n)
	})
	return found
}

// fail builds the error for a keyword of s, quoting s's description as
// MongoDB reports it with a failure.
func (s *schema) fail(path, rule, format string, args ...any) *ValidationError {
	reason := fmt.Sprintf(format, args...)
	if s.description != "" {
		reason += " (description: " + strconv.Quote(s.description) + ")"
	}
	return &ValidationError{Field: path, Rule: rule, Reason: reason}
}

// typeSet is a set of bsonType names, one bit per entry of typeNames.
type typeSet uint16

// Bits of typeSet, in the order of typeNames. A value may belong to several:
// int32(1) is an int, a long and a number.
const (
	typeObject typeSet = 1 << iota
	typeArray
	typeString
	typeDate
	typeBool
	typeNull
	typeObjectID
	typeBinData
	typeInt
	typeLong
	typeDouble
	typeNumber
)

// typeNames are the supported bsonType names, most specific first among the
// numeric ones, so that the lowest bit of typesOf(v) names v's type.
var typeNames = [...]string{
	"object", "array", "string", "date", "bool", "null", "objectId", "binData",
	"int", "long", "double", "number",
}

// String formats the set as a bsonType is written: "date" or
// one of ["int", "null"].
func (t typeSet) String() string {
	var names []string
	for i, n := range typeNames {
		if t&(1<<i) != 0 {
			names = append(names, strconv.Quote(n))
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return "one of [" + strings.Join(names, ", ") + "]"
}

// typesOf returns every bsonType v satisfies (0 for a value no document can
// hold).
func typesOf(v any) typeSet {
	switch v.(type) {
	case nil:
		return typeNull
	case string:
		return typeString
	case bool:
		return typeBool
	case map[string]any:
		return typeObject
	case []byte:
		return typeBinData
	case codec.ObjectID:
		return typeObjectID
	case time.Time:
		return typeDate
	case float32, float64:
		return typeDouble | typeNumber
	}
	if n, ok := query.ToNumber(v); ok {
		t := typeNumber
		if n.Kind == 'i' {
			t |= typeLong
			if n.I >= math.MinInt32 && n.I <= math.MaxInt32 {
				t |= typeInt
			}
		}
		return t
	}
	if codec.IsArray(v) {
		return typeArray
	}
	return 0
}

// bsonTypeName names v's most specific bsonType, or its Go type if it has
// none.
func bsonTypeName(v any) string {
	t := typesOf(v)
	if t == 0 {
		return fmt.Sprintf("%T", v)
	}
	return typeNames[bits.TrailingZeros16(uint16(t))]
}
