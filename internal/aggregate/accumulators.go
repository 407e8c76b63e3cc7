package aggregate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// MaxAccumulatorN bounds the n of $topN, $bottomN, $firstN, $lastN,
// $maxN and $minN: each group holds up to n values.
const MaxAccumulatorN = 100_000

// accState is the running state of one accumulator over one group (or,
// later, one window).
type accState interface {
	// add takes one document's value (what the accumulator's input
	// gives, Missing included) and returns by how many bytes the state
	// grew, an estimate (negative: it shrank).
	add(v any) (int64, error)
	// result is the accumulated value.
	result() (any, error)
}

// accumulator is one compiled accumulator ({$sum: expr}): how a
// document gives the value its states add, and how a state is made.
type accumulator struct {
	op string
	// input evaluates what a document adds (env holds the document).
	input func(env *query.Env) (any, error)
	// newState makes a group's state; key is the group's _id (what n
	// expressions may read).
	newState func(key any) (accState, error)
}

// accCompiler compiles an accumulator's argument (as given: a bson.D
// keeps its order).
type accCompiler func(c *compiler, op string, arg any) (*accumulator, error)

// accumulators holds the accumulators by name.
var accumulators map[string]accCompiler

func init() {
	accumulators = map[string]accCompiler{
		"$sum":          simpleAcc(func() accState { return &sumState{} }),
		"$avg":          simpleAcc(func() accState { return &sumState{avg: true} }),
		"$min":          simpleAcc(func() accState { return &minMaxState{sign: -1} }),
		"$max":          simpleAcc(func() accState { return &minMaxState{sign: 1} }),
		"$first":        simpleAcc(func() accState { return &firstLastState{} }),
		"$last":         simpleAcc(func() accState { return &firstLastState{last: true} }),
		"$push":         simpleAcc(func() accState { return &pushState{} }),
		"$addToSet":     simpleAcc(func() accState { return &addToSetState{} }),
		"$stdDevPop":    simpleAcc(func() accState { return &stdDevState{} }),
		"$stdDevSamp":   simpleAcc(func() accState { return &stdDevState{samp: true} }),
		"$mergeObjects": simpleAcc(func() accState { return &mergeObjectsState{} }),
		"$count":        compileCountAcc,
		"$top":          compileTopBottom,
		"$bottom":       compileTopBottom,
		"$topN":         compileTopBottom,
		"$bottomN":      compileTopBottom,
		"$firstN":       compileNAcc,
		"$lastN":        compileNAcc,
		"$maxN":         compileNAcc,
		"$minN":         compileNAcc,
	}
}

// compileAccumulator compiles one output field's {$acc: arg}.
func compileAccumulator(c *compiler, spec any) (*accumulator, error) {
	fields, ok := OrderedFields(spec)
	if !ok || len(fields) != 1 || !strings.HasPrefix(fields[0].Key, "$") {
		return nil, fmt.Errorf("an accumulator is a document with one field, the accumulator ({$sum: ...}), not %v", spec)
	}
	op := fields[0].Key
	f, ok := accumulators[op]
	if !ok {
		return nil, fmt.Errorf("unknown or unsupported accumulator %s", op)
	}
	a, err := f(c, op, fields[0].Value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return a, nil
}

// exprInput compiles an accumulator's expression argument.
func exprInput(c *compiler, arg any) (func(env *query.Env) (any, error), error) {
	e, err := query.CompileExprWith(arg, c.exprs)
	if err != nil {
		return nil, err
	}
	return e.Evaluate, nil
}

// simpleAcc is an accumulator of one expression (an array is one
// expression: $push of [a, b] pushes arrays).
func simpleAcc(newState func() accState) accCompiler {
	return func(c *compiler, op string, arg any) (*accumulator, error) {
		in, err := exprInput(c, arg)
		if err != nil {
			return nil, err
		}
		return &accumulator{op: op, input: in, newState: func(any) (accState, error) { return newState(), nil }}, nil
	}
}

// compileCountAcc compiles {$count: {}}: the number of documents.
func compileCountAcc(_ *compiler, op string, arg any) (*accumulator, error) {
	m, ok := OrderedFields(arg)
	if !ok || len(m) != 0 {
		return nil, fmt.Errorf("the argument must be an empty document ({})")
	}
	one := int32(1)
	return &accumulator{
		op:       op,
		input:    func(*query.Env) (any, error) { return one, nil },
		newState: func(any) (accState, error) { return &sumState{}, nil },
	}, nil
}

// sumState is $sum and $avg: numbers only (others ignored). $sum's
// result is an int while every value is an int and the sum fits, a long
// while they are ints and longs and it fits, a double once a double was
// added or a long sum overflowed, a decimal once a decimal was added.
// $avg's is a double (a decimal once a decimal was added), null when
// there were no numbers.
type sumState struct {
	avg   bool
	kind  int   // the widest type added: 0 int, 1 long, 2 double, 3 decimal
	count int64 // numbers added
	n     numSum
}

func (s *sumState) add(v any) (int64, error) {
	num, ok := query.ToNumber(v)
	if !ok {
		return 0, nil
	}
	s.kind = max(s.kind, numKind(v))
	s.count++
	s.n.add(num)
	return 0, nil
}

func (s *sumState) result() (any, error) {
	if s.avg {
		if s.count == 0 {
			return nil, nil
		}
		if s.kind == 3 {
			return s.n.decimalQuo(s.count), nil
		}
		return s.n.float() / float64(s.count), nil
	}
	return s.n.typed(s.kind), nil
}

// minMaxState is $min (sign -1) and $max (sign 1): the least or greatest
// value in BSON order, null and missing ignored; null when there is none.
type minMaxState struct {
	sign int
	v    any
	have bool
}

func (s *minMaxState) add(v any) (int64, error) {
	if v == nil || query.IsMissing(v) {
		return 0, nil
	}
	if !s.have || query.Compare(v, s.v)*s.sign > 0 {
		grew := sizeOf(v)
		if s.have {
			grew -= sizeOf(s.v)
		}
		s.v, s.have = v, true
		return grew, nil
	}
	return 0, nil
}

func (s *minMaxState) result() (any, error) { return s.v, nil }

// firstLastState is $first and $last: a missing value is null.
type firstLastState struct {
	last bool
	v    any
	have bool
}

func (s *firstLastState) add(v any) (int64, error) {
	if s.have && !s.last {
		return 0, nil
	}
	if query.IsMissing(v) {
		v = nil
	}
	grew := sizeOf(v)
	if s.have {
		grew -= sizeOf(s.v)
	}
	s.v, s.have = v, true
	return grew, nil
}

func (s *firstLastState) result() (any, error) { return s.v, nil }

// pushState is $push: every value but missing ones, in order.
type pushState struct{ vals []any }

func (s *pushState) add(v any) (int64, error) {
	if query.IsMissing(v) {
		return 0, nil
	}
	s.vals = append(s.vals, v)
	return sizeOf(v), nil
}

func (s *pushState) result() (any, error) {
	if s.vals == nil {
		return []any{}, nil
	}
	return s.vals, nil
}

// addToSetState is $addToSet: the distinct values (query.Equal), missing
// ones left out; the order is that of their first appearance (MongoDB
// leaves it unspecified).
type addToSetState struct {
	vals []any
	seen map[string]bool
}

func (s *addToSetState) add(v any) (int64, error) {
	if query.IsMissing(v) {
		return 0, nil
	}
	k := valueKey(v)
	if s.seen[k] {
		return 0, nil
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[k] = true
	s.vals = append(s.vals, v)
	return sizeOf(v) + int64(len(k)) + fieldOverhead, nil
}

func (s *addToSetState) result() (any, error) {
	if s.vals == nil {
		return []any{}, nil
	}
	return s.vals, nil
}

// stdDevState is $stdDevPop and $stdDevSamp (Welford's algorithm):
// numbers only; null without numbers (or with fewer than two for the
// sample's).
type stdDevState struct {
	samp     bool
	n        int64
	mean, m2 float64
}

func (s *stdDevState) add(v any) (int64, error) {
	num, ok := query.ToNumber(v)
	if !ok {
		return 0, nil
	}
	x := num.Float()
	s.n++
	d := x - s.mean
	s.mean += d / float64(s.n)
	s.m2 += d * (x - s.mean)
	return 0, nil
}

func (s *stdDevState) result() (any, error) {
	switch {
	case s.n == 0, s.samp && s.n < 2:
		return nil, nil
	case s.samp:
		return math.Sqrt(s.m2 / float64(s.n-1)), nil
	}
	return math.Sqrt(s.m2 / float64(s.n)), nil
}

// mergeObjectsState is $mergeObjects: the documents' fields, a later
// document's replacing an earlier one's; null and missing ignored.
type mergeObjectsState struct{ out Document }

func (s *mergeObjectsState) add(v any) (int64, error) {
	if v == nil || query.IsMissing(v) {
		return 0, nil
	}
	m, ok := codec.AsDocument(v)
	if !ok {
		return 0, runErr("it takes documents, not %s (%v)", query.TypeName(v), v)
	}
	if s.out == nil {
		s.out = Document{}
	}
	var grew int64
	for k, x := range m {
		if old, had := s.out[k]; had {
			grew -= sizeOf(old)
		} else {
			grew += fieldOverhead + int64(len(k))
		}
		s.out[k] = x
		grew += sizeOf(x)
	}
	return grew, nil
}

func (s *mergeObjectsState) result() (any, error) {
	if s.out == nil {
		return Document{}, nil
	}
	return s.out, nil
}

// nArg compiles the n argument of the N accumulators: an expression
// evaluated once per group, a whole number in [1, MaxAccumulatorN].
// MongoDB's n is a constant or depends on the group's _id: it is
// evaluated with the _id as $$CURRENT when the _id is a document ({_id:
// {gameId: "$gameId"}} lets n read "$gameId"), against an empty document
// otherwise.
func nArg(c *compiler, v any) (func(key any) (int, error), error) {
	e, err := query.CompileExprWith(v, c.exprs)
	if err != nil {
		return nil, fmt.Errorf("n: %w", err)
	}
	check := func(x any) (int, error) {
		n, err := wholeNumber("n", x, 1, MaxAccumulatorN)
		return int(n), err
	}
	if k, ok := e.IsConstant(); ok {
		if _, err := check(k); err != nil {
			return nil, err
		}
	}
	return func(key any) (int, error) {
		var env query.Env
		cur, ok := codec.AsDocument(key)
		if !ok {
			cur = Document{}
		}
		env.Reset(cur)
		x, err := e.Evaluate(&env)
		if err != nil {
			return 0, fmt.Errorf("n: %w", err)
		}
		n, err := check(x)
		if err != nil {
			return 0, runErr("%v", err)
		}
		return n, nil
	}, nil
}

// namedArgs reads an accumulator's document of named arguments (as
// given: values keep their driver form), checking the names.
func namedArgs(arg any, required, optional []string) (map[string]any, error) {
	fields, ok := OrderedFields(arg)
	if !ok {
		return nil, fmt.Errorf("the argument must be a document of named arguments, not %v", arg)
	}
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		known := false
		for _, k := range append(required[:len(required):len(required)], optional...) {
			known = known || k == f.Key
		}
		if !known {
			return nil, fmt.Errorf("unknown argument %q", f.Key)
		}
		out[f.Key] = f.Value
	}
	for _, k := range required {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("missing argument %q", k)
		}
	}
	return out, nil
}

// compileNAcc compiles $firstN, $lastN ({input, n}: null kept, missing
// as null) and $maxN, $minN ({input, n}: null and missing left out).
func compileNAcc(c *compiler, op string, arg any) (*accumulator, error) {
	args, err := namedArgs(arg, []string{"input", "n"}, nil)
	if err != nil {
		return nil, err
	}
	in, err := exprInput(c, args["input"])
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	n, err := nArg(c, args["n"])
	if err != nil {
		return nil, err
	}
	return &accumulator{op: op, input: in, newState: func(key any) (accState, error) {
		k, err := n(key)
		if err != nil {
			return nil, err
		}
		switch op {
		case "$firstN":
			return &firstNState{n: k}, nil
		case "$lastN":
			return &firstNState{n: k, last: true}, nil
		case "$maxN":
			return &bestNState{n: k, cmp: func(a, b *sortItem) int { return -query.Compare(a.out, b.out) }, skipNull: true}, nil
		}
		return &bestNState{n: k, cmp: func(a, b *sortItem) int { return query.Compare(a.out, b.out) }, skipNull: true}, nil
	}}, nil
}

// firstNState is $firstN and $lastN.
type firstNState struct {
	n    int
	last bool
	vals []any
	size []int64
}

func (s *firstNState) add(v any) (int64, error) {
	if query.IsMissing(v) {
		v = nil
	}
	if len(s.vals) == s.n {
		if !s.last {
			return 0, nil
		}
		grew := sizeOf(v) - s.size[0]
		s.vals, s.size = append(s.vals[1:], v), append(s.size[1:], sizeOf(v))
		return grew, nil
	}
	s.vals, s.size = append(s.vals, v), append(s.size, sizeOf(v))
	return sizeOf(v), nil
}

func (s *firstNState) result() (any, error) {
	out := make([]any, len(s.vals))
	copy(out, s.vals)
	return out, nil
}

// sortItem is a value with the keys it sorts by ($top's output and
// sortBy keys) and its arrival (ties keep it).
type sortItem struct {
	keys []any
	out  any
	seq  int64
	size int64
}

// compileTopBottom compiles $top, $bottom ({sortBy, output}) and $topN,
// $bottomN ({n, sortBy, output}): the output of the first (or last) n
// documents in the sortBy order; a missing output is null.
func compileTopBottom(c *compiler, op string, arg any) (*accumulator, error) {
	withN := op == "$topN" || op == "$bottomN"
	req := []string{"sortBy", "output"}
	if withN {
		req = append(req, "n")
	}
	args, err := namedArgs(arg, req, nil)
	if err != nil {
		return nil, err
	}
	keys, err := sortKeys(args["sortBy"])
	if err != nil {
		return nil, fmt.Errorf("sortBy: %w", err)
	}
	out, err := exprInput(c, args["output"])
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	n := func(any) (int, error) { return 1, nil }
	if withN {
		if n, err = nArg(c, args["n"]); err != nil {
			return nil, err
		}
	}
	sign := 1
	if op == "$bottom" || op == "$bottomN" {
		sign = -1
	}
	cmp := func(a, b *sortItem) int { return compareKeys(a.keys, b.keys, keys) * sign }
	return &accumulator{
		op: op,
		input: func(env *query.Env) (any, error) {
			o, err := out(env)
			if err != nil {
				return nil, err
			}
			if query.IsMissing(o) {
				o = nil
			}
			doc, _ := codec.AsDocument(env.Current)
			return &sortItem{keys: docSortKeys(doc, keys), out: o}, nil
		},
		newState: func(key any) (accState, error) {
			k, err := n(key)
			if err != nil {
				return nil, err
			}
			return &bestNState{n: k, cmp: cmp, single: !withN, reverse: sign < 0}, nil
		},
	}, nil
}

// bestNState keeps the n best items under cmp (the least first): $topN,
// $bottomN (cmp reversed, the result in sortBy order), $maxN, $minN.
type bestNState struct {
	n        int
	cmp      func(a, b *sortItem) int
	items    []*sortItem // sorted by cmp, then arrival
	skipNull bool        // $maxN, $minN: null and missing left out
	single   bool        // $top, $bottom: the value, not an array
	reverse  bool        // $bottom, $bottomN: the result in sortBy order
	seq      int64
}

func (s *bestNState) add(v any) (int64, error) {
	it, ok := v.(*sortItem)
	if !ok {
		if s.skipNull && (v == nil || query.IsMissing(v)) {
			return 0, nil
		}
		it = &sortItem{out: v}
	}
	s.seq++
	it.seq = s.seq
	it.size = sizeOf(it.out) + int64(len(it.keys))*valueOverhead
	for _, k := range it.keys {
		it.size += sizeOf(k)
	}
	less := func(a, b *sortItem) bool {
		if c := s.cmp(a, b); c != 0 {
			return c < 0
		}
		return a.seq < b.seq
	}
	i := sort.Search(len(s.items), func(i int) bool { return less(it, s.items[i]) })
	if i >= s.n {
		return 0, nil
	}
	grew := it.size
	s.items = append(s.items, nil)
	copy(s.items[i+1:], s.items[i:])
	s.items[i] = it
	if len(s.items) > s.n {
		grew -= s.items[s.n].size
		s.items = s.items[:s.n]
	}
	return grew, nil
}

func (s *bestNState) result() (any, error) {
	if s.single {
		if len(s.items) == 0 {
			return nil, nil
		}
		return s.items[0].out, nil
	}
	out := make([]any, len(s.items))
	for i, it := range s.items {
		if s.reverse {
			out[len(out)-1-i] = it.out
		} else {
			out[i] = it.out
		}
	}
	return out, nil
}
