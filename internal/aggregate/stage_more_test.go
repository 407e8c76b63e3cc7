package aggregate

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

func TestManual_count(t *testing.T) {
	scores := []Document{
		{"_id": 1, "subject": "History", "score": 88}, {"_id": 2, "subject": "History", "score": 92},
		{"_id": 3, "subject": "History", "score": 97}, {"_id": 4, "subject": "History", "score": 71},
		{"_id": 5, "subject": "History", "score": 79}, {"_id": 6, "subject": "History", "score": 83},
	}
	got := run(t, A{M{"$match": M{"score": M{"$gt": 80}}}, M{"$count": "passing_scores"}}, scores)
	require.Equal(t, []Document{{"passing_scores": int32(4)}}, got)
	require.Empty(t, run(t, A{M{"$count": "n"}}, nil))
	for _, arg := range []any{"", "$n", "a.b", 1} {
		require.ErrorIs(t, compileErr(M{"$count": arg}), errs.ErrInvalidOptions, "%v", arg)
	}
}

func TestManual_sortByCount(t *testing.T) {
	exhibits := []Document{
		{"_id": 1, "title": "The Pillars of Society", "artist": "Grosz", "year": 1926, "tags": A{"painting", "satire", "Expressionism", "caricature"}},
		{"_id": 2, "title": "Melancholy III", "artist": "Munch", "year": 1902, "tags": A{"woodcut", "Expressionism"}},
		{"_id": 3, "title": "Dancer", "artist": "Miro", "year": 1925, "tags": A{"oil", "Surrealism", "painting"}},
		{"_id": 4, "title": "The Great Wave off Kanagawa", "artist": "Hokusai", "tags": A{"woodblock", "ukiyo-e"}},
		{"_id": 5, "title": "The Persistence of Memory", "artist": "Dali", "year": 1931, "tags": A{"Surrealism", "painting", "oil"}},
		{"_id": 6, "title": "Composition VII", "artist": "Kandinsky", "year": 1913, "tags": A{"oil", "painting", "abstract"}},
		{"_id": 7, "title": "The Scream", "artist": "Munch", "year": 1893, "tags": A{"Expressionism", "painting", "oil"}},
		{"_id": 8, "title": "Blue Flower", "artist": "O'Keefe", "year": 1918, "tags": A{"abstract", "painting"}},
	}
	got := run(t, A{M{"$unwind": "$tags"}, M{"$sortByCount": "$tags"}}, exhibits)
	require.Len(t, got, 10)
	requireSameDocs(t, []Document{{"_id": "painting", "count": 6}, {"_id": "oil", "count": 4}, {"_id": "Expressionism", "count": 3}}, got[:3])
	requireSameSet(t, []Document{{"_id": "Surrealism", "count": 2}, {"_id": "abstract", "count": 2}}, got[3:5])
	requireSameSet(t, []Document{
		{"_id": "woodblock", "count": 1}, {"_id": "woodcut", "count": 1}, {"_id": "ukiyo-e", "count": 1},
		{"_id": "satire", "count": 1}, {"_id": "caricature", "count": 1},
	}, got[5:])
	require.IsType(t, int32(0), got[0]["count"])
	got = run(t, A{M{"$sortByCount": M{"$ifNull": A{"$artist", "none"}}}}, exhibits)
	requireSameDocs(t, []Document{{"_id": "Munch", "count": 2}}, got[:1])
	for _, arg := range []any{"tags", 1, A{"$a"}, M{"a": "$tags"}} {
		require.ErrorIs(t, compileErr(M{"$sortByCount": arg}), errs.ErrInvalidOptions, "%v", arg)
	}
}

func artists() []Document {
	return []Document{
		{"_id": 1, "last_name": "Bernard", "first_name": "Emil", "year_born": 1868, "year_died": 1941, "nationality": "France"},
		{"_id": 2, "last_name": "Rippl-Ronai", "first_name": "Joszef", "year_born": 1861, "year_died": 1927, "nationality": "Hungary"},
		{"_id": 3, "last_name": "Ostroumova", "first_name": "Anna", "year_born": 1871, "year_died": 1955, "nationality": "Russia"},
		{"_id": 4, "last_name": "Van Gogh", "first_name": "Vincent", "year_born": 1853, "year_died": 1890, "nationality": "Holland"},
		{"_id": 5, "last_name": "Maurer", "first_name": "Alfred", "year_born": 1868, "year_died": 1932, "nationality": "USA"},
		{"_id": 6, "last_name": "Munch", "first_name": "Edvard", "year_born": 1863, "year_died": 1944, "nationality": "Norway"},
		{"_id": 7, "last_name": "Redon", "first_name": "Odilon", "year_born": 1840, "year_died": 1916, "nationality": "France"},
		{"_id": 8, "last_name": "Diriks", "first_name": "Edvard", "year_born": 1855, "year_died": 1930, "nationality": "Norway"},
	}
}

func TestManual_bucket(t *testing.T) {
	got := run(t, A{M{"$bucket": M{
		"groupBy":    "$year_born",
		"boundaries": A{1840, 1850, 1860, 1870, 1880},
		"default":    "Other",
		"output":     od("count", M{"$sum": 1}, "artists", M{"$push": M{"last": "$last_name", "year_born": "$year_born"}}),
	}}, M{"$match": M{"count": M{"$gt": 3}}}}, artists())
	requireSameDocs(t, []Document{{"_id": 1860, "count": 4, "artists": A{
		M{"last": "Bernard", "year_born": 1868}, M{"last": "Rippl-Ronai", "year_born": 1861},
		M{"last": "Maurer", "year_born": 1868}, M{"last": "Munch", "year_born": 1863},
	}}}, got)

	// All buckets, sorted by _id; the default one holds what falls outside
	// (null and missing too); without output, a count.
	docs := append(artists(), Document{"_id": 9, "year_born": 1900}, Document{"_id": 10}, Document{"_id": 11, "year_born": "x"})
	got = run(t, A{M{"$bucket": M{"groupBy": "$year_born", "boundaries": A{1840, 1850, 1860, 1870, 1880}, "default": "Other"}}}, docs)
	requireSameDocs(t, []Document{
		{"_id": 1840, "count": 1}, {"_id": 1850, "count": 2}, {"_id": 1860, "count": 4},
		{"_id": 1870, "count": 1}, {"_id": "Other", "count": 3},
	}, got)

	t.Run("with $concat", func(t *testing.T) {
		if !query.IsExprOperator("$concat") {
			t.Skip("$concat is not on this branch")
		}
		got := run(t, A{M{"$bucket": M{
			"groupBy": "$year_born", "boundaries": A{1840, 1850, 1860, 1870, 1880}, "default": "Other",
			"output": M{"count": M{"$sum": 1}, "artists": M{"$push": M{"name": M{"$concat": A{"$first_name", " ", "$last_name"}}, "year_born": "$year_born"}}},
		}}, M{"$match": M{"count": M{"$gt": 3}}}}, artists())
		requireSameDocs(t, []Document{{"_id": 1860, "count": 4, "artists": A{
			M{"name": "Emil Bernard", "year_born": 1868}, M{"name": "Joszef Rippl-Ronai", "year_born": 1861},
			M{"name": "Alfred Maurer", "year_born": 1868}, M{"name": "Edvard Munch", "year_born": 1863},
		}}}, got)
	})

	// Outside without a default: an error naming the stage.
	_, err := runWith(newHost(nil), Options{}, A{M{"$bucket": M{"groupBy": "$year_born", "boundaries": A{1850, 1860}}}}, artists())
	require.ErrorIs(t, err, errs.ErrExpression)
	require.ErrorContains(t, err, "$bucket")

	for name, arg := range map[string]any{
		"one boundary":     M{"groupBy": "$a", "boundaries": A{1}},
		"unsorted":         M{"groupBy": "$a", "boundaries": A{2, 1}},
		"repeated":         M{"groupBy": "$a", "boundaries": A{1, 1}},
		"mixed types":      M{"groupBy": "$a", "boundaries": A{1, "a"}},
		"default inside":   M{"groupBy": "$a", "boundaries": A{1, 5}, "default": 3},
		"literal groupBy":  M{"groupBy": "a", "boundaries": A{1, 5}},
		"no groupBy":       M{"boundaries": A{1, 5}},
		"unknown":          M{"groupBy": "$a", "boundaries": A{1, 5}, "x": 1},
		"output not acc":   M{"groupBy": "$a", "boundaries": A{1, 5}, "output": M{"n": 1}},
		"null boundary":    M{"groupBy": "$a", "boundaries": A{nil, 5}},
		"not an array":     M{"groupBy": "$a", "boundaries": 5},
		"output _id field": M{"groupBy": "$a", "boundaries": A{1, 5}, "output": M{"_id": M{"$sum": 1}}},
	} {
		err := compileErr(M{"$bucket": arg})
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
		require.ErrorContains(t, err, "$bucket", name)
	}
	// Numbers of different types are one type; a default of another type
	// may sit anywhere in BSON order.
	require.NoError(t, compileErr(M{"$bucket": M{"groupBy": "$a", "boundaries": A{int32(1), 2.5, int64(3)}, "default": "z"}}))
}

func TestSample(t *testing.T) {
	var docs []Document
	for i := range 100 {
		docs = append(docs, Document{"_id": i})
	}
	ids := func(ds []Document) []any {
		var out []any
		for _, d := range ds {
			out = append(out, d["_id"])
		}
		return out
	}
	a, err := runWith(newHost(nil), Options{Seed: 42}, A{M{"$sample": M{"size": 5}}}, docs)
	require.NoError(t, err)
	b, err := runWith(newHost(nil), Options{Seed: 42}, A{M{"$sample": M{"size": 5}}}, docs)
	require.NoError(t, err)
	c, err := runWith(newHost(nil), Options{Seed: 43}, A{M{"$sample": M{"size": 5}}}, docs)
	require.NoError(t, err)
	require.Len(t, a, 5)
	require.Equal(t, ids(a), ids(b), "one seed, one sample")
	require.NotEqual(t, ids(a), ids(c), "another seed, another sample")
	seen := map[any]bool{}
	for _, d := range a {
		require.False(t, seen[d["_id"]], "distinct documents")
		seen[d["_id"]] = true
	}
	// Fewer documents than the size: all of them.
	got := run(t, A{M{"$sample": M{"size": 500}}}, docs)
	requireSameSet(t, docs, got)
	require.Empty(t, run(t, A{M{"$sample": M{"size": 0}}}, docs))
	// Every document may be chosen: over many seeds each one shows up.
	hits := map[any]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		got, err := runWith(newHost(nil), Options{Seed: seed}, A{M{"$sample": M{"size": 5}}}, docs)
		require.NoError(t, err)
		for _, d := range got {
			hits[d["_id"]]++
		}
	}
	require.Greater(t, len(hits), 90)
	for _, arg := range []any{M{"size": -1}, M{}, M{"size": 1, "x": 1}, 5, M{"size": "1"}} {
		require.ErrorIs(t, compileErr(M{"$sample": arg}), errs.ErrInvalidOptions, "%v", arg)
	}
}

func TestManual_lookup(t *testing.T) {
	orders := []Document{
		{"_id": 1, "item": "almonds", "price": 12, "quantity": 2},
		{"_id": 2, "item": "pecans", "price": 20, "quantity": 1},
		{"_id": 3},
	}
	inventory := []Document{
		{"_id": 1, "sku": "almonds", "description": "product 1", "instock": 120},
		{"_id": 2, "sku": "bread", "description": "product 2", "instock": 80},
		{"_id": 3, "sku": "cashews", "description": "product 3", "instock": 60},
		{"_id": 4, "sku": "pecans", "description": "product 4", "instock": 70},
		{"_id": 5, "sku": nil, "description": "Incomplete"},
		{"_id": 6},
	}
	h := newHost(map[string][]Document{"inventory": inventory})
	got, err := runWith(h, Options{}, A{M{"$lookup": M{"from": "inventory", "localField": "item", "foreignField": "sku", "as": "inventory_docs"}}}, orders)
	require.NoError(t, err)
	requireSameDocs(t, []Document{
		{"_id": 1, "item": "almonds", "price": 12, "quantity": 2, "inventory_docs": A{inventory[0]}},
		{"_id": 2, "item": "pecans", "price": 20, "quantity": 1, "inventory_docs": A{inventory[3]}},
		{"_id": 3, "inventory_docs": A{inventory[4], inventory[5]}},
	}, got)
	_, changed := orders[0]["inventory_docs"]
	require.False(t, changed, "the input is not changed")

	// An array local field matches any element.
	classes := []Document{
		{"_id": 1, "title": "Reading is ...", "enrollmentlist": A{"giraffe2", "pandabear", "artie"}, "days": A{"M", "W", "F"}},
		{"_id": 2, "title": "But Writing ...", "enrollmentlist": A{"giraffe1", "artie"}, "days": A{"T", "F"}},
	}
	members := []Document{
		{"_id": 1, "name": "artie", "status": "A"}, {"_id": 2, "name": "giraffe", "status": "D"},
		{"_id": 3, "name": "giraffe1", "status": "A"}, {"_id": 4, "name": "panda", "status": "A"},
		{"_id": 5, "name": "pandabear", "status": "A"}, {"_id": 6, "name": "giraffe2", "status": "D"},
	}
	h = newHost(map[string][]Document{"members": members})
	got, err = runWith(h, Options{}, A{M{"$lookup": M{"from": "members", "localField": "enrollmentlist", "foreignField": "name", "as": "enrollee_info"}}}, classes)
	require.NoError(t, err)
	require.Equal(t, A{members[0], members[4], members[5]}, got[0]["enrollee_info"])
	require.Equal(t, A{members[0], members[2]}, got[1]["enrollee_info"])

	// A dotted as.
	got, err = runWith(h, Options{}, A{M{"$lookup": M{"from": "members", "localField": "n", "foreignField": "name", "as": "x.y"}}}, []Document{{"n": "panda", "x": M{"z": 1}}})
	require.NoError(t, err)
	require.Equal(t, M{"z": 1, "y": A{members[3]}}, got[0]["x"])

	for name, arg := range map[string]any{
		"pipeline":      M{"from": "m", "pipeline": A{}, "as": "x"},
		"let":           M{"from": "m", "let": M{}, "localField": "a", "foreignField": "b", "as": "x"},
		"no localField": M{"from": "m", "foreignField": "b", "as": "x"},
		"no as":         M{"from": "m", "localField": "a", "foreignField": "b"},
		"from doc":      M{"from": M{"db": "d", "coll": "c"}, "localField": "a", "foreignField": "b", "as": "x"},
		"as $":          M{"from": "m", "localField": "a", "foreignField": "b", "as": "$x"},
	} {
		err := compileErr(M{"$lookup": arg})
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
		require.ErrorContains(t, err, "$lookup", name)
	}
	require.ErrorContains(t, compileErr(M{"$lookup": M{"from": "m", "pipeline": A{}, "as": "x"}}), "later version")
}

func TestManual_unionWith(t *testing.T) {
	colls := map[string][]Document{
		"sales_2018": {
			{"store": "General Store", "item": "Cheese", "quantity": 30},
			{"store": "ShopMart", "item": "Chocolates", "quantity": 40},
		},
		"sales_2019": {{"store": "ShopMart", "item": "Chocolates", "quantity": 20}},
	}
	sales2017 := []Document{
		{"store": "General Store", "item": "Chocolates", "quantity": 150},
		{"store": "ShopMart", "item": "Cookies", "quantity": 100},
	}
	got, err := runWith(newHost(colls), Options{}, A{
		M{"$set": M{"_id": "2017"}},
		M{"$unionWith": M{"coll": "sales_2018", "pipeline": A{M{"$set": M{"_id": "2018"}}}}},
		M{"$unionWith": "sales_2019"},
		M{"$unionWith": "missing_collection"},
	}, sales2017)
	require.NoError(t, err)
	requireSameDocs(t, []Document{
		{"_id": "2017", "store": "General Store", "item": "Chocolates", "quantity": 150},
		{"_id": "2017", "store": "ShopMart", "item": "Cookies", "quantity": 100},
		{"_id": "2018", "store": "General Store", "item": "Cheese", "quantity": 30},
		{"_id": "2018", "store": "ShopMart", "item": "Chocolates", "quantity": 40},
		{"store": "ShopMart", "item": "Chocolates", "quantity": 20},
	}, got)
	// Sales per item, the three years together.
	got, err = runWith(newHost(colls), Options{}, A{
		M{"$unionWith": "sales_2018"}, M{"$unionWith": "sales_2019"},
		M{"$group": M{"_id": "$item", "total": M{"$sum": "$quantity"}}},
		M{"$sort": M{"total": -1}},
	}, sales2017)
	require.NoError(t, err)
	requireSameDocs(t, []Document{{"_id": "Chocolates", "total": 210}, {"_id": "Cookies", "total": 100}, {"_id": "Cheese", "total": 30}}, got)

	for name, arg := range map[string]any{
		"empty":        "",
		"no coll":      M{"pipeline": A{}},
		"bad pipeline": M{"coll": "c", "pipeline": A{M{"$nope": 1}}},
		"out inside":   M{"coll": "c", "pipeline": A{M{"$out": "x"}}},
		"pipeline doc": M{"coll": "c", "pipeline": M{}},
	} {
		err := compileErr(M{"$unionWith": arg})
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
		require.ErrorContains(t, err, "$unionWith", name)
	}
}

func TestOutMerge(t *testing.T) {
	docs := []Document{{"_id": 1, "a": 1}, {"_id": 2, "a": 2}}
	h := newHost(nil)
	got, err := runWith(h, Options{}, A{M{"$match": M{"a": 2}}, M{"$out": "dest"}}, docs)
	require.NoError(t, err)
	require.Empty(t, got, "$out outputs nothing")
	require.Equal(t, []Document{{"_id": 2, "a": 2}}, h.out["dest"])

	h = newHost(nil)
	_, err = runWith(h, Options{DB: "app"}, A{M{"$out": M{"db": "app", "coll": "d2"}}}, docs)
	require.NoError(t, err)
	require.Len(t, h.out["d2"], 2)
	require.ErrorIs(t, compileErrOpts(Options{DB: "app"}, M{"$out": M{"db": "other", "coll": "d"}}), errs.ErrInvalidOptions)
	require.ErrorIs(t, compileErr(M{"$out": M{"db": "other", "coll": "d"}}), errs.ErrInvalidOptions)
	require.ErrorIs(t, compileErr(M{"$out": "d"}, M{"$match": M{}}), errs.ErrInvalidOptions, "$out must be last")
	p, err := Compile(A{M{"$out": "d"}}, Options{})
	require.NoError(t, err)
	require.True(t, p.Stages[0].Writes)

	h = newHost(nil)
	got, err = runWith(h, Options{}, A{M{"$merge": M{"into": "m", "on": A{"a", "b"}, "whenMatched": "replace", "whenNotMatched": "discard"}}}, docs)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, []*MergeSpec{{Into: "m", On: []string{"a", "b"}, WhenMatched: "replace", WhenNotMatched: "discard"}}, h.merges)
	require.Len(t, h.merged[0], 2)

	h = newHost(nil)
	_, err = runWith(h, Options{}, A{M{"$merge": "m2"}}, docs)
	require.NoError(t, err)
	require.Equal(t, &MergeSpec{Into: "m2", On: []string{"_id"}, WhenMatched: "merge", WhenNotMatched: "insert"}, h.merges[0])
	h = newHost(nil)
	_, err = runWith(h, Options{DB: "app"}, A{M{"$merge": M{"into": M{"db": "app", "coll": "m3"}, "on": "k", "whenMatched": "keepExisting", "whenNotMatched": "fail"}}}, docs)
	require.NoError(t, err)
	require.Equal(t, &MergeSpec{Into: "m3", On: []string{"k"}, WhenMatched: "keepExisting", WhenNotMatched: "fail"}, h.merges[0])

	for name, arg := range map[string]any{
		"pipeline whenMatched": M{"into": "m", "whenMatched": A{M{"$set": M{"a": 1}}}},
		"bad whenMatched":      M{"into": "m", "whenMatched": "x"},
		"bad whenNotMatched":   M{"into": "m", "whenNotMatched": "x"},
		"other db":             M{"into": M{"db": "x", "coll": "m"}},
		"no into":              M{"on": "_id"},
		"empty on":             M{"into": "m", "on": A{}},
		"let":                  M{"into": "m", "let": M{}},
	} {
		err := compileErr(M{"$merge": arg})
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
		require.ErrorContains(t, err, "$merge", name)
	}
	require.ErrorContains(t, compileErr(M{"$merge": M{"into": "m", "whenMatched": A{}}}), "later version")
}

func compileErrOpts(opts Options, pipeline ...any) error {
	_, err := Compile(pipeline, opts)
	return err
}

func TestRedact(t *testing.T) {
	doc := Document{
		"_id": 1, "title": "report", "secret": false,
		"sub":  M{"secret": true, "x": 1},
		"list": A{M{"secret": false, "y": 2, "deep": M{"secret": true}}, M{"secret": true}, 3, A{M{"secret": true}, M{"z": 1}}},
		"keep": M{"kept": true, "inner": M{"secret": true}},
	}
	expr := M{"$cond": M{
		"if":   M{"$ifNull": A{"$kept", false}},
		"then": "$$KEEP",
		"else": M{"$cond": A{M{"$ifNull": A{"$secret", false}}, "$$PRUNE", "$$DESCEND"}},
	}}
	got := run(t, A{M{"$redact": expr}}, []Document{doc, {"_id": 2, "secret": true}})
	requireSameDocs(t, []Document{{
		"_id": 1, "title": "report", "secret": false,
		"list": A{M{"secret": false, "y": 2}, 3, A{M{"z": 1}}},
		"keep": M{"kept": true, "inner": M{"secret": true}},
	}}, got)
	_, err := runWith(newHost(nil), Options{}, A{M{"$redact": "keep?"}}, []Document{doc})
	require.ErrorIs(t, err, errs.ErrExpression)
	require.ErrorContains(t, err, "$redact")

	t.Run("manual forecasts", func(t *testing.T) {
		if !query.IsExprOperator("$setIntersection") || !query.IsExprOperator("$size") || !query.IsExprOperator("$gt") {
			t.Skip("$setIntersection, $size and $gt are not on this branch")
		}
		forecasts := []Document{{
			"_id": 1, "title": "123 Department Report", "tags": A{"G", "STLW"}, "year": 2014,
			"subsections": A{
				M{"subtitle": "Section 1: Overview", "tags": A{"SI", "G"}, "content": "Section 1: This is the content of section 1."},
				M{"subtitle": "Section 2: Analysis", "tags": A{"STLW"}, "content": "Section 2: This is the content of section 2."},
				M{"subtitle": "Section 3: Budgeting", "tags": A{"TK"}, "content": M{"text": "Section 3: This is the content of section 3.", "tags": A{"HCS"}}},
			},
		}}
		userAccess := A{"STLW", "G"}
		got := run(t, A{
			M{"$match": M{"year": 2014}},
			M{"$redact": M{"$cond": M{
				"if":   M{"$gt": A{M{"$size": M{"$setIntersection": A{"$tags", userAccess}}}, 0}},
				"then": "$$DESCEND", "else": "$$PRUNE",
			}}},
		}, forecasts)
		requireSameDocs(t, []Document{{
			"_id": 1, "title": "123 Department Report", "tags": A{"G", "STLW"}, "year": 2014,
			"subsections": A{
				M{"subtitle": "Section 1: Overview", "tags": A{"SI", "G"}, "content": "Section 1: This is the content of section 1."},
				M{"subtitle": "Section 2: Analysis", "tags": A{"STLW"}, "content": "Section 2: This is the content of section 2."},
			},
		}}, got)
	})
}

func TestRunWithoutHost(t *testing.T) {
	p, err := Compile(A{M{"$sort": M{"a": -1}}, M{"$lookup": M{"from": "c", "localField": "a", "foreignField": "b", "as": "x"}}}, Options{})
	require.NoError(t, err)
	_, err = Collect(context.Background(), p.Run(context.Background(), nil, &SliceStream{Docs: []Document{{"a": 1}}}, 0))
	require.ErrorContains(t, err, "$lookup")
	// From a later stage (the planner ran those before it).
	got, err := Collect(context.Background(), p.Run(context.Background(), nil, &SliceStream{Docs: []Document{{"a": 1}, {"a": 2}}}, 1))
	require.Error(t, err)
	require.Empty(t, got)
	p, err = Compile(A{M{"$sort": M{"a": -1}}, M{"$project": M{"a": 1, "_id": 0}}}, Options{})
	require.NoError(t, err)
	got, err = Collect(context.Background(), p.Run(context.Background(), nil, &SliceStream{Docs: []Document{{"a": 1, "b": 1}, {"a": 2}}}, 1))
	require.NoError(t, err)
	require.Equal(t, []Document{{"a": 1}, {"a": 2}}, got, "the $sort did not run")
}

func TestHostErrors(t *testing.T) {
	h := &failingHost{err: errors.New("boom")}
	for _, st := range []any{
		M{"$lookup": M{"from": "c", "localField": "a", "foreignField": "b", "as": "x"}},
		M{"$unionWith": "c"},
		M{"$out": "c"},
		M{"$merge": "c"},
	} {
		_, err := runWith(newHost(nil), Options{}, A{st}, nil)
		require.NoError(t, err)
		p, err := Compile(A{st}, Options{})
		require.NoError(t, err)
		_, err = Collect(context.Background(), p.Run(context.Background(), h, &SliceStream{Docs: []Document{{"a": 1}}}, 0))
		require.ErrorIs(t, err, h.err, "%v", st)
		var se *StageError
		require.ErrorAs(t, err, &se)
	}
}

// failingHost fails every call.
type failingHost struct{ err error }

func (h *failingHost) Lookup(context.Context, string, string, any) ([]Document, error) {
	return nil, h.err
}
func (h *failingHost) Read(context.Context, string, []any) (Stream, error) { return nil, h.err }
func (h *failingHost) Out(context.Context, string, Stream) error           { return h.err }
func (h *failingHost) Merge(context.Context, *MergeSpec, Stream) error     { return h.err }
func (h *failingHost) Grow(int64) error                                    { return h.err }

func TestUnsupportedStages(t *testing.T) {
	for _, name := range append([]string{"$nope"}, unsupportedStages...) {
		err := compileErr(M{"$match": M{}}, M{name: M{}})
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
		require.ErrorContains(t, err, name)
		require.ErrorContains(t, err, "stage 1")
		if name != "$nope" {
			require.ErrorContains(t, err, "not supported yet")
		}
	}
	require.ErrorIs(t, compileErr(M{"$match": M{}, "$sort": M{"a": 1}}), errs.ErrInvalidOptions, "two fields in a stage")
	require.ErrorIs(t, compileErr(5), errs.ErrInvalidOptions)
}

// blockingPipelines are the stages that hold documents.
var blockingPipelines = map[string][]any{
	"$group":       {M{"$group": M{"_id": "$_id", "all": M{"$push": "$$ROOT"}}}},
	"$sort":        {M{"$sort": M{"x": 1}}},
	"$sort top-k":  {M{"$sort": M{"x": 1}}, M{"$limit": 500}},
	"$bucket":      {M{"$bucket": M{"groupBy": "$x", "boundaries": A{0, 1 << 40}, "output": M{"all": M{"$push": "$$ROOT"}}}}},
	"$sample":      {M{"$sample": M{"size": 1000}}},
	"$sortByCount": {M{"$sortByCount": "$_id"}},
}

func bigDocs(n int) []Document {
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = Document{"_id": i, "x": n - i, "pad": string(make([]byte, 1000))}
	}
	return docs
}

func TestMemoryLimit(t *testing.T) {
	for name, p := range blockingPipelines {
		t.Run(name, func(t *testing.T) {
			// Within the limit: the run gives back all it booked.
			h := newHost(nil)
			got, err := runWith(h, Options{MaxMemoryBytes: 10 << 20}, p, bigDocs(1000))
			require.NoError(t, err)
			require.NotEmpty(t, got)
			require.Positive(t, h.peak)
			require.Zero(t, h.grown)

			// Past the stage's limit.
			h = newHost(nil)
			_, err = runWith(h, Options{MaxMemoryBytes: 100 << 10}, p, bigDocs(1000))
			require.ErrorIs(t, err, errs.ErrMemoryLimit)
			var se *StageError
			require.ErrorAs(t, err, &se)
			require.Zero(t, h.grown, "given back after the failure")

			// Past the DB's budget.
			h = newHost(nil)
			h.budget = 200 << 10
			_, err = runWith(h, Options{MaxMemoryBytes: 10 << 20}, p, bigDocs(1000))
			require.ErrorIs(t, err, errs.ErrMemoryLimit)
			require.Zero(t, h.grown)
		})
	}
	// $sort with $limit holds only the limit's documents.
	h := newHost(nil)
	got, err := runWith(h, Options{MaxMemoryBytes: 100 << 10}, A{M{"$sort": M{"x": 1}}, M{"$limit": 3}}, bigDocs(1000))
	require.NoError(t, err)
	requireSameDocs(t, []Document{bigDocs(1000)[999], bigDocs(1000)[998], bigDocs(1000)[997]}, got)
	// $unwind streams: no booking.
	h = newHost(nil)
	_, err = runWith(h, Options{MaxMemoryBytes: 1 << 10}, A{M{"$unwind": "$a"}}, []Document{{"a": A{1, 2, 3}}})
	require.NoError(t, err)
	require.Zero(t, h.peak)
}

// countingStream counts the documents read and cancels after some.
type countingStream struct {
	n      int
	cancel func()
	after  int
}

func (s *countingStream) Next(context.Context) (Document, error) {
	s.n++
	if s.n == s.after {
		s.cancel()
	}
	return Document{"_id": s.n, "x": s.n % 7}, nil // endless
}

func TestContextCancelled(t *testing.T) {
	pipelines := map[string][]any{
		"$match":   {M{"$match": M{"x": 100}}},
		"$skip":    {M{"$skip": 1 << 40}},
		"$project": {M{"$project": M{"x": 1}}, M{"$match": M{"x": 100}}},
		"$unwind":  {M{"$unwind": "$nope"}},
		"$count":   {M{"$count": "n"}},
	}
	for name, p := range blockingPipelines {
		pipelines[name] = p
	}
	for name, p := range pipelines {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pl, err := Compile(p, Options{MaxMemoryBytes: 1 << 40})
			require.NoError(t, err)
			src := &countingStream{cancel: cancel, after: 1000}
			h := newHost(nil)
			_, err = Collect(ctx, pl.Run(ctx, h, src, 0))
			require.True(t, errors.Is(err, context.Canceled), "%v", err)
			require.Less(t, src.n, 1000+ctxEvery+1, "stopped soon after the cancel")
			require.Zero(t, h.grown)
		})
	}
}

func TestCloseGivesMemoryBack(t *testing.T) {
	p, err := Compile(A{M{"$sort": M{"x": 1}}}, Options{})
	require.NoError(t, err)
	h := newHost(nil)
	s := p.Run(context.Background(), h, &SliceStream{Docs: bigDocs(100)}, 0)
	d, err := s.Next(context.Background())
	require.NoError(t, err)
	require.NotNil(t, d)
	require.Positive(t, h.grown, "the sort holds its documents")
	require.NoError(t, s.(io.Closer).Close())
	require.Zero(t, h.grown)

	// Collect closes the stream when its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	h = newHost(nil)
	s = p.Run(ctx, h, &SliceStream{Docs: bigDocs(100)}, 0)
	_, err = s.Next(ctx)
	require.NoError(t, err)
	cancel()
	_, err = Collect(ctx, s)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, h.grown)
}

func TestGroup_streamingSameAsHashing(t *testing.T) {
	var docs []Document
	for i := range 300 {
		docs = append(docs, Document{"_id": i, "k": (i * 7) % 23, "v": i % 5, "s": []string{"a", "b"}[i%2]})
	}
	docs = append(docs, Document{"_id": 1000, "v": 1}, Document{"_id": 1001, "k": nil, "v": 2}, Document{"_id": 1002, "k": 3.0, "v": 3})
	spec := M{"$group": M{
		"_id": "$k", "n": M{"$sum": 1}, "sum": M{"$sum": "$v"}, "avg": M{"$avg": "$v"}, "vs": M{"$push": "$v"},
		"set": M{"$addToSet": "$s"}, "first": M{"$first": "$_id"}, "top": M{"$topN": M{"n": 2, "sortBy": M{"v": -1}, "output": "$_id"}},
	}}
	p, err := Compile(A{spec}, Options{})
	require.NoError(t, err)
	require.Equal(t, "k", p.Stages[0].GroupKey)

	hashed := run(t, A{M{"$sort": od("k", 1, "_id", 1)}, spec}, docs)
	// The planner feeds the stage sorted by its key and sets SortedInput.
	sortedIn := run(t, A{M{"$sort": od("k", 1, "_id", 1)}}, docs)
	p.Stages[0].SortedInput = true
	h := newHost(nil)
	streamed, err := Collect(context.Background(), p.Run(context.Background(), h, &SliceStream{Docs: append([]Document(nil), sortedIn...)}, 0))
	require.NoError(t, err)
	require.Len(t, streamed, 24)
	requireSameSet(t, hashed, streamed)
	require.Zero(t, h.grown)

	// One group at a time: under a limit the hashing stage passes, the
	// streaming one does not.
	small := Options{MaxMemoryBytes: 3 << 10}
	ps, err := Compile(A{spec}, small)
	require.NoError(t, err)
	ps.Stages[0].SortedInput = true
	_, err = Collect(context.Background(), ps.Run(context.Background(), newHost(nil), &SliceStream{Docs: append([]Document(nil), sortedIn...)}, 0))
	require.NoError(t, err)
	ps.Stages[0].SortedInput = false
	_, err = Collect(context.Background(), ps.Run(context.Background(), newHost(nil), &SliceStream{Docs: append([]Document(nil), sortedIn...)}, 0))
	require.ErrorIs(t, err, errs.ErrMemoryLimit)

	// GroupKey only for a plain field path.
	for _, id := range []any{"$$ROOT.k", M{"k": "$k"}, nil, "$$CURRENT"} {
		p, err := Compile(A{M{"$group": M{"_id": id}}}, Options{})
		require.NoError(t, err)
		require.Empty(t, p.Stages[0].GroupKey, "%v", id)
	}
}
