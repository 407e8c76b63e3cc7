package query

import (
	"strings"
	"testing"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

func TestStrings(t *testing.T) {
	big := strings.Repeat("x", MaxExprBytes/2+1)
	runOpCases(t, []opCase{
		{name: "concat", expr: `{"$concat": ["a", "b", "c"]}`, want: "abc"},
		{name: "concat none", expr: `{"$concat": []}`, want: ""},
		{name: "concat null", expr: `{"$concat": ["a", null]}`, want: nil},
		{name: "concat missing", expr: `{"$concat": ["a", "$x"]}`, want: nil},
		{name: "concat number", expr: `{"$concat": ["a", 1]}`, err: errs.ErrExpression},
		{name: "concat bound", expr: D{"$concat": []any{"$s", "$s"}}, doc: D{"s": big}, err: errs.ErrExpression},
		{name: "toLower ascii only", expr: `{"$toLower": "ÀBC"}`, want: "Àbc"},
		{name: "toLower number", expr: `{"$toLower": 12}`, want: "12"},
		{name: "toLower double", expr: `{"$toLower": 1.5}`, want: "1.5"},
		{name: "toLower date", expr: `{"$toLower": {"$date": "2020-01-02T03:04:05Z"}}`, want: "2020-01-02t03:04:05.000z"},
		{name: "toUpper null", expr: `{"$toUpper": null}`, want: ""},
		{name: "toUpper array", expr: `{"$toUpper": [[1]]}`, err: errs.ErrExpression},
		{name: "substrBytes rest", expr: `{"$substrBytes": ["hello", 1, -1]}`, want: "ello"},
		{name: "substrBytes past end", expr: `{"$substrBytes": ["hello", 10, 2]}`, want: ""},
		{name: "substrBytes negative start", expr: `{"$substrBytes": ["hello", -1, 2]}`, err: errs.ErrExpression},
		{name: "substrBytes continuation byte", expr: `{"$substrBytes": ["éa", 1, 1]}`, err: errs.ErrExpression},
		{name: "substrBytes mid character end", expr: `{"$substrBytes": ["éa", 0, 1]}`, err: errs.ErrExpression},
		{name: "substr null", expr: `{"$substr": [null, 0, 1]}`, want: ""},
		{name: "substrCP", expr: `{"$substrCP": ["héllo", 1, 3]}`, want: "éll"},
		{name: "substrCP past end", expr: `{"$substrCP": ["héllo", 3, 30]}`, want: "lo"},
		{name: "substrCP negative length", expr: `{"$substrCP": ["hello", 0, -1]}`, err: errs.ErrExpression},
		{name: "substrCP non-integral", expr: `{"$substrCP": ["hello", 0.5, 1]}`, err: errs.ErrExpression},
		{name: "strLenBytes null", expr: `{"$strLenBytes": null}`, err: errs.ErrExpression},
		{name: "strLenCP missing", expr: `{"$strLenCP": "$x"}`, err: errs.ErrExpression},
		{name: "indexOfBytes", expr: `{"$indexOfBytes": ["cafétéria", "t"]}`, want: int32(5)},
		{name: "indexOfCP", expr: `{"$indexOfCP": ["cafétéria", "t"]}`, want: int32(4)},
		{name: "indexOfCP start", expr: `{"$indexOfCP": ["abcabc", "b", 2]}`, want: int32(4)},
		{name: "indexOfCP end", expr: `{"$indexOfCP": ["abcabc", "c", 0, 2]}`, want: int32(-1)},
		{name: "indexOfCP start past end", expr: `{"$indexOfCP": ["abc", "", 5]}`, want: int32(-1)},
		{name: "indexOfCP empty", expr: `{"$indexOfCP": ["abc", ""]}`, want: int32(0)},
		{name: "indexOfCP negative start", expr: `{"$indexOfCP": ["abc", "b", -1]}`, err: errs.ErrExpression},
		{name: "indexOfCP substring null", expr: `{"$indexOfCP": ["abc", null]}`, err: errs.ErrExpression},
		{name: "split", expr: `{"$split": ["a-b-c", "-"]}`, want: []any{"a", "b", "c"}},
		{name: "split null", expr: `{"$split": [null, "-"]}`, want: nil},
		{name: "split empty separator", expr: `{"$split": ["abc", ""]}`, err: errs.ErrExpression},
		{name: "split number", expr: `{"$split": [1, "-"]}`, err: errs.ErrExpression},
		{name: "strcasecmp", expr: `{"$strcasecmp": ["ABC", "abc"]}`, want: int32(0)},
		{name: "strcasecmp null", expr: `{"$strcasecmp": [null, "a"]}`, want: int32(-1)},
		{name: "trim default", expr: `{"$trim": {"input": "\u00a0 \t a b \n\u3000"}}`, want: "a b"},
		{name: "trim chars", expr: `{"$trim": {"input": "xxaxx", "chars": "x"}}`, want: "a"},
		{name: "ltrim chars", expr: `{"$ltrim": {"input": "xyaxy", "chars": "yx"}}`, want: "axy"},
		{name: "rtrim", expr: `{"$rtrim": {"input": "  a  "}}`, want: "  a"},
		{name: "trim null", expr: `{"$trim": {"input": null}}`, want: nil},
		{name: "trim chars null", expr: `{"$trim": {"input": "a", "chars": null}}`, want: nil},
		{name: "trim number", expr: `{"$trim": {"input": 1}}`, err: errs.ErrExpression},
		{name: "trim unknown argument", expr: `{"$trim": {"input": "a", "char": "x"}}`, err: errs.ErrInvalidOptions},
		{name: "trim no input", expr: `{"$trim": {"chars": "x"}}`, err: errs.ErrInvalidOptions},
		{name: "replaceOne null", expr: `{"$replaceOne": {"input": "a", "find": null, "replacement": "b"}}`, want: nil},
		{name: "replaceAll number", expr: `{"$replaceAll": {"input": "a", "find": 1, "replacement": "b"}}`, err: errs.ErrExpression},
		{name: "replaceAll empty find", expr: `{"$replaceAll": {"input": "ab", "find": "", "replacement": "-"}}`, want: "-a-b-"},
		{name: "replaceAll bound", expr: D{"$replaceAll": D{"input": "$s", "find": "x", "replacement": "xxx"}}, doc: D{"s": big}, err: errs.ErrExpression},
		{name: "regexMatch options", expr: `{"$regexMatch": {"input": "ABC", "regex": "b", "options": "i"}}`, want: true},
		{name: "regexMatch bson regex", expr: `{"$regexMatch": {"input": "ABC", "regex": {"$regularExpression": {"pattern": "^abc$", "options": "i"}}}}`, want: true},
		{name: "regexMatch options twice", expr: `{"$regexMatch": {"input": "ABC", "regex": {"$regularExpression": {"pattern": "b", "options": "i"}}, "options": "m"}}`, err: errs.ErrInvalidOptions},
		{name: "regexMatch bad option", expr: `{"$regexMatch": {"input": "ABC", "regex": "b", "options": "q"}}`, err: errs.ErrInvalidOptions},
		{name: "regexMatch runtime regex", expr: `{"$regexMatch": {"input": "abc", "regex": "$re"}}`, doc: `{"re": "^a"}`, want: true},
		{name: "regexMatch runtime bad regex", expr: `{"$regexMatch": {"input": "abc", "regex": "$re"}}`, doc: `{"re": "("}`, err: errs.ErrExpression},
		{name: "regexMatch null input", expr: `{"$regexMatch": {"input": null, "regex": "a"}}`, want: false},
		{name: "regexMatch number input", expr: `{"$regexMatch": {"input": 1, "regex": "a"}}`, err: errs.ErrExpression},
		{name: "regexMatch extended", expr: `{"$regexMatch": {"input": "abc", "regex": "a b  c # comment", "options": "x"}}`, want: true},
		{name: "regexFind captures", expr: `{"$regexFind": {"input": "xaé-b", "regex": "(a)(é)?-(z)?"}}`,
			want: codec.Document{"match": "aé-", "idx": int32(1), "captures": []any{"a", "é", nil}}},
		{name: "regexFind none", expr: `{"$regexFind": {"input": "abc", "regex": "z"}}`, want: nil},
		{name: "regexFindAll none", expr: `{"$regexFindAll": {"input": "abc", "regex": "z"}}`, want: []any{}},
		{name: "regexFindAll null regex", expr: `{"$regexFindAll": {"input": "abc", "regex": null}}`, want: []any{}},
		{name: "regexFindAll code point idx", expr: `{"$regexFindAll": {"input": "éaéa", "regex": "a"}}`,
			want: []any{codec.Document{"match": "a", "idx": int32(1), "captures": []any{}}, codec.Document{"match": "a", "idx": int32(3), "captures": []any{}}}},
	})
}

// TestManual_strings reproduces the examples of the MongoDB manual's
// string operator pages.
func TestManual_strings(t *testing.T) {
	products := []string{
		"Single LINE description.", "First lines\nsecond line", "Many spaces before     line",
		"Multiple\nline descriptions", "anchors, links and hyperlinks", "métier work vocation",
	}
	var cases []opCase
	for i, want := range []bool{false, true, true, true, false, false} {
		cases = append(cases, opCase{name: "regexMatch line " + products[i], expr: `{"$regexMatch": {"input": "$description", "regex": {"$regularExpression": {"pattern": "line", "options": ""}}}}`,
			doc: D{"description": products[i]}, want: want})
	}
	for i, want := range []bool{true, true, true, true, false, false} {
		cases = append(cases, opCase{name: "regexMatch line i " + products[i], expr: `{"$regexMatch": {"input": "$description", "regex": "line", "options": "i"}}`,
			doc: D{"description": products[i]}, want: want})
	}
	for i, want := range []any{nil, 6, 23, 9, nil, nil} {
		var w any
		if want != nil {
			w = codec.Document{"match": "line", "idx": int32(want.(int)), "captures": []any{}}
		}
		cases = append(cases, opCase{name: "regexFind line " + products[i], expr: `{"$regexFind": {"input": "$description", "regex": "line"}}`,
			doc: D{"description": products[i]}, want: w})
	}
	food := map[string][3]any{ // name: strLenBytes, strLenCP, substrCP 0 3
		"apple": {int32(5), int32(5), "app"}, "banana": {int32(6), int32(6), "ban"}, "éclair": {int32(7), int32(6), "écl"},
		"hamburger": {int32(9), int32(9), "ham"}, "jalapeño": {int32(9), int32(8), "jal"}, "pizza": {int32(5), int32(5), "piz"},
		"tacos": {int32(5), int32(5), "tac"}, "寿司sushi": {int32(11), int32(7), "寿司s"},
	}
	for name, w := range food {
		cases = append(cases,
			opCase{name: "strLenBytes " + name, expr: `{"$strLenBytes": "$name"}`, doc: D{"name": name}, want: w[0]},
			opCase{name: "strLenCP " + name, expr: `{"$strLenCP": "$name"}`, doc: D{"name": name}, want: w[1]},
			opCase{name: "substrCP " + name, expr: `{"$substrCP": ["$name", 0, 3]}`, doc: D{"name": name}, want: w[2]},
		)
	}
	cases = append(cases, []opCase{
		{name: "regexFindAll line", expr: `{"$regexFindAll": {"input": "$description", "regex": "line"}}`, doc: D{"description": products[1]},
			want: []any{codec.Document{"match": "line", "idx": int32(6), "captures": []any{}}, codec.Document{"match": "line", "idx": int32(19), "captures": []any{}}}},
		{name: "regexFind captures email", expr: `{"$regexFind": {"input": "$comment", "regex": "([a-z0-9_.+-]+)@[a-z0-9_.+-]+\\.[a-z0-9_.+-]+", "options": "i"}}`,
			doc:  `{"comment": "Hi, I'm just reading about MongoDB -- aunt.arc.tica@example.com"}`,
			want: codec.Document{"match": "aunt.arc.tica@example.com", "idx": int32(38), "captures": []any{"aunt.arc.tica"}}},
		{name: "concat item", expr: `{"$concat": ["$item", " - ", "$description"]}`, doc: `{"item": "ABC1", "quarter": "13Q1", "description": "product 1"}`, want: "ABC1 - product 1"},
		{name: "concat null description", expr: `{"$concat": ["$item", " - ", "$description"]}`, doc: `{"item": "VWZ1", "quarter": "14Q2", "description": null}`, want: nil},
		{name: "toLower item", expr: `{"$toLower": "$item"}`, doc: `{"item": "ABC1", "description": "PRODUCT 1"}`, want: "abc1"},
		{name: "toLower description", expr: `{"$toLower": "$description"}`, doc: `{"item": "ABC1", "description": "PRODUCT 1"}`, want: "product 1"},
		{name: "toLower null", expr: `{"$toLower": "$description"}`, doc: `{"item": "xyz1", "description": null}`, want: ""},
		{name: "toUpper item", expr: `{"$toUpper": "$item"}`, doc: `{"item": "abc1", "description": "PRODUCT 1"}`, want: "ABC1"},
		{name: "substrBytes year", expr: `{"$substrBytes": ["$quarter", 0, 2]}`, doc: `{"quarter": "13Q1"}`, want: "13"},
		{name: "substrBytes quarter", expr: `{"$substrBytes": ["$quarter", 2, {"$subtract": [{"$strLenBytes": "$quarter"}, 2]}]}`, doc: `{"quarter": "13Q1"}`, want: "Q1"},
		{name: "substrBytes menuCode", expr: `{"$substrBytes": ["$name", 0, 3]}`, doc: `{"name": "寿司sushi"}`, want: "寿"},
		{name: "substr year", expr: `{"$substr": ["$quarter", 0, 2]}`, doc: `{"quarter": "14Q2"}`, want: "14"},
		{name: "substrCP quarter", expr: `{"$substrCP": ["$quarter", 2, {"$subtract": [{"$strLenCP": "$quarter"}, 2]}]}`, doc: `{"quarter": "13Q1"}`, want: "Q1"},
		{name: "split city", expr: `{"$split": ["$city", ", "]}`, doc: `{"city": "Berkeley, CA", "qty": 648}`, want: []any{"Berkeley", "CA"}},
		{name: "strcasecmp 13Q1", expr: `{"$strcasecmp": ["$quarter", "13q4"]}`, doc: `{"quarter": "13Q1"}`, want: int32(-1)},
		{name: "strcasecmp 13Q4", expr: `{"$strcasecmp": ["$quarter", "13q4"]}`, doc: `{"quarter": "13Q4"}`, want: int32(0)},
		{name: "strcasecmp 14Q2", expr: `{"$strcasecmp": ["$quarter", "13q4"]}`, doc: `{"quarter": "14Q2"}`, want: int32(1)},
		{name: "indexOfCP foo", expr: `{"$indexOfCP": ["$item", "foo"]}`, doc: `{"item": "foo"}`, want: int32(0)},
		{name: "indexOfCP fóofoo", expr: `{"$indexOfCP": ["$item", "foo"]}`, doc: `{"item": "fóofoo"}`, want: int32(3)},
		{name: "indexOfBytes fóofoo", expr: `{"$indexOfBytes": ["$item", "foo"]}`, doc: `{"item": "fóofoo"}`, want: int32(4)},
		{name: "indexOfCP the foo bar", expr: `{"$indexOfCP": ["$item", "foo"]}`, doc: `{"item": "the foo bar"}`, want: int32(4)},
		{name: "indexOfCP hello world fóo", expr: `{"$indexOfCP": ["$item", "foo"]}`, doc: `{"item": "hello world fóo"}`, want: int32(-1)},
		{name: "indexOfCP null", expr: `{"$indexOfCP": ["$item", "foo"]}`, doc: `{"item": null}`, want: nil},
		{name: "indexOfCP missing", expr: `{"$indexOfCP": ["$item", "foo"]}`, doc: `{"amount": 3}`, want: nil},
		{name: "trim description", expr: `{"$trim": {"input": "$description"}}`, doc: D{"description": "product 2 \n The product is in stock.  \n\n  "}, want: "product 2 \n The product is in stock."},
		{name: "ltrim description", expr: `{"$ltrim": {"input": "$description"}}`, doc: D{"description": " product 1"}, want: "product 1"},
		{name: "rtrim description", expr: `{"$rtrim": {"input": "$description"}}`, doc: D{"description": "product 1 "}, want: "product 1"},
	}...)
	items := []string{"blue paint", "blue and green paint", "blue paint with blue paintbrush", "blue paint with green paintbrush"}
	one := []string{"red paint", "blue and green paint", "red paint with blue paintbrush", "red paint with green paintbrush"}
	all := []string{"red paint", "blue and green paint", "red paint with red paintbrush", "red paint with green paintbrush"}
	for i, item := range items {
		cases = append(cases,
			opCase{name: "replaceOne " + item, expr: `{"$replaceOne": {"input": "$item", "find": "blue paint", "replacement": "red paint"}}`, doc: D{"item": item}, want: one[i]},
			opCase{name: "replaceAll " + item, expr: `{"$replaceAll": {"input": "$item", "find": "blue paint", "replacement": "red paint"}}`, doc: D{"item": item}, want: all[i]},
		)
	}
	runOpCases(t, cases)
}
