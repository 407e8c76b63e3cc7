package ttldb

import (
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Stored documents are kept encoded, in one pointer-free byte slice each,
// rather than as maps: a million maps of boxed values are millions of
// objects for the garbage collector to scan on every cycle, while a million
// byte slices are a million objects it never looks inside. The encoding is
// private and lossless for every value a Document may hold (Go kinds and
// typed slices come back as they went in; dates come back in UTC, as
// MongoDB returns them).
//
// A document is a uvarint field count and, per field, a uvarint name length,
// the name, and a value: a tag byte and the tag's payload. Composite values
// carry their byte length first, so a lookup can skip them unread.

const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagInt
	tagInt8
	tagInt16
	tagInt32
	tagInt64
	tagUint
	tagUint8
	tagUint16
	tagUint32
	tagUint64
	tagFloat32
	tagFloat64
	tagString
	tagBinary
	tagTime
	tagObjectID
	tagDoc      // uvarint byte length, then a document
	tagArray    // []any: uvarint byte length, uvarint count, tagged values
	tagDocArray // []map[string]any: uvarint byte length, uvarint count, documents (each as a tagDoc value)
	tagTyped    // typed scalar slice: element tag, uvarint byte length, uvarint count, untagged payloads
)

// typedSliceTypes maps the element tag of a tagTyped value to its slice
// type. tagTrue stands for bool elements.
var typedSliceTypes = map[byte]reflect.Type{
	tagTrue:     reflect.TypeFor[[]bool](),
	tagInt:      reflect.TypeFor[[]int](),
	tagInt8:     reflect.TypeFor[[]int8](),
	tagInt16:    reflect.TypeFor[[]int16](),
	tagInt32:    reflect.TypeFor[[]int32](),
	tagInt64:    reflect.TypeFor[[]int64](),
	tagUint:     reflect.TypeFor[[]uint](),
	tagUint16:   reflect.TypeFor[[]uint16](),
	tagUint32:   reflect.TypeFor[[]uint32](),
	tagUint64:   reflect.TypeFor[[]uint64](),
	tagFloat32:  reflect.TypeFor[[]float32](),
	tagFloat64:  reflect.TypeFor[[]float64](),
	tagString:   reflect.TypeFor[[]string](),
	tagTime:     reflect.TypeFor[[]time.Time](),
	tagObjectID: reflect.TypeFor[[]ObjectID](),
}

// encodeDocument appends the encoding of doc, which must be in stored form
// (validated by cloneDocument or built from validated values).
func encodeDocument(dst []byte, doc map[string]any) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(doc)))
	for k, v := range doc {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		dst = encodeValue(dst, v)
	}
	return dst
}

// withLength encodes a composite value's body after a uvarint of its byte
// length.
func withLength(dst []byte, body func([]byte) []byte) []byte {
	start := len(dst)
	dst = body(dst)
	n := len(dst) - start
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], uint64(n))
	dst = append(dst, hdr[:h]...)
	copy(dst[start+h:], dst[start:start+n])
	copy(dst[start:], hdr[:h])
	return dst
}

func encodeValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, tagNil)
	case bool:
		if x {
			return append(dst, tagTrue)
		}
		return append(dst, tagFalse)
	case string:
		dst = append(dst, tagString)
		dst = binary.AppendUvarint(dst, uint64(len(x)))
		return append(dst, x...)
	case time.Time:
		return appendTime(append(dst, tagTime), x)
	case map[string]any:
		dst = append(dst, tagDoc)
		return withLength(dst, func(b []byte) []byte { return encodeDocument(b, x) })
	case []byte:
		dst = append(dst, tagBinary)
		dst = binary.AppendUvarint(dst, uint64(len(x)))
		return append(dst, x...)
	case ObjectID:
		return append(append(dst, tagObjectID), x[:]...)
	case []any:
		dst = append(dst, tagArray)
		return withLength(dst, func(b []byte) []byte {
			b = binary.AppendUvarint(b, uint64(len(x)))
			for _, e := range x {
				b = encodeValue(b, e)
			}
			return b
		})
	case []map[string]any:
		dst = append(dst, tagDocArray)
		return withLength(dst, func(b []byte) []byte {
			b = binary.AppendUvarint(b, uint64(len(x)))
			for _, e := range x {
				b = encodeValue(b, e)
			}
			return b
		})
	}
	if tag, payload, ok := scalarPayload(v); ok {
		return append(append(dst, tag), payload...)
	}
	return encodeTypedSlice(dst, v)
}

// scalarPayload encodes the numeric kinds (tag and untagged payload).
func scalarPayload(v any) (tag byte, payload []byte, ok bool) {
	var buf [binary.MaxVarintLen64]byte
	switch x := v.(type) {
	case int:
		return tagInt, buf[:binary.PutVarint(buf[:], int64(x))], true
	case int8:
		return tagInt8, buf[:binary.PutVarint(buf[:], int64(x))], true
	case int16:
		return tagInt16, buf[:binary.PutVarint(buf[:], int64(x))], true
	case int32:
		return tagInt32, buf[:binary.PutVarint(buf[:], int64(x))], true
	case int64:
		return tagInt64, buf[:binary.PutVarint(buf[:], x)], true
	case uint:
		return tagUint, buf[:binary.PutUvarint(buf[:], uint64(x))], true
	case uint8:
		return tagUint8, buf[:binary.PutUvarint(buf[:], uint64(x))], true
	case uint16:
		return tagUint16, buf[:binary.PutUvarint(buf[:], uint64(x))], true
	case uint32:
		return tagUint32, buf[:binary.PutUvarint(buf[:], uint64(x))], true
	case uint64:
		return tagUint64, buf[:binary.PutUvarint(buf[:], x)], true
	case float32:
		binary.LittleEndian.PutUint32(buf[:4], math.Float32bits(x))
		return tagFloat32, buf[:4], true
	case float64:
		binary.LittleEndian.PutUint64(buf[:8], math.Float64bits(x))
		return tagFloat64, buf[:8], true
	}
	return 0, nil, false
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = binary.AppendVarint(dst, t.Unix())
	return binary.AppendUvarint(dst, uint64(t.Nanosecond()))
}

// encodeTypedSlice encodes a slice of scalars (one of typedSliceTypes).
func encodeTypedSlice(dst []byte, v any) []byte {
	rv := reflect.ValueOf(v)
	var elemTag byte
	for tag, t := range typedSliceTypes {
		if t == rv.Type() {
			elemTag = tag
			break
		}
	}
	dst = append(dst, tagTyped, elemTag)
	return withLength(dst, func(b []byte) []byte {
		b = binary.AppendUvarint(b, uint64(rv.Len()))
		for i := range rv.Len() {
			e := rv.Index(i).Interface()
			switch x := e.(type) {
			case bool:
				if x {
					b = append(b, 1)
				} else {
					b = append(b, 0)
				}
			case string:
				b = binary.AppendUvarint(b, uint64(len(x)))
				b = append(b, x...)
			case time.Time:
				b = appendTime(b, x)
			case ObjectID:
				b = append(b, x[:]...)
			default:
				_, payload, _ := scalarPayload(e)
				b = append(b, payload...)
			}
		}
		return b
	})
}

// decoder reads an encoding that encodeDocument wrote. The encoding is
// trusted (never read from outside the process), so it does not re-check.
type decoder struct {
	b []byte
	i int
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[d.i:])
	d.i += n
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b[d.i:])
	d.i += n
	return v
}

func (d *decoder) bytes(n int) []byte {
	s := d.b[d.i : d.i+n]
	d.i += n
	return s
}

func (d *decoder) str() string { return string(d.bytes(int(d.uvarint()))) }

// decodeDocument returns a new Document from an encoding.
func decodeDocument(b []byte) Document {
	d := decoder{b: b}
	return d.document()
}

func (d *decoder) document() Document {
	n := int(d.uvarint())
	m := make(Document, n)
	for range n {
		k := d.str()
		m[k] = d.value()
	}
	return m
}

func (d *decoder) value() any {
	tag := d.b[d.i]
	d.i++
	switch tag {
	case tagNil:
		return nil
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagString:
		return d.str()
	case tagBinary:
		return append([]byte(nil), d.bytes(int(d.uvarint()))...)
	case tagTime:
		return d.time()
	case tagObjectID:
		var id ObjectID
		copy(id[:], d.bytes(12))
		return id
	case tagDoc:
		d.uvarint() // length
		return d.document()
	case tagArray:
		d.uvarint()
		out := make([]any, d.uvarint())
		for i := range out {
			out[i] = d.value()
		}
		return out
	case tagDocArray:
		d.uvarint()
		out := make([]map[string]any, d.uvarint())
		for i := range out {
			out[i] = d.value().(map[string]any)
		}
		return out
	case tagTyped:
		return d.typedSlice()
	}
	return d.number(tag)
}

func (d *decoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	return time.Unix(sec, int64(nsec)).UTC()
}

func (d *decoder) number(tag byte) any {
	switch tag {
	case tagInt:
		return int(d.varint())
	case tagInt8:
		return int8(d.varint())
	case tagInt16:
		return int16(d.varint())
	case tagInt32:
		return int32(d.varint())
	case tagInt64:
		return d.varint()
	case tagUint:
		return uint(d.uvarint())
	case tagUint8:
		return uint8(d.uvarint())
	case tagUint16:
		return uint16(d.uvarint())
	case tagUint32:
		return uint32(d.uvarint())
	case tagUint64:
		return d.uvarint()
	case tagFloat32:
		return math.Float32frombits(binary.LittleEndian.Uint32(d.bytes(4)))
	case tagFloat64:
		return math.Float64frombits(binary.LittleEndian.Uint64(d.bytes(8)))
	}
	panic("ttldb: internal error: corrupt document encoding")
}

func (d *decoder) typedSlice() any {
	elemTag := d.b[d.i]
	d.i++
	d.uvarint() // length
	n := int(d.uvarint())
	switch elemTag {
	case tagString:
		out := make([]string, n)
		for i := range out {
			out[i] = d.str()
		}
		return out
	case tagTime:
		out := make([]time.Time, n)
		for i := range out {
			out[i] = d.time()
		}
		return out
	}
	rv := reflect.MakeSlice(typedSliceTypes[elemTag], n, n)
	for i := range n {
		var e any
		switch elemTag {
		case tagTrue:
			e = d.bytes(1)[0] == 1
		case tagObjectID:
			var id ObjectID
			copy(id[:], d.bytes(12))
			e = id
		default:
			e = d.number(elemTag)
		}
		rv.Index(i).Set(reflect.ValueOf(e))
	}
	return rv.Interface()
}

// skipValue moves past one tagged value without building it.
func (d *decoder) skipValue() {
	tag := d.b[d.i]
	d.i++
	switch tag {
	case tagNil, tagFalse, tagTrue:
	case tagString, tagBinary, tagDoc, tagArray, tagDocArray:
		d.i += int(d.uvarint())
	case tagTyped:
		d.i++
		d.i += int(d.uvarint())
	case tagTime:
		d.varint()
		d.uvarint()
	case tagObjectID:
		d.i += 12
	case tagFloat32:
		d.i += 4
	case tagFloat64:
		d.i += 8
	case tagInt, tagInt8, tagInt16, tagInt32, tagInt64:
		d.varint()
	default:
		d.uvarint()
	}
}

// findField positions d at the value of the top-level field name and
// reports whether it exists.
func (d *decoder) findField(name string) bool {
	n := int(d.uvarint())
	for range n {
		kl := int(d.uvarint())
		k := d.b[d.i : d.i+kl]
		d.i += kl
		if string(k) == name {
			return true
		}
		d.skipValue()
	}
	return false
}

// encodedField returns the decoded value of a top-level field of an
// encoded document, decoding nothing else.
func encodedField(b []byte, name string) (any, bool) {
	d := decoder{b: b}
	if !d.findField(name) {
		return nil, false
	}
	return d.value(), true
}

// encodedTime returns a top-level field's value when it is a date, without
// allocating; ok is false for a missing field or another type.
func encodedTime(b []byte, name string) (t time.Time, isTime, found bool) {
	d := decoder{b: b}
	if !d.findField(name) {
		return time.Time{}, false, false
	}
	if d.b[d.i] != tagTime {
		return time.Time{}, false, true
	}
	d.i++
	return d.time(), true, true
}

// encodedPathValues is pathValues over an encoded document: it decodes
// only the top-level field the path starts in.
func encodedPathValues(b []byte, path string) ([]any, bool) {
	head, _, dotted := strings.Cut(path, ".")
	v, ok := encodedField(b, head)
	if !ok {
		return nil, false
	}
	if !dotted {
		return []any{v}, true
	}
	return pathValues(map[string]any{head: v}, path)
}

// encodePool holds scratch buffers: a document is encoded into one, then
// copied into a slice of exactly its size, one allocation in all.
var encodePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// encodeStored returns the encoding of doc in a slice of its own, sized
// exactly.
func encodeStored(doc map[string]any) []byte {
	bp := encodePool.Get().(*[]byte)
	buf := encodeDocument((*bp)[:0], doc)
	out := make([]byte, len(buf))
	copy(out, buf)
	if cap(buf) <= 64<<10 {
		*bp = buf
		encodePool.Put(bp)
	}
	return out
}
