package query

import (
	"math"
	"testing"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// exprOperatorsOfTheseFiles are the operators expr_arith.go,
// expr_compare.go, expr_string.go, expr_array.go, expr_type.go and
// expr_object.go register.
var exprOperatorsOfTheseFiles = []string{
	"$add", "$subtract", "$multiply", "$divide", "$mod", "$abs", "$ceil", "$floor", "$round", "$trunc",
	"$sqrt", "$pow", "$exp", "$ln", "$log", "$log10",
	"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$cmp",
	"$concat", "$toLower", "$toUpper", "$substr", "$substrBytes", "$substrCP", "$strLenBytes", "$strLenCP",
	"$indexOfBytes", "$indexOfCP", "$split", "$strcasecmp", "$trim", "$ltrim", "$rtrim", "$replaceOne",
	"$replaceAll", "$regexMatch", "$regexFind", "$regexFindAll",
	"$size", "$arrayElemAt", "$first", "$last", "$slice", "$concatArrays", "$in", "$isArray", "$range",
	"$reverseArray", "$indexOfArray", "$arrayToObject", "$objectToArray", "$setUnion", "$setIntersection",
	"$setDifference", "$setEquals", "$setIsSubset", "$anyElementTrue", "$allElementsTrue", "$filter", "$map",
	"$reduce", "$sortArray", "$zip",
	"$type", "$isNumber", "$convert", "$toString", "$toInt", "$toLong", "$toDouble", "$toDecimal", "$toDate",
	"$toBool", "$toObjectId",
	"$mergeObjects", "$getField", "$setField", "$unsetField",
}

func TestExprOperatorsRegistered(t *testing.T) {
	for _, op := range exprOperatorsOfTheseFiles {
		if !IsExprOperator(op) {
			t.Errorf("%s is not registered", op)
		}
	}
}

// TestExprOperatorsOddOperands evaluates every operator over operands of
// every kind, positional and named: each gives a value or an error,
// never a panic.
func TestExprOperatorsOddOperands(t *testing.T) {
	maxDec, _ := bson.ParseDecimal128("9.999999999999999999999999999999999E+6144")
	tinyDec, _ := bson.ParseDecimal128("1E-6176")
	nanDec, _ := bson.ParseDecimal128("NaN")
	values := []any{
		nil, "$missing", "", "abc", "é寿", "$s", int32(-1), int32(math.MinInt32), int64(math.MaxInt64), int64(math.MinInt64),
		0.0, -0.5, 1e308, math.Inf(-1), math.NaN(), maxDec, tinyDec, nanDec, true,
		time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC), codec.ObjectID{1, 2, 3},
		bson.Timestamp{T: 1, I: 2}, bson.Regex{Pattern: "a(", Options: "q"}, []any{}, []any{int32(1), "a", nil},
		[]any{[]any{"k", int32(1)}}, map[string]any{"$literal": map[string]any{"k": "a", "v": int32(1)}},
		map[string]any{"$literal": map[string]any{}}, bson.MinKey{}, []byte{1},
	}
	names := []string{"input", "as", "cond", "in", "limit", "initialValue", "sortBy", "inputs", "find", "replacement",
		"regex", "options", "chars", "to", "onError", "onNull", "field", "value", "useLongestLength", "defaults"}
	doc := codec.Document{"s": "str", "a": []any{int32(1), int32(2)}}
	try := func(expr any) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%v panicked: %v", expr, r)
			}
		}()
		e, err := CompileExprWith(expr, nil)
		if err != nil {
			return
		}
		_, _ = e.Evaluate(&Env{Root: doc, Current: doc})
	}
	for _, op := range exprOperatorsOfTheseFiles {
		for _, a := range values {
			try(map[string]any{op: a})
			try(map[string]any{op: []any{a}})
			for _, b := range values {
				try(map[string]any{op: []any{a, b}})
				try(map[string]any{op: []any{a, b, int32(2)}})
				try(map[string]any{op: []any{a, int32(1), b, int32(3)}})
			}
		}
		for i, name := range names {
			for _, a := range values {
				args := map[string]any{name: a}
				for _, other := range names[:i] {
					args[other] = "$a"
				}
				try(map[string]any{op: args})
				args["input"], args["cond"], args["in"] = "$a", true, "$$this"
				try(map[string]any{op: args})
			}
		}
	}
}
