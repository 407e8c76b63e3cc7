package query

import (
	"slices"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
)

// Array operators: $size, $arrayElemAt, $first, $last, $slice,
// $concatArrays, $in, $isArray, $range, $reverseArray, $indexOfArray,
// $arrayToObject, $objectToArray, the set operators ($setUnion,
// $setIntersection, $setDifference, $setEquals, $setIsSubset,
// $anyElementTrue, $allElementsTrue), and those that bind a variable
// over the elements: $filter, $map, $reduce; then $sortArray and $zip.
//
// Set operators treat arrays as sets: their results hold each value
// once, $setUnion's and $setIntersection's in ascending BSON order
// (MongoDB leaves the order unspecified). $objectToArray lists a
// document's fields in ascending name order, as ttldb's documents keep
// no field order. An array an operator builds is bounded by
// MaxExprElements elements.

func init() {
	registerOps(map[string]opCompiler{
		"$size":            fn(1, 1, evalSize),
		"$arrayElemAt":     fn(2, 2, evalArrayElemAt),
		"$first":           fn(1, 1, evalFirstLast),
		"$last":            fn(1, 1, evalFirstLast),
		"$slice":           fn(2, 3, evalSlice),
		"$concatArrays":    fn(0, -1, evalConcatArrays),
		"$in":              fn(2, 2, evalIn),
		"$isArray":         fn(1, 1, func(_ string, v []any) (any, error) { return codec.IsArray(v[0]), nil }),
		"$range":           fn(2, 3, evalRange),
		"$reverseArray":    fn(1, 1, evalReverseArray),
		"$indexOfArray":    fn(2, 4, evalIndexOfArray),
		"$arrayToObject":   fn(1, 1, evalArrayToObject),
		"$objectToArray":   fn(1, 1, evalObjectToArray),
		"$setUnion":        fn(0, -1, evalSetUnion),
		"$setIntersection": fn(0, -1, evalSetIntersection),
		"$setDifference":   fn(2, 2, evalSetDifference),
		"$setEquals":       fn(2, -1, evalSetEquals),
		"$setIsSubset":     fn(2, 2, evalSetIsSubset),
		"$anyElementTrue":  fn(1, 1, evalAnyAllElements),
		"$allElementsTrue": fn(1, 1, evalAnyAllElements),
		"$filter":          compileFilter,
		"$map":             compileMap,
		"$reduce":          compileReduce,
		"$sortArray":       compileSortArray,
		"$zip":             compileZip,
	})
}

func evalSize(op string, vals []any) (any, error) {
	elems, ok := codec.ArrayElements(vals[0])
	if !ok {
		return nil, evalErr(op, "the argument to $size must be an array. Type of the argument is %s", TypeName(vals[0]))
	}
	return int32(len(elems)), nil
}

func evalArrayElemAt(op string, vals []any) (any, error) {
	if nullish(vals[0]) || nullish(vals[1]) {
		return nil, nil
	}
	elems, ok := codec.ArrayElements(vals[0])
	if !ok {
		return nil, evalErr(op, "first argument must be an array, but is %s", TypeName(vals[0]))
	}
	if !isNumberValue(vals[1]) {
		return nil, evalErr(op, "second argument must be a numeric value, but is %s", TypeName(vals[1]))
	}
	i, ok := integralArg(vals[1])
	if !ok {
		return nil, evalErr(op, "second argument must be representable as a 32-bit integer: %v", vals[1])
	}
	if i < 0 {
		i += int64(len(elems))
	}
	if i < 0 || i >= int64(len(elems)) {
		return Missing, nil
	}
	return elems[i], nil
}

func evalFirstLast(op string, vals []any) (any, error) {
	if nullish(vals[0]) {
		return nil, nil
	}
	elems, ok := codec.ArrayElements(vals[0])
	if !ok {
		return nil, evalErr(op, "expected an array, got %s", TypeName(vals[0]))
	}
	if len(elems) == 0 {
		return Missing, nil
	}
	if op == "$first" {
		return elems[0], nil
	}
	return elems[len(elems)-1], nil
}

// evalSlice is $slice: [array, n] (the first n, or the last -n) and
// [array, position, n] (n > 0 elements from position, counted from the
// end when negative).
func evalSlice(op string, vals []any) (any, error) {
	for _, v := range vals {
		if nullish(v) {
			return nil, nil
		}
	}
	elems, ok := codec.ArrayElements(vals[0])
	if !ok {
		return nil, evalErr(op, "first argument must be an array, but is %s", TypeName(vals[0]))
	}
	args := make([]int64, len(vals)-1)
	for i, v := range vals[1:] {
		if args[i], ok = integralArg(v); !ok {
			return nil, evalErr(op, "argument %d must be an integer representable in 32 bits, not %v", i+2, v)
		}
	}
	n := int64(len(elems))
	var start, end int64
	if len(args) == 1 {
		if args[0] >= 0 {
			start, end = 0, min(args[0], n)
		} else {
			start, end = max(n+args[0], 0), n
		}
	} else {
		pos, count := args[0], args[1]
		if count <= 0 {
			return nil, evalErr(op, "third argument must be positive, not %d", count)
		}
		if pos < 0 {
			start = max(n+pos, 0)
		} else {
			start = min(pos, n)
		}
		end = min(start+count, n)
	}
	return slices.Clone(elems[start:end]), nil
}

func evalConcatArrays(op string, vals []any) (any, error) {
	out := []any{}
	for _, v := range vals {
		if nullish(v) {
			return nil, nil
		}
		elems, ok := codec.ArrayElements(v)
		if !ok {
			return nil, evalErr(op, "only supports arrays, not %s", TypeName(v))
		}
		if len(out)+len(elems) > MaxExprElements {
			return nil, evalErr(op, "result exceeds the bound of %d elements", MaxExprElements)
		}
		out = append(out, elems...)
	}
	return out, nil
}

func evalIn(op string, vals []any) (any, error) {
	elems, ok := codec.ArrayElements(vals[1])
	if !ok {
		return nil, evalErr(op, "requires an array as a second argument, found: %s", TypeName(vals[1]))
	}
	for _, el := range elems {
		if aggCompare(vals[0], el) == 0 {
			return true, nil
		}
	}
	return false, nil
}

// MaxRangeElements bounds the arrays $range builds.
const MaxRangeElements = MaxExprElements

func evalRange(op string, vals []any) (any, error) {
	var args [3]int64
	args[2] = 1
	for i, v := range vals {
		name := []string{"starting value", "ending value", "step value"}[i]
		if !isNumberValue(v) {
			return nil, evalErr(op, "requires a numeric %s, found value of type: %s", name, TypeName(v))
		}
		x, ok := integralArg(v)
		if !ok {
			return nil, evalErr(op, "requires a %s that can be represented as a 32-bit integer, found value: %v", name, v)
		}
		args[i] = x
	}
	start, end, step := args[0], args[1], args[2]
	if step == 0 {
		return nil, evalErr(op, "requires a non-zero step value")
	}
	count := int64(0)
	if step > 0 && end > start {
		count = (end - start + step - 1) / step
	} else if step < 0 && end < start {
		count = (start - end - step - 1) / -step
	}
	if count > MaxRangeElements {
		return nil, evalErr(op, "result of %d elements exceeds the bound of %d", count, MaxRangeElements)
	}
	out := make([]any, count)
	for i := range out {
		out[i] = int32(start + int64(i)*step)
	}
	return out, nil
}

func evalReverseArray(op string, vals []any) (any, error) {
	if nullish(vals[0]) {
		return nil, nil
	}
	elems, ok := codec.ArrayElements(vals[0])
	if !ok {
		return nil, evalErr(op, "argument must be an array, but was of type: %s", TypeName(vals[0]))
	}
	out := slices.Clone(elems)
	slices.Reverse(out)
	if out == nil {
		out = []any{}
	}
	return out, nil
}

func evalIndexOfArray(op string, vals []any) (any, error) {
	if nullish(vals[0]) {
		return nil, nil
	}
	elems, ok := codec.ArrayElements(vals[0])
	if !ok {
		return nil, evalErr(op, "requires an array as a first argument, found: %s", TypeName(vals[0]))
	}
	start, end := int64(0), int64(len(elems))
	for i, v := range vals[2:] {
		name := []string{"starting", "ending"}[i]
		x, ok := integralArg(v)
		if !ok {
			return nil, evalErr(op, "%s index must be an integral numeric value, not %v", name, v)
		}
		if x < 0 {
			return nil, evalErr(op, "%s index must be non-negative, got %d", name, x)
		}
		if i == 0 {
			start = x
		} else {
			end = min(x, end)
		}
	}
	for i := start; i < end; i++ {
		if aggCompare(elems[i], vals[1]) == 0 {
			return int32(i), nil
		}
	}
	return int32(-1), nil
}

// evalArrayToObject builds a document from [[k, v]...] or
// [{k: k, v: v}...]; a name given twice keeps its last value.
func evalArrayToObject(op string, vals []any) (any, error) {
	if nullish(vals[0]) {
		return nil, nil
	}
	elems, ok := codec.ArrayElements(vals[0])
	if !ok {
		return nil, evalErr(op, "requires an array input, found: %s", TypeName(vals[0]))
	}
	out := make(codec.Document, len(elems))
	pairs := false
	for i, el := range elems {
		var k, v any
		if pair, isArr := codec.ArrayElements(el); isArr {
			if i > 0 && !pairs {
				return nil, evalErr(op, "requires a consistent input format: all elements [k, v] arrays or all {k, v} documents")
			}
			pairs = true
			if len(pair) != 2 {
				return nil, evalErr(op, "requires an array of size 2 arrays, found array of size: %d", len(pair))
			}
			k, v = pair[0], pair[1]
		} else if doc, isDoc := codec.AsDocument(el); isDoc {
			if pairs {
				return nil, evalErr(op, "requires a consistent input format: all elements [k, v] arrays or all {k, v} documents")
			}
			_, hasK := doc["k"]
			_, hasV := doc["v"]
			if len(doc) != 2 || !hasK || !hasV {
				return nil, evalErr(op, "requires an object with keys 'k' and 'v', found %v", el)
			}
			k, v = doc["k"], doc["v"]
		} else {
			return nil, evalErr(op, "requires an array of [k, v] arrays or {k, v} documents, found %s", TypeName(el))
		}
		name, ok := k.(string)
		if !ok {
			return nil, evalErr(op, "requires the key to be a string, found: %s", TypeName(k))
		}
		if strings.ContainsRune(name, 0) {
			return nil, evalErr(op, "key must not contain an embedded null byte")
		}
		out[name] = v
	}
	return out, nil
}

func evalObjectToArray(op string, vals []any) (any, error) {
	if nullish(vals[0]) {
		return nil, nil
	}
	doc, ok := codec.AsDocument(vals[0])
	if !ok {
		return nil, evalErr(op, "requires a document input, found: %s", TypeName(vals[0]))
	}
	out := make([]any, 0, len(doc))
	for _, k := range SortedKeys(doc) {
		out = append(out, codec.Document{"k": k, "v": doc[k]})
	}
	return out, nil
}

// distinctSorted returns the distinct values of elems in ascending BSON
// order.
func distinctSorted(elems []any) []any {
	out := slices.Clone(elems)
	slices.SortStableFunc(out, Compare)
	out = slices.CompactFunc(out, Equal)
	if out == nil {
		out = []any{}
	}
	return out
}

// sortedContains reports whether sorted (ascending, by Compare) holds v.
func sortedContains(sorted []any, v any) bool {
	_, found := slices.BinarySearchFunc(sorted, v, Compare)
	return found
}

// setArgs reads the arrays of a set operator; null (nil, true) if one
// is null or missing and nullOK, an error if one is not an array.
func setArgs(op string, vals []any, nullOK bool) ([][]any, bool, error) {
	out := make([][]any, len(vals))
	for i, v := range vals {
		if nullOK && nullish(v) {
			return nil, true, nil
		}
		elems, ok := codec.ArrayElements(v)
		if !ok {
			return nil, false, evalErr(op, "all operands must be arrays, but one is of type %s", TypeName(v))
		}
		out[i] = elems
	}
	return out, false, nil
}

func evalSetUnion(op string, vals []any) (any, error) {
	sets, isNull, err := setArgs(op, vals, true)
	if err != nil || isNull {
		return nil, err
	}
	var all []any
	for _, s := range sets {
		all = append(all, s...)
	}
	return distinctSorted(all), nil
}

func evalSetIntersection(op string, vals []any) (any, error) {
	sets, isNull, err := setArgs(op, vals, true)
	if err != nil || isNull {
		return nil, err
	}
	if len(sets) == 0 {
		return []any{}, nil
	}
	out := distinctSorted(sets[0])
	for _, s := range sets[1:] {
		other := distinctSorted(s)
		out = slices.DeleteFunc(out, func(v any) bool { return !sortedContains(other, v) })
	}
	return out, nil
}

func evalSetDifference(op string, vals []any) (any, error) {
	sets, isNull, err := setArgs(op, vals, true)
	if err != nil || isNull {
		return nil, err
	}
	other := distinctSorted(sets[1])
	// Keep each value's first occurrence, in the first array's order:
	// sort the indexes by value (stably), keep the first of each run.
	first := sets[0]
	idx := make([]int, len(first))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return Compare(first[a], first[b]) })
	keep := make([]bool, len(first))
	for j, i := range idx {
		if (j == 0 || !Equal(first[idx[j-1]], first[i])) && !sortedContains(other, first[i]) {
			keep[i] = true
		}
	}
	out := []any{}
	for i, v := range first {
		if keep[i] {
			out = append(out, v)
		}
	}
	return out, nil
}

func evalSetEquals(op string, vals []any) (any, error) {
	sets, _, err := setArgs(op, vals, false)
	if err != nil {
		return nil, err
	}
	first := distinctSorted(sets[0])
	for _, s := range sets[1:] {
		if !slices.EqualFunc(first, distinctSorted(s), Equal) {
			return false, nil
		}
	}
	return true, nil
}

func evalSetIsSubset(op string, vals []any) (any, error) {
	sets, _, err := setArgs(op, vals, false)
	if err != nil {
		return nil, err
	}
	super := distinctSorted(sets[1])
	for _, v := range sets[0] {
		if !sortedContains(super, v) {
			return false, nil
		}
	}
	return true, nil
}

func evalAnyAllElements(op string, vals []any) (any, error) {
	elems, ok := codec.ArrayElements(vals[0])
	if !ok {
		return nil, evalErr(op, "argument must be an array, but is %s", TypeName(vals[0]))
	}
	want := op == "$anyElementTrue"
	for _, el := range elems {
		if Truthy(el) == want {
			return want, nil
		}
	}
	return !want, nil
}

// bindAs binds the variable "as" names (default "this") and compiles body
// in its scope.
func (c *compiler) bindAs(op string, as any, hasAs bool, body any) (int, node, error) {
	name := "this"
	if hasAs {
		s, ok := as.(string)
		if !ok {
			return 0, nil, compileErr(op, "'as' must be a string, not %v", as)
		}
		name = s
	}
	slot, err := c.bind(name)
	if err != nil {
		return 0, nil, compileErr(op, "%v", err)
	}
	defer c.unbind()
	n, err := c.expr(body)
	if err != nil {
		return 0, nil, err
	}
	return slot, n, nil
}

// filterNode is $filter: the elements for which cond is true, at most
// limit of them.
type filterNode struct {
	input, cond, limit node
	slot               int
}

func compileFilter(c *compiler, op string, arg any) (node, error) {
	m, err := namedArgs(op, arg, []string{"input", "cond"}, []string{"as", "limit"})
	if err != nil {
		return nil, err
	}
	n := &filterNode{}
	if n.input, err = c.expr(m["input"]); err != nil {
		return nil, err
	}
	if l, ok := m["limit"]; ok {
		if n.limit, err = c.expr(l); err != nil {
			return nil, err
		}
	}
	as, hasAs := m["as"]
	if n.slot, n.cond, err = c.bindAs(op, as, hasAs, m["cond"]); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *filterNode) eval(env *Env) (any, error) {
	elems, isNull, err := arrayInput(env, "$filter", n.input)
	if err != nil || isNull {
		return nil, err
	}
	if len(elems) == 0 {
		return []any{}, nil // as the server, without evaluating limit
	}
	limit := int64(len(elems))
	if n.limit != nil {
		lv, err := n.limit.eval(env)
		if err != nil {
			return nil, err
		}
		if !nullish(lv) {
			l, ok := integralArg(lv)
			if !ok {
				return nil, evalErr("$filter", "limit must be an integer representable in 32 bits, not %v", lv)
			}
			if l <= 0 {
				return nil, evalErr("$filter", "limit must be greater than 0, not %d", l)
			}
			limit = l
		}
	}
	out := []any{}
	for _, el := range elems {
		if int64(len(out)) >= limit {
			break
		}
		keep, err := withVar(env, n.slot, el, n.cond)
		if err != nil {
			return nil, err
		}
		if Truthy(keep) {
			out = append(out, el)
		}
	}
	return out, nil
}

// mapNode is $map: in, evaluated for each element (missing gives null).
type mapNode struct {
	input, in node
	slot      int
}

func compileMap(c *compiler, op string, arg any) (node, error) {
	m, err := namedArgs(op, arg, []string{"input", "in"}, []string{"as"})
	if err != nil {
		return nil, err
	}
	n := &mapNode{}
	if n.input, err = c.expr(m["input"]); err != nil {
		return nil, err
	}
	as, hasAs := m["as"]
	if n.slot, n.in, err = c.bindAs(op, as, hasAs, m["in"]); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *mapNode) eval(env *Env) (any, error) {
	elems, isNull, err := arrayInput(env, "$map", n.input)
	if err != nil || isNull {
		return nil, err
	}
	out := make([]any, len(elems))
	for i, el := range elems {
		r, err := withVar(env, n.slot, el, n.in)
		if err != nil {
			return nil, err
		}
		if !IsMissing(r) {
			out[i] = r
		}
	}
	return out, nil
}

// reduceNode is $reduce: in folds the elements ($$this) into $$value,
// which starts as initialValue.
type reduceNode struct {
	input, initial, in  node
	valueSlot, thisSlot int
}

func compileReduce(c *compiler, op string, arg any) (node, error) {
	m, err := namedArgs(op, arg, []string{"input", "initialValue", "in"}, nil)
	if err != nil {
		return nil, err
	}
	n := &reduceNode{}
	if n.input, err = c.expr(m["input"]); err != nil {
		return nil, err
	}
	if n.initial, err = c.expr(m["initialValue"]); err != nil {
		return nil, err
	}
	if n.valueSlot, err = c.bind("value"); err != nil {
		return nil, err
	}
	defer c.unbind()
	if n.thisSlot, n.in, err = c.bindAs(op, "this", true, m["in"]); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *reduceNode) eval(env *Env) (any, error) {
	elems, isNull, err := arrayInput(env, "$reduce", n.input)
	if err != nil || isNull {
		return nil, err
	}
	acc, err := n.initial.eval(env)
	if err != nil {
		return nil, err
	}
	oldV := setVar(env, n.valueSlot, nil)
	oldT := setVar(env, n.thisSlot, nil)
	defer func() { env.vars[n.valueSlot], env.vars[n.thisSlot] = oldV, oldT }()
	for _, el := range elems {
		env.vars[n.valueSlot], env.vars[n.thisSlot] = acc, el
		if acc, err = n.in.eval(env); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// sortArrayNode is $sortArray: sortBy is 1 or -1 (the elements by
// value) or a document of one field path and its direction (documents
// by that field; a missing field sorts as null). Several fields are
// refused: ttldb's documents keep no field order, so their precedence
// would be lost. The sort is stable.
type sortArrayNode struct {
	input node
	path  []string // nil: by the whole value
	dir   int
}

func compileSortArray(c *compiler, op string, arg any) (node, error) {
	m, err := namedArgs(op, arg, []string{"input", "sortBy"}, nil)
	if err != nil {
		return nil, err
	}
	n := &sortArrayNode{}
	if n.input, err = c.expr(m["input"]); err != nil {
		return nil, err
	}
	dirOf := func(v any) (int, error) {
		d, ok := integralArg(v)
		if !ok || d != 1 && d != -1 {
			return 0, compileErr(op, "sortBy direction must be 1 or -1, not %v", v)
		}
		return int(d), nil
	}
	sortBy := m["sortBy"]
	if doc, ok := codec.AsDocument(sortBy); ok {
		if len(doc) != 1 {
			return nil, compileErr(op, "sortBy must be 1, -1 or a document of one field (a document's field order is not kept, so several fields cannot be ordered), not %v", sortBy)
		}
		for k, v := range doc {
			if k == "" || strings.HasPrefix(k, "$") {
				return nil, compileErr(op, "sortBy field %q", k)
			}
			n.path = strings.Split(k, ".")
			if n.dir, err = dirOf(v); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	if n.dir, err = dirOf(sortBy); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *sortArrayNode) eval(env *Env) (any, error) {
	elems, isNull, err := arrayInput(env, "$sortArray", n.input)
	if err != nil || isNull {
		return nil, err
	}
	out := slices.Clone(elems)
	key := func(el any) any {
		if n.path == nil {
			return el
		}
		if r, ok := pathValue(el, n.path); ok {
			if _, isDoc := codec.AsDocument(el); isDoc {
				return r
			}
		}
		return nil
	}
	slices.SortStableFunc(out, func(a, b any) int { return n.dir * Compare(key(a), key(b)) })
	if out == nil {
		out = []any{}
	}
	return out, nil
}

// zipNode is $zip: the arrays' elements grouped by index, up to the
// shortest array (or the longest, padded with defaults or null).
type zipNode struct {
	inputs   []node
	longest  bool
	defaults []node
}

func compileZip(c *compiler, op string, arg any) (node, error) {
	m, err := namedArgs(op, arg, []string{"inputs"}, []string{"useLongestLength", "defaults"})
	if err != nil {
		return nil, err
	}
	n := &zipNode{}
	ins, ok := codec.ArrayElements(m["inputs"])
	if !ok {
		return nil, compileErr(op, "inputs must be an array of expressions, not %v", m["inputs"])
	}
	for _, in := range ins {
		e, err := c.expr(in)
		if err != nil {
			return nil, err
		}
		n.inputs = append(n.inputs, e)
	}
	if l, ok := m["useLongestLength"]; ok {
		if n.longest, ok = l.(bool); !ok {
			return nil, compileErr(op, "useLongestLength must be a bool, not %v", l)
		}
	}
	if d, ok := m["defaults"]; ok {
		ds, isArr := codec.ArrayElements(d)
		if !isArr {
			return nil, compileErr(op, "defaults must be an array of expressions, not %v", d)
		}
		if !n.longest {
			return nil, compileErr(op, "defaults cannot be given without useLongestLength: true")
		}
		if len(ds) != len(ins) {
			return nil, compileErr(op, "defaults must have as many elements as inputs")
		}
		for _, el := range ds {
			e, err := c.expr(el)
			if err != nil {
				return nil, err
			}
			n.defaults = append(n.defaults, e)
		}
	}
	return n, nil
}

func (n *zipNode) eval(env *Env) (any, error) {
	arrays := make([][]any, len(n.inputs))
	length := -1
	for i, in := range n.inputs {
		v, err := in.eval(env)
		if err != nil {
			return nil, err
		}
		if nullish(v) {
			return nil, nil
		}
		elems, ok := codec.ArrayElements(v)
		if !ok {
			return nil, evalErr("$zip", "an input is not an array: %s", TypeName(v))
		}
		arrays[i] = elems
		switch {
		case length < 0:
			length = len(elems)
		case n.longest:
			length = max(length, len(elems))
		default:
			length = min(length, len(elems))
		}
	}
	defaults := make([]any, len(n.inputs))
	for i, d := range n.defaults {
		v, err := d.eval(env)
		if err != nil {
			return nil, err
		}
		if !IsMissing(v) {
			defaults[i] = v
		}
	}
	out := make([]any, max(length, 0))
	for j := range out {
		row := make([]any, len(arrays))
		for i, a := range arrays {
			if j < len(a) {
				row[i] = a[j]
			} else {
				row[i] = defaults[i]
			}
		}
		out[j] = row
	}
	return out, nil
}

// arrayInput evaluates the input of $filter, $map, $reduce and
// $sortArray: its elements, or isNull when it is null or missing (the
// operator then gives null); any other value is an error.
func arrayInput(env *Env, op string, input node) (elems []any, isNull bool, err error) {
	v, err := input.eval(env)
	if err != nil {
		return nil, false, err
	}
	if nullish(v) {
		return nil, true, nil
	}
	elems, ok := codec.ArrayElements(v)
	if !ok {
		return nil, false, evalErr(op, "input must be an array, not %s", TypeName(v))
	}
	return elems, false, nil
}
