package query

import (
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
)

// ExprFields lists the top-level fields of $$CURRENT an expression (as
// given, before compilation) may read: the first component of each field
// path ("$a.b" reads a), of $$ROOT's and $$CURRENT's paths. all is true
// when it may read the whole document ($$ROOT or $$CURRENT alone, the
// operators that name a field without a path: $getField, $setField,
// $unsetField). The analysis is of the expression's text, so it can only
// over-count (a "$..." string that is an operator's plain argument); a
// reader that decodes only these fields sees every field the expression
// reads.
func ExprFields(v any, add func(field string)) (all bool) {
	v, err := codec.ExprValue(v)
	if err != nil {
		return true
	}
	return exprFields(v, add, 0)
}

func exprFields(v any, add func(string), depth int) bool {
	if depth > MaxExprDepth {
		return true
	}
	switch x := v.(type) {
	case string:
		return stringFields(x, add)
	case map[string]any:
		for k, sub := range x {
			switch k {
			case "$literal":
				continue
			case "$getField", "$setField", "$unsetField":
				return true
			}
			if exprFields(sub, add, depth+1) {
				return true
			}
		}
		return false
	}
	if elems, ok := codec.ArrayElements(v); ok {
		for _, el := range elems {
			if exprFields(el, add, depth+1) {
				return true
			}
		}
	}
	return false
}

// stringFields reads a string of an expression: a field path, a
// variable's path, or a literal.
func stringFields(s string, add func(string)) bool {
	switch {
	case !strings.HasPrefix(s, "$"):
		return false
	case strings.HasPrefix(s, "$$"):
		name, path, hasPath := strings.Cut(s[2:], ".")
		if name != "ROOT" && name != "CURRENT" {
			return false // another variable: bound to values, not the document
		}
		if !hasPath {
			return true
		}
		s = "$" + path
	}
	head, _, _ := strings.Cut(s[1:], ".")
	add(head)
	return false
}
