package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	"github.com/ttldb/ttldb/internal/errs"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// DecodeError reports a stored value that does not fit the destination
// given to DecodeInto, with the dotted path to it. It wraps
// errs.ErrDecode.
type DecodeError struct {
	Path   string // dotted path of the value ("" for the document itself)
	Reason string // why it does not fit
}

// Error names the path and the mismatch.
func (e *DecodeError) Error() string {
	if e.Path == "" {
		return "ttldb: cannot decode document: " + e.Reason
	}
	return fmt.Sprintf("ttldb: cannot decode document: field %q: %s", e.Path, e.Reason)
}

// Unwrap lets errors.Is(err, errs.ErrDecode) match.
func (e *DecodeError) Unwrap() error { return errs.ErrDecode }

// DecodeInto decodes an encoded document into dst, which must be a
// non-nil pointer to a struct, to a map with string keys (a
// map[string]any, or Document, is cleared and refilled: the caller's map
// is reused), or to an interface (set to a new Document).
//
// A struct is first set to its zero value, then each stored field is
// decoded into the struct field of its name (see structplan.go); fields
// the struct does not name are ignored (or go to its inline map). Values
// convert as MongoDB's Go driver converts them: a number into any number
// kind that holds it exactly (int64(5) into an int8, 5.0 into an int;
// 5.5 into an int, 300 into an int8 or -1 into a uint are errors); a date
// into a time.Time (in UTC); null into anything sets its zero value (nil
// for a pointer, slice, map or interface); a document into a struct or a
// map; an array into a slice. Anything else is a *DecodeError naming the
// field, and then dst is left unchanged: the value is checked whole
// before anything is written.
//
// It allocates only what the destination needs: nothing for a struct's
// numbers, bools, dates and ObjectIDs; one string per string; a new array
// per slice, map or pointer (never the memory the destination's old value
// pointed to, which the caller may still hold). It never keeps or aliases
// enc.
func DecodeInto(enc []byte, dst any) error {
	return DecodeIntoWith(enc, dst, DecodeOptions{})
}

// DecodeIntoWith is DecodeInto with options.
func DecodeIntoWith(enc []byte, dst any, o DecodeOptions) error {
	if m, ok := dst.(*map[string]any); ok && m != nil {
		d := decoder{b: enc}
		n := int(d.uvarint())
		if *m == nil {
			*m = make(map[string]any, n)
		} else {
			clear(*m)
		}
		for range n {
			k := internName(d.bytes(int(d.uvarint()))) // no allocation for a name seen before
			(*m)[k] = d.value()
		}
		return nil
	}
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &DecodeError{Reason: fmt.Sprintf("the destination must be a non-nil pointer, not %T", dst)}
	}
	v := rv.Elem()
	t := v.Type()
	if t.Kind() == reflect.Struct && !isTimeLike(t) && !planOf(t).hooked {
		// A model struct: the common case, with no hook lookup.
		if err := docInto(&decoder{b: enc, docM: o.DefaultDocumentM}, t, reflect.Value{}, false); err != nil {
			return err
		}
		return docInto(&decoder{b: enc, docM: o.DefaultDocumentM}, t, v, true)
	}
	if h := decodeHookOf(t); h != hookNone || t.Kind() == reflect.Interface {
		// bson.D, bson.M, bson.Raw, an Unmarshaler, any: decoded as a
		// document value.
		full := append([]byte{tagDoc}, binary.AppendUvarint(nil, uint64(len(enc)))...)
		full = append(full, enc...)
		if err := valueInto(&decoder{b: full, docM: o.DefaultDocumentM}, t, reflect.Value{}, false); err != nil {
			return err
		}
		return valueInto(&decoder{b: full, docM: o.DefaultDocumentM}, t, v, true)
	}
	switch t.Kind() {
	case reflect.Struct:
		if planOf(t).isTime {
			break
		}
		if err := docInto(&decoder{b: enc, docM: o.DefaultDocumentM}, t, reflect.Value{}, false); err != nil {
			return err
		}
		return docInto(&decoder{b: enc, docM: o.DefaultDocumentM}, t, v, true)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		if err := docInto(&decoder{b: enc, docM: o.DefaultDocumentM}, t, reflect.Value{}, false); err != nil {
			return err
		}
		return docInto(&decoder{b: enc, docM: o.DefaultDocumentM}, t, v, true)
	}
	return &DecodeError{Reason: fmt.Sprintf("cannot decode a document into %s", t)}
}

// Decoding runs twice: a check (set false: v is not valid and nothing is
// written) and, if the check passed, the real pass. The encoding is
// trusted, so the walk itself cannot fail: only the destination's types.

func mismatch(tag byte, t reflect.Type) error {
	return &DecodeError{Reason: fmt.Sprintf("cannot decode %s into %s", tagName(tag), t)}
}

func tagName(tag byte) string {
	switch tag {
	case tagNil:
		return "null"
	case tagFalse, tagTrue:
		return "a bool"
	case tagString:
		return "a string"
	case tagBinary:
		return "binary data"
	case tagTime:
		return "a date"
	case tagObjectID:
		return "an ObjectID"
	case tagDoc:
		return "a document"
	case tagArray, tagDocArray, tagTyped:
		return "an array"
	case tagRegex, tagRegexValue:
		return "a regular expression"
	case tagBinarySub:
		return "binary data"
	case tagTimestamp:
		return "a timestamp"
	case tagDecimal:
		return "a Decimal128"
	case tagMinKey:
		return "MinKey"
	case tagMaxKey:
		return "MaxKey"
	}
	return "a number"
}

// docInto decodes a document body into a struct or a map with string keys.
func docInto(d *decoder, t reflect.Type, v reflect.Value, set bool) error {
	if t.Kind() == reflect.Map {
		return mapInto(d, t, v, set)
	}
	sp := planOf(t)
	if sp.err != "" {
		return &DecodeError{Path: sp.errPath, Reason: sp.err}
	}
	if set {
		v.SetZero()
	}
	n := int(d.uvarint())
	for range n {
		kl := int(d.uvarint())
		kb := d.b[d.i : d.i+kl]
		d.i += kl
		i, ok := sp.byName[string(kb)]
		if !ok {
			if sp.inlineMap == nil {
				d.skipValue()
				continue
			}
			k := string(kb)
			et := sp.inlineMapType.Elem()
			var ev reflect.Value
			if set {
				ev = reflect.New(et).Elem()
			}
			if err := valueInto(d, et, ev, set); err != nil {
				return prefixPath(err, k)
			}
			if set {
				m := fieldForSet(v, sp.inlineMap)
				if m.IsNil() {
					m.Set(reflect.MakeMap(sp.inlineMapType))
				}
				m.SetMapIndex(reflect.ValueOf(k).Convert(sp.inlineMapType.Key()), ev)
			}
			continue
		}
		f := &sp.fields[i]
		var fv reflect.Value
		if set {
			fv = fieldForSet(v, f.index)
		}
		if err := valueIntoHook(d, f.typ, f.dhook, fv, set); err != nil {
			return prefixPath(err, f.name)
		}
	}
	return nil
}

// mapInto decodes a document body into a new map of type t (or, for the
// top-level destination, the caller's map: DecodeInto takes that path for
// map[string]any alone).
func mapInto(d *decoder, t reflect.Type, v reflect.Value, set bool) error {
	n := int(d.uvarint())
	if set && t == docType {
		m := make(map[string]any, n)
		for range n {
			k := d.str()
			m[k] = d.value()
		}
		v.Set(reflect.ValueOf(m))
		return nil
	}
	var m reflect.Value
	if set {
		m = reflect.MakeMapWithSize(t, n)
	}
	et := t.Elem()
	for range n {
		k := d.str()
		var ev reflect.Value
		if set {
			ev = reflect.New(et).Elem()
		}
		if err := valueInto(d, et, ev, set); err != nil {
			return prefixPath(err, k)
		}
		if set {
			m.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
		}
	}
	if set {
		v.Set(m)
	}
	return nil
}

// valueInto decodes one tagged value into v (of type t).
func valueInto(d *decoder, t reflect.Type, v reflect.Value, set bool) error {
	return valueIntoHook(d, t, typeHook(t, decodeHookOf), v, set)
}

// valueIntoHook is valueInto with t's decode hook known.
func valueIntoHook(d *decoder, t reflect.Type, h hook, v reflect.Value, set bool) error {
	tag := d.b[d.i]
	if tag == tagNil {
		d.i++
		if set {
			v.SetZero()
		}
		return nil
	}
	if h != hookNone {
		return hookedInto(d, h, t, v, set)
	}
	switch t.Kind() {
	case reflect.Interface:
		if !set && t.NumMethod() == 0 {
			d.skipValue()
			return nil
		}
		x := d.driverForm()
		if !reflect.TypeOf(x).AssignableTo(t) {
			return &DecodeError{Reason: fmt.Sprintf("cannot decode %s (%T) into %s", tagName(tag), x, t)}
		}
		if set {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	case reflect.Pointer:
		if !set {
			return valueInto(d, t.Elem(), v, false)
		}
		p := reflect.New(t.Elem())
		if err := valueInto(d, t.Elem(), p.Elem(), true); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	d.i++
	return payloadInto(d, tag, t, v, set)
}

// payloadInto decodes the payload of a value whose tag has been read.
func payloadInto(d *decoder, tag byte, t reflect.Type, v reflect.Value, set bool) error {
	switch k := t.Kind(); k {
	case reflect.Bool:
		if tag != tagTrue && tag != tagFalse {
			break
		}
		if set {
			v.SetBool(tag == tagTrue)
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !isNumber(tag) {
			break
		}
		i, err := d.intOf(tag, t)
		if err == nil && reflect.Zero(t).OverflowInt(i) {
			err = fmt.Errorf("%d overflows %s", i, numberType(t))
		}
		if err != nil {
			return &DecodeError{Reason: err.Error()}
		}
		if set {
			v.SetInt(i)
		}
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !isNumber(tag) {
			break
		}
		u, err := d.uintOf(tag, t)
		if err == nil && reflect.Zero(t).OverflowUint(u) {
			err = fmt.Errorf("%d overflows %s", u, numberType(t))
		}
		if err != nil {
			return &DecodeError{Reason: err.Error()}
		}
		if set {
			v.SetUint(u)
		}
		return nil
	case reflect.Float32, reflect.Float64:
		if !isNumber(tag) {
			break
		}
		f, err := d.floatOf(tag, t)
		if err == nil && k == reflect.Float32 && float64(float32(f)) != f && !math.IsNaN(f) {
			err = fmt.Errorf("%v does not fit %s exactly", f, numberType(t))
		}
		if err != nil {
			return &DecodeError{Reason: err.Error()}
		}
		if set {
			v.SetFloat(f)
		}
		return nil
	case reflect.String:
		if tag != tagString {
			break
		}
		if set {
			v.SetString(d.str())
		} else {
			d.i += int(d.uvarint())
		}
		return nil
	case reflect.Struct:
		if planOf(t).isTime {
			if tag != tagTime {
				break
			}
			tm := d.time()
			if set {
				if v.Type() == timeType {
					*(*time.Time)(v.Addr().UnsafePointer()) = tm
				} else {
					v.Set(reflect.ValueOf(tm).Convert(t))
				}
			}
			return nil
		}
		if tag != tagDoc {
			break
		}
		d.uvarint() // length
		return docInto(d, t, v, set)
	case reflect.Array:
		if tag != tagObjectID || !isObjectIDLike(t) {
			break
		}
		b := d.bytes(12)
		if set {
			copy((*[12]byte)(v.Addr().UnsafePointer())[:], b)
		}
		return nil
	case reflect.Map:
		if tag != tagDoc || t.Key().Kind() != reflect.String {
			break
		}
		d.uvarint() // length
		return mapInto(d, t, v, set)
	case reflect.Slice:
		return sliceInto(d, tag, t, v, set)
	}
	return mismatch(tag, t)
}

func isNumber(tag byte) bool { return tag >= tagInt && tag <= tagFloat64 }

// numberType names a numeric destination type in an error: its own name,
// and its kind when that differs (a named type).
func numberType(t reflect.Type) string {
	if k := t.Kind().String(); t.String() != k {
		return fmt.Sprintf("%s (%s)", t, k)
	}
	return t.String()
}

// intOf reads a number for a signed integer destination of type t, which
// the errors name: a stored value that no int64 holds overflows t as
// surely as one that only t cannot hold.
func (d *decoder) intOf(tag byte, t reflect.Type) (int64, error) {
	switch {
	case tag <= tagInt64:
		return d.varint(), nil
	case tag <= tagUint64:
		u := d.uvarint()
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("%d overflows %s", u, numberType(t))
		}
		return int64(u), nil
	}
	f := d.floatPayload(tag)
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("%v does not fit %s: not an integer", f, numberType(t))
	}
	if f < -(1<<63) || f >= 1<<63 {
		return 0, fmt.Errorf("%v overflows %s", f, numberType(t))
	}
	return int64(f), nil
}

// uintOf is intOf for an unsigned destination.
func (d *decoder) uintOf(tag byte, t reflect.Type) (uint64, error) {
	switch {
	case tag <= tagInt64:
		i := d.varint()
		if i < 0 {
			return 0, fmt.Errorf("%d does not fit %s: negative", i, numberType(t))
		}
		return uint64(i), nil
	case tag <= tagUint64:
		return d.uvarint(), nil
	}
	f := d.floatPayload(tag)
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("%v does not fit %s: not an integer", f, numberType(t))
	}
	if f < 0 || f >= 1<<64 {
		return 0, fmt.Errorf("%v overflows %s", f, numberType(t))
	}
	return uint64(f), nil
}

// floatOf reads a number for a float destination of type t: an integer
// must convert exactly.
func (d *decoder) floatOf(tag byte, t reflect.Type) (float64, error) {
	switch {
	case tag <= tagInt64:
		i := d.varint()
		f := float64(i)
		if f >= 1<<63 || int64(f) != i {
			return 0, fmt.Errorf("%d has no exact %s", i, numberType(t))
		}
		return f, nil
	case tag <= tagUint64:
		u := d.uvarint()
		f := float64(u)
		if f >= 1<<64 || uint64(f) != u {
			return 0, fmt.Errorf("%d has no exact %s", u, numberType(t))
		}
		return f, nil
	}
	return d.floatPayload(tag), nil
}

func (d *decoder) floatPayload(tag byte) float64 {
	if tag == tagFloat32 {
		return float64(math.Float32frombits(leUint32(d.bytes(4))))
	}
	return math.Float64frombits(leUint64(d.bytes(8)))
}

func leUint32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func leUint64(b []byte) uint64 {
	return uint64(leUint32(b)) | uint64(leUint32(b[4:]))<<32
}

// sliceInto decodes binary data or an array into a new slice of type t.
func sliceInto(d *decoder, tag byte, t reflect.Type, v reflect.Value, set bool) error {
	et := t.Elem()
	switch tag {
	case tagBinary:
		if et.Kind() != reflect.Uint8 {
			break
		}
		b := d.bytes(int(d.uvarint()))
		if set {
			v.SetBytes(bytes.Clone(b))
		}
		return nil
	case tagTyped:
		elemTag := d.b[d.i]
		d.i++
		d.uvarint() // length
		n := int(d.uvarint())
		newSlice(t, v, n, set)
		for i := range n {
			tag := elemTag
			if elemTag == tagTrue {
				if d.bytes(1)[0] == 0 {
					tag = tagFalse
				}
			}
			var ev reflect.Value
			if set {
				ev = v.Index(i)
			}
			var err error
			if et.Kind() == reflect.Interface || et.Kind() == reflect.Pointer {
				err = boxedElemInto(d, tag, et, ev, set)
			} else {
				err = payloadInto(d, tag, et, ev, set)
			}
			if err != nil {
				return prefixPath(err, strconv.Itoa(i))
			}
		}
		return nil
	case tagArray, tagDocArray:
		d.uvarint() // length
		n := int(d.uvarint())
		newSlice(t, v, n, set)
		for i := range n {
			var ev reflect.Value
			if set {
				ev = v.Index(i)
			}
			if err := valueInto(d, et, ev, set); err != nil {
				return prefixPath(err, strconv.Itoa(i))
			}
		}
		return nil
	}
	return mismatch(tag, t)
}

// boxedElemInto decodes an untagged element of a typed slice into an
// interface or pointer element.
func boxedElemInto(d *decoder, tag byte, t reflect.Type, v reflect.Value, set bool) error {
	if t.Kind() == reflect.Pointer {
		if !set {
			return boxedElemInto(d, tag, t.Elem(), v, false)
		}
		p := reflect.New(t.Elem())
		if err := boxedElemInto(d, tag, t.Elem(), p.Elem(), true); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	if t.Kind() != reflect.Interface {
		return payloadInto(d, tag, t, v, set)
	}
	var x any
	switch tag {
	case tagTrue, tagFalse:
		x = tag == tagTrue
	case tagString:
		x = d.str()
	case tagTime:
		x = bson.NewDateTimeFromTime(d.time())
	case tagObjectID:
		var id ObjectID
		copy(id[:], d.bytes(12))
		x = id
	default:
		x = d.number(tag)
	}
	if !reflect.TypeOf(x).AssignableTo(t) {
		return &DecodeError{Reason: fmt.Sprintf("cannot decode %s (%T) into %s", tagName(tag), x, t)}
	}
	if set {
		v.Set(reflect.ValueOf(x))
	}
	return nil
}

// newSlice sets v to a new slice of n elements (one allocation: its array).
func newSlice(t reflect.Type, v reflect.Value, n int, set bool) {
	if !set {
		return
	}
	if n == 0 {
		// Empty, not nil, as the driver decodes an empty array (a new
		// empty slice allocates nothing).
		v.Set(reflect.MakeSlice(t, 0, 0))
		return
	}
	v.SetZero()
	v.Grow(n)
	v.SetLen(n)
}
