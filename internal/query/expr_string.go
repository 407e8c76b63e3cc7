package query

import (
	"math"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// String operators: $concat, $toLower, $toUpper, $substr, $substrBytes,
// $substrCP, $strLenBytes, $strLenCP, $indexOfBytes, $indexOfCP,
// $split, $strcasecmp, $trim, $ltrim, $rtrim, $replaceOne, $replaceAll,
// $regexMatch, $regexFind and $regexFindAll. Code point ("CP")
// operators count UTF-8 code points, byte operators bytes. $toLower,
// $toUpper and $strcasecmp change and fold ASCII letters only, as
// MongoDB does. A string an operator builds is bounded by MaxExprBytes.
//
// Regular expressions are RE2 (see regex.go). $regexFindAll finds
// successive matches as the server does (see findAll).

func init() {
	registerOps(map[string]opCompiler{
		"$concat":       fn(0, -1, evalConcat),
		"$toLower":      fn(1, 1, evalCase),
		"$toUpper":      fn(1, 1, evalCase),
		"$substr":       fn(3, 3, evalSubstrBytes),
		"$substrBytes":  fn(3, 3, evalSubstrBytes),
		"$substrCP":     fn(3, 3, evalSubstrCP),
		"$strLenBytes":  fn(1, 1, evalStrLen),
		"$strLenCP":     fn(1, 1, evalStrLen),
		"$indexOfBytes": fn(2, 4, evalIndexOf),
		"$indexOfCP":    fn(2, 4, evalIndexOf),
		"$split":        fn(2, 2, evalSplit),
		"$strcasecmp":   fn(2, 2, evalStrcasecmp),
		"$trim":         compileTrim,
		"$ltrim":        compileTrim,
		"$rtrim":        compileTrim,
		"$replaceOne":   compileReplace,
		"$replaceAll":   compileReplace,
		"$regexMatch":   compileRegexOp,
		"$regexFind":    compileRegexOp,
		"$regexFindAll": compileRegexOp,
	})
}

func evalConcat(op string, vals []any) (any, error) {
	n := 0
	for _, v := range vals {
		if nullish(v) {
			return nil, nil
		}
		s, ok := v.(string)
		if !ok {
			return nil, evalErr(op, "only supports strings, not %s", TypeName(v))
		}
		n += len(s)
	}
	if n > MaxExprBytes {
		return nil, evalErr(op, "result of %d bytes exceeds the bound of %d", n, MaxExprBytes)
	}
	var b strings.Builder
	b.Grow(n)
	for _, v := range vals {
		b.WriteString(v.(string))
	}
	return b.String(), nil
}

// coerceOperandString is the server's conversion of an operand to a string
// for $toLower, $toUpper, $strcasecmp and $substr*: null and missing are
// "", numbers and dates print, other types are an error.
func coerceOperandString(op string, v any) (string, error) {
	switch x := v.(type) {
	case nil, missingType:
		return "", nil
	case string:
		return x, nil
	case time.Time:
		return isoMillisString(x), nil
	case bson.Timestamp:
		return "Timestamp(" + strconv.FormatUint(uint64(x.T), 10) + ", " + strconv.FormatUint(uint64(x.I), 10) + ")", nil
	}
	if n, ok := NumberValue(v); ok {
		switch x := n.(type) {
		case int32:
			return strconv.FormatInt(int64(x), 10), nil
		case int64:
			return strconv.FormatInt(x, 10), nil
		case float64:
			return strconv.FormatFloat(x, 'g', 6, 64), nil // C's %g
		case bson.Decimal128:
			return x.String(), nil
		}
	}
	return "", evalErr(op, "can't convert from BSON type %s to String", TypeName(v))
}

func evalCase(op string, vals []any) (any, error) {
	s, err := coerceOperandString(op, vals[0])
	if err != nil {
		return nil, err
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case op == "$toLower" && c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case op == "$toUpper" && c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b), nil
}

func evalStrcasecmp(op string, vals []any) (any, error) {
	a, err := coerceOperandString(op, vals[0])
	if err != nil {
		return nil, err
	}
	b, err := coerceOperandString(op, vals[1])
	if err != nil {
		return nil, err
	}
	// The server compares the upper-cased strings ('_' sorts before 'a').
	ua, _ := evalCase("$toUpper", []any{a})
	ub, _ := evalCase("$toUpper", []any{b})
	return int32(strings.Compare(ua.(string), ub.(string))), nil
}

// evalSubstrBytes is $substrBytes (and $substr): a negative length
// means the rest of the string; a range that starts or ends inside a
// UTF-8 character is an error.
func evalSubstrBytes(op string, vals []any) (any, error) {
	s, err := coerceOperandString(op, vals[0])
	if err != nil {
		return nil, err
	}
	if !isNumberValue(vals[1]) {
		return nil, evalErr(op, "starting index must be a numeric type (is BSON type %s)", TypeName(vals[1]))
	}
	if !isNumberValue(vals[2]) {
		return nil, evalErr(op, "length must be a numeric type (is BSON type %s)", TypeName(vals[2]))
	}
	// The server truncates both to integers.
	startF, lenF := math.Trunc(floatOf(vals[1])), math.Trunc(floatOf(vals[2]))
	if startF < 0 || math.IsNaN(startF) {
		return nil, evalErr(op, "starting index must be non-negative (got: %v)", vals[1])
	}
	start := int(min(startF, float64(len(s))))
	if start >= len(s) {
		return "", nil
	}
	if !utf8.RuneStart(s[start]) {
		return nil, evalErr(op, "Invalid range, starting index is a UTF-8 continuation byte.")
	}
	end := len(s)
	if lenF >= 0 && float64(start)+lenF < float64(len(s)) {
		end = start + int(lenF)
	}
	if end < len(s) && !utf8.RuneStart(s[end]) {
		return nil, evalErr(op, "Invalid range, ending index is in the middle of a UTF-8 character.")
	}
	return s[start:end], nil
}

func evalSubstrCP(op string, vals []any) (any, error) {
	s, err := coerceOperandString(op, vals[0])
	if err != nil {
		return nil, err
	}
	start, ok := integralArg(vals[1])
	if !ok {
		return nil, evalErr(op, "starting index must be an integral numeric value, not %v", vals[1])
	}
	n, ok := integralArg(vals[2])
	if !ok {
		return nil, evalErr(op, "length must be an integral numeric value, not %v", vals[2])
	}
	if start < 0 {
		return nil, evalErr(op, "starting index must be non-negative (got: %d)", start)
	}
	if n < 0 {
		return nil, evalErr(op, "length must be a nonnegative integer (got: %d)", n)
	}
	i, cp := 0, int64(0)
	for i < len(s) && cp < start {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		cp++
	}
	j := i
	for j < len(s) && cp < start+n {
		_, size := utf8.DecodeRuneInString(s[j:])
		j += size
		cp++
	}
	return s[i:j], nil
}

func evalStrLen(op string, vals []any) (any, error) {
	s, ok := vals[0].(string)
	if !ok {
		return nil, evalErr(op, "requires a string argument, found: %s", TypeName(vals[0]))
	}
	if op == "$strLenBytes" {
		return int32(len(s)), nil
	}
	return int32(utf8.RuneCountInString(s)), nil
}

// evalIndexOf is $indexOfBytes and $indexOfCP: the index (in bytes or
// code points) of the substring's first occurrence in [start, end), or
// -1.
func evalIndexOf(op string, vals []any) (any, error) {
	if nullish(vals[0]) {
		return nil, nil
	}
	s, ok := vals[0].(string)
	if !ok {
		return nil, evalErr(op, "requires a string as the first argument, found: %s", TypeName(vals[0]))
	}
	sub, ok := vals[1].(string)
	if !ok {
		return nil, evalErr(op, "requires a string as the second argument, found: %s", TypeName(vals[1]))
	}
	cp := op == "$indexOfCP"
	var runes []rune
	length := int64(len(s))
	if cp {
		runes = []rune(s)
		length = int64(len(runes))
	}
	start, end := int64(0), length
	for i, name := range []string{"starting", "ending"} {
		if len(vals) <= 2+i {
			break
		}
		x, ok := integralArg(vals[2+i])
		if !ok {
			return nil, evalErr(op, "%s index must be an integral numeric value, not %v", name, vals[2+i])
		}
		if x < 0 {
			return nil, evalErr(op, "%s index must be non-negative, got %d", name, x)
		}
		if i == 0 {
			start = x
		} else {
			end = min(x, length)
		}
	}
	if start > length || start > end {
		return int32(-1), nil
	}
	if !cp { // the substring must end by end
		if i := strings.Index(s[start:end], sub); i >= 0 {
			return int32(start + int64(i)), nil
		}
		return int32(-1), nil
	}
	if s == "" && sub == "" {
		return int32(0), nil
	}
	// As the server: a match starts before end, and may run past it.
	byteAt := len(string(runes[:start]))
	for i := start; i < end; i++ {
		if strings.HasPrefix(s[byteAt:], sub) {
			return int32(i), nil
		}
		byteAt += utf8.RuneLen(runes[i])
	}
	return int32(-1), nil
}

func evalSplit(op string, vals []any) (any, error) {
	if nullish(vals[0]) || nullish(vals[1]) {
		return nil, nil
	}
	s, ok := vals[0].(string)
	if !ok {
		return nil, evalErr(op, "requires an expression that evaluates to a string as a first argument, found: %s", TypeName(vals[0]))
	}
	sep, ok := vals[1].(string)
	if !ok {
		return nil, evalErr(op, "requires an expression that evaluates to a string as a second argument, found: %s", TypeName(vals[1]))
	}
	if sep == "" {
		return nil, evalErr(op, "requires a non-empty separator")
	}
	if strings.Count(s, sep) >= MaxExprElements {
		return nil, evalErr(op, "result exceeds the bound of %d elements", MaxExprElements)
	}
	parts := strings.Split(s, sep)
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

// trimNode is $trim, $ltrim and $rtrim: chars (default: the whitespace
// the server lists: the null character, ASCII whitespace, U+00A0,
// U+1680 and U+2000 to U+200A) removed from the ends.
type trimNode struct {
	op          string
	input       node
	chars       node // nil: whitespace
	left, right bool
}

// trimWhitespace is what $trim removes by default.
const trimWhitespace = "\x00 \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"

func compileTrim(c *compiler, op string, arg any) (node, error) {
	m, err := c.namedOperands(op, arg, []string{"input"}, []string{"chars"})
	if err != nil {
		return nil, err
	}
	return &trimNode{op: op, input: m["input"], chars: m["chars"], left: op != "$rtrim", right: op != "$ltrim"}, nil
}

func (n *trimNode) eval(env *Env) (any, error) {
	v, err := n.input.eval(env)
	if err != nil {
		return nil, err
	}
	if nullish(v) {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, evalErr(n.op, "requires its input to be a string, got %s", TypeName(v))
	}
	chars := trimWhitespace
	if n.chars != nil {
		cv, err := n.chars.eval(env)
		if err != nil {
			return nil, err
		}
		if nullish(cv) {
			return nil, nil
		}
		if chars, ok = cv.(string); !ok {
			return nil, evalErr(n.op, "requires 'chars' to be a string, got %s", TypeName(cv))
		}
	}
	if n.left {
		s = strings.TrimLeft(s, chars)
	}
	if n.right {
		s = strings.TrimRight(s, chars)
	}
	return s, nil
}

// replaceNode is $replaceOne and $replaceAll.
type replaceNode struct {
	op                       string
	input, find, replacement node
}

func compileReplace(c *compiler, op string, arg any) (node, error) {
	m, err := c.namedOperands(op, arg, []string{"input", "find", "replacement"}, nil)
	if err != nil {
		return nil, err
	}
	return &replaceNode{op, m["input"], m["find"], m["replacement"]}, nil
}

func (n *replaceNode) eval(env *Env) (any, error) {
	var strs [3]string
	isNull := false
	for i, e := range []node{n.input, n.find, n.replacement} {
		v, err := e.eval(env)
		if err != nil {
			return nil, err
		}
		if nullish(v) {
			isNull = true
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, evalErr(n.op, "requires that '%s' be a string, found: %s", []string{"input", "find", "replacement"}[i], TypeName(v))
		}
		strs[i] = s
	}
	if isNull {
		return nil, nil
	}
	s, find, repl := strs[0], strs[1], strs[2]
	if n.op == "$replaceOne" {
		return strings.Replace(s, find, repl, 1), nil
	}
	count := strings.Count(s, find)
	if int64(len(s))+int64(count)*int64(len(repl)-len(find)) > MaxExprBytes {
		return nil, evalErr(n.op, "result exceeds the bound of %d bytes", MaxExprBytes)
	}
	return strings.ReplaceAll(s, find, repl), nil
}

// regexNode is $regexMatch, $regexFind and $regexFindAll. A constant
// regex (and options) is compiled once, with the expression.
type regexNode struct {
	op                    string
	input, regex, options node
	re                    *regexp.Regexp // the constant regex, compiled
}

func compileRegexOp(c *compiler, op string, arg any) (node, error) {
	m, err := c.namedOperands(op, arg, []string{"input", "regex"}, []string{"options"})
	if err != nil {
		return nil, err
	}
	n := &regexNode{op: op, input: m["input"], regex: m["regex"], options: m["options"]}
	rl, ok := n.regex.(*literalNode)
	if !ok || nullish(rl.v) {
		return n, nil
	}
	var opts any = Missing
	if n.options != nil {
		ol, ok := n.options.(*literalNode)
		if !ok {
			return n, nil
		}
		opts = ol.v
	}
	re, err := regexOf(op, rl.v, opts)
	if err != nil {
		return nil, compileErr(op, "%s", strings.TrimPrefix(err.Error(), errs.ErrExpression.Error()+": "+op+": "))
	}
	n.re = re
	return n, nil
}

// regexOf compiles a regex operand (a string or a bson.Regex) with its
// options (missing, null or a string; not both in a bson.Regex and
// options).
func regexOf(op string, regex, options any) (*regexp.Regexp, error) {
	var pattern, flags string
	switch r := regex.(type) {
	case string:
		pattern = r
	case bson.Regex:
		pattern, flags = r.Pattern, r.Options
	default:
		return nil, evalErr(op, "needs 'regex' to be of type string or regex, not %s", TypeName(regex))
	}
	if !nullish(options) {
		s, ok := options.(string)
		if !ok {
			return nil, evalErr(op, "needs 'options' to be of type string, not %s", TypeName(options))
		}
		if flags != "" && s != "" {
			return nil, evalErr(op, "found regex option(s) specified in both 'regex' and 'option' fields")
		}
		if s != "" {
			flags = s
		}
	}
	if strings.ContainsRune(pattern, 0) {
		return nil, evalErr(op, "regular expression cannot contain an embedded null byte")
	}
	var opts any
	if flags != "" {
		opts = flags
	}
	re, err := compileRegex(op, "", pattern, opts)
	if err != nil {
		return nil, evalErr(op, "%s", strings.TrimPrefix(err.Error(), errs.ErrInvalidFilter.Error()+": "+op+": "))
	}
	return re, nil
}

func (n *regexNode) eval(env *Env) (any, error) {
	v, err := n.input.eval(env)
	if err != nil {
		return nil, err
	}
	s, isString := v.(string)
	if !isString && !nullish(v) { // checked first, as the server does
		return nil, evalErr(n.op, "needs 'input' to be of type string, not %s", TypeName(v))
	}
	re := n.re
	if re == nil {
		rv, err := n.regex.eval(env)
		if err != nil {
			return nil, err
		}
		var ov any = Missing
		if n.options != nil {
			if ov, err = n.options.eval(env); err != nil {
				return nil, err
			}
		}
		if nullish(rv) {
			if !nullish(ov) {
				if _, ok := ov.(string); !ok {
					return nil, evalErr(n.op, "needs 'options' to be of type string, not %s", TypeName(ov))
				}
			}
			return n.noMatch(), nil
		}
		if re, err = regexOf(n.op, rv, ov); err != nil {
			return nil, err
		}
	}
	if !isString {
		return n.noMatch(), nil
	}
	switch n.op {
	case "$regexMatch":
		return re.MatchString(s), nil
	case "$regexFind":
		loc := re.FindStringSubmatchIndex(s)
		if loc == nil {
			return nil, nil
		}
		return regexResult(s, loc), nil
	}
	all := findAll(re, s)
	if len(all) > MaxExprElements {
		return nil, evalErr(n.op, "result exceeds the bound of %d matches", MaxExprElements)
	}
	out := make([]any, len(all))
	for i, loc := range all {
		out[i] = regexResult(s, loc)
	}
	return out, nil
}

// findAll finds successive matches as the server's $regexFindAll does:
// from the start, each search begins where the last match ended (one
// code point further after an empty match), until the end of the input.
// Go's FindAll differs in two ways, mended here: it also looks for a
// match at the end of a non-empty input, and it skips an empty match
// right after a previous match. The latter is mended only for patterns
// whose match at a position does not depend on the text before it (no
// ^, \A, \b, \B), where a search of the rest of the input finds it.
func findAll(re *regexp.Regexp, s string) [][]int {
	all := re.FindAllStringSubmatchIndex(s, MaxExprElements+1)
	var out [][]int
	emptyAbutting := re.MatchString("") && !lookBehind(re)
	// skipped is the empty match Go skipped right after out's last
	// match, if any, before position end.
	skipped := func(end int) []int {
		if !emptyAbutting || len(out) == 0 {
			return nil
		}
		prev := out[len(out)-1]
		e := prev[1]
		if e == prev[0] || e >= end {
			return nil
		}
		m := re.FindStringSubmatchIndex(s[e:])
		if m == nil || m[1] != 0 {
			return nil
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += e
			}
		}
		return m
	}
	for _, loc := range all {
		if loc[0] == len(s) && len(s) > 0 {
			break
		}
		if m := skipped(loc[0]); m != nil {
			out = append(out, m)
		}
		out = append(out, loc)
	}
	if m := skipped(len(s)); m != nil {
		out = append(out, m)
	}
	return out
}

// lookBehind reports whether re has an assertion about the text before
// a position (^, \A, \b, \B).
func lookBehind(re *regexp.Regexp) bool {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return true
	}
	var walk func(*syntax.Regexp) bool
	walk = func(r *syntax.Regexp) bool {
		switch r.Op {
		case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			return true
		}
		for _, sub := range r.Sub {
			if walk(sub) {
				return true
			}
		}
		return false
	}
	return walk(tree)
}

// noMatch is the result for a null input or regex.
func (n *regexNode) noMatch() any {
	switch n.op {
	case "$regexMatch":
		return false
	case "$regexFind":
		return nil
	}
	return []any{}
}

// regexResult is a match as $regexFind gives it: the matched string, its
// code point index, and the captures (null for a group that did not
// take part).
func regexResult(s string, loc []int) codec.Document {
	caps := make([]any, 0, len(loc)/2-1)
	for i := 2; i+1 < len(loc); i += 2 {
		if loc[i] < 0 {
			caps = append(caps, nil)
			continue
		}
		caps = append(caps, s[loc[i]:loc[i+1]])
	}
	return codec.Document{
		"match":    s[loc[0]:loc[1]],
		"idx":      int32(utf8.RuneCountInString(s[:loc[0]])),
		"captures": caps,
	}
}
