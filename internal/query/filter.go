package query

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// maxFilterDepth bounds the nesting of $and/$or/$nor/$not, so that a hostile
// filter cannot exhaust the stack while compiling or matching.
const maxFilterDepth = 100

// Filter is a compiled query Filter. A nil *Filter matches everything.
// It is immutable once compiled (it holds copies of the Filter's values), so
// it is safe for concurrent use.
type Filter struct {
	clauses []clause       // all must match
	doc     map[string]any // the filter with its values in stored form
	hasExpr bool           // a $expr is among the clauses, at any depth
}

// Doc returns the filter document as compiled: the same operators, with
// every value in stored form (as codec.CloneValue returns it: *time.Time
// as time.Time or nil, named types as their kind, json.Number as its
// number, dates in UTC). The planner derives index bounds from it, so
// that planning and matching see the same values. It is shared: callers
// must not modify it. Nil for a nil or empty filter.
func (f *Filter) Doc() map[string]any {
	if f == nil || len(f.doc) == 0 {
		return nil
	}
	return f.doc
}

// clause is one top-level condition of a filter document: a field condition
// or a logical operator over sub-filters.
type clause interface {
	match(doc map[string]any) bool
}

// predicate is one operator applied to the values a field path reaches.
// vals holds those values ([nil] when the path reaches nothing, since a
// missing field compares as null); found says whether the path reached
// anything, which only $exists needs.
type predicate interface {
	test(vals []any, found bool) bool
}

// missingValues stands in for the values of a path that reaches nothing.
// It is never modified.
var missingValues = []any{nil}

// CompileFilter validates and compiles a filter document. A nil or empty
// filter matches every document. Values are validated as document values
// (codec.CloneValue: types, UTF-8, at most codec.MaxDepth levels of
// nesting, no cycles) and normalized to stored form once, here (see Doc);
// field paths must be valid UTF-8; logical operators ($and, $or, $nor,
// $not) nest at most maxFilterDepth deep. A $expr (at the top level or
// in $and/$or/$nor) is an aggregation expression compiled with zero
// ExprOptions (CompileFilterWith gives others). A $comment beside the conditions
// of a filter document (any storable value) is ignored, as in MongoDB.
// Errors wrap errs.ErrInvalidFilter and name the operator and path at
// fault.
func CompileFilter(f map[string]any) (*Filter, error) {
	f, err := exprDocument(f)
	if err != nil {
		return nil, err
	}
	return compileDocument(f, nesting{})
}

// CompileFilterWith compiles a filter whose $expr operators read opts
// ($$NOW, the aggregation's let variables); nil opts: the zero options.
func CompileFilterWith(f map[string]any, opts *ExprOptions) (*Filter, error) {
	f, err := exprDocument(f)
	if err != nil {
		return nil, err
	}
	return compileDocument(f, nesting{opts: opts})
}

// exprDocument reads the driver's containers (bson.D, bson.M, bson.A,
// bson.Raw) anywhere in a filter as Documents and arrays
// (codec.ExprDocument).
func exprDocument(f map[string]any) (map[string]any, error) {
	out, err := codec.ExprDocument(f)
	if err != nil {
		return nil, filterError("filter", "", "%v", err)
	}
	return out, nil
}

// CompileStoredFilter compiles a filter that a DB already holds (an
// index's partialFilterExpression or a validator, loaded from a snapshot
// or the log, or applied from a replicated op), which an earlier ttldb may
// have accepted under looser rules: it keeps their meaning rather than
// refusing a directory that opened before. The one difference from
// CompileFilter: a $size that is not a whole number (1.5, NaN, ±Inf),
// which ttldb before format version 2 accepted and matched nothing with,
// still matches nothing.
func CompileStoredFilter(f map[string]any) (*Filter, error) {
	f, err := exprDocument(f)
	if err != nil {
		return nil, err
	}
	return compileDocument(f, nesting{stored: true})
}

// Matches reports whether doc satisfies the filter. It never panics and is
// safe for concurrent use. A $expr whose expression fails to evaluate on
// doc (a type error) does not hold: callers that can fail the query, as
// MongoDB does, use MatchesErr.
func (f *Filter) Matches(doc map[string]any) bool {
	if f == nil {
		return true
	}
	for _, c := range f.clauses {
		if !c.match(doc) {
			return false
		}
	}
	return true
}

// MatchesErr is Matches that reports the error of a $expr that fails on
// doc (wrapping errs.ErrExpression), as MongoDB fails the query; the match
// is then false. A filter without $expr costs what Matches costs.
func (f *Filter) MatchesErr(doc map[string]any) (bool, error) {
	if f == nil || !f.hasExpr {
		return f.Matches(doc), nil
	}
	for _, c := range f.clauses {
		ok, err := matchClauseErr(c, doc)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// matchClauseErr is a clause's match with the errors of the $expr it
// holds: a $expr, or a logical operator over filters that hold one.
func matchClauseErr(c clause, doc map[string]any) (bool, error) {
	switch x := c.(type) {
	case exprClause:
		return x.matchErr(doc)
	case logicalClause:
		found := false // $or, $nor: a sub-filter matched
		for _, sub := range x.subs {
			ok, err := sub.MatchesErr(doc)
			if err != nil {
				return false, err
			}
			if x.op == "$and" && !ok {
				return false, nil
			}
			if x.op != "$and" && ok {
				found = true
				break
			}
		}
		switch x.op {
		case "$and":
			return true, nil
		case "$or":
			return found, nil
		}
		return !found, nil // $nor
	}
	return c.match(doc), nil
}

// filterError builds an error wrapping errs.ErrInvalidFilter that names the
// operator (or field) and path at fault.
func filterError(op, path, format string, args ...any) error {
	where := op
	if path != "" {
		where = fmt.Sprintf("%s at %q", op, path)
	}
	return fmt.Errorf("%w: %s: %s", errs.ErrInvalidFilter, where, fmt.Sprintf(format, args...))
}

// nesting is what compiling a part of a filter knows of where it stands:
// how many logical operators it is nested in, and whether the filter is a
// stored one (CompileStoredFilter), the options its $expr operators
// are compiled with, and whether it is inside an $elemMatch (where $expr
// is refused, as in MongoDB: it reads the whole document).
type nesting struct {
	depth       int
	stored      bool
	opts        *ExprOptions
	inElemMatch bool
}

// deeper is n one logical operator further in.
func (n nesting) deeper() nesting {
	n.depth++
	return n
}

// checkDepth refuses nesting deeper than maxFilterDepth.
func checkDepth(nx nesting, op, path string) error {
	if nx.depth > maxFilterDepth {
		return filterError(op, path, "nested deeper than %d levels", maxFilterDepth)
	}
	return nil
}

// compileDocument compiles one filter document; nx.depth counts the
// logical operators it is nested in. Keys are visited in sorted order so that the
// error reported for a filter with several faults is deterministic.
func compileDocument(f map[string]any, nx nesting) (*Filter, error) {
	out := &Filter{clauses: make([]clause, 0, len(f)), doc: make(map[string]any, len(f))}
	for _, key := range SortedKeys(f) {
		var (
			c    clause
			norm any
			err  error
		)
		if key == "$comment" {
			// As in MongoDB: a note of any (storable) value beside the
			// conditions, which matches and plans nothing.
			if _, err := filterValue(key, "", f[key]); err != nil {
				return nil, err
			}
			continue
		}
		switch {
		case key == "$expr":
			c, norm, err = compileExprClause(f[key], nx)
		case strings.HasPrefix(key, "$"):
			c, norm, err = compileLogical(key, f[key], nx)
		default:
			c, norm, err = compileField(key, f[key], nx)
		}
		if err != nil {
			return nil, err
		}
		out.clauses = append(out.clauses, c)
		out.doc[key] = norm
		switch x := c.(type) {
		case exprClause:
			out.hasExpr = true
		case logicalClause:
			for _, sub := range x.subs {
				out.hasExpr = out.hasExpr || sub.hasExpr
			}
		}
	}
	return out, nil
}

// logicalClause is a top-level $and, $or or $nor over sub-filters.
type logicalClause struct {
	op   string // "$and", "$or" or "$nor"
	subs []*Filter
}

func (c logicalClause) match(doc map[string]any) bool {
	switch c.op {
	case "$and":
		for _, s := range c.subs {
			if !s.Matches(doc) {
				return false
			}
		}
		return true
	case "$or":
		return c.anyMatches(doc)
	}
	return !c.anyMatches(doc) // $nor
}

func (c logicalClause) anyMatches(doc map[string]any) bool {
	for _, s := range c.subs {
		if s.Matches(doc) {
			return true
		}
	}
	return false
}

// compileLogical compiles a top-level $-key, which must be $and, $or or $nor
// ($comment is skipped before) with a non-empty array of filter documents. norm is the array of the
// compiled documents' Doc.
func compileLogical(op string, v any, nx nesting) (c clause, norm any, err error) {
	switch op {
	case "$and", "$or", "$nor":
	default:
		return nil, nil, filterError(op, "", "unknown top-level operator (supported: %s)", strings.Join(supportedTopLevelOperators, ", "))
	}
	if err := checkDepth(nx.deeper(), op, ""); err != nil {
		return nil, nil, err
	}
	elems, ok := codec.ArrayElements(v)
	if !ok || len(elems) == 0 {
		return nil, nil, filterError(op, "", "needs a non-empty array of documents, got %T", v)
	}
	lc := logicalClause{op: op, subs: make([]*Filter, len(elems))}
	docs := make([]any, len(elems))
	for i, e := range elems {
		m, ok := codec.AsDocument(e)
		if !ok {
			return nil, nil, filterError(op, "", "element %d is %T, not a document", i, e)
		}
		sub, err := compileDocument(m, nx.deeper())
		if err != nil {
			return nil, nil, err
		}
		lc.subs[i], docs[i] = sub, sub.doc
	}
	return lc, docs, nil
}

// fieldClause applies predicates (all must hold) to the values at a path.
type fieldClause struct {
	path  string
	preds []predicate
}

func (c fieldClause) match(doc map[string]any) bool {
	vals, found := codec.PathValues(doc, c.path)
	if !found {
		vals = missingValues
	}
	return allHold(c.preds, vals, found)
}

func allHold(preds []predicate, vals []any, found bool) bool {
	for _, p := range preds {
		if !p.test(vals, found) {
			return false
		}
	}
	return true
}

// compileField compiles {path: v}: an operator document, or else an implicit
// equality match. norm is v in stored form.
func compileField(path string, v any, nx nesting) (c clause, norm any, err error) {
	if err := checkPath(path); err != nil {
		return nil, nil, err
	}
	if p, isRe, err := compilePatternValue("$regex", path, v); isRe {
		// norm is the pattern itself: the planner and UpsertSeed see a
		// *regexp.Regexp and take no bounds and no value from it.
		return fieldClause{path: path, preds: []predicate{p}}, v, err
	}
	if m, ok := codec.AsDocument(v); ok && hasOperator(m) {
		preds, ops, err := compileOperators(path, m, nx)
		if err != nil {
			return nil, nil, err
		}
		return fieldClause{path: path, preds: preds}, ops, nil
	}
	eq, fv, err := compileEquals("$eq", path, v)
	if err != nil {
		return nil, nil, err
	}
	return fieldClause{path: path, preds: []predicate{eq}}, fv, nil
}

// checkPath refuses empty field names, dotted paths with an empty
// component ("a..b", ".a", "a."), which can never name a stored field, and
// paths that are not valid UTF-8, which no stored field has.
func checkPath(path string) error {
	if !utf8.ValidString(path) {
		return filterError("field", path, "field path is not valid UTF-8")
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return filterError("field", path, "empty field name in path")
		}
	}
	return nil
}

// hasOperator reports whether a field's value is an operator document (has
// a $-key) rather than a document to match by equality.
func hasOperator(m map[string]any) bool {
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

// compileOperators compiles an operator document ({$gt: 1, $lt: 5}); its
// operators are ANDed. ops is the operator document with its arguments in
// stored form ($options kept beside its $regex).
func compileOperators(path string, m map[string]any, nx nesting) (preds []predicate, ops map[string]any, err error) {
	folded, err := foldRegexOptions(path, m)
	if err != nil {
		return nil, nil, err
	}
	preds = make([]predicate, 0, len(m))
	ops = make(map[string]any, len(m))
	if o, ok := m["$options"]; ok {
		ops["$options"] = o
	}
	m = folded
	for _, op := range SortedKeys(m) {
		if !strings.HasPrefix(op, "$") {
			return nil, nil, filterError(op, path, "operator document mixes operators and field names")
		}
		p, arg, err := compileOperator(op, path, m[op], nx)
		if err != nil {
			return nil, nil, err
		}
		preds = append(preds, p)
		ops[op] = arg
	}
	return preds, ops, nil
}

// compileOperator compiles one operator; norm is its argument in stored
// form.
func compileOperator(op, path string, v any, nx nesting) (p predicate, norm any, err error) {
	switch op {
	case "$eq":
		return compileEquals(op, path, v)
	case "$ne":
		return negate(compileEquals(op, path, v))
	case "$gt", "$gte", "$lt", "$lte":
		return compileRange(op, path, v)
	case "$in":
		return compileIn(op, path, v)
	case "$nin":
		return negate(compileIn(op, path, v))
	case "$exists":
		return compileExists(op, path, v)
	case "$not":
		return compileNot(op, path, v, nx)
	}
	return compileMoreOperator(op, path, v, nx)
}

// filterValue validates a value given in a filter as a storable document
// value and copies it, so that the compiled filter shares no maps with the
// caller and sees *time.Time as time.Time.
func filterValue(op, path string, v any) (any, error) {
	out, err := codec.CloneValue(v, path)
	if err != nil {
		var de *codec.DocumentError
		if errors.As(err, &de) {
			return nil, filterError(op, de.Path, "invalid value: %s", de.Reason)
		}
		return nil, filterError(op, path, "invalid value: %v", err)
	}
	return out, nil
}

// equalsAny holds when a value at the path, or an element of an array value,
// equals one of values. It implements $eq (one value) and $in. A missing
// field equals null.
type equalsAny struct {
	values []any
}

func (p equalsAny) test(vals []any, _ bool) bool {
	return anyCandidate(vals, func(c any) bool {
		for _, v := range p.values {
			if Equal(c, v) {
				return true
			}
		}
		return false
	})
}

func compileEquals(op, path string, v any) (predicate, any, error) {
	fv, err := filterValue(op, path, v)
	if err != nil {
		return nil, nil, err
	}
	return equalsAny{values: []any{fv}}, fv, nil
}

func compileIn(op, path string, v any) (predicate, any, error) {
	if vals, patterns, _, err := splitPatterns(op, path, v); err != nil || len(patterns) > 0 {
		return compileInPatterns(op, path, vals, patterns, err)
	}
	fv, err := filterValue(op, path, v)
	if err != nil {
		return nil, nil, err
	}
	elems, ok := codec.ArrayElements(fv)
	if !ok {
		return nil, nil, filterError(op, path, "needs an array, got %T", v)
	}
	return equalsAny{values: elems}, fv, nil
}

// anyCandidate reports whether ok holds for one of vals or, for an array
// value, for one of its elements (one level deep, as in MongoDB).
func anyCandidate(vals []any, ok func(any) bool) bool {
	for _, v := range vals {
		if ok(v) {
			return true
		}
		if elems, isArr := codec.ArrayElements(v); isArr {
			for _, e := range elems {
				if ok(e) {
					return true
				}
			}
		}
	}
	return false
}

// rangePred implements $gt/$gte/$lt/$lte: it holds when a candidate of the
// same type rank as value compares as one of the accepted outcomes. NaN is
// only equal to NaN and neither less nor greater than anything, as in
// MongoDB's matcher.
type rangePred struct {
	value      any
	lt, eq, gt bool // accepted outcomes of compareValues(candidate, value)
}

func (p rangePred) test(vals []any, _ bool) bool {
	return anyCandidate(vals, p.holds)
}

func (p rangePred) holds(c any) bool {
	if RankOf(c) != RankOf(p.value) {
		return false
	}
	if codec.IsNaN(c) || codec.IsNaN(p.value) {
		return p.eq && codec.IsNaN(c) && codec.IsNaN(p.value)
	}
	switch r := Compare(c, p.value); {
	case r < 0:
		return p.lt
	case r == 0:
		return p.eq
	}
	return p.gt
}

func compileRange(op, path string, v any) (predicate, any, error) {
	fv, err := filterValue(op, path, v)
	if err != nil {
		return nil, nil, err
	}
	p := rangePred{value: fv}
	switch op {
	case "$gt":
		p.gt = true
	case "$gte":
		p.gt, p.eq = true, true
	case "$lt":
		p.lt = true
	case "$lte":
		p.lt, p.eq = true, true
	}
	return p, fv, nil
}

// existsPred implements $exists.
type existsPred struct {
	want bool
}

func (p existsPred) test(_ []any, found bool) bool { return found == p.want }

// compileExists accepts a bool or, as MongoDB does, a number (non-zero means
// true), of any type of those kinds.
func compileExists(op, path string, v any) (predicate, any, error) {
	fv, err := filterValue(op, path, v)
	if err != nil {
		return nil, nil, err
	}
	if b, ok := fv.(bool); ok {
		return existsPred{want: b}, fv, nil
	}
	if n, ok := ToNumber(fv); ok {
		return existsPred{want: n.Float() != 0}, fv, nil
	}
	return nil, nil, filterError(op, path, "needs a bool or a number, got %T", v)
}

// notPred negates the conjunction of its predicates. It implements $not,
// $ne and $nin; a missing field satisfies it whenever the inner predicates
// do not hold.
type notPred []predicate

func (p notPred) test(vals []any, found bool) bool { return !allHold(p, vals, found) }

// negate turns $eq into $ne and $in into $nin, passing errors through.
func negate(p predicate, norm any, err error) (predicate, any, error) {
	if err != nil {
		return nil, nil, err
	}
	return notPred{p}, norm, nil
}

// compileNot compiles {$not: {operators}}; a plain value, an empty document
// or a document of field names is an error.
func compileNot(op, path string, v any, nx nesting) (predicate, any, error) {
	if err := checkDepth(nx.deeper(), op, path); err != nil {
		return nil, nil, err
	}
	if p, isRe, err := compilePatternValue(op, path, v); isRe {
		return notPred{p}, v, err
	}
	m, ok := codec.AsDocument(v)
	if !ok || len(m) == 0 {
		return nil, nil, filterError(op, path, "needs a non-empty operator document, got %T", v)
	}
	if !hasOperator(m) {
		return nil, nil, filterError(op, path, "needs an operator document, not a document of fields")
	}
	preds, ops, err := compileOperators(path, m, nx.deeper())
	if err != nil {
		return nil, nil, err
	}
	return notPred(preds), ops, nil
}
