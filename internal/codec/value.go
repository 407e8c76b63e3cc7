package codec

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/ttldb/ttldb/internal/errs"
)

// Document is a document as the engine handles it; the root package's
// Document (the same type) documents what it may hold.
type Document = map[string]any

// DocumentError reports a value that cannot be stored, with the dotted path
// to it. It wraps errs.ErrInvalidDocument.
type DocumentError struct {
	Path   string // dotted path of the bad value ("" for the document itself)
	Reason string // what is wrong with it
}

// Error names the path and what is wrong with the value.
func (e *DocumentError) Error() string {
	if e.Path == "" {
		return "ttldb: invalid document: " + e.Reason
	}
	return fmt.Sprintf("ttldb: invalid document: field %q: %s", e.Path, e.Reason)
}

// Unwrap lets errors.Is(err, errs.ErrInvalidDocument) match.
func (e *DocumentError) Unwrap() error { return errs.ErrInvalidDocument }

// MaxDepth bounds nesting, as MongoDB's 100 levels does, so that a
// hostile document cannot exhaust the stack of the recursive walkers.
const MaxDepth = 100

// CloneDocument validates doc and returns a deep copy that shares nothing
// with it, in stored form: *time.Time values become time.Time (or nil), and
// dates are in UTC without a monotonic clock reading. It is the decoding of
// the document's encoding, so it is exactly what a collection would store.
func CloneDocument(doc map[string]any) (Document, error) {
	enc, err := Encode(doc, nil)
	if err != nil {
		return nil, err
	}
	return Decode(enc), nil
}

// CopyDocument deep-copies a document already known to be valid (one that is
// stored). It cannot fail.
func CopyDocument(doc Document) Document {
	out := make(Document, len(doc))
	for k, v := range doc {
		out[k] = CopyValue(v)
	}
	return out
}

// CopyValue deep-copies a stored (already validated) value.
func CopyValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16,
		uint32, uint64, float32, float64, time.Time, ObjectID:
		return v
	case map[string]any:
		return CopyDocument(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CopyValue(e)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i] = CopyDocument(e)
		}
		return out
	case []byte:
		return append([]byte(nil), x...)
	}
	// A typed slice of scalars: a shallow copy is a deep one.
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		out := reflect.MakeSlice(rv.Type(), rv.Len(), rv.Len())
		reflect.Copy(out, rv)
		return out.Interface()
	}
	return v
}

// JoinPath returns the dotted path of field key under parent ("" for the
// document itself).
func JoinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// AsDocument returns v as a nested document if it is one.
func AsDocument(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok
}

// ArrayElements returns the elements of v if v is an array (any slice type a
// document may hold, except []byte, which is binary data), boxed as []any.
// The boolean is false for a non-array.
func ArrayElements(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []byte:
		return nil, false
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, true
	case []time.Time:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, true
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// IsArray reports whether v is an array value (not []byte).
func IsArray(v any) bool {
	switch v.(type) {
	case []any, []map[string]any, []time.Time, []string:
		return true
	case []byte, nil:
		return false
	}
	return reflect.ValueOf(v).Kind() == reflect.Slice
}

// IsNaN reports whether v is a floating-point NaN.
func IsNaN(v any) bool {
	switch x := v.(type) {
	case float64:
		return math.IsNaN(x)
	case float32:
		return math.IsNaN(float64(x))
	}
	return false
}
