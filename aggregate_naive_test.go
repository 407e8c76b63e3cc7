package ttldb_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The naive evaluator: a deliberately plain implementation of a subset of
// MongoDB's aggregation pipeline, written from the MongoDB manual for the
// differential test (aggregate_differential_test.go) and independent of the
// library's code. It favours being obviously right over being fast: every
// stage walks its whole input, groups are found by linear search.
//
// Values are nil, bool, string, int32 (BSON int), int64 (BSON long; Go int
// is read as a long), float64 (double), []any, map[string]any, and
// nvMissing for a field that is absent.

// nvMissingT is the type of nvMissing.
type nvMissingT struct{}

// nvMissing stands for the value of an absent field: it differs from null
// in expressions (it compares below null), and a field set to it is removed.
var nvMissing = nvMissingT{}

// errNaive is what every error of the naive evaluator wraps.
var errNaive = errors.New("naive aggregate")

func nvErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNaive, fmt.Sprintf(format, args...))
}

// naiveAggregate runs pipeline over docs and returns the results. The
// input documents are not modified.
func naiveAggregate(docs []map[string]any, pipeline []bson.D) ([]map[string]any, error) {
	cur := slices.Clone(docs)
	for _, stage := range pipeline {
		if len(stage) != 1 {
			return nil, nvErr("a stage has one field, not %d", len(stage))
		}
		var err error
		cur, err = nvStage(cur, stage[0].Key, stage[0].Value)
		if err != nil {
			return nil, err
		}
	}
	return cur, nil
}

func nvStage(docs []map[string]any, name string, spec any) ([]map[string]any, error) {
	var out []map[string]any
	switch name {
	case "$match":
		filter, ok := spec.(bson.D)
		if !ok {
			return nil, nvErr("$match takes a document")
		}
		for _, d := range docs {
			if nvMatches(d, filter) {
				out = append(out, d)
			}
		}
	case "$project":
		return nvProject(docs, spec)
	case "$addFields", "$set":
		fields, ok := spec.(bson.D)
		if !ok {
			return nil, nvErr("%s takes a document", name)
		}
		for _, d := range docs {
			nd := nvCopy(d)
			for _, f := range fields {
				// Every expression sees the input document.
				v, err := nvEval(f.Value, d)
				if err != nil {
					return nil, err
				}
				nvSet(nd, f.Key, v)
			}
			out = append(out, nd)
		}
	case "$unset":
		var names []string
		switch s := spec.(type) {
		case string:
			names = []string{s}
		case bson.A:
			for _, n := range s {
				names = append(names, n.(string))
			}
		default:
			return nil, nvErr("$unset takes a name or an array of names")
		}
		for _, d := range docs {
			nd := nvCopy(d)
			for _, n := range names {
				delete(nd, n)
			}
			out = append(out, nd)
		}
	case "$group":
		return nvGroup(docs, spec)
	case "$sort":
		keys, ok := spec.(bson.D)
		if !ok || len(keys) == 0 {
			return nil, nvErr("$sort takes a non-empty document")
		}
		out = slices.Clone(docs)
		sort.SliceStable(out, func(i, j int) bool {
			for _, k := range keys {
				n, _ := nvInt(k.Value)
				c := nvCompare(nvSortKey(nvGet(out[i], k.Key), n < 0), nvSortKey(nvGet(out[j], k.Key), n < 0))
				if n < 0 {
					c = -c
				}
				if c != 0 {
					return c < 0
				}
			}
			return false
		})
	case "$limit", "$skip":
		n, ok := nvInt(spec)
		if !ok || n < 0 || (name == "$limit" && n == 0) {
			return nil, nvErr("bad %s %v", name, spec)
		}
		if n > int64(len(docs)) {
			n = int64(len(docs))
		}
		if name == "$limit" {
			return docs[:n], nil
		}
		return docs[n:], nil
	case "$unwind":
		return nvUnwind(docs, spec)
	case "$count":
		field, ok := spec.(string)
		if !ok || field == "" || strings.ContainsAny(field, "$.") {
			return nil, nvErr("bad $count %v", spec)
		}
		if len(docs) > 0 {
			out = []map[string]any{{field: nvIntOrLong(int64(len(docs)))}}
		}
	case "$sortByCount":
		groups, err := nvGroup(docs, bson.D{{Key: "_id", Value: spec}, {Key: "count", Value: bson.D{{Key: "$sum", Value: int32(1)}}}})
		if err != nil {
			return nil, err
		}
		sort.SliceStable(groups, func(i, j int) bool {
			return nvCompare(groups[i]["count"], groups[j]["count"]) > 0
		})
		return groups, nil
	case "$replaceRoot":
		s, ok := spec.(bson.D)
		if !ok || len(s) != 1 || s[0].Key != "newRoot" {
			return nil, nvErr("$replaceRoot takes {newRoot: expr}")
		}
		for _, d := range docs {
			v, err := nvEval(s[0].Value, d)
			if err != nil {
				return nil, err
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil, nvErr("$replaceRoot: newRoot is %s, not a document", nvTypeName(v))
			}
			out = append(out, m)
		}
	default:
		return nil, nvErr("unknown stage %s", name)
	}
	return out, nil
}

// nvProject is $project: inclusion (with computed fields) or exclusion.
func nvProject(docs []map[string]any, spec any) ([]map[string]any, error) {
	fields, ok := spec.(bson.D)
	if !ok || len(fields) == 0 {
		return nil, nvErr("$project takes a non-empty document")
	}
	includeID, idFlag := true, false
	var included, excluded []string
	var computed bson.D
	for _, f := range fields {
		switch v := f.Value.(type) {
		case bool, int32, int64, int, float64:
			flag := nvTruthy(v)
			switch {
			case f.Key == "_id":
				includeID, idFlag = flag, true
			case flag:
				included = append(included, f.Key)
			default:
				excluded = append(excluded, f.Key)
			}
		default:
			computed = append(computed, f)
		}
	}
	// The fields other than _id decide the mode; alone, _id decides it.
	exclusion := len(excluded) > 0 || (len(included) == 0 && len(computed) == 0 && !(idFlag && includeID))
	if len(excluded) > 0 && (len(included) > 0 || len(computed) > 0) {
		return nil, nvErr("$project mixes inclusion and exclusion")
	}
	var out []map[string]any
	for _, d := range docs {
		nd := map[string]any{}
		if exclusion {
			nd = nvCopy(d)
			for _, n := range excluded {
				delete(nd, n)
			}
			if !includeID {
				delete(nd, "_id")
			}
			out = append(out, nd)
			continue
		}
		if v, ok := d["_id"]; ok && includeID {
			nd["_id"] = v
		}
		for _, n := range included {
			if v, ok := d[n]; ok {
				nd[n] = v
			}
		}
		for _, f := range computed {
			v, err := nvEval(f.Value, d)
			if err != nil {
				return nil, err
			}
			nvSet(nd, f.Key, v)
		}
		out = append(out, nd)
	}
	return out, nil
}

// nvGroup is $group: groups in order of first appearance, each
// accumulator fed the group's documents in input order.
func nvGroup(docs []map[string]any, spec any) ([]map[string]any, error) {
	fields, ok := spec.(bson.D)
	if !ok || len(fields) == 0 || fields[0].Key != "_id" {
		return nil, nvErr("$group takes a document starting with _id")
	}
	var keys []any
	var members [][]map[string]any
	for _, d := range docs {
		k, err := nvEval(fields[0].Value, d)
		if err != nil {
			return nil, err
		}
		if k == nvMissing {
			k = nil
		}
		// MongoDB groups on an _id document's fields one by one: a
		// document of one field whose value is missing holds null (with
		// more fields, a missing one is left out).
		if id, ok := fields[0].Value.(bson.D); ok && len(id) == 1 && !strings.HasPrefix(id[0].Key, "$") {
			if m := k.(map[string]any); len(m) == 0 {
				k = map[string]any{id[0].Key: nil}
			}
		}
		i := slices.IndexFunc(keys, func(x any) bool { return nvCompare(x, k) == 0 })
		if i < 0 {
			keys = append(keys, k)
			members = append(members, nil)
			i = len(keys) - 1
		}
		members[i] = append(members[i], d)
	}
	var out []map[string]any
	for gi, k := range keys {
		nd := map[string]any{"_id": k}
		for _, f := range fields[1:] {
			acc, ok := f.Value.(bson.D)
			if !ok || len(acc) != 1 {
				return nil, nvErr("$group field %s takes {accumulator: expr}", f.Key)
			}
			var vals []any
			for _, d := range members[gi] {
				v, err := nvEval(acc[0].Value, d)
				if err != nil {
					return nil, err
				}
				vals = append(vals, v)
			}
			v, err := nvAccumulate(acc[0].Key, vals)
			if err != nil {
				return nil, err
			}
			nd[f.Key] = v
		}
		out = append(out, nd)
	}
	return out, nil
}

// nvAccumulate applies an accumulator to a group's values (nvMissing for
// a document where the expression is missing).
func nvAccumulate(op string, vals []any) (any, error) {
	switch op {
	case "$sum":
		var nums []any
		for _, v := range vals {
			if nvIsNumber(v) {
				nums = append(nums, v)
			}
		}
		return nvSum(nums), nil
	case "$count":
		return nvIntOrLong(int64(len(vals))), nil
	case "$avg":
		var nums []any
		for _, v := range vals {
			if nvIsNumber(v) {
				nums = append(nums, v)
			}
		}
		if len(nums) == 0 {
			return nil, nil
		}
		return nvExactSum(nums) / float64(len(nums)), nil
	case "$min", "$max":
		var best any
		for _, v := range vals {
			if v == nil || v == nvMissing {
				continue
			}
			c := 0
			if best != nil {
				c = nvCompare(v, best)
			}
			if best == nil || (op == "$min" && c < 0) || (op == "$max" && c > 0) {
				best = v
			}
		}
		return best, nil
	case "$first", "$last":
		if len(vals) == 0 {
			return nil, nil
		}
		v := vals[0]
		if op == "$last" {
			v = vals[len(vals)-1]
		}
		if v == nvMissing {
			v = nil
		}
		return v, nil
	case "$push", "$addToSet":
		out := []any{}
		for _, v := range vals {
			if v == nvMissing {
				continue
			}
			if op == "$addToSet" && slices.ContainsFunc(out, func(x any) bool { return nvCompare(x, v) == 0 }) {
				continue
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, nvErr("unknown accumulator %s", op)
}

// nvUnwind is $unwind, in its string form or its document form.
func nvUnwind(docs []map[string]any, spec any) ([]map[string]any, error) {
	var path, index string
	preserve := false
	switch s := spec.(type) {
	case string:
		path = s
	case bson.D:
		for _, f := range s {
			switch f.Key {
			case "path":
				path, _ = f.Value.(string)
			case "includeArrayIndex":
				index, _ = f.Value.(string)
			case "preserveNullAndEmptyArrays":
				preserve, _ = f.Value.(bool)
			default:
				return nil, nvErr("$unwind: unknown option %s", f.Key)
			}
		}
	}
	if !strings.HasPrefix(path, "$") || len(path) < 2 {
		return nil, nvErr("$unwind: bad path %q", path)
	}
	field := path[1:]
	var out []map[string]any
	emit := func(d map[string]any, v any, i any) {
		nd := nvCopy(d)
		nvSet(nd, field, v)
		if index != "" {
			nd[index] = i
		}
		out = append(out, nd)
	}
	for _, d := range docs {
		v := nvGet(d, field)
		switch a := v.(type) {
		case []any:
			if len(a) == 0 && preserve {
				emit(d, nvMissing, nil) // an empty array is removed
			}
			for i, e := range a {
				emit(d, e, int64(i))
			}
		case nil, nvMissingT:
			if preserve {
				emit(d, v, nil)
			}
		default:
			// A non-array operand is a one-element array, with no index.
			emit(d, v, nil)
		}
	}
	return out, nil
}

// nvMatches evaluates a query filter (top-level fields, $and/$or, and
// the operators $eq $ne $gt $gte $lt $lte $in $exists).
func nvMatches(d map[string]any, filter bson.D) bool {
	for _, f := range filter {
		switch f.Key {
		case "$and", "$or":
			any1, all := false, true
			for _, sub := range f.Value.(bson.A) {
				if nvMatches(d, sub.(bson.D)) {
					any1 = true
				} else {
					all = false
				}
			}
			if (f.Key == "$and" && !all) || (f.Key == "$or" && !any1) {
				return false
			}
		default:
			if !nvMatchField(nvGet(d, f.Key), f.Value) {
				return false
			}
		}
	}
	return true
}

func nvMatchField(v, cond any) bool {
	ops, ok := cond.(bson.D)
	if !ok || len(ops) == 0 || !strings.HasPrefix(ops[0].Key, "$") {
		return nvQueryEq(v, cond)
	}
	for _, op := range ops {
		var m bool
		switch op.Key {
		case "$eq":
			m = nvQueryEq(v, op.Value)
		case "$ne":
			m = !nvQueryEq(v, op.Value)
		case "$in":
			for _, x := range op.Value.(bson.A) {
				m = m || nvQueryEq(v, x)
			}
		case "$exists":
			m = (v != nvMissing) == nvTruthy(op.Value)
		case "$gt", "$gte", "$lt", "$lte":
			m = nvQueryCmp(v, op.Key, op.Value)
			if a, ok := v.([]any); ok {
				for _, e := range a {
					m = m || nvQueryCmp(e, op.Key, op.Value)
				}
			}
		default:
			panic("naive $match: unknown operator " + op.Key)
		}
		if !m {
			return false
		}
	}
	return true
}

// nvQueryEq is the query language's equality: null matches null and
// missing; an array matches when it or one of its elements is equal.
func nvQueryEq(v, x any) bool {
	if x == nil && (v == nil || v == nvMissing) {
		return true
	}
	if v == nvMissing {
		return false
	}
	if nvCompare(v, x) == 0 {
		return true
	}
	if a, ok := v.([]any); ok {
		for _, e := range a {
			if nvQueryEq(e, x) && e != nvMissing {
				return true
			}
		}
	}
	return false
}

// nvQueryCmp is a query comparison of one value (not through arrays): it
// only matches values of the operand's type bracket; a null operand is
// matched by $gte and $lte on null and missing.
func nvQueryCmp(v any, op string, x any) bool {
	if x == nil {
		return (op == "$gte" || op == "$lte") && (v == nil || v == nvMissing)
	}
	if v == nvMissing || nvCanon(v) != nvCanon(x) {
		return false
	}
	c := nvCompare(v, x)
	switch op {
	case "$gt":
		return c > 0
	case "$gte":
		return c >= 0
	case "$lt":
		return c < 0
	}
	return c <= 0
}

// nvEval evaluates an aggregation expression against d.
func nvEval(expr any, d map[string]any) (any, error) {
	switch e := expr.(type) {
	case string:
		if strings.HasPrefix(e, "$") {
			return nvGet(d, e[1:]), nil
		}
		return e, nil
	case bson.A:
		out := make([]any, len(e))
		for i, x := range e {
			v, err := nvEval(x, d)
			if err != nil {
				return nil, err
			}
			if v == nvMissing {
				v = nil
			}
			out[i] = v
		}
		return out, nil
	case bson.D:
		if len(e) == 1 && strings.HasPrefix(e[0].Key, "$") {
			return nvOperator(e[0].Key, e[0].Value, d)
		}
		out := map[string]any{}
		for _, f := range e {
			v, err := nvEval(f.Value, d)
			if err != nil {
				return nil, err
			}
			nvSet(out, f.Key, v)
		}
		return out, nil
	case int:
		return int64(e), nil
	}
	return expr, nil
}

func nvOperator(op string, operand any, d map[string]any) (any, error) {
	var args []any
	if a, ok := operand.(bson.A); ok && op != "$cond" {
		for _, x := range a {
			v, err := nvEval(x, d)
			if err != nil {
				return nil, err
			}
			args = append(args, v)
		}
	} else if op != "$cond" {
		v, err := nvEval(operand, d)
		if err != nil {
			return nil, err
		}
		args = []any{v}
	}
	nargs := func(n int) error {
		if len(args) != n {
			return nvErr("%s takes %d arguments, not %d", op, n, len(args))
		}
		return nil
	}
	switch op {
	case "$add", "$subtract", "$multiply":
		if op == "$subtract" {
			if err := nargs(2); err != nil {
				return nil, err
			}
		}
		return nvArith(op, args)
	case "$cond":
		// Only the branch taken is evaluated.
		a, ok := operand.(bson.A)
		if !ok || len(a) != 3 {
			return nil, nvErr("$cond takes [if, then, else]")
		}
		c, err := nvEval(a[0], d)
		if err != nil {
			return nil, err
		}
		if nvTruthy(c) {
			return nvEval(a[1], d)
		}
		return nvEval(a[2], d)
	case "$ifNull":
		if err := nargs(2); err != nil {
			return nil, err
		}
		if args[0] == nil || args[0] == nvMissing {
			return args[1], nil
		}
		return args[0], nil
	case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte":
		if err := nargs(2); err != nil {
			return nil, err
		}
		c := nvCompare(args[0], args[1])
		return map[string]bool{"$eq": c == 0, "$ne": c != 0, "$gt": c > 0, "$gte": c >= 0, "$lt": c < 0, "$lte": c <= 0}[op], nil
	case "$and":
		for _, v := range args {
			if !nvTruthy(v) {
				return false, nil
			}
		}
		return true, nil
	case "$or":
		for _, v := range args {
			if nvTruthy(v) {
				return true, nil
			}
		}
		return false, nil
	case "$not":
		if err := nargs(1); err != nil {
			return nil, err
		}
		return !nvTruthy(args[0]), nil
	case "$concat":
		var b strings.Builder
		for _, v := range args {
			switch s := v.(type) {
			case nil, nvMissingT:
				return nil, nil
			case string:
				b.WriteString(s)
			default:
				return nil, nvErr("$concat: %s is not a string", nvTypeName(v))
			}
		}
		return b.String(), nil
	case "$toLower":
		if err := nargs(1); err != nil {
			return nil, err
		}
		switch s := args[0].(type) {
		case nil, nvMissingT:
			return "", nil
		case string:
			return strings.ToLower(s), nil
		}
		return nil, nvErr("$toLower of a %s", nvTypeName(args[0]))
	case "$size":
		if err := nargs(1); err != nil {
			return nil, err
		}
		a, ok := args[0].([]any)
		if !ok {
			return nil, nvErr("$size of a %s", nvTypeName(args[0]))
		}
		return int32(len(a)), nil
	case "$isArray":
		if err := nargs(1); err != nil {
			return nil, err
		}
		_, ok := args[0].([]any)
		return ok, nil
	case "$type":
		if err := nargs(1); err != nil {
			return nil, err
		}
		return nvTypeName(args[0]), nil
	}
	return nil, nvErr("unknown operator %s", op)
}

// nvArith is $add, $subtract and $multiply on numbers: null when an
// argument is null or missing; int with int is int, widened to long on
// overflow, long widened to double on overflow; a double makes a double.
func nvArith(op string, args []any) (any, error) {
	widest := 0 // 0 int, 1 long, 2 double
	for _, v := range args {
		if v == nil || v == nvMissing {
			return nil, nil
		}
		if !nvIsNumber(v) {
			return nil, nvErr("%s: %s is not a number", op, nvTypeName(v))
		}
		widest = max(widest, nvWidth(v))
	}
	if widest == 2 && op == "$add" {
		return nvExactSum(args), nil // MongoDB's $add rounds once, as $sum
	}
	if widest == 2 {
		acc := nvFloat(args[0])
		for _, v := range args[1:] {
			switch op {
			case "$add":
				acc += nvFloat(v)
			case "$subtract":
				acc -= nvFloat(v)
			default:
				acc *= nvFloat(v)
			}
		}
		return acc, nil
	}
	acc, _ := nvInt(args[0])
	exact := big.NewInt(acc)
	for _, v := range args[1:] {
		n, _ := nvInt(v)
		switch op {
		case "$add":
			exact.Add(exact, big.NewInt(n))
		case "$subtract":
			exact.Sub(exact, big.NewInt(n))
		default:
			exact.Mul(exact, big.NewInt(n))
		}
	}
	if !exact.IsInt64() {
		f, _ := new(big.Float).SetInt(exact).Float64()
		return f, nil
	}
	if widest == 0 {
		return nvIntOrLong(exact.Int64()), nil
	}
	return exact.Int64(), nil
}

// nvSum is $sum of numbers: int if every number is an int and the total
// fits, else long when it fits, else double (the exact total rounded).
func nvSum(nums []any) any {
	widest := 0
	exact := new(big.Int)
	for _, v := range nums {
		widest = max(widest, nvWidth(v))
		if n, ok := nvInt(v); ok {
			exact.Add(exact, big.NewInt(n))
		}
	}
	if widest == 2 || !exact.IsInt64() {
		return nvExactSum(nums)
	}
	if widest == 0 {
		return nvIntOrLong(exact.Int64())
	}
	return exact.Int64()
}

// nvExactSum is the sum of nums computed exactly, then rounded to a double
// once (MongoDB sums doubles with extended precision).
func nvExactSum(nums []any) float64 {
	sum := new(big.Float).SetPrec(2000)
	for _, v := range nums {
		x := new(big.Float).SetPrec(2000)
		if n, ok := nvInt(v); ok {
			x.SetInt64(n)
		} else {
			x.SetFloat64(nvFloat(v))
		}
		sum.Add(sum, x)
	}
	f, _ := sum.Float64()
	return f
}

// nvIntOrLong is n as an int when it fits, else as a long.
func nvIntOrLong(n int64) any {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return int32(n)
	}
	return n
}

func nvIsNumber(v any) bool {
	switch v.(type) {
	case int32, int64, int, float64:
		return true
	}
	return false
}

// nvWidth is a number's type rank: 0 int, 1 long, 2 double.
func nvWidth(v any) int {
	switch v.(type) {
	case int32:
		return 0
	case int64, int:
		return 1
	}
	return 2
}

// nvInt is an integer number's value; false for doubles and non-numbers.
func nvInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

func nvFloat(v any) float64 {
	if n, ok := nvInt(v); ok {
		return float64(n)
	}
	return v.(float64)
}

// nvTruthy is the expression language's truth: false, null, missing and
// zero are false.
func nvTruthy(v any) bool {
	switch x := v.(type) {
	case nil, nvMissingT:
		return false
	case bool:
		return x
	case int32, int64, int, float64:
		return nvFloat(x) != 0
	}
	return true
}

// nvTypeName is $type's answer.
func nvTypeName(v any) string {
	switch v.(type) {
	case nvMissingT:
		return "missing"
	case nil:
		return "null"
	case bool:
		return "bool"
	case int32:
		return "int"
	case int64, int:
		return "long"
	case float64:
		return "double"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case bson.ObjectID:
		return "objectId"
	case time.Time:
		return "date"
	}
	return fmt.Sprintf("unknown %T", v)
}

// nvCanon is the rank of a value's type in BSON order: missing < null <
// numbers < strings < objects < arrays < ObjectId < bool < date.
func nvCanon(v any) int {
	switch v.(type) {
	case nvMissingT:
		return 0
	case nvEmptyArrayKeyT:
		return 3
	case nil:
		return 5
	case int32, int64, int, float64:
		return 10
	case string:
		return 15
	case map[string]any:
		return 20
	case []any:
		return 25
	case bson.ObjectID:
		return 35
	case bool:
		return 40
	case time.Time:
		return 45
	}
	panic(fmt.Sprintf("naive: no BSON order for %T", v))
}

// nvCompare orders two values as BSON does: by type rank, then by value;
// numbers compare by value across int, long and double. Documents compare
// field by field in name order (the generated documents' fields are in
// name order), each field by its value's type rank, then name, then value.
func nvCompare(a, b any) int {
	if ca, cb := nvCanon(a), nvCanon(b); ca != cb {
		return cmpInt(ca, cb)
	}
	switch x := a.(type) {
	case int32, int64, int, float64:
		return nvBig(x).Cmp(nvBig(b))
	case string:
		return strings.Compare(x, b.(string))
	case bool:
		y := b.(bool)
		if x == y {
			return 0
		}
		if !x {
			return -1
		}
		return 1
	case bson.ObjectID:
		y := b.(bson.ObjectID)
		return strings.Compare(string(x[:]), string(y[:]))
	case time.Time:
		return x.Compare(b.(time.Time))
	case []any:
		y := b.([]any)
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := nvCompare(x[i], y[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(x), len(y))
	case map[string]any:
		// ttldb's documented rule (README, Differences from MongoDB):
		// fields in sorted name order, each field's value (type, then
		// value) before its name. MongoDB compares the name before the
		// value, in stored order.
		y := b.(map[string]any)
		kx, ky := nvKeys(x), nvKeys(y)
		for i := 0; i < len(kx) && i < len(ky); i++ {
			if c := nvCompare(x[kx[i]], y[ky[i]]); c != 0 {
				return c
			}
			if c := strings.Compare(kx[i], ky[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(kx), len(ky))
	}
	return 0 // null and missing
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func nvBig(v any) *big.Float {
	if n, ok := nvInt(v); ok {
		return new(big.Float).SetInt64(n)
	}
	return big.NewFloat(v.(float64))
}

func nvKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// nvEmptyArrayKeyT is the sort key of an empty array: below null.
type nvEmptyArrayKeyT struct{}

// nvSortKey is a value as $sort sees it: missing sorts as null; an array
// by its smallest element ascending, its largest descending, and an empty
// array below null.
func nvSortKey(v any, desc bool) any {
	if v == nvMissing {
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		return v
	}
	if len(a) == 0 {
		return nvEmptyArrayKeyT{}
	}
	best := a[0]
	for _, e := range a[1:] {
		if c := nvCompare(e, best); (c < 0 && !desc) || (c > 0 && desc) {
			best = e
		}
	}
	return best
}

// nvGet reads a dotted path through documents (not arrays).
func nvGet(d map[string]any, path string) any {
	var cur any = d
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nvMissing
		}
		v, ok := m[part]
		if !ok {
			return nvMissing
		}
		cur = v
	}
	return cur
}

// nvSet sets a top-level field; nvMissing removes it.
func nvSet(d map[string]any, field string, v any) {
	if v == nvMissing {
		delete(d, field)
		return
	}
	d[field] = v
}

func nvCopy(d map[string]any) map[string]any {
	nd := make(map[string]any, len(d))
	for k, v := range d {
		nd[k] = v
	}
	return nd
}

// nvKey is a canonical, type-exact text of a value: two values have the
// same key exactly when they are the same BSON value of the same types
// (Go int and int64 are both a long).
func nvKey(v any) string {
	switch x := v.(type) {
	case nvMissingT:
		return "missing"
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case int32:
		return "int:" + strconv.FormatInt(int64(x), 10)
	case int64:
		return "long:" + strconv.FormatInt(x, 10)
	case int:
		return "long:" + strconv.Itoa(x)
	case float64:
		return "double:" + strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = nvKey(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		var parts []string
		for _, k := range nvKeys(x) {
			parts = append(parts, strconv.Quote(k)+":"+nvKey(x[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// The naive evaluator's own tests: hand-computed answers, so that a
// broken reference cannot pass for the library's bug (or hide one).

// naiveRun runs a pipeline on docs and fails the test on an error.
func naiveRun(t *testing.T, docs []map[string]any, pipeline ...bson.D) []map[string]any {
	t.Helper()
	out, err := naiveAggregate(docs, pipeline)
	require.NoError(t, err)
	return out
}

func naiveIDs(docs []map[string]any) []any {
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d["_id"]
	}
	return out
}

func TestNaiveCompareOrder(t *testing.T) {
	oid := bson.ObjectID{1}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ascending := []any{nvMissing, nil, int32(-1), 0.5, int64(1), "", "a", "b",
		map[string]any{"k": int32(1)}, map[string]any{"k": "a"}, []any{}, []any{int32(1)}, []any{int32(1), int32(0)}, []any{"a"},
		oid, false, true, when}
	for i := range ascending {
		for j := range ascending {
			require.Equal(t, cmpInt(i, j), nvCompare(ascending[i], ascending[j]), "%v vs %v", ascending[i], ascending[j])
		}
	}
	// Numbers compare by value across int, long and double.
	require.Zero(t, nvCompare(int32(1), 1.0))
	require.Zero(t, nvCompare(int64(1), int32(1)))
	require.Equal(t, -1, nvCompare(int64(9007199254740992), int64(9007199254740993)))
	// Documents (ttldb's rule): field by field in name order, the value
	// (its type, then itself) before the name.
	require.Equal(t, -1, nvCompare(map[string]any{"b": int32(1)}, map[string]any{"a": "x"}))
	require.Equal(t, -1, nvCompare(map[string]any{"a": int32(1)}, map[string]any{"b": int32(1)}))
	require.Equal(t, 1, nvCompare(map[string]any{"a": int32(1)}, map[string]any{"b": int64(0)}), "the value before the name")
	require.Equal(t, 1, nvCompare(map[string]any{"a": int32(5)}, map[string]any{"a": int64(3)}))
	require.Equal(t, -1, nvCompare(map[string]any{"a": int32(1)}, map[string]any{"a": int32(1), "b": nil}))
}

func TestNaiveMatch(t *testing.T) {
	docs := []map[string]any{
		{"_id": int64(1), "a": int32(1)},
		{"_id": int64(2), "a": 1.0},
		{"_id": int64(3), "a": int64(1)},
		{"_id": int64(4), "a": nil},
		{"_id": int64(5)},
		{"_id": int64(6), "a": "1"},
		{"_id": int64(7), "a": []any{int32(0), int32(5)}},
		{"_id": int64(8), "a": map[string]any{"k": int32(1)}},
	}
	for _, c := range []struct {
		filter bson.D
		want   []any
	}{
		{bson.D{{Key: "a", Value: int32(1)}}, []any{int64(1), int64(2), int64(3)}},
		{bson.D{{Key: "a", Value: int32(5)}}, []any{int64(7)}},
		{bson.D{{Key: "a", Value: nil}}, []any{int64(4), int64(5)}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$ne", Value: nil}}}}, []any{int64(1), int64(2), int64(3), int64(6), int64(7), int64(8)}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 0.5}}}}, []any{int64(1), int64(2), int64(3), int64(7)}},
		// Both bounds, each met by an element of its own.
		{bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: int32(3)}, {Key: "$lt", Value: int32(1)}}}}, []any{int64(7)}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$lte", Value: "z"}}}}, []any{int64(6)}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: nil}}}}, []any{int64(4), int64(5)}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: false}}}}, []any{int64(5)}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{"1", nil}}}}}, []any{int64(4), int64(5), int64(6)}},
		{bson.D{{Key: "a", Value: map[string]any{"k": 1.0}}}, []any{int64(8)}},
		{bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: "1"}}, bson.D{{Key: "_id", Value: int32(5)}}}}}, []any{int64(5), int64(6)}},
		{bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "a", Value: int32(1)}}, bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: int32(1)}}}}}}}, []any{int64(2), int64(3)}},
	} {
		out := naiveRun(t, docs, bson.D{{Key: "$match", Value: c.filter}})
		require.Equal(t, c.want, naiveIDs(out), "%v", c.filter)
	}
}

func TestNaiveExpressions(t *testing.T) {
	doc := map[string]any{"i": int32(2147483647), "one": int32(1), "l": int64(3), "d": 0.5, "n": nil, "s": "AbC", "arr": []any{int32(1), "x"}}
	op := func(name string, args ...any) bson.D { return bson.D{{Key: name, Value: bson.A(args)}} }
	for _, c := range []struct {
		expr any
		want any
	}{
		{op("$add", "$one", "$one"), int32(2)},
		{op("$add", "$i", "$one"), int64(2147483648)},
		{op("$multiply", "$i", "$i"), int64(4611686014132420609)},
		{op("$add", "$one", "$l"), int64(4)},
		{op("$add", "$one", "$d"), 1.5},
		{op("$subtract", "$one", "$d"), 0.5},
		{op("$multiply", "$l", "$d"), 1.5},
		{op("$add", "$one", "$n"), nil},
		{op("$subtract", "$nothere", "$one"), nil},
		{op("$concat", "$s", "-", "$s"), "AbC-AbC"},
		{op("$concat", "$s", "$nothere"), nil},
		{op("$concat", "$s", "$n"), nil},
		{bson.D{{Key: "$toLower", Value: "$s"}}, "abc"},
		{bson.D{{Key: "$toLower", Value: "$n"}}, ""},
		{bson.D{{Key: "$size", Value: "$arr"}}, int32(2)},
		{bson.D{{Key: "$type", Value: "$nothere"}}, "missing"},
		{bson.D{{Key: "$type", Value: "$l"}}, "long"},
		{bson.D{{Key: "$type", Value: "$one"}}, "int"},
		{bson.D{{Key: "$type", Value: "$arr"}}, "array"},
		{op("$eq", "$nothere", nil), false}, // missing sorts below null
		{op("$lt", "$nothere", nil), true},
		{op("$eq", "$one", 1.0), true},
		{op("$gt", "$s", int64(99)), true}, // strings above numbers
		{op("$cond", "$n", "yes", "no"), "no"},
		{op("$cond", 0.0, "yes", "no"), "no"},
		{op("$cond", "", "yes", "no"), "yes"},
		{op("$cond", bson.A{}, "yes", "no"), "yes"},
		{op("$ifNull", "$nothere", "$one"), int32(1)},
		{op("$ifNull", "$n", "dflt"), "dflt"},
		{op("$ifNull", "$d", "dflt"), 0.5},
		{op("$and", "$one", "$s"), true},
		{op("$or", "$n", 0), false},
		{op("$not", "$nothere"), true},
		{bson.D{{Key: "x", Value: "$one"}, {Key: "y", Value: "$nothere"}}, map[string]any{"x": int32(1)}},
		{op("$cond", op("$isArray", "$n"), bson.D{{Key: "$size", Value: "$n"}}, int32(-1)), int32(-1)},
	} {
		got, err := nvEval(c.expr, doc)
		require.NoError(t, err, "%v", c.expr)
		require.Equal(t, c.want, got, "%v", c.expr)
	}
	for _, bad := range []any{
		bson.D{{Key: "$size", Value: "$n"}},
		op("$add", "$s", "$one"),
		op("$concat", "$s", "$one"),
	} {
		_, err := nvEval(bad, doc)
		require.ErrorIs(t, err, errNaive, "%v", bad)
	}
}

func TestNaiveGroup(t *testing.T) {
	docs := []map[string]any{
		{"_id": int64(1), "k": "x", "v": int32(2147483647), "w": "str"},
		{"_id": int64(2), "k": "x", "v": int32(1), "w": nil},
		{"_id": int64(3), "v": int32(3)},
		{"_id": int64(4), "k": nil, "v": 0.5, "w": int32(7)},
		{"_id": int64(5), "k": "y", "w": "b"},
	}
	acc := func(name string, arg any) bson.D { return bson.D{{Key: name, Value: arg}} }
	out := naiveRun(t, docs, bson.D{{Key: "$group", Value: bson.D{
		{Key: "_id", Value: "$k"},
		{Key: "sum", Value: acc("$sum", "$v")},
		{Key: "n", Value: acc("$sum", int32(1))},
		{Key: "cnt", Value: acc("$count", bson.D{})},
		{Key: "sumw", Value: acc("$sum", "$w")},
		{Key: "avg", Value: acc("$avg", "$v")},
		{Key: "min", Value: acc("$min", "$w")},
		{Key: "max", Value: acc("$max", "$w")},
		{Key: "first", Value: acc("$first", "$w")},
		{Key: "last", Value: acc("$last", "$w")},
		{Key: "push", Value: acc("$push", "$w")},
		{Key: "set", Value: acc("$addToSet", "$k")},
	}}})
	want := []map[string]any{
		{"_id": "x", "sum": int64(2147483648), "n": int32(2), "cnt": int32(2), "sumw": int32(0), "avg": 1073741824.0,
			"min": "str", "max": "str", "first": "str", "last": nil, "push": []any{"str", nil}, "set": []any{"x"}},
		// A missing key and a null key are one group, keyed null.
		{"_id": nil, "sum": 3.5, "n": int32(2), "cnt": int32(2), "sumw": int32(7), "avg": 1.75,
			"min": int32(7), "max": int32(7), "first": nil, "last": int32(7), "push": []any{int32(7)}, "set": []any{nil}},
		{"_id": "y", "sum": int32(0), "n": int32(1), "cnt": int32(1), "sumw": int32(0), "avg": nil,
			"min": "b", "max": "b", "first": "b", "last": "b", "push": []any{"b"}, "set": []any{"y"}},
	}
	require.Equal(t, want, out)

	// A document key: its missing fields are left out (a missing field is
	// not a null one)…
	out = naiveRun(t, docs, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "a", Value: "$k"}, {Key: "b", Value: "$_id"}}}}}}, bson.D{{Key: "$match", Value: bson.D{{Key: "_id.b", Value: bson.D{{Key: "$in", Value: bson.A{int32(3), int32(4)}}}}}}})
	require.Equal(t, []map[string]any{{"_id": map[string]any{"b": int64(3)}}, {"_id": map[string]any{"a": nil, "b": int64(4)}}}, out)
	// … but a document of one field holds null for missing, as MongoDB's
	// $group computes a lone expression (DocumentSourceGroup::computeId).
	out = naiveRun(t, docs, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "a", Value: "$k"}}}}}})
	require.Equal(t, []map[string]any{{"_id": map[string]any{"a": "x"}}, {"_id": map[string]any{"a": nil}}, {"_id": map[string]any{"a": "y"}}}, out)

	// No input, no group; $count and $sortByCount likewise.
	require.Empty(t, naiveRun(t, nil, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}}}}))
	require.Empty(t, naiveRun(t, nil, bson.D{{Key: "$count", Value: "n"}}))
	require.Equal(t, []map[string]any{{"n": int32(5)}}, naiveRun(t, docs, bson.D{{Key: "$count", Value: "n"}}))
	require.Equal(t, []map[string]any{{"_id": "x", "count": int32(2)}, {"_id": nil, "count": int32(2)}, {"_id": "y", "count": int32(1)}},
		naiveRun(t, docs, bson.D{{Key: "$sortByCount", Value: "$k"}}))
}

// TestNaiveManualUnwind is the MongoDB manual's $unwind examples (the
// inventory collection, with preserveNullAndEmptyArrays and
// includeArrayIndex).
func TestNaiveManualUnwind(t *testing.T) {
	docs := []map[string]any{
		{"_id": int32(1), "item": "ABC", "price": 80.0, "sizes": []any{"S", "M", "L"}},
		{"_id": int32(2), "item": "EFG", "price": 120.0, "sizes": []any{}},
		{"_id": int32(3), "item": "IJK", "price": 160.0, "sizes": "M"},
		{"_id": int32(4), "item": "LMN", "price": 10.0},
		{"_id": int32(5), "item": "XYZ", "price": 5.75, "sizes": nil},
	}
	require.Equal(t, []map[string]any{
		{"_id": int32(1), "item": "ABC", "price": 80.0, "sizes": "S"},
		{"_id": int32(1), "item": "ABC", "price": 80.0, "sizes": "M"},
		{"_id": int32(1), "item": "ABC", "price": 80.0, "sizes": "L"},
		{"_id": int32(3), "item": "IJK", "price": 160.0, "sizes": "M"},
	}, naiveRun(t, docs, bson.D{{Key: "$unwind", Value: "$sizes"}}))
	require.Equal(t, []map[string]any{
		{"_id": int32(1), "item": "ABC", "price": 80.0, "sizes": "S", "arrayIndex": int64(0)},
		{"_id": int32(1), "item": "ABC", "price": 80.0, "sizes": "M", "arrayIndex": int64(1)},
		{"_id": int32(1), "item": "ABC", "price": 80.0, "sizes": "L", "arrayIndex": int64(2)},
		{"_id": int32(2), "item": "EFG", "price": 120.0, "arrayIndex": nil},
		{"_id": int32(3), "item": "IJK", "price": 160.0, "sizes": "M", "arrayIndex": nil},
		{"_id": int32(4), "item": "LMN", "price": 10.0, "arrayIndex": nil},
		{"_id": int32(5), "item": "XYZ", "price": 5.75, "sizes": nil, "arrayIndex": nil},
	}, naiveRun(t, docs, bson.D{{Key: "$unwind", Value: bson.D{
		{Key: "path", Value: "$sizes"}, {Key: "includeArrayIndex", Value: "arrayIndex"}, {Key: "preserveNullAndEmptyArrays", Value: true},
	}}}))
}

func TestNaiveStages(t *testing.T) {
	docs := []map[string]any{
		{"_id": int64(1), "a": "x", "b": int32(2), "sub": map[string]any{"p": int32(1)}},
		{"_id": int64(2), "a": nil, "b": 1.5, "sub": map[string]any{"p": int32(2)}},
		{"_id": int64(3), "b": int32(2), "sub": map[string]any{}},
		{"_id": int64(4), "a": int32(9), "b": int64(1), "sub": map[string]any{"p": "z"}},
	}
	// $sort: missing and null tie (the sort is stable here), then BSON order.
	out := naiveRun(t, docs, bson.D{{Key: "$sort", Value: bson.D{{Key: "a", Value: int32(1)}}}})
	require.Equal(t, []any{int64(2), int64(3), int64(4), int64(1)}, naiveIDs(out))
	out = naiveRun(t, docs, bson.D{{Key: "$sort", Value: bson.D{{Key: "b", Value: int32(-1)}, {Key: "_id", Value: int32(1)}}}})
	require.Equal(t, []any{int64(1), int64(3), int64(2), int64(4)}, naiveIDs(out))
	// Arrays sort by their smallest element ascending, their largest
	// descending; an empty array below null.
	arrays := []map[string]any{
		{"_id": int64(1), "x": []any{int32(1), int32(9)}},
		{"_id": int64(2), "x": int32(5)},
		{"_id": int64(3), "x": []any{}},
		{"_id": int64(4), "x": nil},
		{"_id": int64(5), "x": []any{int32(3), "s"}},
	}
	out = naiveRun(t, arrays, bson.D{{Key: "$sort", Value: bson.D{{Key: "x", Value: int32(1)}}}})
	require.Equal(t, []any{int64(3), int64(4), int64(1), int64(5), int64(2)}, naiveIDs(out))
	out = naiveRun(t, arrays, bson.D{{Key: "$sort", Value: bson.D{{Key: "x", Value: int32(-1)}}}})
	require.Equal(t, []any{int64(5), int64(1), int64(2), int64(4), int64(3)}, naiveIDs(out))
	out = naiveRun(t, docs,
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: int32(-1)}}}},
		bson.D{{Key: "$skip", Value: int32(1)}},
		bson.D{{Key: "$limit", Value: int64(2)}})
	require.Equal(t, []any{int64(3), int64(2)}, naiveIDs(out))

	// $project: inclusion (a missing path is left out, a computed missing
	// value too), exclusion, _id alone.
	out = naiveRun(t, docs[2:3], bson.D{{Key: "$project", Value: bson.D{{Key: "a", Value: int32(1)}, {Key: "c", Value: "$sub.p"}, {Key: "d", Value: "$b"}}}})
	require.Equal(t, []map[string]any{{"_id": int64(3), "d": int32(2)}}, out)
	out = naiveRun(t, docs[:1], bson.D{{Key: "$project", Value: bson.D{{Key: "sub", Value: false}, {Key: "_id", Value: int32(0)}}}})
	require.Equal(t, []map[string]any{{"a": "x", "b": int32(2)}}, out)
	out = naiveRun(t, docs[:1], bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: true}}}})
	require.Equal(t, []map[string]any{{"_id": int64(1)}}, out)
	out = naiveRun(t, docs[:1], bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: int32(0)}, {Key: "b", Value: int32(1)}}}})
	require.Equal(t, []map[string]any{{"b": int32(2)}}, out)

	// $addFields sees the input document; a missing value removes the field.
	out = naiveRun(t, docs[:1], bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: "$nothere"}, {Key: "c", Value: "$b"}}}})
	require.Equal(t, []map[string]any{{"_id": int64(1), "a": "x", "c": int32(2), "sub": map[string]any{"p": int32(1)}}}, out)
	out = naiveRun(t, docs[:1], bson.D{{Key: "$unset", Value: bson.A{"a", "sub"}}})
	require.Equal(t, []map[string]any{{"_id": int64(1), "b": int32(2)}}, out)

	// $replaceRoot: a sub-document, or a computed document.
	out = naiveRun(t, docs, bson.D{{Key: "$replaceRoot", Value: bson.D{{Key: "newRoot", Value: "$sub"}}}})
	require.Equal(t, []map[string]any{{"p": int32(1)}, {"p": int32(2)}, {}, {"p": "z"}}, out)
	out = naiveRun(t, docs[1:2], bson.D{{Key: "$replaceRoot", Value: bson.D{{Key: "newRoot", Value: bson.D{{Key: "x", Value: "$a"}, {Key: "y", Value: "$nothere"}}}}}})
	require.Equal(t, []map[string]any{{"x": nil}}, out)
	_, err := naiveAggregate(docs, []bson.D{{{Key: "$replaceRoot", Value: bson.D{{Key: "newRoot", Value: "$a"}}}}})
	require.ErrorIs(t, err, errNaive)

	// The input is not modified.
	require.Equal(t, map[string]any{"_id": int64(1), "a": "x", "b": int32(2), "sub": map[string]any{"p": int32(1)}}, docs[0])
}

// TestNaiveDiffCompare checks the differential test's comparison: types
// count (Go int is a long), order counts only where defined, $addToSet's
// arrays are sets.
func TestNaiveDiffCompare(t *testing.T) {
	a := []map[string]any{{"_id": int64(1), "set_1": []any{int32(1), "x"}}, {"_id": int32(2)}}
	require.Empty(t, diffCompare(a, nil, []map[string]any{{"_id": int64(1), "set_1": []any{"x", int32(1)}}, {"_id": int32(2)}}, nil, true))
	require.NotEmpty(t, diffCompare(a, nil, []map[string]any{{"_id": int32(2)}, {"_id": int64(1), "set_1": []any{int32(1), "x"}}}, nil, true))
	require.Empty(t, diffCompare(a, nil, []map[string]any{{"_id": int32(2)}, {"_id": int64(1), "set_1": []any{int32(1), "x"}}}, nil, false))
	require.NotEmpty(t, diffCompare(a, nil, []map[string]any{{"_id": int64(1), "set_1": []any{int32(1), "x"}}, {"_id": int64(2)}}, nil, false))
	require.NotEmpty(t, diffCompare(a, nil, []map[string]any{{"_id": int64(1), "set_1": []any{int32(1), "x"}}, {"_id": 2.0}}, nil, false))
	require.Empty(t, diffCompare([]map[string]any{{"x": int64(1)}}, nil, []map[string]any{diffNormalize(map[string]any{"x": 1}).(map[string]any)}, nil, true))
	require.NotEmpty(t, diffCompare(a, nil, a[:1], nil, false))
	require.NotEmpty(t, diffCompare(a, nil, nil, errNaive, false))
	require.Empty(t, diffCompare(nil, errNaive, nil, errNaive, false))
	require.Equal(t, []any{int64(1), "a", []any{map[string]any{"k": int64(2)}}, []any{"s"}},
		diffNormalize([]any{1, "a", []map[string]any{{"k": 2}}, []string{"s"}}), "typed slices become []any, ints longs")
}

// TestNaiveUnwindCases is MongoDB's own $unwind sanity cases
// (jstests/core/query/unwind.js): each input value of a under each
// combination of preserveNullAndEmptyArrays and includeArrayIndex (a
// field of its own, or a itself).
func TestNaiveUnwindCases(t *testing.T) {
	type opts struct {
		preserve bool
		index    string
	}
	variants := []opts{{false, ""}, {true, ""}, {false, "i"}, {true, "i"}, {true, "a"}}
	doc := func(kv ...any) map[string]any {
		d := map[string]any{"_id": int32(0)}
		for i := 0; i < len(kv); i += 2 {
			d[kv[i].(string)] = kv[i+1]
		}
		return d
	}
	one := func(d map[string]any) []map[string]any { return []map[string]any{d} }
	for _, c := range []struct {
		name string
		a    any // nvMissing: no field a
		want [5][]map[string]any
	}{
		{"missing", nvMissing, [5][]map[string]any{nil, one(doc()), nil, one(doc("i", nil)), one(doc("a", nil))}},
		{"null", nil, [5][]map[string]any{nil, one(doc("a", nil)), nil, one(doc("a", nil, "i", nil)), one(doc("a", nil))}},
		{"empty array", []any{}, [5][]map[string]any{nil, one(doc()), nil, one(doc("i", nil)), one(doc("a", nil))}},
		{"1", int32(1), [5][]map[string]any{one(doc("a", int32(1))), one(doc("a", int32(1))), one(doc("a", int32(1), "i", nil)), one(doc("a", int32(1), "i", nil)), one(doc("a", nil))}},
		{"empty document", map[string]any{}, [5][]map[string]any{one(doc("a", map[string]any{})), one(doc("a", map[string]any{})), one(doc("a", map[string]any{}, "i", nil)), one(doc("a", map[string]any{}, "i", nil)), one(doc("a", nil))}},
		{"[null]", []any{nil}, [5][]map[string]any{one(doc("a", nil)), one(doc("a", nil)), one(doc("a", nil, "i", int64(0))), one(doc("a", nil, "i", int64(0))), one(doc("a", int64(0)))}},
		{"[[]]", []any{[]any{}}, [5][]map[string]any{one(doc("a", []any{})), one(doc("a", []any{})), one(doc("a", []any{}, "i", int64(0))), one(doc("a", []any{}, "i", int64(0))), one(doc("a", int64(0)))}},
		{"[1]", []any{int32(1)}, [5][]map[string]any{one(doc("a", int32(1))), one(doc("a", int32(1))), one(doc("a", int32(1), "i", int64(0))), one(doc("a", int32(1), "i", int64(0))), one(doc("a", int64(0)))}},
	} {
		input := doc()
		nvSet(input, "a", c.a)
		for vi, v := range variants {
			spec := bson.D{{Key: "path", Value: "$a"}, {Key: "preserveNullAndEmptyArrays", Value: v.preserve}}
			if v.index != "" {
				spec = append(spec, bson.E{Key: "includeArrayIndex", Value: v.index})
			}
			out := naiveRun(t, []map[string]any{input}, bson.D{{Key: "$unwind", Value: spec}})
			require.Equal(t, c.want[vi], out, "a %s, %+v", c.name, v)
		}
	}
}
