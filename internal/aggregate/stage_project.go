package aggregate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// The reshaping stages: $project, $addFields and its alias $set, $unset,
// $replaceRoot and its alias $replaceWith.

func init() {
	registerStages(map[string]stageCompiler{
		"$project":     compileProject,
		"$addFields":   compileAddFields,
		"$set":         compileAddFields,
		"$unset":       compileUnset,
		"$replaceRoot": compileReplaceRoot,
		"$replaceWith": compileReplaceRoot,
	})
}

// projNode is one level of a projection's tree: a field's leaf (include,
// exclude, or computed by expr) or its sub-fields (kids).
type projNode struct {
	kids  map[string]*projNode
	names []string // kids' names, in the order given
	incl  bool
	excl  bool
	expr  *query.Expr
}

func (n *projNode) leaf() bool { return n.kids == nil }

// hasComputed reports whether a computed field is in n's subtree.
func (n *projNode) hasComputed() bool {
	if n.expr != nil {
		return true
	}
	for _, k := range n.kids {
		if k.hasComputed() {
			return true
		}
	}
	return false
}

// projParser builds a projection tree from a specification.
type projParser struct {
	c         *compiler
	addFields bool // $addFields: every leaf is computed
	incl      []string
	excl      []string
	computed  []string
}

// add adds the fields of spec under node n (prefix is n's path).
func (p *projParser) add(n *projNode, prefix string, spec map[string]any) error {
	if len(spec) == 0 {
		return fmt.Errorf("field %q: an empty sub-specification is not valid", prefix)
	}
	for _, k := range query.SortedKeys(spec) {
		full := codec.JoinPath(prefix, k)
		if _, err := fieldPath("field", full); err != nil {
			return err
		}
		// Walk (making) the nodes of k's dotted components.
		cur := n
		kparts := strings.Split(k, ".")
		for _, part := range kparts[:len(kparts)-1] {
			cur = p.child(cur, part)
			if cur == nil {
				return fmt.Errorf("field %q: path collision with another field of the specification", full)
			}
		}
		last := kparts[len(kparts)-1]
		if _, dup := cur.kids[last]; dup && !p.nestedValue(spec[k]) {
			return fmt.Errorf("field %q: path collision with another field of the specification", full)
		}
		if err := p.value(cur, last, full, spec[k]); err != nil {
			return err
		}
	}
	return nil
}

// nestedValue reports whether v is a sub-specification (a document that
// is not an operator expression).
func (p *projParser) nestedValue(v any) bool {
	m, ok := codec.AsDocument(v)
	if !ok || len(m) == 0 {
		return false
	}
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return false
		}
	}
	return true
}

// child returns n's sub-node name, making it; nil when name is a leaf.
func (p *projParser) child(n *projNode, name string) *projNode {
	if n.kids == nil {
		n.kids = map[string]*projNode{}
	}
	k, ok := n.kids[name]
	if !ok {
		k = &projNode{kids: map[string]*projNode{}}
		n.kids[name] = k
		n.names = append(n.names, name)
		return k
	}
	if k.leaf() {
		return nil
	}
	return k
}

// value adds field name (full path full) of n with specification v.
func (p *projParser) value(n *projNode, name, full string, v any) error {
	if p.nestedValue(v) {
		k := p.child(n, name)
		if k == nil {
			return fmt.Errorf("field %q: path collision with another field of the specification", full)
		}
		m, _ := codec.AsDocument(v)
		return p.add(k, full, m)
	}
	leaf := &projNode{}
	if !p.addFields {
		switch x := v.(type) {
		case bool:
			leaf.incl, leaf.excl = x, !x
		default:
			if _, isNum := query.ToNumber(v); isNum {
				leaf.incl = query.Truthy(v)
				leaf.excl = !leaf.incl
			}
		}
		if m, ok := codec.AsDocument(v); ok && len(m) == 0 {
			return fmt.Errorf("field %q: an empty sub-specification is not valid", full)
		}
	}
	switch {
	case leaf.incl:
		p.incl = append(p.incl, full)
	case leaf.excl:
		p.excl = append(p.excl, full)
	default:
		e, err := query.CompileExprWith(v, p.c.exprs)
		if err != nil {
			return fmt.Errorf("field %q: %w", full, err)
		}
		leaf.expr = e
		p.computed = append(p.computed, full)
	}
	if n.kids == nil {
		n.kids = map[string]*projNode{}
	}
	n.kids[name] = leaf
	n.names = append(n.names, name)
	return nil
}

// projection is a compiled $project, $addFields or $unset.
type projection struct {
	root    *projNode
	exclude bool // an exclusion projection (else inclusion or $addFields)
	add     bool // $addFields
}

// compileProjection parses spec for $project (addFields false) or
// $addFields.
func compileProjection(c *compiler, spec map[string]any, addFields bool) (*projection, error) {
	p := &projParser{c: c, addFields: addFields}
	root := &projNode{kids: map[string]*projNode{}}
	if err := p.add(root, "", spec); err != nil {
		return nil, err
	}
	if addFields {
		return &projection{root: root, add: true}, nil
	}
	// _id is the one field an inclusion projection may exclude, and an
	// exclusion projection include (it keeps it anyway).
	var excl, incl []string
	for _, f := range p.excl {
		if f != "_id" {
			excl = append(excl, f)
		}
	}
	for _, f := range p.incl {
		if f != "_id" || len(excl) == 0 {
			incl = append(incl, f)
		}
	}
	p.incl = incl
	switch {
	case len(excl) > 0 && len(p.incl) > 0:
		return nil, fmt.Errorf("field %q: cannot exclude a field in an inclusion projection (it includes %q)", excl[0], p.incl[0])
	case len(excl) > 0 && len(p.computed) > 0:
		return nil, fmt.Errorf("field %q: cannot compute a field in an exclusion projection (it excludes %q)", p.computed[0], excl[0])
	case len(p.incl) == 0 && len(p.computed) == 0:
		if id, ok := root.kids["_id"]; ok && id.incl {
			delete(root.kids, "_id")
			root.names = slices.DeleteFunc(root.names, func(n string) bool { return n == "_id" })
		}
		return &projection{root: root, exclude: true}, nil
	}
	if id, ok := root.kids["_id"]; !ok {
		root.kids["_id"] = &projNode{incl: true}
		root.names = append(root.names, "_id")
	} else if id.excl {
		delete(root.kids, "_id")
		root.names = slices.DeleteFunc(root.names, func(n string) bool { return n == "_id" })
	}
	return &projection{root: root}, nil
}

// apply reshapes doc, evaluating computed fields against env (whose
// $$ROOT and $$CURRENT are doc).
func (p *projection) apply(env *query.Env, doc Document) (Document, error) {
	switch {
	case p.exclude:
		return excludeDoc(p.root, doc), nil
	case p.add:
		return addFieldsDoc(env, p.root, doc)
	}
	return includeDoc(env, p.root, doc)
}

// includeDoc is an inclusion projection of one document level.
func includeDoc(env *query.Env, n *projNode, doc map[string]any) (Document, error) {
	out := make(Document, len(n.kids))
	for _, name := range n.names {
		k := n.kids[name]
		switch {
		case k.incl:
			if v, ok := doc[name]; ok {
				out[name] = v
			}
		case k.expr != nil:
			v, err := k.expr.Evaluate(env)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", name, err)
			}
			if !query.IsMissing(v) {
				out[name] = v
			}
		case !k.leaf():
			r, keep, err := includeValue(env, k, doc[name])
			if err != nil {
				return nil, err
			}
			if keep {
				out[name] = r
			}
		}
	}
	return out, nil
}

// includeValue projects a field's value through sub-tree n: into a
// document, into each element of an array; a scalar or missing value is
// left out unless n computes fields (it is then a document of those).
func includeValue(env *query.Env, n *projNode, v any) (any, bool, error) {
	if m, ok := codec.AsDocument(v); ok {
		d, err := includeDoc(env, n, m)
		return d, err == nil, err
	}
	if elems, ok := codec.ArrayElements(v); ok {
		out := make([]any, 0, len(elems))
		for _, e := range elems {
			r, keep, err := includeValue(env, n, e)
			if err != nil {
				return nil, false, err
			}
			if keep {
				out = append(out, r)
			}
		}
		return out, true, nil
	}
	if !n.hasComputed() {
		return nil, false, nil
	}
	d, err := includeDoc(env, n, nil)
	return d, err == nil, err
}

// excludeDoc is an exclusion projection of one document level.
func excludeDoc(n *projNode, doc map[string]any) Document {
	out := make(Document, len(doc))
	for k, v := range doc {
		out[k] = v
	}
	for _, name := range n.names {
		k := n.kids[name]
		if k.excl {
			delete(out, name)
			continue
		}
		if v, ok := doc[name]; ok && !k.leaf() {
			out[name] = excludeValue(k, v)
		}
	}
	return out
}

func excludeValue(n *projNode, v any) any {
	if m, ok := codec.AsDocument(v); ok {
		return excludeDoc(n, m)
	}
	if elems, ok := codec.ArrayElements(v); ok {
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = excludeValue(n, e)
		}
		return out
	}
	return v
}

// addFieldsDoc sets $addFields' computed fields of one document level
// (a missing result, $$REMOVE, removes the field).
func addFieldsDoc(env *query.Env, n *projNode, doc map[string]any) (Document, error) {
	out := make(Document, len(doc)+len(n.kids))
	for k, v := range doc {
		out[k] = v
	}
	for _, name := range n.names {
		k := n.kids[name]
		if k.expr != nil {
			v, err := k.expr.Evaluate(env)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", name, err)
			}
			if query.IsMissing(v) {
				delete(out, name)
			} else {
				out[name] = v
			}
			continue
		}
		r, err := addFieldsValue(env, k, doc[name])
		if err != nil {
			return nil, err
		}
		out[name] = r
	}
	return out, nil
}

// addFieldsValue sets sub-tree n's fields into a value: a document, each
// element of an array; anything else becomes a document of them.
func addFieldsValue(env *query.Env, n *projNode, v any) (any, error) {
	if m, ok := codec.AsDocument(v); ok {
		return addFieldsDoc(env, n, m)
	}
	if elems, ok := codec.ArrayElements(v); ok {
		out := make([]any, len(elems))
		for i, e := range elems {
			r, err := addFieldsValue(env, n, e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return addFieldsDoc(env, n, nil)
}

// mapStage runs f over each document (nil from f: the document is
// dropped), with one Env for the stage.
func mapStage(f func(env *query.Env, d Document) (Document, error)) func(context.Context, *runner, Stream) Stream {
	return func(_ context.Context, _ *runner, in Stream) Stream {
		var env query.Env
		return streamFunc(func(ctx context.Context) (Document, error) {
			for {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				d, err := in.Next(ctx)
				if d == nil || err != nil {
					return nil, err
				}
				env.Reset(d)
				out, err := f(&env, d)
				if err != nil || out != nil {
					return out, err
				}
			}
		})
	}
}

func compileProject(c *compiler, st *Stage, arg any) error {
	m, err := asDoc("the specification", arg)
	if err != nil {
		return err
	}
	if len(m) == 0 {
		return fmt.Errorf("the specification must have at least one field")
	}
	p, err := compileProjection(c, m, false)
	if err != nil {
		return err
	}
	st.run = mapStage(p.apply)
	return nil
}

func compileAddFields(c *compiler, st *Stage, arg any) error {
	m, err := asDoc("the specification", arg)
	if err != nil {
		return err
	}
	if len(m) == 0 {
		st.run = mapStage(func(_ *query.Env, d Document) (Document, error) { return d, nil })
		return nil
	}
	p, err := compileProjection(c, m, true)
	if err != nil {
		return err
	}
	st.run = mapStage(p.apply)
	return nil
}

// compileUnset compiles {$unset: "a"} or {$unset: ["a", "b.c"]}: an
// exclusion projection.
func compileUnset(c *compiler, st *Stage, arg any) error {
	v, err := codec.ExprValue(arg)
	if err != nil {
		return err
	}
	var names []any
	if s, ok := v.(string); ok {
		names = []any{s}
	} else if elems, ok := codec.ArrayElements(v); ok && len(elems) > 0 {
		names = elems
	} else {
		return fmt.Errorf("the argument must be a field path or a non-empty array of them, not %v", v)
	}
	spec := make(map[string]any, len(names))
	for _, n := range names {
		s, ok := n.(string)
		if !ok {
			return fmt.Errorf("each field must be a string, not %s", query.TypeName(n))
		}
		if _, err := fieldPath("field", s); err != nil {
			return err
		}
		spec[s] = 0
	}
	p, err := compileProjection(c, spec, false)
	if err != nil {
		return err
	}
	st.run = mapStage(p.apply)
	return nil
}

// compileReplaceRoot compiles {$replaceRoot: {newRoot: expr}} and
// {$replaceWith: expr}: the expression's document replaces each
// document.
func compileReplaceRoot(c *compiler, st *Stage, arg any) error {
	exprArg := arg
	if st.Name == "$replaceRoot" {
		m, err := asDoc("the argument", arg)
		if err != nil {
			return err
		}
		for k := range m {
			if k != "newRoot" {
				return fmt.Errorf("unknown field %q (the argument is {newRoot: <expression>})", k)
			}
		}
		nr, ok := m["newRoot"]
		if !ok {
			return fmt.Errorf("missing field \"newRoot\"")
		}
		exprArg = nr
	}
	e, err := query.CompileExprWith(exprArg, c.exprs)
	if err != nil {
		return fmt.Errorf("newRoot: %w", err)
	}
	st.run = mapStage(func(env *query.Env, _ Document) (Document, error) {
		v, err := e.Evaluate(env)
		if err != nil {
			return nil, fmt.Errorf("newRoot: %w", err)
		}
		d, ok := docValue(v)
		if !ok {
			return nil, runErr("newRoot: the expression must give a document, not %s (%v)", query.TypeName(v), printable(v))
		}
		return d, nil
	})
	return nil
}

// printable is v for an error message (Missing shown as "missing").
func printable(v any) any {
	if query.IsMissing(v) {
		return "missing"
	}
	return v
}
