package codec

import (
	"encoding/binary"
	"time"
)

// EncodeExpr encodes an expression: a filter, an update, a $jsonSchema
// validator, an index or collection specification, as ops carry them
// (ttldb.Op). It is Encode with the rules that fit operators: field names
// may start with '$' and contain '.', and a *regexp.Regexp value is kept
// as its pattern (it decodes as a regexp compiled from it). ValidateExpr
// checks such an encoding; Decode reads it.
func EncodeExpr(doc map[string]any) ([]byte, error) {
	if doc == nil {
		return nil, &DocumentError{Reason: "document is nil"}
	}
	e := encodePool.Get().(*encoder)
	e.buf, e.onPath, e.inID, e.expr = e.buf[:0], e.onPath[:0], 0, true
	err := e.document(doc, "", 0, nil)
	e.expr = false
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

// EncodedFieldRaw returns the encoding of a top-level field's value (its
// tag and payload), sharing b's memory, decoding nothing.
func EncodedFieldRaw(b []byte, name string) ([]byte, bool) {
	d := decoder{b: b}
	if !d.findField(name) {
		return nil, false
	}
	start := d.i
	d.skipValue()
	return b[start:d.i], true
}

// AppendIDDoc appends the encoding of the document {_id: v}, where v is the
// _id of the encoded document enc, and reports whether enc has one.
func AppendIDDoc(dst, enc []byte) ([]byte, bool) {
	raw, ok := EncodedFieldRaw(enc, "_id")
	if !ok {
		return dst, false
	}
	return AppendRawField(append(dst, 1), "_id", raw), true
}

// IsIDDocOf reports whether doc is the encoding of {_id: v} where raw is
// the encoding of v (as EncodedFieldRaw returns it): what AppendIDDoc
// would append, compared in place.
func IsIDDocOf(doc, raw []byte) bool {
	return len(doc) == len(idDocHead)+len(raw) && string(doc[:len(idDocHead)]) == idDocHead && string(doc[len(idDocHead):]) == string(raw)
}

// idDocHead starts the encoding of every {_id: v}: one field, its 3-byte
// name, then v's encoding.
const idDocHead = "\x01\x03_id"

// AppendRawField appends one field of a document body: its name and the
// encoding of its value (as EncodedFieldRaw returns it). A document is a
// uvarint field count followed by its fields.
func AppendRawField(dst []byte, name string, raw []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	dst = append(dst, name...)
	return append(dst, raw...)
}

// RawFields calls fn with each top-level field of an encoded document: its
// name and the encoding of its value, both sharing b's memory.
func RawFields(b []byte, fn func(name, raw []byte)) {
	d := decoder{b: b}
	n := int(d.uvarint())
	for range n {
		kl := int(d.uvarint())
		k := d.b[d.i : d.i+kl]
		d.i += kl
		start := d.i
		d.skipValue()
		fn(k, b[start:d.i])
	}
}

// AppendTimeValue appends the encoding of a date value (tag and payload).
func AppendTimeValue(dst []byte, t time.Time) []byte {
	dst = append(dst, tagTime)
	dst = binary.AppendVarint(dst, t.Unix())
	return binary.AppendUvarint(dst, uint64(t.Nanosecond()))
}

// AppendInt64Value appends the encoding of an int64 value (tag and
// payload).
func AppendInt64Value(dst []byte, v int64) []byte {
	return binary.AppendVarint(append(dst, tagInt64), v)
}

// AppendInt32Value appends the encoding of an int32 value.
func AppendInt32Value(dst []byte, v int32) []byte {
	return binary.AppendVarint(append(dst, tagInt32), int64(v))
}
