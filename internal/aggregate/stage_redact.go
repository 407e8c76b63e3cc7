package aggregate

import (
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

func init() {
	registerStages(map[string]stageCompiler{"$redact": compileRedact})
}

// compileRedact compiles {$redact: expr}: expr, evaluated at each level
// of a document ($$CURRENT the level, $$ROOT the document), gives
// $$KEEP (the level stays whole), $$PRUNE (it goes) or $$DESCEND (its
// fields stay, its sub-documents, in fields or arrays, are redacted in
// turn). A document pruned at the top is dropped.
func compileRedact(c *compiler, st *Stage, arg any) error {
	e, err := query.CompileExprWith(arg, c.exprs)
	if err != nil {
		return err
	}
	st.run = mapStage(func(env *query.Env, d Document) (Document, error) {
		return redactDoc(env, e, d, 0)
	})
	return nil
}

// redactDoc redacts one level; nil: pruned.
func redactDoc(env *query.Env, e *query.Expr, d map[string]any, depth int) (Document, error) {
	if depth > codec.MaxDepth {
		return nil, runErr("documents nested deeper than %d", codec.MaxDepth)
	}
	env.Current = d
	v, err := e.Evaluate(env)
	if err != nil {
		return nil, err
	}
	switch v {
	case query.RedactKeep:
		return d, nil
	case query.RedactPrune:
		return nil, nil
	case query.RedactDescend:
	default:
		return nil, runErr("the expression must give $$DESCEND, $$PRUNE or $$KEEP, not %v", printable(v))
	}
	out := make(Document, len(d))
	for k, x := range d {
		r, keep, err := redactValue(env, e, x, depth+1)
		if err != nil {
			return nil, err
		}
		if keep {
			out[k] = r
		}
	}
	return out, nil
}

// redactValue redacts a field's value: a document in turn, an array's
// documents (pruned ones removed) and nested arrays; other values stay.
func redactValue(env *query.Env, e *query.Expr, v any, depth int) (any, bool, error) {
	if m, ok := codec.AsDocument(v); ok {
		r, err := redactDoc(env, e, m, depth)
		return r, r != nil, err
	}
	elems, ok := codec.ArrayElements(v)
	if !ok {
		return v, true, nil
	}
	out := make([]any, 0, len(elems))
	for _, el := range elems {
		r, keep, err := redactValue(env, e, el, depth+1)
		if err != nil {
			return nil, false, err
		}
		if keep {
			out = append(out, r)
		}
	}
	return out, true, nil
}
