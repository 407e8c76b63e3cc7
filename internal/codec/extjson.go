package codec

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// AppendExtJSON appends the encoded document b to dst as MongoDB's relaxed
// Extended JSON v2, the form change events are written in (the driver's
// bson.MarshalExtJSON with canonical false):
//
//   - fields in their stored order (a document stored from a map has _id
//     first, then the map's fields in an order of no meaning);
//   - strings, booleans and null as themselves; integers of every Go kind
//     as JSON numbers (an unsigned value above 2^63−1, which no BSON
//     integer holds, too); floats as JSON numbers with a fraction or
//     exponent (1.0, not 1), NaN and ±Inf as {"$numberDouble": "NaN"|
//     "Infinity"|"-Infinity"};
//   - dates as {"$date": "2006-01-02T15:04:05.999Z"} (UTC, to the
//     millisecond, as the specification writes them: a date's finer digits
//     are not written) for years 1970 to 9999, else as
//     {"$date": {"$numberLong": "<Unix milliseconds>"}};
//   - ObjectIDs as {"$oid": "<24 hex digits>"}; binary as
//     {"$binary": {"base64": "...", "subType": "<2 hex digits>"}};
//     timestamps as {"$timestamp": {"t": T, "i": I}}; regular expressions
//     as {"$regularExpression": {"pattern": "...", "options": "..."}};
//     Decimal128 as {"$numberDecimal": "..."}; {"$minKey": 1}, {"$maxKey": 1};
//   - documents as objects and arrays (typed slices included) as arrays.
func AppendExtJSON(dst, b []byte) []byte {
	return AppendExtJSONMode(dst, b, false)
}

// AppendExtJSONMode is AppendExtJSON in canonical mode when canonical is
// true: numbers as {"$numberInt"|"$numberLong"|"$numberDouble": "..."}
// (an unsigned value above 2^63−1 as a plain JSON number, the one form it
// has) and every date as {"$date": {"$numberLong": "..."}}.
func AppendExtJSONMode(dst, b []byte, canonical bool) []byte {
	d := decoder{b: b}
	return d.extDoc(dst, canonical)
}

// extDoc writes the document body at d in stored order.
func (d *decoder) extDoc(dst []byte, canonical bool) []byte {
	n := int(d.uvarint())
	dst = append(dst, '{')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, string(d.bytes(int(d.uvarint()))))
		dst = append(dst, ':')
		dst = d.extValue(dst, canonical)
	}
	return append(dst, '}')
}

// extValue writes the tagged value at d.
func (d *decoder) extValue(dst []byte, canonical bool) []byte {
	switch d.b[d.i] {
	case tagDoc:
		d.i++
		d.uvarint()
		return d.extDoc(dst, canonical)
	case tagArray, tagDocArray:
		d.i++
		d.uvarint()
		n := int(d.uvarint())
		dst = append(dst, '[')
		for i := range n {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = d.extValue(dst, canonical)
		}
		return append(dst, ']')
	}
	return appendExtValue(dst, d.value(), canonical)
}

// AppendExtJSONValue appends one decoded value (as Decode returns them) as
// relaxed Extended JSON; see AppendExtJSON. A document given as a map is
// written with _id first, then the other fields sorted by name.
func AppendExtJSONValue(dst []byte, v any) []byte {
	return appendExtValue(dst, v, false)
}

func appendExtValue(dst []byte, v any, canonical bool) []byte {
	number := func(kind string, text []byte) []byte {
		if !canonical {
			return append(dst, text...)
		}
		dst = append(dst, `{"$number`...)
		dst = append(dst, kind...)
		dst = append(dst, `":"`...)
		dst = append(dst, text...)
		return append(dst, `"}`...)
	}
	var buf [24]byte
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case string:
		return AppendJSONString(dst, x)
	case int:
		return number("Long", strconv.AppendInt(buf[:0], int64(x), 10))
	case int8:
		return number("Int", strconv.AppendInt(buf[:0], int64(x), 10))
	case int16:
		return number("Int", strconv.AppendInt(buf[:0], int64(x), 10))
	case int32:
		return number("Int", strconv.AppendInt(buf[:0], int64(x), 10))
	case int64:
		return number("Long", strconv.AppendInt(buf[:0], x, 10))
	case uint:
		return appendExtUint(dst, uint64(x), canonical)
	case uint8:
		return number("Int", strconv.AppendUint(buf[:0], uint64(x), 10))
	case uint16:
		return number("Int", strconv.AppendUint(buf[:0], uint64(x), 10))
	case uint32:
		return number("Long", strconv.AppendUint(buf[:0], uint64(x), 10))
	case uint64:
		return appendExtUint(dst, x, canonical)
	case float32:
		return appendExtFloat(dst, float64(x), 32, canonical)
	case float64:
		return appendExtFloat(dst, x, 64, canonical)
	case time.Time:
		return appendExtDate(dst, x, canonical)
	case ObjectID:
		dst = append(dst, `{"$oid":"`...)
		dst = hex.AppendEncode(dst, x[:])
		return append(dst, `"}`...)
	case []byte:
		return appendExtBinary(dst, 0, x)
	case bson.Binary:
		return appendExtBinary(dst, x.Subtype, x.Data)
	case bson.Timestamp:
		dst = append(dst, `{"$timestamp":{"t":`...)
		dst = strconv.AppendUint(dst, uint64(x.T), 10)
		dst = append(dst, `,"i":`...)
		dst = strconv.AppendUint(dst, uint64(x.I), 10)
		return append(dst, `}}`...)
	case bson.Regex:
		dst = append(dst, `{"$regularExpression":{"pattern":`...)
		dst = AppendJSONString(dst, x.Pattern)
		dst = append(dst, `,"options":`...)
		dst = AppendJSONString(dst, x.Options)
		return append(dst, `}}`...)
	case bson.Decimal128:
		dst = append(dst, `{"$numberDecimal":`...)
		dst = AppendJSONString(dst, x.String())
		return append(dst, '}')
	case bson.MinKey:
		return append(dst, `{"$minKey":1}`...)
	case bson.MaxKey:
		return append(dst, `{"$maxKey":1}`...)
	case map[string]any:
		return appendExtDoc(dst, x, canonical)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendExtValue(dst, e, canonical)
		}
		return append(dst, ']')
	case []map[string]any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendExtDoc(dst, e, canonical)
		}
		return append(dst, ']')
	}
	// A typed slice of scalars ([]int, []string, []time.Time...).
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice {
		dst = append(dst, '[')
		for i := range rv.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendExtValue(dst, rv.Index(i).Interface(), canonical)
		}
		return append(dst, ']')
	}
	// Not a value Decode returns; written as null rather than failing.
	return append(dst, "null"...)
}

// appendExtUint writes an unsigned 64-bit integer: as an int64 when it
// fits one; above 2^63−1, as a plain JSON number in both modes (no BSON
// type holds it; the driver refuses such values).
func appendExtUint(dst []byte, u uint64, canonical bool) []byte {
	if u <= math.MaxInt64 && canonical {
		dst = append(dst, `{"$numberLong":"`...)
		dst = strconv.AppendUint(dst, u, 10)
		return append(dst, `"}`...)
	}
	return strconv.AppendUint(dst, u, 10)
}

func appendExtBinary(dst []byte, subtype byte, data []byte) []byte {
	dst = append(dst, `{"$binary":{"base64":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, data)
	dst = append(dst, `","subType":"`...)
	dst = append(dst, hexDigits[subtype>>4], hexDigits[subtype&0xf])
	return append(dst, `"}}`...)
}

// AppendExtJSONDate appends t as a relaxed Extended JSON date (to the
// millisecond).
func AppendExtJSONDate(dst []byte, t time.Time) []byte {
	return appendExtDate(dst, t, false)
}

func appendExtDate(dst []byte, t time.Time, canonical bool) []byte {
	t = t.UTC()
	if y := t.Year(); canonical || y < 1970 || y > 9999 {
		dst = append(dst, `{"$date":{"$numberLong":"`...)
		dst = strconv.AppendInt(dst, t.UnixMilli(), 10)
		return append(dst, `"}}`...)
	}
	dst = append(dst, `{"$date":"`...)
	dst = t.Truncate(time.Millisecond).AppendFormat(dst, "2006-01-02T15:04:05.999Z07:00")
	return append(dst, `"}`...)
}

func appendExtFloat(dst []byte, f float64, bits int, canonical bool) []byte {
	var special string
	switch {
	case math.IsNaN(f):
		special = "NaN"
	case math.IsInf(f, 1):
		special = "Infinity"
	case math.IsInf(f, -1):
		special = "-Infinity"
	}
	if special != "" || canonical {
		dst = append(dst, `{"$numberDouble":"`...)
		if special != "" {
			dst = append(dst, special...)
		} else {
			dst = appendFloatText(dst, f, bits)
		}
		return append(dst, `"}`...)
	}
	return appendFloatText(dst, f, bits)
}

// appendFloatText writes a finite float with a fraction or an exponent.
func appendFloatText(dst []byte, f float64, bits int) []byte {
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'g', -1, bits)
	for _, c := range dst[start:] {
		if c == '.' || c == 'e' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

func appendExtDoc(dst []byte, m map[string]any, canonical bool) []byte {
	names := make([]string, 0, len(m))
	for k := range m {
		if k != "_id" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	if _, ok := m["_id"]; ok {
		names = slices.Insert(names, 0, "_id")
	}
	dst = append(dst, '{')
	for i, k := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendExtValue(dst, m[k], canonical)
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string. Documents hold valid UTF-8
// only; an invalid byte, should one come, is written as U+FFFD. U+2028 and
// U+2029 are escaped so that the output is also valid JavaScript.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
