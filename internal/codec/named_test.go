package codec

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
)

type (
	level    string
	flag     bool
	small    int8
	ratio    float32
	tags     []string
	levels   []level
	octet    uint8
	bytesOf  []octet
	namedDoc map[string]any
	keyName  string
	keyedDoc map[keyName]any
	namedArr []any
	stamps   []time.Time
)

// TestNamedTypesStoredAsTheirKind checks that a named type whose kind a
// document supports is stored as the unnamed type of that kind.
func TestNamedTypesStoredAsTheirKind(t *testing.T) {
	in := Document{
		"dur":    90 * time.Second,
		"level":  level("warn"),
		"flag":   flag(true),
		"small":  small(-3),
		"ratio":  ratio(0.5),
		"tags":   tags{"a", "b"},
		"levels": levels{"x", "y"},
		"nilTag": tags(nil),
		"bytes":  bytesOf{1, 2},
		"smalls": []small{-1},
		"doc":    namedDoc{"a": level("z")},
		"keyed":  keyedDoc{"k": 1},
		"arr":    namedArr{level("q"), time.Millisecond},
		"stamps": stamps{time.Unix(1, 0).UTC()},
	}
	out, err := CloneDocument(in)
	require.NoError(t, err)
	assert.Equal(t, Document{
		"dur":    int64(90 * time.Second),
		"level":  "warn",
		"flag":   true,
		"small":  int8(-3),
		"ratio":  float32(0.5),
		"tags":   []string{"a", "b"},
		"levels": []string{"x", "y"},
		"nilTag": []string{},
		"bytes":  []byte{1, 2},
		"smalls": []int8{-1},
		"doc":    map[string]any{"a": "z"},
		"keyed":  map[string]any{"k": 1},
		"arr":    []any{"q", int64(time.Millisecond)},
		"stamps": []time.Time{time.Unix(1, 0).UTC()},
	}, out)
}

// TestJSONNumberStoredAsTheNumber checks json.Number's exception: the
// number it holds, int64 where it fits, else float64; text that is not a
// JSON number is refused.
func TestJSONNumberStoredAsTheNumber(t *testing.T) {
	for in, want := range map[json.Number]any{
		"5":                    int64(5),
		"-0":                   int64(0),
		"9223372036854775807":  int64(math.MaxInt64),
		"9223372036854775808":  float64(9223372036854775808),
		"1.5":                  1.5,
		"1e3":                  1000.0,
		"-2.5E-1":              -0.25,
		"12345678901234567890": 12345678901234567890.0,
	} {
		out, err := CloneValue(in, "n")
		require.NoError(t, err, in)
		assert.Equal(t, want, out, in)
	}
	for _, bad := range []json.Number{"", "abc", "NaN", "Inf", "+1", "01", "1.", ".5", "0x10", "1e", "1_000", " 1", "1e400"} {
		_, err := CloneValue(Document{"n": bad}, "d")
		require.Error(t, err, bad)
		assert.True(t, errors.Is(err, errs.ErrInvalidDocument), bad)
		var de *DocumentError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "d.n", de.Path, bad)
	}
}

// TestUnsupportedKindsStillRefused checks that named types of kinds a
// document does not hold are refused as before.
func TestUnsupportedKindsStillRefused(t *testing.T) {
	type (
		ptr    *int
		cplx   complex64
		intMap map[string]int
		grid   [][]int
		stamp  time.Time
	)
	one := 1
	for name, v := range map[string]any{
		"uintptr": uintptr(1), "complex": cplx(1), "chan": make(chan int), "func": func() {},
	} {
		_, err := CloneDocument(Document{"v": v})
		require.Error(t, err, name)
		assert.True(t, errors.Is(err, errs.ErrInvalidDocument), name)
	}
	// Values a struct may hold are storable in a Document too, with the
	// same meaning: a pointer is its target, a map of any element kind a
	// document, a slice of slices an array of arrays, a time-like struct
	// a date.
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for name, c := range map[string]struct{ in, want any }{
		"ptr":    {ptr(&one), 1},
		"intMap": {intMap{"a": 1}, map[string]any{"a": 1}},
		"grid":   {grid{{1}}, []any{[]int{1}}},
		"struct": {stamp(at), at},
	} {
		got, err := CloneDocument(Document{"v": c.in})
		require.NoError(t, err, name)
		assert.Equal(t, c.want, got["v"], name)
	}
}

// TestInvalidUTF8Refused checks that field names, strings and the strings
// of typed slices must be valid UTF-8, and that the error names the path.
func TestInvalidUTF8Refused(t *testing.T) {
	bad := "a\xffb"
	for path, doc := range map[string]Document{
		"x.a\xffb": {"x": Document{bad: 1}},
		"s":        {"s": bad},
		"arr.1":    {"arr": []any{"ok", bad}},
		"strs.0":   {"strs": []string{bad}},
		"lv":       {"lv": level(bad)},
		"lvs.1":    {"lvs": levels{"a", level(bad)}},
		"_id":      {"_id": bad},
		"d.0.k":    {"d": []map[string]any{{"k": bad}}},
	} {
		_, err := CloneDocument(doc)
		require.Error(t, err, path)
		assert.True(t, errors.Is(err, errs.ErrInvalidDocument))
		var de *DocumentError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, path, de.Path)
		assert.Contains(t, de.Reason, "UTF-8")
	}
	// Valid multi-byte text is fine.
	_, err := CloneDocument(Document{"clé": "日本語"})
	require.NoError(t, err)
}

// TestStructRulesInsideStructs checks that inside a document given as a
// struct, any value may follow the rules of structs (pointers, maps with
// string keys of any value type, nested slices, structs, types defined
// from time.Time), even behind an interface, while a Document refuses them
// (TestUnsupportedKindsStillRefused).
func TestStructRulesInsideStructs(t *testing.T) {
	type (
		ptr    *int
		intMap map[string]int
		grid   [][]int
		stamp  time.Time
		inner  struct {
			A int
			B string `ttldb:"bee"`
		}
		holder struct {
			V map[string]any `ttldb:"v"`
		}
	)
	one := 1
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	enc, _, err := EncodeValue(holder{V: map[string]any{
		"ptr": ptr(&one), "nilPtr": ptr(nil), "intMap": intMap{"a": 1}, "grid": grid{{1, 2}, {3}},
		"stamp": stamp(at), "inner": inner{A: 1, B: "x"}, "innerPtr": &inner{A: 2},
		"inners": []inner{{A: 3}},
	}}, nil)
	require.NoError(t, err)
	assert.Equal(t, Document{"v": map[string]any{
		"ptr": 1, "nilPtr": nil, "intMap": map[string]any{"a": 1}, "grid": []any{[]int{1, 2}, []int{3}},
		"stamp": at, "inner": map[string]any{"a": 1, "bee": "x"}, "innerPtr": map[string]any{"a": 2, "bee": ""},
		"inners": []map[string]any{{"a": 3, "bee": ""}},
	}}, Decode(enc))
}
