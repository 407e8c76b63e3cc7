package query

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Type operators: $type, $isNumber, $convert and its shorthands
// ($toString, $toInt, $toLong, $toDouble, $toDecimal, $toDate, $toBool,
// $toObjectId), following MongoDB's conversion table: a double converts
// to an integer by truncation (an error if out of range, NaN or
// infinite); a string converts to a number only if it is one whole
// number of that type ("1.5" is not an int); every value but a number,
// a bool or null is true as a bool ("" included); a date converts to
// and from a long of milliseconds since the epoch, and to a string in
// ISO 8601 with milliseconds, in UTC; a double converts to a decimal by
// its 15 significant digits (2.5 is 2.50000000000000).

func init() {
	registerOps(map[string]opCompiler{
		"$type":       fn(1, 1, func(_ string, v []any) (any, error) { return TypeName(v[0]), nil }),
		"$isNumber":   fn(1, 1, func(_ string, v []any) (any, error) { return isNumberValue(v[0]), nil }),
		"$convert":    compileConvert,
		"$toString":   toType("string"),
		"$toInt":      toType("int"),
		"$toLong":     toType("long"),
		"$toDouble":   toType("double"),
		"$toDecimal":  toType("decimal"),
		"$toDate":     toType("date"),
		"$toBool":     toType("bool"),
		"$toObjectId": toType("objectId"),
	})
}

// bsonTypes maps the BSON type codes to their names. Any of them (and
// "missing") is a valid $convert target; those convertValue does not
// produce are conversion failures, which onError replaces.
var bsonTypes = map[int64]string{
	1: "double", 2: "string", 3: "object", 4: "array", 5: "binData",
	6: "undefined", 7: "objectId", 8: "bool", 9: "date", 10: "null",
	11: "regex", 12: "dbPointer", 13: "javascript", 14: "symbol",
	15: "javascriptWithScope", 16: "int", 17: "timestamp", 18: "long",
	19: "decimal", -1: "minKey", 127: "maxKey",
}

// convertTarget reads $convert's "to": a BSON type name or code. An
// invalid one is an error onError does not replace.
func convertTarget(v any) (string, error) {
	if s, ok := v.(string); ok {
		if s == "missing" {
			return s, nil
		}
		for _, name := range bsonTypes {
			if name == s {
				return s, nil
			}
		}
		return "", fmt.Errorf("unknown type name %q for 'to'", s)
	}
	if !isNumberValue(v) {
		return "", fmt.Errorf("'to' must be a string or a number, not %s", TypeName(v))
	}
	code, ok := integralArg(v)
	if !ok {
		return "", fmt.Errorf("numeric 'to' (%v) is not an integer", v)
	}
	name, ok := bsonTypes[code]
	if !ok {
		return "", fmt.Errorf("numeric 'to' (%d) is not a BSON type code", code)
	}
	return name, nil
}

// toType compiles a shorthand: {$toInt: expr} is $convert without
// onError and onNull.
func toType(to string) opCompiler {
	return fn(1, 1, func(op string, vals []any) (any, error) {
		if nullish(vals[0]) {
			return nil, nil
		}
		r, err := convertValue(vals[0], to)
		if err != nil {
			return nil, evalErr(op, "%v", err)
		}
		return r, nil
	})
}

// convertNode is $convert.
type convertNode struct {
	input, to, onError, onNull node
}

func compileConvert(c *compiler, op string, arg any) (node, error) {
	m, err := c.namedOperands(op, arg, []string{"input", "to"}, []string{"onError", "onNull"})
	if err != nil {
		return nil, err
	}
	if l, ok := m["to"].(*literalNode); ok && !nullish(l.v) {
		if _, err := convertTarget(l.v); err != nil {
			return nil, compileErr(op, "%v", err)
		}
	}
	return &convertNode{m["input"], m["to"], m["onError"], m["onNull"]}, nil
}

func (n *convertNode) eval(env *Env) (any, error) {
	tv, err := n.to.eval(env)
	if err != nil {
		return nil, err
	}
	v, err := n.input.eval(env)
	if err != nil {
		return nil, err
	}
	// As the server: an invalid target is an error even for a null
	// input; a null input gives onNull even for a null target.
	to := ""
	if !nullish(tv) {
		if to, err = convertTarget(tv); err != nil {
			return nil, evalErr("$convert", "%v", err)
		}
	}
	if nullish(v) {
		if n.onNull != nil {
			return n.onNull.eval(env)
		}
		return nil, nil
	}
	if to == "" {
		return nil, nil
	}
	r, err := convertValue(v, to)
	if err != nil {
		if n.onError != nil {
			return n.onError.eval(env)
		}
		return nil, evalErr("$convert", "%v with no onError value", err)
	}
	return r, nil
}

func unsupported(v any, to string) error {
	return errConversionf("unsupported conversion from %s to %s", TypeName(v), to)
}

// errConversionf is a value that does not convert: $convert's onError
// replaces it.
func errConversionf(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

// convertValue converts v (neither null nor missing) to the type named
// to, or returns the error onError replaces.
func convertValue(v any, to string) (any, error) {
	if n, ok := NumberValue(v); ok {
		v = n
	}
	switch to {
	case "double":
		return convertToDouble(v)
	case "int", "long":
		return convertToInteger(v, to)
	case "decimal":
		return convertToDecimal(v)
	case "string":
		return convertToString(v)
	case "bool":
		switch x := v.(type) {
		case bool:
			return x, nil
		case int32, int64, float64, bson.Decimal128:
			return Truthy(x), nil
		}
		return true, nil
	case "objectId":
		switch x := v.(type) {
		case codec.ObjectID:
			return x, nil
		case string:
			id, err := codec.ObjectIDFromHex(x)
			if err != nil {
				return nil, errConversionf("failed to parse objectId '%s': it must be 24 hexadecimal digits", x)
			}
			return id, nil
		}
		return nil, unsupported(v, to)
	case "date":
		return convertToDate(v)
	}
	return nil, unsupported(v, to)
}

func convertToDouble(v any) (any, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case bson.Decimal128:
		d := decOf(x)
		f := d.float()
		if !d.special() && math.IsInf(f, 0) {
			return nil, errConversionf("conversion would overflow target type double")
		}
		return f, nil
	case bool:
		if x {
			return 1.0, nil
		}
		return 0.0, nil
	case time.Time:
		return float64(unixMillis(x)), nil
	case string:
		if strings.ContainsAny(x, "xX_pP") || x == "" {
			return nil, errConversionf("failed to parse number '%s'", x)
		}
		f, err := strconv.ParseFloat(x, 64)
		if err != nil && !(errors.Is(err, strconv.ErrRange) && !math.IsInf(f, 0)) {
			return nil, errConversionf("failed to parse number '%s'", x)
		}
		return f, nil
	}
	return nil, unsupported(v, "double")
}

// convertToInteger converts to an int (32 bits) or a long.
func convertToInteger(v any, to string) (any, error) {
	lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
	if to == "long" {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	out := func(i int64) (any, error) {
		if i < lo || i > hi {
			return nil, errConversionf("conversion would overflow target type %s", to)
		}
		if to == "int" {
			return int32(i), nil
		}
		return i, nil
	}
	switch x := v.(type) {
	case int32:
		return out(int64(x))
	case int64:
		return out(x)
	case bool:
		if x {
			return out(1)
		}
		return out(0)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errConversionf("attempt to convert %v to integer type %s", x, to)
		}
		t := math.Trunc(x)
		if t < -9223372036854775808.0 || t >= 9223372036854775808.0 {
			return nil, errConversionf("conversion would overflow target type %s", to)
		}
		return out(int64(t))
	case bson.Decimal128:
		d := decOf(x)
		if d.special() {
			return nil, errConversionf("attempt to convert %v to integer type %s", x, to)
		}
		t := d.truncInt()
		if !t.IsInt64() {
			return nil, errConversionf("conversion would overflow target type %s", to)
		}
		return out(t.Int64())
	case time.Time:
		if to == "long" {
			return unixMillis(x), nil
		}
	case string:
		bits := 32
		if to == "long" {
			bits = 64
		}
		i, err := strconv.ParseInt(x, 10, bits)
		if err != nil {
			return nil, errConversionf("failed to parse number '%s' as %s", x, to)
		}
		return out(i)
	}
	return nil, unsupported(v, to)
}

func convertToDecimal(v any) (any, error) {
	switch x := v.(type) {
	case bson.Decimal128:
		return x, nil
	case int32, int64, float64:
		return decOf(x).decimal128(), nil
	case bool:
		if x {
			return decOf(int64(1)).decimal128(), nil
		}
		return decOf(int64(0)).decimal128(), nil
	case time.Time:
		return decOf(unixMillis(x)).decimal128(), nil
	case string:
		d, err := bson.ParseDecimal128(x)
		if err != nil {
			return nil, errConversionf("failed to parse number '%s' as decimal", x)
		}
		return d, nil
	}
	return nil, unsupported(v, "decimal")
}

func convertToString(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return doubleString(x), nil
	case bson.Decimal128:
		return x.String(), nil
	case time.Time:
		return isoMillisString(x), nil
	case codec.ObjectID:
		return x.Hex(), nil
	}
	return nil, unsupported(v, "string")
}

// doubleString formats a double as $toString does: the shortest
// representation that reads back as the same double, in exponent form
// below 1e-4 and from 1e16.
func doubleString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0 && math.Signbit(f):
		return "-0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// isoDateLayouts are the date strings $toDate reads: ISO 8601 forms, with
// a zone (Z, ±hh:mm, ±hhmm) or without (UTC). Fractional seconds are
// read after the seconds in any of them.
var isoDateLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05 Z07:00",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

// DateFromISOString parses a date string as $toDate and $dateFromString
// (without a format) read one: ISO 8601 dates and times, a missing zone
// meaning UTC. The result is in UTC, truncated to the millisecond.
func DateFromISOString(s string) (time.Time, bool) {
	for _, layout := range isoDateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return timeOfUnixMillis(t.UnixMilli()), true
		}
	}
	return time.Time{}, false
}

func convertToDate(v any) (any, error) {
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case int64:
		return timeOfUnixMillis(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 9.2e18 {
			return nil, errConversionf("cannot convert %v to a date: out of range", x)
		}
		return timeOfUnixMillis(int64(x)), nil
	case bson.Decimal128:
		i, err := convertToInteger(x, "long")
		if err != nil {
			return nil, err
		}
		return timeOfUnixMillis(i.(int64)), nil
	case string:
		t, ok := DateFromISOString(x)
		if !ok {
			return nil, errConversionf("error parsing date string '%s'", x)
		}
		return t, nil
	case codec.ObjectID:
		return x.Timestamp().UTC(), nil
	case bson.Timestamp:
		return time.Unix(int64(x.T), 0).UTC(), nil
	}
	return nil, unsupported(v, "date")
}
