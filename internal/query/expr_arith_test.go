package query

import (
	"math"
	"testing"

	"github.com/ttldb/ttldb/internal/errs"
)

func TestArithmetic(t *testing.T) {
	runOpCases(t, []opCase{
		{name: "add ints", expr: `{"$add": [1, 2, 3]}`, want: int32(6)},
		{name: "add no args", expr: `{"$add": []}`, want: int32(0)},
		{name: "add int overflow to long", expr: `{"$add": [2147483647, 1]}`, want: int64(2147483648)},
		{name: "add long overflow to double", expr: `{"$add": [{"$numberLong": "9223372036854775807"}, 1]}`, want: 9223372036854775808.0},
		{name: "add double", expr: `{"$add": [1, 0.5]}`, want: 1.5},
		{name: "add decimal", expr: `{"$add": [1, {"$numberDecimal": "0.25"}]}`, want: dec128("1.25")},
		{name: "add null", expr: `{"$add": [1, null]}`, want: nil},
		{name: "add missing", expr: `{"$add": [1, "$nofield"]}`, want: nil},
		{name: "add null before string", expr: `{"$add": [null, "a"]}`, want: nil},
		{name: "add string", expr: `{"$add": [1, "a"]}`, err: errs.ErrExpression},
		{name: "add date", expr: `{"$add": [{"$date": "2020-01-01T00:00:00Z"}, 1000]}`, want: isoDate("2020-01-01T00:00:01Z")},
		{name: "add date double rounds", expr: `{"$add": [{"$date": "2020-01-01T00:00:00Z"}, 1.6]}`, want: isoDate("2020-01-01T00:00:00.002Z")},
		{name: "add two dates", expr: `{"$add": [{"$date": "2020-01-01T00:00:00Z"}, {"$date": "2020-01-01T00:00:00Z"}]}`, err: errs.ErrExpression},
		{name: "subtract", expr: `{"$subtract": [5, 7]}`, want: int32(-2)},
		{name: "subtract int underflow", expr: `{"$subtract": [-2147483648, 1]}`, want: int64(-2147483649)},
		{name: "subtract dates", expr: `{"$subtract": [{"$date": "2020-01-01T00:00:01Z"}, {"$date": "2020-01-01T00:00:00Z"}]}`, want: int64(1000)},
		{name: "subtract ms from date", expr: `{"$subtract": [{"$date": "2020-01-01T00:00:01Z"}, 500]}`, want: isoDate("2020-01-01T00:00:00.5Z")},
		{name: "subtract date from number", expr: `{"$subtract": [1, {"$date": "2020-01-01T00:00:01Z"}]}`, err: errs.ErrExpression},
		{name: "subtract null", expr: `{"$subtract": ["$x", 1]}`, want: nil},
		{name: "subtract string and null", expr: `{"$subtract": ["a", null]}`, want: nil},
		{name: "subtract strings", expr: `{"$subtract": ["a", "b"]}`, err: errs.ErrExpression},
		{name: "subtract arity", expr: `{"$subtract": [1]}`, err: errs.ErrInvalidOptions},
		{name: "multiply", expr: `{"$multiply": [2, 3, 4]}`, want: int32(24)},
		{name: "multiply overflow", expr: `{"$multiply": [65536, 65536]}`, want: int64(1 << 32)},
		{name: "multiply long overflow", expr: `{"$multiply": [{"$numberLong": "4611686018427387904"}, 4]}`, want: 1.8446744073709552e19},
		{name: "multiply decimal", expr: `{"$multiply": [{"$numberDecimal": "1.1"}, 3]}`, want: dec128("3.3")},
		{name: "multiply null", expr: `{"$multiply": [2, null]}`, want: nil},
		{name: "multiply bool", expr: `{"$multiply": [2, true]}`, err: errs.ErrExpression},
		{name: "divide ints is double", expr: `{"$divide": [6, 3]}`, want: 2.0},
		{name: "divide decimal", expr: `{"$divide": [{"$numberDecimal": "1"}, 8]}`, want: dec128("0.125")},
		{name: "divide by zero", expr: `{"$divide": [1, 0]}`, err: errs.ErrExpression},
		{name: "divide decimal by zero", expr: `{"$divide": [1, {"$numberDecimal": "0"}]}`, err: errs.ErrExpression},
		{name: "divide null", expr: `{"$divide": [null, 0]}`, want: nil},
		{name: "divide string", expr: `{"$divide": ["1", 2]}`, err: errs.ErrExpression},
		{name: "mod ints", expr: `{"$mod": [7, 3]}`, want: int32(1)},
		{name: "mod negative dividend", expr: `{"$mod": [-7, 3]}`, want: int32(-1)},
		{name: "mod long", expr: `{"$mod": [{"$numberLong": "7"}, 3]}`, want: int64(1)},
		{name: "mod integral double divisor", expr: `{"$mod": [7, 2.0]}`, want: int32(1)},
		{name: "mod double divisor", expr: `{"$mod": [7, 2.5]}`, want: 2.0},
		{name: "mod double dividend", expr: `{"$mod": [7.5, 2]}`, want: 1.5},
		{name: "mod decimal", expr: `{"$mod": [{"$numberDecimal": "7.5"}, 2]}`, want: dec128("1.5")},
		{name: "mod by zero", expr: `{"$mod": [7, 0]}`, err: errs.ErrExpression},
		{name: "mod by -1", expr: `{"$mod": [-2147483648, -1]}`, want: int32(0)},
		{name: "mod null", expr: `{"$mod": [7, null]}`, want: nil},
		{name: "abs int", expr: `{"$abs": -5}`, want: int32(5)},
		{name: "abs int min", expr: `{"$abs": -2147483648}`, want: int64(2147483648)},
		{name: "abs long min", expr: `{"$abs": {"$numberLong": "-9223372036854775808"}}`, err: errs.ErrExpression},
		{name: "abs double", expr: `{"$abs": -1.5}`, want: 1.5},
		{name: "abs decimal", expr: `{"$abs": {"$numberDecimal": "-1.5"}}`, want: dec128("1.5")},
		{name: "abs null", expr: `{"$abs": null}`, want: nil},
		{name: "abs string", expr: `{"$abs": "x"}`, err: errs.ErrExpression},
		{name: "ceil int", expr: `{"$ceil": 3}`, want: int32(3)},
		{name: "ceil decimal", expr: `{"$ceil": {"$numberDecimal": "-1.5"}}`, want: dec128("-1")},
		{name: "floor decimal", expr: `{"$floor": {"$numberDecimal": "-1.5"}}`, want: dec128("-2")},
		{name: "floor missing", expr: `{"$floor": "$x"}`, want: nil},
		{name: "round half even", expr: `{"$round": [10.5, 0]}`, want: 10.0},
		{name: "round half even up", expr: `{"$round": [11.5]}`, want: 12.0},
		{name: "round single operand", expr: `{"$round": 2.5}`, want: 2.0},
		{name: "round int negative place", expr: `{"$round": [1250, -2]}`, want: int32(1200)},
		{name: "round int positive place", expr: `{"$round": [1250, 2]}`, want: int32(1250)},
		{name: "round long", expr: `{"$round": [{"$numberLong": "1350"}, -2]}`, want: int64(1400)},
		{name: "round decimal", expr: `{"$round": [{"$numberDecimal": "1.2345"}, 3]}`, want: dec128("1.234")},
		{name: "round place out of range", expr: `{"$round": [1.5, 100]}`, err: errs.ErrExpression},
		{name: "round place not integral", expr: `{"$round": [1.5, 1.5]}`, err: errs.ErrExpression},
		{name: "round null place", expr: `{"$round": [1.5, null]}`, want: nil},
		{name: "round NaN", expr: `{"$round": [{"$numberDouble": "NaN"}, 1]}`, want: math.NaN()},
		{name: "trunc", expr: `{"$trunc": [-1.99, 1]}`, want: -1.9},
		{name: "trunc default place", expr: `{"$trunc": -1.99}`, want: -1.0},
		{name: "trunc int negative place", expr: `{"$trunc": [1299, -2]}`, want: int32(1200)},
		{name: "sqrt", expr: `{"$sqrt": 25}`, want: 5.0},
		{name: "sqrt negative", expr: `{"$sqrt": -1}`, err: errs.ErrExpression},
		{name: "sqrt decimal", expr: `{"$sqrt": {"$numberDecimal": "2.25"}}`, want: dec128("1.5")},
		{name: "sqrt null", expr: `{"$sqrt": null}`, want: nil},
		{name: "pow int", expr: `{"$pow": [5, 2]}`, want: int32(25)},
		{name: "pow int zero", expr: `{"$pow": [5, 0]}`, want: int32(1)},
		{name: "pow int negative exponent", expr: `{"$pow": [5, -2]}`, want: 0.04},
		{name: "pow overflow int to long", expr: `{"$pow": [2, 40]}`, want: int64(1 << 40)},
		{name: "pow overflow long to double", expr: `{"$pow": [2, 64]}`, want: math.Pow(2, 64)},
		{name: "pow -1", expr: `{"$pow": [-1, -3]}`, want: int32(-1)},
		{name: "pow double", expr: `{"$pow": [-5, 0.5]}`, want: math.NaN()},
		{name: "pow zero negative", expr: `{"$pow": [0, -1]}`, err: errs.ErrExpression},
		{name: "pow decimal", expr: `{"$pow": [{"$numberDecimal": "2"}, 3]}`, want: dec128("8")},
		{name: "pow null", expr: `{"$pow": [null, "x"]}`, want: nil},
		{name: "exp", expr: `{"$exp": 0}`, want: 1.0},
		{name: "exp decimal", expr: `{"$exp": {"$numberDecimal": "0"}}`, want: dec128("1")},
		{name: "ln", expr: `{"$ln": 1}`, want: 0.0},
		{name: "ln zero", expr: `{"$ln": 0}`, err: errs.ErrExpression},
		{name: "ln null", expr: `{"$ln": null}`, want: nil},
		{name: "log10", expr: `{"$log10": 1000}`, want: 3.0},
		{name: "log10 negative", expr: `{"$log10": -1}`, err: errs.ErrExpression},
		{name: "log", expr: `{"$log": [100, 10]}`, want: 2.0},
		{name: "log base 1", expr: `{"$log": [100, 1]}`, err: errs.ErrExpression},
		{name: "log null", expr: `{"$log": [100, null]}`, want: nil},
	})
}

// TestManual_arithmetic reproduces the examples of the MongoDB manual's
// arithmetic operator pages.
func TestManual_arithmetic(t *testing.T) {
	sales := []string{
		`{"_id": 1, "item": "abc", "price": 10, "fee": 2, "discount": 5, "date": {"$date": "2014-03-01T08:00:00Z"}}`,
		`{"_id": 2, "item": "jkl", "price": 20, "fee": 1, "discount": 2, "date": {"$date": "2014-03-01T09:00:00Z"}}`,
		`{"_id": 3, "item": "xyz", "price": 5, "fee": 0, "date": {"$date": "2014-03-15T09:00:00Z"}}`,
	}
	samples := []string{`{"value": 19.25}`, `{"value": 28.73}`, `{"value": 34.32}`, `{"value": -45.39}`}
	ceilSamples := []string{`{"value": 9.25}`, `{"value": 8.73}`, `{"value": 4.32}`, `{"value": -5.34}`}
	runOpCases(t, []opCase{
		// $add
		{name: "add total 1", expr: `{"$add": ["$price", "$fee"]}`, doc: sales[0], want: int32(12)},
		{name: "add total 2", expr: `{"$add": ["$price", "$fee"]}`, doc: sales[1], want: int32(21)},
		{name: "add total 3", expr: `{"$add": ["$price", "$fee"]}`, doc: sales[2], want: int32(5)},
		{name: "add billing_date 1", expr: `{"$add": ["$date", 259200000]}`, doc: sales[0], want: isoDate("2014-03-04T08:00:00Z")},
		{name: "add billing_date 3", expr: `{"$add": ["$date", 259200000]}`, doc: sales[2], want: isoDate("2014-03-18T09:00:00Z")},
		// $subtract
		{name: "subtract total 1", expr: `{"$subtract": [{"$add": ["$price", "$fee"]}, "$discount"]}`, doc: sales[0], want: int32(7)},
		{name: "subtract total 2", expr: `{"$subtract": [{"$add": ["$price", "$fee"]}, "$discount"]}`, doc: sales[1], want: int32(19)},
		{name: "subtract date diff", expr: `{"$subtract": ["$$NOW", "$date"]}`, doc: sales[0], want: isoDate("2024-01-02T03:04:05.678Z").Sub(isoDate("2014-03-01T08:00:00Z")).Milliseconds()},
		{name: "subtract ms 1", expr: `{"$subtract": ["$date", 300000]}`, doc: sales[0], want: isoDate("2014-03-01T07:55:00Z")},
		{name: "subtract ms 2", expr: `{"$subtract": ["$date", 300000]}`, doc: sales[1], want: isoDate("2014-03-01T08:55:00Z")},
		// $multiply
		{name: "multiply 1", expr: `{"$multiply": ["$price", "$quantity"]}`, doc: `{"price": 10, "quantity": 2}`, want: int32(20)},
		{name: "multiply 3", expr: `{"$multiply": ["$price", "$quantity"]}`, doc: `{"price": 5, "quantity": 10}`, want: int32(50)},
		// $divide
		{name: "divide workdays A", expr: `{"$divide": ["$hours", 8]}`, doc: `{"name": "A", "hours": 80, "resources": 7}`, want: 10.0},
		{name: "divide workdays B", expr: `{"$divide": ["$hours", 8]}`, doc: `{"name": "B", "hours": 40, "resources": 4}`, want: 5.0},
		// $mod
		{name: "mod remainder 1", expr: `{"$mod": ["$hours", "$tasks"]}`, doc: `{"hours": 80, "tasks": 7}`, want: int32(3)},
		{name: "mod remainder 2", expr: `{"$mod": ["$hours", "$tasks"]}`, doc: `{"hours": 40, "tasks": 4}`, want: int32(0)},
		// $abs
		{name: "abs delta 1", expr: `{"$abs": {"$subtract": ["$start", "$end"]}}`, doc: `{"start": 5, "end": 8}`, want: int32(3)},
		{name: "abs delta 2", expr: `{"$abs": {"$subtract": ["$start", "$end"]}}`, doc: `{"start": 4, "end": 4}`, want: int32(0)},
		{name: "abs delta 3", expr: `{"$abs": {"$subtract": ["$start", "$end"]}}`, doc: `{"start": 9, "end": 7}`, want: int32(2)},
		// $ceil / $floor
		{name: "ceil 1", expr: `{"$ceil": "$value"}`, doc: ceilSamples[0], want: 10.0},
		{name: "ceil 2", expr: `{"$ceil": "$value"}`, doc: ceilSamples[1], want: 9.0},
		{name: "ceil 3", expr: `{"$ceil": "$value"}`, doc: ceilSamples[2], want: 5.0},
		{name: "ceil 4", expr: `{"$ceil": "$value"}`, doc: ceilSamples[3], want: -5.0},
		{name: "floor 1", expr: `{"$floor": "$value"}`, doc: ceilSamples[0], want: 9.0},
		{name: "floor 2", expr: `{"$floor": "$value"}`, doc: ceilSamples[1], want: 8.0},
		{name: "floor 3", expr: `{"$floor": "$value"}`, doc: ceilSamples[2], want: 4.0},
		{name: "floor 4", expr: `{"$floor": "$value"}`, doc: ceilSamples[3], want: -6.0},
		// $round
		{name: "round 1", expr: `{"$round": ["$value", 1]}`, doc: samples[0], want: 19.2},
		{name: "round 2", expr: `{"$round": ["$value", 1]}`, doc: samples[1], want: 28.7},
		{name: "round 3", expr: `{"$round": ["$value", 1]}`, doc: samples[2], want: 34.3},
		{name: "round 4", expr: `{"$round": ["$value", 1]}`, doc: samples[3], want: -45.4},
		{name: "round 1234.5678 2", expr: `{"$round": [1234.5678, 2]}`, want: 1234.57},
		{name: "round 1234.5678 -2", expr: `{"$round": [1234.5678, -2]}`, want: 1200.0},
		{name: "round 1234.5678 -4", expr: `{"$round": [1234.5678, -4]}`, want: 0.0},
		{name: "round 1234.5678 0", expr: `{"$round": [1234.5678, 0]}`, want: 1235.0},
		// $trunc
		{name: "trunc 1", expr: `{"$trunc": ["$value", 1]}`, doc: samples[0], want: 19.2},
		{name: "trunc 2", expr: `{"$trunc": ["$value", 1]}`, doc: samples[1], want: 28.7},
		{name: "trunc 3", expr: `{"$trunc": ["$value", 1]}`, doc: samples[2], want: 34.3},
		{name: "trunc 4", expr: `{"$trunc": ["$value", 1]}`, doc: samples[3], want: -45.3},
		{name: "trunc 1234.5678 -2", expr: `{"$trunc": [1234.5678, -2]}`, want: 1200.0},
		// $sqrt: the distance between two points
		{name: "sqrt distance 1", expr: `{"$sqrt": {"$add": [{"$pow": [{"$subtract": ["$p2.y", "$p1.y"]}, 2]}, {"$pow": [{"$subtract": ["$p2.x", "$p1.x"]}, 2]}]}}`,
			doc: `{"p1": {"x": 5, "y": 8}, "p2": {"x": 0, "y": 5}}`, want: math.Sqrt(34)},
		{name: "sqrt distance 2", expr: `{"$sqrt": {"$add": [{"$pow": [{"$subtract": ["$p2.y", "$p1.y"]}, 2]}, {"$pow": [{"$subtract": ["$p2.x", "$p1.x"]}, 2]}]}}`,
			doc: `{"p1": {"x": -3, "y": 7}, "p2": {"x": 4, "y": 0}}`, want: math.Sqrt(98)},
		// $pow
		{name: "pow 5 0", expr: `{"$pow": [5, 0]}`, want: int32(1)},
		{name: "pow 5 2", expr: `{"$pow": [5, 2]}`, want: int32(25)},
		{name: "pow 5 -2", expr: `{"$pow": [5, -2]}`, want: 0.04},
		{name: "pow -5 0.5", expr: `{"$pow": [-5, 0.5]}`, want: math.NaN()},
		// $exp
		{name: "exp effective rate", expr: `{"$subtract": [{"$exp": "$interestRate"}, 1]}`, doc: `{"interestRate": 0.08, "presentValue": 10000}`, want: math.Exp(0.08) - 1},
		// $ln, $log, $log10
		{name: "ln sales", expr: `{"$ln": "$sales"}`, doc: `{"year": "2000", "sales": 8700000}`, want: math.Log(8700000)},
		{name: "log 100 10", expr: `{"$log": [100, 10]}`, want: 2.0},
		{name: "log 100 e", expr: `{"$log": [100, 2.718281828459045]}`, want: math.Log(100) / math.Log(2.718281828459045)},
		{name: "log bits", expr: `{"$floor": {"$add": [1, {"$log": ["$int", 2]}]}}`, doc: `{"int": 10}`, want: 4.0},
		{name: "log10 1", expr: `{"$log10": 1}`, want: 0.0},
		{name: "log10 100", expr: `{"$log10": 100}`, want: 2.0},
	})
}
