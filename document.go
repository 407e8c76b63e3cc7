package ttldb

import (
	"fmt"
	"math"
	"reflect"
	"time"
)

// Document is one stored record: a JSON-like tree of values keyed by field
// name. A document's values may be:
//
//   - nested documents: Document or map[string]any;
//   - arrays: []any, []Document, []map[string]any, and slices of the
//     scalars below ([]string, []int64, []time.Time, …);
//   - scalars: string, bool, nil, every Go integer and float kind,
//     time.Time (and *time.Time, stored as the time.Time it points to, or
//     nil), []byte and ObjectID.
//
// Anything else (channels, funcs, structs, other pointers, maps with other
// key types, cyclic maps) is rejected with ErrInvalidDocument naming the
// path. A collection copies a document on the way in and on the way out, so
// a caller may change a map after handing it over, or one that was handed
// back, without changing what is stored.
type Document = map[string]any

// DocumentError reports a value that cannot be stored, with the dotted path
// to it. It wraps ErrInvalidDocument.
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

// Unwrap lets errors.Is(err, ErrInvalidDocument) match.
func (e *DocumentError) Unwrap() error { return ErrInvalidDocument }

// maxDocumentDepth bounds nesting, as MongoDB's 100 levels does, so that a
// hostile document cannot exhaust the stack of the recursive walkers.
const maxDocumentDepth = 100

// cloneDocument validates doc and returns a deep copy that shares nothing
// with it, in stored form: *time.Time values become time.Time (or nil), and
// dates are in UTC without a monotonic clock reading. It is the decoding of
// the document's encoding, so it is exactly what a collection would store.
func cloneDocument(doc map[string]any) (Document, error) {
	enc, err := encodeNew(doc, nil)
	if err != nil {
		return nil, err
	}
	return decodeDocument(enc), nil
}

// copyDocument deep-copies a document already known to be valid (one that is
// stored). It cannot fail.
func copyDocument(doc Document) Document {
	out := make(Document, len(doc))
	for k, v := range doc {
		out[k] = copyValue(v)
	}
	return out
}

// copyValue deep-copies a stored (already validated) value.
func copyValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16,
		uint32, uint64, float32, float64, time.Time, ObjectID:
		return v
	case map[string]any:
		return copyDocument(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyValue(e)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i] = copyDocument(e)
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

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// asDocument returns v as a nested document if it is one.
func asDocument(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok
}

// arrayElements returns the elements of v if v is an array (any slice type a
// document may hold, except []byte, which is binary data), boxed as []any.
// The boolean is false for a non-array.
func arrayElements(v any) ([]any, bool) {
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

// isArray reports whether v is an array value (not []byte).
func isArray(v any) bool {
	switch v.(type) {
	case []any, []map[string]any, []time.Time, []string:
		return true
	case []byte, nil:
		return false
	}
	return reflect.ValueOf(v).Kind() == reflect.Slice
}

// isNaN reports whether v is a floating-point NaN.
func isNaN(v any) bool {
	switch x := v.(type) {
	case float64:
		return math.IsNaN(x)
	case float32:
		return math.IsNaN(float64(x))
	}
	return false
}
