package query

import (
	"fmt"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// Expr is a compiled aggregation expression, in the subset change-stream
// pipelines take: field paths ("$a.b"), the variables $$ROOT and
// $$CURRENT (with a path: "$$ROOT.a"), literals, {$literal: v}, and
// documents and arrays of expressions. Operator expressions ($add,
// $cond...) are refused with ErrInvalidOptions: the aggregation pipeline
// will add them here, on this shape. An Expr is immutable and safe for
// concurrent use.
type Expr struct {
	kind   exprKind
	path   []string // kindPath: the components after $ or $$ROOT
	lit    any      // kindLiteral
	fields []namedExpr
	elems  []*Expr
}

type exprKind uint8

const (
	kindLiteral exprKind = iota
	kindPath
	kindDocument
	kindArray
)

type namedExpr struct {
	name string
	expr *Expr
}

// MaxExprDepth bounds the nesting of an expression's documents and arrays.
const MaxExprDepth = 100

// CompileExpr compiles an expression given as the driver gives it (a
// string, a document as Document, bson.D or bson.M, an array, a scalar).
// Errors wrap errs.ErrInvalidOptions.
func CompileExpr(v any) (*Expr, error) {
	v, err := codec.ExprValue(v)
	if err != nil {
		return nil, fmt.Errorf("%w: expression: %w", errs.ErrInvalidOptions, err)
	}
	return compileExpr(v, 0)
}

func compileExpr(v any, depth int) (*Expr, error) {
	if depth > MaxExprDepth {
		return nil, fmt.Errorf("%w: expression nested deeper than %d", errs.ErrInvalidOptions, MaxExprDepth)
	}
	switch x := v.(type) {
	case string:
		if !strings.HasPrefix(x, "$") {
			return &Expr{kind: kindLiteral, lit: x}, nil
		}
		return compilePath(x)
	case map[string]any:
		if len(x) == 1 {
			if lit, ok := x["$literal"]; ok {
				c, err := codec.CloneValue(lit, "$literal")
				if err != nil {
					return nil, fmt.Errorf("%w: $literal: %w", errs.ErrInvalidOptions, err)
				}
				return &Expr{kind: kindLiteral, lit: c}, nil
			}
		}
		e := &Expr{kind: kindDocument}
		for _, k := range SortedKeys(x) {
			switch {
			case strings.HasPrefix(k, "$"):
				return nil, fmt.Errorf("%w: expression operator %s is not supported: ttldb's expressions are field paths, $$ROOT, $$CURRENT, literals, $literal, documents and arrays", errs.ErrInvalidOptions, k)
			case k == "" || strings.Contains(k, "."):
				return nil, fmt.Errorf("%w: expression field name %q: empty, or with a '.'", errs.ErrInvalidOptions, k)
			}
			sub, err := compileExpr(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			e.fields = append(e.fields, namedExpr{k, sub})
		}
		return e, nil
	}
	if elems, ok := codec.ArrayElements(v); ok {
		e := &Expr{kind: kindArray}
		for _, el := range elems {
			sub, err := compileExpr(el, depth+1)
			if err != nil {
				return nil, err
			}
			e.elems = append(e.elems, sub)
		}
		return e, nil
	}
	c, err := codec.CloneValue(v, "")
	if err != nil {
		return nil, fmt.Errorf("%w: expression: %w", errs.ErrInvalidOptions, err)
	}
	return &Expr{kind: kindLiteral, lit: c}, nil
}

// compilePath compiles "$a.b", "$$ROOT", "$$CURRENT" and their paths.
func compilePath(s string) (*Expr, error) {
	rest := s[1:]
	if strings.HasPrefix(rest, "$") {
		name, sub, _ := strings.Cut(rest[1:], ".")
		if name != "ROOT" && name != "CURRENT" {
			return nil, fmt.Errorf("%w: expression %q: unknown variable $$%s (ttldb knows $$ROOT and $$CURRENT)", errs.ErrInvalidOptions, s, name)
		}
		if sub == "" {
			if strings.HasSuffix(rest, ".") {
				return nil, fmt.Errorf("%w: expression %q: empty field path", errs.ErrInvalidOptions, s)
			}
			return &Expr{kind: kindPath}, nil
		}
		rest = sub
	}
	if rest == "" {
		return nil, fmt.Errorf("%w: expression %q: empty field path", errs.ErrInvalidOptions, s)
	}
	parts := strings.Split(rest, ".")
	for _, p := range parts {
		if p == "" || strings.HasPrefix(p, "$") {
			return nil, fmt.Errorf("%w: expression %q: field path component %q", errs.ErrInvalidOptions, s, p)
		}
	}
	return &Expr{kind: kindPath, path: parts}, nil
}

// IsRootPath reports whether e is the field path path of the root ("$_id"
// for "_id"), unchanged.
func (e *Expr) IsRootPath(path string) bool {
	return e.kind == kindPath && strings.Join(e.path, ".") == path
}

// Eval evaluates e against doc ($$ROOT and $$CURRENT). It returns false
// when the result is missing (a field path to a missing field). The
// result shares values with doc: copy it before changing either.
func (e *Expr) Eval(doc codec.Document) (any, bool) {
	switch e.kind {
	case kindLiteral:
		return e.lit, true
	case kindPath:
		if len(e.path) == 0 {
			return doc, true
		}
		return pathValue(doc, e.path)
	case kindDocument:
		out := make(codec.Document, len(e.fields))
		for _, f := range e.fields {
			if v, ok := f.expr.Eval(doc); ok {
				out[f.name] = v
			}
		}
		return out, true
	default:
		out := make([]any, len(e.elems))
		for i, el := range e.elems {
			if v, ok := el.Eval(doc); ok {
				out[i] = v
			} // a missing element is null, as in MongoDB
		}
		return out, true
	}
}

// pathValue follows an aggregation field path: through documents, and
// through arrays element by element (the result is then the array of what
// each element gives, missing ones left out). A number is a field name,
// never an array index.
func pathValue(v any, parts []string) (any, bool) {
	if len(parts) == 0 {
		return v, true
	}
	if m, ok := codec.AsDocument(v); ok {
		next, ok := m[parts[0]]
		if !ok {
			return nil, false
		}
		return pathValue(next, parts[1:])
	}
	if elems, ok := codec.ArrayElements(v); ok {
		out := make([]any, 0, len(elems))
		for _, el := range elems {
			if _, isArr := codec.ArrayElements(el); isArr {
				continue // MongoDB does not descend into nested arrays here
			}
			if r, ok := pathValue(el, parts); ok {
				out = append(out, r)
			}
		}
		return out, true
	}
	return nil, false
}

// SetPath sets the dotted path of doc to v, making the documents on the
// way (a value that is not a document on the way is replaced by one).
func SetPath(doc codec.Document, path string, v any) {
	insertNested(doc, strings.Split(path, "."), v)
}

// UnsetPath removes the dotted path from doc, if present.
func UnsetPath(doc codec.Document, path string) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := codec.AsDocument(doc[p])
		if !ok {
			return
		}
		doc = next
	}
	delete(doc, parts[len(parts)-1])
}
