package query

import (
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The array, evaluation and type operators: $elemMatch, $size, $all,
// $regex (regex.go), $type and $mod. They compile to predicates like the
// comparison operators in filter.go; none of them bounds an index, so the
// planner reads them as "no bounds" and applies them to every document it
// examines.

// supportedFieldOperators lists the operators a field condition may use, in
// the order an unknown operator's error names them.
var supportedFieldOperators = []string{
	"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin",
	"$exists", "$not", "$type", "$regex", "$options", "$mod",
	"$all", "$elemMatch", "$size",
}

// supportedTopLevelOperators lists the operators a filter document may hold
// at its top level.
var supportedTopLevelOperators = []string{"$and", "$or", "$nor", "$comment", "$expr"}

// compileMoreOperator compiles the operators of this file; any other
// operator is unknown, and the error lists the supported ones. norm is the
// argument in stored form, as compileOperator's (a pattern stays a
// *regexp.Regexp or a string).
func compileMoreOperator(op, path string, v any, nx nesting) (p predicate, norm any, err error) {
	switch op {
	case "$regex":
		return compileRegexOperator(op, path, v)
	case "$elemMatch":
		return compileElemMatch(op, path, v, nx)
	case "$all":
		return compileAll(op, path, v, nx)
	}
	var compile func(op, path string, v any) (predicate, error)
	switch op {
	case "$size":
		compile = func(op, path string, v any) (predicate, error) { return compileSize(op, path, v, nx.stored) }
	case "$type":
		compile = compileType
	case "$mod":
		compile = compileMod
	default:
		return nil, nil, filterError(op, path, "unknown operator (supported: %s)", strings.Join(supportedFieldOperators, ", "))
	}
	if norm, err = filterValue(op, path, v); err != nil {
		return nil, nil, err
	}
	p, err = compile(op, path, norm)
	return p, norm, err
}

// singleMatcher is a predicate that can test one value as it is, without
// looking into its elements if it is an array: $elemMatch's operator form
// tests each element of an array that way, as MongoDB does.
type singleMatcher interface {
	matchesSingle(v any) bool
}

func (p equalsAny) matchesSingle(v any) bool {
	for _, x := range p.values {
		if Equal(v, x) {
			return true
		}
	}
	return false
}

func (p existsPred) matchesSingle(any) bool { return p.want }

func (p notPred) matchesSingle(v any) bool { return !allMatchSingle(p, v) }

// anyOf holds when one of its predicates does: $in with patterns.
type anyOf []predicate

func (p anyOf) test(vals []any, found bool) bool {
	for _, q := range p {
		if q.test(vals, found) {
			return true
		}
	}
	return false
}

func (p anyOf) matchesSingle(v any) bool {
	for _, q := range p {
		if matchSingle(q, v) {
			return true
		}
	}
	return false
}

// allOf holds when all its predicates do: $all, and an $elemMatch's
// operators. An empty allOf matches nothing, as an empty $all does.
type allOf []predicate

func (p allOf) test(vals []any, found bool) bool {
	return len(p) > 0 && allHold(p, vals, found)
}

func (p allOf) matchesSingle(v any) bool { return len(p) > 0 && allMatchSingle(p, v) }

// matchSingle tests one value with p without expanding arrays where p
// supports that, else as a field holding v.
func matchSingle(p predicate, v any) bool {
	if s, ok := p.(singleMatcher); ok {
		return s.matchesSingle(v)
	}
	return p.test([]any{v}, true)
}

func allMatchSingle(preds []predicate, v any) bool {
	for _, p := range preds {
		if !matchSingle(p, v) {
			return false
		}
	}
	return true
}

// elemMatchPred holds when an array at the path has an element that
// satisfies every condition: in query form (sub set), an element that is a
// document matching sub; in operator form, an element each of preds holds
// for, tested as it is (a nested array is not looked into).
type elemMatchPred struct {
	sub   *Filter     // query form
	preds []predicate // operator form
}

func (p elemMatchPred) test(vals []any, _ bool) bool {
	for _, v := range vals {
		if p.matchesSingle(v) {
			return true
		}
	}
	return false
}

func (p elemMatchPred) matchesSingle(v any) bool {
	elems, ok := codec.ArrayElements(v)
	if !ok {
		return false
	}
	for _, e := range elems {
		if p.sub != nil {
			if d, ok := codec.AsDocument(e); ok && p.sub.Matches(d) {
				return true
			}
			continue
		}
		if allMatchSingle(p.preds, e) {
			return true
		}
	}
	return false
}

// compileElemMatch compiles {$elemMatch: {…}}: the query form when the
// document holds field names (and $and/$or/$nor), the operator form when it
// holds other operators; both at once is an error.
func compileElemMatch(op, path string, v any, nx nesting) (predicate, any, error) {
	if err := checkDepth(nx.deeper(), op, path); err != nil {
		return nil, nil, err
	}
	m, ok := codec.AsDocument(v)
	if !ok {
		return nil, nil, filterError(op, path, "needs a document, got %s", describeType(v))
	}
	fields, ops := 0, 0
	for k := range m {
		switch {
		case k == "$and" || k == "$or" || k == "$nor" || !strings.HasPrefix(k, "$"):
			fields++
		default:
			ops++
		}
	}
	switch {
	case fields > 0 && ops > 0:
		return nil, nil, filterError(op, path, "mixes field conditions and operators; use one form")
	case ops > 0:
		preds, norm, err := compileOperators(path, m, nx.deeper())
		if err != nil {
			return nil, nil, err
		}
		return elemMatchPred{preds: preds}, norm, nil
	}
	inner := nx.deeper()
	inner.inElemMatch = true
	sub, err := compileDocument(m, inner)
	if err != nil {
		return nil, nil, err
	}
	return elemMatchPred{sub: sub}, sub.doc, nil
}

// sizePred holds when a value at the path is an array of n elements. The
// path's values are not expanded: {$size: 1} does not match [[1, 2]]'s
// inner array. n < 0 stands for a size beyond any array's, which matches
// nothing.
type sizePred struct {
	n int64
}

func (p sizePred) test(vals []any, found bool) bool {
	if !found {
		return false
	}
	for _, v := range vals {
		if p.matchesSingle(v) {
			return true
		}
	}
	return false
}

func (p sizePred) matchesSingle(v any) bool {
	elems, ok := codec.ArrayElements(v)
	return ok && int64(len(elems)) == p.n
}

// compileSize accepts a whole number that is not negative, as MongoDB
// does: a float with a fraction (or NaN, or an infinity) is refused ("must
// be a whole number"), an integral one (2.0, -0.0) is that size. In a
// stored filter (CompileStoredFilter) such a float matches nothing, as
// earlier versions compiled it.
func compileSize(op, path string, v any, stored bool) (predicate, error) {
	n, ok := ToNumber(v)
	if !ok {
		return nil, filterError(op, path, "needs a number, got %s", describeType(v))
	}
	switch n.Kind {
	case 'u':
		return sizePred{n: -1}, nil // more elements than any array has
	case 'f':
		switch {
		case (math.IsNaN(n.F) || math.IsInf(n.F, 0) || n.F != math.Trunc(n.F)) && stored:
			return sizePred{n: -1}, nil
		case math.IsNaN(n.F) || math.IsInf(n.F, 0) || n.F != math.Trunc(n.F):
			return nil, filterError(op, path, "must be a whole number, got %v", n.F)
		case n.F < 0:
			return nil, filterError(op, path, "may not be negative, got %v", n.F)
		case n.F >= math.MaxInt64:
			return sizePred{n: -1}, nil
		}
		return sizePred{n: int64(n.F)}, nil
	}
	if n.I < 0 {
		return nil, filterError(op, path, "may not be negative, got %d", n.I)
	}
	return sizePred{n: n.I}, nil
}

// compileAll compiles {$all: [v1, v2, …]}: every value must be matched
// (as by equality, or by pattern for a *regexp.Regexp), or every element is
// {$elemMatch: …} and each must hold. An empty array matches nothing.
func compileAll(op, path string, v any, nx nesting) (predicate, any, error) {
	elems, ok := codec.ArrayElements(v)
	if !ok {
		return nil, nil, filterError(op, path, "needs an array, got %s", describeType(v))
	}
	out := make(allOf, 0, len(elems))
	norm := make([]any, 0, len(elems))
	elemMatches := 0
	for _, e := range elems {
		if m, isDoc := codec.AsDocument(e); isDoc && hasOperator(m) {
			em, isEM := m["$elemMatch"]
			if !isEM || len(m) != 1 {
				return nil, nil, filterError(op, path, "elements may be values or {$elemMatch: …} documents, not other operators")
			}
			p, n, err := compileElemMatch("$elemMatch", path, em, nx)
			if err != nil {
				return nil, nil, err
			}
			out, norm = append(out, p), append(norm, map[string]any{"$elemMatch": n})
			elemMatches++
			continue
		}
		p, isRe, err := compilePatternValue(op, path, e)
		if err != nil {
			return nil, nil, err
		}
		n := e
		if !isRe {
			if p, n, err = compileEquals(op, path, e); err != nil {
				return nil, nil, err
			}
		}
		out, norm = append(out, p), append(norm, n)
	}
	if elemMatches > 0 && elemMatches != len(elems) {
		return nil, nil, filterError(op, path, "mixes {$elemMatch: …} elements and values; MongoDB requires one kind")
	}
	return out, norm, nil
}

// BSON type codes and the names $type accepts for them, as MongoDB's. The
// types ttldb has no Go value for (decimal, regex, timestamp, …) are
// accepted and match nothing.
var bsonTypeNames = map[string]int{
	"double": 1, "string": 2, "object": 3, "array": 4, "binData": 5,
	"undefined": 6, "objectId": 7, "bool": 8, "date": 9, "null": 10,
	"regex": 11, "dbPointer": 12, "javascript": 13, "symbol": 14,
	"javascriptWithScope": 15, "int": 16, "timestamp": 17, "long": 18,
	"decimal": 19, "minKey": -1, "maxKey": 127,
}

// typeNumber is $type's alias "number": double, int, long and decimal.
const typeNumber = 0

// bsonTypeOf is the BSON type a stored value has, as the MongoDB Go driver
// encodes Go values: float32/float64 are double; int8, int16, int32,
// uint8 and uint16 are int (32-bit); int is int when it fits in 32 bits,
// else long; int64, uint, uint32 and uint64 are long; []byte is binData; a
// slice is array, a map object, time.Time date, ObjectID objectId; the
// driver's Binary, Regex, Timestamp, Decimal128, MinKey and MaxKey are
// their own types.
func bsonTypeOf(v any) int {
	switch x := v.(type) {
	case nil:
		return 10
	case float32, float64:
		return 1
	case string:
		return 2
	case map[string]any:
		return 3
	case []byte:
		return 5
	case codec.ObjectID:
		return 7
	case bool:
		return 8
	case int8, int16, int32, uint8, uint16:
		return 16
	case int:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return 16
		}
		return 18
	case int64, uint, uint32, uint64:
		return 18
	case bson.Binary:
		return 5
	case bson.Regex:
		return 11
	case bson.Timestamp:
		return 17
	case bson.Decimal128:
		return 19
	case bson.MinKey:
		return -1
	case bson.MaxKey:
		return 127
	}
	switch RankOf(v) {
	case rankDate:
		return 9
	case rankArray:
		return 4
	}
	return -2 // no BSON type
}

// typePred holds when a value at the path, or an element of an array
// value, has one of the BSON types. A missing field has no type.
type typePred struct {
	types []int // BSON type codes; typeNumber for "number"
}

func (p typePred) test(vals []any, found bool) bool {
	return found && anyCandidate(vals, p.matchesSingle)
}

func (p typePred) matchesSingle(v any) bool {
	t := bsonTypeOf(v)
	for _, want := range p.types {
		if want == t || want == typeNumber && (t == 1 || t == 16 || t == 18) {
			return true
		}
	}
	return false
}

// compileType accepts a type name, a type number or an array of them.
func compileType(op, path string, v any) (predicate, error) {
	specs := []any{v}
	if elems, ok := codec.ArrayElements(v); ok {
		if len(elems) == 0 {
			return nil, filterError(op, path, "needs at least one type")
		}
		specs = elems
	}
	p := typePred{types: make([]int, 0, len(specs))}
	for _, s := range specs {
		code, err := typeCode(op, path, s)
		if err != nil {
			return nil, err
		}
		p.types = append(p.types, code)
	}
	return p, nil
}

func typeCode(op, path string, s any) (int, error) {
	if name, ok := s.(string); ok {
		if name == "number" {
			return typeNumber, nil
		}
		if code, ok := bsonTypeNames[name]; ok {
			return code, nil
		}
		return 0, filterError(op, path, "unknown type name %q (supported: double, string, object, array, binData, undefined, objectId, bool, date, null, regex, dbPointer, javascript, symbol, javascriptWithScope, int, timestamp, long, decimal, minKey, maxKey, number)", name)
	}
	n, ok := ToNumber(s)
	if !ok {
		return 0, filterError(op, path, "needs a type name or number, got %s", describeType(s))
	}
	f := n.Float()
	if f == math.Trunc(f) && (f >= 1 && f <= 19 || f == -1 || f == 127) {
		return int(f), nil
	}
	return 0, filterError(op, path, "invalid numerical type code %v", f)
}

// modPred holds when a number at the path (or an element of an array
// value), truncated to an integer, divided by divisor leaves remainder,
// with the sign of the dividend as in MongoDB. NaN and infinities never
// match.
type modPred struct {
	divisor, remainder int64
}

func (p modPred) test(vals []any, _ bool) bool { return anyCandidate(vals, p.matchesSingle) }

func (p modPred) matchesSingle(v any) bool {
	n, ok := ToNumber(v)
	if !ok {
		return false
	}
	switch n.Kind {
	case 'i':
		return n.I%p.divisor == p.remainder
	case 'u':
		return bigMod(new(big.Int).SetUint64(n.U), p.divisor) == p.remainder
	}
	if math.IsNaN(n.F) || math.IsInf(n.F, 0) {
		return false
	}
	t := math.Trunc(n.F)
	if t >= math.MinInt64 && t < math.MaxInt64 {
		return int64(t)%p.divisor == p.remainder
	}
	i, _ := big.NewFloat(t).Int(nil)
	return bigMod(i, p.divisor) == p.remainder
}

// bigMod is x % d truncated toward zero (Go's and MongoDB's sign rule).
func bigMod(x *big.Int, d int64) int64 {
	return new(big.Int).Rem(x, big.NewInt(d)).Int64()
}

// compileMod accepts [divisor, remainder], two numbers that are finite and
// fit in 64-bit integers (fractions are truncated); the divisor may not be
// zero.
func compileMod(op, path string, v any) (predicate, error) {
	elems, ok := codec.ArrayElements(v)
	switch {
	case !ok:
		return nil, filterError(op, path, "needs an array [divisor, remainder], got %s", describeType(v))
	case len(elems) < 2:
		return nil, filterError(op, path, "malformed: not enough elements (needs [divisor, remainder])")
	case len(elems) > 2:
		return nil, filterError(op, path, "malformed: too many elements (needs [divisor, remainder])")
	}
	var ints [2]int64
	for i, name := range []string{"divisor", "remainder"} {
		n, ok := ToNumber(elems[i])
		if !ok {
			return nil, filterError(op, path, "malformed: %s is not a number (%s)", name, describeType(elems[i]))
		}
		switch n.Kind {
		case 'i':
			ints[i] = n.I
		case 'u':
			return nil, filterError(op, path, "%s %d does not fit in a 64-bit integer", name, n.U)
		default:
			t := math.Trunc(n.F)
			if math.IsNaN(n.F) || math.IsInf(n.F, 0) || t < math.MinInt64 || t >= math.MaxInt64 {
				return nil, filterError(op, path, "%s %v is not representable as a 64-bit integer", name, n.F)
			}
			ints[i] = int64(t)
		}
	}
	if ints[0] == 0 {
		return nil, filterError(op, path, "divisor cannot be 0")
	}
	return modPred{divisor: ints[0], remainder: ints[1]}, nil
}

func (p rangePred) matchesSingle(v any) bool { return p.holds(v) }

// compileInPatterns compiles an $in (or $nin) whose array holds
// *regexp.Regexp elements: a value matches by equality or by pattern. norm
// is the values in stored form followed by the patterns.
func compileInPatterns(op, path string, vals []any, patterns []predicate, err error) (predicate, any, error) {
	if err != nil {
		return nil, nil, err
	}
	eq, fv, err := compileIn(op, path, vals)
	if err != nil {
		return nil, nil, err
	}
	norm, _ := codec.ArrayElements(fv)
	norm = slices.Clone(norm)
	for _, p := range patterns {
		norm = append(norm, p.(regexPred).source)
	}
	return append(anyOf{eq}, patterns...), norm, nil
}
