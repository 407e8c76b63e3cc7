package query

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

func TestTypes(t *testing.T) {
	oid, _ := codec.ObjectIDFromHex("5ab9cbfa31c2ab715d42129e")
	runOpCases(t, []opCase{
		{name: "type int", expr: `{"$type": 1}`, want: "int"},
		{name: "type missing", expr: `{"$type": "$x"}`, want: "missing"},
		{name: "type null", expr: `{"$type": null}`, want: "null"},
		{name: "type decimal", expr: `{"$type": {"$numberDecimal": "1"}}`, want: "decimal"},
		{name: "type regex", expr: `{"$type": {"$regularExpression": {"pattern": "a", "options": ""}}}`, want: "regex"},
		{name: "isNumber", expr: `{"$isNumber": {"$numberLong": "1"}}`, want: true},
		{name: "isNumber string", expr: `{"$isNumber": "1"}`, want: false},
		{name: "isNumber missing", expr: `{"$isNumber": "$x"}`, want: false},
		{name: "convert by code", expr: `{"$convert": {"input": "12", "to": 16}}`, want: int32(12)},
		{name: "convert unknown type", expr: `{"$convert": {"input": "12", "to": "integer"}}`, err: errs.ErrInvalidOptions},
		{name: "convert unknown type at runtime", expr: `{"$convert": {"input": "12", "to": "$t"}}`, doc: `{"t": "integer"}`, err: errs.ErrExpression},
		{name: "convert unknown type not onError", expr: `{"$convert": {"input": "12", "to": "$t", "onError": 0}}`, doc: `{"t": 20}`, err: errs.ErrExpression},
		{name: "convert unsupported type onError", expr: `{"$convert": {"input": "12", "to": "$t", "onError": 0}}`, doc: `{"t": 3}`, want: int32(0)},
		{name: "convert to array onError", expr: `{"$convert": {"input": [1], "to": "array", "onError": "no"}}`, want: "no"},
		{name: "convert to missing", expr: `{"$convert": {"input": 1, "to": "missing"}}`, err: errs.ErrExpression},
		{name: "convert fractional code", expr: `{"$convert": {"input": 1, "to": 1.5}}`, err: errs.ErrInvalidOptions},
		{name: "convert bool target", expr: `{"$convert": {"input": 1, "to": true}}`, err: errs.ErrInvalidOptions},
		{name: "convert null input bad target", expr: `{"$convert": {"input": null, "to": "$t", "onNull": 1}}`, doc: `{"t": "integer"}`, err: errs.ErrExpression},
		{name: "convert null input null target", expr: `{"$convert": {"input": null, "to": null, "onNull": 1}}`, want: int32(1)},
		{name: "convert minKey to bool", expr: `{"$convert": {"input": {"$minKey": 1}, "to": "bool"}}`, want: true},
		{name: "convert null to", expr: `{"$convert": {"input": "12", "to": null}}`, want: nil},
		{name: "convert onNull", expr: `{"$convert": {"input": "$x", "to": "int", "onNull": -1}}`, want: int32(-1)},
		{name: "convert null without onNull", expr: `{"$convert": {"input": null, "to": "int"}}`, want: nil},
		{name: "convert onError", expr: `{"$convert": {"input": "x", "to": "int", "onError": "bad"}}`, want: "bad"},
		{name: "convert error", expr: `{"$convert": {"input": "x", "to": "int"}}`, err: errs.ErrExpression},
		{name: "convert no to", expr: `{"$convert": {"input": "x"}}`, err: errs.ErrInvalidOptions},
		{name: "toInt 1.9 truncates", expr: `{"$toInt": 1.9}`, want: int32(1)},
		{name: "toInt -1.9 truncates", expr: `{"$toInt": -1.9}`, want: int32(-1)},
		{name: "toInt string 1.5", expr: `{"$toInt": "1.5"}`, err: errs.ErrExpression},
		{name: "toInt string spaces", expr: `{"$toInt": " 1"}`, err: errs.ErrExpression},
		{name: "toInt long overflow", expr: `{"$toInt": {"$numberLong": "3000000000"}}`, err: errs.ErrExpression},
		{name: "toInt NaN", expr: `{"$toInt": {"$numberDouble": "NaN"}}`, err: errs.ErrExpression},
		{name: "toInt date", expr: `{"$toInt": {"$date": "2020-01-01T00:00:00Z"}}`, err: errs.ErrExpression},
		{name: "toInt null", expr: `{"$toInt": null}`, want: nil},
		{name: "toInt missing", expr: `{"$toInt": "$x"}`, want: nil},
		{name: "toLong string", expr: `{"$toLong": "-9223372036854775808"}`, want: int64(math.MinInt64)},
		{name: "toLong double overflow", expr: `{"$toLong": 1e19}`, err: errs.ErrExpression},
		{name: "toDouble string", expr: `{"$toDouble": "1e3"}`, want: 1000.0},
		{name: "toDouble string hex", expr: `{"$toDouble": "0x10"}`, err: errs.ErrExpression},
		{name: "toDouble date", expr: `{"$toDouble": {"$date": "1970-01-01T00:00:01Z"}}`, want: 1000.0},
		{name: "toDouble object", expr: `{"$toDouble": {"$literal": {}}}`, err: errs.ErrExpression},
		{name: "toDecimal string", expr: `{"$toDecimal": "1.10"}`, want: dec128("1.1")},
		{name: "toDecimal bad string", expr: `{"$toDecimal": "one"}`, err: errs.ErrExpression},
		{name: "toBool empty string", expr: `{"$toBool": ""}`, want: true},
		{name: "toBool zero", expr: `{"$toBool": 0}`, want: false},
		{name: "toBool array", expr: `{"$toBool": [[]]}`, want: true},
		{name: "toString double", expr: `{"$toString": 0.1}`, want: "0.1"},
		{name: "toString whole double", expr: `{"$toString": 5.0}`, want: "5"},
		{name: "toString large double", expr: `{"$toString": 1e20}`, want: "1e+20"},
		{name: "toString decimal", expr: `{"$toString": {"$numberDecimal": "1.50"}}`, want: "1.50"},
		{name: "toString array", expr: `{"$toString": [[1]]}`, err: errs.ErrExpression},
		{name: "toString date", expr: `{"$toString": {"$date": "2020-01-02T03:04:05.6Z"}}`, want: "2020-01-02T03:04:05.600Z"},
		{name: "toObjectId", expr: `{"$toObjectId": "5ab9cbfa31c2ab715d42129e"}`, want: oid},
		{name: "toObjectId bad", expr: `{"$toObjectId": "5ab9cbfa"}`, err: errs.ErrExpression},
		{name: "toObjectId int", expr: `{"$toObjectId": 1}`, err: errs.ErrExpression},
		{name: "toDate int", expr: `{"$toDate": 1}`, err: errs.ErrExpression},
		{name: "toDate bad string", expr: `{"$toDate": "yesterday"}`, err: errs.ErrExpression},
		{name: "toDate iso with offset", expr: `{"$toDate": "2018-03-20T11:00:06.5+05:00"}`, want: isoDate("2018-03-20T06:00:06.5Z")},
		{name: "toDate iso Z", expr: `{"$toDate": "2018-03-20T11:00:06Z"}`, want: isoDate("2018-03-20T11:00:06Z")},
		{name: "toDate timestamp", expr: `{"$toDate": {"$timestamp": {"t": 1522039108, "i": 1}}}`, want: isoDate("2018-03-26T04:38:28Z")},
	})
}

// TestManual_types reproduces the examples of the MongoDB manual's
// $type, $convert and $to* pages.
func TestManual_types(t *testing.T) {
	oid, _ := codec.ObjectIDFromHex("5ab9c3da31c2ab715d421285")
	orders := []string{
		`{"_id": 1, "item": "apple", "qty": 5, "price": 10}`,
		`{"_id": 2, "item": "pie", "qty": 10, "price": {"$numberDecimal": "20.0"}}`,
		`{"_id": 3, "item": "ice cream", "qty": 2, "price": "4.99"}`,
		`{"_id": 4, "item": "almonds"}`,
		`{"_id": 5, "item": "bananas", "qty": 5000000000, "price": {"$numberDecimal": "1.25"}}`,
	}
	convPrice := `{"$convert": {"input": "$price", "to": "decimal", "onError": "Error", "onNull": {"$numberDecimal": "0"}}}`
	convQty := `{"$convert": {"input": "$qty", "to": "int", "onError": {"$concat": ["Could not convert ", {"$toString": "$qty"}, " to type integer."]}, "onNull": {"$numberInt": "0"}}}`
	prices := []any{dec128("10"), dec128("20.0"), dec128("4.99"), dec128("0"), dec128("1.25")}
	qtys := []any{int32(5), int32(10), int32(2), int32(0), "Could not convert 5000000000 to type integer."}
	cases := []opCase{
		{name: "type double", expr: `{"$type": "$a"}`, doc: `{"a": 8.0}`, want: "double"},
		{name: "type array", expr: `{"$type": "$a"}`, doc: `{"a": [41.63, 88.19]}`, want: "array"},
		{name: "type object", expr: `{"$type": "$a"}`, doc: `{"a": {"a": "apple", "b": "banana", "c": "carrot"}}`, want: "object"},
		{name: "type string", expr: `{"$type": "$a"}`, doc: `{"a": "caribou"}`, want: "string"},
		{name: "type long", expr: `{"$type": "$a"}`, doc: `{"a": {"$numberLong": "71"}}`, want: "long"},
		{name: "type missing", expr: `{"$type": "$a"}`, doc: `{}`, want: "missing"},
		// $isNumber
		{name: "isNumber string grade", expr: `{"$isNumber": "$grade"}`, doc: `{"grade": "A"}`, want: false},
		{name: "isNumber double grade", expr: `{"$isNumber": "$grade"}`, doc: `{"grade": 98.5}`, want: true},
		{name: "isNumber decimal grade", expr: `{"$isNumber": "$grade"}`, doc: `{"grade": {"$numberDecimal": "92.5"}}`, want: true},
		{name: "isNumber missing grade", expr: `{"$isNumber": "$grade"}`, doc: `{}`, want: false},
		// $toBool
		{name: "toBool true", expr: `{"$toBool": true}`, want: true},
		{name: "toBool 1.99999", expr: `{"$toBool": 1.99999}`, want: true},
		{name: "toBool decimal 5", expr: `{"$toBool": {"$numberDecimal": "5"}}`, want: true},
		{name: "toBool decimal 0", expr: `{"$toBool": {"$numberDecimal": "0"}}`, want: false},
		{name: "toBool 100", expr: `{"$toBool": 100}`, want: true},
		{name: "toBool date", expr: `{"$toBool": {"$date": "2018-03-26T04:38:28.044Z"}}`, want: true},
		{name: "toBool string false", expr: `{"$toBool": "false"}`, want: true},
		{name: "toBool null", expr: `{"$toBool": null}`, want: nil},
		// $toInt
		{name: "toInt true", expr: `{"$toInt": true}`, want: int32(1)},
		{name: "toInt false", expr: `{"$toInt": false}`, want: int32(0)},
		{name: "toInt 1.99999", expr: `{"$toInt": 1.99999}`, want: int32(1)},
		{name: "toInt decimal 5.5000", expr: `{"$toInt": {"$numberDecimal": "5.5000"}}`, want: int32(5)},
		{name: "toInt decimal overflow", expr: `{"$toInt": {"$numberDecimal": "9223372036000.000"}}`, err: errs.ErrExpression},
		{name: "toInt long 5000", expr: `{"$toInt": {"$numberLong": "5000"}}`, want: int32(5000)},
		{name: "toInt long overflow", expr: `{"$toInt": {"$numberLong": "922337203600"}}`, err: errs.ErrExpression},
		{name: "toInt -2", expr: `{"$toInt": "-2"}`, want: int32(-2)},
		{name: "toInt 2.5", expr: `{"$toInt": "2.5"}`, err: errs.ErrExpression},
		// $toLong
		{name: "toLong true", expr: `{"$toLong": true}`, want: int64(1)},
		{name: "toLong 1.99999", expr: `{"$toLong": 1.99999}`, want: int64(1)},
		{name: "toLong decimal 5.5000", expr: `{"$toLong": {"$numberDecimal": "5.5000"}}`, want: int64(5)},
		{name: "toLong decimal overflow", expr: `{"$toLong": {"$numberDecimal": "9223372036854775808.0"}}`, err: errs.ErrExpression},
		{name: "toLong int 8", expr: `{"$toLong": {"$numberInt": "8"}}`, want: int64(8)},
		{name: "toLong date", expr: `{"$toLong": {"$date": "2018-03-26T04:38:28.044Z"}}`, want: int64(1522039108044)},
		{name: "toLong -2", expr: `{"$toLong": "-2"}`, want: int64(-2)},
		{name: "toLong 2.5", expr: `{"$toLong": "2.5"}`, err: errs.ErrExpression},
		{name: "toLong null", expr: `{"$toLong": null}`, want: nil},
		// $toDouble
		{name: "toDouble true", expr: `{"$toDouble": true}`, want: 1.0},
		{name: "toDouble false", expr: `{"$toDouble": false}`, want: 0.0},
		{name: "toDouble 2.5", expr: `{"$toDouble": 2.5}`, want: 2.5},
		{name: "toDouble int 5", expr: `{"$toDouble": {"$numberInt": "5"}}`, want: 5.0},
		{name: "toDouble long", expr: `{"$toDouble": {"$numberLong": "10000"}}`, want: 10000.0},
		{name: "toDouble -5.5", expr: `{"$toDouble": "-5.5"}`, want: -5.5},
		{name: "toDouble 5e+10", expr: `{"$toDouble": "5e+10"}`, want: 5e10},
		// $toDecimal
		{name: "toDecimal true", expr: `{"$toDecimal": true}`, want: dec128("1")},
		{name: "toDecimal 2.5", expr: `{"$toDecimal": 2.5}`, want: dec128("2.50000000000000")},
		{name: "toDecimal int 5", expr: `{"$toDecimal": {"$numberInt": "5"}}`, want: dec128("5")},
		{name: "toDecimal long", expr: `{"$toDecimal": {"$numberLong": "10000"}}`, want: dec128("10000")},
		{name: "toDecimal -5.5", expr: `{"$toDecimal": "-5.5"}`, want: dec128("-5.5")},
		{name: "toDecimal date", expr: `{"$toDecimal": {"$date": "2018-03-26T04:38:28.044Z"}}`, want: dec128("1522039108044")},
		// $toString
		{name: "toString true", expr: `{"$toString": true}`, want: "true"},
		{name: "toString 2.5", expr: `{"$toString": 2.5}`, want: "2.5"},
		{name: "toString int 2", expr: `{"$toString": {"$numberInt": "2"}}`, want: "2"},
		{name: "toString long 1000", expr: `{"$toString": {"$numberLong": "1000"}}`, want: "1000"},
		{name: "toString objectId", expr: `{"$toString": {"$oid": "5ab9c3da31c2ab715d421285"}}`, want: "5ab9c3da31c2ab715d421285"},
		{name: "toString date", expr: `{"$toString": {"$date": "2018-03-27T16:58:51.538Z"}}`, want: "2018-03-27T16:58:51.538Z"},
		// $toDate
		{name: "toDate double", expr: `{"$toDate": 120000000000.5}`, want: isoDate("1973-10-20T21:20:00Z")},
		{name: "toDate decimal", expr: `{"$toDate": {"$numberDecimal": "1253372036000.50"}}`, want: isoDate("2009-09-19T14:53:56Z")},
		{name: "toDate long", expr: `{"$toDate": {"$numberLong": "1100000000000"}}`, want: isoDate("2004-11-09T11:33:20Z")},
		{name: "toDate negative long", expr: `{"$toDate": {"$numberLong": "-1100000000000"}}`, want: isoDate("1935-02-22T12:26:40Z")},
		{name: "toDate objectId", expr: `{"$toDate": {"$oid": "5ab9c3da31c2ab715d421285"}}`, want: isoDate("2018-03-27T04:08:58Z")},
		{name: "toDate date string", expr: `{"$toDate": "2018-03-03"}`, want: isoDate("2018-03-03T00:00:00Z")},
		{name: "toDate string with offset", expr: `{"$toDate": "2018-03-20 11:00:06 +0500"}`, want: isoDate("2018-03-20T06:00:06Z")},
		// $toObjectId
		{name: "toObjectId", expr: `{"$toObjectId": "5ab9c3da31c2ab715d421285"}`, want: oid},
	}
	for i, doc := range orders {
		cases = append(cases,
			opCase{name: "convert price " + doc, expr: convPrice, doc: doc, want: prices[i]},
			opCase{name: "convert qty " + doc, expr: convQty, doc: doc, want: qtys[i]},
		)
	}
	runOpCases(t, cases)
}

func TestDateFromISOString(t *testing.T) {
	for s, want := range map[string]string{
		"2018-03-03T12:00:00Z":         "2018-03-03T12:00:00Z",
		"2018-03-03T12:00:00.123+0100": "2018-03-03T11:00:00.123Z",
		"2018-03-03T12:00":             "2018-03-03T12:00:00Z",
		"2018-03-03 12:00:00":          "2018-03-03T12:00:00Z",
	} {
		got, ok := DateFromISOString(s)
		assert.True(t, ok, s)
		assert.Equal(t, isoDate(want), got, s)
	}
	_, ok := DateFromISOString("03/03/2018")
	assert.False(t, ok)
}
