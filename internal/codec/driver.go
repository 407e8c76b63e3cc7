package codec

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The MongoDB Go driver's bson types mean in a document what they mean to
// the driver, in every position (a Document's value, a struct field, an
// array element, a filter or update operand):
//
//   - bson.D is a document, its field order kept; bson.M a document;
//     bson.A an array; bson.E alone a struct, as the driver marshals it;
//   - bson.ObjectID is ttldb's ObjectID (the same type); bson.DateTime a
//     date (milliseconds); bson.Timestamp, bson.Binary (its subtype kept),
//     bson.Regex, bson.Decimal128, bson.MinKey and bson.MaxKey are stored
//     as themselves; bson.Null is null;
//   - bson.Raw, bson.RawArray and bson.RawValue stand for their content,
//     as do the results of a type's MarshalBSON (bson.Marshaler, a
//     document) and MarshalBSONValue (bson.ValueMarshaler, any value);
//   - a fixed-size byte array ([16]byte, a UUID's shape) is binary data
//     (an array of 12 bytes whose type is named ObjectID is an ObjectID);
//   - what ttldb cannot keep — JavaScript code, symbols, DBPointer,
//     undefined, code with scope, any other type of the bson package — is
//     refused with an error naming the path and the type, never stored as
//     something else.
//
// bson.DateTime's milliseconds are ttldb dates (time.Time, UTC); ttldb
// keeps a time.Time's nanoseconds, the driver milliseconds.

// Tags of the bson values without a Go equivalent, continuing codec.go's
// list (encodings holding them need format version 3: docs/FORMAT.md).
const (
	tagTimestamp  byte = tagRegex + 1 + iota // bson.Timestamp: T and I, 4 bytes each, little-endian
	tagBinarySub                             // bson.Binary of a subtype other than 0: the subtype, then as tagBinary
	tagRegexValue                            // bson.Regex: the pattern, then the options, each a string's payload
	tagDecimal                               // bson.Decimal128: high then low 64 bits, little-endian
	tagMinKey                                // bson.MinKey
	tagMaxKey                                // bson.MaxKey
)

// hook says how a Go type is encoded (encodeHookOf) or decoded into
// (decodeHookOf) when its kind alone does not say it.
type hook uint8

const (
	hookNone              hook = iota
	hookDriver                 // a bson type encoder.value or driverInto handles by its type
	hookByteArray              // a fixed-size byte array: binary data
	hookMarshaler              // bson.Marshaler
	hookValueMarshaler         // bson.ValueMarshaler
	hookPtrMarshaler           // *T is a bson.Marshaler (T is the type asked about)
	hookPtrValueMarshaler      // *T is a bson.ValueMarshaler
	hookUnmarshaler            // *T is a bson.Unmarshaler
	hookValueUnmarshaler       // *T is a bson.ValueUnmarshaler
	hookRefused                // a bson type ttldb cannot keep
)

var (
	bsonPkg             = reflect.TypeFor[bson.D]().PkgPath()
	marshalerType       = reflect.TypeFor[bson.Marshaler]()
	valueMarshalerType  = reflect.TypeFor[bson.ValueMarshaler]()
	unmarshalerType     = reflect.TypeFor[bson.Unmarshaler]()
	valueUnmarshalerTyp = reflect.TypeFor[bson.ValueUnmarshaler]()

	// driverTypes are the bson types handled by type (hookDriver).
	driverTypes = map[reflect.Type]bool{
		reflect.TypeFor[bson.D]():          true,
		reflect.TypeFor[bson.M]():          true,
		reflect.TypeFor[bson.A]():          true,
		reflect.TypeFor[bson.DateTime]():   true,
		reflect.TypeFor[bson.Timestamp]():  true,
		reflect.TypeFor[bson.Binary]():     true,
		reflect.TypeFor[bson.Regex]():      true,
		reflect.TypeFor[bson.Decimal128](): true,
		reflect.TypeFor[bson.MinKey]():     true,
		reflect.TypeFor[bson.MaxKey]():     true,
		reflect.TypeFor[bson.Null]():       true,
		reflect.TypeFor[bson.Raw]():        true,
		reflect.TypeFor[bson.RawArray]():   true,
		reflect.TypeFor[bson.RawValue]():   true,
		reflect.TypeFor[bson.E]():          false, // a struct, as the driver marshals it
		reflect.TypeFor[ObjectID]():        false, // an ObjectID by kind (isObjectIDLike)
	}

	bsonMType = reflect.TypeFor[bson.M]()
	bsonAType = reflect.TypeFor[bson.A]()
	bsonDType = reflect.TypeFor[bson.D]()

	encodeHooks, decodeHooks sync.Map // reflect.Type to hook
)

// encodeHookOf returns how values of type t are encoded when t is one the
// kind-based rules do not cover. Unnamed types other than byte arrays are
// hookNone without a lookup.
func encodeHookOf(t reflect.Type) hook {
	if t.PkgPath() == "" && t.Kind() != reflect.Array {
		return hookNone
	}
	if h, ok := encodeHooks.Load(t); ok {
		return h.(hook)
	}
	h := hookNone
	switch handled, known := driverTypes[t]; {
	case t == bsonMType || t == bsonAType:
		// A map and a slice by kind (underlying).
	case known && handled:
		h = hookDriver
	case known:
	case t.Implements(valueMarshalerType):
		h = hookValueMarshaler
	case t.Implements(marshalerType):
		h = hookMarshaler
	case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(valueMarshalerType):
		h = hookPtrValueMarshaler
	case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(marshalerType):
		h = hookPtrMarshaler
	case t.PkgPath() == bsonPkg:
		h = hookRefused
	case t.Kind() == reflect.Array && t.Elem().Kind() == reflect.Uint8 && !isObjectIDLike(t):
		h = hookByteArray
	}
	encodeHooks.Store(t, h)
	return h
}

// decodeHookOf is encodeHookOf for decoding into a destination of type t.
func decodeHookOf(t reflect.Type) hook {
	if t.PkgPath() == "" && t.Kind() != reflect.Array {
		return hookNone
	}
	if h, ok := decodeHooks.Load(t); ok {
		return h.(hook)
	}
	h := hookNone
	switch handled, known := driverTypes[t]; {
	case known && handled:
		h = hookDriver
	case known:
	case reflect.PointerTo(t).Implements(valueUnmarshalerTyp):
		h = hookValueUnmarshaler
	case reflect.PointerTo(t).Implements(unmarshalerType):
		h = hookUnmarshaler
	case t.PkgPath() == bsonPkg:
		h = hookRefused
	case t.Kind() == reflect.Array && t.Elem().Kind() == reflect.Uint8 && !isObjectIDLike(t):
		h = hookByteArray
	}
	decodeHooks.Store(t, h)
	return h
}

// driverValue encodes v if it is one of the bson types encoder.value
// handles by type; ok is false for any other value.
func (e *encoder) driverValue(v any, path string, depth int) (ok bool, err error) {
	switch x := v.(type) {
	case bson.D:
		if x == nil {
			e.buf = append(e.buf, tagNil)
			return true, nil
		}
		e.buf = append(e.buf, tagDoc)
		return true, e.withLength(func() error { return e.orderedDoc(x, path, depth, nil) })
	case bson.DateTime:
		e.buf = appendTime(append(e.buf, tagTime), x.Time())
	case bson.Timestamp:
		e.buf = append(e.buf, tagTimestamp)
		e.buf = binary.LittleEndian.AppendUint32(e.buf, x.T)
		e.buf = binary.LittleEndian.AppendUint32(e.buf, x.I)
	case bson.Binary:
		if x.Subtype == 0 {
			e.buf = append(e.buf, tagBinary)
		} else {
			e.buf = append(e.buf, tagBinarySub, x.Subtype)
		}
		e.buf = binary.AppendUvarint(e.buf, uint64(len(x.Data)))
		e.buf = append(e.buf, x.Data...)
	case bson.Regex:
		if !utf8.ValidString(x.Pattern) || !utf8.ValidString(x.Options) {
			return true, e.fail(path, "regular expression is not valid UTF-8")
		}
		e.buf = append(e.buf, tagRegexValue)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(x.Pattern)))
		e.buf = append(e.buf, x.Pattern...)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(x.Options)))
		e.buf = append(e.buf, x.Options...)
	case bson.Decimal128:
		h, l := x.GetBytes()
		e.buf = append(e.buf, tagDecimal)
		e.buf = binary.LittleEndian.AppendUint64(e.buf, h)
		e.buf = binary.LittleEndian.AppendUint64(e.buf, l)
	case bson.MinKey:
		e.buf = append(e.buf, tagMinKey)
	case bson.MaxKey:
		e.buf = append(e.buf, tagMaxKey)
	case bson.Null:
		e.buf = append(e.buf, tagNil)
	case bson.Raw:
		if x == nil {
			e.buf = append(e.buf, tagNil)
			return true, nil
		}
		d, err := rawDocument(x, path)
		if err != nil {
			return true, err
		}
		e.buf = append(e.buf, tagDoc)
		return true, e.withLength(func() error { return e.orderedDoc(d, path, depth, nil) })
	case bson.RawArray:
		if x == nil {
			e.buf = append(e.buf, tagNil)
			return true, nil
		}
		a, err := rawArray(x, path)
		if err != nil {
			return true, err
		}
		return true, e.value(a, path, depth)
	case bson.RawValue:
		u, err := rawValue(x, path)
		if err != nil {
			return true, err
		}
		return true, e.value(u, path, depth)
	default:
		return false, nil
	}
	return true, nil
}

// hooked encodes v by its hook (encodeHookOf(v.Type()) is h, not hookNone).
func (e *encoder) hooked(v reflect.Value, h hook, path string, depth int) error {
	switch h {
	case hookDriver:
		_, err := e.driverValue(v.Interface(), path, depth)
		return err
	case hookByteArray:
		e.buf = append(e.buf, tagBinary)
		e.buf = binary.AppendUvarint(e.buf, uint64(v.Len()))
		for i := range v.Len() {
			e.buf = append(e.buf, byte(v.Index(i).Uint()))
		}
		return nil
	case hookPtrMarshaler, hookPtrValueMarshaler:
		if !v.CanAddr() {
			c := reflect.New(v.Type())
			c.Elem().Set(v)
			v = c.Elem()
		}
		v = v.Addr()
		if h == hookPtrMarshaler {
			h = hookMarshaler
		} else {
			h = hookValueMarshaler
		}
	case hookRefused:
		return e.fail(path, fmt.Sprintf("unsupported value type %s (ttldb cannot store this BSON type)", v.Type()))
	}
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		e.buf = append(e.buf, tagNil)
		return nil
	}
	var u any
	switch h {
	case hookMarshaler:
		b, err := v.Interface().(bson.Marshaler).MarshalBSON()
		if err != nil {
			return e.fail(path, fmt.Sprintf("%s.MarshalBSON: %v", v.Type(), err))
		}
		d, err := rawDocument(b, path)
		if err != nil {
			return err
		}
		u = d
	case hookValueMarshaler:
		typ, b, err := v.Interface().(bson.ValueMarshaler).MarshalBSONValue()
		if err != nil {
			return e.fail(path, fmt.Sprintf("%s.MarshalBSONValue: %v", v.Type(), err))
		}
		if u, err = rawValue(bson.RawValue{Type: bson.Type(typ), Value: b}, path); err != nil {
			return err
		}
	}
	return e.value(u, path, depth)
}

// orderedDoc encodes d as a document in its field order; at the top level
// (depth 0) its _id goes first, or extraID (when not nil) as its _id.
func (e *encoder) orderedDoc(d bson.D, path string, depth int, extraID any) error {
	if depth > MaxDepth {
		return e.fail(path, fmt.Sprintf("nested deeper than %d levels", MaxDepth))
	}
	if len(d) > 1 {
		if dup := duplicateKey(d); dup != "" {
			return e.fail(JoinPath(path, dup), "field appears twice in the document")
		}
	}
	n := len(d)
	if extraID != nil {
		n++
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(n))
	if depth == 0 {
		id, has := extraID, extraID != nil
		if !has {
			for _, f := range d {
				if f.Key == "_id" {
					id, has = f.Value, true
				}
			}
		}
		if has {
			e.name("_id")
			if err := e.idValue(id, depth); err != nil {
				return err
			}
		}
	}
	for _, f := range d {
		if depth == 0 && f.Key == "_id" {
			continue
		}
		fp := JoinPath(path, f.Key)
		if why := e.nameProblem(f.Key); why != "" {
			return e.fail(fp, why)
		}
		e.name(f.Key)
		if err := e.value(f.Value, fp, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// duplicateKey returns a key d holds twice, or "".
func duplicateKey(d bson.D) string {
	if len(d) <= 16 {
		for i := 1; i < len(d); i++ {
			for j := range i {
				if d[i].Key == d[j].Key {
					return d[i].Key
				}
			}
		}
		return ""
	}
	seen := make(map[string]bool, len(d))
	for _, f := range d {
		if seen[f.Key] {
			return f.Key
		}
		seen[f.Key] = true
	}
	return ""
}

// rawDocument returns the content of a BSON document, checked, as a bson.D
// in the driver's default types (nested documents as bson.D).
func rawDocument(b []byte, path string) (bson.D, error) {
	if err := bson.Raw(b).Validate(); err != nil {
		return nil, &DocumentError{Path: path, Reason: "invalid BSON document: " + err.Error()}
	}
	var d bson.D
	if err := bson.Unmarshal(b, &d); err != nil {
		return nil, &DocumentError{Path: path, Reason: "invalid BSON document: " + err.Error()}
	}
	if d == nil {
		d = bson.D{}
	}
	return d, nil
}

// rawArray returns the content of a BSON array, checked.
func rawArray(b bson.RawArray, path string) (bson.A, error) {
	if err := b.Validate(); err != nil {
		return nil, &DocumentError{Path: path, Reason: "invalid BSON array: " + err.Error()}
	}
	vals, err := b.Values()
	if err != nil {
		return nil, &DocumentError{Path: path, Reason: "invalid BSON array: " + err.Error()}
	}
	out := make(bson.A, len(vals))
	for i, rv := range vals {
		if out[i], err = rawValue(rv, JoinPath(path, strconv.Itoa(i))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rawValue returns the content of a BSON value, checked, in the driver's
// default type for it.
func rawValue(rv bson.RawValue, path string) (any, error) {
	if rv.Type == 0 {
		return nil, &DocumentError{Path: path, Reason: "empty bson.RawValue"}
	}
	if err := rv.Validate(); err != nil {
		return nil, &DocumentError{Path: path, Reason: "invalid BSON value: " + err.Error()}
	}
	switch rv.Type {
	case bson.TypeEmbeddedDocument:
		return rawDocument(rv.Value, path)
	case bson.TypeArray:
		return rawArray(bson.RawArray(rv.Value), path)
	}
	var out any
	if err := rv.Unmarshal(&out); err != nil {
		return nil, &DocumentError{Path: path, Reason: "invalid BSON value: " + err.Error()}
	}
	return out, nil
}

// nameProblem says why k cannot be a field name of a document ("" if it
// can). Field names follow MongoDB 5.0 and later: '$'-prefixed and dotted
// names are stored (queries and updates still read a dot as a path), except
// that a name inside an _id may not start with '$'; a name may not be
// empty and must be valid UTF-8. Expressions (EncodeExpr) take any valid
// UTF-8 name.
func (e *encoder) nameProblem(k string) string {
	switch {
	case !utf8.ValidString(k):
		return "field name is not valid UTF-8"
	case e.expr:
		return ""
	case k == "":
		return "empty field name"
	case e.inID > 0 && k[0] == '$':
		return "a field name inside _id may not start with '$'"
	}
	return ""
}

// idValue encodes a document's _id, whose nested documents may not hold
// '$'-prefixed names.
func (e *encoder) idValue(v any, depth int) error {
	e.inID++
	err := e.value(v, "_id", depth+1)
	e.inID--
	return err
}

// hookedDoc encodes a whole document given as a value with a hook (rv's
// type has hook h): a bson.D, a bson.Raw, or a bson.Marshaler. Anything
// else is not a document.
func (e *encoder) hookedDoc(rv reflect.Value, h hook) error {
	var d bson.D
	switch {
	case rv.Type() == bsonDType:
		d = rv.Interface().(bson.D)
		if d == nil {
			return &DocumentError{Reason: "document is nil"}
		}
	case rv.Type() == reflect.TypeFor[bson.Raw]():
		var err error
		if d, err = rawDocument(rv.Interface().(bson.Raw), ""); err != nil {
			return err
		}
	case h == hookMarshaler || h == hookPtrMarshaler:
		if h == hookPtrMarshaler {
			c := reflect.New(rv.Type())
			c.Elem().Set(rv)
			rv = c
		}
		b, err := rv.Interface().(bson.Marshaler).MarshalBSON()
		if err != nil {
			return &DocumentError{Reason: fmt.Sprintf("%s.MarshalBSON: %v", rv.Type(), err)}
		}
		if d, err = rawDocument(b, ""); err != nil {
			return err
		}
	default:
		return &DocumentError{Reason: fmt.Sprintf("a document must be a struct, a map with string keys, a bson.D, a bson.Raw or a pointer to one, not %s", rv.Type())}
	}
	var extra any
	if e.newID != nil {
		has := false
		for _, f := range d {
			has = has || f.Key == "_id"
		}
		if !has {
			e.genID = e.newID()
			extra = e.genID
		}
	}
	return e.orderedDoc(d, "", 0, extra)
}

// bsonValue decodes a value of one of the tags this file adds (its tag
// read) into the type that stands for it in a Document.
func (d *decoder) bsonValue(tag byte) any {
	switch tag {
	case tagTimestamp:
		b := d.bytes(8)
		return bson.Timestamp{T: binary.LittleEndian.Uint32(b), I: binary.LittleEndian.Uint32(b[4:])}
	case tagBinarySub:
		sub := d.bytes(1)[0]
		return bson.Binary{Subtype: sub, Data: append([]byte(nil), d.bytes(int(d.uvarint()))...)}
	case tagRegexValue:
		p := d.str()
		return bson.Regex{Pattern: p, Options: d.str()}
	case tagDecimal:
		b := d.bytes(16)
		return bson.NewDecimal128(binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]))
	case tagMinKey:
		return bson.MinKey{}
	case tagMaxKey:
		return bson.MaxKey{}
	}
	panic("ttldb: internal error: corrupt document encoding")
}

// ExprDocument returns m with the driver's containers anywhere inside it
// (bson.D, bson.M and other maps with string keys and any values, bson.A,
// bson.Raw) converted to map[string]any and []any, so that a filter, an
// update or a projection written with them reads as one written with
// Documents: {a: bson.D{{"$gt", 5}}} is an operator, not a document to
// match. Everything else is left for CloneValue. m itself is returned when
// nothing needs converting (no allocation: the common case). A bson.D with
// a key twice, or an invalid bson.Raw, is an error.
func ExprDocument(m map[string]any) (map[string]any, error) {
	// The top level is walked here rather than by exprMap, so that m
	// itself flows only to the result: escape analysis, which cannot tell
	// the top level from the nested maps exprMap also returns, would
	// otherwise send every caller's filter literal to the heap.
	var out map[string]any
	for k, v := range m {
		nv, changed, err := exprValue(v, 1)
		if err != nil {
			return nil, err
		}
		if changed && out == nil {
			out = make(map[string]any, len(m))
			for k2, v2 := range m {
				out[k2] = v2
			}
		}
		if out != nil {
			out[k] = nv
		}
	}
	if out == nil {
		return m, nil
	}
	return out, nil
}

// ExprValue is ExprDocument for one value.
func ExprValue(v any) (any, error) {
	out, _, err := exprValue(v, 0)
	return out, err
}

func exprMap(m map[string]any, depth int) (map[string]any, bool, error) {
	if depth > MaxDepth {
		return m, false, nil // CloneValue reports the depth
	}
	var out map[string]any
	for k, v := range m {
		nv, changed, err := exprValue(v, depth+1)
		if err != nil {
			return nil, false, err
		}
		if changed && out == nil {
			out = make(map[string]any, len(m))
			for k2, v2 := range m {
				out[k2] = v2
			}
		}
		if out != nil {
			out[k] = nv
		}
	}
	if out == nil {
		return m, false, nil
	}
	return out, true, nil
}

func exprValue(v any, depth int) (any, bool, error) {
	if depth > MaxDepth {
		return v, false, nil
	}
	switch x := v.(type) {
	case nil, string, bool, int, int64, float64, time.Time, ObjectID:
		return v, false, nil
	case map[string]any:
		return exprMap(x, depth)
	case bson.D:
		if x == nil {
			return v, false, nil
		}
		if dup := duplicateKey(x); dup != "" {
			return nil, false, &DocumentError{Reason: fmt.Sprintf("field %q appears twice in a bson.D", dup)}
		}
		m := make(map[string]any, len(x))
		for _, f := range x {
			nv, _, err := exprValue(f.Value, depth+1)
			if err != nil {
				return nil, false, err
			}
			m[f.Key] = nv
		}
		return m, true, nil
	case bson.Raw:
		d, err := rawDocument(x, "")
		if err != nil {
			return nil, false, err
		}
		out, _, err := exprValue(d, depth)
		return out, true, err
	case []any:
		return exprSlice(x, depth)
	case bson.A:
		out, _, err := exprSlice([]any(x), depth)
		return out, true, err
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String && rv.Type().Elem() == anyType {
		m, _ := underlying(v)
		out, _, err := exprMap(m.(map[string]any), depth)
		return out, true, err
	}
	return v, false, nil
}

func exprSlice(s []any, depth int) ([]any, bool, error) {
	var out []any
	for i, e := range s {
		ne, changed, err := exprValue(e, depth+1)
		if err != nil {
			return nil, false, err
		}
		if changed && out == nil {
			out = slices.Clone(s)
		}
		if out != nil {
			out[i] = ne
		}
	}
	if out == nil {
		return s, false, nil
	}
	return out, true, nil
}
