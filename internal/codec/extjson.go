package codec

import (
	"encoding/base64"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendExtJSON appends the encoded document b to dst as MongoDB's relaxed
// Extended JSON (v2), the form change events are written in:
//
//   - fields in a stable order: _id first, then the others sorted by name;
//   - strings, booleans and null as themselves; integers of every Go kind
//     as JSON numbers; floats as JSON numbers with a fraction or exponent
//     (1.0, not 1), NaN and ±Inf as {"$numberDouble": "NaN"|"Infinity"|
//     "-Infinity"};
//   - dates as {"$date": "2006-01-02T15:04:05.999999999Z"} (UTC, every
//     nanosecond kept) for years 1970 to 9999, else as
//     {"$date": {"$numberLong": "<Unix milliseconds>"}};
//   - ObjectIDs as {"$oid": "<24 hex digits>"}; binary as
//     {"$binary": {"base64": "...", "subType": "00"}};
//   - documents as objects and arrays (typed slices included) as arrays.
func AppendExtJSON(dst, b []byte) []byte {
	return appendExtDoc(dst, Decode(b))
}

// AppendExtJSONValue appends one decoded value (as Decode returns them) as
// relaxed Extended JSON; see AppendExtJSON.
func AppendExtJSONValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case string:
		return AppendJSONString(dst, x)
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case int8:
		return strconv.AppendInt(dst, int64(x), 10)
	case int16:
		return strconv.AppendInt(dst, int64(x), 10)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint64:
		return strconv.AppendUint(dst, x, 10)
	case float32:
		return appendExtFloat(dst, float64(x), 32)
	case float64:
		return appendExtFloat(dst, x, 64)
	case time.Time:
		return AppendExtJSONDate(dst, x)
	case ObjectID:
		dst = append(dst, `{"$oid":"`...)
		dst = append(dst, x.String()...)
		return append(dst, `"}`...)
	case []byte:
		dst = append(dst, `{"$binary":{"base64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, `","subType":"00"}}`...)
	case map[string]any:
		return appendExtDoc(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendExtJSONValue(dst, e)
		}
		return append(dst, ']')
	case []map[string]any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendExtDoc(dst, e)
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
			dst = AppendExtJSONValue(dst, rv.Index(i).Interface())
		}
		return append(dst, ']')
	}
	// Not a value Decode returns; written as null rather than failing.
	return append(dst, "null"...)
}

// AppendExtJSONDate appends t as a relaxed Extended JSON date.
func AppendExtJSONDate(dst []byte, t time.Time) []byte {
	t = t.UTC()
	if y := t.Year(); y < 1970 || y > 9999 {
		dst = append(dst, `{"$date":{"$numberLong":"`...)
		dst = strconv.AppendInt(dst, t.UnixMilli(), 10)
		return append(dst, `"}}`...)
	}
	dst = append(dst, `{"$date":"`...)
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, `"}`...)
}

func appendExtFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `{"$numberDouble":"NaN"}`...)
	case math.IsInf(f, 1):
		return append(dst, `{"$numberDouble":"Infinity"}`...)
	case math.IsInf(f, -1):
		return append(dst, `{"$numberDouble":"-Infinity"}`...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'g', -1, bits)
	for _, c := range dst[start:] {
		if c == '.' || c == 'e' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

func appendExtDoc(dst []byte, m map[string]any) []byte {
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
		dst = AppendExtJSONValue(dst, m[k])
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
