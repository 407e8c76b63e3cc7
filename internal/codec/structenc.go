package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"
)

// The reflective encoder writes structs, pointers, maps with string keys
// of any value type, and slices of any storable element straight into the
// binary encoding: no intermediate map. It writes the same bytes the
// Document encoder writes for the same values (a struct field of type
// []string is a typed string slice, as a []string in a Document), except
// that a nil slice, map or pointer is stored as null, as the MongoDB
// driver stores it (a nil slice in a Document stays an empty array).
//
// Errors carry the path relative to the value being encoded; each level
// prefixes its own name on the way out (prefixPath), so that the path
// costs nothing unless there is an error.

// prefixPath puts name in front of the path of a *DocumentError or
// *DecodeError.
func prefixPath(err error, name string) error {
	join := func(p string) string {
		switch {
		case name == "":
			return p
		case p == "":
			return name
		}
		return name + "." + p
	}
	switch x := err.(type) {
	case *DocumentError:
		x.Path = join(x.Path)
	case *DecodeError:
		x.Path = join(x.Path)
	}
	return err
}

// EncodeValue validates and encodes a document given as a struct, a map
// with string keys, or a non-nil pointer to either (map[string]any is best
// given to Encode, which is faster). If the document has no _id (no such
// field, a field left out by omitempty, or a nil _id), newID (if not nil)
// is called and its result stored as the _id and returned as genID.
func EncodeValue(doc any, newID func() any) (enc []byte, genID any, err error) {
	rv := reflect.ValueOf(doc)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, nil, &DocumentError{Reason: "document is nil"}
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil, nil, &DocumentError{Reason: "document is nil"}
	}
	e := encodePool.Get().(*encoder)
	e.buf, e.onPath = e.buf[:0], e.onPath[:0]
	e.newID, e.genID, e.wroteID, e.inID = newID, nil, false, 0
	switch t := rv.Type(); {
	case t.Kind() == reflect.Struct && !planOf(t).encodeHooked:
		err = e.reflectDoc(rv, doc) // a model struct: no hook lookup
	case encodeHookOf(t) != hookNone:
		// bson.D, bson.Raw and bson.Marshaler values are documents too.
		err = e.hookedDoc(rv, encodeHookOf(t))
	default:
		err = e.reflectDoc(rv, doc)
	}
	genID = e.genID
	if err == nil {
		enc = make([]byte, len(e.buf))
		copy(enc, e.buf)
	}
	e.newID, e.genID = nil, nil
	if cap(e.buf) <= 64<<10 {
		encodePool.Put(e)
	}
	return enc, genID, err
}

// reflectDoc encodes a document given as a struct or a map (rv, doc's
// value through any pointer).
func (e *encoder) reflectDoc(rv reflect.Value, doc any) (err error) {
	switch rv.Kind() {
	case reflect.Struct:
		sp := planOf(rv.Type())
		if sp.isTime {
			err = &DocumentError{Reason: fmt.Sprintf("a document must be a struct or a map, not %s", rv.Type())}
			break
		}
		err = e.structDoc(rv, sp, 0, true)
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			err = &DocumentError{Reason: fmt.Sprintf("unsupported type %s (a map's keys must be strings)", rv.Type())}
			break
		}
		if rv.IsNil() {
			err = &DocumentError{Reason: "document is nil"}
			break
		}
		err = e.mapDoc(rv, 0, true)
	default:
		err = &DocumentError{Reason: fmt.Sprintf("a document must be a struct, a map with string keys, a bson.D, a bson.Raw or a pointer to one, not %T", doc)}
	}
	return err
}

// docStart reserves room for a document's field count, at most max: one
// byte when max fits in one (the common case), so the count is written in
// place afterwards; else nothing, and docEnd shifts the fields to insert it.
func (e *encoder) docStart(max int) (start int, reserved bool) {
	start = len(e.buf)
	if max < 0x80 {
		e.buf = append(e.buf, 0)
		return start, true
	}
	return start, false
}

func (e *encoder) docEnd(start int, reserved bool, n int) {
	if reserved {
		e.buf[start] = byte(n)
		return
	}
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], uint64(n))
	e.buf = append(e.buf, hdr[:h]...)
	copy(e.buf[start+h:], e.buf[start:len(e.buf)-h])
	copy(e.buf[start:], hdr[:h])
}

func (e *encoder) name(k string) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(k)))
	e.buf = append(e.buf, k...)
}

// isNil reports whether v is a nil pointer, interface, map or slice.
func isNil(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return v.IsNil()
	}
	return false
}

// isEmpty is omitempty's test (the MongoDB driver's): see structplan.go.
func isEmpty(v reflect.Value, f *fieldPlan) bool {
	if f.zeroer {
		switch {
		case isTimeLike(f.typ):
			return timeOf(v).IsZero()
		case v.Kind() == reflect.Array:
			return v.IsZero()
		case v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface:
			if v.IsNil() {
				return true
			}
		}
		return v.Interface().(interface{ IsZero() bool }).IsZero()
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}

func timeOf(v reflect.Value) time.Time {
	if v.CanAddr() {
		return *(*time.Time)(v.Addr().UnsafePointer())
	}
	return v.Convert(timeType).Interface().(time.Time)
}

// structDoc encodes struct v as a document. top is true for the document
// itself, whose _id may be generated (e.newID).
func (e *encoder) structDoc(v reflect.Value, sp *structPlan, depth int, top bool) error {
	if depth > MaxDepth {
		return e.fail("", fmt.Sprintf("nested deeper than %d levels", MaxDepth))
	}
	if sp.err != "" {
		return e.fail(sp.errPath, sp.err)
	}
	var im reflect.Value
	max := len(sp.fields) + 1
	if sp.inlineMap != nil {
		if m, ok := field(v, sp.inlineMap); ok && !m.IsNil() {
			im = m
			max += m.Len()
		}
	}
	start, reserved := e.docStart(max)
	n := 0
	for i := range sp.fields {
		f := &sp.fields[i]
		fv, ok := field(v, f.index)
		if !ok || f.omitEmpty && isEmpty(fv, f) {
			continue
		}
		if top && f.name == "_id" {
			if isNil(fv) {
				continue // generated below
			}
			e.wroteID = true
		}
		if e.inID > 0 && f.name[0] == '$' {
			return e.fail(f.name, "a field name inside _id may not start with '$'")
		}
		e.name(f.name)
		isID := top && f.name == "_id"
		if isID {
			e.inID++
		}
		err := e.rvalueHook(fv, f.ehook, depth+1)
		if isID {
			e.inID--
		}
		if err != nil {
			return prefixPath(err, f.name)
		}
		n++
	}
	if im.IsValid() {
		for it := im.MapRange(); it.Next(); {
			k := it.Key().String()
			if _, dup := sp.byName[k]; dup {
				return e.fail(k, "the inline map holds a field the struct names too")
			}
			if why := e.nameProblem(k); why != "" {
				return e.fail(k, why)
			}
			if top && k == "_id" {
				e.wroteID = true
			}
			e.name(k)
			if err := e.rvalue(it.Value(), depth+1); err != nil {
				return prefixPath(err, k)
			}
			n++
		}
	}
	if top && !e.wroteID && e.newID != nil {
		e.genID = e.newID()
		e.name("_id")
		if err := e.value(e.genID, "_id", depth+1); err != nil {
			return err
		}
		n++
	}
	e.docEnd(start, reserved, n)
	return nil
}

// mapDoc encodes a map with string-kind keys as a document.
func (e *encoder) mapDoc(v reflect.Value, depth int, top bool) error {
	if depth > MaxDepth {
		return e.fail("", fmt.Sprintf("nested deeper than %d levels", MaxDepth))
	}
	if m, ok := v.Interface().(map[string]any); ok {
		var extra any
		if top && e.newID != nil {
			if _, has := m["_id"]; !has {
				e.genID = e.newID()
				extra = e.genID
			}
		}
		return e.document(m, "", depth, extra)
	}
	p := v.Pointer()
	for _, q := range e.onPath {
		if q == p {
			return e.fail("", "cyclic document")
		}
	}
	e.onPath = append(e.onPath, p)
	defer func() { e.onPath = e.onPath[:len(e.onPath)-1] }()
	n := v.Len()
	var genID any
	if top && e.newID != nil && !v.MapIndex(reflect.ValueOf("_id").Convert(v.Type().Key())).IsValid() {
		genID = e.newID()
		e.genID = genID
		n++
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(n))
	for it := v.MapRange(); it.Next(); {
		k := it.Key().String()
		if why := e.nameProblem(k); why != "" {
			return e.fail(k, why)
		}
		e.name(k)
		if top && k == "_id" {
			e.inID++
		}
		err := e.rvalue(it.Value(), depth+1)
		if top && k == "_id" {
			e.inID--
		}
		if err != nil {
			return prefixPath(err, k)
		}
	}
	if genID != nil {
		e.name("_id")
		return e.value(genID, "_id", depth+1)
	}
	return nil
}

// kindTag is the tag of each scalar kind.
var kindTag = [...]byte{
	reflect.Int: tagInt, reflect.Int8: tagInt8, reflect.Int16: tagInt16, reflect.Int32: tagInt32,
	reflect.Int64: tagInt64, reflect.Uint: tagUint, reflect.Uint8: tagUint8, reflect.Uint16: tagUint16,
	reflect.Uint32: tagUint32, reflect.Uint64: tagUint64, reflect.Float32: tagFloat32,
	reflect.Float64: tagFloat64, reflect.String: tagString, reflect.Bool: tagTrue,
}

// scalarElemTag is the element tag of a typed slice of t, or 0.
func scalarElemTag(t reflect.Type) byte {
	if t != timeType && encodeHookOf(t) != hookNone {
		return 0 // []bson.DateTime is an array of dates, not of int64s
	}
	switch k := t.Kind(); k {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return kindTag[k]
	case reflect.Struct:
		if isTimeLike(t) {
			return tagTime
		}
	case reflect.Array:
		if isObjectIDLike(t) {
			return tagObjectID
		}
	}
	return 0
}

// payload appends the untagged payload of scalar v (tag: scalarElemTag).
func (e *encoder) payload(v reflect.Value, tag byte) error {
	switch tag {
	case tagTrue:
		b := byte(0)
		if v.Bool() {
			b = 1
		}
		e.buf = append(e.buf, b)
	case tagInt, tagInt8, tagInt16, tagInt32, tagInt64:
		e.buf = binary.AppendVarint(e.buf, v.Int())
	case tagUint, tagUint8, tagUint16, tagUint32, tagUint64:
		e.buf = binary.AppendUvarint(e.buf, v.Uint())
	case tagFloat32:
		e.buf = binary.LittleEndian.AppendUint32(e.buf, math.Float32bits(float32(v.Float())))
	case tagFloat64:
		e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(v.Float()))
	case tagString:
		s := v.String()
		if !utf8.ValidString(s) {
			return e.fail("", "string is not valid UTF-8")
		}
		e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
		e.buf = append(e.buf, s...)
	case tagTime:
		e.buf = appendTime(e.buf, timeOf(v))
	case tagObjectID:
		if v.CanAddr() {
			e.buf = append(e.buf, (*[12]byte)(v.Addr().UnsafePointer())[:]...)
		} else {
			for i := range 12 {
				e.buf = append(e.buf, byte(v.Index(i).Uint()))
			}
		}
	}
	return nil
}

// rvalue encodes one value by its type (see the comment at the top).
func (e *encoder) rvalue(v reflect.Value, depth int) error {
	return e.rvalueHook(v, typeHook(v.Type(), encodeHookOf), depth)
}

// rvalueHook is rvalue with v's type's encode hook known.
func (e *encoder) rvalueHook(v reflect.Value, h hook, depth int) error {
	if h != hookNone {
		return e.hooked(v, h, "", depth)
	}
	t := v.Type()
	switch k := t.Kind(); k {
	case reflect.Bool:
		if v.Bool() {
			e.buf = append(e.buf, tagTrue)
		} else {
			e.buf = append(e.buf, tagFalse)
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		tag := kindTag[k]
		e.buf = append(e.buf, tag)
		return e.payload(v, tag)
	case reflect.Struct:
		sp := planOf(t)
		if sp.isTime {
			e.buf = appendTime(append(e.buf, tagTime), timeOf(v))
			return nil
		}
		e.buf = append(e.buf, tagDoc)
		return e.withLength(func() error { return e.structDoc(v, sp, depth, false) })
	case reflect.Array:
		if isObjectIDLike(t) {
			e.buf = append(e.buf, tagObjectID)
			return e.payload(v, tagObjectID)
		}
	case reflect.Pointer:
		if v.IsNil() {
			e.buf = append(e.buf, tagNil)
			return nil
		}
		if scalarElemTag(t.Elem()) != 0 {
			return e.rvalue(v.Elem(), depth) // cannot lead back here
		}
		p := v.Pointer()
		for _, q := range e.onPath {
			if q == p {
				return e.fail("", "cyclic document")
			}
		}
		e.onPath = append(e.onPath, p)
		err := e.rvalue(v.Elem(), depth)
		e.onPath = e.onPath[:len(e.onPath)-1]
		return err
	case reflect.Interface:
		if v.IsNil() {
			e.buf = append(e.buf, tagNil)
			return nil
		}
		return e.value(v.Interface(), "", depth)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		if v.IsNil() {
			e.buf = append(e.buf, tagNil)
			return nil
		}
		e.buf = append(e.buf, tagDoc)
		return e.withLength(func() error { return e.mapDoc(v, depth, false) })
	case reflect.Slice:
		if v.IsNil() {
			e.buf = append(e.buf, tagNil)
			return nil
		}
		return e.slice(v, depth)
	}
	return e.fail("", fmt.Sprintf("unsupported value type %s", t))
}

func (e *encoder) slice(v reflect.Value, depth int) error {
	t := v.Type()
	et := t.Elem()
	if et.Kind() == reflect.Uint8 {
		b := v.Bytes()
		e.buf = append(e.buf, tagBinary)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(b)))
		e.buf = append(e.buf, b...)
		return nil
	}
	if t == arrayType || t == docsType {
		return e.value(v.Interface(), "", depth)
	}
	if depth > MaxDepth {
		return e.fail("", fmt.Sprintf("nested deeper than %d levels", MaxDepth))
	}
	n := v.Len()
	if tag := scalarElemTag(et); tag != 0 {
		e.buf = append(e.buf, tagTyped, tag)
		return e.withLength(func() error {
			e.buf = binary.AppendUvarint(e.buf, uint64(n))
			for i := range n {
				if err := e.payload(v.Index(i), tag); err != nil {
					return prefixPath(err, strconv.Itoa(i))
				}
			}
			return nil
		})
	}
	if et.Kind() == reflect.Struct {
		sp := planOf(et) // not time-like: scalarElemTag took those
		e.buf = append(e.buf, tagDocArray)
		return e.withLength(func() error {
			e.buf = binary.AppendUvarint(e.buf, uint64(n))
			for i := range n {
				e.buf = append(e.buf, tagDoc)
				if err := e.withLength(func() error { return e.structDoc(v.Index(i), sp, depth+1, false) }); err != nil {
					return prefixPath(err, strconv.Itoa(i))
				}
			}
			return nil
		})
	}
	e.buf = append(e.buf, tagArray)
	return e.withLength(func() error {
		e.buf = binary.AppendUvarint(e.buf, uint64(n))
		for i := range n {
			if err := e.rvalue(v.Index(i), depth+1); err != nil {
				return prefixPath(err, strconv.Itoa(i))
			}
		}
		return nil
	})
}
