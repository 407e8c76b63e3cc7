package codec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
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
	tagRegex    // *regexp.Regexp, in expression encodings only (EncodeExpr): uvarint length, the pattern
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

// encoder validates a document while it encodes it: this walk is the one
// place the rules of what a document may hold are enforced (see Document).
// Its errors are *DocumentError values naming the path.
type encoder struct {
	buf    []byte
	onPath []uintptr // maps and pointers on the current path, to refuse cycles

	// For EncodeValue: newID makes an _id for a document without one,
	// genID is the one it made, wroteID says the document had its own.
	newID   func() any
	genID   any
	wroteID bool
	// expr encodes an expression (EncodeExpr): field names may start
	// with '$' and contain '.', and *regexp.Regexp values are allowed.
	expr bool
	// inID counts the _id values being encoded, whose documents may not
	// hold '$'-prefixed names (nameProblem).
	inID int
}

func (e *encoder) fail(path, reason string) error {
	return &DocumentError{Path: path, Reason: reason}
}

// document encodes m. At the top level (depth 0) the _id field comes
// first: m's own, or extraID if it is not nil (m's _id the caller knows to
// be missing).
func (e *encoder) document(m map[string]any, path string, depth int, extraID any) error {
	if depth > MaxDepth {
		return e.fail(path, fmt.Sprintf("nested deeper than %d levels", MaxDepth))
	}
	p := reflect.ValueOf(m).Pointer()
	if slices.Contains(e.onPath, p) {
		return e.fail(path, "cyclic document")
	}
	e.onPath = append(e.onPath, p)
	defer func() { e.onPath = e.onPath[:len(e.onPath)-1] }()
	n := len(m)
	if extraID != nil {
		n++
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(n))
	// A document's _id goes first: reading it (a lookup's key, a deleted
	// document's event) then skips no other field.
	if depth == 0 {
		id, has := m["_id"]
		if extraID != nil {
			id, has = extraID, true
		}
		if has {
			e.buf = binary.AppendUvarint(e.buf, 3)
			e.buf = append(e.buf, "_id"...)
			if err := e.idValue(id, depth); err != nil {
				return err
			}
		}
	}
	for k, v := range m {
		if depth == 0 && k == "_id" {
			continue
		}
		fp := JoinPath(path, k)
		if why := e.nameProblem(k); why != "" {
			if k == "" {
				fp = path
			}
			return e.fail(fp, why)
		}
		e.buf = binary.AppendUvarint(e.buf, uint64(len(k)))
		e.buf = append(e.buf, k...)
		if err := e.value(v, fp, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// withLength encodes a composite value's body after a uvarint of its byte
// length.
func (e *encoder) withLength(body func() error) error {
	start := len(e.buf)
	if err := body(); err != nil {
		return err
	}
	n := len(e.buf) - start
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], uint64(n))
	e.buf = append(e.buf, hdr[:h]...)
	copy(e.buf[start+h:], e.buf[start:start+n])
	copy(e.buf[start:], hdr[:h])
	return nil
}

func (e *encoder) value(v any, path string, depth int) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, tagNil)
	case bool:
		if x {
			e.buf = append(e.buf, tagTrue)
		} else {
			e.buf = append(e.buf, tagFalse)
		}
	case string:
		if !utf8.ValidString(x) {
			return e.fail(path, "string is not valid UTF-8")
		}
		e.buf = append(e.buf, tagString)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(x)))
		e.buf = append(e.buf, x...)
	case json.Number:
		n, err := numberOf(x)
		if err != nil {
			return e.fail(path, err.Error())
		}
		return e.value(n, path, depth)
	case time.Time:
		e.buf = appendTime(append(e.buf, tagTime), x)
	case *time.Time:
		if x == nil {
			e.buf = append(e.buf, tagNil)
		} else {
			e.buf = appendTime(append(e.buf, tagTime), *x)
		}
	case map[string]any:
		e.buf = append(e.buf, tagDoc)
		return e.withLength(func() error { return e.document(x, path, depth, nil) })
	case []byte:
		e.buf = append(e.buf, tagBinary)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(x)))
		e.buf = append(e.buf, x...)
	case ObjectID:
		e.buf = append(append(e.buf, tagObjectID), x[:]...)
	case *regexp.Regexp:
		if !e.expr || x == nil {
			return e.fail(path, fmt.Sprintf("unsupported value type %T", v))
		}
		p := x.String()
		e.buf = append(e.buf, tagRegex)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(p)))
		e.buf = append(e.buf, p...)
	case []any:
		if depth > MaxDepth {
			return e.fail(path, fmt.Sprintf("nested deeper than %d levels", MaxDepth))
		}
		e.buf = append(e.buf, tagArray)
		return e.withLength(func() error {
			e.buf = binary.AppendUvarint(e.buf, uint64(len(x)))
			for i, el := range x {
				if err := e.value(el, JoinPath(path, strconv.Itoa(i)), depth+1); err != nil {
					return err
				}
			}
			return nil
		})
	case []map[string]any:
		e.buf = append(e.buf, tagDocArray)
		return e.withLength(func() error {
			e.buf = binary.AppendUvarint(e.buf, uint64(len(x)))
			for i, el := range x {
				ep := JoinPath(path, strconv.Itoa(i))
				if el == nil {
					return e.fail(ep, "nil document in array")
				}
				e.buf = append(e.buf, tagDoc)
				if err := e.withLength(func() error { return e.document(el, ep, depth+1, nil) }); err != nil {
					return err
				}
			}
			return nil
		})
	default:
		if buf, ok := appendScalar(e.buf, v, true); ok {
			e.buf = buf
			return nil
		}
		if ok, err := e.driverValue(v, path, depth); ok {
			return err
		}
		if _, ok := typedSliceTags[reflect.TypeOf(v)]; ok {
			return e.typedSlice(v, path)
		}
		rv := reflect.ValueOf(v)
		if h := encodeHookOf(rv.Type()); h != hookNone {
			return e.hooked(rv, h, path, depth)
		}
		if u, ok := underlying(v); ok {
			return e.value(u, path, depth)
		}
		switch rv.Kind() {
		case reflect.Struct, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Array:
			// Structs, pointers, and maps and slices of any storable
			// element, wherever they are (structenc.go).
			if err := e.rvalue(rv, depth); err != nil {
				return prefixPath(err, path)
			}
			return nil
		}
		return e.fail(path, fmt.Sprintf("unsupported value type %T", v))
	}
	return nil
}

// appendScalar appends the encoding of a value of a numeric kind (its
// tag if tagged, then its payload) and reports whether v was one. It
// appends in place, so that encoding a number allocates nothing.
func appendScalar(dst []byte, v any, tagged bool) ([]byte, bool) {
	const (
		signed = iota
		unsigned
		float32bits
		float64bits
	)
	var (
		tag  byte
		kind int
		i    int64
		u    uint64
	)
	switch x := v.(type) {
	case int:
		tag, kind, i = tagInt, signed, int64(x)
	case int8:
		tag, kind, i = tagInt8, signed, int64(x)
	case int16:
		tag, kind, i = tagInt16, signed, int64(x)
	case int32:
		tag, kind, i = tagInt32, signed, int64(x)
	case int64:
		tag, kind, i = tagInt64, signed, x
	case uint:
		tag, kind, u = tagUint, unsigned, uint64(x)
	case uint8:
		tag, kind, u = tagUint8, unsigned, uint64(x)
	case uint16:
		tag, kind, u = tagUint16, unsigned, uint64(x)
	case uint32:
		tag, kind, u = tagUint32, unsigned, uint64(x)
	case uint64:
		tag, kind, u = tagUint64, unsigned, x
	case float32:
		tag, kind, u = tagFloat32, float32bits, uint64(math.Float32bits(x))
	case float64:
		tag, kind, u = tagFloat64, float64bits, math.Float64bits(x)
	default:
		return dst, false
	}
	if tagged {
		dst = append(dst, tag)
	}
	switch kind {
	case signed:
		return binary.AppendVarint(dst, i), true
	case unsigned:
		return binary.AppendUvarint(dst, u), true
	case float32bits:
		return binary.LittleEndian.AppendUint32(dst, uint32(u)), true
	}
	return binary.LittleEndian.AppendUint64(dst, u), true
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = binary.AppendVarint(dst, t.Unix())
	return binary.AppendUvarint(dst, uint64(t.Nanosecond()))
}

// typedSliceTags is the inverse of typedSliceTypes.
var typedSliceTags = func() map[reflect.Type]byte {
	m := make(map[reflect.Type]byte, len(typedSliceTypes))
	for tag, t := range typedSliceTypes {
		m[t] = tag
	}
	return m
}()

// typedSlice encodes a slice of scalars (one of typedSliceTypes); any other
// value is refused.
func (e *encoder) typedSlice(v any, path string) error {
	rv := reflect.ValueOf(v)
	elemTag, ok := typedSliceTags[rv.Type()]
	if !ok {
		return e.fail(path, fmt.Sprintf("unsupported value type %T", v))
	}
	e.buf = append(e.buf, tagTyped, elemTag)
	return e.withLength(func() error {
		e.buf = binary.AppendUvarint(e.buf, uint64(rv.Len()))
		for i := range rv.Len() {
			switch x := rv.Index(i).Interface().(type) {
			case bool:
				b := byte(0)
				if x {
					b = 1
				}
				e.buf = append(e.buf, b)
			case string:
				if !utf8.ValidString(x) {
					return e.fail(JoinPath(path, strconv.Itoa(i)), "string is not valid UTF-8")
				}
				e.buf = binary.AppendUvarint(e.buf, uint64(len(x)))
				e.buf = append(e.buf, x...)
			case time.Time:
				e.buf = appendTime(e.buf, x)
			case ObjectID:
				e.buf = append(e.buf, x[:]...)
			default:
				e.buf, _ = appendScalar(e.buf, x, false)
			}
		}
		return nil
	})
}

// decoder reads an encoding that encodeDocument wrote. The encoding is
// trusted (never read from outside the process), so it does not re-check.
type decoder struct {
	b    []byte
	i    int
	docM bool // DecodeOptions.DefaultDocumentM
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

// Decode returns a new Document from an encoding. It shares no memory with
// b: the result may outlive it.
func Decode(b []byte) Document {
	d := decoder{b: b}
	return d.document()
}

// DecodeFields returns a new Document holding only the top-level fields
// of an encoding named in fields (a sorted or unsorted short list),
// skipping the others undecoded: a reader that needs a few fields of large
// documents (an aggregation's $group) pays for those only.
func DecodeFields(b []byte, fields []string) Document {
	d := decoder{b: b}
	n := int(d.uvarint())
	m := make(Document, min(n, len(fields)))
	for range n {
		kb := d.bytes(int(d.uvarint()))
		want := false
		for _, f := range fields {
			if f == string(kb) {
				want = true
				break
			}
		}
		if !want {
			d.skipValue()
			continue
		}
		m[internName(kb)] = d.value()
	}
	return m
}

func (d *decoder) document() Document {
	n := int(d.uvarint())
	m := make(Document, n)
	for range n {
		k := internName(d.bytes(int(d.uvarint())))
		m[k] = d.value()
	}
	return m
}

// names interns field names: documents of a collection share a few, and a
// decoded document then costs no allocation per field name. It is a
// fixed-size table of recently seen names, read and written without locks
// (a slot holds a pointer to an immutable string; a lost race only costs
// an allocation).
var names [4096]atomic.Pointer[string]

// internName returns b as a string, shared with earlier calls for the same
// bytes when the table remembers them.
func internName(b []byte) string {
	if len(b) > 64 {
		return string(b)
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	p := &names[h&(uint32(len(names))-1)]
	if s := p.Load(); s != nil && *s == string(b) {
		return *s
	}
	s := string(b)
	p.Store(&s)
	return s
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
	case tagRegex:
		re, err := regexp.Compile(d.str())
		if err != nil {
			return nil // not from ValidateExpr'd bytes
		}
		return re
	case tagTimestamp, tagBinarySub, tagRegexValue, tagDecimal, tagMinKey, tagMaxKey:
		return d.bsonValue(tag)
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
	case tagString, tagBinary, tagDoc, tagArray, tagDocArray, tagRegex:
		d.i += int(d.uvarint())
	case tagTyped:
		d.i++
		d.i += int(d.uvarint())
	case tagTime:
		d.varint()
		d.uvarint()
	case tagObjectID:
		d.i += 12
	case tagTimestamp:
		d.i += 8
	case tagDecimal:
		d.i += 16
	case tagMinKey, tagMaxKey:
	case tagBinarySub:
		d.i++
		d.i += int(d.uvarint())
	case tagRegexValue:
		d.i += int(d.uvarint())
		d.i += int(d.uvarint())
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

// EncodedField returns the decoded value of a top-level field of an
// encoded document, decoding nothing else.
func EncodedField(b []byte, name string) (any, bool) {
	d := decoder{b: b}
	if !d.findField(name) {
		return nil, false
	}
	return d.value(), true
}

// EncodedString returns the bytes of a top-level field's value when it is
// a string, without copying them (a view of b); isString is false for a
// missing field or another type.
func EncodedString(b []byte, name string) (s []byte, isString bool) {
	d := decoder{b: b}
	if !d.findField(name) || d.b[d.i] != tagString {
		return nil, false
	}
	d.i++
	return d.bytes(int(d.uvarint())), true
}

// EncodedTime returns a top-level field's value when it is a date, without
// allocating; ok is false for a missing field or another type.
func EncodedTime(b []byte, name string) (t time.Time, isTime, found bool) {
	t, _, isTime, found = EncodedTimeAt(b, name)
	return t, isTime, found
}

// EncodedTimeAt is EncodedTime, and also returns where the date's value
// (its tag) is in b, for TimeAt to read it again without the search.
func EncodedTimeAt(b []byte, name string) (t time.Time, at int, isTime, found bool) {
	d := decoder{b: b}
	if !d.findField(name) {
		return time.Time{}, 0, false, false
	}
	at = d.i
	if d.b[d.i] != tagTime {
		return time.Time{}, 0, false, true
	}
	d.i++
	return d.time(), at, true, true
}

// TimeAt reads the date whose value EncodedTimeAt found at offset at of
// the valid encoding b, checking that a top-level field named name ends
// there (its name's length, one byte, and its name, just before) and that
// the value is a date: ok is false otherwise. The check is what a wrong
// offset would fail, not a proof that the field is top-level: give the
// offset EncodedTimeAt found in these very bytes.
func TimeAt(b []byte, at int, name string) (t time.Time, ok bool) {
	start := at - len(name)
	if len(name) == 0 || len(name) > 127 || start < 1 || at >= len(b) || b[at] != tagTime ||
		b[start-1] != byte(len(name)) || string(b[start:at]) != name {
		return time.Time{}, false
	}
	return DateAt(b, at)
}

// DateAt reads the date whose value (its tag) is at offset at of the
// valid encoding b: ok is false if no date value starts there. Unlike
// TimeAt it checks no field name, for an offset TimeAt checked when b was
// stored (b never changes).
func DateAt(b []byte, at int) (t time.Time, ok bool) {
	if at <= 0 || at >= len(b) || b[at] != tagTime {
		return time.Time{}, false
	}
	d := decoder{b: b, i: at + 1}
	return d.time(), true
}

// EncodedPathValues is PathValues over an encoded document: it decodes
// only the top-level field the path starts in.
func EncodedPathValues(b []byte, path string) ([]any, bool) {
	head, _, dotted := strings.Cut(path, ".")
	v, ok := EncodedField(b, head)
	if !ok {
		return nil, false
	}
	if !dotted {
		return []any{v}, true
	}
	return PathValues(map[string]any{head: v}, path)
}

// encodePool holds scratch buffers: a document is encoded into one, then
// copied into a slice of exactly its size, one allocation in all.
var encodePool = sync.Pool{New: func() any { return &encoder{buf: make([]byte, 0, 512)} }}

// Encode validates doc and returns its encoding in a slice of its own,
// sized exactly. If extraID is not nil it is added as the _id field (doc
// must have none).
func Encode(doc map[string]any, extraID any) ([]byte, error) {
	if doc == nil {
		return nil, &DocumentError{Reason: "document is nil"}
	}
	e := encodePool.Get().(*encoder)
	e.buf, e.onPath, e.inID = e.buf[:0], e.onPath[:0], 0
	err := e.document(doc, "", 0, extraID)
	var out []byte
	if err == nil {
		out = make([]byte, len(e.buf))
		copy(out, e.buf)
	}
	if cap(e.buf) <= 64<<10 {
		encodePool.Put(e)
	}
	return out, err
}

// AppendEncode is Encode appending the encoding to dst, for a batch of
// documents encoded into one buffer (one allocation for the batch, not one
// per document). On error it returns dst unchanged.
func AppendEncode(dst []byte, doc map[string]any, extraID any) ([]byte, error) {
	if doc == nil {
		return dst, &DocumentError{Reason: "document is nil"}
	}
	e := encodePool.Get().(*encoder)
	scratch := e.buf
	e.buf, e.onPath, e.inID = dst, e.onPath[:0], 0
	err := e.document(doc, "", 0, extraID)
	out := e.buf
	e.buf = scratch[:0]
	encodePool.Put(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// CloneValue validates v as a document value at path and returns a deep
// copy in stored form. The path's components count towards MaxDepth, as
// they would in a document: a value at "a.b" may nest two levels less than
// a whole document, so that a filter or update value is held to the limit
// of the documents it is compared with or written into.
func CloneValue(v any, path string) (any, error) {
	depth := 0
	if path != "" {
		depth = strings.Count(path, ".") + 1
	}
	var e encoder
	if err := e.value(v, path, depth); err != nil {
		return nil, err
	}
	d := decoder{b: e.buf}
	return d.value(), nil
}
