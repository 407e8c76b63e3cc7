package query

import (
	"fmt"
	"math"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// Projection is a compiled MongoDB Projection: either the fields to keep
// (inclusion) or the fields to drop (exclusion).
type Projection struct {
	include bool     // true: keep only fields; false: drop fields
	fields  projTree // the projected paths
}

// projTree holds projected paths as a tree of components; a nil subtree
// marks the end of a path (the whole field is kept or dropped). No path is a
// prefix of another, so a leaf never needs children.
type projTree map[string]projTree

// CompileProjection compiles a MongoDB projection subset: inclusion
// ({a: 1, "b.c": 1}) or exclusion ({a: 0}) of dotted paths. Values are
// booleans or numbers of any kind (0 excludes, any other number includes, as
// in MongoDB; NaN is refused). _id is included by default and may be
// excluded in either mode ({_id: 0, a: 1}); {_id: 1} alone keeps only _id. A
// path inside _id ("_id.a") is projected like any other path. Mixing
// inclusion and exclusion (other than of _id), a path and its prefix ("a" and
// "a.b"), an empty path or component, or a component starting with '$' is an
// error wrapping errs.ErrInvalidOptions. A nil or empty projection compiles to nil
// (the whole document).
func CompileProjection(p map[string]any) (*Projection, error) {
	if len(p) == 0 {
		return nil, nil
	}
	p, err := codec.ExprDocument(p)
	if err != nil {
		return nil, fmt.Errorf("%w: projection: %w", errs.ErrInvalidOptions, err)
	}
	var (
		paths   []string
		idFlag  *bool // explicit _id setting
		include *bool // mode of the other paths
	)
	for _, k := range SortedKeys(p) {
		if _, err := splitFieldPath(k); err != nil {
			return nil, fmt.Errorf("%w: projection field %q: %v", errs.ErrInvalidOptions, k, err)
		}
		inc, err := projectionFlag(p[k])
		if err != nil {
			return nil, fmt.Errorf("%w: projection field %q: %v", errs.ErrInvalidOptions, k, err)
		}
		paths = append(paths, k)
		switch {
		case k == "_id":
			idFlag = &inc
		case include != nil && *include != inc:
			return nil, fmt.Errorf("%w: projection field %q: cannot mix inclusion and exclusion", errs.ErrInvalidOptions, k)
		default:
			include = &inc
		}
	}
	if a, b, ok := findPathConflict(paths); ok {
		return nil, fmt.Errorf("%w: projection paths %q and %q collide", errs.ErrInvalidOptions, a, b)
	}
	proj := &Projection{fields: projTree{}}
	if include == nil {
		include = idFlag // only _id given
	}
	proj.include = *include
	for _, path := range paths {
		if path != "_id" || *idFlag == proj.include {
			proj.fields.add(path)
		}
	}
	if proj.include && idFlag == nil && !projectsInsideID(paths) {
		proj.fields.add("_id")
	}
	return proj, nil
}

// projectionFlag reads a projection value: true to include, false to
// exclude.
func projectionFlag(v any) (bool, error) {
	v, err := codec.CloneValue(v, "")
	if err != nil {
		return false, fmt.Errorf("value must be 1, 0, true or false: %w", err)
	}
	if b, ok := v.(bool); ok {
		return b, nil
	}
	n, ok := ToNumber(v)
	if !ok || (n.Kind == 'f' && math.IsNaN(n.F)) {
		return false, fmt.Errorf("value must be 1, 0, true or false, not %v", v)
	}
	return n.Float() != 0, nil
}

// projectsInsideID reports whether a path inside _id is projected, which then
// decides what of _id is kept instead of the default whole _id.
func projectsInsideID(paths []string) bool {
	for _, p := range paths {
		if strings.HasPrefix(p, "_id.") {
			return true
		}
	}
	return false
}

// add inserts a dotted path.
func (t projTree) add(path string) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next := t[p]
		if next == nil {
			next = projTree{}
			t[p] = next
		}
		t = next
	}
	t[parts[len(parts)-1]] = nil
}

// Apply returns a new Document with only the projected fields. The result
// is always a deep copy that shares nothing with doc, so Apply may be given
// a stored document directly; a nil projection returns a deep copy of the
// whole document.
//
// As in MongoDB, a path continues through arrays into each element: an
// inclusion keeps the projected part of every document element (and of
// nested arrays) and drops the other elements; an exclusion removes the path
// from every document element and keeps the other elements. An included
// path under a document that lacks it leaves an empty document; under a
// scalar it leaves nothing. Arrays a projected path goes through come back
// as []any.
func (p *Projection) Apply(doc codec.Document) codec.Document {
	switch {
	case p == nil:
		return codec.CopyDocument(doc)
	case p.include:
		return includeFields(doc, p.fields)
	}
	return excludeFields(doc, p.fields)
}

func includeFields(doc map[string]any, t projTree) codec.Document {
	out := codec.Document{}
	for k, sub := range t {
		v, ok := doc[k]
		if !ok {
			continue
		}
		if sub == nil {
			out[k] = codec.CopyValue(v)
			continue
		}
		if kept, ok := includeValue(v, sub); ok {
			out[k] = kept
		}
	}
	return out
}

// includeValue projects the subtree t of v: documents are projected, arrays
// projected element by element, and scalars have nothing to keep (ok is
// false).
func includeValue(v any, t projTree) (any, bool) {
	if m, ok := codec.AsDocument(v); ok {
		return includeFields(m, t), true
	}
	elems, ok := codec.ArrayElements(v)
	if !ok {
		return nil, false
	}
	out := []any{}
	for _, e := range elems {
		if kept, ok := includeValue(e, t); ok {
			out = append(out, kept)
		}
	}
	return out, true
}

func excludeFields(doc map[string]any, t projTree) codec.Document {
	out := make(codec.Document, len(doc))
	for k, v := range doc {
		sub, projected := t[k]
		switch {
		case !projected:
			out[k] = codec.CopyValue(v)
		case sub != nil:
			out[k] = excludeValue(v, sub)
		}
	}
	return out
}

// excludeValue removes the subtree t from v: from a document, from each
// element of an array; a scalar is kept whole.
func excludeValue(v any, t projTree) any {
	if m, ok := codec.AsDocument(v); ok {
		return excludeFields(m, t)
	}
	elems, ok := codec.ArrayElements(v)
	if !ok {
		return codec.CopyValue(v)
	}
	out := make([]any, len(elems))
	for i, e := range elems {
		out[i] = excludeValue(e, t)
	}
	return out
}
