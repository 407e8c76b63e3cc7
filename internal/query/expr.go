package query

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// Expr is a compiled aggregation expression (MongoDB's expression
// language): field paths ("$a.b"), variables ($$ROOT, $$CURRENT, $$NOW,
// $$REMOVE, the aggregation's let variables, those $let, $map, $filter
// and $reduce bind), literals, {$literal: v}, documents and arrays of
// expressions, and the operators registered by the expr_*.go files
// ({$add: [...]}, {$cond: ...}...). An Expr is immutable and safe for
// concurrent use; each goroutine evaluates it with its own Env.
//
// Evaluation never changes the document it reads, and a result may share
// values with it (or with the expression's literals): copy a result
// before changing it or the document.
type Expr struct {
	n node
}

// node is one compiled expression. eval returns Missing for a missing
// value (a field path to a missing field, $$REMOVE); errors wrap
// errs.ErrExpression and name the operator.
type node interface {
	eval(env *Env) (any, error)
}

type missingType struct{}

// Missing is the value of a missing field: what a field path to an
// absent field, or $$REMOVE, evaluates to. A stage that sets a field to
// Missing leaves the field out.
var Missing any = missingType{}

// IsMissing reports whether v is Missing.
func IsMissing(v any) bool {
	_, ok := v.(missingType)
	return ok
}

// Env is what an expression is evaluated against: $$ROOT, $$CURRENT
// (the document field paths read), and the values of the variables $let,
// $map, $filter and $reduce bind while they evaluate their bodies. Reuse
// one Env across documents (Reset) to evaluate without allocating it.
// An Env is for one goroutine.
type Env struct {
	Root    any
	Current any
	vars    []any // by slot (compiler.bind)
}

// Reset points env at doc: $$ROOT and $$CURRENT.
func (env *Env) Reset(doc any) {
	env.Root, env.Current = doc, doc
}

// ExprOptions is what an expression may read besides its document: the
// aggregation's constants. The zero value knows $$NOW as the zero time
// (a caller that lets users write $$NOW sets Now from the DB's clock).
type ExprOptions struct {
	// Now is $$NOW (and $$CLUSTER_TIME's date): one instant for the whole
	// pipeline, read once from the DB's clock.
	Now time.Time
	// Vars are user variables ($$name), the aggregation's let option:
	// constants, already evaluated.
	Vars map[string]any
}

// MaxExprDepth bounds the nesting of an expression's documents, arrays
// and operators.
const MaxExprDepth = 100

// CompileExpr compiles an expression given as the driver gives it (a
// string, a document as Document, bson.D or bson.M, an array, a scalar),
// with zero ExprOptions. Errors wrap errs.ErrInvalidOptions.
func CompileExpr(v any) (*Expr, error) {
	return CompileExprWith(v, nil)
}

// CompileExprWith compiles an expression with opts (nil: the zero
// options). Errors wrap errs.ErrInvalidOptions and name the operator.
func CompileExprWith(v any, opts *ExprOptions) (*Expr, error) {
	v, err := codec.ExprValue(v)
	if err != nil {
		return nil, fmt.Errorf("%w: expression: %w", errs.ErrInvalidOptions, err)
	}
	if opts == nil {
		opts = &ExprOptions{}
	}
	c := &compiler{opts: opts}
	n, err := c.expr(v)
	if err != nil {
		return nil, err
	}
	return &Expr{n: n}, nil
}

// Evaluate evaluates e in env. The result is Missing when the expression
// gives nothing (a field path to a missing field, $$REMOVE); the error,
// if any, wraps errs.ErrExpression and names the operator that failed.
func (e *Expr) Evaluate(env *Env) (any, error) {
	return e.n.eval(env)
}

// Eval evaluates e against doc ($$ROOT and $$CURRENT). It returns false
// when the result is missing, and when evaluation fails (a change
// stream's pipeline then leaves the field out, as for a missing value).
func (e *Expr) Eval(doc codec.Document) (any, bool) {
	env := Env{Root: doc, Current: doc}
	v, err := e.n.eval(&env)
	if err != nil || IsMissing(v) {
		return nil, false
	}
	return v, true
}

// IsRootPath reports whether e is the field path path of the root ("$_id"
// for "_id"), unchanged.
func (e *Expr) IsRootPath(path string) bool {
	p, ok := e.n.(*pathNode)
	return ok && !p.root && p.slot < 0 && strings.Join(p.path, ".") == path
}

// FieldPath returns the dotted path of an expression that is a plain
// field path of $$CURRENT ("$a.b" gives "a.b", true).
func (e *Expr) FieldPath() (string, bool) {
	p, ok := e.n.(*pathNode)
	if !ok || p.root || p.slot >= 0 || len(p.path) == 0 {
		return "", false
	}
	return strings.Join(p.path, "."), true
}

// IsConstant reports whether e is a literal, and its value.
func (e *Expr) IsConstant() (any, bool) {
	if l, ok := e.n.(*literalNode); ok {
		return l.v, true
	}
	return nil, false
}

// compiler compiles one expression: the options, the variables bound
// where it is (their slots in Env.vars), the depth reached.
type compiler struct {
	opts  *ExprOptions
	scope []string // bound variable names; a name's slot is its index
	depth int
}

// opCompiler compiles the operand of one operator: {op: arg}.
type opCompiler func(c *compiler, op string, arg any) (node, error)

// exprOps holds the operators, registered by the expr_*.go files' init.
var exprOps = map[string]opCompiler{}

// registerOps adds operators; a name registered twice is a programming
// error.
func registerOps(ops map[string]opCompiler) {
	for name, f := range ops {
		if _, dup := exprOps[name]; dup {
			panic("query: expression operator registered twice: " + name)
		}
		exprOps[name] = f
	}
}

// IsExprOperator reports whether name is an expression operator ttldb
// knows ("$add").
func IsExprOperator(name string) bool {
	_, ok := exprOps[name]
	return ok
}

// compileErr is a compile error of operator op.
func compileErr(op, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", errs.ErrInvalidOptions, op, fmt.Sprintf(format, args...))
}

// evalErr is an evaluation error of operator op.
func evalErr(op, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", errs.ErrExpression, op, fmt.Sprintf(format, args...))
}

// expr compiles v, the driver's containers already converted
// (codec.ExprValue).
func (c *compiler) expr(v any) (node, error) {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > MaxExprDepth {
		return nil, fmt.Errorf("%w: expression nested deeper than %d", errs.ErrInvalidOptions, MaxExprDepth)
	}
	switch x := v.(type) {
	case string:
		if !strings.HasPrefix(x, "$") {
			return &literalNode{x}, nil
		}
		return c.path(x)
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if strings.HasPrefix(k, "$") {
					return c.operator(k, arg)
				}
			}
		}
		n := &documentNode{}
		for _, k := range SortedKeys(x) {
			switch {
			case strings.HasPrefix(k, "$"):
				return nil, fmt.Errorf("%w: expression: an operator (%s) must be its document's only field", errs.ErrInvalidOptions, k)
			case k == "" || strings.Contains(k, "."):
				return nil, fmt.Errorf("%w: expression field name %q: empty, or with a '.'", errs.ErrInvalidOptions, k)
			}
			sub, err := c.expr(x[k])
			if err != nil {
				return nil, err
			}
			n.names = append(n.names, k)
			n.exprs = append(n.exprs, sub)
		}
		return n, nil
	}
	if elems, ok := codec.ArrayElements(v); ok {
		n := &arrayNode{}
		for _, el := range elems {
			sub, err := c.expr(el)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, sub)
		}
		return n, nil
	}
	cl, err := codec.CloneValue(v, "")
	if err != nil {
		return nil, fmt.Errorf("%w: expression: %w", errs.ErrInvalidOptions, err)
	}
	return &literalNode{cl}, nil
}

// operator compiles {op: arg}.
func (c *compiler) operator(op string, arg any) (node, error) {
	if op == "$literal" {
		cl, err := codec.CloneValue(arg, "$literal")
		if err != nil {
			return nil, fmt.Errorf("%w: $literal: %w", errs.ErrInvalidOptions, err)
		}
		return &literalNode{cl}, nil
	}
	f, ok := exprOps[op]
	if !ok {
		return nil, fmt.Errorf("%w: unknown expression operator %s", errs.ErrInvalidOptions, op)
	}
	return f(c, op, arg)
}

// bind adds a variable to the scope; its slot is returned. unbind
// (deferred by the caller) removes it once its body is compiled.
func (c *compiler) bind(name string) (slot int, err error) {
	if err := checkVarName(name); err != nil {
		return 0, err
	}
	c.scope = append(c.scope, name)
	return len(c.scope) - 1, nil
}

func (c *compiler) unbind() { c.scope = c.scope[:len(c.scope)-1] }

// checkVarName enforces MongoDB's rule for user variable names: a
// lowercase letter (or a non-ASCII character) first, then letters,
// digits and '_'.
func checkVarName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty variable name", errs.ErrInvalidOptions)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r > 127 ||
			i > 0 && (r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
		if !ok {
			return fmt.Errorf("%w: variable name %q: it must start with a lowercase letter and hold only letters, digits and '_'", errs.ErrInvalidOptions, name)
		}
	}
	return nil
}

// CheckVarName checks a user variable's name (the let option's keys).
func CheckVarName(name string) error { return checkVarName(name) }

// The values of the $redact system variables.
const (
	RedactDescend = "descend"
	RedactPrune   = "prune"
	RedactKeep    = "keep"
)

// path compiles "$a.b", "$$var" and "$$var.a.b".
func (c *compiler) path(s string) (node, error) {
	rest := s[1:]
	n := &pathNode{slot: -1}
	if strings.HasPrefix(rest, "$") {
		name, sub, hasSub := strings.Cut(rest[1:], ".")
		if hasSub && sub == "" {
			return nil, fmt.Errorf("%w: expression %q: empty field path", errs.ErrInvalidOptions, s)
		}
		switch name {
		case "CURRENT":
		case "ROOT":
			n.root = true
		case "NOW", "REMOVE", "DESCEND", "PRUNE", "KEEP":
			if hasSub {
				return nil, fmt.Errorf("%w: expression %q: $$%s has no fields", errs.ErrInvalidOptions, s, name)
			}
			switch name {
			case "NOW":
				return &literalNode{c.opts.Now.UTC()}, nil
			case "REMOVE":
				return &literalNode{Missing}, nil
			case "DESCEND":
				return &literalNode{RedactDescend}, nil
			case "PRUNE":
				return &literalNode{RedactPrune}, nil
			default:
				return &literalNode{RedactKeep}, nil
			}
		default:
			slot := -1
			for i := len(c.scope) - 1; i >= 0; i-- {
				if c.scope[i] == name {
					slot = i
					break
				}
			}
			if slot < 0 {
				v, ok := c.opts.Vars[name]
				if !ok {
					return nil, fmt.Errorf("%w: expression %q: undefined variable $$%s", errs.ErrInvalidOptions, s, name)
				}
				if !hasSub {
					return &literalNode{v}, nil
				}
				return &pathNode{constant: v, hasConst: true, slot: -1, path: strings.Split(sub, ".")}, nil
			}
			n.slot = slot
		}
		if !hasSub {
			return n, nil
		}
		rest = sub
	}
	if rest == "" {
		return nil, fmt.Errorf("%w: expression %q: empty field path", errs.ErrInvalidOptions, s)
	}
	n.path = strings.Split(rest, ".")
	for _, p := range n.path {
		if p == "" || strings.HasPrefix(p, "$") {
			return nil, fmt.Errorf("%w: expression %q: field path component %q", errs.ErrInvalidOptions, s, p)
		}
	}
	return n, nil
}

// literalNode is a constant.
type literalNode struct{ v any }

func (n *literalNode) eval(*Env) (any, error) { return n.v, nil }

// pathNode reads a path of $$CURRENT, $$ROOT, a bound variable (slot)
// or a constant (a let variable's value).
type pathNode struct {
	root     bool
	slot     int // >= 0: a bound variable
	constant any
	hasConst bool
	path     []string
}

func (n *pathNode) eval(env *Env) (any, error) {
	var base any
	switch {
	case n.hasConst:
		base = n.constant
	case n.slot >= 0:
		base = env.vars[n.slot]
	case n.root:
		base = env.Root
	default:
		base = env.Current
	}
	if len(n.path) == 0 {
		return base, nil
	}
	if v, ok := pathValue(base, n.path); ok {
		return v, nil
	}
	return Missing, nil
}

// documentNode is {name: expr...}: a new document; a field whose value
// is missing is left out.
type documentNode struct {
	names []string
	exprs []node
}

func (n *documentNode) eval(env *Env) (any, error) {
	out := make(codec.Document, len(n.names))
	for i, e := range n.exprs {
		v, err := e.eval(env)
		if err != nil {
			return nil, err
		}
		if !IsMissing(v) {
			out[n.names[i]] = v
		}
	}
	return out, nil
}

// arrayNode is [expr...]: a new array; a missing element is null.
type arrayNode struct{ elems []node }

func (n *arrayNode) eval(env *Env) (any, error) {
	out := make([]any, len(n.elems))
	for i, e := range n.elems {
		v, err := e.eval(env)
		if err != nil {
			return nil, err
		}
		if !IsMissing(v) {
			out[i] = v
		}
	}
	return out, nil
}

// withVar evaluates body with slot bound to v, restoring the slot after.
func withVar(env *Env, slot int, v any, body node) (any, error) {
	for len(env.vars) <= slot {
		env.vars = append(env.vars, nil)
	}
	old := env.vars[slot]
	env.vars[slot] = v
	r, err := body.eval(env)
	env.vars[slot] = old
	return r, err
}

// setVar binds slot to v (growing env.vars); the caller restores it.
func setVar(env *Env, slot int, v any) (old any) {
	for len(env.vars) <= slot {
		env.vars = append(env.vars, nil)
	}
	old = env.vars[slot]
	env.vars[slot] = v
	return old
}

// operands reads an operator's arguments: an array of expressions, or a
// single expression that is not an array (one argument), counted
// between min and max (max < 0: no bound).
func (c *compiler) operands(op string, arg any, min, max int) ([]node, error) {
	elems, isArray := codec.ArrayElements(arg)
	if !isArray {
		elems = []any{arg}
	}
	if len(elems) < min || max >= 0 && len(elems) > max {
		switch {
		case min == max:
			return nil, compileErr(op, "takes %d argument(s), not %d", min, len(elems))
		case max < 0:
			return nil, compileErr(op, "takes at least %d argument(s), not %d", min, len(elems))
		}
		return nil, compileErr(op, "takes %d to %d arguments, not %d", min, max, len(elems))
	}
	out := make([]node, len(elems))
	for i, el := range elems {
		n, err := c.expr(el)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// namedOperands reads an operator's document of named arguments: each of
// required must be present, each other field must be in optional. Absent
// optional ones are nil in the result.
func (c *compiler) namedOperands(op string, arg any, required, optional []string) (map[string]node, error) {
	m, err := namedArgs(op, arg, required, optional)
	if err != nil {
		return nil, err
	}
	out := make(map[string]node, len(m))
	for _, k := range SortedKeys(m) {
		n, err := c.expr(m[k])
		if err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, nil
}

// namedArgs reads an operator's document of named arguments, uncompiled:
// each of required present, every other among optional (checked in key
// order, so that the error is deterministic).
func namedArgs(op string, arg any, required, optional []string) (map[string]any, error) {
	m, ok := codec.AsDocument(arg)
	if !ok {
		return nil, compileErr(op, "takes a document of named arguments, not %v", arg)
	}
	for _, k := range SortedKeys(m) {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			return nil, compileErr(op, "unknown argument %q", k)
		}
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			return nil, compileErr(op, "missing argument %q", k)
		}
	}
	return m, nil
}

// funcNode evaluates its arguments, then fn over their values (Missing
// included: fn decides what a missing argument means).
type funcNode struct {
	op   string
	args []node
	fn   func(op string, vals []any) (any, error)
}

func (n *funcNode) eval(env *Env) (any, error) {
	var buf [4]any
	vals := buf[:0]
	for _, a := range n.args {
		v, err := a.eval(env)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	return n.fn(n.op, vals)
}

// fn registers an operator taking between min and max (< 0: any number)
// positional arguments, computed by f from their values.
func fn(min, max int, f func(op string, vals []any) (any, error)) opCompiler {
	return func(c *compiler, op string, arg any) (node, error) {
		args, err := c.operands(op, arg, min, max)
		if err != nil {
			return nil, err
		}
		return &funcNode{op: op, args: args, fn: f}, nil
	}
}

// nullish reports whether v is null or missing (what most operators
// answer null for).
func nullish(v any) bool { return v == nil || IsMissing(v) }

// Truthy is MongoDB's truth of a value in an expression: false, null,
// missing and numeric zeros are false; everything else (empty strings
// and arrays included) is true.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil, missingType:
		return false
	case bool:
		return x
	}
	if n, ok := ToNumber(v); ok {
		return n.Float() != 0 || IsNaN(v)
	}
	return true
}

// IsNaN reports whether v is a floating-point NaN.
func IsNaN(v any) bool { return codec.IsNaN(v) }

// TypeName is the BSON type name of v, as $type gives it: "double",
// "string", "object", "array", "binData", "objectId", "bool", "date",
// "null", "regex", "int", "timestamp", "long", "decimal", "minKey",
// "maxKey", and "missing" for Missing.
func TypeName(v any) string {
	switch v.(type) {
	case missingType:
		return "missing"
	case nil:
		return "null"
	case float32, float64:
		return "double"
	case int8, int16, int32, uint8, uint16:
		return "int"
	case int, int64, uint32, uint, uint64:
		return "long"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case bool:
		return "bool"
	case time.Time:
		return "date"
	case codec.ObjectID:
		return "objectId"
	}
	switch RankOf(v) {
	case rankArray:
		return "array"
	case rankBinary:
		return "binData"
	case rankNumber:
		return "decimal"
	case rankTimestamp:
		return "timestamp"
	case rankRegex:
		return "regex"
	case rankMinKey:
		return "minKey"
	}
	return "maxKey"
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
