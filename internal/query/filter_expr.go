package query

import (
	"fmt"
	"sync"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// exprClause is {$expr: <expression>}: it holds when the expression,
// evaluated with the document as $$ROOT and $$CURRENT, is truthy
// (Truthy). An expression that fails to evaluate (a type error, say)
// matches nothing in Matches, and is MatchesErr's error.
type exprClause struct {
	e *Expr
}

// filterEnvPool lends Envs to exprClause.match, so that matching allocates
// none per document while a Filter stays safe for concurrent use.
var filterEnvPool = sync.Pool{New: func() any { return new(Env) }}

func (c exprClause) match(doc map[string]any) bool {
	ok, err := c.matchErr(doc)
	return err == nil && ok
}

// matchErr evaluates the expression on doc: whether it is truthy, or the
// error it failed with.
func (c exprClause) matchErr(doc map[string]any) (bool, error) {
	env := filterEnvPool.Get().(*Env)
	env.Reset(doc)
	v, err := c.e.Evaluate(env)
	env.Reset(nil) // hold no document in the pool
	clear(env.vars)
	filterEnvPool.Put(env)
	if err != nil {
		return false, fmt.Errorf("$expr: %w", err)
	}
	return Truthy(v), nil
}

// compileExprClause compiles $expr's expression with nx's options. norm,
// what Doc shows, is the expression as given (in stored form when it
// is a storable value); the planner takes no bounds from it.
func compileExprClause(v any, nx nesting) (clause, any, error) {
	if nx.inElemMatch {
		return nil, nil, filterError("$expr", "", "cannot be used inside $elemMatch")
	}
	e, err := CompileExprWith(v, nx.opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: $expr: %w", errs.ErrInvalidFilter, err)
	}
	norm, err := codec.CloneValue(v, "$expr")
	if err != nil {
		norm = v
	}
	return exprClause{e: e}, norm, nil
}
