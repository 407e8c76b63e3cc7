package codec

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateAcceptsEncodings(t *testing.T) {
	enc := mustEncode(t, mustClone(t, codecSample()))
	require.NoError(t, Validate(enc))
	require.NoError(t, ValidateExpr(enc), "a document is an expression too")
	require.NoError(t, Validate(mustEncode(t, Document{})))

	deep := Document{}
	for d, i := deep, 0; i < MaxDepth; i++ {
		n := Document{}
		d["a"] = n
		d = n
	}
	require.NoError(t, Validate(mustEncode(t, deep)))

	expr, err := EncodeExpr(Document{"$set": Document{"a.b": 1}, "$or": []any{Document{"s": regexp.MustCompile(`^x(?i)y`)}}, "": 1})
	require.NoError(t, err)
	require.NoError(t, ValidateExpr(expr))
	require.Error(t, Validate(expr), "operators and regexps are not document content")
	out := Decode(expr)
	re := out["$or"].([]any)[0].(map[string]any)["s"].(*regexp.Regexp)
	assert.Equal(t, `^x(?i)y`, re.String())
	_, err = Encode(Document{"s": regexp.MustCompile("x")}, nil)
	require.Error(t, err, "a document holds no regexp")
}

// oneField builds an encoding by hand: a document of one field.
func oneField(name string, value ...byte) []byte {
	b := []byte{1}
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	return append(b, value...)
}

func TestValidateRefuses(t *testing.T) {
	good := mustEncode(t, mustClone(t, codecSample()))
	for i := range len(good) {
		require.Error(t, Validate(good[:i]), "a prefix of %d bytes", i)
	}
	deep := Document{}
	for d, i := deep, 0; i <= MaxDepth; i++ {
		n := Document{}
		d["a"] = n
		d = n
	}
	_, err := Encode(deep, nil)
	require.Error(t, err, "one level more than Encode allows")
	var e encoder
	require.NoError(t, e.document(deep, "", -1, nil)) // written nonetheless
	cases := map[string][]byte{
		"empty":             {},
		"trailing bytes":    append(mustEncode(t, Document{"a": 1}), 0),
		"count too large":   {5, 1, 'a', tagNil},
		"unknown tag":       oneField("a", 200),
		"regexp":            oneField("a", tagRegex, 1, 'x'),
		"empty name":        oneField("", tagNil),
		"$ name in _id":     oneField("_id", tagDoc, 4, 1, 2, '$', 'a', tagNil),
		"binary subtype 0":  oneField("a", tagBinarySub, 0, 0),
		"short timestamp":   oneField("a", tagTimestamp, 1, 2, 3),
		"short decimal":     oneField("a", tagDecimal, 1, 2, 3),
		"bad UTF-8 name":    oneField("\xff", tagNil),
		"bad UTF-8 string":  oneField("a", tagString, 1, 0xff),
		"string too long":   oneField("a", tagString, 9, 'x'),
		"int8 out of range": oneField("a", tagInt8, 0x80, 0x02),
		"uint8 too large":   oneField("a", tagUint8, 0x80, 0x02),
		"nanoseconds":       oneField("a", binary.AppendUvarint([]byte{tagTime, 0}, 1e9)...),
		"bad varint":        oneField("a", tagInt64, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"short ObjectID":    oneField("a", tagObjectID, 1, 2),
		"doc length short":  oneField("a", tagDoc, 1, 1, 1, 'b', tagNil),
		"doc length long":   oneField("a", tagDoc, 5, 0, 0),
		"array count":       oneField("a", tagArray, 2, 5, tagNil),
		"array of docs":     oneField("a", tagDocArray, 2, 1, tagNil),
		"typed kind":        oneField("a", tagTyped, tagUint8, 2, 1, 1),
		"typed bool":        oneField("a", tagTyped, tagTrue, 2, 1, 2),
		"typed length":      oneField("a", tagTyped, tagInt, 3, 1, 2),
		"duplicate field":   {2, 1, 'a', tagNil, 1, 'a', tagTrue},
		"too deep":          e.buf,
	}
	many := []byte{20}
	for i := range 20 {
		many = append(many, 1, 'a'+byte(i%17), tagNil) // 'a' again at 17
	}
	cases["duplicate among many"] = many
	for name, b := range cases {
		err := Validate(b)
		require.Error(t, err, name)
		var de *DocumentError
		require.ErrorAs(t, err, &de, name)
	}
}

// FuzzValidate feeds arbitrary bytes to Validate: it never panics, and
// what it accepts decodes (without panicking) into a document that
// encodes back to an encoding of the same size (field order aside, the
// same bytes) that Validate accepts too.
func FuzzValidate(f *testing.F) {
	f.Add(mustEncode(f, mustClone(f, codecSample())))
	f.Add(mustEncode(f, Document{"a": Document{"b": []any{1, "x"}}}))
	f.Add([]byte{1, 1, 'a', tagTyped, tagString, 3, 1, 1, 'x'})
	f.Add([]byte{2, 1, 'a', tagNil, 1, 'b', tagDocArray, 4, 1, tagDoc, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, expr := range []bool{false, true} {
			check := Validate
			if expr {
				check = ValidateExpr
			}
			if check(b) != nil {
				continue
			}
			d := Decode(b)
			for k := range d {
				_, ok := EncodedField(b, k)
				require.True(t, ok)
			}
			var m map[string]any
			_ = DecodeInto(b, &m)
			var again []byte
			var err error
			if expr {
				again, err = EncodeExpr(d)
			} else {
				again, err = Encode(d, nil)
			}
			require.NoError(t, err)
			require.Len(t, again, len(b))
			require.NoError(t, check(again))
			if len(d) <= 1 {
				require.True(t, bytes.Equal(again, b), "a document of one field encodes one way")
			}
		}
	})
}

// TestValidUTF8MatchesStdlib checks the short-string loop against
// utf8.Valid on both sides of its length bound, ASCII or not, valid or
// not, with the odd byte at every place.
func TestValidUTF8MatchesStdlib(t *testing.T) {
	for n := 0; n <= 40; n++ {
		ascii := bytes.Repeat([]byte{'x'}, n)
		require.True(t, validUTF8(ascii), "ASCII of %d bytes", n)
		for i := range n {
			for _, bad := range [][]byte{{0xff}, {0xc3}, {0xc3, 0xa9}, {0xe2, 0x82, 0xac}, {0xed, 0xa0, 0x80}} {
				s := append(append(append([]byte(nil), ascii[:i]...), bad...), ascii[i:]...)
				require.Equal(t, utf8.Valid(s), validUTF8(s), "%q", s)
			}
		}
	}
}

// BenchmarkValidate validates a document shaped as the bench's (an _id,
// two short strings, a number, a date).
func BenchmarkValidate(b *testing.B) {
	enc, err := Encode(Document{"_id": "key-000000123456", "user": "user-4242", "kind": "login",
		"bytes": 1234, "lastModifiedDate": time.Unix(1_700_000_000, 5)}, nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for range b.N {
		if err := Validate(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIDStringDocFastPath: Validate's shortcut for {_id: string} accepts
// exactly what the checker accepts among encodings of that shape and
// their corruptions (a non-shortest length, a length off by one either
// way, invalid UTF-8, a trailing byte, another value kind, every prefix),
// and the keys Encode writes take it.
func TestIDStringDocFastPath(t *testing.T) {
	walk := func(b []byte) error { c := checker{b: b}; return c.top() }
	var cases [][]byte
	for _, s := range []string{"", "x", "0-12345", "é", string(bytes.Repeat([]byte{'k'}, 200))} {
		good := mustEncode(t, Document{"_id": s})
		require.True(t, isIDStringDoc(good), "%q", s)
		require.NoError(t, Validate(good))
		cases = append(cases, good, append(append([]byte{}, good...), 0))
		for i := range len(good) {
			cases = append(cases, good[:i])
		}
		long := append([]byte("\x01\x03_id"), tagString)
		long = append(long, byte(len(s))|0x80, 0) // the length in two bytes: not the shortest form
		cases = append(cases, append(long, s...))
		for _, d := range []int{-1, 1} {
			b := append([]byte("\x01\x03_id"), tagString)
			b = binary.AppendUvarint(b, uint64(len(s)+d))
			cases = append(cases, append(b, s...))
		}
	}
	cases = append(cases, oneField("_id", tagString, 2, 0xff, 'x'), oneField("_id", tagString, 1, 0xc3), oneField("_id", tagNil), oneField("_ix", tagString, 1, 'x'))
	cases = append(cases, mustEncode(t, Document{"_id": 7}), mustEncode(t, Document{"_id": NewObjectIDFromTime(time.Unix(1, 0))}))
	for _, b := range cases {
		want := walk(b) == nil
		assert.Equal(t, want, Validate(b) == nil, "%x", b)
		if isIDStringDoc(b) {
			assert.True(t, want, "the shortcut accepted %x, which the checker refuses", b)
		}
	}
}
