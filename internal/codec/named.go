package codec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// Named types (time.Duration, type Level string, type Tags []string) are
// stored as the unnamed type of their kind: a document holds values, not Go
// types, so a Duration comes back as the int64 it is, as encoding/json and
// MongoDB's drivers would store it. json.Number is the exception (see
// numberOf): it holds a number in text.

var (
	anyType    = reflect.TypeFor[any]()
	docType    = reflect.TypeFor[map[string]any]()
	arrayType  = reflect.TypeFor[[]any]()
	docsType   = reflect.TypeFor[[]map[string]any]()
	binaryType = reflect.TypeFor[[]byte]()
)

// kindTypes maps each scalar kind a document may hold to its unnamed type.
var kindTypes = map[reflect.Kind]reflect.Type{
	reflect.Bool:    reflect.TypeFor[bool](),
	reflect.Int:     reflect.TypeFor[int](),
	reflect.Int8:    reflect.TypeFor[int8](),
	reflect.Int16:   reflect.TypeFor[int16](),
	reflect.Int32:   reflect.TypeFor[int32](),
	reflect.Int64:   reflect.TypeFor[int64](),
	reflect.Uint:    reflect.TypeFor[uint](),
	reflect.Uint8:   reflect.TypeFor[uint8](),
	reflect.Uint16:  reflect.TypeFor[uint16](),
	reflect.Uint32:  reflect.TypeFor[uint32](),
	reflect.Uint64:  reflect.TypeFor[uint64](),
	reflect.Float32: reflect.TypeFor[float32](),
	reflect.Float64: reflect.TypeFor[float64](),
	reflect.String:  reflect.TypeFor[string](),
}

// underlying converts a value of a named type whose kind a document
// supports to the unnamed type of that kind: a scalar to its kind's type, a
// slice of such scalars (named or not: []Level) to the typed slice of the
// kind ([]uint8 kinds to []byte, binary data), a named []any,
// []map[string]any, []time.Time or []ObjectID to that type, and a map with
// string-kind keys and any values to map[string]any. ok is false for any
// other value (it is not storable).
func underlying(v any) (out any, ok bool) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil, false
	}
	t := rv.Type()
	if base, ok := kindTypes[t.Kind()]; ok {
		return rv.Convert(base).Interface(), true
	}
	switch t.Kind() {
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Elem() != anyType {
			return nil, false
		}
		if t.ConvertibleTo(docType) {
			return rv.Convert(docType).Interface(), true
		}
		if rv.IsNil() {
			return map[string]any(nil), true
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = it.Value().Interface()
		}
		return m, true
	case reflect.Slice:
		for _, target := range []reflect.Type{arrayType, docsType, binaryType,
			reflect.TypeFor[[]time.Time](), reflect.TypeFor[[]ObjectID]()} {
			if t.ConvertibleTo(target) {
				return rv.Convert(target).Interface(), true
			}
		}
		base, ok := kindTypes[t.Elem().Kind()]
		if !ok {
			return nil, false
		}
		target := reflect.SliceOf(base)
		if t.ConvertibleTo(target) {
			return rv.Convert(target).Interface(), true
		}
		if rv.IsNil() {
			return reflect.Zero(target).Interface(), true
		}
		s := reflect.MakeSlice(target, rv.Len(), rv.Len())
		for i := range rv.Len() {
			s.Index(i).Set(rv.Index(i).Convert(base))
		}
		return s.Interface(), true
	}
	return nil, false
}

// numberOf returns the number a json.Number holds: an int64 when it is an
// integer that fits, else a float64. Text that is not a JSON number, or a
// number beyond float64's range, is an error.
func numberOf(n json.Number) (any, error) {
	s := string(n)
	if !isJSONNumber(s) {
		return nil, fmt.Errorf("json.Number %q is not a number", s)
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("json.Number %q is out of the range of float64", s)
	}
	return f, nil
}

// isJSONNumber reports whether s is a number in JSON's grammar (RFC 8259,
// section 6), as encoding/json checks a json.Number it encodes.
func isJSONNumber(s string) bool {
	i := 0
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}
