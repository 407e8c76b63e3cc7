package query

import (
	"bytes"
	"cmp"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TypeRank orders values of different types as MongoDB's BSON comparison
// order does: null (and a missing field) < numbers < strings < documents <
// arrays < binary data < ObjectID < booleans < dates. Values of one rank
// compare by value; numbers compare across Go kinds (int(3) == float64(3)).
type TypeRank int

const (
	rankMinKey TypeRank = iota
	rankNull
	rankNumber
	rankString
	rankDocument
	rankArray
	rankBinary
	rankObjectID
	rankBool
	rankDate
	rankTimestamp
	rankRegex
	rankMaxKey
)

// MinKey and MaxKey sort before and after every value; index range scans use
// them as open bounds. They are the driver's bson.MinKey and bson.MaxKey,
// which a document may also hold.
type (
	MinKeyType = bson.MinKey
	MaxKeyType = bson.MaxKey
)

// MinKey and MaxKey are the values of the bound types, as index bounds use
// them.
var (
	MinKey any = MinKeyType{}
	MaxKey any = MaxKeyType{}
)

// RankOf returns v's place in the BSON type order (TypeRank); an
// unsupported value ranks as MaxKey.
func RankOf(v any) TypeRank {
	switch v.(type) {
	case nil:
		return rankNull
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return rankNumber
	case string:
		return rankString
	case map[string]any:
		return rankDocument
	case []byte:
		return rankBinary
	case codec.ObjectID:
		return rankObjectID
	case bool:
		return rankBool
	case time.Time:
		return rankDate
	case bson.Binary:
		return rankBinary
	case bson.Decimal128:
		return rankNumber
	case bson.Timestamp:
		return rankTimestamp
	case bson.Regex:
		return rankRegex
	case MinKeyType:
		return rankMinKey
	case MaxKeyType:
		return rankMaxKey
	}
	if codec.IsArray(v) {
		return rankArray
	}
	return rankMaxKey
}

// Number is a numeric value in the widest exact form: integers stay
// integers (int64, or uint64 above MaxInt64), floats stay floats, and a
// Decimal128 is the first of those that holds it exactly, else a rational.
type Number struct {
	Kind byte // 'i' int64, 'u' uint64 > MaxInt64, 'f' float64, 'd' R
	I    int64
	U    uint64
	F    float64
	R    *big.Rat // a Decimal128 no other kind holds exactly
}

// ToNumber converts any Go numeric kind; ok is false for a non-number.
func ToNumber(v any) (n Number, ok bool) {
	switch x := v.(type) {
	case int:
		return Number{Kind: 'i', I: int64(x)}, true
	case int8:
		return Number{Kind: 'i', I: int64(x)}, true
	case int16:
		return Number{Kind: 'i', I: int64(x)}, true
	case int32:
		return Number{Kind: 'i', I: int64(x)}, true
	case int64:
		return Number{Kind: 'i', I: x}, true
	case uint:
		return fromUint(uint64(x)), true
	case uint8:
		return Number{Kind: 'i', I: int64(x)}, true
	case uint16:
		return Number{Kind: 'i', I: int64(x)}, true
	case uint32:
		return Number{Kind: 'i', I: int64(x)}, true
	case uint64:
		return fromUint(x), true
	case float32:
		return Number{Kind: 'f', F: float64(x)}, true
	case float64:
		return Number{Kind: 'f', F: x}, true
	case bson.Decimal128:
		return decimalNumber(x), true
	}
	return Number{}, false
}

// decimalNumber converts a Decimal128 to the narrowest exact Number.
func decimalNumber(d bson.Decimal128) Number {
	switch {
	case d.IsNaN():
		return Number{Kind: 'f', F: math.NaN()}
	case d.IsInf() > 0:
		return Number{Kind: 'f', F: math.Inf(1)}
	case d.IsInf() < 0:
		return Number{Kind: 'f', F: math.Inf(-1)}
	}
	coef, exp, err := d.BigInt()
	if err != nil {
		return Number{Kind: 'f', F: math.NaN()}
	}
	r := new(big.Rat).SetInt(coef)
	if exp != 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
		if exp > 0 {
			r.Mul(r, new(big.Rat).SetInt(p))
		} else {
			r.Quo(r, new(big.Rat).SetInt(p))
		}
	}
	if r.IsInt() {
		if n := r.Num(); n.IsInt64() {
			return Number{Kind: 'i', I: n.Int64()}
		} else if n.IsUint64() {
			return Number{Kind: 'u', U: n.Uint64()}
		}
	}
	if f, exact := r.Float64(); exact {
		return Number{Kind: 'f', F: f}
	}
	return Number{Kind: 'd', R: r}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// rat returns n as a rational; ok is false for NaN and the infinities.
func (n Number) rat() (r *big.Rat, ok bool) {
	switch n.Kind {
	case 'i':
		return new(big.Rat).SetInt64(n.I), true
	case 'u':
		return new(big.Rat).SetUint64(n.U), true
	case 'd':
		return n.R, true
	}
	if math.IsNaN(n.F) || math.IsInf(n.F, 0) {
		return nil, false
	}
	return new(big.Rat).SetFloat64(n.F), true
}

func fromUint(u uint64) Number {
	if u <= math.MaxInt64 {
		return Number{Kind: 'i', I: int64(u)}
	}
	return Number{Kind: 'u', U: u}
}

// Float returns the value as a float64 (rounded for huge integers).
func (n Number) Float() float64 {
	switch n.Kind {
	case 'i':
		return float64(n.I)
	case 'u':
		return float64(n.U)
	case 'd':
		f, _ := n.R.Float64()
		return f
	}
	return n.F
}

// CompareNumbers orders numbers exactly across kinds. NaN sorts before every
// other number and equals itself, as in MongoDB.
func CompareNumbers(a, b Number) int {
	if a.Kind == 'd' || b.Kind == 'd' {
		ra, okA := a.rat()
		rb, okB := b.rat()
		switch {
		case okA && okB:
			return ra.Cmp(rb)
		case !okA && !okB:
			return cmp.Compare(a.F, b.F)
		case !okA: // a is NaN or an infinity
			if math.IsNaN(a.F) || a.F < 0 {
				return -1
			}
			return 1
		}
		return -CompareNumbers(b, a)
	}
	if a.Kind != 'f' && b.Kind != 'f' {
		switch {
		case a.Kind == 'u' && b.Kind == 'u':
			return cmp.Compare(a.U, b.U)
		case a.Kind == 'u':
			return 1
		case b.Kind == 'u':
			return -1
		}
		return cmp.Compare(a.I, b.I)
	}
	if a.Kind == 'f' && b.Kind == 'f' {
		return cmp.Compare(a.F, b.F) // cmp.Compare puts NaN first
	}
	// One float, one integer.
	if a.Kind != 'f' {
		return -CompareNumbers(b, a)
	}
	f := a.F
	if math.IsNaN(f) {
		return -1
	}
	// Compare the float against the integer without losing precision: out of
	// int64 range the float decides alone; inside it, compare the truncated
	// integer part first, then the fraction.
	if b.Kind == 'u' {
		if f >= 18446744073709551616.0 {
			return 1
		}
		if f < 9223372036854775808.0 {
			return -1
		}
		return cmp.Compare(uint64(f), b.U) // exact in this range
	}
	if f >= 9223372036854775808.0 {
		return 1
	}
	if f < -9223372036854775808.0 {
		return -1
	}
	t := math.Trunc(f)
	if c := cmp.Compare(int64(t), b.I); c != 0 {
		return c
	}
	return cmp.Compare(f-t, 0)
}

// Compare orders any two stored values as MongoDB does (see typeRank).
// Documents compare field by field in sorted-key order (Go maps keep no
// field order); arrays compare element by element.
func Compare(a, b any) int {
	// Fast paths for the commonest index keys: both values of one type.
	switch x := a.(type) {
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case int:
		if y, ok := b.(int); ok {
			return cmp.Compare(x, y)
		}
	}
	ra, rb := RankOf(a), RankOf(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch ra {
	case rankNumber:
		na, _ := ToNumber(a)
		nb, _ := ToNumber(b)
		return CompareNumbers(na, nb)
	case rankString:
		return strings.Compare(a.(string), b.(string))
	case rankDocument:
		return compareDocuments(a.(map[string]any), b.(map[string]any))
	case rankArray:
		ea, _ := codec.ArrayElements(a)
		eb, _ := codec.ArrayElements(b)
		for i := 0; i < len(ea) && i < len(eb); i++ {
			if c := Compare(ea[i], eb[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(ea), len(eb))
	case rankBinary:
		x, y := binaryOf(a), binaryOf(b)
		if c := cmp.Compare(len(x.Data), len(y.Data)); c != 0 {
			return c // BSON compares binary length first, then the subtype
		}
		if c := cmp.Compare(x.Subtype, y.Subtype); c != 0 {
			return c
		}
		return bytes.Compare(x.Data, y.Data)
	case rankTimestamp:
		x, y := a.(bson.Timestamp), b.(bson.Timestamp)
		return x.Compare(y)
	case rankRegex:
		x, y := a.(bson.Regex), b.(bson.Regex)
		if c := strings.Compare(x.Pattern, y.Pattern); c != 0 {
			return c
		}
		return strings.Compare(x.Options, y.Options)
	case rankObjectID:
		x, y := a.(codec.ObjectID), b.(codec.ObjectID)
		return bytes.Compare(x[:], y[:])
	case rankBool:
		x, y := a.(bool), b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case rankDate:
		return a.(time.Time).Compare(b.(time.Time))
	}
	return 0
}

// binaryOf returns binary data ([]byte is subtype 0) as a bson.Binary.
func binaryOf(v any) bson.Binary {
	if b, ok := v.([]byte); ok {
		return bson.Binary{Data: b}
	}
	return v.(bson.Binary)
}

func compareDocuments(a, b map[string]any) int {
	ka, kb := SortedKeys(a), SortedKeys(b)
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if c := Compare(a[ka[i]], b[kb[i]]); c != 0 {
			return c
		}
		if c := strings.Compare(ka[i], kb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(ka), len(kb))
}

// SortedKeys returns m's keys in ascending order, the order documents
// compare their fields in.
func SortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Equal reports whether a and b are equal under Compare.
func Equal(a, b any) bool { return Compare(a, b) == 0 }
