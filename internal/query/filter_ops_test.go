package query

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

type D = codec.Document

func TestFilterRegex(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"$regex matches", D{"a": D{"$regex": "^ab"}}, D{"a": "abc"}, true},
		{"$regex no match", D{"a": D{"$regex": "^ab"}}, D{"a": "cab"}, false},
		{"$regex is unanchored", D{"a": D{"$regex": "b"}}, D{"a": "abc"}, true},
		{"$regex case-sensitive by default", D{"a": D{"$regex": "^AB"}}, D{"a": "abc"}, false},
		{"option i", D{"a": D{"$regex": "^AB", "$options": "i"}}, D{"a": "abc"}, true},
		{"no option m: ^ only at start", D{"a": D{"$regex": "^b"}}, D{"a": "a\nb"}, false},
		{"option m: ^ at line start", D{"a": D{"$regex": "^b", "$options": "m"}}, D{"a": "a\nb"}, true},
		{"no option s: dot stops at newline", D{"a": D{"$regex": "a.b"}}, D{"a": "a\nb"}, false},
		{"option s: dot matches newline", D{"a": D{"$regex": "a.b", "$options": "s"}}, D{"a": "a\nb"}, true},
		{"option x strips space and comments", D{"a": D{"$regex": "^a b # the rest\n c$", "$options": "x"}}, D{"a": "abc"}, true},
		{"option x keeps escaped space", D{"a": D{"$regex": `^a\ b$`, "$options": "x"}}, D{"a": "a b"}, true},
		{"option x keeps space in a class", D{"a": D{"$regex": `^a[ ]b$`, "$options": "x"}}, D{"a": "a b"}, true},
		{"option x keeps # in a class", D{"a": D{"$regex": `^[#]$`, "$options": "x"}}, D{"a": "#"}, true},
		{"without x, space is literal", D{"a": D{"$regex": "^a b$"}}, D{"a": "ab"}, false},
		{"several options", D{"a": D{"$regex": "^B . c$", "$options": "ixs"}}, D{"a": "b\nC"}, true},
		{"*regexp.Regexp in $regex", D{"a": D{"$regex": regexp.MustCompile("^x")}}, D{"a": "xy"}, true},
		{"*regexp.Regexp in $regex with $options", D{"a": D{"$regex": regexp.MustCompile("^x"), "$options": "i"}}, D{"a": "XY"}, true},
		{"*regexp.Regexp as value", D{"a": regexp.MustCompile("^x")}, D{"a": "xy"}, true},
		{"*regexp.Regexp as value no match", D{"a": regexp.MustCompile("^x")}, D{"a": "yx"}, false},
		{"element of a string array", D{"tags": D{"$regex": "^b"}}, D{"tags": []string{"a", "bc"}}, true},
		{"element of a mixed array", D{"tags": D{"$regex": "^b"}}, D{"tags": []any{1, "bc"}}, true},
		{"no string element", D{"tags": D{"$regex": "^b"}}, D{"tags": []any{1, "a"}}, false},
		{"number is not a string", D{"a": D{"$regex": "1"}}, D{"a": 1}, false},
		{"missing field", D{"a": D{"$regex": ""}}, D{}, false},
		{"null field", D{"a": D{"$regex": ""}}, D{"a": nil}, false},
		{"dotted path", D{"a.b": D{"$regex": "z$"}}, D{"a": []any{D{"b": "xz"}}}, true},
		{"$in with a pattern", D{"a": D{"$in": []any{1, regexp.MustCompile("^x")}}}, D{"a": "xa"}, true},
		{"$in with a pattern, value matches", D{"a": D{"$in": []any{1, regexp.MustCompile("^x")}}}, D{"a": 1}, true},
		{"$in with a pattern, neither", D{"a": D{"$in": []any{1, regexp.MustCompile("^x")}}}, D{"a": "ax"}, false},
		{"$nin with a pattern", D{"a": D{"$nin": []any{regexp.MustCompile("^x")}}}, D{"a": "xa"}, false},
		{"$nin with a pattern, other", D{"a": D{"$nin": []any{regexp.MustCompile("^x")}}}, D{"a": "ax"}, true},
		{"$not pattern", D{"a": D{"$not": regexp.MustCompile("^x")}}, D{"a": "ax"}, true},
		{"$not pattern excludes", D{"a": D{"$not": regexp.MustCompile("^x")}}, D{"a": "xa"}, false},
		{"$not $regex", D{"a": D{"$not": D{"$regex": "^X", "$options": "i"}}}, D{"a": "xa"}, false},
		{"$not $regex missing field", D{"a": D{"$not": D{"$regex": "x"}}}, D{}, true},
		{"$regex with $ne", D{"a": D{"$regex": "^x", "$ne": "xy"}}, D{"a": "xz"}, true},
		{"unicode", D{"a": D{"$regex": "^é.$", "$options": "i"}}, D{"a": "Éa"}, true},
	})
}

// TestFilterRegexIsLinear matches the classic catastrophic-backtracking
// pattern against a long non-matching input: RE2 answers in linear time,
// a backtracking engine would not finish.
func TestFilterRegexIsLinear(t *testing.T) {
	f, err := CompileFilter(D{"a": D{"$regex": "^(a+)+$"}})
	require.NoError(t, err)
	assert.False(t, f.Matches(D{"a": strings.Repeat("a", 10000) + "b"}))
	assert.True(t, f.Matches(D{"a": strings.Repeat("a", 10000)}))
}

func TestFilterRegexErrors(t *testing.T) {
	tests := []struct {
		name   string
		filter D
		want   []string
	}{
		{"lookahead", D{"a": D{"$regex": "a(?=b)"}}, []string{"$regex", `"a"`, "lookahead", "(?=", "PCRE-only"}},
		{"negative lookahead", D{"a": D{"$regex": "a(?!b)"}}, []string{"lookahead", "(?!"}},
		{"lookbehind", D{"a": D{"$regex": "(?<=a)b"}}, []string{"lookbehind", "(?<="}},
		{"negative lookbehind", D{"a": D{"$regex": "(?<!a)b"}}, []string{"lookbehind", "(?<!"}},
		{"backreference", D{"a": D{"$regex": `(a)\1`}}, []string{"backreferences", `\\1`, "PCRE-only"}},
		{"named backreference", D{"a": D{"$regex": `(?<x>a)\k<x>`}}, []string{"backreferences", `\\k`}},
		{"atomic group", D{"a": D{"$regex": `(?>a)`}}, []string{"atomic"}},
		{"possessive", D{"a": D{"$regex": `a++`}}, []string{"possessive", "++"}},
		{"recursion", D{"a": D{"$regex": `(?R)`}}, []string{"recursion"}},
		{"conditional", D{"a": D{"$regex": `(a)?(?(1)b|c)`}}, []string{"conditionals"}},
		{"lookahead in an implicit pattern", D{"a": D{"$in": []any{regexp.MustCompile(`a`), "x"}, "$regex": "(?=x)"}}, []string{"lookahead"}},
		{"invalid RE2", D{"a": D{"$regex": "a("}}, []string{"$regex", "RE2", "missing closing )"}},
		{"pattern not a string", D{"a": D{"$regex": 5}}, []string{"$regex", "string"}},
		{"nil regexp", D{"a": D{"$regex": (*regexp.Regexp)(nil)}}, []string{"$regex", "nil"}},
		{"unknown option", D{"a": D{"$regex": "a", "$options": "iu"}}, []string{"$options", `'u'`, "i, m, s, x"}},
		{"options not a string", D{"a": D{"$regex": "a", "$options": 1}}, []string{"$options", "string"}},
		{"$options without $regex", D{"a": D{"$options": "i"}}, []string{"$options", "$regex"}},
		{"$options in $not without $regex", D{"a": D{"$not": D{"$options": "i", "$gt": 1}}}, []string{"$options"}},
		{"$eq of a regexp is not a pattern", D{"a": D{"$eq": regexp.MustCompile("x")}}, []string{"$eq"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := CompileFilter(tc.filter)
			require.Error(t, err)
			assert.Nil(t, f)
			assert.True(t, errors.Is(err, errs.ErrInvalidFilter), "%v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	// A lookaround-looking sequence that is literal is not refused.
	for _, ok := range []string{`[(?=]`, `\(?=a`, `\\\(?!`, `a\++`, `[+]+`, `\0`} {
		_, err := CompileFilter(D{"a": D{"$regex": ok}})
		assert.NoError(t, err, ok)
	}
}

func TestStripExtended(t *testing.T) {
	for in, want := range map[string]string{
		"a b\tc\nd":            "abcd",
		"a # comment\nb":       "ab",
		"a # to the end":       "a",
		`a\ b\#c`:              `a\ b\#c`,
		"[ #]x":                "[ #]x",
		"[] ]x":                "[] ]x",
		"[^] ]x y":             "[^] ]xy",
		`[\] ] x`:              `[\] ]x`,
		"(?i) a":               "(?i)a",
		"":                     "",
		"trailing backslash\\": "trailingbackslash\\",
	} {
		assert.Equal(t, want, stripExtended(in), "%q", in)
	}
}

func TestFilterElemMatch(t *testing.T) {
	scores := D{"results": []any{D{"product": "abc", "score": 10}, D{"product": "xyz", "score": 5}}}
	runFilterCases(t, []filterCase{
		{"query form: one element meets all", D{"results": D{"$elemMatch": D{"product": "xyz", "score": D{"$gte": 5}}}}, scores, true},
		{"query form: conditions met by different elements", D{"results": D{"$elemMatch": D{"product": "xyz", "score": D{"$gte": 8}}}}, scores, false},
		{"without $elemMatch, different elements suffice", D{"results.product": "xyz", "results.score": D{"$gte": 8}}, scores, true},
		{"query form with $or", D{"results": D{"$elemMatch": D{"$or": []any{D{"score": 1}, D{"product": "abc"}}}}}, scores, true},
		{"query form skips non-documents", D{"a": D{"$elemMatch": D{"b": 1}}}, D{"a": []any{1, "x"}}, false},
		{"query form, empty: any document element", D{"a": D{"$elemMatch": D{}}}, D{"a": []any{1, D{}}}, true},
		{"query form, empty: no document element", D{"a": D{"$elemMatch": D{}}}, D{"a": []any{1}}, false},
		{"operator form: one element in range", D{"a": D{"$elemMatch": D{"$gte": 80, "$lt": 85}}}, D{"a": []any{82, 90}}, true},
		{"operator form: no single element in range", D{"a": D{"$elemMatch": D{"$gte": 80, "$lt": 85}}}, D{"a": []any{79, 90}}, false},
		{"without $elemMatch, two elements may meet the range", D{"a": D{"$gte": 80, "$lt": 85}}, D{"a": []any{79, 90}}, true},
		{"operator form on a typed slice", D{"a": D{"$elemMatch": D{"$gt": 1}}}, D{"a": []int{0, 2}}, true},
		{"operator form: nested array element tested whole", D{"a": D{"$elemMatch": D{"$eq": 2}}}, D{"a": []any{[]any{2}}}, false},
		{"operator form: nested array equality", D{"a": D{"$elemMatch": D{"$eq": []any{2}}}}, D{"a": []any{[]any{2}}}, true},
		{"operator form with $regex", D{"a": D{"$elemMatch": D{"$regex": "^b", "$ne": "bad"}}}, D{"a": []any{"bad", "bit"}}, true},
		{"operator form with $regex, only the excluded", D{"a": D{"$elemMatch": D{"$regex": "^b", "$ne": "bad"}}}, D{"a": []any{"bad", "x"}}, false},
		{"operator form with $not", D{"a": D{"$elemMatch": D{"$not": D{"$gt": 2}}}}, D{"a": []any{3, 1}}, true},
		{"operator form with $in", D{"a": D{"$elemMatch": D{"$in": []any{7, 8}}}}, D{"a": []any{1, 8}}, true},
		{"operator form with $type", D{"a": D{"$elemMatch": D{"$type": "string"}}}, D{"a": []any{1, "x"}}, true},
		{"operator form with $size on inner arrays", D{"a": D{"$elemMatch": D{"$size": 2}}}, D{"a": []any{[]any{1}, []any{1, 2}}}, true},
		{"nested $elemMatch", D{"a": D{"$elemMatch": D{"b": D{"$elemMatch": D{"$gt": 5}}}}}, D{"a": []any{D{"b": []any{1, 6}}}}, true},
		{"not an array", D{"a": D{"$elemMatch": D{"$gt": 1}}}, D{"a": 5}, false},
		{"document is not an array", D{"a": D{"$elemMatch": D{"b": 1}}}, D{"a": D{"b": 1}}, false},
		{"missing", D{"a": D{"$elemMatch": D{"$exists": true}}}, D{}, false},
		{"empty array", D{"a": D{"$elemMatch": D{"$exists": true}}}, D{"a": []any{}}, false},
		{"dotted path through array of documents", D{"a.b": D{"$elemMatch": D{"$gt": 5}}}, D{"a": []any{D{"b": []any{1}}, D{"b": []any{9}}}}, true},
		{"$not $elemMatch", D{"a": D{"$not": D{"$elemMatch": D{"$gt": 5}}}}, D{"a": []any{1, 2}}, true},
	})
}

func TestFilterSize(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"two elements", D{"a": D{"$size": 2}}, D{"a": []any{1, "x"}}, true},
		{"three elements", D{"a": D{"$size": 2}}, D{"a": []any{1, 2, 3}}, false},
		{"typed slice", D{"a": D{"$size": 2}}, D{"a": []string{"x", "y"}}, true},
		{"empty array", D{"a": D{"$size": 0}}, D{"a": []any{}}, true},
		{"missing is not size 0", D{"a": D{"$size": 0}}, D{}, false},
		{"null is not size 0", D{"a": D{"$size": 0}}, D{"a": nil}, false},
		{"scalar", D{"a": D{"$size": 1}}, D{"a": 1}, false},
		{"binary is not an array", D{"a": D{"$size": 1}}, D{"a": []byte{1}}, false},
		{"document is not an array", D{"a": D{"$size": 1}}, D{"a": D{"x": 1}}, false},
		{"inner arrays are not expanded", D{"a": D{"$size": 2}}, D{"a": []any{[]any{1, 2}}}, false},
		{"outer array counted", D{"a": D{"$size": 1}}, D{"a": []any{[]any{1, 2}}}, true},
		{"float size", D{"a": D{"$size": 2.0}}, D{"a": []any{1, 2}}, true},
		{"int64 size", D{"a": D{"$size": int64(1)}}, D{"a": []any{1}}, true},
		{"through an array of documents", D{"a.b": D{"$size": 1}}, D{"a": []any{D{"b": []any{1, 2}}, D{"b": []any{3}}}}, true},
		{"$not $size", D{"a": D{"$not": D{"$size": 1}}}, D{}, true},
	})
}

func TestFilterAll(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"all present", D{"tags": D{"$all": []any{"a", "b"}}}, D{"tags": []any{"b", "c", "a"}}, true},
		{"one missing", D{"tags": D{"$all": []any{"a", "b"}}}, D{"tags": []any{"a", "c"}}, false},
		{"scalar field, one value", D{"tags": D{"$all": []any{"a"}}}, D{"tags": "a"}, true},
		{"scalar field, two values", D{"tags": D{"$all": []any{"a", "b"}}}, D{"tags": "a"}, false},
		{"empty $all matches nothing", D{"tags": D{"$all": []any{}}}, D{"tags": []any{"a"}}, false},
		{"typed slice", D{"tags": D{"$all": []string{"x", "y"}}}, D{"tags": []string{"y", "x"}}, true},
		{"numbers across kinds", D{"a": D{"$all": []any{1, 2.0}}}, D{"a": []int64{2, 1}}, true},
		{"nested array value", D{"a": D{"$all": []any{[]any{1, 2}}}}, D{"a": []any{1, 2}}, true},
		{"nested array element", D{"a": D{"$all": []any{[]any{1, 2}}}}, D{"a": []any{[]any{1, 2}, 3}}, true},
		{"with a pattern", D{"tags": D{"$all": []any{regexp.MustCompile("^a"), "c"}}}, D{"tags": []any{"ab", "c"}}, true},
		{"with a pattern, no match", D{"tags": D{"$all": []any{regexp.MustCompile("^a"), "c"}}}, D{"tags": []any{"ba", "c"}}, false},
		{"with null, missing field", D{"a": D{"$all": []any{nil}}}, D{}, true},
		{"$elemMatch elements", D{"q": D{"$all": []any{
			D{"$elemMatch": D{"size": "M", "num": D{"$gt": 50}}},
			D{"$elemMatch": D{"num": 100, "color": "green"}},
		}}}, D{"q": []any{D{"size": "M", "num": 100, "color": "green"}}}, true},
		{"$elemMatch elements, one fails", D{"q": D{"$all": []any{
			D{"$elemMatch": D{"size": "M", "num": D{"$gt": 50}}},
			D{"$elemMatch": D{"num": 100, "color": "blue"}},
		}}}, D{"q": []any{D{"size": "M", "num": 100, "color": "green"}}}, false},
		{"$not $all", D{"tags": D{"$not": D{"$all": []any{"a", "b"}}}}, D{"tags": []any{"a"}}, true},
	})
}

func TestFilterType(t *testing.T) {
	oid := codec.ObjectID{1}
	runFilterCases(t, []filterCase{
		{"double", D{"a": D{"$type": "double"}}, D{"a": 1.5}, true},
		{"float32 is double", D{"a": D{"$type": "double"}}, D{"a": float32(1)}, true},
		{"int is not double", D{"a": D{"$type": "double"}}, D{"a": 1}, false},
		{"string", D{"a": D{"$type": "string"}}, D{"a": "x"}, true},
		{"object", D{"a": D{"$type": "object"}}, D{"a": D{"x": 1}}, true},
		{"array", D{"a": D{"$type": "array"}}, D{"a": []any{1}}, true},
		{"empty array is array", D{"a": D{"$type": "array"}}, D{"a": []any{}}, true},
		{"typed slice is array", D{"a": D{"$type": "array"}}, D{"a": []int{1}}, true},
		{"scalar is not array", D{"a": D{"$type": "array"}}, D{"a": 1}, false},
		{"binData", D{"a": D{"$type": "binData"}}, D{"a": []byte{1}}, true},
		{"binData is not array", D{"a": D{"$type": "array"}}, D{"a": []byte{1}}, false},
		{"objectId", D{"a": D{"$type": "objectId"}}, D{"a": oid}, true},
		{"bool", D{"a": D{"$type": "bool"}}, D{"a": false}, true},
		{"date", D{"a": D{"$type": "date"}}, D{"a": filterT0}, true},
		{"null", D{"a": D{"$type": "null"}}, D{"a": nil}, true},
		{"missing is not null", D{"a": D{"$type": "null"}}, D{}, false},
		{"int32 is int", D{"a": D{"$type": "int"}}, D{"a": int32(1)}, true},
		{"small int is int", D{"a": D{"$type": "int"}}, D{"a": 7}, true},
		{"large int is long", D{"a": D{"$type": "long"}}, D{"a": math.MaxInt32 + 1}, true},
		{"large int is not int", D{"a": D{"$type": "int"}}, D{"a": math.MaxInt32 + 1}, false},
		{"int64 is long", D{"a": D{"$type": "long"}}, D{"a": int64(1)}, true},
		{"int64 is not int", D{"a": D{"$type": "int"}}, D{"a": int64(1)}, false},
		{"uint8 is int", D{"a": D{"$type": "int"}}, D{"a": uint8(1)}, true},
		{"uint64 is long", D{"a": D{"$type": "long"}}, D{"a": uint64(1)}, true},
		{"number: int", D{"a": D{"$type": "number"}}, D{"a": 1}, true},
		{"number: double", D{"a": D{"$type": "number"}}, D{"a": math.NaN()}, true},
		{"number: long", D{"a": D{"$type": "number"}}, D{"a": int64(1)}, true},
		{"number: not a string", D{"a": D{"$type": "number"}}, D{"a": "1"}, false},
		{"decimal matches nothing", D{"a": D{"$type": "decimal"}}, D{"a": 1.5}, false},
		{"code 2 is string", D{"a": D{"$type": 2}}, D{"a": "x"}, true},
		{"code 2.0 is string", D{"a": D{"$type": 2.0}}, D{"a": "x"}, true},
		{"code 16 is int", D{"a": D{"$type": int64(16)}}, D{"a": 1}, true},
		{"code 10 is null", D{"a": D{"$type": 10}}, D{"a": nil}, true},
		{"code 4 is array", D{"a": D{"$type": 4}}, D{"a": []any{}}, true},
		{"array element's type", D{"a": D{"$type": "string"}}, D{"a": []any{1, "x"}}, true},
		{"no array element of the type", D{"a": D{"$type": "string"}}, D{"a": []any{1, 2}}, false},
		{"list of types", D{"a": D{"$type": []any{"string", "null"}}}, D{"a": nil}, true},
		{"list of names and codes", D{"a": D{"$type": []any{"bool", 1}}}, D{"a": 2.5}, true},
		{"list, none", D{"a": D{"$type": []any{"bool", 1}}}, D{"a": 2}, false},
		{"dotted path", D{"a.b": D{"$type": "date"}}, D{"a": []any{D{"b": 1}, D{"b": filterT0}}}, true},
		{"$not $type", D{"a": D{"$not": D{"$type": "string"}}}, D{"a": 1}, true},
	})
}

func TestFilterMod(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"remainder 0", D{"a": D{"$mod": []any{4, 0}}}, D{"a": 12}, true},
		{"remainder 1", D{"a": D{"$mod": []any{4, 0}}}, D{"a": 5}, false},
		{"zero", D{"a": D{"$mod": []any{4, 0}}}, D{"a": 0}, true},
		{"negative dividend, negative remainder", D{"a": D{"$mod": []any{4, -1}}}, D{"a": -5}, true},
		{"negative dividend, positive remainder", D{"a": D{"$mod": []any{4, 1}}}, D{"a": -5}, false},
		{"negative divisor", D{"a": D{"$mod": []any{-4, 1}}}, D{"a": 5}, true},
		{"float field truncated", D{"a": D{"$mod": []any{4, 1}}}, D{"a": 5.9}, true},
		{"negative float field truncated toward zero", D{"a": D{"$mod": []any{4, -1}}}, D{"a": -5.9}, true},
		{"float divisor truncated", D{"a": D{"$mod": []any{4.7, 1}}}, D{"a": 5}, true},
		{"float remainder truncated", D{"a": D{"$mod": []any{4, 1.9}}}, D{"a": 5}, true},
		{"NaN field never matches", D{"a": D{"$mod": []any{1, 0}}}, D{"a": math.NaN()}, false},
		{"infinite field never matches", D{"a": D{"$mod": []any{1, 0}}}, D{"a": math.Inf(1)}, false},
		{"huge uint64", D{"a": D{"$mod": []any{10, 5}}}, D{"a": uint64(math.MaxUint64)}, true},
		{"huge float", D{"a": D{"$mod": []any{2, 0}}}, D{"a": 1e30}, true},
		{"min int64 by -1", D{"a": D{"$mod": []any{-1, 0}}}, D{"a": int64(math.MinInt64)}, true},
		{"string never matches", D{"a": D{"$mod": []any{1, 0}}}, D{"a": "4"}, false},
		{"missing never matches", D{"a": D{"$mod": []any{1, 0}}}, D{}, false},
		{"array element", D{"a": D{"$mod": []any{3, 2}}}, D{"a": []int{1, 5}}, true},
		{"typed divisor array", D{"a": D{"$mod": []int{3, 2}}}, D{"a": 8}, true},
		{"$not $mod", D{"a": D{"$not": D{"$mod": []any{2, 0}}}}, D{"a": 3}, true},
	})
}

func TestFilterArrayAndTypeOperatorErrors(t *testing.T) {
	tests := []struct {
		name   string
		filter D
		want   []string
	}{
		{"$elemMatch scalar", D{"a": D{"$elemMatch": 1}}, []string{"$elemMatch", `"a"`, "document"}},
		{"$elemMatch mixed forms", D{"a": D{"$elemMatch": D{"b": 1, "$gt": 1}}}, []string{"$elemMatch", "mixes"}},
		{"$elemMatch bad inner operator", D{"a": D{"$elemMatch": D{"$gt": 1, "$foo": 1}}}, []string{"$foo"}},
		{"$elemMatch bad inner field", D{"a": D{"$elemMatch": D{"b": D{"$foo": 1}}}}, []string{"$foo", `"b"`}},
		{"$size string", D{"a": D{"$size": "2"}}, []string{"$size", "number"}},
		{"$size null", D{"a": D{"$size": nil}}, []string{"$size", "number"}},
		{"$size negative", D{"a": D{"$size": -1}}, []string{"$size", "negative"}},
		{"$size negative float", D{"a": D{"$size": -2.0}}, []string{"$size", "negative"}},
		{"$all scalar", D{"a": D{"$all": 1}}, []string{"$all", "array"}},
		{"$all with an operator", D{"a": D{"$all": []any{D{"$gt": 1}}}}, []string{"$all", "operators"}},
		{"$all mixing $elemMatch and values", D{"a": D{"$all": []any{D{"$elemMatch": D{"b": 1}}, 1}}}, []string{"$all", "mixes"}},
		{"$all bad value", D{"a": D{"$all": []any{make(chan int)}}}, []string{"$all"}},
		{"$type unknown name", D{"a": D{"$type": "float"}}, []string{"$type", `"float"`, "double"}},
		{"$type unknown code", D{"a": D{"$type": 100}}, []string{"$type", "100"}},
		{"$type fractional code", D{"a": D{"$type": 1.5}}, []string{"$type", "1.5"}},
		{"$type zero", D{"a": D{"$type": 0}}, []string{"$type"}},
		{"$type bool", D{"a": D{"$type": true}}, []string{"$type"}},
		{"$type empty list", D{"a": D{"$type": []any{}}}, []string{"$type"}},
		{"$type bad in list", D{"a": D{"$type": []any{"string", "nope"}}}, []string{`"nope"`}},
		{"$mod not an array", D{"a": D{"$mod": 4}}, []string{"$mod", "array"}},
		{"$mod empty", D{"a": D{"$mod": []any{}}}, []string{"$mod", "not enough elements"}},
		{"$mod one element", D{"a": D{"$mod": []any{4}}}, []string{"$mod", "not enough elements"}},
		{"$mod three elements", D{"a": D{"$mod": []any{4, 1, 2}}}, []string{"$mod", "too many elements"}},
		{"$mod zero divisor", D{"a": D{"$mod": []any{0, 1}}}, []string{"$mod", "divisor cannot be 0"}},
		{"$mod divisor truncated to zero", D{"a": D{"$mod": []any{0.5, 0}}}, []string{"divisor cannot be 0"}},
		{"$mod string divisor", D{"a": D{"$mod": []any{"4", 0}}}, []string{"$mod", "divisor", "not a number"}},
		{"$mod null remainder", D{"a": D{"$mod": []any{4, nil}}}, []string{"remainder", "not a number"}},
		{"$mod NaN divisor", D{"a": D{"$mod": []any{math.NaN(), 0}}}, []string{"divisor", "64-bit"}},
		{"$mod infinite remainder", D{"a": D{"$mod": []any{4, math.Inf(-1)}}}, []string{"remainder", "64-bit"}},
		{"$mod huge divisor", D{"a": D{"$mod": []any{1e19, 0}}}, []string{"divisor", "64-bit"}},
		{"$mod uint64 divisor", D{"a": D{"$mod": []any{uint64(math.MaxUint64), 0}}}, []string{"divisor", "64-bit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := CompileFilter(tc.filter)
			require.Error(t, err)
			assert.Nil(t, f)
			assert.True(t, errors.Is(err, errs.ErrInvalidFilter), "%v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestFilterOperatorsDocIsInStoredForm checks the planner's view (Doc) of
// the new operators: arguments in stored form (named types as their kind,
// json.Number as its number), patterns kept as patterns, $options beside
// its $regex; and that matching sees the same normalized values.
func TestFilterOperatorsDocIsInStoredForm(t *testing.T) {
	re := regexp.MustCompile("^x")
	f, err := CompileFilter(D{
		"s":   D{"$size": json.Number("2")},
		"m":   D{"$mod": []any{json.Number("3"), json.Number("1")}},
		"t":   D{"$type": []tier{"string"}},
		"r":   re,
		"o":   D{"$regex": "^a", "$options": "i"},
		"in":  D{"$in": []any{re, tier("k")}},
		"all": D{"$all": []any{tier("a"), re}},
		"em":  D{"$elemMatch": D{"k": tier("v")}},
		"eo":  D{"$elemMatch": D{"$gte": json.Number("1")}},
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"s":   map[string]any{"$size": int64(2)},
		"m":   map[string]any{"$mod": []any{int64(3), int64(1)}},
		"t":   map[string]any{"$type": []string{"string"}},
		"r":   re,
		"o":   map[string]any{"$regex": "^a", "$options": "i"},
		"in":  map[string]any{"$in": []any{"k", re}},
		"all": map[string]any{"$all": []any{"a", re}},
		"em":  map[string]any{"$elemMatch": map[string]any{"k": "v"}},
		"eo":  map[string]any{"$elemMatch": map[string]any{"$gte": int64(1)}},
	}, f.Doc())
	assert.True(t, f.Matches(D{
		"s": []any{1, 2}, "m": 4, "t": "x", "r": "xy", "o": "AB", "in": "k",
		"all": []any{"a", "xa"}, "em": []any{D{"k": "v"}}, "eo": []any{0, 1},
	}))
}
