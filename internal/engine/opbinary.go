package engine

import (
	"encoding/binary"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ttldb/ttldb/internal/codec"
)

// The binary form of an Op (docs/FORMAT.md describes it in full):
//
//	version   byte (OpVersion)
//	seq       uvarint
//	kind      byte
//	coll      string
//	time      instant
//	docs      list
//	updates   list (entries may be empty: none kept)
//	keys      list
//	before    list (entries may be empty)
//	index     string
//	cutoff    instant
//	flags     byte (bit 0: Expired; bit 1: in a transaction (version 5
//	          on); the other bits 0)
//	spec      bytes (empty: none)
//	versions  uvarint count, then count uvarints (0 or len(docs))
//	txn       with flags bit 1 only: bytes (the lsid, 16), varint (txnNumber)
//
// string and bytes are a uvarint length and the bytes; a list is a
// uvarint count and that many bytes values; an instant is a byte 0 for
// the zero time.Time, else a uvarint of nanoseconds (< 1e9) * 2 + 1 and a
// varint of Unix seconds. The documents are in ttldb's document encoding;
// Updates and Spec in its expression encoding.

// AppendBinary appends the op's binary form to b (encoding.BinaryAppender)
// and returns the extended buffer. It fails only for an op whose Kind is
// unknown or whose Time or Cutoff is not representable, with
// ErrInvalidOp; it does not check the documents (UnmarshalBinary does).
// Cost: one pass over the op, no allocation beyond b's growth.
func (op Op) AppendBinary(b []byte) ([]byte, error) {
	if op.Kind < OpInsert || op.Kind > maxOpKind {
		return b, fmt.Errorf("%w: unknown kind %d", ErrInvalidOp, uint8(op.Kind))
	}
	b = append(b, OpVersion)
	b = binary.AppendUvarint(b, op.Seq)
	b = append(b, byte(op.Kind))
	b = appendBytes(b, []byte(op.Collection))
	b = appendInstant(b, op.Time)
	b = appendList(b, op.Docs)
	b = appendList(b, op.Updates)
	b = appendList(b, op.Keys)
	b = appendList(b, op.Before)
	b = appendBytes(b, []byte(op.Index))
	b = appendInstant(b, op.Cutoff)
	var flags byte
	if op.Expired {
		flags |= 1
	}
	if !op.Txn.IsZero() {
		flags |= 2
	}
	b = append(b, flags)
	b = appendBytes(b, op.Spec)
	b = binary.AppendUvarint(b, uint64(len(op.Versions)))
	for _, v := range op.Versions {
		b = binary.AppendUvarint(b, v)
	}
	if !op.Txn.IsZero() {
		b = appendBytes(b, op.Txn.LSID[:])
		b = binary.AppendVarint(b, op.Txn.Number)
	}
	return b, nil
}

// MarshalBinary returns the op's binary form (encoding.BinaryMarshaler),
// in one allocation of its exact size. See AppendBinary.
func (op Op) MarshalBinary() ([]byte, error) {
	return op.AppendBinary(make([]byte, 0, op.binarySize()))
}

// binarySize returns the length of the op's binary form (an upper bound
// for the varints).
func (op Op) binarySize() int {
	n := 1 + binary.MaxVarintLen64 + 1 + 2*binary.MaxVarintLen64 + 1 + 2*(binary.MaxVarintLen64+binary.MaxVarintLen32)
	n += binary.MaxVarintLen64 + len(op.Collection) + binary.MaxVarintLen64 + len(op.Index) + binary.MaxVarintLen64 + len(op.Spec)
	n += binary.MaxVarintLen64*(1+len(op.Versions)) + 1 + 16 + binary.MaxVarintLen64
	for _, l := range [][]RawDocument{op.Docs, op.Updates, op.Keys, op.Before} {
		n += binary.MaxVarintLen64
		for _, d := range l {
			n += binary.MaxVarintLen64 + len(d)
		}
	}
	return n
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendInstant(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(t.Nanosecond())<<1|1)
	return binary.AppendVarint(b, t.Unix())
}

func appendList(b []byte, l []RawDocument) []byte {
	b = binary.AppendUvarint(b, uint64(len(l)))
	for _, d := range l {
		b = appendBytes(b, d)
	}
	return b
}

// UnmarshalBinary sets op from a binary form MarshalBinary wrote
// (encoding.BinaryUnmarshaler). A form of another OpVersion is
// ErrOpVersion (naming both versions); anything malformed is ErrInvalidOp
// naming the field: a length or count past the end of data, trailing
// bytes, an unknown kind, a collection or index name that is not UTF-8,
// nanoseconds out of range, a document (Docs, Keys, Before) or
// expression (Updates, Spec) whose encoding is malformed (checked in full:
// a document read through an op never panics a reader), a Docs or Keys
// entry that is empty. On error op is unchanged.
//
// Bounds: every length and count is checked against the bytes left, so
// decoding allocates O(len(data)) whatever the input: data is copied once
// (the op's documents share that copy, not data) and the lists take a
// header per entry.
func (op *Op) UnmarshalBinary(data []byte) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty binary form", ErrInvalidOp)
	}
	if data[0] < MinOpVersion || data[0] > OpVersion {
		return fmt.Errorf("%w: the binary form is of version %d; this version of ttldb reads versions %d to %d", ErrOpVersion, data[0], MinOpVersion, OpVersion)
	}
	r := opReader{b: append([]byte(nil), data...), i: 1}
	var out Op
	out.Seq = r.uvarint("seq")
	out.Kind = OpKind(r.byte("kind"))
	if r.err == nil && (out.Kind < OpInsert || out.Kind > maxOpKind) {
		r.fail("kind", "unknown kind %d", uint8(out.Kind))
	}
	out.Collection = r.name("collection")
	out.Time = r.instant("time")
	out.Docs = r.list("docs", codec.Validate, false)
	out.Updates = r.list("updates", codec.ValidateExpr, true)
	out.Keys = r.list("keys", codec.Validate, false)
	out.Before = r.list("before", codec.Validate, true)
	out.Index = r.name("index")
	out.Cutoff = r.instant("cutoff")
	flags := r.byte("flags")
	known := byte(1)
	if data[0] >= 5 {
		known |= 2
	}
	if r.err == nil && flags&^known != 0 {
		r.fail("flags", "unknown flags %#x", flags)
	}
	out.Expired = flags&1 != 0
	if spec := r.bytes("spec"); len(spec) > 0 {
		if err := codec.ValidateExpr(spec); err != nil && r.err == nil {
			r.err = fmt.Errorf("%w: spec: %w", ErrInvalidOp, err)
		}
		out.Spec = spec
	}
	if nv := r.uvarint("versions"); r.err == nil && nv > 0 {
		if nv != uint64(len(out.Docs)) {
			r.fail("versions", "%d versions for %d documents", nv, len(out.Docs))
		}
		for i := uint64(0); i < nv && r.err == nil; i++ {
			out.Versions = append(out.Versions, r.uvarint("versions"))
		}
	}
	if flags&2 != 0 {
		lsid := r.bytes("lsid")
		if r.err == nil && len(lsid) != 16 {
			r.fail("lsid", "%d bytes, not 16", len(lsid))
		}
		copy(out.Txn.LSID[:], lsid)
		out.Txn.Number = r.varint("txnNumber")
		if r.err == nil && out.Txn.IsZero() {
			r.fail("txn", "a transaction's op with a zero TxnID")
		}
	}
	if r.err == nil && r.i != len(r.b) {
		r.fail("end", "%d bytes after the op", len(r.b)-r.i)
	}
	if r.err != nil {
		return r.err
	}
	*op = out
	return nil
}

// opReader reads a binary form, remembering the first error.
type opReader struct {
	b   []byte
	i   int
	err error
}

func (r *opReader) fail(field, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: binary form, %s at byte %d: %s", ErrInvalidOp, field, r.i, fmt.Sprintf(format, args...))
	}
}

func (r *opReader) byte(field string) byte {
	if r.err != nil {
		return 0
	}
	if r.i >= len(r.b) {
		r.fail(field, "unexpected end")
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *opReader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 {
		r.fail(field, "bad unsigned varint")
		return 0
	}
	r.i += n
	return v
}

func (r *opReader) varint(field string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.i:])
	if n <= 0 {
		r.fail(field, "bad varint")
		return 0
	}
	r.i += n
	return v
}

// bytes reads a length and that many bytes (sharing r.b, the copy).
func (r *opReader) bytes(field string) []byte {
	n := r.uvarint(field)
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.i) {
		r.fail(field, "length %d past the end", n)
		return nil
	}
	s := r.b[r.i : r.i+int(n) : r.i+int(n)]
	r.i += int(n)
	return s
}

func (r *opReader) name(field string) string {
	s := r.bytes(field)
	if r.err == nil && !utf8.Valid(s) {
		r.fail(field, "not valid UTF-8")
	}
	return string(s)
}

func (r *opReader) instant(field string) time.Time {
	ns := r.uvarint(field)
	if r.err != nil || ns == 0 {
		return time.Time{}
	}
	if ns&1 == 0 || ns>>1 >= 1e9 {
		r.fail(field, "bad nanoseconds %d", ns)
		return time.Time{}
	}
	sec := r.varint(field)
	if r.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(ns>>1)).UTC()
}

// list reads a list of documents, each checked by check; empty entries are
// nil, allowed only when emptyOK.
func (r *opReader) list(field string, check func([]byte) error, emptyOK bool) []RawDocument {
	n := r.uvarint(field)
	if r.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(r.b)-r.i) { // each entry takes at least its length byte
		r.fail(field, "count %d past the end", n)
		return nil
	}
	out := make([]RawDocument, n)
	for k := range out {
		d := r.bytes(field)
		if r.err != nil {
			return nil
		}
		if len(d) == 0 {
			if !emptyOK {
				r.fail(field, "entry %d is empty", k)
				return nil
			}
			continue
		}
		if err := check(d); err != nil {
			r.err = fmt.Errorf("%w: %s entry %d: %w", ErrInvalidOp, field, k, err)
			return nil
		}
		out[k] = d
	}
	return out
}
