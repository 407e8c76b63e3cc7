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
// (int, long, double, decimal) and how results are typed, decimal
// arithmetic as Decimal128 computes it (IEEE 754), the aggregation
// comparison (where missing sorts before null), and the argument checks
// several families share.

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

// isNumberValue reports whether v is a number of any Go kind.
func isNumberValue(v any) bool {
	_, ok := NumberValue(v)
	return ok
}

// floatOf returns a number (any Go kind) as a float64.
func floatOf(v any) float64 {
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
// double and a decimal a decimal. As in the server's running total, a
// double a is converted to a decimal by its 34 significant digits, a
// double b by its 15. The accumulators ($sum, $avg) use it.
// An operand that is not a number is an error wrapping
// errs.ErrExpression.
func Add(a, b any) (any, error) { return arith("$add", '+', a, b) }

// Subtract is a - b, typed as Add types a sum (a double converts to a
// decimal by its 15 significant digits).
func Subtract(a, b any) (any, error) { return arith("$subtract", '-', a, b) }

// Multiply is a * b, typed as Add types a sum (a double converts to a
// decimal by its 15 significant digits).
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
	if isZeroNumber(y) {
		return nil, evalErr("$divide", "can't $divide by zero")
	}
	if kindOf(x) == kindDecimal || kindOf(y) == kindDecimal {
		return decOp('/', decOf(x), decOf(y)).decimal128(), nil
	}
	return floatOf(x) / floatOf(y), nil
}

// isZeroNumber reports whether a number is zero.
func isZeroNumber(v any) bool {
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
		dx := decOf(x)
		if f, isFloat := x.(float64); isFloat && op == '+' {
			// The server's $add converts a double running total to a
			// decimal by its 34 digits (an added double by 15).
			dx = decOfFloat(f, decMaxDigits)
		}
		return decOp(op, dx, decOf(y)).decimal128(), nil
	case kindDouble:
		return floatArith(op, floatOf(x), floatOf(y)), nil
	}
	i, j := int64Of(x), int64Of(y)
	if r, ok := intOpChecked(op, i, j); ok {
		return intResult(r, k), nil
	}
	return floatArith(op, float64(i), float64(j)), nil // a long overflows to a double
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

func floatArith(op byte, a, b float64) float64 {
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

// intOpChecked is a op b on int64s; ok is false on overflow.
func intOpChecked(op byte, a, b int64) (int64, bool) {
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

// dec is a decimal as a Decimal128 holds one: coef × 10^exp, the
// coefficient keeping its trailing zeros (1.50 is 150 × 10^-2), or NaN
// or an infinity. Arithmetic follows IEEE 754-2008's decimal rules, as
// the server's Decimal128 does: an exact result keeps the ideal
// exponent (the smaller of the operands' for + and - and %, their sum
// for *, their difference for /), and a result of more than 34 digits
// is rounded to 34, half to even. A zero's sign is not kept (-0 is 0).
type dec struct {
	coef *big.Int // nil for the specials
	exp  int
	nan  bool
	inf  int // +1 or -1
}

// decMaxDigits is Decimal128's precision.
const decMaxDigits = 34

// decOf converts a number (any Go kind) to a dec: integers exactly, a
// decimal as it is, a double by its 15 significant digits, as the server
// converts one (0.1 is 0.100000000000000).
func decOf(v any) dec {
	switch x := v.(type) {
	case float64:
		return decOfFloat(x, 15)
	case float32:
		return decOfFloat(float64(x), 15)
	case bson.Decimal128:
		switch {
		case x.IsNaN():
			return dec{nan: true}
		case x.IsInf() != 0:
			return dec{inf: x.IsInf()}
		}
		coef, exp, err := x.BigInt()
		if err != nil {
			return dec{nan: true}
		}
		return dec{coef: coef, exp: exp}
	}
	n, _ := ToNumber(v)
	if n.Kind == 'u' {
		return dec{coef: new(big.Int).SetUint64(n.U)}
	}
	return dec{coef: big.NewInt(n.I)}
}

// decOfFloat converts a double to a dec of digits significant digits:
// 15 (the server's conversion of an operand, trailing zeros kept) or 34
// (of a running sum: the binary value, exact when 34 digits hold it).
func decOfFloat(f float64, digits int) dec {
	switch {
	case math.IsNaN(f):
		return dec{nan: true}
	case math.IsInf(f, 0):
		return dec{inf: int(math.Copysign(1, f))}
	case f == 0:
		return dec{coef: new(big.Int)}
	}
	s := strconv.FormatFloat(f, 'e', digits-1, 64) // -d.ddde±x
	mant, e, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(e)
	coef, _ := new(big.Int).SetString(strings.Replace(mant, ".", "", 1), 10)
	d := dec{coef: coef, exp: exp - (digits - 1)}
	if digits == decMaxDigits {
		d = d.trimZeros(math.MaxInt)
	}
	return d
}

func (d dec) special() bool { return d.coef == nil }

// rat is d's value (d not special).
func (d dec) rat() *big.Rat {
	r := new(big.Rat).SetInt(d.coef)
	p := new(big.Rat).SetInt(pow10Int(abs(d.exp)))
	if d.exp >= 0 {
		return r.Mul(r, p)
	}
	return r.Quo(r, p)
}

func (d dec) float() float64 {
	switch {
	case d.nan:
		return math.NaN()
	case d.inf != 0:
		return math.Inf(d.inf)
	}
	f, _ := d.rat().Float64()
	return f
}

var bigTen = big.NewInt(10)

// pow10Int is 10^n (n >= 0).
func pow10Int(n int) *big.Int {
	return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil)
}

// decDigits counts the decimal digits of |x| (1 for zero).
func decDigits(x *big.Int) int {
	if x.Sign() == 0 {
		return 1
	}
	n := len(x.String())
	if x.Sign() < 0 {
		n--
	}
	return n
}

// scaledCoef is coef × 10^n (n >= 0), a new Int.
func scaledCoef(coef *big.Int, n int) *big.Int {
	return new(big.Int).Mul(coef, pow10Int(n))
}

// roundDigits rounds d to at most decMaxDigits digits, half to even.
// sticky reports that the exact value lies beyond coef (a remainder was
// dropped), so that a tie in the dropped digits is not a tie.
func (d dec) roundDigits(sticky bool) dec {
	n := decDigits(d.coef)
	if n <= decMaxDigits && !sticky {
		return d
	}
	drop := max(n-decMaxDigits, 0)
	neg := d.coef.Sign() < 0
	q, r := new(big.Int).QuoRem(new(big.Int).Abs(d.coef), pow10Int(drop), new(big.Int))
	twice := r.Mul(r, big.NewInt(2))
	c := twice.Cmp(pow10Int(drop))
	if drop == 0 {
		c = -1 // nothing dropped here; only the sticky remainder, below half
	}
	if c > 0 || c == 0 && (sticky || q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
	}
	exp := d.exp + drop
	if decDigits(q) > decMaxDigits {
		q.Quo(q, bigTen)
		exp++
	}
	if neg {
		q.Neg(q)
	}
	return dec{coef: q, exp: exp}
}

// trimZeros drops trailing zeros of the coefficient while the exponent
// stays at most ideal.
func (d dec) trimZeros(ideal int) dec {
	if d.special() || d.coef.Sign() == 0 {
		return d
	}
	c := new(big.Int).Set(d.coef)
	exp := d.exp
	var q, m big.Int
	for exp < ideal {
		q.QuoRem(c, bigTen, &m)
		if m.Sign() != 0 {
			break
		}
		c.Set(&q)
		exp++
	}
	return dec{coef: c, exp: exp}
}

// decOfRat is r rounded to 34 significant digits, half to even.
func decOfRat(r *big.Rat) dec {
	if r.Sign() == 0 {
		return dec{coef: new(big.Int)}
	}
	num := new(big.Int).Abs(r.Num())
	den := r.Denom()
	// q = num × 10^-e / den, with e chosen to give q at least 35 digits.
	e := decDigits(num) - decDigits(den) - decMaxDigits - 1
	n, dd := new(big.Int).Set(num), new(big.Int).Set(den)
	if e < 0 {
		n.Mul(n, pow10Int(-e))
	} else {
		dd.Mul(dd, pow10Int(e))
	}
	q, rem := new(big.Int).QuoRem(n, dd, new(big.Int))
	if r.Sign() < 0 {
		q.Neg(q)
	}
	return dec{coef: q, exp: e}.roundDigits(rem.Sign() != 0)
}

// decOp computes a op b ('+', '-', '*', '/', '%'); the specials (NaN,
// infinities) go through float64 arithmetic, which treats them as IEEE
// 754 decimal arithmetic does. b is not zero for '/' and '%'.
func decOp(op byte, a, b dec) dec {
	if a.special() || b.special() {
		if op == '%' {
			return decOfFloat(math.Mod(a.float(), b.float()), 15)
		}
		return decOfFloat(floatArith(op, a.float(), b.float()), 15)
	}
	if op == '+' || op == '-' {
		a, b = standIn(a, b)
	}
	switch op {
	case '+', '-', '%':
		e := min(a.exp, b.exp)
		x, y := scaledCoef(a.coef, a.exp-e), scaledCoef(b.coef, b.exp-e)
		switch op {
		case '+':
			x.Add(x, y)
		case '-':
			x.Sub(x, y)
		default: // truncated: the sign of the dividend, as fmod
			x.Rem(x, y)
		}
		return dec{coef: x, exp: e}.roundDigits(false)
	case '*':
		return dec{coef: new(big.Int).Mul(a.coef, b.coef), exp: a.exp + b.exp}.roundDigits(false)
	}
	return decQuo(a, b)
}

// standIn replaces an operand of + or - that lies wholly below the
// other's 34-digit rounding point by a one-digit stand-in just under
// that point: the result rounds alike, and exponent gaps of thousands
// of digits need no scaling.
func standIn(a, b dec) (dec, dec) {
	hi, lo := &a, &b
	if b.exp > a.exp {
		hi, lo = &b, &a
	}
	if hi.coef.Sign() == 0 {
		return a, b
	}
	floor := hi.exp + decDigits(hi.coef) - 1 - decMaxDigits - 3
	if lo.exp+decDigits(lo.coef)-1 < floor {
		*lo = dec{coef: big.NewInt(int64(lo.coef.Sign())), exp: floor}
	}
	return a, b
}

// decQuo is a / b: exact when the quotient has a finite decimal
// expansion (with the exponent nearest the ideal a.exp - b.exp), else
// rounded to 34 digits.
func decQuo(a, b dec) dec {
	ideal := a.exp - b.exp
	x := new(big.Rat).SetFrac(a.coef, b.coef)
	den := new(big.Int).Set(x.Denom())
	k2, k5 := 0, 0
	var q, m big.Int
	for _, f := range []struct {
		p int64
		k *int
	}{{2, &k2}, {5, &k5}} {
		for {
			q.QuoRem(den, big.NewInt(f.p), &m)
			if m.Sign() != 0 {
				break
			}
			den.Set(&q)
			*f.k++
		}
	}
	if den.Cmp(big.NewInt(1)) == 0 { // exact
		k := max(k2, k5)
		c := new(big.Int).Mul(x.Num(), pow10Int(k))
		c.Quo(c, x.Denom())
		return dec{coef: c, exp: ideal - k}.roundDigits(false)
	}
	r := decOfRat(x) // the exponent is added after, never built as 10^ideal
	r.exp += ideal
	return r
}

// quantize rounds d to exponent e: the server's Decimal128 quantize. A
// result of more than 34 digits is NaN (IEEE 754's invalid operation).
func (d dec) quantize(e int, mode decRoundMode) dec {
	if d.special() {
		return d
	}
	if d.exp >= e {
		c := scaledCoef(d.coef, d.exp-e)
		if decDigits(c) > decMaxDigits {
			return dec{nan: true}
		}
		return dec{coef: c, exp: e}
	}
	p := pow10Int(e - d.exp)
	q, r := new(big.Int).QuoRem(d.coef, p, new(big.Int)) // truncated
	if r.Sign() != 0 {
		switch mode {
		case decRoundFloor:
			if r.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			}
		case decRoundCeil:
			if r.Sign() > 0 {
				q.Add(q, big.NewInt(1))
			}
		case decRoundHalfEven:
			c := new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2)).Cmp(p)
			if c > 0 || c == 0 && q.Bit(0) == 1 {
				if r.Sign() < 0 {
					q.Sub(q, big.NewInt(1))
				} else {
					q.Add(q, big.NewInt(1))
				}
			}
		}
	}
	return dec{coef: q, exp: e}
}

// truncInt is d truncated to an integer (d not special).
func (d dec) truncInt() *big.Int {
	if d.exp >= 0 {
		return scaledCoef(d.coef, d.exp)
	}
	return new(big.Int).Quo(d.coef, pow10Int(-d.exp))
}

// sqrt is d's square root (d >= 0, not special): exact with the ideal
// exponent floor(exp/2) when there is one, else rounded to 34 digits.
func (d dec) sqrt() dec {
	c, e := new(big.Int).Set(d.coef), d.exp
	if e%2 != 0 { // make the exponent even
		c.Mul(c, bigTen)
		e--
	}
	if s := new(big.Int).Sqrt(c); new(big.Int).Mul(s, s).Cmp(c) == 0 {
		return dec{coef: s, exp: e / 2}.roundDigits(false)
	}
	// Scale so that the root has at least 35 digits; the remainder is
	// never zero here (the root is irrational), a sticky digit.
	extra := max(2*(decMaxDigits+1)-decDigits(c)+2, 0)
	extra += extra % 2
	c.Mul(c, pow10Int(extra))
	s := new(big.Int).Sqrt(c)
	return dec{coef: s, exp: (e - extra) / 2}.roundDigits(true)
}

// decimal128 converts d to a bson.Decimal128. An exponent beyond
// Decimal128's range is brought into it (trailing zeros added, or digits
// rounded off), else the value overflows to an infinity or underflows
// to zero.
func (d dec) decimal128() bson.Decimal128 {
	const maxExp, minExp = 6111, -6176
	var s string
	switch {
	case d.nan:
		s = "NaN"
	case d.inf > 0:
		s = "Infinity"
	case d.inf < 0:
		s = "-Infinity"
	default:
		if d.exp > maxExp && d.coef.Sign() == 0 {
			d.exp = maxExp
		}
		if d.exp > maxExp {
			if decDigits(d.coef)+d.exp-maxExp > decMaxDigits {
				return dec{inf: d.coef.Sign()}.decimal128()
			}
			d = dec{coef: scaledCoef(d.coef, d.exp-maxExp), exp: maxExp}
		}
		if d.exp+decDigits(d.coef) < minExp-1 { // below half the least
			d = dec{coef: new(big.Int), exp: minExp}
		}
		if d.exp < minExp {
			d = d.quantize(minExp, decRoundHalfEven)
		}
		s = d.coef.String() + "E" + strconv.Itoa(d.exp)
	}
	out, err := bson.ParseDecimal128(s)
	if err != nil { // not reached: the exponent is in range
		out, _ = bson.ParseDecimal128("NaN")
	}
	return out
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

// MaxExprBytes bounds the strings and arrays (in elements) an operator
// builds ($concat, $replaceAll, $concatArrays, $range...): 16 MiB, the
// BSON document size limit, and 1<<20 elements for arrays.
const (
	MaxExprBytes    = 16 << 20
	MaxExprElements = 1 << 20
)

// isoMillisString formats a date as $toString and $concat's coercion do:
// ISO 8601 with milliseconds, in UTC.
func isoMillisString(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// unixMillis is a date's milliseconds since the epoch.
func unixMillis(t time.Time) int64 { return t.UnixMilli() }

// timeOfUnixMillis is the date ms milliseconds after the epoch, in UTC.
func timeOfUnixMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
