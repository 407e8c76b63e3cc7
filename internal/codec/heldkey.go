package codec

import "encoding/binary"

// AppendHeldValue appends the encoding of v, exactly as a document holds
// it (its tag, then its payload), when v is a string or an ObjectID, and
// reports whether it did; for any other value dst is returned unchanged.
// Those two kinds have one encoding per value, and two of them are equal
// exactly when their encodings are: the store keys their _ids by these
// bytes, which a document then holds instead of a copy
// (FirstValueOffset). The string is not checked for UTF-8 (a key for a
// lookup need not be valid; a document's string is).
func AppendHeldValue(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case string:
		dst = append(dst, tagString)
		dst = binary.AppendUvarint(dst, uint64(len(x)))
		return append(dst, x...), true
	case ObjectID:
		return append(append(dst, tagObjectID), x[:]...), true
	}
	return dst, false
}

// FirstValueOffset returns the offset in the encoded document b of its
// first field's value (its tag), if that field is named name, else -1. It
// reads only the field count and the first name; b must be a valid
// encoding.
func FirstValueOffset(b []byte, name string) int {
	count, n := binary.Uvarint(b)
	if n <= 0 || count == 0 {
		return -1
	}
	kl, m := binary.Uvarint(b[n:])
	if m <= 0 || kl != uint64(len(name)) {
		return -1
	}
	i := n + m
	if i+len(name) >= len(b) || string(b[i:i+len(name)]) != name {
		return -1
	}
	return i + len(name)
}
