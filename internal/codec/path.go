package codec

import (
	"strconv"
	"strings"
)

// PathValues returns the values a dotted path reaches in doc, as MongoDB
// resolves paths for queries and index keys: a path component descends into
// a nested document; on an array it descends into each element that is a
// document, and a numeric component also selects the element at that
// position. The values at the end of the path are returned as they are (an
// array is not expanded: callers that want its elements, such as multikey
// indexes and query matching, expand it). found is false when the path
// reaches nothing at all.
func PathValues(doc map[string]any, path string) (vals []any, found bool) {
	if !strings.Contains(path, ".") {
		v, ok := doc[path]
		if !ok {
			return nil, false
		}
		return []any{v}, true
	}
	vals = AppendPathValues(nil, doc, strings.Split(path, "."))
	return vals, len(vals) > 0
}

// AppendPathValues appends to out the values the path parts reach from v,
// descending into documents and across array elements, and returns out.
func AppendPathValues(out []any, v any, parts []string) []any {
	if len(parts) == 0 {
		return append(out, v)
	}
	if m, ok := AsDocument(v); ok {
		next, ok := m[parts[0]]
		if !ok {
			return out
		}
		return AppendPathValues(out, next, parts[1:])
	}
	elems, ok := ArrayElements(v)
	if !ok {
		return out
	}
	if i, err := strconv.Atoi(parts[0]); err == nil && i >= 0 && i < len(elems) {
		out = AppendPathValues(out, elems[i], parts[1:])
	}
	for _, e := range elems {
		if _, ok := AsDocument(e); ok {
			out = AppendPathValues(out, e, parts)
		}
	}
	return out
}

// GetPath returns the single value at a dotted path that descends only
// through nested documents (no arrays), as updates and projections address
// fields. ok is false when any component is missing.
func GetPath(doc map[string]any, path string) (any, bool) {
	cur := doc
	for {
		head, rest, more := strings.Cut(path, ".")
		v, ok := cur[head]
		if !ok {
			return nil, false
		}
		if !more {
			return v, true
		}
		m, ok := AsDocument(v)
		if !ok {
			return nil, false
		}
		cur, path = m, rest
	}
}
