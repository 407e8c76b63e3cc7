package query

import (
	"errors"
	"fmt"
	"strings"

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
	clauses []clause // all must match
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
// filter matches every document. Errors wrap errs.ErrInvalidFilter and name the
// operator and path at fault.
func CompileFilter(f map[string]any) (*Filter, error) {
	return compileDocument(f, 0)
}

// Matches reports whether doc satisfies the filter. It never panics and is
// safe for concurrent use.
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

// filterError builds an error wrapping errs.ErrInvalidFilter that names the
// operator (or field) and path at fault.
func filterError(op, path, format string, args ...any) error {
	where := op
	if path != "" {
		where = fmt.Sprintf("%s at %q", op, path)
	}
	return fmt.Errorf("%w: %s: %s", errs.ErrInvalidFilter, where, fmt.Sprintf(format, args...))
}

// checkDepth refuses nesting deeper than maxFilterDepth.
func checkDepth(depth int, op, path string) error {
	if depth > maxFilterDepth {
		return filterError(op, path, "nested deeper than %d levels", maxFilterDepth)
	}
	return nil
}

// compileDocument compiles one filter document; depth counts the logical
// operators it is nested in. Keys are visited in sorted order so that the
// error reported for a filter with several faults is deterministic.
func compileDocument(f map[string]any, depth int) (*Filter, error) {
	out := &Filter{clauses: make([]clause, 0, len(f))}
	for _, key := range SortedKeys(f) {
		var (
			c   clause
			err error
		)
		if strings.HasPrefix(key, "$") {
			c, err = compileLogical(key, f[key], depth)
		} else {
			c, err = compileField(key, f[key], depth)
		}
		if err != nil {
			return nil, err
		}
		out.clauses = append(out.clauses, c)
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
// with a non-empty array of filter documents.
func compileLogical(op string, v any, depth int) (clause, error) {
	switch op {
	case "$and", "$or", "$nor":
	default:
		return nil, filterError(op, "", "unknown top-level operator (supported: %s)", strings.Join(supportedTopLevelOperators, ", "))
	}
	if err := checkDepth(depth+1, op, ""); err != nil {
		return nil, err
	}
	elems, ok := codec.ArrayElements(v)
	if !ok || len(elems) == 0 {
		return nil, filterError(op, "", "needs a non-empty array of documents, got %T", v)
	}
	c := logicalClause{op: op, subs: make([]*Filter, len(elems))}
	for i, e := range elems {
		m, ok := codec.AsDocument(e)
		if !ok {
			return nil, filterError(op, "", "element %d is %T, not a document", i, e)
		}
		sub, err := compileDocument(m, depth+1)
		if err != nil {
			return nil, err
		}
		c.subs[i] = sub
	}
	return c, nil
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
// equality match.
func compileField(path string, v any, depth int) (clause, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if p, isRe, err := compilePatternValue("$regex", path, v); isRe {
		return fieldClause{path: path, preds: []predicate{p}}, err
	}
	if m, ok := codec.AsDocument(v); ok && hasOperator(m) {
		preds, err := compileOperators(path, m, depth)
		if err != nil {
			return nil, err
		}
		return fieldClause{path: path, preds: preds}, nil
	}
	eq, err := compileEquals("$eq", path, v)
	if err != nil {
		return nil, err
	}
	return fieldClause{path: path, preds: []predicate{eq}}, nil
}

// checkPath refuses empty field names and dotted paths with an empty
// component ("a..b", ".a", "a."), which can never name a stored field.
func checkPath(path string) error {
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
// operators are ANDed.
func compileOperators(path string, m map[string]any, depth int) ([]predicate, error) {
	m, err := foldRegexOptions(path, m)
	if err != nil {
		return nil, err
	}
	preds := make([]predicate, 0, len(m))
	for _, op := range SortedKeys(m) {
		if !strings.HasPrefix(op, "$") {
			return nil, filterError(op, path, "operator document mixes operators and field names")
		}
		p, err := compileOperator(op, path, m[op], depth)
		if err != nil {
			return nil, err
		}
		preds = append(preds, p)
	}
	return preds, nil
}

func compileOperator(op, path string, v any, depth int) (predicate, error) {
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
		return compileNot(op, path, v, depth)
	}
	return compileMoreOperator(op, path, v, depth)
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

func compileEquals(op, path string, v any) (predicate, error) {
	fv, err := filterValue(op, path, v)
	if err != nil {
		return nil, err
	}
	return equalsAny{values: []any{fv}}, nil
}

func compileIn(op, path string, v any) (predicate, error) {
	if vals, patterns, _, err := splitPatterns(op, path, v); err != nil || len(patterns) > 0 {
		return compileInPatterns(op, path, vals, patterns, err)
	}
	if !codec.IsArray(v) {
		return nil, filterError(op, path, "needs an array, got %T", v)
	}
	fv, err := filterValue(op, path, v)
	if err != nil {
		return nil, err
	}
	elems, _ := codec.ArrayElements(fv)
	return equalsAny{values: elems}, nil
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

func compileRange(op, path string, v any) (predicate, error) {
	fv, err := filterValue(op, path, v)
	if err != nil {
		return nil, err
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
	return p, nil
}

// existsPred implements $exists.
type existsPred struct {
	want bool
}

func (p existsPred) test(_ []any, found bool) bool { return found == p.want }

// compileExists accepts a bool or, as MongoDB does, a number (non-zero means
// true).
func compileExists(op, path string, v any) (predicate, error) {
	if b, ok := v.(bool); ok {
		return existsPred{want: b}, nil
	}
	if n, ok := ToNumber(v); ok {
		return existsPred{want: n.Float() != 0}, nil
	}
	return nil, filterError(op, path, "needs a bool or a number, got %T", v)
}

// notPred negates the conjunction of its predicates. It implements $not,
// $ne and $nin; a missing field satisfies it whenever the inner predicates
// do not hold.
type notPred []predicate

func (p notPred) test(vals []any, found bool) bool { return !allHold(p, vals, found) }

// negate turns $eq into $ne and $in into $nin, passing errors through.
func negate(p predicate, err error) (predicate, error) {
	if err != nil {
		return nil, err
	}
	return notPred{p}, nil
}

// compileNot compiles {$not: {operators}}; a plain value, an empty document
// or a document of field names is an error.
func compileNot(op, path string, v any, depth int) (predicate, error) {
	if err := checkDepth(depth+1, op, path); err != nil {
		return nil, err
	}
	if p, isRe, err := compilePatternValue(op, path, v); isRe {
		return notPred{p}, err
	}
	m, ok := codec.AsDocument(v)
	if !ok || len(m) == 0 {
		return nil, filterError(op, path, "needs a non-empty operator document, got %T", v)
	}
	if !hasOperator(m) {
		return nil, filterError(op, path, "needs an operator document, not a document of fields")
	}
	preds, err := compileOperators(path, m, depth+1)
	if err != nil {
		return nil, err
	}
	return notPred(preds), nil
}
