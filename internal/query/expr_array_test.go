package query

import (
	"testing"

	"github.com/ttldb/ttldb/internal/errs"
)

func TestArrays(t *testing.T) {
	runOpCases(t, []opCase{
		{name: "size", expr: `{"$size": [[1, 2]]}`, want: int32(2)},
		{name: "size missing", expr: `{"$size": "$x"}`, err: errs.ErrExpression},
		{name: "size null", expr: `{"$size": null}`, err: errs.ErrExpression},
		{name: "arrayElemAt null", expr: `{"$arrayElemAt": [null, 0]}`, want: nil},
		{name: "arrayElemAt not array", expr: `{"$arrayElemAt": ["a", 0]}`, err: errs.ErrExpression},
		{name: "arrayElemAt fractional index", expr: `{"$arrayElemAt": [[1], 0.5]}`, err: errs.ErrExpression},
		{name: "arrayElemAt integral double", expr: `{"$arrayElemAt": [[1, 2], 1.0]}`, want: int32(2)},
		{name: "first missing", expr: `{"$first": "$x"}`, want: nil},
		{name: "first not array", expr: `{"$first": "a"}`, err: errs.ErrExpression},
		{name: "last", expr: `{"$last": [[1, 2, 3]]}`, want: int32(3)},
		{name: "last empty", expr: `{"$last": [[]]}`, want: Missing},
		{name: "slice negative", expr: `{"$slice": [[1, 2, 3], -5]}`, want: []any{int32(1), int32(2), int32(3)}},
		{name: "slice zero count", expr: `{"$slice": [[1, 2, 3], 0, 0]}`, err: errs.ErrExpression},
		{name: "slice null", expr: `{"$slice": [[1, 2, 3], null]}`, want: nil},
		{name: "slice position from end", expr: `{"$slice": [[1, 2, 3], -2, 1]}`, want: []any{int32(2)}},
		{name: "concatArrays null", expr: `{"$concatArrays": [[1], null]}`, want: nil},
		{name: "concatArrays not array", expr: `{"$concatArrays": [[1], 2]}`, err: errs.ErrExpression},
		{name: "in missing array", expr: `{"$in": [1, "$x"]}`, err: errs.ErrExpression},
		{name: "in missing value", expr: `{"$in": ["$x", [null]]}`, want: false},
		{name: "in numbers across types", expr: `{"$in": [2.0, [1, 2]]}`, want: true},
		{name: "isArray", expr: `{"$isArray": [[]]}`, want: true},
		{name: "isArray string", expr: `{"$isArray": "a"}`, want: false},
		{name: "range bound", expr: `{"$range": [0, 2000000000]}`, err: errs.ErrExpression},
		{name: "range zero step", expr: `{"$range": [0, 10, 0]}`, err: errs.ErrExpression},
		{name: "range fractional", expr: `{"$range": [0, 10.5]}`, err: errs.ErrExpression},
		{name: "range string", expr: `{"$range": ["0", 10]}`, err: errs.ErrExpression},
		{name: "range step 3", expr: `{"$range": [0, 7, 3]}`, want: []any{int32(0), int32(3), int32(6)}},
		{name: "range step -3", expr: `{"$range": [7, 0, -3]}`, want: []any{int32(7), int32(4), int32(1)}},
		{name: "reverseArray null", expr: `{"$reverseArray": null}`, want: nil},
		{name: "reverseArray not array", expr: `{"$reverseArray": "a"}`, err: errs.ErrExpression},
		{name: "arrayToObject mixed", expr: `{"$arrayToObject": [[["a", 1], {"k": "b", "v": 2}]]}`, err: errs.ErrExpression},
		{name: "arrayToObject bad pair", expr: `{"$arrayToObject": [[["a", 1, 2]]]}`, err: errs.ErrExpression},
		{name: "arrayToObject non-string key", expr: `{"$arrayToObject": [[[1, 1]]]}`, err: errs.ErrExpression},
		{name: "arrayToObject null", expr: `{"$arrayToObject": null}`, want: nil},
		{name: "objectToArray null", expr: `{"$objectToArray": "$x"}`, want: nil},
		{name: "objectToArray not document", expr: `{"$objectToArray": 1}`, err: errs.ErrExpression},
		{name: "setUnion null", expr: `{"$setUnion": [[1], null]}`, want: nil},
		{name: "setUnion dedupes across types", expr: `{"$setUnion": [[1, 1.0], [{"$numberLong": "1"}, 2]]}`, want: []any{int32(1), int32(2)}},
		{name: "setIntersection none", expr: `{"$setIntersection": []}`, want: []any{}},
		{name: "setDifference not array", expr: `{"$setDifference": [[1], 1]}`, err: errs.ErrExpression},
		{name: "setDifference keeps first order", expr: `{"$setDifference": [[3, 1, 3, 2], [2]]}`, want: []any{int32(3), int32(1)}},
		{name: "setEquals null", expr: `{"$setEquals": [[1], null]}`, err: errs.ErrExpression},
		{name: "setEquals arity", expr: `{"$setEquals": [[1]]}`, err: errs.ErrInvalidOptions},
		{name: "setIsSubset not array", expr: `{"$setIsSubset": [null, [1]]}`, err: errs.ErrExpression},
		{name: "anyElementTrue not array", expr: `{"$anyElementTrue": [1]}`, err: errs.ErrExpression},
		{name: "filter default this", expr: `{"$filter": {"input": [1, 2, 3], "cond": {"$gt": ["$$this", 1]}}}`, want: []any{int32(2), int32(3)}},
		{name: "filter null input", expr: `{"$filter": {"input": null, "cond": true}}`, want: nil},
		{name: "filter non-array input", expr: `{"$filter": {"input": 1, "cond": true}}`, err: errs.ErrExpression},
		{name: "filter zero limit", expr: `{"$filter": {"input": [1], "cond": true, "limit": 0}}`, err: errs.ErrExpression},
		{name: "filter null limit", expr: `{"$filter": {"input": [1, 2], "cond": true, "limit": null}}`, want: []any{int32(1), int32(2)}},
		{name: "filter bad variable", expr: `{"$filter": {"input": [1], "as": "Bad", "cond": true}}`, err: errs.ErrInvalidOptions},
		{name: "filter unknown argument", expr: `{"$filter": {"input": [1], "cond": true, "x": 1}}`, err: errs.ErrInvalidOptions},
		{name: "filter no cond", expr: `{"$filter": {"input": [1]}}`, err: errs.ErrInvalidOptions},
		{name: "filter variable out of scope", expr: `{"$add": [{"$size": {"$filter": {"input": [1], "cond": true}}}, "$$this"]}`, err: errs.ErrInvalidOptions},
		{name: "map missing gives null", expr: `{"$map": {"input": [{"a": 1}, {}], "in": "$$this.a"}}`, want: []any{int32(1), nil}},
		{name: "map nested shadowing", expr: `{"$map": {"input": [1, 2], "as": "x", "in": {"$map": {"input": [10], "as": "x", "in": {"$add": ["$$x", 1]}}}}}`,
			want: []any{[]any{int32(11)}, []any{int32(11)}}},
		{name: "map outer variable", expr: `{"$map": {"input": [1, 2], "as": "x", "in": {"$map": {"input": [10], "as": "y", "in": {"$add": ["$$x", "$$y"]}}}}}`,
			want: []any{[]any{int32(11)}, []any{int32(12)}}},
		{name: "map null", expr: `{"$map": {"input": "$x", "in": 1}}`, want: nil},
		{name: "reduce null", expr: `{"$reduce": {"input": null, "initialValue": 0, "in": 1}}`, want: nil},
		{name: "reduce not array", expr: `{"$reduce": {"input": 1, "initialValue": 0, "in": 1}}`, err: errs.ErrExpression},
		{name: "reduce empty", expr: `{"$reduce": {"input": [], "initialValue": 7, "in": 1}}`, want: int32(7)},
		{name: "reduce no in", expr: `{"$reduce": {"input": [], "initialValue": 7}}`, err: errs.ErrInvalidOptions},
		{name: "sortArray two fields refused", expr: `{"$sortArray": {"input": [], "sortBy": {"a": 1, "b": 1}}}`, err: errs.ErrInvalidOptions},
		{name: "sortArray bad direction", expr: `{"$sortArray": {"input": [], "sortBy": 2}}`, err: errs.ErrInvalidOptions},
		{name: "sortArray null", expr: `{"$sortArray": {"input": null, "sortBy": 1}}`, want: nil},
		{name: "sortArray not array", expr: `{"$sortArray": {"input": 1, "sortBy": 1}}`, err: errs.ErrExpression},
		{name: "sortArray missing field first", expr: `{"$sortArray": {"input": [{"a": 2}, {"b": 1}, {"a": 1}], "sortBy": {"a": 1}}}`,
			want: []any{D{"b": int32(1)}, D{"a": int32(1)}, D{"a": int32(2)}}},
		{name: "sortArray descending", expr: `{"$sortArray": {"input": [2, 3, 1], "sortBy": -1}}`, want: []any{int32(3), int32(2), int32(1)}},
		{name: "zip null", expr: `{"$zip": {"inputs": [[1], null]}}`, want: nil},
		{name: "zip not array", expr: `{"$zip": {"inputs": [[1], 1]}}`, err: errs.ErrExpression},
		{name: "zip defaults without longest", expr: `{"$zip": {"inputs": [[1]], "defaults": [1]}}`, err: errs.ErrInvalidOptions},
		{name: "zip defaults length", expr: `{"$zip": {"inputs": [[1]], "useLongestLength": true, "defaults": [1, 2]}}`, err: errs.ErrInvalidOptions},
	})
}

// TestManual_arrays reproduces the examples of the MongoDB manual's
// array operator pages.
func TestManual_arrays(t *testing.T) {
	salesItems := []string{
		`{"items": [{"item_id": 43, "quantity": 2, "price": 10, "name": "pen"}, {"item_id": 2, "quantity": 1, "price": 240, "name": "briefcase"}]}`,
		`{"items": [{"item_id": 23, "quantity": 3, "price": 110, "name": "notebook"}, {"item_id": 103, "quantity": 4, "price": 5, "name": "pen"}, {"item_id": 38, "quantity": 1, "price": 300, "name": "printer"}]}`,
		`{"items": [{"item_id": 4, "quantity": 1, "price": 23, "name": "paper"}]}`,
	}
	filterPrice := `{"$filter": {"input": "$items", "as": "item", "cond": {"$gte": ["$$item.price", 100]}}}`
	filterLimit := `{"$filter": {"input": "$items", "as": "item", "cond": {"$gte": ["$$item.price", 100]}, "limit": 1}}`
	numbers := `[1, "a", 2, null, 3.1, {"$numberLong": "4"}, "5"]`
	numCond := `{"$and": [{"$gte": ["$$num", {"$numberLong": "-9223372036854775807"}]}, {"$lte": ["$$num", {"$numberLong": "9223372036854775807"}]}]}`
	team := `{"team": [{"name": "pat", "age": 30, "address": {"street": "12 Baker St", "city": "London"}}, {"name": "dallas", "age": 36, "address": {"street": "12 Cowper St", "city": "Palo Alto"}}, {"name": "charlie", "age": 42, "address": {"street": "12 French St", "city": "New Brunswick"}}]}`
	temps := []float64{4, 12, 17}
	var tempsF []any
	for _, c := range temps {
		f := c*1.8 + 32 // 9/5 in the shell is the double 1.8
		tempsF = append(tempsF, f)
	}
	experiments := [][2]string{
		{`["red", "blue"]`, `["red", "blue"]`}, {`["red", "blue"]`, `["blue", "red", "blue"]`}, {`["red", "blue"]`, `["red", "blue", "green"]`},
		{`["red", "blue"]`, `["green", "red"]`}, {`["red", "blue"]`, `[]`}, {`["red", "blue"]`, `[["red"], ["blue"]]`},
		{`["red", "blue"]`, `[["red", "blue"]]`}, {`[]`, `[]`}, {`[]`, `["red"]`},
	}
	setWant := map[string][]string{
		"$setEquals":       {`true`, `true`, `false`, `false`, `false`, `false`, `false`, `true`, `false`},
		"$setIntersection": {`["blue", "red"]`, `["blue", "red"]`, `["blue", "red"]`, `["red"]`, `[]`, `[]`, `[]`, `[]`, `[]`},
		"$setUnion": {`["blue", "red"]`, `["blue", "red"]`, `["blue", "green", "red"]`, `["blue", "green", "red"]`, `["blue", "red"]`,
			`["blue", "red", ["blue"], ["red"]]`, `["blue", "red", ["red", "blue"]]`, `[]`, `["red"]`},
		"$setIsSubset": {`true`, `true`, `true`, `false`, `false`, `false`, `false`, `true`, `true`},
	}
	diffWant := []string{`[]`, `[]`, `["green"]`, `["green"]`, `[]`, `[["red"], ["blue"]]`, `[["red", "blue"]]`, `[]`, `["red"]`}
	responses := []string{`[true]`, `[true, false]`, `[]`, `[1, true, "seven"]`, `[0]`, `[[]]`, `[[0]]`, `[[false]]`, `[null, false, 0]`}
	anyWant := []bool{true, true, false, true, false, true, true, true, false}
	allWant := []bool{true, false, true, true, false, true, true, true, false}

	cases := []opCase{
		{name: "filter price 0", expr: filterPrice, doc: salesItems[0], want: ej(`[{"item_id": 2, "quantity": 1, "price": 240, "name": "briefcase"}]`)},
		{name: "filter price 1", expr: filterPrice, doc: salesItems[1], want: ej(`[{"item_id": 23, "quantity": 3, "price": 110, "name": "notebook"}, {"item_id": 38, "quantity": 1, "price": 300, "name": "printer"}]`)},
		{name: "filter price 2", expr: filterPrice, doc: salesItems[2], want: []any{}},
		{name: "filter limit 1", expr: filterLimit, doc: salesItems[1], want: ej(`[{"item_id": 23, "quantity": 3, "price": 110, "name": "notebook"}]`)},
		{name: "filter name pen", expr: `{"$filter": {"input": "$items", "as": "item", "cond": {"$eq": ["$$item.name", "pen"]}}}`, doc: salesItems[1], want: ej(`[{"item_id": 103, "quantity": 4, "price": 5, "name": "pen"}]`)},
		{name: "filter regex", expr: `{"$filter": {"input": "$items", "as": "item", "cond": {"$regexMatch": {"input": "$$item.name", "regex": "^p"}}}}`, doc: salesItems[1], want: ej(`[{"item_id": 103, "quantity": 4, "price": 5, "name": "pen"}, {"item_id": 38, "quantity": 1, "price": 300, "name": "printer"}]`)},
		{name: "filter numbers", expr: `{"$filter": {"input": ` + numbers + `, "as": "num", "cond": ` + numCond + `}}`, want: ej(`[1, 2, 3.1, {"$numberLong": "4"}]`)},
		{name: "filter numbers limit 2", expr: `{"$filter": {"input": ` + numbers + `, "as": "num", "cond": ` + numCond + `, "limit": {"$numberLong": "2"}}}`, want: ej(`[1, 2]`)},
		{name: "filter numbers limit expr", expr: `{"$filter": {"input": ` + numbers + `, "as": "num", "cond": ` + numCond + `, "limit": {"$add": [0, 1]}}}`, want: ej(`[1]`)},
		{name: "map add", expr: `{"$map": {"input": "$quizzes", "as": "grade", "in": {"$add": ["$$grade", 2]}}}`, doc: `{"quizzes": [5, 6, 7]}`, want: ej(`[7, 8, 9]`)},
		{name: "map add empty", expr: `{"$map": {"input": "$quizzes", "as": "grade", "in": {"$add": ["$$grade", 2]}}}`, doc: `{"quizzes": []}`, want: []any{}},
		{name: "map add 2", expr: `{"$map": {"input": "$quizzes", "as": "grade", "in": {"$add": ["$$grade", 2]}}}`, doc: `{"quizzes": [3, 8, 9]}`, want: ej(`[5, 10, 11]`)},
		{name: "map trunc", expr: `{"$map": {"input": "$distances", "as": "dist", "in": {"$trunc": "$$dist"}}}`, doc: `{"city": "Bakersfield", "distances": [34.57, 81.96, 44.24]}`, want: []any{34.0, 81.0, 44.0}},
		{name: "map celsius", expr: `{"$map": {"input": "$tempsC", "as": "tempInCelsius", "in": {"$add": [{"$multiply": ["$$tempInCelsius", 1.8]}, 32]}}}`, doc: `{"tempsC": [4, 12, 17]}`, want: tempsF},
		{name: "reduce concat", expr: `{"$reduce": {"input": ["a", "b", "c"], "initialValue": "", "in": {"$concat": ["$$value", "$$this"]}}}`, want: "abc"},
		{name: "reduce sum product", expr: `{"$reduce": {"input": [1, 2, 3, 4], "initialValue": {"sum": 5, "product": 2}, "in": {"sum": {"$add": ["$$value.sum", "$$this"]}, "product": {"$multiply": ["$$value.product", "$$this"]}}}}`, want: ej(`{"sum": 15, "product": 48}`)},
		{name: "reduce concatArrays", expr: `{"$reduce": {"input": [[3, 4], [5, 6]], "initialValue": [1, 2], "in": {"$concatArrays": ["$$value", "$$this"]}}}`, want: ej(`[1, 2, 3, 4, 5, 6]`)},
		{name: "reduce probability", expr: `{"$reduce": {"input": "$events", "initialValue": 1, "in": {"$multiply": ["$$value", "$$this"]}}}`, doc: `{"events": [0.5, 0.5]}`, want: 0.25},
		{name: "size colors", expr: `{"$cond": {"if": {"$isArray": "$colors"}, "then": {"$size": "$colors"}, "else": "NA"}}`, doc: `{"colors": ["blue", "black", "red"]}`, want: int32(3)},
		{name: "size colors 1", expr: `{"$cond": {"if": {"$isArray": "$colors"}, "then": {"$size": "$colors"}, "else": "NA"}}`, doc: `{"colors": ["purple"]}`, want: int32(1)},
		{name: "size colors empty", expr: `{"$cond": {"if": {"$isArray": "$colors"}, "then": {"$size": "$colors"}, "else": "NA"}}`, doc: `{"colors": []}`, want: int32(0)},
		{name: "size colors NA", expr: `{"$cond": {"if": {"$isArray": "$colors"}, "then": {"$size": "$colors"}, "else": "NA"}}`, doc: `{"description": "product 4"}`, want: "NA"},
		{name: "arrayElemAt first", expr: `{"$arrayElemAt": ["$favorites", 0]}`, doc: `{"favorites": ["chocolate", "cake", "butter", "apples"]}`, want: "chocolate"},
		{name: "arrayElemAt last", expr: `{"$arrayElemAt": ["$favorites", -1]}`, doc: `{"favorites": ["chocolate", "cake", "butter", "apples"]}`, want: "apples"},
		{name: "arrayElemAt one", expr: `{"$arrayElemAt": ["$favorites", -1]}`, doc: `{"favorites": ["ice cream"]}`, want: "ice cream"},
		{name: "arrayElemAt 0", expr: `{"$arrayElemAt": [[1, 2, 3], 0]}`, want: int32(1)},
		{name: "arrayElemAt -2", expr: `{"$arrayElemAt": [[1, 2, 3], -2]}`, want: int32(2)},
		{name: "arrayElemAt 15", expr: `{"$arrayElemAt": [[1, 2, 3], 15]}`, want: Missing},
		{name: "first", expr: `{"$first": [[1, 2, 3]]}`, want: int32(1)},
		{name: "first nested empty", expr: `{"$first": [[[]]]}`, want: []any{}},
		{name: "first null", expr: `{"$first": [null]}`, want: nil},
		{name: "first empty", expr: `{"$first": [[]]}`, want: Missing},
		{name: "slice 1 1", expr: `{"$slice": [[1, 2, 3], 1, 1]}`, want: ej(`[2]`)},
		{name: "slice -2", expr: `{"$slice": [[1, 2, 3], -2]}`, want: ej(`[2, 3]`)},
		{name: "slice 15 2", expr: `{"$slice": [[1, 2, 3], 15, 2]}`, want: []any{}},
		{name: "slice -15 2", expr: `{"$slice": [[1, 2, 3], -15, 2]}`, want: ej(`[1, 2]`)},
		{name: "slice favorites", expr: `{"$slice": ["$favorites", 3]}`, doc: `{"favorites": ["chocolate", "cake", "butter", "apples"]}`, want: ej(`["chocolate", "cake", "butter"]`)},
		{name: "concatArrays", expr: `{"$concatArrays": [["hello", " "], ["world"]]}`, want: ej(`["hello", " ", "world"]`)},
		{name: "concatArrays nested", expr: `{"$concatArrays": [["hello", " "], [["world"], "again"]]}`, want: ej(`["hello", " ", ["world"], "again"]`)},
		{name: "in 2", expr: `{"$in": [2, [1, 2, 3]]}`, want: true},
		{name: "in abc", expr: `{"$in": ["abc", ["xyz", "abc"]]}`, want: true},
		{name: "in xy", expr: `{"$in": ["xy", ["xyz", "abc"]]}`, want: false},
		{name: "in array", expr: `{"$in": [["a"], ["a"]]}`, want: false},
		{name: "in nested array", expr: `{"$in": [["a"], [["a"]]]}`, want: true},
		{name: "in regex", expr: `{"$in": [{"$regularExpression": {"pattern": "^a", "options": ""}}, ["a"]]}`, want: false},
		{name: "in regex regex", expr: `{"$in": [{"$regularExpression": {"pattern": "^a", "options": ""}}, [{"$regularExpression": {"pattern": "^a", "options": ""}}]]}`, want: true},
		{name: "range 0 10 2", expr: `{"$range": [0, 10, 2]}`, want: ej(`[0, 2, 4, 6, 8]`)},
		{name: "range 10 0 -2", expr: `{"$range": [10, 0, -2]}`, want: ej(`[10, 8, 6, 4, 2]`)},
		{name: "range 0 10 -2", expr: `{"$range": [0, 10, -2]}`, want: []any{}},
		{name: "range 0 5", expr: `{"$range": [0, 5]}`, want: ej(`[0, 1, 2, 3, 4]`)},
		{name: "range stops", expr: `{"$range": [0, "$distance", 25]}`, doc: `{"city": "Sacramento", "distance": 88}`, want: ej(`[0, 25, 50, 75]`)},
		{name: "reverseArray", expr: `{"$reverseArray": [[1, 2, 3]]}`, want: ej(`[3, 2, 1]`)},
		{name: "reverseArray empty", expr: `{"$reverseArray": {"$literal": []}}`, want: []any{}},
		{name: "reverseArray nested", expr: `{"$reverseArray": [[[1, 2, 3], [4, 5, 6]]]}`, want: ej(`[[4, 5, 6], [1, 2, 3]]`)},
		{name: "indexOfArray a", expr: `{"$indexOfArray": [["a", "abc"], "a"]}`, want: int32(0)},
		{name: "indexOfArray 5", expr: `{"$indexOfArray": [[1, 2], 5]}`, want: int32(-1)},
		{name: "indexOfArray array", expr: `{"$indexOfArray": [[1, 2, 3], [1, 2]]}`, want: int32(-1)},
		{name: "indexOfArray start", expr: `{"$indexOfArray": [[10, 9, 9, 8, 9], 9, 3]}`, want: int32(4)},
		{name: "indexOfArray range", expr: `{"$indexOfArray": [["a", "abc", "b"], "b", 0, 1]}`, want: int32(-1)},
		{name: "indexOfArray reversed range", expr: `{"$indexOfArray": [["a", "abc", "b"], "b", 1, 0]}`, want: int32(-1)},
		{name: "indexOfArray start past end", expr: `{"$indexOfArray": [["a", "abc", "b"], "b", 20]}`, want: int32(-1)},
		{name: "indexOfArray null", expr: `{"$indexOfArray": [[null, null, null], null]}`, want: int32(0)},
		{name: "indexOfArray null array", expr: `{"$indexOfArray": [null, "foo"]}`, want: nil},
		{name: "indexOfArray string", expr: `{"$indexOfArray": ["foo", "foo"]}`, err: errs.ErrExpression},
		{name: "arrayToObject kv", expr: `{"$arrayToObject": [[{"k": "item", "v": "abc123"}, {"k": "qty", "v": 25}]]}`, want: ej(`{"item": "abc123", "qty": 25}`)},
		{name: "arrayToObject pairs", expr: `{"$arrayToObject": [[["item", "abc123"], ["qty", 25]]]}`, want: ej(`{"item": "abc123", "qty": 25}`)},
		{name: "arrayToObject literal", expr: `{"$arrayToObject": {"$literal": [["item", "abc123"], ["qty", 25]]}}`, want: ej(`{"item": "abc123", "qty": 25}`)},
		{name: "arrayToObject repeated", expr: `{"$arrayToObject": {"$literal": [{"k": "price", "v": 24}, {"k": "item", "v": "apple"}, {"k": "price", "v": 15}]}}`, want: ej(`{"price": 15, "item": "apple"}`)},
		{name: "objectToArray", expr: `{"$objectToArray": {"item": "foo", "qty": 25}}`, want: ej(`[{"k": "item", "v": "foo"}, {"k": "qty", "v": 25}]`)},
		{name: "objectToArray nested", expr: `{"$objectToArray": "$d"}`, doc: `{"d": {"item": "foo", "qty": 25, "size": {"len": 25, "w": 10, "uom": "cm"}}}`,
			want: ej(`[{"k": "item", "v": "foo"}, {"k": "qty", "v": 25}, {"k": "size", "v": {"len": 25, "w": 10, "uom": "cm"}}]`)},
		{name: "sortArray name", expr: `{"$sortArray": {"input": "$team", "sortBy": {"name": 1}}}`, doc: team,
			want: ej(`[{"name": "charlie", "age": 42, "address": {"street": "12 French St", "city": "New Brunswick"}}, {"name": "dallas", "age": 36, "address": {"street": "12 Cowper St", "city": "Palo Alto"}}, {"name": "pat", "age": 30, "address": {"street": "12 Baker St", "city": "London"}}]`)},
		{name: "sortArray subfield", expr: `{"$sortArray": {"input": "$team", "sortBy": {"address.city": -1}}}`, doc: team,
			want: ej(`[{"name": "dallas", "age": 36, "address": {"street": "12 Cowper St", "city": "Palo Alto"}}, {"name": "charlie", "age": 42, "address": {"street": "12 French St", "city": "New Brunswick"}}, {"name": "pat", "age": 30, "address": {"street": "12 Baker St", "city": "London"}}]`)},
		{name: "sortArray values", expr: `{"$sortArray": {"input": [1, 4, 1, 6, 12, 5], "sortBy": 1}}`, want: ej(`[1, 1, 4, 5, 6, 12]`)},
		{name: "sortArray mixed", expr: `{"$sortArray": {"input": [20, 4, {"a": "Free"}, 6, 21, 5, "Gratis", {"a": null}, {"a": {"sale": true, "price": 19}}, {"$numberDecimal": "10.23"}, {"a": "On sale"}], "sortBy": 1}}`,
			want: ej(`[4, 5, 6, {"$numberDecimal": "10.23"}, 20, 21, "Gratis", {"a": null}, {"a": "Free"}, {"a": "On sale"}, {"a": {"sale": true, "price": 19}}]`)},
		{name: "zip transpose", expr: `{"$zip": {"inputs": [{"$arrayElemAt": ["$matrix", 0]}, {"$arrayElemAt": ["$matrix", 1]}, {"$arrayElemAt": ["$matrix", 2]}]}}`, doc: `{"matrix": [[1, 2], [2, 3], [3, 4]]}`, want: ej(`[[1, 2, 3], [2, 3, 4]]`)},
		{name: "zip abc", expr: `{"$zip": {"inputs": [["a"], ["b"], ["c"]]}}`, want: ej(`[["a", "b", "c"]]`)},
		{name: "zip shortest", expr: `{"$zip": {"inputs": [["a"], ["b", "c"]]}}`, want: ej(`[["a", "b"]]`)},
		{name: "zip longest", expr: `{"$zip": {"inputs": [[1], [2, 3]], "useLongestLength": true}}`, want: ej(`[[1, 2], [null, 3]]`)},
		{name: "zip defaults", expr: `{"$zip": {"inputs": [[1], [2, 3], [4]], "useLongestLength": true, "defaults": ["a", "b", "c"]}}`, want: ej(`[[1, 2, 4], ["a", 3, "c"]]`)},
	}
	for i, e := range experiments {
		doc := `{"A": ` + e[0] + `, "B": ` + e[1] + `}`
		for op, wants := range setWant {
			cases = append(cases, opCase{name: op + " experiment " + e[1], expr: `{"` + op + `": ["$A", "$B"]}`, doc: doc, want: ej(wants[i])})
		}
		cases = append(cases, opCase{name: "$setDifference experiment " + e[1], expr: `{"$setDifference": ["$B", "$A"]}`, doc: doc, want: ej(diffWant[i])})
	}
	for i, r := range responses {
		cases = append(cases,
			opCase{name: "anyElementTrue " + r, expr: `{"$anyElementTrue": ["$responses"]}`, doc: `{"responses": ` + r + `}`, want: anyWant[i]},
			opCase{name: "allElementsTrue " + r, expr: `{"$allElementsTrue": ["$responses"]}`, doc: `{"responses": ` + r + `}`, want: allWant[i]},
		)
	}
	runOpCases(t, cases)
}
