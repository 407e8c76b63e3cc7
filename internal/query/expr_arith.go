package query

import (
	"math"
	"math/big"
	"time"
)

// Arithmetic operators: $add, $subtract, $multiply, $divide, $mod, $abs,
// $ceil, $floor, $round, $trunc, $sqrt, $pow, $exp, $ln, $log, $log10.
// A null or missing operand gives null; any other non-number is an
// error. Results are typed as MongoDB types them (see Add).
//
// Decimals: +, -, *, /, %, rounding and $sqrt follow IEEE 754's
// decimal arithmetic as the server's Decimal128 does (exact results keep
// their ideal exponent, others are rounded to 34 digits, half to even);
// $pow, $exp, $ln, $log and $log10 of decimals are computed to 34 digits
// (see hpPrec).

func init() {
	registerOps(map[string]opCompiler{
		"$add":      fn(0, -1, evalAdd),
		"$subtract": fn(2, 2, evalSubtract),
		"$multiply": fn(0, -1, evalMultiply),
		"$divide":   fn(2, 2, evalDivide),
		"$mod":      fn(2, 2, evalMod),
		"$abs":      fn(1, 1, evalAbs),
		"$ceil":     fn(1, 1, evalCeilFloor),
		"$floor":    fn(1, 1, evalCeilFloor),
		"$round":    fn(1, 2, evalRoundTrunc),
		"$trunc":    fn(1, 2, evalRoundTrunc),
		"$sqrt":     fn(1, 1, evalSqrt),
		"$pow":      fn(2, 2, evalPow),
		"$exp":      fn(1, 1, evalLogExp),
		"$ln":       fn(1, 1, evalLogExp),
		"$log10":    fn(1, 1, evalLogExp),
		"$log":      fn(2, 2, evalLog),
	})
}

// evalAdd sums numbers; one date among them makes the result a date,
// moved by the others as milliseconds (doubles rounded to the nearest).
func evalAdd(op string, vals []any) (any, error) {
	var sum any = int32(0)
	var date *time.Time
	for _, v := range vals {
		if nullish(v) {
			return nil, nil
		}
		if t, ok := v.(time.Time); ok {
			if date != nil {
				return nil, evalErr(op, "only one date allowed in an $add expression")
			}
			date = &t
			continue
		}
		if !isNumberValue(v) {
			return nil, evalErr(op, "only supports numeric or date types, not %s", TypeName(v))
		}
		s, err := Add(sum, v)
		if err != nil {
			return nil, err
		}
		sum = s
	}
	if date == nil {
		return sum, nil
	}
	return dateAddMillis(op, *date, sum)
}

// dateAddMillis moves t by ms milliseconds (a number of any kind).
func dateAddMillis(op string, t time.Time, ms any) (any, error) {
	f := math.Round(floatOf(ms))
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1<<62 {
		return nil, evalErr(op, "date overflow: %v milliseconds", ms)
	}
	r, ok := intOpChecked('+', unixMillis(t), int64(f))
	if !ok {
		return nil, evalErr(op, "date overflow")
	}
	return timeOfUnixMillis(r), nil
}

func evalSubtract(op string, vals []any) (any, error) {
	a, b := vals[0], vals[1]
	if isNumberValue(a) && isNumberValue(b) {
		return Subtract(a, b)
	}
	if nullish(a) || nullish(b) {
		return nil, nil
	}
	if t, ok := a.(time.Time); ok {
		switch y := b.(type) {
		case time.Time:
			r, ok := intOpChecked('-', unixMillis(t), unixMillis(y))
			if !ok {
				return nil, evalErr(op, "date difference overflows a long")
			}
			return r, nil
		default:
			if isNumberValue(b) { // the server truncates the milliseconds
				f := math.Trunc(floatOf(b))
				if math.IsNaN(f) || math.Abs(f) >= 1<<62 {
					return nil, evalErr(op, "date overflow: %v milliseconds", b)
				}
				r, ok := intOpChecked('-', unixMillis(t), int64(f))
				if !ok {
					return nil, evalErr(op, "date overflow")
				}
				return timeOfUnixMillis(r), nil
			}
		}
	}
	return nil, evalErr(op, "can't $subtract %s from %s", TypeName(b), TypeName(a))
}

func evalMultiply(op string, vals []any) (any, error) {
	var p any = int32(1)
	for _, v := range vals {
		if nullish(v) {
			return nil, nil
		}
		if !isNumberValue(v) {
			return nil, evalErr(op, "only supports numeric types, not %s", TypeName(v))
		}
		r, err := Multiply(p, v)
		if err != nil {
			return nil, err
		}
		p = r
	}
	return p, nil
}

func evalDivide(op string, vals []any) (any, error) {
	a, b, ok, err := twoNumbers(op, vals)
	if !ok {
		return nil, err
	}
	return Divide(a, b)
}

// twoNumbers reads the operands of a two-number operator as the server
// does: two numbers, else null if either is null or missing, else an
// error. ok false with a nil error means null.
func twoNumbers(op string, vals []any) (a, b any, ok bool, err error) {
	a, okA := NumberValue(vals[0])
	b, okB := NumberValue(vals[1])
	switch {
	case okA && okB:
		return a, b, true, nil
	case nullish(vals[0]) || nullish(vals[1]):
		return nil, nil, false, nil
	}
	return nil, nil, false, evalErr(op, "only supports numeric types, not %s and %s", TypeName(vals[0]), TypeName(vals[1]))
}

// evalMod is $mod, typed as the server types it: a decimal if either is
// one; a double if the dividend is one or the divisor is a non-integral
// double; else a long if either is one, else an int. The result has the
// dividend's sign.
func evalMod(op string, vals []any) (any, error) {
	a, b, ok, err := twoNumbers(op, vals)
	if !ok {
		return nil, err
	}
	ka, kb := kindOf(a), kindOf(b)
	if ka == kindDecimal || kb == kindDecimal {
		d := decOf(b)
		if !d.special() && d.coef.Sign() == 0 {
			return nil, evalErr(op, "can't $mod by zero")
		}
		return decOp('%', decOf(a), d).decimal128(), nil
	}
	if floatOf(b) == 0 {
		return nil, evalErr(op, "can't $mod by zero")
	}
	_, bIntegral := integralArg(b)
	if ka == kindDouble || kb == kindDouble && !bIntegral {
		return math.Mod(floatOf(a), floatOf(b)), nil
	}
	x := int64Of(a)
	var y int64
	if kb == kindDouble {
		y = int64(floatOf(b))
	} else {
		y = int64Of(b)
	}
	if y == -1 {
		return intResult(0, max(ka, kb)), nil // MinInt % -1 overflows in C
	}
	k := max(ka, kb)
	if kb == kindDouble {
		k = ka
	}
	return intResult(x%y, k), nil
}

// unaryNumber reads the operand of a one-number operator: ok false with
// a nil result means null (a null or missing operand).
func unaryNumber(op string, v any) (any, bool, error) {
	if nullish(v) {
		return nil, false, nil
	}
	n, ok := NumberValue(v)
	if !ok {
		return nil, false, evalErr(op, "only supports numeric types, not %s", TypeName(v))
	}
	return n, true, nil
}

func evalAbs(op string, vals []any) (any, error) {
	n, ok, err := unaryNumber(op, vals[0])
	if !ok {
		return nil, err
	}
	switch x := n.(type) {
	case int32:
		if x < 0 {
			return intResult(-int64(x), kindInt), nil
		}
		return x, nil
	case int64:
		if x == math.MinInt64 {
			return nil, evalErr(op, "can't take $abs of long long min")
		}
		if x < 0 {
			return -x, nil
		}
		return x, nil
	case float64:
		return math.Abs(x), nil
	}
	d := decOf(n)
	switch {
	case d.nan:
		return n, nil
	case d.special():
		return dec{inf: 1}.decimal128(), nil
	}
	return dec{coef: new(big.Int).Abs(d.coef), exp: d.exp}.decimal128(), nil
}

func evalCeilFloor(op string, vals []any) (any, error) {
	n, ok, err := unaryNumber(op, vals[0])
	if !ok {
		return nil, err
	}
	switch x := n.(type) {
	case int32, int64:
		return x, nil
	case float64:
		if op == "$ceil" {
			return math.Ceil(x), nil
		}
		return math.Floor(x), nil
	}
	d := decOf(n)
	if d.special() {
		return n, nil
	}
	mode := decRoundFloor
	if op == "$ceil" {
		mode = decRoundCeil
	}
	return d.quantize(0, mode).decimal128(), nil
}

type decRoundMode int

const (
	decRoundHalfEven decRoundMode = iota
	decRoundTrunc
	decRoundFloor
	decRoundCeil
)

// evalRoundTrunc is $round (half to even, as the server rounds) and
// $trunc, to an optional place in [-20, 100] (the server's bounds), as
// the server computes them: a decimal quantized to the place (5 rounded
// to 2 places is 5.00), a double by its binary value taken to 34 digits
// (1.015 is below 1.015), an integer only to a negative place.
func evalRoundTrunc(op string, vals []any) (any, error) {
	n, ok, err := unaryNumber(op, vals[0])
	if !ok {
		return nil, err
	}
	place := int64(0)
	if len(vals) == 2 {
		p := vals[1]
		if nullish(p) {
			return nil, nil
		}
		var ok bool
		if place, ok = integralArg(p); !ok || place < -20 || place > 100 {
			return nil, evalErr(op, "place must be an integer in [-20, 100], not %v", p)
		}
	}
	mode := decRoundHalfEven
	if op == "$trunc" {
		mode = decRoundTrunc
	}
	k := kindOf(n)
	if (k == kindInt || k == kindLong) && place >= 0 {
		return n, nil
	}
	d := decOf(n)
	if f, isFloat := n.(float64); isFloat {
		d = decOfFloat(f, decMaxDigits)
	}
	if d.special() {
		return n, nil
	}
	r := d.quantize(int(-place), mode)
	switch k {
	case kindDecimal:
		return r.decimal128(), nil
	case kindDouble:
		return r.float(), nil
	}
	i := r.truncInt()
	if !i.IsInt64() {
		return nil, evalErr(op, "rounding %v to %d places overflows a long", n, place)
	}
	return intResult(i.Int64(), k), nil
}

func evalSqrt(op string, vals []any) (any, error) {
	n, ok, err := unaryNumber(op, vals[0])
	if !ok {
		return nil, err
	}
	if kindOf(n) != kindDecimal {
		f := floatOf(n)
		if f < 0 {
			return nil, evalErr(op, "$sqrt's argument must be greater than or equal to 0")
		}
		return math.Sqrt(f), nil
	}
	d := decOf(n)
	if d.special() {
		if d.inf < 0 {
			return nil, evalErr(op, "$sqrt's argument must be greater than or equal to 0")
		}
		return n, nil
	}
	if d.coef.Sign() < 0 {
		return nil, evalErr(op, "$sqrt's argument must be greater than or equal to 0")
	}
	if d.coef.Sign() == 0 {
		e := d.exp
		if e%2 != 0 {
			e-- // floor(exp/2), the ideal exponent
		}
		return dec{coef: d.coef, exp: e / 2}.decimal128(), nil
	}
	return d.sqrt().decimal128(), nil
}

// evalLogExp is $exp, $ln and $log10: a double, or a decimal for a
// decimal operand.
func evalLogExp(op string, vals []any) (any, error) {
	n, ok, err := unaryNumber(op, vals[0])
	if !ok {
		return nil, err
	}
	if d := decOf(n); kindOf(n) == kindDecimal && !d.special() {
		if op == "$exp" {
			return hpExpDecimal(hpFloat(d)).decimal128(), nil
		}
		if d.coef.Sign() <= 0 {
			return nil, evalErr(op, "%s's argument must be a positive number, but is %v", op, n)
		}
		l := hpLn(hpFloat(d))
		if op == "$log10" {
			l.Quo(l, hpLn(hpFloat(decOf(int64(10)))))
		}
		return hpDecimal(l).decimal128(), nil
	}
	f := floatOf(n)
	var r float64
	switch op {
	case "$exp":
		r = math.Exp(f)
	case "$ln", "$log10":
		if f <= 0 {
			return nil, evalErr(op, "%s's argument must be a positive number, but is %v", op, n)
		}
		if op == "$ln" {
			r = math.Log(f)
		} else {
			r = math.Log10(f)
		}
	}
	return floatOrDecimal(r, n), nil
}

// floatOrDecimal types a result computed in double precision: a decimal
// when like (an operand) is one.
func floatOrDecimal(r float64, like ...any) any {
	for _, v := range like {
		if kindOf(v) == kindDecimal {
			return decOfFloat(r, 15).decimal128()
		}
	}
	return r
}

func evalLog(op string, vals []any) (any, error) {
	a, b, ok, err := twoNumbers(op, vals)
	if !ok {
		return nil, err
	}
	if kindOf(a) == kindDecimal || kindOf(b) == kindDecimal {
		x, base := decOf(a), decOf(b)
		if !x.special() && !base.special() {
			if x.coef.Sign() <= 0 {
				return nil, evalErr(op, "$log's argument must be a positive number, but is %v", a)
			}
			if base.coef.Sign() <= 0 || base.rat().Cmp(big.NewRat(1, 1)) == 0 {
				return nil, evalErr(op, "$log's base must be a positive number not equal to 1, but is %v", b)
			}
			l := hpLn(hpFloat(x))
			return hpDecimal(l.Quo(l, hpLn(hpFloat(base)))).decimal128(), nil
		}
	}
	x, base := floatOf(a), floatOf(b)
	if x <= 0 {
		return nil, evalErr(op, "$log's argument must be a positive number, but is %v", a)
	}
	if base <= 0 || base == 1 {
		return nil, evalErr(op, "$log's base must be a positive number not equal to 1, but is %v", b)
	}
	return floatOrDecimal(math.Log(x)/math.Log(base), a, b), nil
}

// evalPow is $pow: integers to a non-negative integer power stay
// integers (an int, a long, or a double once a long overflows); a
// negative power of an integer is a double (but 1 and -1 stay
// integers); a base of 0 to a negative power is an error.
func evalPow(op string, vals []any) (any, error) {
	a, b, ok, err := twoNumbers(op, vals)
	if !ok {
		return nil, err
	}
	x, y := floatOf(a), floatOf(b)
	if isZeroNumber(a) && Compare(b, int32(0)) < 0 && !IsNaN(b) {
		return nil, evalErr(op, "$pow cannot take a base of 0 and a negative exponent")
	}
	k := max(kindOf(a), kindOf(b))
	if k == kindDecimal {
		if dx, dy := decOf(a), decOf(b); !dx.special() && !dy.special() {
			return decPow(dx, dy).decimal128(), nil
		}
	}
	if k >= kindDouble {
		return floatOrDecimal(math.Pow(x, y), a, b), nil
	}
	base, exp := int64Of(a), int64Of(b)
	switch {
	case base == 1:
		return intResult(1, k), nil
	case base == -1:
		if exp%2 == 0 {
			return intResult(1, k), nil
		}
		return intResult(-1, k), nil
	case exp < 0:
		return math.Pow(x, y), nil
	case base == 0:
		if exp == 0 {
			return intResult(1, k), nil
		}
		return intResult(0, k), nil
	}
	if exp > 63 { // |base| >= 2: beyond a long
		return math.Pow(x, y), nil
	}
	r := new(big.Int).Exp(big.NewInt(base), big.NewInt(exp), nil)
	if r.IsInt64() {
		return intResult(r.Int64(), k), nil
	}
	return math.Pow(x, y), nil
}

// The decimal transcendental functions compute in binary floating point
// of hpPrec bits (about 150 decimal digits), then round to the 34 digits
// a decimal keeps. A result within rounding noise of a decimal of at
// most 34 digits is taken as exact: log10(1000) is 3, not
// 3.000000000000000000000000000000000.
const hpPrec = 512

// hpFloat is d's value (d not special) at hpPrec bits.
func hpFloat(d dec) *big.Float {
	return new(big.Float).SetPrec(hpPrec).SetRat(d.rat())
}

// The bounds of e^x that a decimal holds: ln(1E+6145) and ln(1E-6177).
const (
	hpExpMax = 14150.0
	hpExpMin = -14225.0
)

// hpExp is e^x: for |x| under 2^-20 by its Taylor series, the rest by
// squaring (e^x = (e^(x/2^k))^(2^k)). It is +Inf beyond hpExpMax and
// zero below hpExpMin.
func hpExp(x *big.Float) *big.Float {
	prec := uint(hpPrec + 64)
	if f, _ := x.Float64(); f > hpExpMax {
		return new(big.Float).SetInf(false)
	} else if f < hpExpMin {
		return new(big.Float).SetPrec(prec)
	}
	r := new(big.Float).SetPrec(prec).Set(x)
	k := 0
	if e := r.MantExp(nil); r.Sign() != 0 && e > -20 {
		k = e + 20
		r.SetMantExp(r, -k)
	}
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	for n := int64(1); n < 200; n++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetInt64(n))
		if term.Sign() == 0 || term.MantExp(nil) < sum.MantExp(nil)-int(prec) {
			break
		}
		sum.Add(sum, term)
	}
	for ; k > 0; k-- {
		sum.Mul(sum, sum)
	}
	return sum
}

// hpLn is ln(x), x > 0 and finite: Halley's iteration on e^y = x from
// the float64 estimate, each step tripling the correct bits.
func hpLn(x *big.Float) *big.Float {
	prec := uint(hpPrec + 64)
	mant := new(big.Float)
	e := x.MantExp(mant) // x = mant × 2^e, mant in [0.5, 1)
	m, _ := mant.Float64()
	y := new(big.Float).SetPrec(prec).SetFloat64(math.Log(m) + float64(e)*math.Ln2)
	xx := new(big.Float).SetPrec(prec).Set(x)
	two := new(big.Float).SetInt64(2)
	for range 4 {
		ey := hpExp(y)
		num := new(big.Float).SetPrec(prec).Sub(xx, ey)
		den := new(big.Float).SetPrec(prec).Add(xx, ey)
		y.Add(y, num.Mul(num.Quo(num, den), two))
	}
	if y.Sign() != 0 && y.MantExp(nil) < -(hpPrec-40) {
		y.SetInt64(0) // ln(1): rounding noise
	}
	return y
}

// hpDecimal rounds a result of the functions above to a dec: 34 digits,
// or fewer for a result that is exact (trailing zeros dropped down to
// exponent 0).
func hpDecimal(v *big.Float) dec {
	if v.IsInf() {
		return dec{inf: v.Sign()}
	}
	if v.Sign() == 0 {
		return dec{coef: new(big.Int)}
	}
	r, _ := v.Rat(nil)
	d := decOfRat(r)
	diff := new(big.Rat).Sub(r, d.rat())
	tol := new(big.Rat).Abs(r)
	tol.Quo(tol, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), hpPrec-40)))
	if diff.Abs(diff).Cmp(tol) <= 0 {
		d = d.trimZeros(0)
	}
	return d
}

// hpExpDecimal is e^x as a dec; an underflow is the smallest zero
// (0E-6176), as the specification's subnormal rounding gives it.
func hpExpDecimal(x *big.Float) dec {
	v := hpExp(x)
	if v.Sign() == 0 {
		return dec{coef: new(big.Int), exp: -6176}
	}
	return hpDecimal(v)
}

// decPow is x^y for decimals (not special; not 0 to a negative power):
// to an integer power exactly (then rounded once, the exponent the
// specification's ideal one), else e^(y ln|x|); NaN for a negative x to
// a fractional power.
func decPow(x, y dec) dec {
	switch {
	case y.coef.Sign() == 0:
		return dec{coef: big.NewInt(1)}
	case x.coef.Sign() == 0:
		return dec{coef: new(big.Int)}
	}
	if yi := y.truncInt(); new(big.Rat).SetInt(yi).Cmp(y.rat()) == 0 && yi.IsInt64() {
		n := yi.Int64()
		// The exact power's coefficient must stay small enough to build.
		if m := max(n, -n); m <= 1<<20 && (x.coef.CmpAbs(big.NewInt(1)) == 0 || m*int64(decDigits(x.coef)) <= 20000) {
			p := dec{coef: new(big.Int).Exp(x.coef, big.NewInt(m), nil), exp: x.exp * int(m)}
			if n > 0 {
				return p.roundDigits(false)
			}
			return decQuo(dec{coef: big.NewInt(1)}, p)
		}
	}
	neg := false
	if x.coef.Sign() < 0 {
		yi := y.truncInt()
		if new(big.Rat).SetInt(yi).Cmp(y.rat()) != 0 {
			return dec{nan: true}
		}
		neg = yi.Bit(0) == 1
		x = dec{coef: new(big.Int).Neg(x.coef), exp: x.exp}
	}
	t := hpLn(hpFloat(x))
	t.Mul(t, hpFloat(y))
	d := hpExpDecimal(t)
	if neg {
		if d.special() {
			d.inf = -d.inf
		} else {
			d.coef.Neg(d.coef)
		}
	}
	return d
}
