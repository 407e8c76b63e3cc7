package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"unicode/utf8"
)

// The decoder trusts its input: it reads encodings this process wrote.
// Encodings that come from outside (an op read from disk or from another
// node) are checked first by Validate, a walk that reads every byte of the
// encoding once, allocates nothing for a document of up to 16 fields per
// level (a map per level beyond), never panics, and accepts exactly what
// the encoder can write: the same tags, lengths that add up, valid UTF-8,
// the field-name rules, at most MaxDepth levels, no field twice in a
// document, integers within their Go kind, nanoseconds below 1e9, varints
// in their shortest form. An encoding Validate accepts decodes (Decode,
// DecodeInto, EncodedField…) without panicking, and encodes back to the
// same bytes, field order aside (FuzzValidate).

// Validate checks that b is a document encoding Encode could have written.
// Its error is a *DocumentError (ErrInvalidDocument) saying where the
// encoding is malformed.
func Validate(b []byte) error {
	if isIDStringDoc(b) {
		return nil
	}
	c := checker{b: b}
	return c.top()
}

// isIDStringDoc reports whether b is {_id: s}, s a string, encoded as
// Encode writes it: the key of most ops (a TTL batch's thousands of keys),
// accepted with no walk. It accepts nothing the checker refuses; what it
// does not accept, the checker decides.
func isIDStringDoc(b []byte) bool {
	const head = idDocHead
	if len(b) < len(head)+2 || string(b[:len(head)]) != head || b[len(head)] != tagString {
		return false
	}
	n, k := binary.Uvarint(b[len(head)+1:])
	if k <= 0 || k > 1 && b[len(head)+k] == 0 { // not in its shortest form
		return false
	}
	s := b[len(head)+1+k:]
	return uint64(len(s)) == n && validUTF8(s)
}

// ValidateExpr is Validate for an expression encoding (EncodeExpr): field
// names may start with '$' and contain '.', and regular expressions are
// allowed as values.
func ValidateExpr(b []byte) error {
	c := checker{b: b, expr: true}
	return c.top()
}

type checker struct {
	inID int // _id values being walked (their names may not start with '$')
	b    []byte
	i    int
	expr bool
}

func (c *checker) fail(format string, args ...any) error {
	return &DocumentError{Reason: fmt.Sprintf("malformed encoding at byte %d: %s", c.i, fmt.Sprintf(format, args...))}
}

func (c *checker) top() error {
	if err := c.document(len(c.b), 0); err != nil {
		return err
	}
	if c.i != len(c.b) {
		return c.fail("%d bytes after the document", len(c.b)-c.i)
	}
	return nil
}

// uvarint reads an unsigned varint in its shortest form (the encoder's:
// a longer one ends in a zero byte), so that an encoding has one form.
func (c *checker) uvarint(end int) (uint64, error) {
	v, n := binary.Uvarint(c.b[c.i:end])
	if n <= 0 || n > 1 && c.b[c.i+n-1] == 0 {
		return 0, c.fail("bad unsigned varint")
	}
	c.i += n
	return v, nil
}

func (c *checker) varint(end int) (int64, error) {
	v, n := binary.Varint(c.b[c.i:end])
	if n <= 0 || n > 1 && c.b[c.i+n-1] == 0 {
		return 0, c.fail("bad varint")
	}
	c.i += n
	return v, nil
}

// take returns the next n bytes, which must lie before end.
func (c *checker) take(n uint64, end int) ([]byte, error) {
	if n > uint64(end-c.i) {
		return nil, c.fail("length %d runs past the end", n)
	}
	s := c.b[c.i : c.i+int(n)]
	c.i += int(n)
	return s, nil
}

// length reads a composite value's byte length and returns where it ends.
func (c *checker) length(end int) (int, error) {
	n, err := c.uvarint(end)
	if err != nil {
		return 0, err
	}
	if n > uint64(end-c.i) {
		return 0, c.fail("length %d runs past the end", n)
	}
	return c.i + int(n), nil
}

// count reads an element count, each element taking at least min bytes
// before end: a count cannot make a caller allocate more than the input
// justifies.
func (c *checker) count(end, min int) (int, error) {
	n, err := c.uvarint(end)
	if err != nil {
		return 0, err
	}
	if n > uint64(end-c.i)/uint64(min) {
		return 0, c.fail("count %d exceeds what %d bytes can hold", n, end-c.i)
	}
	return int(n), nil
}

// array checks an array's length, count and elements. An array of
// documents (docs) holds only documents, each at least 2 bytes.
func (c *checker) array(end, depth int, docs bool) error {
	if depth > MaxDepth {
		return c.fail("nested deeper than %d levels", MaxDepth)
	}
	e, err := c.length(end)
	if err != nil {
		return err
	}
	minElem := 1
	if docs {
		minElem = 2
	}
	n, err := c.count(e, minElem)
	if err != nil {
		return err
	}
	for range n {
		if docs && (c.i >= e || c.b[c.i] != tagDoc) {
			return c.fail("an element of an array of documents is not a document")
		}
		if err := c.value(e, depth+1); err != nil {
			return err
		}
	}
	if c.i != e {
		return c.fail("array ends %d bytes before its length", e-c.i)
	}
	return nil
}

func (c *checker) str(end int) ([]byte, error) {
	n, err := c.uvarint(end)
	if err != nil {
		return nil, err
	}
	s, err := c.take(n, end)
	if err != nil {
		return nil, err
	}
	if !validUTF8(s) {
		return nil, c.fail("string is not valid UTF-8")
	}
	return s, nil
}

// validUTF8 is utf8.Valid with a byte loop first for short strings: most
// field names and values are short and ASCII, and for them the loop costs
// less than the call's setup.
func validUTF8(s []byte) bool {
	if len(s) > 32 {
		return utf8.Valid(s)
	}
	for _, b := range s {
		if b >= utf8.RuneSelf {
			return utf8.Valid(s)
		}
	}
	return true
}

// document checks a document body that must end exactly at end.
func (c *checker) document(end, depth int) error {
	if depth > MaxDepth {
		return c.fail("nested deeper than %d levels", MaxDepth)
	}
	least := 3 // a name length, a name byte, a tag
	if c.expr {
		least = 2 // an expression's field name may be empty
	}
	n, err := c.count(end, least)
	if err != nil {
		return err
	}
	var small [16][]byte // names seen, for a document of up to 16 fields
	var seen map[string]bool
	if n > len(small) {
		seen = make(map[string]bool, n)
	}
	for k := range n {
		name, err := c.str(end)
		if err != nil {
			return err
		}
		if err := c.name(name); err != nil {
			return err
		}
		if seen != nil {
			if seen[string(name)] {
				return c.fail("field %q appears twice", name)
			}
			seen[string(name)] = true
		} else {
			for _, p := range small[:k] {
				if string(p) == string(name) {
					return c.fail("field %q appears twice", name)
				}
			}
			small[k] = name
		}
		isID := depth == 0 && string(name) == "_id"
		if isID {
			c.inID++
		}
		err = c.value(end, depth+1)
		if isID {
			c.inID--
		}
		if err != nil {
			return err
		}
	}
	if c.i != end {
		return c.fail("document ends %d bytes before its length", end-c.i)
	}
	return nil
}

// name applies the encoder's field-name rules.
func (c *checker) name(k []byte) error {
	switch {
	case c.expr:
		return nil // any valid UTF-8, as operators and dotted paths need
	case len(k) == 0:
		return c.fail("empty field name")
	case c.inID > 0 && k[0] == '$':
		return c.fail("field name %q inside _id starts with '$'", k)
	}
	return nil
}

func (c *checker) value(end, depth int) error {
	if c.i >= end {
		return c.fail("missing value")
	}
	tag := c.b[c.i]
	c.i++
	switch tag {
	case tagNil, tagFalse, tagTrue:
		return nil
	case tagString:
		_, err := c.str(end)
		return err
	case tagBinary:
		n, err := c.uvarint(end)
		if err == nil {
			_, err = c.take(n, end)
		}
		return err
	case tagTime:
		return c.time(end)
	case tagObjectID:
		_, err := c.take(12, end)
		return err
	case tagDoc:
		e, err := c.length(end)
		if err != nil {
			return err
		}
		return c.document(e, depth)
	case tagArray:
		return c.array(end, depth, false)
	case tagDocArray:
		return c.array(end, depth, true)
	case tagTyped:
		return c.typed(end)
	case tagRegex:
		if !c.expr {
			return c.fail("a regular expression in a document")
		}
		p, err := c.str(end)
		if err != nil {
			return err
		}
		if _, err := regexp.Compile(string(p)); err != nil {
			return c.fail("bad regular expression: %v", err)
		}
		return nil
	case tagTimestamp:
		_, err := c.take(8, end)
		return err
	case tagDecimal:
		_, err := c.take(16, end)
		return err
	case tagMinKey, tagMaxKey:
		return nil
	case tagBinarySub:
		sub, err := c.take(1, end)
		if err != nil {
			return err
		}
		if sub[0] == 0 {
			return c.fail("binary subtype 0 encoded as a subtype")
		}
		n, err := c.uvarint(end)
		if err == nil {
			_, err = c.take(n, end)
		}
		return err
	case tagRegexValue:
		if _, err := c.str(end); err != nil {
			return err
		}
		_, err := c.str(end)
		return err
	}
	return c.number(tag, end)
}

func (c *checker) time(end int) error {
	if _, err := c.varint(end); err != nil {
		return err
	}
	ns, err := c.uvarint(end)
	if err != nil {
		return err
	}
	if ns >= 1e9 {
		return c.fail("nanoseconds %d out of range", ns)
	}
	return nil
}

// number checks a number's payload, which must fit its Go kind.
func (c *checker) number(tag byte, end int) error {
	switch tag {
	case tagInt, tagInt64, tagInt8, tagInt16, tagInt32:
		v, err := c.varint(end)
		if err != nil {
			return err
		}
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		switch tag {
		case tagInt8:
			lo, hi = math.MinInt8, math.MaxInt8
		case tagInt16:
			lo, hi = math.MinInt16, math.MaxInt16
		case tagInt32:
			lo, hi = math.MinInt32, math.MaxInt32
		case tagInt:
			lo, hi = math.MinInt, math.MaxInt
		}
		if v < lo || v > hi {
			return c.fail("integer %d out of range for its kind", v)
		}
		return nil
	case tagUint, tagUint8, tagUint16, tagUint32, tagUint64:
		v, err := c.uvarint(end)
		if err != nil {
			return err
		}
		hi := uint64(math.MaxUint64)
		switch tag {
		case tagUint8:
			hi = math.MaxUint8
		case tagUint16:
			hi = math.MaxUint16
		case tagUint32:
			hi = math.MaxUint32
		case tagUint:
			hi = math.MaxUint
		}
		if v > hi {
			return c.fail("integer %d out of range for its kind", v)
		}
		return nil
	case tagFloat32:
		_, err := c.take(4, end)
		return err
	case tagFloat64:
		_, err := c.take(8, end)
		return err
	}
	return c.fail("unknown tag %d", tag)
}

// typed checks a typed slice: a known element kind and its payloads.
func (c *checker) typed(end int) error {
	if c.i >= end {
		return c.fail("missing element kind")
	}
	et := c.b[c.i]
	c.i++
	if _, ok := typedSliceTypes[et]; !ok {
		return c.fail("unknown element kind %d of a typed array", et)
	}
	e, err := c.length(end)
	if err != nil {
		return err
	}
	n, err := c.count(e, 1)
	if err != nil {
		return err
	}
	for range n {
		switch et {
		case tagTrue:
			b, err := c.take(1, e)
			if err != nil {
				return err
			}
			if b[0] > 1 {
				return c.fail("bool element %d", b[0])
			}
		case tagString:
			if _, err := c.str(e); err != nil {
				return err
			}
		case tagTime:
			if err := c.time(e); err != nil {
				return err
			}
		case tagObjectID:
			if _, err := c.take(12, e); err != nil {
				return err
			}
		default:
			if err := c.number(et, e); err != nil {
				return err
			}
		}
	}
	if c.i != e {
		return c.fail("array ends %d bytes before its length", e-c.i)
	}
	return nil
}
