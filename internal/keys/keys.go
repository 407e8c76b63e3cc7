package keys

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Type bytes: the high nibble is query.TypeRank+1 (see the package doc).
const (
	typeMinKey    byte = 0x10
	typeNull      byte = 0x20
	typeNaN       byte = 0x30
	typeNegative  byte = 0x31
	typeZero      byte = 0x32
	typePositive  byte = 0x33
	typeString    byte = 0x40
	typeDocument  byte = 0x50
	typeArray     byte = 0x60
	typeBinary    byte = 0x70
	typeObjectID  byte = 0x80
	typeFalse     byte = 0x90
	typeTrue      byte = 0x91
	typeDate      byte = 0xA0
	typeTimestamp byte = 0xB0
	typeRegex     byte = 0xC0
	typeMaxKey    byte = 0xD0

	// end closes a document or an array: below every type byte, so a
	// shorter array or document sorts first.
	end byte = 0x00
)

// The keys of the range bounds and of null, as strings.
const (
	MinKey = string(typeMinKey) // before every value's key
	MaxKey = string(typeMaxKey) // after every value's key
	Null   = string(typeNull)   // the key of nil (and of a missing field)
)

// exponentBias makes the stored exponent of every normalized number
// positive in 16 bits (974 for the smallest subnormal float64, 3071 for the
// largest float64); exponentInf is +Inf's, above them all.
const (
	exponentBias = 2048
	exponentInf  = 0xFFFF
)

// Append appends the key of v to dst and returns the extended slice. v may
// be any value a stored document holds (every Go number kind, string, bool,
// nil, time.Time, []byte, codec.ObjectID, the bson package's Binary,
// Timestamp, Regex, MinKey and MaxKey, a Decimal128 that a float64 or a
// 64-bit integer holds exactly, documents and arrays of these, typed
// slices included) or query.MinKey / query.MaxKey. Any other type,
// more than codec.MaxDepth levels of documents and arrays (the most a
// stored document's field can hold), or a cyclic value is an error
// wrapping errs.ErrInvalidDocument, and dst is then returned unchanged. It
// allocates nothing for a scalar beyond growing dst; a document's keys are
// sorted in a scratch slice.
func Append(dst []byte, v any) ([]byte, error) {
	if out, ok := appendScalar(dst, v); ok {
		return out, nil
	}
	// A document or array is walked into a buffer of its own: the walk is
	// recursive, which makes the compiler move whatever buffer it is given
	// to the heap, and scalars (nearly every key) should not pay for that.
	var w walker
	out, err := w.value(nil, v, 0)
	if err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}

// AppendDesc appends the key of v for a descending index field: Append's
// bytes inverted, which reverses the order of keys and, since keys are
// prefix-free, still ends where Append's key ends.
func AppendDesc(dst []byte, v any) ([]byte, error) {
	n := len(dst)
	out, err := Append(dst, v)
	if err != nil {
		return dst, err
	}
	Invert(out[n:])
	return out, nil
}

// Encode returns the key of v as a string (one allocation), for use as a
// map key or a B-tree item. Errors as for Append.
func Encode(v any) (string, error) {
	var buf [64]byte
	b, err := Append(buf[:0], v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Invert flips every byte of b in place: the key of a descending field.
func Invert(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// Inverted returns k with every byte flipped.
func Inverted(k string) string {
	b := []byte(k)
	Invert(b)
	return string(b)
}

// CompareFirst compares the first field of a compound key k with the
// complete key of one field first (both in the same direction): 0 when k
// starts with first, else the sign of bytes.Compare. Because keys are
// prefix-free, that is the order of k's first field against first.
func CompareFirst(k, first string) int {
	if strings.HasPrefix(k, first) {
		return 0
	}
	return strings.Compare(k, first)
}

// After returns a key greater than every key that starts with prefix and
// smaller than every greater key that does not: prefix followed by 0xFF,
// a byte no key (ascending or inverted) starts a field with.
func After(prefix string) string { return prefix + "\xff" }

// walker carries what one encoding needs to refuse cycles: the containers
// (maps and []any) on the current path, each by its address and length,
// since a shorter re-slice of an array is another value.
type walker struct {
	onPath []container
}

type container struct {
	p uintptr
	n int
}

func fail(format string, args ...any) error {
	return fmt.Errorf("%w: key: %s", errs.ErrInvalidDocument, fmt.Sprintf(format, args...))
}

// enter records container p on the path, refusing a cycle or too deep a
// nesting.
func (w *walker) enter(p uintptr, n, depth int) error {
	if depth >= codec.MaxDepth {
		return fail("nested deeper than %d levels", codec.MaxDepth)
	}
	if p == 0 || n == 0 {
		return nil // empty: nothing to recurse into
	}
	c := container{p, n}
	if slices.Contains(w.onPath, c) {
		return fail("cyclic value")
	}
	w.onPath = append(w.onPath, c)
	return nil
}

// leave undoes the matching enter.
func (w *walker) leave(p uintptr, n int) {
	if p != 0 && n != 0 {
		w.onPath = w.onPath[:len(w.onPath)-1]
	}
}

func (w *walker) value(dst []byte, v any, depth int) ([]byte, error) {
	if out, ok := appendScalar(dst, v); ok {
		return out, nil
	}
	if m, ok := v.(map[string]any); ok {
		return w.document(dst, m, depth)
	}
	return w.array(dst, v, depth)
}

// appendScalar appends the key of any value but a document or an array;
// ok is false for those (and for unsupported types), with dst unchanged.
func appendScalar(dst []byte, v any) (out []byte, ok bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, typeNull), true
	case string:
		return appendString(append(dst, typeString), x), true
	case bool:
		if x {
			return append(dst, typeTrue), true
		}
		return append(dst, typeFalse), true
	case int:
		return appendInt(dst, int64(x)), true
	case int64:
		return appendInt(dst, x), true
	case int32:
		return appendInt(dst, int64(x)), true
	case int16:
		return appendInt(dst, int64(x)), true
	case int8:
		return appendInt(dst, int64(x)), true
	case uint:
		return appendUint(dst, uint64(x)), true
	case uint64:
		return appendUint(dst, x), true
	case uint32:
		return appendUint(dst, uint64(x)), true
	case uint16:
		return appendUint(dst, uint64(x)), true
	case uint8:
		return appendUint(dst, uint64(x)), true
	case float64:
		return appendFloat(dst, x), true
	case float32:
		return appendFloat(dst, float64(x)), true
	case time.Time:
		dst = append(dst, typeDate)
		dst = binary.BigEndian.AppendUint64(dst, uint64(x.Unix())^(1<<63))
		return binary.BigEndian.AppendUint32(dst, uint32(x.Nanosecond())), true
	case []byte:
		return appendBinary(dst, 0, x), true
	case bson.Binary:
		return appendBinary(dst, x.Subtype, x.Data), true
	case bson.Timestamp:
		dst = append(dst, typeTimestamp)
		dst = binary.BigEndian.AppendUint32(dst, x.T)
		return binary.BigEndian.AppendUint32(dst, x.I), true
	case bson.Regex:
		dst = appendString(append(dst, typeRegex), x.Pattern)
		return appendString(dst, x.Options), true
	case bson.Decimal128:
		// A Decimal128 has the key of the number it equals; one no
		// float64 or 64-bit integer holds exactly is refused (Append).
		switch n, _ := query.ToNumber(x); n.Kind {
		case 'i':
			return appendInt(dst, n.I), true
		case 'u':
			return appendUint(dst, n.U), true
		case 'f':
			return appendFloat(dst, n.F), true
		}
		return dst, false
	case codec.ObjectID:
		return append(append(dst, typeObjectID), x[:]...), true
	case query.MinKeyType:
		return append(dst, typeMinKey), true
	case query.MaxKeyType:
		return append(dst, typeMaxKey), true
	}
	return dst, false
}

// appendBinary appends the key of binary data: its length (big-endian in
// as few bytes as hold it, after their count), its subtype, its bytes, as
// BSON orders binary data: by length, then subtype, then bytes.
func appendBinary(dst []byte, subtype byte, data []byte) []byte {
	dst = append(dst, typeBinary)
	n := uint64(len(data))
	nb := (bits.Len64(n) + 7) / 8
	dst = append(dst, byte(nb))
	for i := nb - 1; i >= 0; i-- {
		dst = append(dst, byte(n>>(8*i)))
	}
	return append(append(dst, subtype), data...)
}

func (w *walker) document(dst []byte, m map[string]any, depth int) ([]byte, error) {
	p := reflect.ValueOf(m).Pointer()
	if err := w.enter(p, len(m), depth); err != nil {
		return dst, err
	}
	defer w.leave(p, len(m))
	dst = append(dst, typeDocument)
	var scratch [8]string
	names := scratch[:0]
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		var err error
		if dst, err = w.value(dst, m[k], depth+1); err != nil {
			return dst, err
		}
		dst = appendString(dst, k)
	}
	return append(dst, end), nil
}

// array encodes any slice type a document may hold (except []byte,
// binary data), element by element: a typed slice gives the same key as
// the []any of its elements.
func (w *walker) array(dst []byte, v any, depth int) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case []string:
		dst = append(dst, typeArray)
		for _, s := range x {
			dst = appendString(append(dst, typeString), s)
		}
		return append(dst, end), nil
	case []int:
		dst = append(dst, typeArray)
		for _, n := range x {
			dst = appendInt(dst, int64(n))
		}
		return append(dst, end), nil
	case []int64:
		dst = append(dst, typeArray)
		for _, n := range x {
			dst = appendInt(dst, n)
		}
		return append(dst, end), nil
	case []float64:
		dst = append(dst, typeArray)
		for _, f := range x {
			dst = appendFloat(dst, f)
		}
		return append(dst, end), nil
	case []any:
		p := reflect.ValueOf(x).Pointer()
		if err := w.enter(p, len(x), depth); err != nil {
			return dst, err
		}
		dst = append(dst, typeArray)
		for _, e := range x {
			if dst, err = w.value(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		w.leave(p, len(x))
		return append(dst, end), nil
	case []map[string]any:
		dst = append(dst, typeArray)
		for _, e := range x {
			if dst, err = w.document(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, end), nil
	}
	rv := reflect.ValueOf(v)
	if d, ok := v.(bson.Decimal128); ok {
		return dst, fail("the Decimal128 %s cannot be indexed: an index key holds a number only as precise as a float64 or a 64-bit integer", d)
	}
	if rv.Kind() != reflect.Slice {
		return dst, fail("unsupported type %T", v)
	}
	// Any other slice type: its elements are values of their own (a slice
	// of slices is walked one level deeper each time, so depth bounds it).
	if depth >= codec.MaxDepth {
		return dst, fail("nested deeper than %d levels", codec.MaxDepth)
	}
	dst = append(dst, typeArray)
	for i := range rv.Len() {
		if dst, err = w.value(dst, rv.Index(i).Interface(), depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, end), nil
}

// appendString appends s escaped (0x00 as 0x00 0xFF) and terminated by
// 0x00 0x01, without a type byte: the end sorts before any continuation,
// so a string sorts before every longer string it is a prefix of.
func appendString(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, 0xFF)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, 0x00, 0x01)
}

func appendInt(dst []byte, n int64) []byte {
	switch {
	case n > 0:
		return appendMagnitude(append(dst, typePositive), normalizeUint(uint64(n)))
	case n < 0:
		return appendNegative(dst, normalizeUint(uint64(^n)+1))
	}
	return append(dst, typeZero)
}

func appendUint(dst []byte, u uint64) []byte {
	if u == 0 {
		return append(dst, typeZero)
	}
	return appendMagnitude(append(dst, typePositive), normalizeUint(u))
}

func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, typeNaN)
	case f == 0: // -0 too
		return append(dst, typeZero)
	case math.IsInf(f, 1):
		return appendMagnitude(append(dst, typePositive), magnitude{exp: exponentInf})
	case math.IsInf(f, -1):
		return appendNegative(dst, magnitude{exp: exponentInf})
	case f > 0:
		return appendMagnitude(append(dst, typePositive), normalizeFloat(f))
	}
	return appendNegative(dst, normalizeFloat(-f))
}

// magnitude is a positive number as mant × 2^(exp-exponentBias-63) with
// the top bit of mant set: one representation per value, whatever Go kind
// it came from, and ordered by (exp, mant).
type magnitude struct {
	exp  uint16
	mant uint64
}

func normalizeUint(u uint64) magnitude {
	lz := bits.LeadingZeros64(u)
	return magnitude{exp: uint16(exponentBias + 63 - lz), mant: u << lz}
}

func normalizeFloat(f float64) magnitude {
	b := math.Float64bits(f)
	e := int(b>>52) & 0x7FF
	m := b & (1<<52 - 1)
	if e == 0 {
		e = 1 // subnormal: m × 2^(1-1075)
	} else {
		m |= 1 << 52
	}
	// f = m × 2^(e-1075); shift m's top bit to bit 63.
	lz := bits.LeadingZeros64(m)
	return magnitude{exp: uint16(exponentBias + e - 1075 + 63 - lz), mant: m << lz}
}

func appendMagnitude(dst []byte, m magnitude) []byte {
	dst = binary.BigEndian.AppendUint16(dst, m.exp)
	return binary.BigEndian.AppendUint64(dst, m.mant)
}

func appendNegative(dst []byte, m magnitude) []byte {
	dst = append(dst, typeNegative)
	n := len(dst)
	dst = appendMagnitude(dst, m)
	Invert(dst[n:])
	return dst
}
