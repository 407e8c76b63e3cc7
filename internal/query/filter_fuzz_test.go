package query

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// filterFuzzDocuments are the documents every fuzzed filter runs against:
// between them they hold each kind of stored value, including NaN, nested
// arrays and typed slices.
var filterFuzzDocuments = []codec.Document{
	{},
	{"a": nil},
	{"a": 1, "b": "x", "n": math.NaN()},
	{"a": []any{1, "x", nil, []any{2, 3}, codec.Document{"b": 5}}},
	{"a": codec.Document{"b": []any{codec.Document{"c": 1}, codec.Document{"c": []int{1, 2}}}}, "tags": []string{"x", "y"}},
	{"a": []map[string]any{{"b": 1.5}, {"b": "s"}}, "d": filterT0, "ds": []time.Time{filterT1}},
	{"a": codec.ObjectID{1}, "b": []byte{1}, "c": true, "n": uint64(math.MaxUint64), "f": float32(-0.5)},
}

// filterFuzzSeeds are JSON filters; the same bytes also drive the structure
// generator.
var filterFuzzSeeds = []string{
	`{}`,
	`{"a":1}`,
	`{"a":null}`,
	`{"a.b":{"$gt":1,"$lt":5}}`,
	`{"a":{"$in":[1,"x",null]},"tags":{"$nin":[]}}`,
	`{"$or":[{"a":{"$exists":true}},{"b":{"$ne":"x"}}]}`,
	`{"$nor":[{"a.0":{"$not":{"$gte":2}}}],"$and":[{}]}`,
	`{"a":{"b":[1,{"c":2}]}}`,
	`{"a":{"$foo":1}}`,
	`{"$and":[]}`,
	`{"a..b":1}`,
	`{"a":{"$not":{}}}`,
	`{"a":{"$exists":0,"$eq":[1,2]}}`,
	`{"b":{"$regex":"^x","$options":"imsx"}}`,
	`{"b":{"$regex":"a(?=b)"}}`,
	`{"b":{"$regex":"(a)\\1"}}`,
	`{"b":{"$options":"i"}}`,
	`{"tags":{"$not":{"$regex":"y # comment","$options":"x"}}}`,
	`{"a":{"$elemMatch":{"b":{"$gte":5}}}}`,
	`{"a":{"$elemMatch":{"$gt":1,"$lt":3}}}`,
	`{"a":{"$elemMatch":{"$gt":1,"b":3}}}`,
	`{"a":{"$size":2},"tags":{"$size":2.5}}`,
	`{"a":{"$size":-1}}`,
	`{"tags":{"$all":["x","y"]}}`,
	`{"a":{"$all":[{"$elemMatch":{"b":5}}]}}`,
	`{"a":{"$all":[]}}`,
	`{"a":{"$type":["number","string"]},"n":{"$type":1}}`,
	`{"a":{"$type":"nope"}}`,
	`{"a":{"$mod":[2,1]}}`,
	`{"a":{"$mod":[0,1]}}`,
	`{"a":{"$mod":[2]}}`,
	`{"$expr":{"$and":["$a",{"$not":"$b"}]},"$or":[{"$expr":"$n"}]}`,
	`{"$expr":{"$year":"$d"}}`,
}

func FuzzCompileFilter(f *testing.F) {
	for _, s := range filterFuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fromJSON map[string]any
		if json.Unmarshal(data, &fromJSON) == nil {
			checkFuzzedFilter(t, fromJSON)
		}
		g := filterGenerator{data: data}
		checkFuzzedFilter(t, g.document(0))
	})
}

// checkFuzzedFilter compiles fd and, if it compiles, checks that matching is
// deterministic and that $and/$or of it agree with it and $nor negates it.
func checkFuzzedFilter(t *testing.T, fd map[string]any) {
	fl, err := CompileFilter(fd)
	if err != nil {
		if !errors.Is(err, errs.ErrInvalidFilter) {
			t.Fatalf("compileFilter(%#v) error %v does not wrap errs.ErrInvalidFilter", fd, err)
		}
		return
	}
	and, errAnd := CompileFilter(codec.Document{"$and": []any{fd}})
	or, errOr := CompileFilter(codec.Document{"$or": []any{fd}})
	nor, errNor := CompileFilter(codec.Document{"$nor": []any{fd}})
	for _, doc := range filterFuzzDocuments {
		m := fl.Matches(doc)
		if fl.Matches(doc) != m {
			t.Fatalf("filter %#v matches %#v inconsistently", fd, doc)
		}
		if errAnd == nil && and.Matches(doc) != m {
			t.Fatalf("$and of %#v disagrees on %#v", fd, doc)
		}
		if errOr == nil && or.Matches(doc) != m {
			t.Fatalf("$or of %#v disagrees on %#v", fd, doc)
		}
		if errNor == nil && nor.Matches(doc) == m {
			t.Fatalf("$nor of %#v does not negate it on %#v", fd, doc)
		}
	}
}

// filterGenerator builds filter-shaped structures from fuzzer bytes, reaching
// Go kinds JSON cannot express (typed slices, dates, ObjectIDs, NaN, invalid
// values).
type filterGenerator struct {
	data []byte
}

// filterGeneratorKeys mixes field paths (valid and not) with every operator
// and a few unknown ones.
var filterGeneratorKeys = []string{
	"a", "b", "a.b", "a.0", "a.b.c", "tags", "n", "", "a..b", ".a",
	"$and", "$or", "$nor", "$not", "$eq", "$ne", "$gt", "$gte", "$lt", "$lte",
	"$in", "$nin", "$exists", "$foo", "$regex",
	"$options", "$elemMatch", "$size", "$all", "$type", "$mod", "$expr",
}

// filterFuzzPatterns are the *regexp.Regexp values the generator uses, as
// implicit patterns and in $regex, $in, $all and $not.
var filterFuzzPatterns = []*regexp.Regexp{
	regexp.MustCompile("^x"), regexp.MustCompile("(?i)A"), regexp.MustCompile(""), nil,
}

// filterGeneratorMaxDepth keeps generated structures small.
const filterGeneratorMaxDepth = 6

func (g *filterGenerator) next() byte {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return b
}

func (g *filterGenerator) document(depth int) map[string]any {
	n := int(g.next() % 4)
	m := make(map[string]any, n)
	for range n {
		key := filterGeneratorKeys[int(g.next())%len(filterGeneratorKeys)]
		m[key] = g.value(depth + 1)
	}
	return m
}

func (g *filterGenerator) value(depth int) any {
	b := g.next()
	kind := b % 21
	if depth >= filterGeneratorMaxDepth && kind >= 14 && kind < 20 {
		kind %= 14 // no more nesting
	}
	switch kind {
	case 0:
		return nil
	case 1:
		return int(int8(g.next()))
	case 2:
		return float64(int8(g.next())) / 2
	case 3:
		return math.NaN()
	case 4:
		return string(rune('a' + g.next()%3))
	case 5:
		return g.next()%2 == 0
	case 6:
		return filterT0.Add(time.Duration(g.next()) * time.Hour)
	case 7:
		t := filterT1
		return &t
	case 8:
		return codec.ObjectID{g.next()}
	case 9:
		return []byte{g.next()}
	case 10:
		return []string{"x", string(rune('a' + g.next()%3))}
	case 11:
		return []int{int(g.next()), 1}
	case 12:
		return uint64(math.MaxUint64) - uint64(g.next())
	case 13:
		return make(chan int) // invalid: must be refused
	case 14, 15, 16:
		return g.document(depth)
	case 17:
		return []map[string]any{g.document(depth)}
	case 20:
		return filterFuzzPatterns[int(g.next())%len(filterFuzzPatterns)]
	}
	n := int(g.next() % 4)
	arr := make([]any, n)
	for i := range arr {
		arr[i] = g.value(depth + 1)
	}
	return arr
}
