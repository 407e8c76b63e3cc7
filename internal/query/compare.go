package query

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
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
	rankMaxKey
)

// MinKey and MaxKey sort before and after every value; index range scans use
// them as open bounds.
type (
	MinKeyType struct{}
	MaxKeyType struct{}
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
// integers (int64, or uint64 above MaxInt64), floats stay floats.
type Number struct {
	Kind byte // 'i' int64, 'u' uint64 > MaxInt64, 'f' float64
	I    int64
	U    uint64
	F    float64
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
	}
	return Number{}, false
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
	}
	return n.F
}

// CompareNumbers orders numbers exactly across kinds. NaN sorts before every
// other number and equals itself, as in MongoDB.
func CompareNumbers(a, b Number) int {
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
		x, y := a.([]byte), b.([]byte)
		if c := cmp.Compare(len(x), len(y)); c != 0 {
			return c // BSON compares binary length first
		}
		return bytes.Compare(x, y)
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
