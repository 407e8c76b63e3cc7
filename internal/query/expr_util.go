package query

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Shared helpers of the expression operators: MongoDB's numeric types
// (int, long, double, decimal) and how results are typed, decimals
// computed exactly, the aggregation comparison (where missing sorts
// before null), and the argument checks several families share.

// numKind is a number's BSON type, ordered from the narrowest to the
// widest: an operation's result takes the widest of its operands' kinds.
type numKind int8

const (
	kindInt numKind = iota + 1
	kindLong
	kindDouble
	kindDecimal
)

// NumberValue returns v as the Go type ttldb gives a number of its BSON
// type: int32 (int), int64 (long), float64 (double) or bson.Decimal128
// (decimal). An unsigned value above MaxInt64, which no BSON integer
// holds, becomes a float64. ok is false for a non-number.
func NumberValue(v any) (any, bool) {
	switch x := v.(type) {
	case int32, int64, float64, bson.Decimal128:
		return v, true
	case int8:
		return int32(x), true
	case int16:
		return int32(x), true
	case uint8:
		return int32(x), true
	case uint16:
		return int32(x), true
	case int:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		if uint64(x) > math.MaxInt64 {
			return float64(x), true
		}
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return float64(x), true
		}
		return int64(x), true
	case float32:
		return float64(x), true
	}
	return nil, false
}

// kindOf is the kind of a value NumberValue returned.
func kindOf(v any) numKind {
	switch v.(type) {
	case int32:
		return kindInt
	case int64:
		return kindLong
	case float64:
		return kindDouble
	}
	return kindDecimal
}

// isNumber reports whether v is a number of any Go kind.
func isNumber(v any) bool {
	_, ok := NumberValue(v)
	return ok
}

// toFloat returns a number (any Go kind) as a float64.
func toFloat(v any) float64 {
	n, _ := ToNumber(v)
	return n.Float()
}

// intResult types an exact integer result of operands of kind k (int or
// long): an int if both were ints and it fits, else a long.
func intResult(r int64, k numKind) any {
	if k == kindInt && r >= math.MinInt32 && r <= math.MaxInt32 {
		return int32(r)
	}
	return r
}

// Add is MongoDB's $add of two numbers (any Go numeric kinds), typed as
// the server types it: int + int is an int, or a long when it overflows
// an int; a long that overflows becomes a double; a double makes a
// double and a decimal a decimal. The accumulators ($sum, $avg) use it.
// An operand that is not a number is an error wrapping
// errs.ErrExpression.
func Add(a, b any) (any, error) { return arith("$add", '+', a, b) }

// Subtract is a - b with Add's typing.
func Subtract(a, b any) (any, error) { return arith("$subtract", '-', a, b) }

// Multiply is a * b with Add's typing.
func Multiply(a, b any) (any, error) { return arith("$multiply", '*', a, b) }

// Divide is MongoDB's $divide of two numbers: a double, or a decimal if
// either is one. Division by zero is an error wrapping
// errs.ErrExpression.
func Divide(a, b any) (any, error) {
	x, okA := NumberValue(a)
	y, okB := NumberValue(b)
	if !okA || !okB {
		return nil, evalErr("$divide", "only supports numeric types, not %s and %s", TypeName(a), TypeName(b))
	}
	if isZero(y) {
		return nil, evalErr("$divide", "can't $divide by zero")
	}
	if kindOf(x) == kindDecimal || kindOf(y) == kindDecimal {
		return decOp('/', decOf(x), decOf(y)).decimal128(), nil
	}
	return toFloat(x) / toFloat(y), nil
}

// isZero reports whether a number is zero.
func isZero(v any) bool {
	n, _ := ToNumber(v)
	return n.Kind != 'd' && n.Float() == 0
}

// arith computes a op b ('+', '-', '*') for two numbers.
func arith(name string, op byte, a, b any) (any, error) {
	x, okA := NumberValue(a)
	y, okB := NumberValue(b)
	if !okA || !okB {
		return nil, evalErr(name, "only supports numeric types, not %s and %s", TypeName(a), TypeName(b))
	}
	k := max(kindOf(x), kindOf(y))
	switch k {
	case kindDecimal:
		return decOp(op, decOf(x), decOf(y)).decimal128(), nil
	case kindDouble:
		return floatOp(op, toFloat(x), toFloat(y)), nil
	}
	i, j := int64Of(x), int64Of(y)
	if r, ok := intOp(op, i, j); ok {
		return intResult(r, k), nil
	}
	return floatOp(op, float64(i), float64(j)), nil // a long overflows to a double
}

func int64Of(v any) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	}
	return 0
}

func floatOp(op byte, a, b float64) float64 {
	switch op {
	case '+':
		return a + b
	case '-':
		return a - b
	case '*':
		return a * b
	}
	return a / b
}

// intOp is a op b on int64s; ok is false on overflow.
func intOp(op byte, a, b int64) (int64, bool) {
	switch op {
	case '+':
		r := a + b
		return r, (r > a) == (b > 0) || b == 0
	case '-':
		r := a - b
		return r, (r < a) == (b > 0) || b == 0
	}
	if a == 0 || b == 0 {
		return 0, true
	}
	r := a * b
	if r/b != a || a == -1 && b == math.MinInt64 || b == -1 && a == math.MinInt64 {
		return 0, false
	}
	return r, true
}

// dec is a decimal computed exactly: a rational, or NaN or an infinity.
// Results are rounded to Decimal128's 34 significant digits (half to
// even) only when converted back. A limitation: the scale of a decimal
// (the trailing zeros of 1.50) is not kept; values are equal.
type dec struct {
	r   *big.Rat // nil for the specials
	nan bool
	inf int // +1 or -1
}

// decOf converts a number (any Go kind) to a dec. A double converts as
// MongoDB converts one, by its 15 significant digits (0.1 is 0.1).
func decOf(v any) dec {
	switch x := v.(type) {
	case float64:
		return decOfFloat(x)
	case float32:
		return decOfFloat(float64(x))
	}
	n, _ := ToNumber(v)
	if n.Kind == 'f' {
		return decOfFloat(n.F) // a decimal that is NaN, an infinity or exact in binary
	}
	r, _ := n.rat()
	return dec{r: r}
}

func decOfFloat(f float64) dec {
	switch {
	case math.IsNaN(f):
		return dec{nan: true}
	case math.IsInf(f, 1):
		return dec{inf: 1}
	case math.IsInf(f, -1):
		return dec{inf: -1}
	}
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', 15, 64))
	return dec{r: r}
}

func (d dec) special() bool { return d.r == nil }

func (d dec) float() float64 {
	switch {
	case d.nan:
		return math.NaN()
	case d.inf != 0:
		return math.Inf(d.inf)
	}
	f, _ := d.r.Float64()
	return f
}

// decOp computes a op b ('+', '-', '*', '/', '%'); the specials
// (NaN, infinities) go through float64 arithmetic, which treats them as
// IEEE 754 decimal arithmetic does. b is not zero for '/' and '%'.
func decOp(op byte, a, b dec) dec {
	if a.special() || b.special() {
		if op == '%' {
			return decOfFloat(math.Mod(a.float(), b.float()))
		}
		return decOfFloat(floatOp(op, a.float(), b.float()))
	}
	r := new(big.Rat)
	switch op {
	case '+':
		r.Add(a.r, b.r)
	case '-':
		r.Sub(a.r, b.r)
	case '*':
		r.Mul(a.r, b.r)
	case '/':
		r.Quo(a.r, b.r)
	case '%': // a - b*trunc(a/b): the sign of the dividend, as fmod
		q := new(big.Rat).Quo(a.r, b.r)
		t := new(big.Int).Quo(q.Num(), q.Denom())
		r.Sub(a.r, new(big.Rat).Mul(b.r, new(big.Rat).SetInt(t)))
	}
	return dec{r: r}
}

var (
	bigTen     = big.NewInt(10)
	decDigits  = new(big.Int).Exp(bigTen, big.NewInt(34), nil) // 10^34
	decDigitsL = new(big.Int).Exp(bigTen, big.NewInt(33), nil) // 10^33
)

// decimal128 rounds d to 34 significant digits, half to even. A result
// beyond Decimal128's exponent range becomes an infinity (too large) or
// zero (too small).
func (d dec) decimal128() bson.Decimal128 {
	var s string
	switch {
	case d.nan:
		s = "NaN"
	case d.inf > 0:
		s = "Infinity"
	case d.inf < 0:
		s = "-Infinity"
	case d.r.Sign() == 0:
		s = "0"
	default:
		s = ratDecimalString(d.r)
	}
	out, err := bson.ParseDecimal128(s)
	if err != nil { // out of the exponent range
		switch {
		case strings.Contains(s, "E-"):
			out, _ = bson.ParseDecimal128("0")
		case d.r.Sign() > 0:
			out, _ = bson.ParseDecimal128("Infinity")
		default:
			out, _ = bson.ParseDecimal128("-Infinity")
		}
	}
	return out
}

// ratDecimalString formats a non-zero r as coefficient "E" exponent,
// the coefficient rounded to 34 digits, half to even.
func ratDecimalString(r *big.Rat) string {
	num := new(big.Int).Abs(r.Num())
	den := r.Denom()
	// q = num * 10^-e / den in [10^33, 10^34).
	e := len(num.String()) - len(den.String()) - 33
	var q, rem big.Int
	scaled := func(e int) {
		n, d := new(big.Int).Set(num), new(big.Int).Set(den)
		p := new(big.Int).Exp(bigTen, big.NewInt(int64(abs(e))), nil)
		if e < 0 {
			n.Mul(n, p)
		} else {
			d.Mul(d, p)
		}
		q.QuoRem(n, d, &rem)
		rem.Mul(&rem, big.NewInt(2))
		rem.Sub(&rem, d) // sign: the remainder against half
	}
	scaled(e)
	for q.Cmp(decDigits) >= 0 {
		e++
		scaled(e)
	}
	for q.Cmp(decDigitsL) < 0 {
		e--
		scaled(e)
	}
	if c := rem.Sign(); c > 0 || c == 0 && q.Bit(0) == 1 {
		q.Add(&q, big.NewInt(1))
		if q.Cmp(decDigits) == 0 {
			q.Quo(&q, bigTen)
			e++
		}
	}
	// Drop the trailing zeros of a fraction (3.000 is 3).
	var m big.Int
	for e < 0 {
		var qq big.Int
		qq.QuoRem(&q, bigTen, &m)
		if m.Sign() != 0 {
			break
		}
		q.Set(&qq)
		e++
	}
	sign := ""
	if r.Sign() < 0 {
		sign = "-"
	}
	return sign + q.String() + "E" + strconv.Itoa(e)
}

// aggCompare is the order of aggregation expressions' comparisons: BSON
// order, with a missing value before null (as the server's Value
// comparison puts EOO before null) and equal to another missing one.
func aggCompare(a, b any) int {
	ma, mb := IsMissing(a), IsMissing(b)
	switch {
	case ma && mb:
		return 0
	case ma:
		if _, min := b.(MinKeyType); min {
			return 1
		}
		return -1
	case mb:
		return -aggCompare(b, a)
	}
	return Compare(a, b)
}

// integralArg returns v as an int64 if it is a number holding an
// integer that fits 32 bits (an int, or a long or double or decimal of
// integral value), as the server's positional arguments want them.
func integralArg(v any) (int64, bool) {
	n, ok := ToNumber(v)
	if !ok {
		return 0, false
	}
	var f float64
	switch n.Kind {
	case 'i':
		if n.I < math.MinInt32 || n.I > math.MaxInt32 {
			return 0, false
		}
		return n.I, true
	case 'f':
		f = n.F
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, false
	}
	return int64(f), true
}

// integral64Arg is integralArg for 64-bit integers.
func integral64Arg(v any) (int64, bool) {
	n, ok := ToNumber(v)
	if !ok {
		return 0, false
	}
	switch n.Kind {
	case 'i':
		return n.I, true
	case 'f':
		if n.F == math.Trunc(n.F) && n.F >= -9223372036854775808.0 && n.F < 9223372036854775808.0 {
			return int64(n.F), true
		}
	}
	return 0, false
}

// MaxExprBytes bounds the strings and arrays (in elements) an operator
// builds ($concat, $replaceAll, $concatArrays, $range...): 16 MiB, the
// BSON document size limit, and 1<<20 elements for arrays.
const (
	MaxExprBytes    = 16 << 20
	MaxExprElements = 1 << 20
)

// dateString formats a date as $toString and $concat's coercion do:
// ISO 8601 with milliseconds, in UTC.
func dateString(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// dateMillis is a date's milliseconds since the epoch.
func dateMillis(t time.Time) int64 { return t.UnixMilli() }

// dateOfMillis is the date ms milliseconds after the epoch, in UTC.
func dateOfMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
