package ttldb

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
)

// typeRank orders values of different types as MongoDB's BSON comparison
// order does: null (and a missing field) < numbers < strings < documents <
// arrays < binary data < ObjectID < booleans < dates. Values of one rank
// compare by value; numbers compare across Go kinds (int(3) == float64(3)).
type typeRank int

const (
	rankMinKey typeRank = iota
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

// minKey and maxKey sort before and after every value; index range scans use
// them as open bounds.
type (
	minKeyType struct{}
	maxKeyType struct{}
)

var (
	minKey any = minKeyType{}
	maxKey any = maxKeyType{}
)

func rankOf(v any) typeRank {
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
	case ObjectID:
		return rankObjectID
	case bool:
		return rankBool
	case time.Time:
		return rankDate
	case minKeyType:
		return rankMinKey
	case maxKeyType:
		return rankMaxKey
	}
	if isArray(v) {
		return rankArray
	}
	return rankMaxKey
}

// number is a numeric value in the widest exact form: integers stay
// integers (int64, or uint64 above MaxInt64), floats stay floats.
type number struct {
	kind byte // 'i' int64, 'u' uint64 > MaxInt64, 'f' float64
	i    int64
	u    uint64
	f    float64
}

// toNumber converts any Go numeric kind; ok is false for a non-number.
func toNumber(v any) (n number, ok bool) {
	switch x := v.(type) {
	case int:
		return number{kind: 'i', i: int64(x)}, true
	case int8:
		return number{kind: 'i', i: int64(x)}, true
	case int16:
		return number{kind: 'i', i: int64(x)}, true
	case int32:
		return number{kind: 'i', i: int64(x)}, true
	case int64:
		return number{kind: 'i', i: x}, true
	case uint:
		return fromUint(uint64(x)), true
	case uint8:
		return number{kind: 'i', i: int64(x)}, true
	case uint16:
		return number{kind: 'i', i: int64(x)}, true
	case uint32:
		return number{kind: 'i', i: int64(x)}, true
	case uint64:
		return fromUint(x), true
	case float32:
		return number{kind: 'f', f: float64(x)}, true
	case float64:
		return number{kind: 'f', f: x}, true
	}
	return number{}, false
}

func fromUint(u uint64) number {
	if u <= math.MaxInt64 {
		return number{kind: 'i', i: int64(u)}
	}
	return number{kind: 'u', u: u}
}

// float returns the value as a float64 (rounded for huge integers).
func (n number) float() float64 {
	switch n.kind {
	case 'i':
		return float64(n.i)
	case 'u':
		return float64(n.u)
	}
	return n.f
}

// compareNumbers orders numbers exactly across kinds. NaN sorts before every
// other number and equals itself, as in MongoDB.
func compareNumbers(a, b number) int {
	if a.kind != 'f' && b.kind != 'f' {
		switch {
		case a.kind == 'u' && b.kind == 'u':
			return cmp.Compare(a.u, b.u)
		case a.kind == 'u':
			return 1
		case b.kind == 'u':
			return -1
		}
		return cmp.Compare(a.i, b.i)
	}
	if a.kind == 'f' && b.kind == 'f' {
		return cmp.Compare(a.f, b.f) // cmp.Compare puts NaN first
	}
	// One float, one integer.
	if a.kind != 'f' {
		return -compareNumbers(b, a)
	}
	f := a.f
	if math.IsNaN(f) {
		return -1
	}
	// Compare the float against the integer without losing precision: out of
	// int64 range the float decides alone; inside it, compare the truncated
	// integer part first, then the fraction.
	if b.kind == 'u' {
		if f >= 18446744073709551616.0 {
			return 1
		}
		if f < 9223372036854775808.0 {
			return -1
		}
		return cmp.Compare(uint64(f), b.u) // exact in this range
	}
	if f >= 9223372036854775808.0 {
		return 1
	}
	if f < -9223372036854775808.0 {
		return -1
	}
	t := math.Trunc(f)
	if c := cmp.Compare(int64(t), b.i); c != 0 {
		return c
	}
	return cmp.Compare(f-t, 0)
}

// compareValues orders any two stored values as MongoDB does (see typeRank).
// Documents compare field by field in sorted-key order (Go maps keep no
// field order); arrays compare element by element.
func compareValues(a, b any) int {
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
	ra, rb := rankOf(a), rankOf(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch ra {
	case rankNumber:
		na, _ := toNumber(a)
		nb, _ := toNumber(b)
		return compareNumbers(na, nb)
	case rankString:
		return strings.Compare(a.(string), b.(string))
	case rankDocument:
		return compareDocuments(a.(map[string]any), b.(map[string]any))
	case rankArray:
		ea, _ := arrayElements(a)
		eb, _ := arrayElements(b)
		for i := 0; i < len(ea) && i < len(eb); i++ {
			if c := compareValues(ea[i], eb[i]); c != 0 {
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
		x, y := a.(ObjectID), b.(ObjectID)
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
	ka, kb := sortedKeys(a), sortedKeys(b)
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if c := compareValues(a[ka[i]], b[kb[i]]); c != 0 {
			return c
		}
		if c := strings.Compare(ka[i], kb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(ka), len(kb))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// valuesEqual reports whether a and b are equal under compareValues.
func valuesEqual(a, b any) bool { return compareValues(a, b) == 0 }
