package query

import (
	"testing"

	"github.com/ttldb/ttldb/internal/errs"
)

func TestObjects(t *testing.T) {
	runOpCases(t, []opCase{
		{name: "mergeObjects", expr: `{"$mergeObjects": [{"a": 1, "b": 1}, null, "$x", {"a": 2, "c": 3}]}`, want: ej(`{"a": 2, "b": 1, "c": 3}`)},
		{name: "mergeObjects one", expr: `{"$mergeObjects": "$d"}`, doc: `{"d": {"a": 1}}`, want: ej(`{"a": 1}`)},
		{name: "mergeObjects none", expr: `{"$mergeObjects": []}`, want: D{}},
		{name: "mergeObjects all null", expr: `{"$mergeObjects": [null, "$x"]}`, want: D{}},
		{name: "mergeObjects not document", expr: `{"$mergeObjects": [{"a": 1}, 1]}`, err: errs.ErrExpression},
		{name: "getField missing", expr: `{"$getField": "a"}`, want: Missing},
		{name: "getField null input", expr: `{"$getField": {"field": "a", "input": null}}`, want: nil},
		{name: "getField missing input", expr: `{"$getField": {"field": "a", "input": "$x"}}`, want: Missing},
		{name: "getField not document", expr: `{"$getField": {"field": "a", "input": 1}}`, err: errs.ErrExpression},
		{name: "getField non-constant field", expr: `{"$getField": {"field": "$a", "input": {}}}`, err: errs.ErrInvalidOptions},
		{name: "getField dotted name", expr: `{"$getField": {"field": "a.b", "input": {"$literal": {"a.b": 1, "a": {"b": 2}}}}}`, want: int32(1)},
		{name: "setField null input", expr: `{"$setField": {"field": "a", "input": null, "value": 1}}`, want: nil},
		{name: "setField not document", expr: `{"$setField": {"field": "a", "input": 1, "value": 1}}`, err: errs.ErrExpression},
		{name: "setField no value", expr: `{"$setField": {"field": "a", "input": {}}}`, err: errs.ErrInvalidOptions},
		{name: "setField leaves input", expr: `{"$let": {"vars": {"d": {"a": 1}}, "in": [{"$setField": {"field": "a", "input": "$$d", "value": 2}}, "$$d"]}}`,
			want: ej(`[{"a": 2}, {"a": 1}]`)},
		{name: "unsetField", expr: `{"$unsetField": {"field": "a", "input": {"a": 1, "b": 2}}}`, want: ej(`{"b": 2}`)},
	})
}

// TestManual_objects reproduces the examples of the MongoDB manual's
// $mergeObjects, $getField, $setField and $unsetField pages.
func TestManual_objects(t *testing.T) {
	order := `{"_id": 1, "item": "abc", "price": 12, "ordered": 2, "fromItems": [{"_id": 1, "item": "abc", "description": "product 1", "instock": 120}]}`
	sweatshirt := `{"_id": 1, "item": "sweatshirt", "price": 45.99, "qty": 300}`
	runOpCases(t, []opCase{
		{name: "mergeObjects lookup", expr: `{"$mergeObjects": [{"$arrayElemAt": ["$fromItems", 0]}, "$$ROOT"]}`, doc: order,
			want: ej(`{"_id": 1, "item": "abc", "description": "product 1", "instock": 120, "price": 12, "ordered": 2, "fromItems": [{"_id": 1, "item": "abc", "description": "product 1", "instock": 120}]}`)},
		{name: "getField dotted", expr: `{"$getField": "price.usd"}`, doc: `{"_id": 1, "item": "sweatshirt", "price.usd": 45.99, "qty": 300}`, want: 45.99},
		{name: "getField dollar", expr: `{"$getField": {"$literal": "$price"}}`, doc: `{"_id": 1, "item": "sweatshirt", "$price": 45.99, "qty": 300}`, want: 45.99},
		{name: "getField nested", expr: `{"$getField": {"field": {"$literal": "$small"}, "input": "$quantity"}}`, doc: `{"_id": 1, "item": "sweatshirt", "quantity": {"$large": 50, "$medium": 50, "$small": 25}}`, want: int32(25)},
		{name: "setField add", expr: `{"$setField": {"field": "price.usd", "input": "$$ROOT", "value": "$price"}}`, doc: sweatshirt,
			want: ej(`{"_id": 1, "item": "sweatshirt", "price": 45.99, "qty": 300, "price.usd": 45.99}`)},
		{name: "setField dollar", expr: `{"$setField": {"field": {"$literal": "$price"}, "input": "$$ROOT", "value": "$price"}}`, doc: sweatshirt,
			want: ej(`{"_id": 1, "item": "sweatshirt", "price": 45.99, "qty": 300, "$price": 45.99}`)},
		{name: "setField remove", expr: `{"$setField": {"field": "price.usd", "input": "$$ROOT", "value": "$$REMOVE"}}`, doc: `{"_id": 1, "item": "sweatshirt", "qty": 300, "price.usd": 45.99}`,
			want: ej(`{"_id": 1, "item": "sweatshirt", "qty": 300}`)},
		{name: "unsetField", expr: `{"$unsetField": {"field": "price.usd", "input": "$$ROOT"}}`, doc: `{"_id": 1, "item": "sweatshirt", "qty": 300, "price.usd": 45.99}`,
			want: ej(`{"_id": 1, "item": "sweatshirt", "qty": 300}`)},
	})
}
