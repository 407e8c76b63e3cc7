package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// driverOID is a 12-byte array type with an IsZero method, not named
// ObjectID: stored as binary data, as the driver stores it.
type driverOID [12]byte

func (id driverOID) IsZero() bool { return id == driverOID{} }

type (
	Base struct {
		Created time.Time
		Kind    string
	}
	inline struct {
		X int `bson:"x"`
		Y int `bson:"y,omitempty"`
	}
	tagged struct {
		TTLDB      int    `ttldb:"t"`
		BSON       int    `bson:"b"`
		Both       int    `ttldb:"winner" bson:"loser"`
		EmptyName  int    `ttldb:",omitempty"`
		UserID     string // default: lowercased entirely
		Skipped    int    `ttldb:"-"`
		BSONSkip   int    `bson:"-"`
		unexported int    //nolint:unused // skipped
		JSONOnly   int    `json:"jsononly_json"` // the json tag is not read
		Ptr        *int   `ttldb:"ptr"`
		NilPtr     *int   `ttldb:"nilptr"`
		OmitPtr    *int   `ttldb:"omitptr,omitempty"`
		Level      level  `ttldb:"level"`
		Dur        time.Duration
		Ratio      float32
		Small      int8
		Flag       bool
		Bytes      []byte
		Tags       []string
		NilTags    []string
		Counts     map[string]int
		NilMap     map[string]int
		Attrs      map[string]any
		Any        any
		AnyStruct  any
		Nested     inline
		NestedPtr  *inline
		Items      []inline
		ItemPtrs   []*inline
		Grid       [][]int
		Stamps     []time.Time
		OID        ObjectID
		DriverOID  driverOID
		Base                          // embedded, not inline: a nested document "base"
		Inlined    inline             `ttldb:",inline"`
		InlinePtr  *struct{ Z int }   `bson:",inline"`
		Extra      map[string]float64 `ttldb:",inline"`
	}
	omitter struct {
		S    string         `ttldb:"s,omitempty"`
		I    int            `ttldb:"i,omitempty"`
		F    float64        `ttldb:"f,omitempty"`
		B    bool           `ttldb:"b,omitempty"`
		P    *int           `ttldb:"p,omitempty"`
		Sl   []int          `ttldb:"sl,omitempty"`
		M    map[string]int `ttldb:"m,omitempty"`
		T    time.Time      `ttldb:"t,omitempty"`
		O    ObjectID       `ttldb:"o,omitempty"`
		D    driverOID      `ttldb:"d,omitempty"`
		St   inline         `ttldb:"st,omitempty"` // a struct is never empty
		A    any            `ttldb:"a,omitempty"`
		Keep int            `ttldb:"keep"`
	}
)

var at = time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)

func sampleTagged() tagged {
	one, two := 1, 2
	return tagged{
		TTLDB: 1, BSON: 2, Both: 3, EmptyName: 5, UserID: "u", Skipped: 6, BSONSkip: 7,
		unexported: 8, JSONOnly: 9, Ptr: &one, OmitPtr: &two, Level: "warn", Dur: time.Second,
		Ratio: 0.5, Small: -3, Flag: true, Bytes: []byte{1, 2}, Tags: []string{"a", "b"},
		Counts: map[string]int{"k": 1}, Attrs: map[string]any{"n": int64(1)}, Any: "s",
		AnyStruct: inline{X: 1}, Nested: inline{X: 2, Y: 3}, NestedPtr: &inline{X: 4},
		Items: []inline{{X: 5}}, ItemPtrs: []*inline{{X: 6}, nil}, Grid: [][]int{{1}, {2, 3}},
		Stamps: []time.Time{at}, OID: ObjectID{1}, DriverOID: driverOID{2},
		Base: Base{Created: at, Kind: "k"}, Inlined: inline{X: 10, Y: 11},
		InlinePtr: &struct{ Z int }{Z: 12}, Extra: map[string]float64{"extra": 1.5},
	}
}

// TestStructTagRules checks each naming and layout rule: ttldb tag, bson
// tag, bare tag, the lowercased default, "-", unexported fields, pointers,
// slices, maps, nested and embedded structs, inline structs and maps.
func TestStructTagRules(t *testing.T) {
	enc, _, err := EncodeValue(sampleTagged(), nil)
	require.NoError(t, err)
	assert.Equal(t, Document{
		"t": 1, "b": 2, "winner": 3, "emptyname": 5, "userid": "u", "jsononly": 9,
		"ptr": 1, "nilptr": nil, "omitptr": 2, "level": "warn", "dur": int64(time.Second),
		"ratio": float32(0.5), "small": int8(-3), "flag": true, "bytes": []byte{1, 2},
		"tags": []string{"a", "b"}, "niltags": nil, "counts": map[string]any{"k": 1}, "nilmap": nil,
		"attrs": map[string]any{"n": int64(1)}, "any": "s", "anystruct": map[string]any{"x": 1},
		"nested": map[string]any{"x": 2, "y": 3}, "nestedptr": map[string]any{"x": 4},
		"items":    []map[string]any{{"x": 5}},
		"itemptrs": []any{map[string]any{"x": 6}, nil},
		"grid":     []any{[]int{1}, []int{2, 3}}, "stamps": []time.Time{at},
		"oid": ObjectID{1}, "driveroid": []byte{2, 11: 0}, // a [12]byte type not named ObjectID is binary, as the driver stores it
		"base": map[string]any{"created": at, "kind": "k"},
		"x":    10, "y": 11, "z": 12, "extra": 1.5,
	}, Decode(enc))
}

// TestStructBareTag checks the MongoDB driver's fallback: a tag without a
// colon is the bson tag (built with reflect, since go vet flags the
// syntax in source).
func TestStructBareTag(t *testing.T) {
	typ := reflect.StructOf([]reflect.StructField{
		{Name: "Bare", Type: reflect.TypeFor[int](), Tag: "bare,omitempty"},
		{Name: "Plain", Type: reflect.TypeFor[int](), Tag: `json:"j"`},
	})
	v := reflect.New(typ).Elem()
	v.Field(1).SetInt(2)
	enc, _, err := EncodeValue(v.Interface(), nil)
	require.NoError(t, err)
	assert.Equal(t, Document{"plain": 2}, Decode(enc))
	v.Field(0).SetInt(1)
	enc, _, err = EncodeValue(v.Interface(), nil)
	require.NoError(t, err)
	assert.Equal(t, Document{"bare": 1, "plain": 2}, Decode(enc))
}

// TestStructOmitEmpty checks omitempty: the driver's notion of empty (an
// IsZero method first; a struct is never empty).
func TestStructOmitEmpty(t *testing.T) {
	enc, _, err := EncodeValue(omitter{}, nil)
	require.NoError(t, err)
	assert.Equal(t, Document{"st": map[string]any{"x": 0}, "keep": 0}, Decode(enc))

	zero := 0
	full := omitter{S: "s", I: 1, F: 1, B: true, P: &zero, Sl: []int{0}, M: map[string]int{"a": 0},
		T: at, O: ObjectID{1}, D: driverOID{1}, A: 0}
	enc, _, err = EncodeValue(&full, nil)
	require.NoError(t, err)
	assert.Len(t, Decode(enc), 13)

	// An empty but non-nil slice or map is empty too; a time in another
	// location is empty when its instant is zero.
	enc, _, err = EncodeValue(omitter{Sl: []int{}, M: map[string]int{}, T: time.Time{}.In(time.FixedZone("x", 3600))}, nil)
	require.NoError(t, err)
	assert.Equal(t, Document{"st": map[string]any{"x": 0}, "keep": 0}, Decode(enc))
}

// canonical rewrites an encoding with every document's fields sorted by
// name (a map has no field order; lengths do not change), so two
// encodings of the same document compare equal as bytes.
func canonical(t *testing.T, enc []byte) []byte {
	t.Helper()
	d := &decoder{b: enc}
	out := canonicalDoc(d)
	require.Equal(t, len(enc), d.i)
	return out
}

func canonicalDoc(d *decoder) []byte {
	start := d.i
	n := int(d.uvarint())
	head := slices.Clone(d.b[start:d.i])
	type field struct {
		name string
		raw  []byte
	}
	fields := make([]field, n)
	for i := range fields {
		ns := d.i
		name := d.str()
		nameBytes := slices.Clone(d.b[ns:d.i])
		fields[i] = field{name, append(nameBytes, canonicalValue(d)...)}
	}
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.name, b.name) })
	for _, f := range fields {
		head = append(head, f.raw...)
	}
	return head
}

func canonicalValue(d *decoder) []byte {
	start := d.i
	tag := d.b[d.i]
	switch tag {
	case tagDoc:
		d.i++
		d.uvarint()
		hdr := slices.Clone(d.b[start:d.i])
		return append(hdr, canonicalDoc(d)...)
	case tagArray, tagDocArray:
		d.i++
		d.uvarint()
		n := int(d.uvarint())
		out := slices.Clone(d.b[start:d.i])
		for range n {
			out = append(out, canonicalValue(d)...)
		}
		return out
	}
	d.skipValue()
	return slices.Clone(d.b[start:d.i])
}

// TestStructStoresAsItsDocument is the differential test at the encoding
// level: a struct and its Document form (the same values, as a map) have
// the same encoding, byte for byte up to field order.
func TestStructStoresAsItsDocument(t *testing.T) {
	type doc struct {
		ID     ObjectID          `bson:"_id"`
		Name   string            `bson:"name"`
		Age    int               `bson:"age"`
		Score  float64           `bson:"score"`
		Seen   time.Time         `bson:"seen"`
		Tags   []string          `bson:"tags"`
		Nums   []int64           `bson:"nums"`
		Attrs  map[string]any    `bson:"attrs"`
		List   []any             `bson:"list"`
		Sub    inline            `bson:"sub"`
		Subs   []inline          `bson:"subs"`
		Bin    []byte            `bson:"bin"`
		Ptr    *string           `bson:"ptr"`
		Counts map[string]uint16 `bson:"counts"`
	}
	s := "p"
	v := doc{ID: ObjectID{9}, Name: "ada", Age: 36, Score: 1.5, Seen: at, Tags: []string{"x"},
		Nums: []int64{1, -2}, Attrs: map[string]any{"a": 1, "b": []any{"c"}}, List: []any{1, "two", nil},
		Sub: inline{X: 1, Y: 2}, Subs: []inline{{X: 3}, {X: 4, Y: 5}}, Bin: []byte{0xff}, Ptr: &s,
		Counts: map[string]uint16{"k": 7}}
	m := map[string]any{"_id": ObjectID{9}, "name": "ada", "age": 36, "score": 1.5, "seen": at,
		"tags": []string{"x"}, "nums": []int64{1, -2}, "attrs": map[string]any{"a": 1, "b": []any{"c"}},
		"list": []any{1, "two", nil}, "sub": map[string]any{"x": 1, "y": 2},
		"subs": []map[string]any{{"x": 3, "y": 0}, {"x": 4, "y": 5}}, "bin": []byte{0xff}, "ptr": "p",
		"counts": map[string]any{"k": uint16(7)}}
	// inline's Y has omitempty: {X: 3} has no y.
	delete(m["subs"].([]map[string]any)[0], "y")
	delete(m["sub"].(map[string]any), "nothing")
	se, _, err := EncodeValue(v, nil)
	require.NoError(t, err)
	me, err := Encode(m, nil)
	require.NoError(t, err)
	assert.Equal(t, canonical(t, me), canonical(t, se))
	// And a pointer to the struct encodes the same.
	pe, _, err := EncodeValue(&v, nil)
	require.NoError(t, err)
	assert.Equal(t, canonical(t, se), canonical(t, pe))
}

// TestStructRoundTrip checks struct -> encoding -> DecodeInto the same
// type gives back the original (dates in UTC).
func TestStructRoundTrip(t *testing.T) {
	in := sampleTagged()
	enc, _, err := EncodeValue(in, nil)
	require.NoError(t, err)
	var out tagged
	require.NoError(t, DecodeInto(enc, &out))
	want := in
	want.Skipped, want.BSONSkip, want.unexported = 0, 0, 0 // not stored
	want.AnyStruct = bson.D{{Key: "x", Value: 1}}          // an interface gets the driver's form
	assert.Equal(t, want, out)

	// A time in another location comes back in UTC, the same instant.
	loc := time.FixedZone("plus2", 2*3600)
	enc, _, err = EncodeValue(Base{Created: at.In(loc)}, nil)
	require.NoError(t, err)
	var b Base
	require.NoError(t, DecodeInto(enc, &b))
	assert.Equal(t, at, b.Created)
	assert.Equal(t, time.UTC, b.Created.Location())
}

// TestDecodeIntoMap checks decoding into a Document, a named map and an
// interface, and that the caller's map is reused (cleared, refilled).
func TestDecodeIntoMap(t *testing.T) {
	enc, err := Encode(Document{"a": 1, "b": "x"}, nil)
	require.NoError(t, err)
	m := Document{"stale": true}
	p := reflect.ValueOf(m).Pointer()
	require.NoError(t, DecodeInto(enc, &m))
	assert.Equal(t, Document{"a": 1, "b": "x"}, m)
	assert.Equal(t, p, reflect.ValueOf(m).Pointer(), "the caller's map is reused")

	var nilMap Document
	require.NoError(t, DecodeInto(enc, &nilMap))
	assert.Equal(t, Document{"a": 1, "b": "x"}, nilMap)

	var anyV any
	enc, _, err = EncodeValue(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: "x"}}, nil)
	require.NoError(t, err)
	require.NoError(t, DecodeInto(enc, &anyV))
	assert.Equal(t, bson.D{{Key: "a", Value: 1}, {Key: "b", Value: "x"}}, anyV, "an interface gets the driver's form")
	require.NoError(t, DecodeIntoWith(enc, &anyV, DecodeOptions{DefaultDocumentM: true}))
	assert.Equal(t, bson.M{"a": 1, "b": "x"}, anyV, "or bson.M under DefaultDocumentM")

	type strs map[string]string
	enc, err = Encode(Document{"a": "1"}, nil)
	require.NoError(t, err)
	var sm strs
	require.NoError(t, DecodeInto(enc, &sm))
	assert.Equal(t, strs{"a": "1"}, sm)
}

// TestDecodeNumberConversions checks that numbers convert across kinds
// when the value fits exactly, and are refused otherwise.
func TestDecodeNumberConversions(t *testing.T) {
	type (
		i8  struct{ V int8 }
		i64 struct{ V int64 }
		u8  struct{ V uint8 }
		u64 struct{ V uint64 }
		f32 struct{ V float32 }
		f64 struct{ V float64 }
		ip  struct{ V *int }
	)
	five := 5
	ok := []struct {
		stored any
		dst    any
		want   any
	}{
		{int64(5), &i8{}, &i8{5}},
		{int64(-128), &i8{}, &i8{-128}},
		{5.0, &i64{}, &i64{5}},
		{float32(-2), &i64{}, &i64{-2}},
		{uint64(math.MaxInt64), &i64{}, &i64{math.MaxInt64}},
		{int(255), &u8{}, &u8{255}},
		{uint64(math.MaxUint64), &u64{}, &u64{math.MaxUint64}},
		{int64(1 << 24), &f32{}, &f32{1 << 24}},
		{0.5, &f32{}, &f32{0.5}},
		{int64(1 << 53), &f64{}, &f64{1 << 53}},
		{float32(1.25), &f64{}, &f64{1.25}},
		{int32(5), &ip{}, &ip{&five}},
		{nil, &i64{V: 9}, &i64{}},
	}
	for _, c := range ok {
		enc, err := Encode(Document{"v": c.stored}, nil)
		require.NoError(t, err)
		require.NoError(t, DecodeInto(enc, c.dst), "%T %v", c.stored, c.stored)
		assert.Equal(t, c.want, c.dst, "%T %v", c.stored, c.stored)
	}
	bad := []struct {
		stored any
		dst    any
		reason string
	}{
		{5.5, &i64{}, "not an integer"},
		{int64(300), &i8{}, "overflows"},
		{int64(-1), &u64{}, "negative"},
		{-1.0, &u8{}, "overflows"},
		{uint64(math.MaxUint64), &i64{}, "overflows"},
		{1e300, &i64{}, "overflows"},
		{int64(1<<53 + 1), &f64{}, "no exact float64"},
		{int64(1<<24 + 1), &f32{}, "float32"},
		{0.1, &f32{}, "float32"},
		{"5", &i64{}, "cannot decode a string into int64"},
		{true, &f64{}, "cannot decode a bool"},
		{int64(1), &struct{ V string }{}, "cannot decode a number into string"},
		{at, &struct{ V int64 }{}, "cannot decode a date"},
		{Document{"a": 1}, &struct{ V []int }{}, "cannot decode a document"},
		{[]any{1}, &struct{ V map[string]int }{}, "cannot decode an array"},
		{"x", &struct{ V ObjectID }{}, "cannot decode a string"},
		{[]any{1, "x"}, &struct{ V []int }{}, `cannot decode a string into int`},
		{Document{"a": "x"}, &struct{ V struct{ A int } }{}, "cannot decode a string into int"},
		{"x", &struct{ V error }{}, "into error"},
	}
	for _, c := range bad {
		enc, err := Encode(Document{"v": c.stored}, nil)
		require.NoError(t, err)
		before := reflect.ValueOf(c.dst).Elem().Interface()
		err = DecodeInto(enc, c.dst)
		require.Error(t, err, "%T %v", c.stored, c.stored)
		assert.True(t, errors.Is(err, errs.ErrDecode))
		var de *DecodeError
		require.ErrorAs(t, err, &de)
		assert.True(t, strings.HasPrefix(de.Path, "v"), de.Path)
		assert.Contains(t, err.Error(), c.reason)
		assert.Equal(t, before, reflect.ValueOf(c.dst).Elem().Interface(), "unchanged on error")
	}
}

// TestDecodeErrorPathAndNoPartialWrite checks a deep mismatch is named by
// its full path and leaves the destination whole.
func TestDecodeErrorPathAndNoPartialWrite(t *testing.T) {
	enc, err := Encode(Document{"a": "new", "subs": []any{Document{"x": 1}, Document{"x": "bad"}}}, nil)
	require.NoError(t, err)
	type dst struct {
		A    string   `ttldb:"a"`
		Subs []inline `ttldb:"subs"`
	}
	v := dst{A: "old"}
	err = DecodeInto(enc, &v)
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "subs.1.x", de.Path)
	assert.Equal(t, dst{A: "old"}, v)
}

// TestDecodeIntoRules checks unknown fields are ignored, missing fields
// zeroed (the struct equals the document), nested pointers allocated, the
// inline map filled, and bad destinations refused.
func TestDecodeIntoRules(t *testing.T) {
	enc, err := Encode(Document{"x": 1, "unknown": "u", "n": Document{"x": 2}}, nil)
	require.NoError(t, err)
	type withPtr struct {
		X int     `ttldb:"x"`
		Y int     `ttldb:"y"`
		N *inline `ttldb:"n"`
	}
	v := withPtr{Y: 7, N: &inline{X: 9, Y: 9}}
	old := v.N
	require.NoError(t, DecodeInto(enc, &v))
	assert.Equal(t, withPtr{X: 1, N: &inline{X: 2}}, v)
	assert.Equal(t, inline{X: 9, Y: 9}, *old, "the old pointee is not written")

	type withMap struct {
		X    int            `ttldb:"x"`
		Rest map[string]any `ttldb:",inline"`
	}
	var wm withMap
	require.NoError(t, DecodeInto(enc, &wm))
	// The inline map's values are decoded as the driver decodes into any:
	// a nested document is a bson.D.
	assert.Equal(t, withMap{X: 1, Rest: map[string]any{"unknown": "u", "n": bson.D{{Key: "x", Value: 2}}}}, wm)

	for _, dst := range []any{nil, withPtr{}, (*withPtr)(nil), new(int), new([]int), new(time.Time), new(map[int]any)} {
		err := DecodeInto(enc, dst)
		require.Error(t, err, "%T", dst)
		assert.True(t, errors.Is(err, errs.ErrDecode), "%T", dst)
	}
}

// TestStructEncodeRefusals checks every refusal is ErrInvalidDocument
// naming the field.
func TestStructEncodeRefusals(t *testing.T) {
	type node struct {
		Next *node `ttldb:"next"`
	}
	loop := &node{}
	loop.Next = loop
	type mapNode struct {
		M map[string]any `ttldb:"m"`
	}
	cyc := map[string]any{}
	cyc["self"] = cyc
	cases := []struct {
		doc  any
		path string
		why  string
	}{
		{struct{ C chan int }{}, "c", "unsupported type chan int"},
		{struct{ F func() }{}, "f", "unsupported type func()"},
		{struct{ Z complex128 }{}, "z", "unsupported type complex128"},
		{struct{ M map[int]string }{}, "m", "keys must be strings"},
		{struct{ A [3]int }{}, "a", "unsupported type [3]int"},
		{struct{ S []chan int }{}, "s", "unsupported type"},
		{struct{ I any }{I: make(chan int)}, "i", "unsupported value type chan int"},
		{struct{ I any }{I: []any{1, func() {}}}, "i.1", "unsupported value type"},
		{struct {
			O struct{ C chan int } `ttldb:"o"`
		}{}, "o.c", "unsupported type chan int"},
		{loop, "next.next", "cyclic"},
		{mapNode{M: cyc}, "m.self", "cyclic"},
		{struct {
			ID struct {
				R string `bson:"$ref"`
			} `bson:"_id"`
		}{}, "_id.$ref", "may not start with '$'"},
		{struct {
			A int `ttldb:"x"`
			B int `bson:"x"`
		}{}, "x", "used by two fields (A and B)"},
		{struct {
			A int
			I inline `ttldb:",inline"`
			X int    `ttldb:"x"`
		}{}, "x", "used by two fields (I.X and X)"},
		{struct {
			N int `ttldb:",inline"`
		}{}, "n", "inline needs"},
		{struct {
			X    int            `ttldb:"x"`
			Rest map[string]int `ttldb:",inline"`
		}{Rest: map[string]int{"x": 1}}, "x", "the inline map holds a field"},
		{struct{ S string }{S: "a\xff"}, "s", "UTF-8"},
		{struct{ S []string }{S: []string{"ok", "a\xff"}}, "s.1", "UTF-8"},
		{(*inline)(nil), "", "document is nil"},
		{42, "", "a document must be"},
		{at, "", "a document must be"},
		{map[int]any{}, "", "keys must be strings"},
	}
	for _, c := range cases {
		_, _, err := EncodeValue(c.doc, nil)
		require.Error(t, err, "%#v", c.doc)
		assert.True(t, errors.Is(err, errs.ErrInvalidDocument))
		var de *DocumentError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, c.path, de.Path, "%T", c.doc)
		assert.Contains(t, de.Reason, c.why, "%T", c.doc)
	}
	// Deep nesting through pointers is bounded as documents are.
	type deep struct {
		D *deep `ttldb:"d"`
	}
	var top *deep
	for range MaxDepth + 5 {
		top = &deep{D: top}
	}
	_, _, err := EncodeValue(top, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nested deeper")
}

// TestStructGeneratedID checks when EncodeValue asks for an _id: no _id
// field, one left out by omitempty, or a nil one; a zero ObjectID without
// omitempty is stored as it is (the MongoDB driver's rule).
func TestStructGeneratedID(t *testing.T) {
	gen := ObjectID{0xaa}
	newID := func() any { return gen }
	type noID struct{ N int }
	type omitID struct {
		ID ObjectID `bson:"_id,omitempty"`
	}
	type ptrID struct {
		ID *ObjectID `bson:"_id"`
	}
	type anyID struct {
		ID any `ttldb:"_id"`
	}
	type plainID struct {
		ID ObjectID `bson:"_id"`
	}
	type strID struct {
		ID string `bson:"_id"`
	}
	for _, c := range []struct {
		doc  any
		gen  bool
		want any
	}{
		{noID{N: 1}, true, gen},
		{&noID{N: 1}, true, gen},
		{omitID{}, true, gen},
		{ptrID{}, true, gen},
		{anyID{}, true, gen},
		{map[string]int{"n": 1}, true, gen},
		{omitID{ID: ObjectID{1}}, false, ObjectID{1}},
		{plainID{}, false, ObjectID{}},
		{strID{ID: "k"}, false, "k"},
		{map[string]int{"_id": 3}, false, 3},
		{struct {
			Rest map[string]any `ttldb:",inline"`
		}{Rest: map[string]any{"_id": "r"}}, false, "r"},
	} {
		enc, genID, err := EncodeValue(c.doc, newID)
		require.NoError(t, err, "%T", c.doc)
		if c.gen {
			assert.Equal(t, gen, genID, "%T", c.doc)
		} else {
			assert.Nil(t, genID, "%T", c.doc)
		}
		id, ok := EncodedField(enc, "_id")
		require.True(t, ok)
		assert.Equal(t, c.want, id, "%T", c.doc)
	}
}

// TestDecodeIntoAllocs checks decoding into a reused struct allocates
// nothing for its scalar fields, and one allocation per string.
func TestDecodeIntoAllocs(t *testing.T) {
	type scalars struct {
		ID    ObjectID  `bson:"_id"`
		N     int       `bson:"n"`
		G     int32     `bson:"g"`
		F     float64   `bson:"f"`
		B     bool      `bson:"b"`
		T     time.Time `bson:"t"`
		Level uint8     `bson:"level"`
	}
	enc, _, err := EncodeValue(scalars{ID: ObjectID{1}, N: 5, G: 6, F: 1.5, B: true, T: at, Level: 3}, nil)
	require.NoError(t, err)
	var v scalars
	allocs := testing.AllocsPerRun(100, func() {
		if err := DecodeInto(enc, &v); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 0.0, allocs)
	assert.Equal(t, 5, v.N)

	type withStrings struct {
		N int    `bson:"n"`
		A string `bson:"a"`
		B string `bson:"b"`
	}
	enc, _, err = EncodeValue(withStrings{N: 1, A: "alpha", B: "beta"}, nil)
	require.NoError(t, err)
	var w withStrings
	allocs = testing.AllocsPerRun(100, func() {
		if err := DecodeInto(enc, &w); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 2.0, allocs)
}

// TestStructPlanCached checks a type's plan is computed once.
func TestStructPlanCached(t *testing.T) {
	type once struct{ A int }
	p1 := planOf(reflect.TypeFor[once]())
	p2 := planOf(reflect.TypeFor[once]())
	assert.Same(t, p1, p2)
}

// TestEncodeCountOver127Fields checks the field count of a document with
// more fields than one varint byte holds (docEnd's shifting path).
func TestEncodeCountOver127Fields(t *testing.T) {
	m := map[string]int{}
	for i := range 200 {
		m[string(rune('a'+i%26))+strings.Repeat("x", i)] = i
	}
	type wide struct {
		Rest map[string]int `ttldb:",inline"`
		Z    int            `ttldb:"z"`
	}
	enc, _, err := EncodeValue(wide{Rest: m, Z: 1}, nil)
	require.NoError(t, err)
	n, _ := binary.Uvarint(enc)
	assert.Equal(t, uint64(201), n)
	var back wide
	require.NoError(t, DecodeInto(enc, &back))
	assert.Equal(t, wide{Rest: m, Z: 1}, back)
	assert.True(t, bytes.Equal(canonical(t, enc), canonical(t, enc)))
}
