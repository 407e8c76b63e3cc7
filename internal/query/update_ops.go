package query

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// The update operators beyond $set, $unset, $inc and $currentDate: the
// array operators ($push, $addToSet, $pull, $pop), the comparison and
// arithmetic ones ($min, $max, $mul), $rename and $setOnInsert, with
// MongoDB's semantics and error cases. Each compiles to a moreOp that
// updateOp.applyTo runs on the private copy Apply builds, so an error
// leaves the stored document untouched.

const (
	opSetOnInsert = "$setOnInsert"
	opPush        = "$push"
	opAddToSet    = "$addToSet"
	opPull        = "$pull"
	opPop         = "$pop"
	opMin         = "$min"
	opMax         = "$max"
	opMul         = "$mul"
	opRename      = "$rename"
)

// updateOperators lists the supported update operators, in the order an
// unsupported operator's error names them.
var updateOperators = []string{
	opSet, opUnset, opInc, opMul, opMin, opMax, opRename, opCurrentDate, opSetOnInsert,
	opPush, opAddToSet, opPull, opPop,
}

func isUpdateOperator(name string) bool { return slices.Contains(updateOperators, name) }

// moreOp is a compiled operator of this file, applied to the private copy
// doc at the operator's path.
type moreOp interface {
	apply(doc codec.Document, parts []string, af arrayFilters) (changed bool, err error)
}

// paths returns the paths op writes, which must not conflict with another
// operator's: its own, and a $rename's target.
func (op *updateOp) paths() []string {
	if r, ok := op.more.(renameOp); ok {
		return []string{op.path, strings.Join(r.to, ".")}
	}
	return []string{op.path}
}

// compileMore compiles the argument of an operator of this file.
func (op *updateOp) compileMore(arg any) error {
	var err error
	switch op.name {
	case opPush:
		op.more, err = compilePush(op.parts, arg)
	case opAddToSet:
		op.more, err = compileAddToSet(op.parts, arg)
	case opPull:
		op.more, err = compilePull(op.path, arg)
	case opPop:
		op.more, err = compilePop(arg)
	case opMin, opMax:
		var v any
		if v, err = cloneValueAt(op.parts, arg); err == nil {
			op.more = minMaxOp{value: v, max: op.name == opMax}
		}
	case opMul:
		op.more, err = compileMul(arg)
	case opRename:
		op.more, err = compileRename(op.path, arg)
	}
	if err != nil {
		// %w: an invalid value also matches errs.ErrInvalidDocument, a bad
		// $pull condition errs.ErrInvalidFilter.
		return fmt.Errorf("%w: %s %q: %w", errs.ErrInvalidUpdate, op.name, op.path, err)
	}
	return nil
}

// lookupForUpdate returns the value at parts as updates address it
// (documents by key, arrays by numeric index); ok is false when the path
// is missing or blocked by a scalar, which $pull and $pop ignore.
func lookupForUpdate(cur any, parts []string) (any, bool) {
	for _, p := range parts {
		if _, pos := positional(p); pos {
			// Through "$[]" or "$[id]": an array, whose elements the
			// update visits (a missing field is skipped by the leaf).
			_, ok := codec.ArrayElements(cur)
			return nil, ok
		}
		if m, ok := codec.AsDocument(cur); ok {
			if cur, ok = m[p]; !ok {
				return nil, false
			}
			continue
		}
		elems, ok := codec.ArrayElements(cur)
		if !ok {
			return nil, false
		}
		i, ok := arrayIndex(p)
		if !ok || i >= len(elems) {
			return nil, false
		}
		cur = elems[i]
	}
	return cur, true
}

// arrayAt returns old's elements, or an error naming the operator's need
// for an array.
func arrayAt(old any, what string) ([]any, error) {
	elems, ok := codec.ArrayElements(old)
	if !ok {
		return nil, fmt.Errorf("%s an array, but the field holds %s", what, describeType(old))
	}
	return elems, nil
}

// integerArg reads a modifier that must be an integer ($slice, $position):
// any numeric kind holding a whole number that fits in an int.
func integerArg(name string, v any) (int, error) {
	n, ok := ToNumber(v)
	if !ok {
		return 0, fmt.Errorf("%s must be an integer, not %s", name, describeType(v))
	}
	f := n.Float()
	if n.Kind == 'f' && (f != math.Trunc(f) || math.IsInf(f, 0)) || n.Kind == 'u' || n.Kind == 'd' || f > math.MaxInt32 || f < math.MinInt32 {
		return 0, fmt.Errorf("%s must be an integer of at most 32 bits, not %v", name, v)
	}
	return int(f), nil
}

// eachValues validates and copies the values to add for $push or
// $addToSet: arg itself, or the elements of its $each. mods holds the
// other keys of a modifier document.
func eachValues(parts []string, arg any) (vals []any, mods map[string]any, err error) {
	m, isDoc := codec.AsDocument(arg)
	if !isDoc || !hasOperator(m) {
		v, err := cloneValueAt(parts, arg)
		if err != nil {
			return nil, nil, err
		}
		return []any{v}, nil, nil
	}
	each, ok := m["$each"]
	if !ok {
		return nil, nil, errors.New("a value holding $-modifiers needs $each")
	}
	if !codec.IsArray(each) {
		return nil, nil, fmt.Errorf("$each must be an array, not %s", describeType(each))
	}
	c, err := cloneValueAt(parts, each)
	if err != nil {
		return nil, nil, err
	}
	vals, _ = codec.ArrayElements(c)
	mods = make(map[string]any, len(m)-1)
	for k, v := range m {
		if k != "$each" {
			mods[k] = v
		}
	}
	return vals, mods, nil
}

// pushOp is $push: append values (at position), then sort, then slice.
type pushOp struct {
	values   []any
	position *int
	slice    *int
	sort     *pushSort
}

// pushSort is $push's $sort: whole elements by order, or document elements
// by keys.
type pushSort struct {
	order int
	keys  []Key
}

func compilePush(parts []string, arg any) (moreOp, error) {
	vals, mods, err := eachValues(parts, arg)
	if err != nil {
		return nil, err
	}
	p := pushOp{values: vals}
	for _, k := range SortedKeys(mods) {
		switch k {
		case "$position":
			n, err := integerArg(k, mods[k])
			if err != nil {
				return nil, err
			}
			p.position = &n
		case "$slice":
			n, err := integerArg(k, mods[k])
			if err != nil {
				return nil, err
			}
			p.slice = &n
		case "$sort":
			if p.sort, err = compilePushSort(mods[k]); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unrecognized modifier %s (supported with $each: $position, $slice, $sort)", k)
		}
	}
	return p, nil
}

func compilePushSort(v any) (*pushSort, error) {
	if m, ok := codec.AsDocument(v); ok {
		if len(m) == 0 {
			return nil, errors.New("$sort document must not be empty")
		}
		keys := make([]Key, 0, len(m))
		for _, f := range SortedKeys(m) {
			o, err := sortOrder(m[f])
			if err != nil {
				return nil, fmt.Errorf("$sort field %q: %w", f, err)
			}
			keys = append(keys, Key{Field: f, Order: o})
		}
		if err := CompileSort(keys); err != nil {
			return nil, fmt.Errorf("$sort: %v", errors.Unwrap(err))
		}
		return &pushSort{keys: keys}, nil
	}
	o, err := sortOrder(v)
	if err != nil {
		return nil, fmt.Errorf("$sort: %w", err)
	}
	return &pushSort{order: o}, nil
}

func sortOrder(v any) (int, error) {
	if n, ok := ToNumber(v); ok && (n.Float() == 1 || n.Float() == -1) {
		return int(n.Float()), nil
	}
	return 0, fmt.Errorf("order must be 1 or -1, not %v", v)
}

func (p pushOp) apply(doc codec.Document, parts []string, af arrayFilters) (bool, error) {
	_, changed, err := setIn(doc, parts, af, func(old any, exists bool) (any, error) {
		var elems []any
		if exists {
			var err error
			if elems, err = arrayAt(old, "$push needs"); err != nil {
				return nil, err
			}
		}
		pos := len(elems)
		if p.position != nil {
			pos = *p.position
			if pos < 0 {
				pos = max(len(elems)+pos, 0)
			}
			pos = min(pos, len(elems))
		}
		out := make([]any, 0, len(elems)+len(p.values))
		out = append(out, elems[:pos]...)
		for _, v := range p.values {
			out = append(out, codec.CopyValue(v))
		}
		out = append(out, elems[pos:]...)
		if p.sort != nil {
			p.sort.apply(out)
		}
		if p.slice != nil {
			if n := *p.slice; n >= 0 {
				out = out[:min(n, len(out))]
			} else {
				out = out[max(len(out)+n, 0):]
			}
		}
		return out, nil
	})
	return changed, err
}

// apply sorts elems stably: by whole value, or (keys) documents by fields,
// a non-document element counting as a document without those fields.
func (s *pushSort) apply(elems []any) {
	if s.keys == nil {
		slices.SortStableFunc(elems, func(a, b any) int { return Compare(a, b) * s.order })
		return
	}
	asDoc := func(v any) codec.Document {
		if m, ok := codec.AsDocument(v); ok {
			return m
		}
		return codec.Document{}
	}
	slices.SortStableFunc(elems, func(a, b any) int { return CompareForSort(asDoc(a), asDoc(b), s.keys) })
}

// setCompare is the comparison $addToSet decides equality with: Compare,
// held in a variable so that a test can count the comparisons a call makes.
var setCompare = Compare

// addToSetOp is $addToSet: append each value no element equals.
type addToSetOp struct {
	values []any
}

func compileAddToSet(parts []string, arg any) (moreOp, error) {
	vals, mods, err := eachValues(parts, arg)
	if err != nil {
		return nil, err
	}
	for k := range mods {
		return nil, fmt.Errorf("unrecognized modifier %s ($addToSet takes only $each)", k)
	}
	return addToSetOp{values: vals}, nil
}

func (a addToSetOp) apply(doc codec.Document, parts []string, af arrayFilters) (bool, error) {
	_, changed, err := setIn(doc, parts, af, func(old any, exists bool) (any, error) {
		var elems []any
		if exists {
			var err error
			if elems, err = arrayAt(old, "$addToSet needs"); err != nil {
				return nil, err
			}
		}
		fresh := freshValues(elems, a.values)
		if len(fresh) == 0 && exists {
			return old, nil // unchanged, in its own Go type
		}
		out := make([]any, len(elems), len(elems)+len(fresh))
		copy(out, elems)
		for _, i := range fresh {
			out = append(out, codec.CopyValue(a.values[i]))
		}
		return out, nil
	})
	return changed, err
}

// freshValues returns, in ascending order, the indexes of the values that
// $addToSet appends to elems: each value that no element and no earlier
// value equals. A few values are compared with every element; more are
// sorted, so that a large $each costs O((n+m) log(n+m)) comparisons under
// the collection's write lock rather than n×m. Compare is a total order
// whose equality is Equal, so sorting finds exactly the equal pairs.
func freshValues(elems, values []any) []int {
	if len(values) == 1 || len(values)*(len(elems)+len(values)) <= 64 {
		var fresh []int
	next:
		for i, v := range values {
			for _, e := range elems {
				if setCompare(e, v) == 0 {
					continue next
				}
			}
			for _, j := range fresh {
				if setCompare(values[j], v) == 0 {
					continue next
				}
			}
			fresh = append(fresh, i)
		}
		return fresh
	}
	// Equal values sort together, the first to appear first: only the
	// first of each run can be fresh.
	order := make([]int, len(values))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		if c := setCompare(values[i], values[j]); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})
	sorted := slices.Clone(elems)
	slices.SortFunc(sorted, setCompare)
	fresh := make([]int, 0, len(values))
	for k, i := range order {
		if k > 0 && setCompare(values[order[k-1]], values[i]) == 0 {
			continue
		}
		if _, found := slices.BinarySearchFunc(sorted, values[i], setCompare); found {
			continue
		}
		fresh = append(fresh, i)
	}
	slices.Sort(fresh) // back to the order of first appearance
	return fresh
}

// pullOp is $pull: remove the elements cond holds for.
type pullOp struct {
	cond func(elem any) bool
}

// compilePull compiles the condition: a document of field conditions
// matches document elements as a query; an operator document (or a
// *regexp.Regexp) matches each element as a query matches a field; any
// other value matches elements equal to it.
func compilePull(path string, arg any) (moreOp, error) {
	wrap := func(err error) error { return fmt.Errorf("condition: %w", err) }
	if p, isRe, err := compilePatternValue("$pull", path, arg); isRe {
		if err != nil {
			return nil, wrap(err)
		}
		return pullOp{cond: func(e any) bool { return p.test([]any{e}, true) }}, nil
	}
	if m, ok := codec.AsDocument(arg); ok {
		em, _, err := compileElemMatch("$pull", path, m, nesting{})
		if err != nil {
			return nil, wrap(err)
		}
		p := em.(elemMatchPred)
		if p.sub != nil {
			return pullOp{cond: func(e any) bool {
				d, ok := codec.AsDocument(e)
				return ok && p.sub.Matches(d)
			}}, nil
		}
		return pullOp{cond: func(e any) bool { return allHold(p.preds, []any{e}, true) }}, nil
	}
	v, err := codec.CloneValue(arg, path)
	if err != nil {
		return nil, err
	}
	return pullOp{cond: func(e any) bool { return Equal(e, v) }}, nil
}

func (p pullOp) apply(doc codec.Document, parts []string, af arrayFilters) (bool, error) {
	if _, ok := lookupForUpdate(doc, parts); !ok {
		return false, nil
	}
	_, changed, err := setIn(doc, parts, af, func(old any, exists bool) (any, error) {
		if !exists {
			return nil, errLeafSkip // an element without the field: nothing to pull
		}
		elems, err := arrayAt(old, "$pull needs")
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(elems, p.cond) {
			return old, nil
		}
		out := make([]any, 0, len(elems))
		for _, e := range elems {
			if !p.cond(e) {
				out = append(out, e)
			}
		}
		return out, nil
	})
	return changed, err
}

// popOp is $pop: remove the first (front) or last element.
type popOp struct {
	front bool
}

func compilePop(arg any) (moreOp, error) {
	if n, ok := ToNumber(arg); ok {
		switch n.Float() {
		case 1:
			return popOp{}, nil
		case -1:
			return popOp{front: true}, nil
		}
	}
	return nil, fmt.Errorf("$pop expects 1 or -1, not %v", arg)
}

func (p popOp) apply(doc codec.Document, parts []string, af arrayFilters) (bool, error) {
	if _, ok := lookupForUpdate(doc, parts); !ok {
		return false, nil
	}
	_, changed, err := setIn(doc, parts, af, func(old any, exists bool) (any, error) {
		if !exists {
			return nil, errLeafSkip // an element without the field: nothing to pop
		}
		elems, err := arrayAt(old, "$pop needs")
		if err != nil || len(elems) == 0 {
			return old, err
		}
		if p.front {
			return slices.Clone(elems[1:]), nil
		}
		return slices.Clone(elems[:len(elems)-1]), nil
	})
	return changed, err
}

// minMaxOp is $min ($max): write value if the field is missing or value
// sorts before (after) it in BSON order.
type minMaxOp struct {
	value any
	max   bool
}

func (m minMaxOp) apply(doc codec.Document, parts []string, af arrayFilters) (bool, error) {
	_, changed, err := setIn(doc, parts, af, func(old any, exists bool) (any, error) {
		if !exists {
			return codec.CopyValue(m.value), nil
		}
		c := Compare(m.value, old)
		if m.max && c > 0 || !m.max && c < 0 {
			return codec.CopyValue(m.value), nil
		}
		return old, nil
	})
	return changed, err
}

// mulOp is $mul: multiply the field by factor; a missing field becomes a
// zero of factor's type.
type mulOp struct {
	factor any
}

func compileMul(arg any) (moreOp, error) {
	n, err := codec.CloneValue(arg, "")
	if _, ok := ToNumber(n); err != nil || !ok {
		return nil, fmt.Errorf("cannot multiply by %s (a number is needed)", describeType(arg))
	}
	return mulOp{factor: n}, nil
}

func (m mulOp) apply(doc codec.Document, parts []string, af arrayFilters) (bool, error) {
	_, changed, err := setIn(doc, parts, af, func(old any, exists bool) (any, error) {
		if !exists {
			return reflect.Zero(reflect.TypeOf(m.factor)).Interface(), nil
		}
		return mulNumbers(old, m.factor)
	})
	return changed, err
}

// mulNumbers is old * factor with addNumbers' rules for the result's type:
// a float on either side gives float64; integers stay of old's Go kind if
// the product fits it, else int64; beyond int64 it is an overflow error.
func mulNumbers(old, factor any) (any, error) {
	a, ok := ToNumber(old)
	if !ok {
		return nil, fmt.Errorf("cannot multiply a non-numeric value (%s)", describeType(old))
	}
	if err := decimalArithmetic("multiply", old, factor); err != nil {
		return nil, err
	}
	b, _ := ToNumber(factor)
	if a.Kind == 'f' || b.Kind == 'f' {
		return a.Float() * b.Float(), nil
	}
	p := new(big.Int).Mul(bigInt(a), bigInt(b))
	if v, ok := intOfKind(p, old); ok {
		return v, nil
	}
	if p.IsInt64() {
		return p.Int64(), nil
	}
	return nil, fmt.Errorf("integer overflow: %v * %v", old, factor)
}

// renameOp is $rename: move the field's value to another path.
type renameOp struct {
	to []string
}

func compileRename(from string, arg any) (moreOp, error) {
	to, ok := arg.(string)
	if !ok {
		return nil, fmt.Errorf("the target must be a string, not %s", describeType(arg))
	}
	parts, err := splitFieldPath(to)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", to, err)
	}
	switch {
	case touchesID(to):
		return nil, fmt.Errorf("cannot rename to %q: _id is immutable", to)
	case to == from:
		return nil, fmt.Errorf("the source and target must differ (both %q)", to)
	case strings.HasPrefix(to, from+".") || strings.HasPrefix(from, to+"."):
		return nil, fmt.Errorf("the source %q and target %q must not be on the same path", from, to)
	}
	return renameOp{to: parts}, nil
}

func (r renameOp) apply(doc codec.Document, parts []string, af arrayFilters) (bool, error) {
	v, ok, err := renameLookup(doc, parts, "source")
	if err != nil || !ok {
		return false, err
	}
	if _, _, err := renameLookup(doc, r.to, "target"); err != nil {
		return false, err
	}
	unsetIn(doc, parts, af)
	if _, _, err := setIn(doc, r.to, af, func(any, bool) (any, error) { return v, nil }); err != nil {
		return false, err
	}
	return true, nil
}

// renameLookup finds the value at parts through documents only: $rename
// may not move a field into or out of an array. ok is false when the path
// is missing or blocked by a scalar.
func renameLookup(doc codec.Document, parts []string, what string) (any, bool, error) {
	var cur any = doc
	for i, p := range parts {
		m, ok := codec.AsDocument(cur)
		if !ok {
			if codec.IsArray(cur) {
				return nil, false, fmt.Errorf("the %s field %q cannot be an array element", what, strings.Join(parts, "."))
			}
			return nil, false, nil
		}
		if cur, ok = m[p]; !ok {
			return nil, false, nil
		}
		if i == len(parts)-1 {
			return cur, true, nil
		}
	}
	return nil, false, nil
}
