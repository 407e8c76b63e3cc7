package query

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Regular expressions in filters are RE2, compiled by the standard
// library's regexp package: matching takes time linear in the input, so a
// hostile pattern cannot backtrack catastrophically. MongoDB uses PCRE;
// the syntax the two share (the common case) behaves the same, and PCRE's
// extras that RE2 lacks (lookaround, backreferences, atomic groups,
// possessive quantifiers, recursion) are refused with an error naming the
// construct, rather than compiled into something that means another thing.

// regexOptions are the $options letters ttldb accepts, as MongoDB's:
// i (case-insensitive), m (^ and $ match at line breaks), s (. matches a
// newline) and x (extended: unescaped whitespace and #-comments outside
// character classes are ignored).
const regexOptions = "imsx"

// regexSpec is a $regex operand with its $options, folded together from
// the two keys of one operator document.
type regexSpec struct {
	pattern any // a string or a *regexp.Regexp
	options any // a string, or nil when there is no $options key
}

// IsRegex reports whether v is a regular expression given in a filter
// (a *regexp.Regexp), which matches strings by pattern rather than by
// equality. The planner uses it: such a condition bounds no index.
func IsRegex(v any) bool {
	switch v.(type) {
	case *regexp.Regexp, bson.Regex:
		return true
	}
	return false
}

// compileRegex compiles a $regex operand (a string or *regexp.Regexp) with
// its options (nil or a string of regexOptions letters).
func compileRegex(op, path string, pattern, options any) (*regexp.Regexp, error) {
	var src string
	switch p := pattern.(type) {
	case string:
		src = p
	case *regexp.Regexp:
		if p == nil {
			return nil, filterError(op, path, "needs a string or a *regexp.Regexp, got a nil *regexp.Regexp")
		}
		src = p.String()
	case bson.Regex:
		// The driver's regex carries its options; MongoDB refuses
		// options given twice.
		src = p.Pattern
		if p.Options != "" {
			if options != nil {
				return nil, filterError("$options", path, "options given both in the bson.Regex and in $options")
			}
			options = p.Options
		}
	default:
		return nil, filterError(op, path, "needs a string or a *regexp.Regexp, got %s", describeType(pattern))
	}
	var opts string
	if options != nil {
		s, ok := options.(string)
		if !ok {
			return nil, filterError("$options", path, "needs a string, got %s", describeType(options))
		}
		opts = s
	}
	flags := ""
	extended := false
	for _, c := range opts {
		switch c {
		case 'i', 'm', 's':
			if !strings.ContainsRune(flags, c) {
				flags += string(c)
			}
		case 'x':
			extended = true
		default:
			return nil, filterError("$options", path, "unsupported regex option %q (supported: %s)", c, strings.Join(strings.Split(regexOptions, ""), ", "))
		}
	}
	if extended {
		src = stripExtended(src)
	}
	if err := checkRE2(src); err != nil {
		return nil, filterError(op, path, "%v", err)
	}
	if flags != "" {
		src = "(?" + flags + ")" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, filterError(op, path, "not a valid RE2 (Go regexp) pattern: %v", err)
	}
	return re, nil
}

// checkRE2 refuses the PCRE constructs RE2 does not have, naming them. The
// scan skips escaped characters and character classes, where these
// sequences are literal.
func checkRE2(src string) error {
	inClass := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		rest := src[i:]
		switch {
		case c == '\\' && i+1 < len(src):
			n := src[i+1]
			switch {
			case !inClass && n >= '1' && n <= '9':
				return fmt.Errorf("backreferences such as %q are PCRE-only syntax that RE2 (Go regexp) does not support", rest[:2])
			case n == 'k' || n == 'g':
				return fmt.Errorf("backreferences such as %q are PCRE-only syntax that RE2 (Go regexp) does not support", rest[:2])
			}
			i++ // the escaped character is literal
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			// A ']' first in the class (after an optional '^') is literal.
			if strings.HasPrefix(src[i+1:], "^]") {
				i += 2
			} else if strings.HasPrefix(src[i+1:], "]") {
				i++
			}
		case strings.HasPrefix(rest, "(?=") || strings.HasPrefix(rest, "(?!"):
			return fmt.Errorf("lookahead %q is PCRE-only syntax that RE2 (Go regexp) does not support", rest[:3])
		case strings.HasPrefix(rest, "(?<=") || strings.HasPrefix(rest, "(?<!"):
			return fmt.Errorf("lookbehind %q is PCRE-only syntax that RE2 (Go regexp) does not support", rest[:4])
		case strings.HasPrefix(rest, "(?>"):
			return fmt.Errorf("atomic groups %q are PCRE-only syntax that RE2 (Go regexp) does not support", rest[:3])
		case strings.HasPrefix(rest, "(?("):
			return fmt.Errorf("conditionals %q are PCRE-only syntax that RE2 (Go regexp) does not support", rest[:3])
		case strings.HasPrefix(rest, "(?R") || strings.HasPrefix(rest, "(?&") || len(rest) > 3 && rest[:2] == "(?" && rest[2] >= '0' && rest[2] <= '9':
			return fmt.Errorf("recursion %q is PCRE-only syntax that RE2 (Go regexp) does not support", rest[:3])
		case (c == '+') && i > 0 && strings.ContainsRune("*+?}", rune(src[i-1])) && !escapedAt(src, i-1):
			return fmt.Errorf("possessive quantifiers such as %q are PCRE-only syntax that RE2 (Go regexp) does not support", src[i-1:i+1])
		}
	}
	return nil
}

// escapedAt reports whether src[i] is preceded by an odd number of
// backslashes.
func escapedAt(src string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && src[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// stripExtended applies the x option as PCRE does: outside character
// classes, unescaped whitespace is dropped and an unescaped '#' starts a
// comment that runs to the end of the line. Escaped characters and
// classes are kept as written.
func stripExtended(src string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src):
			b.WriteByte(c)
			b.WriteByte(src[i+1])
			i++
		case inClass:
			b.WriteByte(c)
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			b.WriteByte(c)
			for _, lit := range []string{"^]", "]"} {
				if strings.HasPrefix(src[i+1:], lit) {
					b.WriteString(lit)
					i += len(lit)
					break
				}
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		case c == '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// regexPred matches strings, and string elements of arrays, against a
// pattern ($regex, or a *regexp.Regexp given as a value). Non-strings never
// match.
type regexPred struct {
	re     *regexp.Regexp
	source *regexp.Regexp // the caller's, for Filter.Doc; nil for a $regex
}

func (p regexPred) test(vals []any, _ bool) bool { return anyCandidate(vals, p.matchesSingle) }

func (p regexPred) matchesSingle(v any) bool {
	s, ok := v.(string)
	return ok && p.re.MatchString(s)
}

// compileRegexOperator compiles {$regex: pattern} (with $options folded in
// as a regexSpec).
func compileRegexOperator(op, path string, v any) (predicate, any, error) {
	spec, ok := v.(regexSpec)
	if !ok {
		spec = regexSpec{pattern: v}
	}
	re, err := compileRegex(op, path, spec.pattern, spec.options)
	if err != nil {
		return nil, nil, err
	}
	return regexPred{re: re}, spec.pattern, nil
}

// compilePatternValue compiles a *regexp.Regexp given where a value is
// expected (implicit equality, $in, $nin, $all, $not, $pull): it matches by
// pattern, as a /regex/ literal does in MongoDB.
func compilePatternValue(op, path string, v any) (predicate, bool, error) {
	if !IsRegex(v) {
		return nil, false, nil
	}
	re, err := compileRegex(op, path, v, nil)
	if err != nil {
		return nil, true, err
	}
	source, ok := v.(*regexp.Regexp)
	if !ok {
		source = re // a bson.Regex, compiled with its options
	}
	return regexPred{re: re, source: source}, true, nil
}

// foldRegexOptions returns m with $options folded into $regex (as a
// regexSpec), so that each operator compiles alone. $options without
// $regex is an error.
func foldRegexOptions(path string, m map[string]any) (map[string]any, error) {
	opts, hasOpts := m["$options"]
	if !hasOpts {
		return m, nil
	}
	pattern, hasRegex := m["$regex"]
	if !hasRegex {
		return nil, filterError("$options", path, "needs a $regex in the same operator document")
	}
	out := make(map[string]any, len(m)-1)
	for k, v := range m {
		if k != "$options" {
			out[k] = v
		}
	}
	out["$regex"] = regexSpec{pattern: pattern, options: opts}
	return out, nil
}

// splitPatterns separates the *regexp.Regexp elements of an $in or $nin
// array (which match by pattern) from the values (which match by
// equality). ok is false if v is not an array.
func splitPatterns(op, path string, v any) (values []any, patterns []predicate, ok bool, err error) {
	elems, isArr := codec.ArrayElements(v)
	if !isArr {
		return nil, nil, false, nil
	}
	for _, e := range elems {
		p, isRe, err := compilePatternValue(op, path, e)
		if err != nil {
			return nil, nil, true, err
		}
		if isRe {
			patterns = append(patterns, p)
		} else {
			values = append(values, e)
		}
	}
	return values, patterns, true, nil
}
