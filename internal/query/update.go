package query

import (
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Update operators ttldb supports.
const (
	opSet         = "$set"
	opUnset       = "$unset"
	opInc         = "$inc"
	opCurrentDate = "$currentDate"
)

// maxArrayPad bounds how far past the end of an array a $set, $inc or
// $currentDate may write. MongoDB pads with nulls without limit (until the
// document is too large); the bound keeps one update from allocating
// without limit.
const maxArrayPad = 10000

// Update is a compiled Update document ({$set: {...}, $push: {...}, …}):
// one operation per field path, sorted by path so that applying it (and
// any error it reports) is deterministic.
type Update struct {
	ops     []updateOp
	filters arrayFilters // the identifiers of "$[id]" paths (arrayfilters.go)
}

// updateOp is one field of one operator.
type updateOp struct {
	name  string   // operator, e.g. "$set"
	path  string   // dotted field path
	parts []string // path split at dots
	value any      // $set: validated private copy; $inc: the increment
	more  moreOp   // the operators of update_ops.go
}

// CompileUpdate validates an update document. Every top-level key must be
// one of updateOperators ($set, $unset, $inc, $mul, $min, $max, $rename,
// $currentDate, $setOnInsert, $push, $addToSet, $pull, $pop), each with a
// document argument (an empty argument is allowed and does nothing, as in
// MongoDB 5.0); an empty update, an unknown operator (the error lists the
// supported ones) or a plain field (a replacement) is refused. Field paths
// must be non-empty, without empty components or components starting with
// '$'. One path (or a path and its prefix, "a" and "a.b") may not appear
// twice, across all operators and counting a $rename's target. Only $set
// and $setOnInsert may touch _id (checked when applied). Values are
// validated and copied with CloneDocument's rules (an invalid value also
// wraps errs.ErrInvalidDocument; a bad $pull condition
// errs.ErrInvalidFilter); each operator's argument is checked as MongoDB
// does (update_ops.go). Errors wrap errs.ErrInvalidUpdate and name the
// operator and path.
func CompileUpdate(u map[string]any) (*Update, error) {
	return CompileUpdateWithArrayFilters(u, nil)
}

// compileUpdateOps is CompileUpdate without the check of the array
// filters' identifiers.
func compileUpdateOps(u map[string]any) (*Update, error) {
	u, err := codec.ExprDocument(u)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errs.ErrInvalidUpdate, err)
	}
	if len(u) == 0 {
		return nil, fmt.Errorf("%w: empty update document", errs.ErrInvalidUpdate)
	}
	var ops []updateOp
	for _, name := range SortedKeys(u) {
		if !strings.HasPrefix(name, "$") {
			return nil, fmt.Errorf("%w: field %q at top level: an update may hold only update operators (use ReplaceOne to replace a document)", errs.ErrInvalidUpdate, name)
		}
		if !isUpdateOperator(name) {
			return nil, fmt.Errorf("%w: unsupported update operator %s (supported: %s)", errs.ErrInvalidUpdate, name, strings.Join(updateOperators, ", "))
		}
		args, ok := codec.AsDocument(u[name])
		if !ok {
			return nil, fmt.Errorf("%w: %s: argument must be a document, not %s", errs.ErrInvalidUpdate, name, describeType(u[name]))
		}
		for _, path := range SortedKeys(args) {
			op, err := compileOp(name, path, args[path])
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		}
	}
	slices.SortFunc(ops, func(a, b updateOp) int { return strings.Compare(a.path, b.path) })
	paths := make([]string, 0, len(ops))
	for _, op := range ops {
		paths = append(paths, op.paths()...)
	}
	if a, b, ok := findPathConflict(paths); ok {
		return nil, fmt.Errorf("%w: updating the path %q would create a conflict at %q", errs.ErrInvalidUpdate, b, a)
	}
	return &Update{ops: ops}, nil
}

// compileOp validates one field of one (known) operator.
func compileOp(name, path string, arg any) (updateOp, error) {
	op := updateOp{name: name, path: path}
	parts, err := splitUpdatePath(path, name != opRename)
	if err != nil {
		return op, op.error(err)
	}
	op.parts = parts
	if name != opSet && name != opSetOnInsert && touchesID(path) {
		return op, fmt.Errorf("%w: %s %q: %w", errs.ErrInvalidUpdate, name, path, errs.ErrImmutableID)
	}
	switch name {
	case opSet, opSetOnInsert:
		op.value, err = cloneValueAt(parts, arg)
		if err != nil {
			return op, fmt.Errorf("%w: %s %q: %w", errs.ErrInvalidUpdate, name, path, err)
		}
	case opInc:
		// Normalized as a $set value is: a time.Duration or json.Number
		// increment is the number it holds.
		n, err := codec.CloneValue(arg, path)
		if _, ok := ToNumber(n); err != nil || !ok {
			return op, op.error(fmt.Errorf("increment must be a number, not %s", describeType(arg)))
		}
		op.value = n
	case opCurrentDate:
		if _, isDoc := codec.AsDocument(arg); !isDoc {
			if b, err := codec.CloneValue(arg, path); err == nil {
				arg = b // a named bool is the bool it holds
			}
		}
		err = checkCurrentDateSpec(arg)
		if err != nil {
			return op, op.error(err)
		}
	default:
		if err := op.compileMore(arg); err != nil {
			return op, err
		}
	}
	return op, nil
}

// checkCurrentDateSpec accepts true and {$type: "date"}. Timestamps are a
// MongoDB-internal type ttldb has no value for, so they are refused.
func checkCurrentDateSpec(arg any) error {
	if b, ok := arg.(bool); ok && b {
		return nil
	}
	spec, ok := codec.AsDocument(arg)
	if !ok || len(spec) != 1 {
		return errors.New(`value must be true or {$type: "date"}`)
	}
	switch spec["$type"] {
	case "date":
		return nil
	case "timestamp":
		return errors.New(`{$type: "timestamp"} is not supported`)
	}
	return errors.New(`value must be true or {$type: "date"}`)
}

// error wraps a reason with errs.ErrInvalidUpdate, naming the operator and path.
func (op *updateOp) error(reason error) error {
	return fmt.Errorf("%w: %s %q: %v", errs.ErrInvalidUpdate, op.name, op.path, reason)
}

// touchesID reports whether a path is _id or inside it.
func touchesID(path string) bool {
	return path == "_id" || strings.HasPrefix(path, "_id.")
}

// Apply returns the updated document as a new deep copy; doc itself is never
// modified (it is stored and shared with readers), and the result shares no
// map or slice with doc or with the update. now is the time $currentDate
// writes (without its monotonic reading). changed reports whether anything
// differs from doc; a value replaced by an equal one of another Go type
// (int by int64) counts as a change, one replaced by an identical one does
// not.
//
// Semantics, as in MongoDB: $set and $inc create missing intermediate
// documents; a numeric component addresses an array element (writing past
// the end pads with nulls, at most maxArrayPad elements); any other
// component on an array, or any component on a scalar or null, is an error.
// An array written into becomes []any. $unset deletes a field, sets an array
// element to null, and ignores missing paths. $inc of a missing field sets
// it; of a non-number it is an error; integers stay integers (of the stored
// Go kind if the sum fits it, else int64; beyond int64 it is an overflow
// error) and a float on either side gives float64. A $set of _id, or inside
// it, is allowed only if it leaves _id equal (Equal) to its value in
// doc, in which case _id is kept as stored; if doc has no _id (an upsert
// seed) it is set. The operators of update_ops.go follow MongoDB in the
// same way (see each one's type there); $setOnInsert applies only in
// ApplyInsert. Errors wrap errs.ErrInvalidUpdate (and errs.ErrImmutableID
// for _id) and name the operator and path; on error nothing is returned
// and doc is unchanged.
func (u *Update) Apply(doc codec.Document, now time.Time) (out codec.Document, changed bool, err error) {
	return u.apply(doc, now, false)
}

// ApplyInsert is Apply for the document an upsert inserts (doc is the seed
// UpsertSeed built): $setOnInsert applies only here.
func (u *Update) ApplyInsert(doc codec.Document, now time.Time) (out codec.Document, changed bool, err error) {
	return u.apply(doc, now, true)
}

func (u *Update) apply(doc codec.Document, now time.Time, insert bool) (out codec.Document, changed bool, err error) {
	out = codec.CopyDocument(doc)
	now = now.Round(0)
	for i := range u.ops {
		op := &u.ops[i]
		if op.name == opSetOnInsert && !insert {
			continue
		}
		if id, hasID := doc["_id"]; hasID && touchesID(op.path) {
			if err := op.checkIDUnchanged(id, now); err != nil {
				return nil, false, err
			}
			continue
		}
		c, err := op.applyTo(out, now, u.filters)
		if err != nil {
			return nil, false, err
		}
		changed = changed || c
	}
	return out, changed, nil
}

// checkIDUnchanged applies op to a scratch copy of _id, so that an update
// that sets _id to its own value is accepted without changing how it is
// stored.
func (op *updateOp) checkIDUnchanged(id any, now time.Time) error {
	scratch := codec.Document{"_id": codec.CopyValue(id)}
	if _, err := op.applyTo(scratch, now, nil); err != nil {
		return err
	}
	if !Equal(scratch["_id"], id) {
		return fmt.Errorf("%w: %s %q: would change the value of _id: %w", errs.ErrInvalidUpdate, op.name, op.path, errs.ErrImmutableID)
	}
	return nil
}

// applyTo performs op on doc, a private copy, in place.
func (op *updateOp) applyTo(doc codec.Document, now time.Time, af arrayFilters) (bool, error) {
	if op.more != nil {
		changed, err := op.more.apply(doc, op.parts, af)
		if err != nil {
			return false, op.error(err)
		}
		return changed, nil
	}
	if op.name == opUnset {
		_, changed := unsetIn(doc, op.parts, af)
		return changed, nil
	}
	_, changed, err := setIn(doc, op.parts, af, func(old any, exists bool) (any, error) {
		return op.newValue(old, exists, now)
	})
	if err != nil {
		return false, op.error(err)
	}
	return changed, nil
}

// newValue is the value op writes where the field holds old (if exists).
func (op *updateOp) newValue(old any, exists bool, now time.Time) (any, error) {
	switch op.name {
	case opInc:
		if !exists {
			return op.value, nil
		}
		return addNumbers(old, op.value)
	case opCurrentDate:
		return now, nil
	}
	return codec.CopyValue(op.value), nil
}

// leafFunc computes the value to write at the end of a path from the value
// there (exists is false if the field is missing). errLeafSkip leaves the
// field as it is (and creates nothing on the way).
type leafFunc func(old any, exists bool) (any, error)

// errLeafSkip is a leafFunc's "nothing to write here" ($pull and $pop on a
// missing field, which they ignore).
var errLeafSkip = errors.New("skip")

// setIn writes leaf's value at parts inside cur, a private copy, creating
// missing documents on the way. It returns cur, or its replacement when cur
// is an array (arrays are rebuilt as []any). changed is false if the value
// written is identical to the one there.
func setIn(cur any, parts []string, af arrayFilters, leaf leafFunc) (any, bool, error) {
	if id, ok := positional(parts[0]); ok {
		return setInElements(cur, id, parts, af, leaf)
	}
	if m, ok := codec.AsDocument(cur); ok {
		return setInDocument(m, parts, af, leaf)
	}
	if elems, ok := codec.ArrayElements(cur); ok {
		return setInArray(cur, elems, parts, af, leaf)
	}
	return nil, false, fmt.Errorf("cannot create field %q in %s", parts[0], describeType(cur))
}

// setInElements is setIn through "$[]" or "$[id]" (parts[0]): the rest of
// the path is set in every element (that the array filter id matches).
func setInElements(cur any, id string, parts []string, af arrayFilters, leaf leafFunc) (any, bool, error) {
	elems, ok := codec.ArrayElements(cur)
	if !ok {
		return nil, false, fmt.Errorf("cannot apply the array update %q to %s: it needs an array", parts[0], describeType(cur))
	}
	var out []any
	for i, e := range elems {
		if !af.elementMatches(id, e) {
			continue
		}
		nv, changed, err := setChild(e, true, parts, af, leaf)
		if err != nil {
			return nil, false, err
		}
		if changed {
			if out == nil {
				out = slices.Clone(elems)
			}
			out[i] = nv
		}
	}
	if out == nil {
		return cur, false, nil
	}
	return out, true, nil
}

func setInDocument(m map[string]any, parts []string, af arrayFilters, leaf leafFunc) (any, bool, error) {
	old, exists := m[parts[0]]
	nv, changed, err := setChild(old, exists, parts, af, leaf)
	if err != nil || !changed {
		return m, false, err
	}
	m[parts[0]] = nv
	return m, true, nil
}

func setInArray(cur any, elems []any, parts []string, af arrayFilters, leaf leafFunc) (any, bool, error) {
	i, ok := arrayIndex(parts[0])
	if !ok {
		return nil, false, fmt.Errorf("cannot create field %q in an array", parts[0])
	}
	if i >= len(elems)+maxArrayPad {
		return nil, false, fmt.Errorf("array index %d is more than %d past the end of the array", i, maxArrayPad)
	}
	var old any
	exists := i < len(elems)
	if exists {
		old = elems[i]
	}
	nv, changed, err := setChild(old, exists, parts, af, leaf)
	if err != nil || !changed {
		return cur, false, err
	}
	out := make([]any, max(len(elems), i+1))
	copy(out, elems)
	out[i] = nv
	return out, true, nil
}

// setChild computes the new value of the child parts[0] of a container,
// which holds old (if exists): the leaf value at the end of the path, else
// the child with the rest of the path set in it (a new document if the child
// is missing).
func setChild(old any, exists bool, parts []string, af arrayFilters, leaf leafFunc) (any, bool, error) {
	if len(parts) == 1 {
		nv, err := leaf(old, exists)
		if err == errLeafSkip {
			return old, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		return nv, !exists || !Identical(old, nv), nil
	}
	if !exists {
		if _, ok := positional(parts[1]); ok {
			return nil, false, fmt.Errorf("the path %q must exist in the document in order to apply array updates", parts[0])
		}
		old = codec.Document{}
	}
	return setIn(old, parts[1:], af, leaf)
}

// unsetIn removes the field at parts inside cur, a private copy; an array
// element is set to null instead, as MongoDB does. It returns cur or its
// replacement (arrays are rebuilt as []any) and whether anything changed.
func unsetIn(cur any, parts []string, af arrayFilters) (any, bool) {
	if id, ok := positional(parts[0]); ok {
		elems, ok := codec.ArrayElements(cur)
		if !ok {
			return cur, false
		}
		var out []any
		for i, e := range elems {
			if !af.elementMatches(id, e) {
				continue
			}
			var nv any // the element itself unset: null, as MongoDB does
			if len(parts) > 1 {
				var changed bool
				if nv, changed = unsetIn(e, parts[1:], af); !changed {
					continue
				}
			} else if e == nil {
				continue
			}
			if out == nil {
				out = slices.Clone(elems)
			}
			out[i] = nv
		}
		if out == nil {
			return cur, false
		}
		return out, true
	}
	if m, ok := codec.AsDocument(cur); ok {
		old, exists := m[parts[0]]
		switch {
		case !exists:
			return m, false
		case len(parts) == 1:
			delete(m, parts[0])
			return m, true
		}
		nv, changed := unsetIn(old, parts[1:], af)
		if changed {
			m[parts[0]] = nv
		}
		return m, changed
	}
	elems, ok := codec.ArrayElements(cur)
	if !ok {
		return cur, false
	}
	i, ok := arrayIndex(parts[0])
	if !ok || i >= len(elems) {
		return cur, false
	}
	var nv any
	if len(parts) > 1 {
		var changed bool
		if nv, changed = unsetIn(elems[i], parts[1:], af); !changed {
			return cur, false
		}
	} else if elems[i] == nil {
		return cur, false
	}
	out := slices.Clone(elems)
	out[i] = nv
	return out, true
}

// arrayIndex parses a path component that addresses an array element: a
// decimal number without sign or leading zeros.
func arrayIndex(s string) (int, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}

// addNumbers is $inc: old + inc, where inc is a number.
func addNumbers(old, inc any) (any, error) {
	a, ok := ToNumber(old)
	if !ok {
		return nil, fmt.Errorf("cannot increment a non-numeric value (%s)", describeType(old))
	}
	if err := decimalArithmetic("increment", old, inc); err != nil {
		return nil, err
	}
	b, _ := ToNumber(inc)
	if a.Kind == 'f' || b.Kind == 'f' {
		return a.Float() + b.Float(), nil
	}
	sum := new(big.Int).Add(bigInt(a), bigInt(b))
	if v, ok := intOfKind(sum, old); ok {
		return v, nil
	}
	if sum.IsInt64() {
		return sum.Int64(), nil
	}
	return nil, fmt.Errorf("integer overflow: %v + %v", old, inc)
}

// decimalArithmetic refuses $inc and $mul on Decimal128 values: ttldb
// compares them exactly but does not compute with them (MongoDB's decimal
// arithmetic rounds to 34 digits, which this would have to reproduce).
func decimalArithmetic(what string, a, b any) error {
	_, da := a.(bson.Decimal128)
	_, db := b.(bson.Decimal128)
	if da || db {
		return fmt.Errorf("cannot %s with a Decimal128 (ttldb stores and compares Decimal128 values but does not compute with them)", what)
	}
	return nil
}

func bigInt(n Number) *big.Int {
	if n.Kind == 'u' {
		return new(big.Int).SetUint64(n.U)
	}
	return big.NewInt(n.I)
}

// intOfKind returns v converted to the Go integer kind of like, if it fits,
// so that $inc keeps the stored kind.
func intOfKind(v *big.Int, like any) (any, bool) {
	rv := reflect.ValueOf(like)
	out := reflect.New(rv.Type()).Elem()
	switch {
	case rv.CanInt() && v.IsInt64() && !rv.OverflowInt(v.Int64()):
		out.SetInt(v.Int64())
	case rv.CanUint() && v.IsUint64() && !rv.OverflowUint(v.Uint64()):
		out.SetUint(v.Uint64())
	default:
		return nil, false
	}
	return out.Interface(), true
}

// Identical reports whether a and b are equal values of the same Go types
// throughout, so that writing b over a changes nothing a reader could see.
func Identical(a, b any) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	if ma, ok := codec.AsDocument(a); ok {
		mb, _ := codec.AsDocument(b)
		if len(ma) != len(mb) {
			return false
		}
		for k, va := range ma {
			vb, ok := mb[k]
			if !ok || !Identical(va, vb) {
				return false
			}
		}
		return true
	}
	if ea, ok := codec.ArrayElements(a); ok {
		eb, _ := codec.ArrayElements(b)
		return slices.EqualFunc(ea, eb, Identical)
	}
	return Equal(a, b)
}

// describeType names a value's type for error messages.
func describeType(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("a value of type %T", v)
}

// splitUpdatePath is splitFieldPath for an update's path: where arrays is
// true, "$[]" and "$[id]" components (id a valid identifier) are allowed
// (arrayfilters.go); the plain positional "$" is refused.
func splitUpdatePath(path string, arrays bool) ([]string, error) {
	if path == "" {
		return nil, errors.New("empty field path")
	}
	if !utf8.ValidString(path) {
		return nil, errors.New("field path is not valid UTF-8")
	}
	parts := strings.Split(path, ".")
	for _, p := range parts {
		id, pos := positional(p)
		switch {
		case p == "":
			return nil, errors.New("empty component in field path")
		case !strings.HasPrefix(p, "$"):
		case arrays && pos && id != "" && !validIdentifier(id):
			return nil, fmt.Errorf("the identifier %q of %q must begin with a lowercase letter and contain only letters and digits", id, p)
		case arrays && pos:
		case arrays && p == "$":
			return nil, errors.New("the positional operator $ is not supported: use $[] or $[<identifier>] with ArrayFilters")
		default:
			return nil, fmt.Errorf("path component %q may not start with '$'", p)
		}
	}
	return parts, nil
}

// splitFieldPath splits a dotted field path, refusing an empty path, empty
// components ("a..b") and components starting with '$'. Callers wrap the
// error with their own sentinel.
func splitFieldPath(path string) ([]string, error) {
	return splitUpdatePath(path, false)
}

// findPathConflict returns two of paths where the first equals the second or
// is a prefix of it at a dot ("a" and "a.b"), since both cannot be written
// (or projected) independently.
func findPathConflict(paths []string) (prefix, path string, found bool) {
	sorted := slices.Sorted(slices.Values(paths)) // a prefix sorts first
	seen := make(map[string]bool, len(sorted))
	for _, p := range sorted {
		if seen[p] {
			return p, p, true
		}
		for i := range len(p) {
			if p[i] == '.' && seen[p[:i]] {
				return p[:i], p, true
			}
		}
		seen[p] = true
	}
	return "", "", false
}

// cloneValueAt validates and copies v as the value at the field path parts,
// by cloning it inside documents nested along the path, so that
// CloneDocument's rules (value types, depth) apply and errors name the full
// path.
func cloneValueAt(parts []string, v any) (any, error) {
	c, err := codec.CloneDocument(nestAt(parts, v))
	if err != nil {
		return nil, err
	}
	val, _ := codec.GetPath(c, strings.Join(parts, "."))
	return val, nil
}

// nestAt returns {parts[0]: {parts[1]: … v}}.
func nestAt(parts []string, v any) map[string]any {
	for i := len(parts) - 1; i > 0; i-- {
		v = map[string]any{parts[i]: v}
	}
	return map[string]any{parts[0]: v}
}

// UpsertSeed builds the document an upsert starts from: the equality
// conditions of the filter (implicit equality {a: 1}, {a: {$eq: 1}}, and
// those inside top-level $and, recursively), dotted paths expanded into
// nested documents. Other operator conditions, and top-level operators other
// than $and, are ignored. Values are validated and copied (an invalid one
// also wraps errs.ErrInvalidDocument). Errors wrap errs.ErrInvalidFilter: a malformed
// $and or path, one path with two different values, or a path and its
// prefix ("a" and "a.b") both set.
func UpsertSeed(filter map[string]any) (codec.Document, error) {
	filter, err := exprDocument(filter)
	if err != nil {
		return nil, err
	}
	eqs := map[string]any{}
	if err := collectEqualities(filter, eqs); err != nil {
		return nil, err
	}
	paths := SortedKeys(eqs)
	if a, b, ok := findPathConflict(paths); ok {
		return nil, fmt.Errorf("%w: cannot build the upsert document: paths %q and %q conflict", errs.ErrInvalidFilter, a, b)
	}
	seed := codec.Document{}
	for _, p := range paths {
		insertNested(seed, strings.Split(p, "."), eqs[p])
	}
	return seed, nil
}

// collectEqualities adds the validated equality conditions of filter to eqs,
// keyed by path.
func collectEqualities(filter map[string]any, eqs map[string]any) error {
	for _, k := range SortedKeys(filter) {
		if k == "$and" {
			if err := collectAndEqualities(filter[k], eqs); err != nil {
				return err
			}
			continue
		}
		if strings.HasPrefix(k, "$") {
			continue
		}
		parts, err := splitFieldPath(k)
		if err != nil {
			return fmt.Errorf("%w: field %q: %v", errs.ErrInvalidFilter, k, err)
		}
		v, ok := equalityValue(filter[k])
		if !ok {
			continue
		}
		v, err = cloneValueAt(parts, v)
		if err != nil {
			return fmt.Errorf("%w: field %q: %w", errs.ErrInvalidFilter, k, err)
		}
		if prev, dup := eqs[k]; dup && !Equal(prev, v) {
			return fmt.Errorf("%w: cannot build the upsert document: field %q has two different equality conditions", errs.ErrInvalidFilter, k)
		}
		eqs[k] = v
	}
	return nil
}

func collectAndEqualities(arg any, eqs map[string]any) error {
	elems, ok := codec.ArrayElements(arg)
	if !ok || len(elems) == 0 {
		return fmt.Errorf("%w: $and must be a non-empty array of documents", errs.ErrInvalidFilter)
	}
	for i, e := range elems {
		sub, ok := codec.AsDocument(e)
		if !ok {
			return fmt.Errorf("%w: $and element %d must be a document, not %s", errs.ErrInvalidFilter, i, describeType(e))
		}
		if err := collectEqualities(sub, eqs); err != nil {
			return err
		}
	}
	return nil
}

// equalityValue returns the value a field condition requires the field to
// equal: the condition itself, unless it is an operator document ({$gt: 1}),
// in which case only $eq counts.
func equalityValue(cond any) (any, bool) {
	if IsRegex(cond) {
		return nil, false // a pattern, not a value
	}
	m, ok := codec.AsDocument(cond)
	if !ok {
		return cond, true
	}
	for k := range m {
		if strings.HasPrefix(k, "$") {
			v, ok := m["$eq"]
			return v, ok
		}
	}
	return cond, true
}

// insertNested sets v at parts in doc, creating documents on the way (a
// value on the way that is not a document is replaced by one: the paths
// of one upsert seed never conflict, so there the way is always documents
// this function created).
func insertNested(doc codec.Document, parts []string, v any) {
	for _, p := range parts[:len(parts)-1] {
		next, ok := codec.AsDocument(doc[p])
		if !ok {
			next = codec.Document{}
			doc[p] = next
		}
		doc = next
	}
	doc[parts[len(parts)-1]] = v
}

// ValidateReplacement checks a ReplaceOne replacement: it may not hold
// top-level $-operator keys (the caller probably meant an update). The
// error wraps errs.ErrInvalidUpdate. The rest is validated when the document is
// stored.
func ValidateReplacement(r map[string]any) error {
	for _, k := range SortedKeys(r) {
		if strings.HasPrefix(k, "$") {
			return fmt.Errorf("%w: replacement document may not contain update operator %q (use UpdateOne)", errs.ErrInvalidUpdate, k)
		}
	}
	return nil
}
