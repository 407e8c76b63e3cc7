package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/query"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// TestStoreIndexDifferential checks rule 5's promise that an index never
// changes an answer: random documents (numbers of several kinds, strings,
// nil, missing fields, arrays, nested documents) go into two collections,
// one with indexes and one without, and random filters, sorts, skips and
// limits, interleaved with random UpdateMany/DeleteMany/inserts applied to
// both, must give the same results. TTLDB_SEED=n replays a seed.
func TestStoreIndexDifferential(t *testing.T) {
	seed := testutil.Seed(t)
	rounds := 1500
	if testing.Short() {
		rounds = 300
	}
	g := diffGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}

	db, err := Open(WithClock(ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))), WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	indexed, plain := db.Collection("indexed"), db.Collection("plain")
	for _, m := range []IndexModel{
		{Keys: []IndexKey{Asc("a")}},
		{Keys: []IndexKey{Desc("b")}},
		{Keys: []IndexKey{Asc("a"), Desc("b")}},
		{Keys: []IndexKey{Desc("b"), Asc("c.d")}},
		{Keys: []IndexKey{Asc("c.d")}},
		{Keys: []IndexKey{Asc("tags")}},
		{Keys: []IndexKey{Asc("e")}, Sparse: true},
		{Keys: []IndexKey{Desc("e"), Asc("b")}, Name: "e_b_sparse", Sparse: true},
		{Keys: []IndexKey{Asc("b")}, Name: "b_partial", PartialFilterExpression: Document{"e": Document{"$exists": true}}},
		// TTL indexes keep only their date tree, which serves the queries
		// it can answer exactly: t always holds one date; u holds dates,
		// numbers and strings read as dates, arrays, or nothing.
		{Keys: []IndexKey{Asc("t")}, ExpireAfterSeconds: Seconds(3600)},
		{Keys: []IndexKey{Desc("u")}, ExpireAfterSeconds: Seconds(0)},
	} {
		_, err := indexed.CreateIndex(context.Background(), m)
		require.NoError(t, err)
	}
	nextID := 0
	insert := func(n int) {
		docs := make([]Document, n)
		for i := range docs {
			docs[i] = g.document(nextID)
			nextID++
		}
		_, err := indexed.InsertMany(context.Background(), docs)
		require.NoError(t, err, "seed %d", seed)
		_, err = plain.InsertMany(context.Background(), docs)
		require.NoError(t, err, "seed %d", seed)
	}
	insert(300)

	plans := map[string]int{}
	for round := range rounds {
		where := fmt.Sprintf("seed %d round %d", seed, round)
		switch g.r.IntN(20) {
		case 0:
			insert(1 + g.r.IntN(5))
			continue
		case 1:
			f, u := g.filter(), g.update()
			r1, err1 := indexed.UpdateMany(context.Background(), f, u)
			r2, err2 := plain.UpdateMany(context.Background(), f, u)
			require.Equal(t, err2 == nil, err1 == nil, "%s: UpdateMany(%v, %v): %v vs %v", where, f, u, err1, err2)
			require.Equal(t, r2, r1, "%s: UpdateMany(%v, %v)", where, f, u)
			continue
		case 2:
			f := g.filter()
			n1, err := indexed.DeleteMany(context.Background(), f)
			require.NoError(t, err, where)
			n2, err := plain.DeleteMany(context.Background(), f)
			require.NoError(t, err, where)
			require.Equal(t, n2, n1, "%s: DeleteMany(%v)", where, f)
			continue
		}
		f, opts := g.filter(), g.findOptions()
		where = fmt.Sprintf("%s: Find(%v, %+v)", where, f, opts)
		got, err := findDocs(indexed, f, opts)
		require.NoError(t, err, where)
		want, err := findDocs(plain, f, opts)
		require.NoError(t, err, where)
		require.Equal(t, len(want), len(got), where)
		if len(opts.Sort) > 0 {
			for i := range got {
				require.Zero(t, query.CompareForSort(got[i], want[i], sortKeys(opts.Sort)), "%s: position %d: %v vs %v", where, i, got[i], want[i])
			}
		}
		// Without skip and limit, the same documents.
		full := FindOptions{Sort: opts.Sort}
		got, err = findDocs(indexed, f, full)
		require.NoError(t, err, where)
		want, err = findDocs(plain, f, full)
		require.NoError(t, err, where)
		byID := func(a, b Document) int { return query.Compare(a["_id"], b["_id"]) }
		slices.SortFunc(got, byID)
		slices.SortFunc(want, byID)
		require.Equal(t, diffIDs(want), diffIDs(got), where)
		for i := range got {
			// Compare, not Equal: NaN equals NaN in a document.
			require.Zero(t, query.Compare(want[i], got[i]), "%s: %v vs %v", where, want[i], got[i])
		}
		n, err := indexed.CountDocuments(context.Background(), f)
		require.NoError(t, err, where)
		require.EqualValues(t, len(want), n, where)
		ex, err := indexed.Explain(context.Background(), f, opts)
		require.NoError(t, err, where)
		plans[ex.Stage+" "+ex.IndexName]++
	}
	t.Logf("plans used: %v", plans)
	require.Positive(t, plans["IXSCAN t_1"], "seed %d: the date tree of t was never used: %v", seed, plans)
	ixscans := 0
	for p, n := range plans {
		if p != "COLLSCAN " {
			ixscans += n
		}
	}
	require.Greater(t, ixscans, rounds/10, "seed %d: the indexes were hardly used: %v", seed, plans)
	n1, _ := indexed.CountDocuments(context.Background(), nil)
	n2, _ := plain.CountDocuments(context.Background(), nil)
	require.Equal(t, n2, n1)
}

type diffGen struct{ r *rand.Rand }

var diffStrings = []string{"", "a", "b", "ab", "c"}

// diffLevel is a named string type: stored, and matched, as a string.
type diffLevel string

// scalar returns a value of one of the kinds a document accepts, in the
// forms a caller may give them (pointers, named types, json.Number), so
// that filters holding them are planned as they are matched.
func (g diffGen) scalar() any {
	if g.r.IntN(3) == 0 {
		return g.otherForm()
	}
	switch g.r.IntN(12) {
	case 0:
		return nil
	case 1:
		return diffStrings[g.r.IntN(len(diffStrings))]
	case 2:
		return g.r.IntN(2) == 0
	case 3:
		return float64(g.r.IntN(7)-3) + 0.5
	case 4:
		return float64(g.r.IntN(7) - 3) // same value as an int
	case 5:
		return int64(g.r.IntN(7) - 3)
	case 6:
		return uint8(g.r.IntN(4))
	case 7:
		return time.Date(2026, 1, 1+g.r.IntN(3), 0, 0, 0, 0, time.UTC)
	default:
		return g.r.IntN(7) - 3
	}
}

// otherForm returns the less common kinds and forms of values.
func (g diffGen) otherForm() any {
	day := time.Date(2026, 1, 1+g.r.IntN(3), 0, 0, 0, 0, time.UTC)
	switch g.r.IntN(16) {
	case 0:
		return &day
	case 1:
		return (*time.Time)(nil)
	case 2:
		return day.In(time.FixedZone("X", 3600*(g.r.IntN(5)-2)))
	case 3:
		return time.Duration(g.r.IntN(7) - 3)
	case 4:
		return diffLevel(diffStrings[g.r.IntN(len(diffStrings))])
	case 5:
		return json.Number(strconv.Itoa(g.r.IntN(7) - 3))
	case 6:
		return json.Number([]string{"0.5", "-1.5", "2.0", "1e0"}[g.r.IntN(4)])
	case 7:
		return []byte(diffStrings[g.r.IntN(len(diffStrings))])
	case 8:
		return ObjectID{byte(g.r.IntN(3))}
	case 9:
		return float32(g.r.IntN(7)-3) / 2
	case 10:
		return uint64(g.r.IntN(4))
	case 11:
		return int8(g.r.IntN(7) - 3)
	case 12:
		return []string{"é", "日本"}[g.r.IntN(2)]
	case 13:
		return Document{"k": g.r.IntN(3)}
	case 14:
		return math.NaN()
	}
	return int32(g.r.IntN(7) - 3)
}

func (g diffGen) array() any {
	n := g.r.IntN(4)
	switch g.r.IntN(6) {
	case 0:
		s := make([]int, n)
		for i := range s {
			s[i] = g.r.IntN(7) - 3
		}
		return s
	case 1:
		s := make([]diffLevel, n)
		for i := range s {
			s[i] = diffLevel(diffStrings[g.r.IntN(len(diffStrings))])
		}
		return s
	}
	s := make([]any, n)
	for i := range s {
		s[i] = g.scalar()
	}
	return s
}

// document makes a document whose fields are each missing sometimes: a
// (scalar or array), b (scalar), c (a document with d, or a scalar), tags
// (an array or a scalar), e (rarely present), z (never indexed).
func (g diffGen) document(id int) Document {
	d := Document{"_id": id}
	if g.r.IntN(5) > 0 {
		if g.r.IntN(4) == 0 {
			d["a"] = g.array()
		} else {
			d["a"] = g.scalar()
		}
	}
	if g.r.IntN(5) > 0 {
		d["b"] = g.scalar()
	}
	switch g.r.IntN(4) {
	case 0:
	case 1:
		d["c"] = g.scalar()
	default:
		c := Document{}
		if g.r.IntN(4) > 0 {
			c["d"] = g.scalar()
		}
		d["c"] = c
	}
	if g.r.IntN(3) > 0 {
		d["tags"] = g.array()
	} else if g.r.IntN(2) == 0 {
		d["tags"] = g.scalar()
	}
	if g.r.IntN(3) == 0 {
		d["e"] = g.scalar()
	}
	d["z"] = g.r.IntN(10)
	d["t"] = g.date()
	if g.r.IntN(5) > 0 {
		d["u"] = g.dateish()
	}
	return d
}

// date is one of a few dates, so that equalities and ties happen.
func (g diffGen) date() time.Time {
	return time.Date(2026, 1, 1+g.r.IntN(5), g.r.IntN(2)*12, 0, 0, 0, time.UTC)
}

// dateish is a value a TTL index reads as a date (a date, Unix seconds,
// an ISO 8601 string, an array of dates) or does not (any scalar).
func (g diffGen) dateish() any {
	switch g.r.IntN(8) {
	case 0:
		return float64(g.date().Unix())
	case 1:
		return g.date().Format(time.RFC3339)
	case 2:
		return []any{g.date(), g.date()}
	case 3:
		return g.scalar()
	}
	return g.date()
}

var diffFields = []string{"a", "a", "b", "b", "c.d", "c", "tags", "e", "_id", "z", "t", "t", "u"}

func (g diffGen) value(field string) any {
	switch {
	case field == "_id":
		return g.r.IntN(320)
	case field == "z":
		return g.r.IntN(10)
	case field == "t" || field == "u":
		if g.r.IntN(6) == 0 {
			return g.dateish()
		}
		return g.date()
	case g.r.IntN(12) == 0:
		return g.array()
	}
	return g.scalar()
}

func (g diffGen) condition(field string) any {
	if g.r.IntN(3) == 0 {
		return g.operatorCondition(field)
	}
	switch g.r.IntN(11) {
	case 0, 1:
		return g.value(field)
	case 2:
		return Document{"$eq": g.value(field)}
	case 3:
		vals := make([]any, g.r.IntN(4))
		for i := range vals {
			vals[i] = g.value(field)
		}
		return Document{"$in": vals}
	case 4:
		return Document{[]string{"$gt", "$gte", "$lt", "$lte"}[g.r.IntN(4)]: g.value(field)}
	case 5, 6:
		return Document{
			[]string{"$gt", "$gte"}[g.r.IntN(2)]: g.value(field),
			[]string{"$lt", "$lte"}[g.r.IntN(2)]: g.value(field),
		}
	case 7:
		return Document{"$ne": g.value(field)}
	case 8:
		return Document{"$nin": []any{g.value(field), g.value(field)}}
	case 9:
		return Document{"$exists": g.r.IntN(2) == 0}
	default:
		return Document{"$not": Document{"$gte": g.value(field)}}
	}
}

var diffPatterns = []string{"^a", "b$", "^$", "A", "^(a|c)"}

var diffTypes = []any{"double", "string", "array", "bool", "date", "null", "int", "long", "number", 16, 4}

// operatorCondition is a condition with the array, evaluation and type
// operators, none of which bounds an index: mixed with a range or an
// equality on the same field, the index bounds come from those alone.
func (g diffGen) operatorCondition(field string) any {
	var c Document
	switch g.r.IntN(10) {
	case 0:
		c = Document{"$regex": diffPatterns[g.r.IntN(len(diffPatterns))]}
		if g.r.IntN(2) == 0 {
			c["$options"] = "i"
		}
	case 1:
		return regexp.MustCompile(diffPatterns[g.r.IntN(len(diffPatterns))]) // implicit pattern
	case 2:
		c = Document{"$in": []any{regexp.MustCompile(diffPatterns[g.r.IntN(len(diffPatterns))]), g.value(field)}}
	case 3:
		c = Document{"$elemMatch": Document{"$gte": g.scalar(), "$lt": g.scalar()}}
	case 4:
		c = Document{"$elemMatch": Document{"d": g.scalar()}}
	case 5:
		c = Document{"$size": g.r.IntN(4)}
	case 6:
		c = Document{"$all": []any{g.scalar(), g.scalar()}[:g.r.IntN(3)]}
	case 7:
		c = Document{"$type": diffTypes[g.r.IntN(len(diffTypes))]}
	case 8:
		c = Document{"$mod": []any{1 + g.r.IntN(3), g.r.IntN(2)}}
	default:
		c = Document{"$not": Document{"$size": g.r.IntN(3)}}
	}
	// Sometimes with an operator that does bound the index.
	switch g.r.IntN(4) {
	case 0:
		c["$gte"] = g.value(field)
	case 1:
		c["$eq"] = g.value(field)
	case 2:
		c["$in"] = []any{g.value(field), g.value(field)}
	}
	return c
}

func (g diffGen) filter() Document {
	f := Document{}
	switch g.r.IntN(8) {
	case 0:
		return nil
	case 1:
		f["$or"] = []any{g.filterTerms(), g.filterTerms()}
		return f
	case 2:
		f["$and"] = []any{g.filterTerms(), g.filterTerms()}
		return f
	}
	return g.filterTerms()
}

func (g diffGen) filterTerms() Document {
	f := Document{}
	for range 1 + g.r.IntN(2) {
		field := diffFields[g.r.IntN(len(diffFields))]
		f[field] = g.condition(field)
	}
	return f
}

var diffSortFields = []string{"a", "b", "c.d", "e", "_id", "z", "tags", "t", "t", "u"}

func (g diffGen) findOptions() FindOptions {
	var o FindOptions
	if g.r.IntN(3) > 0 {
		n := 1 + g.r.IntN(2)
		used := map[string]bool{}
		for range n {
			f := diffSortFields[g.r.IntN(len(diffSortFields))]
			if used[f] {
				continue
			}
			used[f] = true
			o.Sort = append(o.Sort, IndexKey{Field: f, Order: 1 - 2*g.r.IntN(2)})
		}
	}
	if g.r.IntN(3) == 0 {
		o.Skip = g.r.IntN(20)
	}
	if g.r.IntN(2) == 0 {
		o.Limit = 1 + g.r.IntN(30)
	}
	return o
}

func (g diffGen) update() Document {
	field := []string{"a", "b", "c.d", "tags", "e", "z", "t", "u"}[g.r.IntN(8)]
	switch {
	case field == "t":
		return Document{"$set": Document{"t": g.date()}} // t always holds one date
	case field == "u":
		return Document{"$set": Document{"u": g.dateish()}}
	}
	if g.r.IntN(3) == 0 {
		return g.operatorUpdate(field)
	}
	switch g.r.IntN(4) {
	case 0:
		return Document{"$unset": Document{field: ""}}
	case 1:
		return Document{"$inc": Document{"z": g.r.IntN(3)}}
	}
	v := g.value(field)
	if field == "b" || field == "c.d" || field == "e" {
		v = g.scalar()
	}
	return Document{"$set": Document{field: v}}
}

// operatorUpdate uses the array, comparison and arithmetic update
// operators, which change indexed fields (array fields become multikey)
// or fail on a document of the wrong shape, failing the whole UpdateMany.
//
// b, c.d and e stay scalars (or missing): each shares a compound index with
// a field that may hold an array, and a document with two arrays in one
// compound key is refused by the indexed collection only (MongoDB's
// "cannot index parallel arrays"), which would make the two collections
// differ. So only a and tags grow arrays, and only scalar fields move
// into b or e.
func (g diffGen) operatorUpdate(field string) Document {
	scalarOnly := field == "b" || field == "c.d" || field == "e"
	switch g.r.IntN(9) {
	case 0:
		if scalarOnly {
			field = "tags"
		}
		return Document{"$push": Document{field: Document{"$each": []any{g.scalar(), g.scalar()}, "$slice": -3}}}
	case 1:
		if scalarOnly {
			field = "tags"
		}
		return Document{"$addToSet": Document{field: g.scalar()}}
	case 2:
		return Document{"$pull": Document{field: Document{"$gte": g.scalar()}}}
	case 3:
		return Document{"$pop": Document{field: 1 - 2*g.r.IntN(2)}}
	case 4:
		return Document{"$min": Document{field: g.scalar()}}
	case 5:
		return Document{"$max": Document{field: g.scalar()}}
	case 6:
		return Document{"$mul": Document{"z": g.r.IntN(3)}}
	case 7:
		to := []string{"a", "b", "e", "y"}[g.r.IntN(4)]
		if field == "a" || field == "tags" { // may be an array
			to = []string{"a", "y"}[g.r.IntN(2)]
		}
		if to == field {
			to = "y"
		}
		return Document{"$rename": Document{field: to}}
	}
	return Document{"$setOnInsert": Document{field: g.scalar()}}
}

// diffIDs returns the _id values of docs, in order.
func diffIDs(docs []Document) []any {
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d["_id"]
	}
	return out
}
