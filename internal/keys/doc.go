// Package keys owns the order-preserving binary key encoding: every value a
// document may hold (and the range bounds MinKey and MaxKey) becomes a byte
// string such that bytes.Compare of two keys gives exactly query.Compare of
// the two values, and two values share a key exactly when they compare
// equal. The _id map is keyed by it and every index B-tree compares it, so
// no tree ever compares interfaces.
//
// A key is a type byte, whose high nibble is the value's BSON type rank
// (query.RankOf) plus one, then the value. Every value's encoding is
// prefix-free (no key is a proper prefix of another value's key), which is
// what makes the rest work: the key of a compound index is the fields' keys
// concatenated and still orders field by field, and a descending field is
// its key with every byte inverted and still terminates where it did.
//
// The layout of each type, in type order:
//
//	MinKey    0x10
//	null      0x20
//	NaN       0x30                    (before every other number, equal to itself)
//	negative  0x31 ^exponent ^mantissa (the positive layout, inverted)
//	zero      0x32                    (0 and -0 of every kind)
//	positive  0x33 exponent mantissa  (2-byte biased binary exponent, 8-byte
//	                                   normalized mantissa: exact for every
//	                                   int64, uint64 and float64; +Inf is
//	                                   exponent 0xFFFF)
//	string    0x40 bytes, 0x00 escaped as 0x00 0xFF, ended by 0x00 0x01
//	document  0x50 (value, field name as a string body)... 0x00, fields in
//	          sorted name order, value before name as query.Compare orders
//	array     0x60 element keys... 0x00
//	binary    0x70 length (a byte count then big-endian bytes) then bytes:
//	          BSON compares binary length first
//	ObjectID  0x80 12 bytes
//	bool      0x90 false, 0x91 true
//	date      0xA0 Unix seconds (sign bit flipped, big-endian) nanoseconds
//	          (4 bytes): dates compare by instant, whatever their location
//	MaxKey    0xB0
//
// No key starts with 0x00 or 0xFF, so 0x00 can end a document or array and
// a byte 0xFF after a prefix bounds every key that starts with it.
//
// There is no decoder: the engine keeps the values it needs beside their
// keys (documents hold their own values, and the planner keeps its bounds'
// values for Explain), so nothing has to be read back from a key.
package keys
