package aggregate

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

func dec(s string) bson.Decimal128 {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return d
}

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// The $group page's sales collection.
func groupSales() []Document {
	return []Document{
		{"_id": 1, "item": "abc", "price": 10, "quantity": 2, "date": date("2014-03-01T08:00:00Z")},
		{"_id": 2, "item": "jkl", "price": 20, "quantity": 1, "date": date("2014-03-01T09:00:00Z")},
		{"_id": 3, "item": "xyz", "price": 5, "quantity": 10, "date": date("2014-03-15T09:00:00Z")},
		{"_id": 4, "item": "xyz", "price": 5, "quantity": 20, "date": date("2014-04-04T11:21:39.736Z")},
		{"_id": 5, "item": "abc", "price": 10, "quantity": 10, "date": date("2014-04-04T21:23:13.331Z")},
	}
}

func books() []Document {
	return []Document{
		{"_id": 8751, "title": "The Banquet", "author": "Dante", "copies": 2},
		{"_id": 8752, "title": "Divine Comedy", "author": "Dante", "copies": 1},
		{"_id": 8645, "title": "Eclogues", "author": "Dante", "copies": 2},
		{"_id": 7000, "title": "The Odyssey", "author": "Homer", "copies": 10},
		{"_id": 7020, "title": "Iliad", "author": "Homer", "copies": 10},
	}
}

func TestManual_group(t *testing.T) {
	t.Run("distinct values", func(t *testing.T) {
		got := run(t, A{M{"$group": M{"_id": "$item"}}}, groupSales())
		requireSameSet(t, []Document{{"_id": "xyz"}, {"_id": "jkl"}, {"_id": "abc"}}, got)
	})
	t.Run("pivot titles by author", func(t *testing.T) {
		got := run(t, A{M{"$group": M{"_id": "$author", "books": M{"$push": "$title"}}}}, books())
		requireSameSet(t, []Document{
			{"_id": "Homer", "books": A{"The Odyssey", "Iliad"}},
			{"_id": "Dante", "books": A{"The Banquet", "Divine Comedy", "Eclogues"}},
		}, got)
	})
	t.Run("group documents by author with $$ROOT", func(t *testing.T) {
		got := run(t, A{M{"$group": M{"_id": "$author", "books": M{"$push": "$$ROOT"}}}}, books())
		b := books()
		requireSameSet(t, []Document{
			{"_id": "Homer", "books": A{b[3], b[4]}},
			{"_id": "Dante", "books": A{b[0], b[1], b[2]}},
		}, got)
	})
	t.Run("group by null with count", func(t *testing.T) {
		got := run(t, A{M{"$group": M{"_id": nil, "averageQuantity": M{"$avg": "$quantity"}, "count": M{"$sum": 1}, "n": M{"$count": M{}}}}}, groupSales())
		requireSameDocs(t, []Document{{"_id": nil, "averageQuantity": 8.6, "count": 5, "n": 5}}, got)
		require.IsType(t, int64(0), got[0]["count"]) // a Go int is a long
		require.IsType(t, int32(0), got[0]["n"])
		require.IsType(t, float64(0), got[0]["averageQuantity"])
	})
	t.Run("group by null with $multiply", func(t *testing.T) {
		if !query.IsExprOperator("$multiply") {
			t.Skip("$multiply is not on this branch")
		}
		got := run(t, A{M{"$group": M{"_id": nil, "totalPrice": M{"$sum": M{"$multiply": A{"$price", "$quantity"}}}, "averageQuantity": M{"$avg": "$quantity"}, "count": M{"$sum": 1}}}}, groupSales())
		requireSameDocs(t, []Document{{"_id": nil, "totalPrice": 290, "averageQuantity": 8.6, "count": 5}}, got)
	})
}

func TestGroup_keys(t *testing.T) {
	docs := []Document{
		{"a": 1, "b": "x"}, {"a": 1.0, "b": "y"}, {"a": int32(1), "b": "z"},
		{"b": "missing"}, {"a": nil, "b": "null"},
		{"a": M{"x": 1, "y": 2}, "b": "d1"}, {"a": M{"y": 2.0, "x": 1}, "b": "d2"},
	}
	got := run(t, A{M{"$group": M{"_id": "$a", "bs": M{"$push": "$b"}, "first": M{"$first": "$c"}}}}, docs)
	requireSameSet(t, []Document{
		{"_id": 1, "bs": A{"x", "y", "z"}, "first": nil},
		{"_id": nil, "bs": A{"missing", "null"}, "first": nil},
		{"_id": M{"x": 1, "y": 2}, "bs": A{"d1", "d2"}, "first": nil},
	}, got)
	// A compound _id.
	got = run(t, A{M{"$group": M{"_id": M{"k": "$k", "j": "$j"}, "n": M{"$sum": 1}}}}, []Document{{"k": 1, "j": 2}, {"k": 1, "j": 2}, {"k": 1}})
	requireSameSet(t, []Document{{"_id": M{"k": 1, "j": 2}, "n": 2}, {"_id": M{"k": 1}, "n": 1}}, got)
	// A constant _id groups all; no input, no group.
	require.Empty(t, run(t, A{M{"$group": M{"_id": nil, "n": M{"$sum": 1}}}}, nil))
}

func TestGroup_errors(t *testing.T) {
	for name, spec := range map[string]any{
		"no _id":            M{"n": M{"$sum": 1}},
		"unknown acc":       M{"_id": nil, "n": M{"$nope": 1}},
		"two accs":          M{"_id": nil, "n": od("$sum", 1, "$avg", 1)},
		"dotted field":      M{"_id": nil, "a.b": M{"$sum": 1}},
		"not an acc":        M{"_id": nil, "n": 1},
		"count with arg":    M{"_id": nil, "n": M{"$count": M{"x": 1}}},
		"bad _id":           M{"_id": M{"$nope": 1}},
		"not a document":    5,
		"accumulator $op":   M{"_id": nil, "$n": M{"$sum": 1}},
		"firstN n negative": M{"_id": nil, "n": M{"$firstN": M{"input": "$a", "n": -1}}},
	} {
		err := compileErr(M{"$group": spec})
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
		require.Contains(t, err.Error(), "$group", name)
	}
}

func TestManual_match(t *testing.T) {
	articles := []Document{
		{"_id": 1, "author": "dave", "score": 80, "views": 100},
		{"_id": 2, "author": "dave", "score": 85, "views": 521},
		{"_id": 3, "author": "ahn", "score": 60, "views": 1000},
		{"_id": 4, "author": "li", "score": 55, "views": 5000},
		{"_id": 5, "author": "annT", "score": 60, "views": 50},
		{"_id": 6, "author": "li", "score": 94, "views": 999},
		{"_id": 7, "author": "ty", "score": 95, "views": 1000},
	}
	got := run(t, A{M{"$match": M{"author": "dave"}}}, articles)
	requireSameDocs(t, articles[:2], got)
	got = run(t, A{
		M{"$match": M{"$or": A{M{"score": M{"$gt": 70, "$lt": 90}}, M{"views": M{"$gte": 1000}}}}},
		M{"$group": M{"_id": nil, "count": M{"$sum": 1}}},
	}, articles)
	requireSameDocs(t, []Document{{"_id": nil, "count": 5}}, got)

	p, err := Compile(A{od("$match", od("author", "dave"))}, Options{})
	require.NoError(t, err)
	require.Equal(t, Document{"author": "dave"}, p.Stages[0].Filter)
	require.ErrorIs(t, compileErr(M{"$match": M{"a": M{"$bad": 1}}}), errs.ErrInvalidFilter)
	require.ErrorIs(t, compileErr(M{"$match": 1}), errs.ErrInvalidOptions)
}

func TestManual_unwind(t *testing.T) {
	got := run(t, A{M{"$unwind": "$sizes"}}, []Document{{"_id": 1, "item": "ABC1", "sizes": A{"S", "M", "L"}}})
	requireSameDocs(t, []Document{
		{"_id": 1, "item": "ABC1", "sizes": "S"},
		{"_id": 1, "item": "ABC1", "sizes": "M"},
		{"_id": 1, "item": "ABC1", "sizes": "L"},
	}, got)

	inv := func() []Document {
		return []Document{
			{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": A{"S", "M", "L"}},
			{"_id": 2, "item": "EFG", "price": dec("120"), "sizes": A{}},
			{"_id": 3, "item": "IJK", "price": dec("160"), "sizes": "M"},
			{"_id": 4, "item": "LMN", "price": dec("10")},
			{"_id": 5, "item": "XYZ", "price": dec("5.75"), "sizes": nil},
		}
	}
	plain := []Document{
		{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": "S"},
		{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": "M"},
		{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": "L"},
		{"_id": 3, "item": "IJK", "price": dec("160"), "sizes": "M"},
	}
	requireSameDocs(t, plain, run(t, A{M{"$unwind": "$sizes"}}, inv()))
	requireSameDocs(t, plain, run(t, A{M{"$unwind": M{"path": "$sizes"}}}, inv()))

	got = run(t, A{M{"$unwind": M{"path": "$sizes", "includeArrayIndex": "arrayIndex"}}}, inv())
	requireSameDocs(t, []Document{
		{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": "S", "arrayIndex": int64(0)},
		{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": "M", "arrayIndex": int64(1)},
		{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": "L", "arrayIndex": int64(2)},
		{"_id": 3, "item": "IJK", "price": dec("160"), "sizes": "M", "arrayIndex": nil},
	}, got)
	require.IsType(t, int64(0), got[1]["arrayIndex"])

	got = run(t, A{M{"$unwind": M{"path": "$sizes", "preserveNullAndEmptyArrays": true}}}, inv())
	requireSameDocs(t, []Document{
		{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": "S"},
		{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": "M"},
		{"_id": 1, "item": "ABC", "price": dec("80"), "sizes": "L"},
		{"_id": 2, "item": "EFG", "price": dec("120")},
		{"_id": 3, "item": "IJK", "price": dec("160"), "sizes": "M"},
		{"_id": 4, "item": "LMN", "price": dec("10")},
		{"_id": 5, "item": "XYZ", "price": dec("5.75"), "sizes": nil},
	}, got)

	// Group by unwound values: averages of decimals are decimals.
	got = run(t, A{
		M{"$unwind": M{"path": "$sizes", "preserveNullAndEmptyArrays": true}},
		M{"$group": M{"_id": "$sizes", "averagePrice": M{"$avg": "$price"}}},
		M{"$sort": od("averagePrice", -1, "_id", -1)},
	}, inv())
	requireSameDocs(t, []Document{
		{"_id": "M", "averagePrice": dec("120")},
		{"_id": "S", "averagePrice": dec("80")},
		{"_id": "L", "averagePrice": dec("80")},
		{"_id": nil, "averagePrice": dec("45.25")},
	}, got)
	require.IsType(t, bson.Decimal128{}, got[3]["averagePrice"])

	// Embedded arrays: unwinding a nested path.
	sales := []Document{
		{"_id": "1", "items": A{
			M{"name": "pens", "tags": A{"writing", "office", "school", "stationary"}, "price": dec("12.00"), "quantity": int32(5)},
			M{"name": "envelopes", "tags": A{"stationary", "office"}, "price": dec("1.95"), "quantity": int32(8)},
		}},
		{"_id": "2", "items": A{
			M{"name": "laptop", "tags": A{"office", "electronics"}, "price": dec("800.00"), "quantity": int32(1)},
			M{"name": "notepad", "tags": A{"stationary", "school"}, "price": dec("14.95"), "quantity": int32(3)},
		}},
	}
	got = run(t, A{M{"$unwind": "$items"}, M{"$unwind": "$items.tags"}, M{"$group": M{"_id": "$items.tags", "n": M{"$sum": 1}}}}, sales)
	requireSameSet(t, []Document{
		{"_id": "writing", "n": 1}, {"_id": "stationary", "n": 3}, {"_id": "electronics", "n": 1},
		{"_id": "school", "n": 2}, {"_id": "office", "n": 3},
	}, got)
	// The input is not changed.
	_, isArr := sales[0]["items"].([]any)
	require.True(t, isArr)

	for name, arg := range map[string]any{
		"no $":        "sizes",
		"bad option":  M{"path": "$a", "x": 1},
		"no path":     M{"includeArrayIndex": "i"},
		"index $":     M{"path": "$a", "includeArrayIndex": "$i"},
		"preserve":    M{"path": "$a", "preserveNullAndEmptyArrays": 1},
		"not a path":  5,
		"a variable":  "$$ROOT",
		"empty field": "$a..b",
	} {
		err := compileErr(M{"$unwind": arg})
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
		require.Contains(t, err.Error(), "$unwind", name)
	}
}

func TestSortLimitSkip(t *testing.T) {
	docs := []Document{
		{"_id": 1, "a": 3, "b": "x"}, {"_id": 2, "a": 1, "b": "y"}, {"_id": 3, "b": "z"},
		{"_id": 4, "a": A{0, 5}}, {"_id": 5, "a": 1, "b": "a"}, {"_id": 6, "a": "s"},
	}
	ids := func(ds []Document) []any {
		var out []any
		for _, d := range ds {
			out = append(out, d["_id"])
		}
		return out
	}
	got := run(t, A{M{"$sort": od("a", 1, "b", 1)}}, docs)
	require.Equal(t, []any{3, 4, 5, 2, 1, 6}, ids(got))
	got = run(t, A{M{"$sort": od("a", -1, "b", -1)}}, docs)
	require.Equal(t, []any{6, 4, 1, 2, 5, 3}, ids(got))
	// Top-k: the same first documents as a full sort.
	for k := 1; k <= 7; k++ {
		got = run(t, A{M{"$sort": od("a", 1, "b", 1)}, M{"$limit": k}}, docs)
		full := []any{3, 4, 5, 2, 1, 6}
		require.Equal(t, full[:min(k, 6)], ids(got), "k=%d", k)
	}
	p, err := Compile(A{M{"$sort": M{"a": -1}}, M{"$limit": int32(2)}, M{"$skip": 1.0}}, Options{})
	require.NoError(t, err)
	require.Equal(t, []query.Key{{Field: "a", Order: -1}}, p.Stages[0].Sort)
	require.Equal(t, int64(2), p.Stages[0].limit)
	require.Equal(t, int64(2), p.Stages[1].N)
	require.Equal(t, int64(1), p.Stages[2].N)

	p, err = Compile(A{M{"$sort": M{"a": -1}}, M{"$skip": 3}, M{"$limit": 2}}, Options{})
	require.NoError(t, err)
	require.Equal(t, int64(5), p.Stages[0].limit)
	got = run(t, A{M{"$sort": od("a", 1, "b", 1)}, M{"$skip": 2}, M{"$limit": 2}}, docs)
	require.Equal(t, []any{5, 2}, ids(got))

	got = run(t, A{M{"$skip": 4}}, docs)
	require.Equal(t, []any{5, 6}, ids(got))
	got = run(t, A{M{"$skip": 0}, M{"$limit": 2}}, docs)
	require.Equal(t, []any{1, 2}, ids(got))
	require.Empty(t, run(t, A{M{"$skip": 10}}, docs))

	for name, st := range map[string]any{
		"sort map of two":  M{"$sort": M{"a": 1, "b": 1}},
		"sort order 2":     M{"$sort": M{"a": 2}},
		"sort order 0":     M{"$sort": M{"a": 0}},
		"sort meta":        M{"$sort": M{"a": M{"$meta": "textScore"}}},
		"sort empty":       M{"$sort": M{}},
		"sort string":      M{"$sort": M{"a": "asc"}},
		"sort twice":       M{"$sort": od("a", 1, "a", -1)},
		"limit 0":          M{"$limit": 0},
		"limit negative":   M{"$limit": -1},
		"limit fractional": M{"$limit": 1.5},
		"limit string":     M{"$limit": "1"},
		"skip negative":    M{"$skip": -1},
	} {
		err := compileErr(st)
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
	}
	require.Contains(t, compileErr(M{"$sort": M{"a": M{"$meta": "textScore"}}}).Error(), "$meta")
}

func TestManual_sort(t *testing.T) {
	restaurants := []Document{
		{"_id": 1, "name": "Central Park Cafe", "borough": "Manhattan"},
		{"_id": 2, "name": "Rock A Feller Bar and Grill", "borough": "Queens"},
		{"_id": 3, "name": "Empire State Pub", "borough": "Brooklyn"},
		{"_id": 4, "name": "Stan's Pizzaria", "borough": "Manhattan"},
		{"_id": 5, "name": "Jane's Deli", "borough": "Brooklyn"},
	}
	got := run(t, A{M{"$sort": od("borough", 1, "_id", 1)}}, restaurants)
	var ids []any
	for _, d := range got {
		ids = append(ids, d["_id"])
	}
	require.Equal(t, []any{3, 5, 1, 4, 2}, ids)
	// Ties keep the input's order (MongoDB leaves it unspecified).
	got = run(t, A{M{"$sort": M{"borough": -1}}, M{"$limit": 3}}, restaurants)
	requireSameDocs(t, []Document{restaurants[1], restaurants[0], restaurants[3]}, got)
}

func TestManual_countAccumulator(t *testing.T) {
	cakeSales := []Document{
		{"_id": 0, "type": "chocolate", "state": "CA", "price": 13, "quantity": 120},
		{"_id": 1, "type": "chocolate", "state": "WA", "price": 14, "quantity": 140},
		{"_id": 2, "type": "vanilla", "state": "CA", "price": 12, "quantity": 145},
		{"_id": 3, "type": "vanilla", "state": "WA", "price": 13, "quantity": 104},
		{"_id": 4, "type": "strawberry", "state": "CA", "price": 41, "quantity": 162},
		{"_id": 5, "type": "strawberry", "state": "WA", "price": 43, "quantity": 134},
	}
	got := run(t, A{M{"$group": M{"_id": "$state", "countNumberOfDocumentsForState": M{"$count": M{}}}}}, cakeSales)
	requireSameSet(t, []Document{{"_id": "CA", "countNumberOfDocumentsForState": 3}, {"_id": "WA", "countNumberOfDocumentsForState": 3}}, got)
	require.IsType(t, int32(0), got[0]["countNumberOfDocumentsForState"])
}

// TestGroupIDDocumentOfOneField: MongoDB's computeId evaluates an _id
// document of one field as that field's expression, a missing value as
// null, so a document missing the field groups with an explicit null;
// with several fields a missing one is left out of the key.
func TestGroupIDDocumentOfOneField(t *testing.T) {
	docs := []Document{{"_id": 1, "y": 2}, {"_id": 2, "x": nil, "y": 2}}
	one := run(t, []any{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "g1", Value: "$x"}}}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}, docs)
	require.Len(t, one, 1)
	require.Equal(t, Document{"g1": nil}, one[0]["_id"])
	two := run(t, []any{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "g1", Value: "$x"}, {Key: "g2", Value: "$y"}}}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}, docs)
	require.Len(t, two, 2)
}

// TestSumRoundsOnce: $sum adds integers exactly past an int64's range
// and rounds the whole once, as MongoDB's double-double sum does.
func TestSumRoundsOnce(t *testing.T) {
	sum := func(vals ...any) any {
		var docs []Document
		for i, v := range vals {
			docs = append(docs, Document{"_id": i, "v": v})
		}
		out := run(t, []any{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}, docs)
		require.Len(t, out, 1)
		return out[0]["s"]
	}
	require.Equal(t, 1.0000000000000002e16, sum(1e16, int32(1), int32(1)))
	require.Equal(t, 0.6, sum(0.1, 0.2, 0.3))
	// 2·(2^63−1) + 3 = 2^64 + 1: exactly, then rounded.
	require.Equal(t, 1.8446744073709552e19, sum(int64(math.MaxInt64), int64(math.MaxInt64), int64(3)))
	// Past the overflow the integers stay exact: −2^63 − 1 + (2^63−1) + 2^53 + 1 = 2^53 − 1.
	require.Equal(t, float64(1<<53-1), sum(int64(math.MinInt64), int64(-1), int64(math.MaxInt64), int64(1<<53), int64(1)))
}

// TestTopNSortByTwoFields: $topN's sortBy of several fields, given as a
// bson.D, keeps its order (the first field first).
func TestTopNSortByTwoFields(t *testing.T) {
	docs := []Document{
		{"_id": 1, "a": 1, "b": 5},
		{"_id": 2, "a": 2, "b": 1},
		{"_id": 3, "a": 1, "b": 9},
	}
	top := func(sortBy bson.D) any {
		out := run(t, []any{bson.D{{Key: "$group", Value: bson.D{
			{Key: "_id", Value: nil},
			{Key: "ids", Value: bson.D{{Key: "$topN", Value: bson.D{{Key: "n", Value: 3}, {Key: "sortBy", Value: sortBy}, {Key: "output", Value: "$_id"}}}}},
		}}}}, docs)
		require.Len(t, out, 1)
		return out[0]["ids"]
	}
	require.Equal(t, []any{3, 1, 2}, top(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}))
	require.Equal(t, []any{2, 1, 3}, top(bson.D{{Key: "b", Value: 1}, {Key: "a", Value: 1}}))
}
