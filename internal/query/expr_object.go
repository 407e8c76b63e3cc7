package query

import (
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
)

// Object operators: $mergeObjects (the expression form), $getField,
// $setField and $unsetField. Their results are new documents that may
// share values with their operands.

func init() {
	registerOps(map[string]opCompiler{
		"$mergeObjects": fn(0, -1, evalMergeObjects),
		"$getField":     compileGetField,
		"$setField":     compileSetField,
		"$unsetField":   compileSetField,
	})
}

// evalMergeObjects merges documents left to right (a later field wins);
// null and missing operands are skipped.
func evalMergeObjects(op string, vals []any) (any, error) {
	out := codec.Document{}
	for _, v := range vals {
		if nullish(v) {
			continue
		}
		doc, ok := codec.AsDocument(v)
		if !ok {
			return nil, evalErr(op, "requires object inputs, but input is of type %s", TypeName(v))
		}
		for k, fv := range doc {
			out[k] = fv
		}
	}
	return out, nil
}

// constFieldArg reads the "field" argument of $getField and $setField: a
// constant string ({$literal: "$a"} for one that starts with '$').
func constFieldArg(op string, n node) (string, error) {
	if l, ok := n.(*literalNode); ok {
		if s, ok := l.v.(string); ok {
			return s, nil
		}
	}
	return "", compileErr(op, "requires 'field' to evaluate to a constant string")
}

// isOperatorDoc reports whether m is an operator expression ({$op: ...}).
func isOperatorDoc(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	for k := range m {
		return strings.HasPrefix(k, "$")
	}
	return false
}

// getFieldNode is $getField: a field of input ($$CURRENT by default),
// named as written (dots and '$' are part of the name). Null input gives
// null; missing input, or input that is not a document, gives missing.
type getFieldNode struct {
	field string
	input node // nil: $$CURRENT
}

func compileGetField(c *compiler, op string, arg any) (node, error) {
	if s, ok := arg.(string); ok && !strings.HasPrefix(s, "$") {
		return &getFieldNode{field: s}, nil
	}
	if m, ok := codec.AsDocument(arg); !ok || isOperatorDoc(m) {
		fn, err := c.expr(arg)
		if err != nil {
			return nil, err
		}
		f, err := constFieldArg(op, fn)
		if err != nil {
			return nil, err
		}
		return &getFieldNode{field: f}, nil
	}
	m, err := c.namedOperands(op, arg, []string{"field"}, []string{"input"})
	if err != nil {
		return nil, err
	}
	f, err := constFieldArg(op, m["field"])
	if err != nil {
		return nil, err
	}
	return &getFieldNode{field: f, input: m["input"]}, nil
}

func (n *getFieldNode) eval(env *Env) (any, error) {
	var v any = env.Current
	if n.input != nil {
		var err error
		if v, err = n.input.eval(env); err != nil {
			return nil, err
		}
	}
	if nullish(v) {
		return v, nil
	}
	doc, ok := codec.AsDocument(v)
	if !ok {
		return Missing, nil // as the server: no error for a non-document
	}
	if r, ok := doc[n.field]; ok {
		return r, nil
	}
	return Missing, nil
}

// setFieldNode is $setField (value $$REMOVE removes the field) and
// $unsetField.
type setFieldNode struct {
	op    string
	field string
	input node
	value node // nil: $unsetField
}

func compileSetField(c *compiler, op string, arg any) (node, error) {
	required := []string{"field", "input", "value"}
	if op == "$unsetField" {
		required = required[:2]
	}
	m, err := c.namedOperands(op, arg, required, nil)
	if err != nil {
		return nil, err
	}
	f, err := constFieldArg(op, m["field"])
	if err != nil {
		return nil, err
	}
	return &setFieldNode{op: op, field: f, input: m["input"], value: m["value"]}, nil
}

func (n *setFieldNode) eval(env *Env) (any, error) {
	v, err := n.input.eval(env)
	if err != nil {
		return nil, err
	}
	if nullish(v) {
		return nil, nil
	}
	doc, ok := codec.AsDocument(v)
	if !ok {
		return nil, evalErr(n.op, "requires 'input' to evaluate to type Object, not %s", TypeName(v))
	}
	val := Missing
	if n.value != nil {
		if val, err = n.value.eval(env); err != nil {
			return nil, err
		}
	}
	out := make(codec.Document, len(doc)+1)
	for k, fv := range doc {
		out[k] = fv
	}
	if IsMissing(val) {
		delete(out, n.field)
	} else {
		out[n.field] = val
	}
	return out, nil
}
