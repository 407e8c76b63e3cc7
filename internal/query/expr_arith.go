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
// Decimals: +, -, *, /, %, rounding and $sqrt are computed exactly and
// rounded once to 34 digits; $pow, $exp, $ln, $log and $log10 of a
// decimal are computed in double precision, then converted to a decimal
// (about 15 significant digits).

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
		if !isNumber(v) {
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
	f := math.Round(toFloat(ms))
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1<<62 {
		return nil, evalErr(op, "date overflow: %v milliseconds", ms)
	}
	r, ok := intOp('+', dateMillis(t), int64(f))
	if !ok {
		return nil, evalErr(op, "date overflow")
	}
	return dateOfMillis(r), nil
}

func evalSubtract(op string, vals []any) (any, error) {
	a, b := vals[0], vals[1]
	if isNumber(a) && isNumber(b) {
		return Subtract(a, b)
	}
	if nullish(a) || nullish(b) {
		return nil, nil
	}
	if t, ok := a.(time.Time); ok {
		switch y := b.(type) {
		case time.Time:
			r, ok := intOp('-', dateMillis(t), dateMillis(y))
			if !ok {
				return nil, evalErr(op, "date difference overflows a long")
			}
			return r, nil
		default:
			if isNumber(b) {
				n, _ := Multiply(b, int32(-1))
				return dateAddMillis(op, t, n)
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
		if !isNumber(v) {
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
		if !d.special() && d.r.Sign() == 0 {
			return nil, evalErr(op, "can't $mod by zero")
		}
		return decOp('%', decOf(a), d).decimal128(), nil
	}
	if toFloat(b) == 0 {
		return nil, evalErr(op, "can't $mod by zero")
	}
	_, bIntegral := integralArg(b)
	if ka == kindDouble || kb == kindDouble && !bIntegral {
		return math.Mod(toFloat(a), toFloat(b)), nil
	}
	x := int64Of(a)
	var y int64
	if kb == kindDouble {
		y = int64(toFloat(b))
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
	return dec{r: new(big.Rat).Abs(d.r)}.decimal128(), nil
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
	mode := roundFloor
	if op == "$ceil" {
		mode = roundCeil
	}
	return dec{r: roundRat(d.r, 0, mode)}.decimal128(), nil
}

type roundMode int

const (
	roundHalfEven roundMode = iota
	roundTrunc
	roundFloor
	roundCeil
)

// roundRat rounds r to place decimal places (negative: to tens,
// hundreds...).
func roundRat(r *big.Rat, place int, mode roundMode) *big.Rat {
	scale := new(big.Rat).SetInt(new(big.Int).Exp(bigTen, big.NewInt(int64(abs(place))), nil))
	x := new(big.Rat).Set(r)
	if place >= 0 {
		x.Mul(x, scale)
	} else {
		x.Quo(x, scale)
	}
	q, m := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int)) // truncated
	if m.Sign() != 0 {
		switch mode {
		case roundFloor:
			if x.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			}
		case roundCeil:
			if x.Sign() > 0 {
				q.Add(q, big.NewInt(1))
			}
		case roundHalfEven:
			twice := new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2))
			c := twice.Cmp(x.Denom())
			if c > 0 || c == 0 && q.Bit(0) == 1 {
				if x.Sign() < 0 {
					q.Sub(q, big.NewInt(1))
				} else {
					q.Add(q, big.NewInt(1))
				}
			}
		}
	}
	out := new(big.Rat).SetInt(q)
	if place >= 0 {
		return out.Quo(out, scale)
	}
	return out.Mul(out, scale)
}

// evalRoundTrunc is $round (half to even, as the server rounds) and
// $trunc, to an optional place in [-20, 100).
func evalRoundTrunc(op string, vals []any) (any, error) {
	place := int64(0)
	if len(vals) == 2 {
		p := vals[1]
		if nullish(p) {
			return nil, nil
		}
		var ok bool
		if place, ok = integralArg(p); !ok || place <= -20 || place >= 100 {
			return nil, evalErr(op, "place must be an integer between -20 and 100, not %v", p)
		}
	}
	n, ok, err := unaryNumber(op, vals[0])
	if !ok {
		return nil, err
	}
	mode := roundHalfEven
	if op == "$trunc" {
		mode = roundTrunc
	}
	k := kindOf(n)
	if (k == kindInt || k == kindLong) && place >= 0 {
		return n, nil
	}
	if k == kindDouble {
		f := n.(float64)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return f, nil
		}
	}
	d := decOf(n)
	if d.special() {
		return n, nil
	}
	r := roundRat(d.r, int(place), mode)
	switch k {
	case kindDecimal:
		return dec{r: r}.decimal128(), nil
	case kindDouble:
		f, _ := r.Float64()
		return f, nil
	}
	if r.Num().IsInt64() {
		return intResult(r.Num().Int64(), k), nil
	}
	f, _ := r.Float64()
	return f, nil
}

func evalSqrt(op string, vals []any) (any, error) {
	n, ok, err := unaryNumber(op, vals[0])
	if !ok {
		return nil, err
	}
	if kindOf(n) != kindDecimal {
		f := toFloat(n)
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
	if d.r.Sign() < 0 {
		return nil, evalErr(op, "$sqrt's argument must be greater than or equal to 0")
	}
	f := new(big.Float).SetPrec(256).SetRat(d.r)
	r, _ := f.Sqrt(f).Rat(nil)
	return dec{r: r}.decimal128(), nil
}

// evalLogExp is $exp, $ln and $log10: a double, or a decimal for a
// decimal operand.
func evalLogExp(op string, vals []any) (any, error) {
	n, ok, err := unaryNumber(op, vals[0])
	if !ok {
		return nil, err
	}
	f := toFloat(n)
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
			return decOfFloat(r).decimal128()
		}
	}
	return r
}

func evalLog(op string, vals []any) (any, error) {
	a, b, ok, err := twoNumbers(op, vals)
	if !ok {
		return nil, err
	}
	x, base := toFloat(a), toFloat(b)
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
	x, y := toFloat(a), toFloat(b)
	if x == 0 && y < 0 {
		return nil, evalErr(op, "$pow cannot take a base of 0 and a negative exponent")
	}
	k := max(kindOf(a), kindOf(b))
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
