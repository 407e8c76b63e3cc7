package aggregate

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/query"
)

// numKind is a number's type as $sum widens it: 0 int, 1 long, 2
// double, 3 decimal.
func numKind(v any) int {
	switch v.(type) {
	case int8, int16, int32, uint8, uint16:
		return 0
	case float32, float64:
		return 2
	case bson.Decimal128:
		return 3
	}
	return 1
}

// numSum adds numbers: integers exactly (in an int64, then, once their
// sum overflows it, in a big.Int), doubles with a compensated (Neumaier)
// sum, decimals exactly; the result is rounded once, at the end, as
// MongoDB's double-double sum rounds once.
type numSum struct {
	i   int64
	ovf *big.Int // not nil: the integers' sum overflowed i; it is here
	f   float64
	c   float64 // f's compensation: the low-order bits f lost
	d   *big.Rat
}

// addFloat adds x to f, keeping what rounding loses in c.
func (s *numSum) addFloat(x float64) {
	t := s.f + x
	if !math.IsInf(t, 0) && !math.IsNaN(t) {
		if math.Abs(s.f) >= math.Abs(x) {
			s.c += (s.f - t) + x
		} else {
			s.c += (x - t) + s.f
		}
	}
	s.f = t
}

// bigInts moves the integers' sum to ovf.
func (s *numSum) bigInts() {
	if s.ovf == nil {
		s.ovf = big.NewInt(s.i)
		s.i = 0
	}
}

func (s *numSum) add(n query.Number) {
	switch n.Kind {
	case 'i':
		if s.ovf != nil {
			s.ovf.Add(s.ovf, big.NewInt(n.I))
			return
		}
		r := s.i + n.I
		if (n.I > 0 && r < s.i) || (n.I < 0 && r > s.i) {
			s.bigInts()
			s.ovf.Add(s.ovf, big.NewInt(n.I))
			return
		}
		s.i = r
	case 'u':
		s.bigInts()
		s.ovf.Add(s.ovf, new(big.Int).SetUint64(n.U))
	case 'd':
		if s.d == nil {
			s.d = new(big.Rat)
		}
		s.d.Add(s.d, n.R)
	default:
		s.addFloat(n.F)
	}
}

// float is the sum as a double, rounded once.
func (s *numSum) float() float64 {
	r, ok := s.exact()
	if !ok {
		return s.f // NaN or ±Inf: what the doubles give
	}
	f, _ := r.Float64()
	return f
}

// exact is the sum as a rational; false when it is NaN or infinite.
func (s *numSum) exact() (*big.Rat, bool) {
	if math.IsNaN(s.f) || math.IsInf(s.f, 0) {
		return nil, false
	}
	r := new(big.Rat).SetInt64(s.i)
	if s.ovf != nil {
		r.Add(r, new(big.Rat).SetInt(s.ovf))
	}
	r.Add(r, new(big.Rat).SetFloat64(s.f))
	r.Add(r, new(big.Rat).SetFloat64(s.c))
	if s.d != nil {
		r.Add(r, s.d)
	}
	return r, true
}

// typed is the sum in $sum's result type for the widest kind added.
func (s *numSum) typed(kind int) any {
	switch {
	case kind == 3:
		r, ok := s.exact()
		if !ok {
			return floatDecimal(s.f)
		}
		return ratDecimal(r)
	case kind == 2 || s.ovf != nil:
		return s.float()
	case kind == 1 || s.i < math.MinInt32 || s.i > math.MaxInt32:
		return s.i
	}
	return int32(s.i)
}

// decimalQuo is the sum divided by n, as a decimal ($avg).
func (s *numSum) decimalQuo(n int64) bson.Decimal128 {
	r, ok := s.exact()
	if !ok {
		return floatDecimal(s.f)
	}
	return ratDecimal(r.Quo(r, new(big.Rat).SetInt64(n)))
}

// floatDecimal is a NaN or an infinity as a decimal.
func floatDecimal(f float64) bson.Decimal128 {
	s := "NaN"
	switch {
	case math.IsInf(f, 1):
		s = "Infinity"
	case math.IsInf(f, -1):
		s = "-Infinity"
	}
	d, _ := bson.ParseDecimal128(s)
	return d
}

// ratDecimal rounds r to a decimal of 34 significant digits.
func ratDecimal(r *big.Rat) bson.Decimal128 {
	f := new(big.Float).SetPrec(256).SetRat(r)
	text := f.Text('e', 33)
	mant, expStr, _ := strings.Cut(text, "e")
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	if digits == "" {
		d, _ := bson.ParseDecimal128("0")
		return d
	}
	e, _ := strconv.Atoi(expStr)
	coef, _ := new(big.Int).SetString(digits, 10)
	if neg {
		coef.Neg(coef)
	}
	d, ok := bson.ParseDecimal128FromBigInt(coef, e-(len(digits)-1))
	if !ok {
		return floatDecimal(math.Inf(f.Sign()))
	}
	return d
}
