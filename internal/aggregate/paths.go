package aggregate

import (
	"fmt"
	"math"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

// withPath returns a copy of doc whose dotted path (parts) is v, copying
// the documents on the way (never changing doc or a document inside it);
// a value on the way that is not a document is replaced by one. v
// Missing removes the field.
func withPath(doc Document, parts []string, v any) Document {
	out := make(Document, len(doc)+1)
	for k, x := range doc {
		out[k] = x
	}
	if len(parts) == 1 {
		if query.IsMissing(v) {
			delete(out, parts[0])
		} else {
			out[parts[0]] = v
		}
		return out
	}
	sub, _ := codec.AsDocument(doc[parts[0]])
	if sub == nil && query.IsMissing(v) {
		return out
	}
	out[parts[0]] = withPath(sub, parts[1:], v)
	return out
}

// fieldPath checks a dotted field path a stage names (not an
// expression: no '$' prefix) and splits it.
func fieldPath(what, p string) ([]string, error) {
	if p == "" {
		return nil, fmt.Errorf("%s: an empty field path", what)
	}
	parts := strings.Split(p, ".")
	for _, c := range parts {
		if c == "" {
			return nil, fmt.Errorf("%s %q: an empty field name in the path", what, p)
		}
		if strings.HasPrefix(c, "$") {
			return nil, fmt.Errorf("%s %q: a field name may not start with '$'", what, p)
		}
	}
	return parts, nil
}

// positiveInt reads a whole number (of any numeric type, a double
// included if whole) between lo and hi.
func wholeNumber(what string, v any, lo, hi int64) (int64, error) {
	n, ok := query.ToNumber(v)
	if !ok {
		return 0, fmt.Errorf("%s must be a number, not %s", what, query.TypeName(v))
	}
	var i int64
	switch n.Kind {
	case 'i':
		i = n.I
	case 'f':
		if n.F != math.Trunc(n.F) || n.F < math.MinInt64 || n.F >= math.MaxInt64 {
			return 0, fmt.Errorf("%s must be a whole number, not %v", what, n.F)
		}
		i = int64(n.F)
	default:
		return 0, fmt.Errorf("%s is out of range: %v", what, v)
	}
	switch {
	case (i < lo || i > hi) && hi == math.MaxInt64:
		return 0, fmt.Errorf("%s must be at least %d, not %d", what, lo, i)
	case i < lo || i > hi:
		return 0, fmt.Errorf("%s must be between %d and %d, not %d", what, lo, hi, i)
	}
	return i, nil
}

// asDoc reads a stage argument that must be a document, with the
// driver's containers converted.
func asDoc(what string, arg any) (map[string]any, error) {
	v, err := codec.ExprValue(arg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	m, ok := codec.AsDocument(v)
	if !ok {
		return nil, fmt.Errorf("%s must be a document, not %s", what, query.TypeName(v))
	}
	return m, nil
}

// runErr is an error of a stage while it runs (a value of the wrong
// type...): it wraps errs.ErrExpression.
func runErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errs.ErrExpression, fmt.Sprintf(format, args...))
}

// docValue returns v as a document, for results that must be one.
func docValue(v any) (Document, bool) {
	m, ok := codec.AsDocument(v)
	return m, ok
}
