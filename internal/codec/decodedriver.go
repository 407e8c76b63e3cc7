package codec

import (
	"fmt"
	"reflect"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// DecodeOptions adjusts DecodeInto as the driver's BSONOptions adjust its
// decoder. The zero value decodes as the driver does by default.
type DecodeOptions struct {
	// DefaultDocumentM decodes a document into an interface destination
	// as a bson.M instead of a bson.D.
	DefaultDocumentM bool
}

// Destinations of an interface type (any) get what the driver gives them
// by default, not a Document's types: a document is a bson.D (a bson.M
// under DefaultDocumentM), an array a bson.A, a date a bson.DateTime
// (milliseconds), binary data a bson.Binary. Other values keep the type a
// Document holds (strings, numbers of their stored Go kind, ObjectID,
// bool, nil, bson.Timestamp, bson.Regex, bson.Decimal128, bson.MinKey,
// bson.MaxKey).

// driverForm decodes the next tagged value into the type the driver gives
// an interface destination.
func (d *decoder) driverForm() any {
	tag := d.b[d.i]
	switch tag {
	case tagDoc:
		d.i++
		d.uvarint() // length
		return d.driverDoc()
	case tagArray, tagDocArray:
		d.i++
		d.uvarint()
		a := make(bson.A, d.uvarint())
		for i := range a {
			a[i] = d.driverForm()
		}
		return a
	case tagTyped:
		x := d.value()
		elems, _ := ArrayElements(x)
		a := make(bson.A, len(elems))
		for i, e := range elems {
			a[i] = driverScalar(e)
		}
		return a
	}
	return driverScalar(d.value())
}

// driverScalar converts a Document's scalar to the driver's type for it.
func driverScalar(v any) any {
	switch x := v.(type) {
	case []byte:
		return bson.Binary{Data: x}
	case interface{ UnixMilli() int64 }:
		return bson.DateTime(x.UnixMilli())
	}
	return v
}

// driverDoc decodes a document body as the driver's default document type.
func (d *decoder) driverDoc() any {
	n := int(d.uvarint())
	if d.docM {
		m := make(bson.M, n)
		for range n {
			k := internName(d.bytes(int(d.uvarint())))
			m[k] = d.driverForm()
		}
		return m
	}
	doc := make(bson.D, n)
	for i := range doc {
		doc[i].Key = internName(d.bytes(int(d.uvarint())))
		doc[i].Value = d.driverForm()
	}
	return doc
}

// hookedInto decodes the next tagged value (not null) into v, of type t,
// whose decode hook is h.
func hookedInto(d *decoder, h hook, t reflect.Type, v reflect.Value, set bool) error {
	tag := d.b[d.i]
	switch h {
	case hookRefused:
		return &DecodeError{Reason: fmt.Sprintf("cannot decode %s into %s (ttldb does not store this BSON type)", tagName(tag), t)}
	case hookByteArray:
		if tag != tagBinary {
			return mismatch(tag, t)
		}
		d.i++
		b := d.bytes(int(d.uvarint()))
		if len(b) != t.Len() {
			return &DecodeError{Reason: fmt.Sprintf("cannot decode %d bytes of binary data into %s", len(b), t)}
		}
		if set {
			reflect.Copy(v, reflect.ValueOf(b))
		}
		return nil
	case hookUnmarshaler, hookValueUnmarshaler:
		x := d.driverForm()
		target := v
		if !set {
			target = reflect.New(t).Elem()
		}
		if h == hookUnmarshaler {
			if tag != tagDoc {
				return mismatch(tag, t)
			}
			b, err := bson.Marshal(x)
			if err != nil {
				return &DecodeError{Reason: fmt.Sprintf("cannot give %s to %s: %v", tagName(tag), t, err)}
			}
			if err := target.Addr().Interface().(bson.Unmarshaler).UnmarshalBSON(b); err != nil {
				return &DecodeError{Reason: fmt.Sprintf("%s.UnmarshalBSON: %v", t, err)}
			}
			return nil
		}
		typ, b, err := bson.MarshalValue(x)
		if err != nil {
			return &DecodeError{Reason: fmt.Sprintf("cannot give %s to %s: %v", tagName(tag), t, err)}
		}
		if err := target.Addr().Interface().(bson.ValueUnmarshaler).UnmarshalBSONValue(byte(typ), b); err != nil {
			return &DecodeError{Reason: fmt.Sprintf("%s.UnmarshalBSONValue: %v", t, err)}
		}
		return nil
	}
	// hookDriver: one of the bson types.
	var x any
	switch t {
	case bsonDType, bsonMType:
		if tag != tagDoc {
			return mismatch(tag, t)
		}
		d.i++
		d.uvarint()
		saved := d.docM
		d.docM = t == bsonMType
		n := int(d.uvarint())
		if t == bsonMType {
			m := make(bson.M, n)
			d.docM = saved
			for range n {
				k := internName(d.bytes(int(d.uvarint())))
				m[k] = d.driverForm()
			}
			x = m
		} else {
			doc := make(bson.D, n)
			d.docM = saved
			for i := range doc {
				doc[i].Key = internName(d.bytes(int(d.uvarint())))
				doc[i].Value = d.driverForm()
			}
			x = doc
		}
	case bsonAType:
		if tag != tagArray && tag != tagDocArray && tag != tagTyped {
			return mismatch(tag, t)
		}
		x = d.driverForm()
	case reflect.TypeFor[bson.DateTime]():
		if tag != tagTime {
			return mismatch(tag, t)
		}
		d.i++
		x = bson.NewDateTimeFromTime(d.time())
	case reflect.TypeFor[bson.Binary]():
		if tag != tagBinary && tag != tagBinarySub {
			return mismatch(tag, t)
		}
		x = driverScalar(d.value())
	case reflect.TypeFor[bson.Raw](), reflect.TypeFor[bson.RawArray](), reflect.TypeFor[bson.RawValue]():
		raw := d.driverForm()
		typ, b, err := bson.MarshalValue(raw)
		if err != nil {
			return &DecodeError{Reason: fmt.Sprintf("cannot decode %s into %s: %v", tagName(tag), t, err)}
		}
		switch t {
		case reflect.TypeFor[bson.Raw]():
			if typ != bson.TypeEmbeddedDocument {
				return mismatch(tag, t)
			}
			x = bson.Raw(b)
		case reflect.TypeFor[bson.RawArray]():
			if typ != bson.TypeArray {
				return mismatch(tag, t)
			}
			x = bson.RawArray(b)
		default:
			x = bson.RawValue{Type: typ, Value: b}
		}
	default: // Timestamp, Regex, Decimal128, MinKey, MaxKey, Null
		x = d.value()
		if reflect.TypeOf(x) != t {
			return mismatch(tag, t)
		}
	}
	if set {
		v.Set(reflect.ValueOf(x))
	}
	return nil
}
