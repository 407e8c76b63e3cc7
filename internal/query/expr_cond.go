package query

import "github.com/ttldb/ttldb/internal/codec"

// Conditional, boolean and variable operators: $and, $or, $not, $cond,
// $ifNull, $switch, $let.

func init() {
	registerOps(map[string]opCompiler{
		"$and":    compileAndOr,
		"$or":     compileAndOr,
		"$not":    fn(1, 1, func(_ string, v []any) (any, error) { return !Truthy(v[0]), nil }),
		"$cond":   compileCond,
		"$ifNull": compileIfNull,
		"$switch": compileSwitch,
		"$let":    compileLet,
	})
}

// andOrNode short-circuits: $and stops at the first false, $or at the
// first true.
type andOrNode struct {
	or   bool
	args []node
}

func compileAndOr(c *compiler, op string, arg any) (node, error) {
	args, err := c.operands(op, arg, 0, -1)
	if err != nil {
		return nil, err
	}
	return &andOrNode{or: op == "$or", args: args}, nil
}

func (n *andOrNode) eval(env *Env) (any, error) {
	for _, a := range n.args {
		v, err := a.eval(env)
		if err != nil {
			return nil, err
		}
		if Truthy(v) == n.or {
			return n.or, nil
		}
	}
	return !n.or, nil
}

// condNode is $cond: only the branch taken is evaluated.
type condNode struct{ ifN, thenN, elseN node }

func compileCond(c *compiler, op string, arg any) (node, error) {
	if _, isDoc := codec.AsDocument(arg); isDoc {
		m, err := c.namedOperands(op, arg, []string{"if", "then", "else"}, nil)
		if err != nil {
			return nil, err
		}
		return &condNode{m["if"], m["then"], m["else"]}, nil
	}
	args, err := c.operands(op, arg, 3, 3)
	if err != nil {
		return nil, err
	}
	return &condNode{args[0], args[1], args[2]}, nil
}

func (n *condNode) eval(env *Env) (any, error) {
	v, err := n.ifN.eval(env)
	if err != nil {
		return nil, err
	}
	if Truthy(v) {
		return n.thenN.eval(env)
	}
	return n.elseN.eval(env)
}

// ifNullNode is $ifNull: the first argument neither null nor missing,
// else the last.
type ifNullNode struct{ args []node }

func compileIfNull(c *compiler, op string, arg any) (node, error) {
	args, err := c.operands(op, arg, 2, -1)
	if err != nil {
		return nil, err
	}
	return &ifNullNode{args}, nil
}

func (n *ifNullNode) eval(env *Env) (any, error) {
	last := len(n.args) - 1
	for _, a := range n.args[:last] {
		v, err := a.eval(env)
		if err != nil {
			return nil, err
		}
		if !nullish(v) {
			return v, nil
		}
	}
	return n.args[last].eval(env)
}

// switchNode is $switch: the first branch whose case is true, else the
// default (an error if none is given and no case matched).
type switchNode struct {
	cases, thens []node
	dflt         node
}

func compileSwitch(c *compiler, op string, arg any) (node, error) {
	m, ok := codec.AsDocument(arg)
	if !ok {
		return nil, compileErr(op, "takes {branches: [...], default: <expression>}, not %v", arg)
	}
	n := &switchNode{}
	for k := range m {
		if k != "branches" && k != "default" {
			return nil, compileErr(op, "unknown argument %q", k)
		}
	}
	branches, ok := codec.ArrayElements(m["branches"])
	if !ok {
		return nil, compileErr(op, "branches must be an array, not %v", m["branches"])
	}
	for _, b := range branches {
		bm, ok := codec.AsDocument(b)
		if !ok || len(bm) != 2 || !hasKey(bm, "case") || !hasKey(bm, "then") {
			return nil, compileErr(op, "a branch is {case: <expression>, then: <expression>}, not %v", b)
		}
		cn, err := c.expr(bm["case"])
		if err != nil {
			return nil, err
		}
		tn, err := c.expr(bm["then"])
		if err != nil {
			return nil, err
		}
		n.cases, n.thens = append(n.cases, cn), append(n.thens, tn)
	}
	if d, ok := m["default"]; ok {
		dn, err := c.expr(d)
		if err != nil {
			return nil, err
		}
		n.dflt = dn
	}
	return n, nil
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func (n *switchNode) eval(env *Env) (any, error) {
	for i, cn := range n.cases {
		v, err := cn.eval(env)
		if err != nil {
			return nil, err
		}
		if Truthy(v) {
			return n.thens[i].eval(env)
		}
	}
	if n.dflt == nil {
		return nil, evalErr("$switch", "no branch matched and no default is given")
	}
	return n.dflt.eval(env)
}

// letNode is $let: its variables, evaluated in the enclosing scope, are
// bound while "in" is evaluated.
type letNode struct {
	slots []int
	vals  []node
	in    node
}

func compileLet(c *compiler, op string, arg any) (node, error) {
	m, ok := codec.AsDocument(arg)
	if !ok || len(m) != 2 || !hasKey(m, "vars") || !hasKey(m, "in") {
		return nil, compileErr(op, "takes {vars: {...}, in: <expression>}, not %v", arg)
	}
	vars, ok := codec.AsDocument(m["vars"])
	if !ok {
		return nil, compileErr(op, "vars must be a document, not %v", m["vars"])
	}
	n := &letNode{}
	names := SortedKeys(vars)
	for _, name := range names { // the values see the enclosing scope only
		vn, err := c.expr(vars[name])
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, vn)
	}
	for _, name := range names {
		slot, err := c.bind(name)
		if err != nil {
			return nil, compileErr(op, "%v", err)
		}
		defer c.unbind()
		n.slots = append(n.slots, slot)
	}
	in, err := c.expr(m["in"])
	if err != nil {
		return nil, err
	}
	n.in = in
	return n, nil
}

func (n *letNode) eval(env *Env) (any, error) {
	var buf [4]any
	vals := buf[:0]
	for _, vn := range n.vals {
		v, err := vn.eval(env)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	olds := make([]any, len(n.slots))
	for i, slot := range n.slots {
		olds[i] = setVar(env, slot, vals[i])
	}
	r, err := n.in.eval(env)
	for i, slot := range n.slots {
		env.vars[slot] = olds[i]
	}
	return r, err
}
