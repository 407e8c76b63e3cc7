package ttldb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// badCase is one bad input: call must fail with an error matching every
// sentinel in want (errors.Is), without panicking or hanging, and leave the
// collection as it was.
type badCase struct {
	name string
	want []error
	call func(db *ttldb.DB, c *ttldb.Collection) error
}

// badInputDeadline bounds every case: a case that has not returned by then
// hangs.
const badInputDeadline = 30 * time.Second

// TestBadInput runs every refusal of the document, filter, update,
// projection, sort, option and index rules, and the defects of issue 9
// items 2–5 and 13, against a collection with indexes of every kind. Each
// must return an error matching its sentinels, never panic, never hang,
// and change nothing: the documents, CountDocuments, and the answers of
// probe queries through each index and by a full scan stay as they were.
func TestBadInput(t *testing.T) {
	db, err := ttldb.Open(
		ttldb.WithClock(ttltest.NewClock(storeT0)),
		ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}),
	)
	require.NoError(t, err)
	defer db.Close()
	c := db.Collection("c")
	for _, m := range []ttldb.IndexModel{
		{Keys: []ttldb.IndexKey{ttldb.Asc("a")}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Desc("b")}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("u")}, Unique: true, Sparse: true},
		{Keys: []ttldb.IndexKey{ttldb.Asc("d")}, ExpireAfterSeconds: ttldb.Seconds(3600)},
		{Keys: []ttldb.IndexKey{ttldb.Asc("tags")}},
	} {
		_, err := c.CreateIndex(context.Background(), m)
		require.NoError(t, err)
	}
	var seed []ttldb.Document
	for i := range 40 {
		d := ttldb.Document{"_id": i, "a": i % 5, "b": fmt.Sprint(i % 3), "d": storeT0.Add(time.Duration(i) * time.Minute),
			"s": "text", "n": ttldb.Document{"x": i}, "arr": []any{1, 2}}
		if i%4 == 0 {
			d["u"] = i
		}
		if i%3 == 0 {
			d["tags"] = []string{"t", fmt.Sprint(i % 7)}
		}
		seed = append(seed, d)
	}
	_, err = c.InsertMany(seed)
	require.NoError(t, err)
	scan := db.Collection("scan")
	_, err = scan.InsertMany(seed)
	require.NoError(t, err)
	capped, err := db.CreateCollection("capped", ttldb.CollectionOptions{Capped: true, MaxDocuments: 10})
	require.NoError(t, err)
	validated, err := db.CreateCollection("validated", ttldb.CollectionOptions{Validator: ttldb.Document{
		"$jsonSchema": ttldb.Document{"required": []any{"a"}}}})
	require.NoError(t, err)

	probes := []ttldb.Document{
		{"a": 2}, {"a": ttldb.Document{"$gte": 3}}, {"a": 1, "b": "1"}, {"u": ttldb.Document{"$in": []any{0, 8, nil}}},
		{"d": ttldb.Document{"$lt": storeT0.Add(10 * time.Minute)}}, {"tags": "t"}, {"_id": ttldb.Document{"$in": []any{1, 2, 99}}},
	}
	type state struct {
		docs    []ttldb.Document
		count   int
		answers [][]any
		plans   []string
	}
	snapshot := func() state {
		t.Helper()
		var st state
		st.docs = all(t, c)
		st.count = count(t, c, nil)
		for _, p := range probes {
			got, err := findDocs(c, p, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("_id")}})
			require.NoError(t, err)
			// The same filter by a full scan, over the same documents in a
			// collection without indexes.
			want, err := findDocs(scan, p, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("_id")}})
			require.NoError(t, err)
			require.Equal(t, ids(want), ids(got), "probe %v: index and scan disagree", p)
			st.answers = append(st.answers, ids(got))
			ex, err := c.Explain(p)
			require.NoError(t, err)
			st.plans = append(st.plans, ex.Stage+" "+ex.IndexName)
		}
		return st
	}
	before := snapshot()
	require.Equal(t, 40, before.count)

	cases := badInputCases(capped, validated)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				defer func() {
					if p := recover(); p != nil {
						done <- fmt.Errorf("panic: %v", p)
					}
				}()
				done <- tc.call(db, c)
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(badInputDeadline):
				t.Fatalf("did not return within %v", badInputDeadline)
			}
			require.Error(t, err)
			require.NotContains(t, err.Error(), "panic:", "it panicked")
			for _, w := range tc.want {
				require.ErrorIs(t, err, w)
			}
			after := snapshot()
			require.Equal(t, before.count, after.count, "CountDocuments changed")
			require.Equal(t, before.answers, after.answers, "probe answers changed")
			require.Equal(t, before.plans, after.plans, "probe plans changed")
			require.Equal(t, before.docs, after.docs, "documents changed")
		})
	}
	t.Logf("%d bad inputs refused", len(cases))
}

// cyclicDoc returns a document that contains itself.
func cyclicDoc() ttldb.Document {
	d := ttldb.Document{"k": 1}
	d["self"] = d
	return d
}

// cyclicArrayDoc returns a document that contains itself through an array.
func cyclicArrayDoc() ttldb.Document {
	d := ttldb.Document{}
	d["list"] = []any{ttldb.Document{"back": d}}
	return d
}

// deepArray returns n arrays nested in one another.
func deepArray(n int) any {
	v := any(1)
	for range n {
		v = []any{v}
	}
	return v
}

// deepLogical returns a filter of n nested op ({$and: [{$and: …}]}).
func deepLogical(op string, n int) ttldb.Document {
	f := ttldb.Document{"a": 1}
	for range n {
		f = ttldb.Document{op: []any{f}}
	}
	return f
}

// deepNot returns {a: {$not: {$not: … {$eq: 1}}}} with n $not.
func deepNot(n int) ttldb.Document {
	f := ttldb.Document{"$eq": 1}
	for range n {
		f = ttldb.Document{"$not": f}
	}
	return ttldb.Document{"a": f}
}

type badLevel string

// badInputCases lists the bad inputs. The collection c (and capped and
// validated, for the rules that need them) is the one TestBadInput built.
func badInputCases(capped, validated *ttldb.Collection) []badCase {
	const badUTF8 = "x\xff"
	insert := func(d ttldb.Document) func(*ttldb.DB, *ttldb.Collection) error {
		return func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.InsertOne(d); return err }
	}
	find := func(f ttldb.Document, opts ...ttldb.FindOptions) func(*ttldb.DB, *ttldb.Collection) error {
		return func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := findDocs(c, f, opts...); return err }
	}
	update := func(f, u ttldb.Document) func(*ttldb.DB, *ttldb.Collection) error {
		return func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.UpdateMany(context.Background(), f, u, ttldb.UpdateOptions{Upsert: true})
			return err
		}
	}
	index := func(m ttldb.IndexModel) func(*ttldb.DB, *ttldb.Collection) error {
		return func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CreateIndex(context.Background(), m)
			return err
		}
	}
	doc, filter, upd, opt := ttldb.ErrInvalidDocument, ttldb.ErrInvalidFilter, ttldb.ErrInvalidUpdate, ttldb.ErrInvalidOptions
	ix, ttl := ttldb.ErrInvalidIndex, ttldb.ErrInvalidTTL
	one := 1
	deep1M := nested(1_000_000) // shared: a million maps each time is slow to build
	var cases []badCase
	add := func(name string, call func(*ttldb.DB, *ttldb.Collection) error, want ...error) {
		cases = append(cases, badCase{name: name, want: want, call: call})
	}

	// Documents: every refusal of the codec, through InsertOne, InsertMany
	// (atomic), $set and ReplaceOne.
	badDocs := []struct {
		name string
		d    ttldb.Document
	}{
		{"empty field name", ttldb.Document{"": 1}},
		{"$ field", ttldb.Document{"$x": 1}},
		{"dotted field", ttldb.Document{"a.b": 1}},
		{"nested empty field name", ttldb.Document{"n": ttldb.Document{"": 1}}},
		{"invalid UTF-8 field name", ttldb.Document{badUTF8: 1}},
		{"invalid UTF-8 string", ttldb.Document{"s": badUTF8}},
		{"invalid UTF-8 in a []string", ttldb.Document{"s": []string{"ok", badUTF8}}},
		{"invalid UTF-8 in a named string", ttldb.Document{"s": badLevel(badUTF8)}},
		{"invalid UTF-8 _id", ttldb.Document{"_id": badUTF8}},
		{"channel", ttldb.Document{"v": make(chan int)}},
		{"func", ttldb.Document{"v": func() {}}},
		{"struct", ttldb.Document{"v": struct{ A int }{1}}},
		{"pointer to int", ttldb.Document{"v": &one}},
		{"map[string]int", ttldb.Document{"v": map[string]int{"a": 1}}},
		{"map[int]any", ttldb.Document{"v": map[int]any{1: 1}}},
		{"complex", ttldb.Document{"v": complex(1, 2)}},
		{"uintptr", ttldb.Document{"v": uintptr(1)}},
		{"[][]int", ttldb.Document{"v": [][]int{{1}}}},
		{"nil document in []map", ttldb.Document{"v": []map[string]any{nil}}},
		{"unsupported value in an array", ttldb.Document{"v": []any{1, []any{func() {}}}}},
		{"cyclic document", cyclicDoc()},
		{"cyclic through an array", cyclicArrayDoc()},
		{"101 levels", ttldb.Document{"v": nested(101)}},
		{"1M levels", ttldb.Document{"v": deep1M}},
		{"arrays 101 deep", ttldb.Document{"v": deepArray(101)}},
		{"json.Number not a number", ttldb.Document{"v": json.Number("12abc")}},
		{"json.Number NaN", ttldb.Document{"v": json.Number("NaN")}},
		{"json.Number out of range", ttldb.Document{"v": json.Number("1e999")}},
		{"array _id", ttldb.Document{"_id": []any{1}}},
		{"cyclic _id", ttldb.Document{"_id": cyclicDoc()}},
		{"1M-deep _id", ttldb.Document{"_id": deep1M}},
		{"parallel arrays in a compound index", ttldb.Document{"a": []any{1, 2}, "b": []any{3, 4}}},
	}
	for _, bd := range badDocs {
		add("InsertOne: "+bd.name, insert(bd.d), doc)
		add("InsertMany: "+bd.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.InsertMany([]ttldb.Document{{"_id": "fine"}, bd.d})
			return err
		}, doc)
		if _, hasID := bd.d["_id"]; !hasID && len(bd.d) == 1 {
			for k, v := range bd.d {
				if k != "" && !strings.ContainsAny(k, "$.") && k != "a" {
					add("$set: "+bd.name, update(ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{k: v}}), upd)
				}
			}
		}
		if _, hasID := bd.d["_id"]; !hasID {
			want := doc
			if _, op := bd.d["$x"]; op {
				want = upd // an update operator where a replacement was expected
			}
			add("ReplaceOne: "+bd.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
				_, err := c.ReplaceOne(ttldb.Document{"_id": 1}, bd.d)
				return err
			}, want)
		}
	}
	add("InsertOne: nil document", insert(nil), doc)
	add("InsertOne: duplicate _id", insert(ttldb.Document{"_id": 1}), ttldb.ErrDuplicateKey)
	add("InsertOne: duplicate _id of another kind", insert(ttldb.Document{"_id": 1.0}), ttldb.ErrDuplicateKey)
	add("InsertOne: unique index", insert(ttldb.Document{"u": 4}), ttldb.ErrDuplicateKey)
	add("InsertMany: duplicate within", func(_ *ttldb.DB, c *ttldb.Collection) error {
		_, err := c.InsertMany([]ttldb.Document{{"_id": "x"}, {"_id": "x"}})
		return err
	}, ttldb.ErrDuplicateKey)
	add("InsertOne: validator", func(*ttldb.DB, *ttldb.Collection) error {
		_, err := validated.InsertOne(ttldb.Document{"b": 1})
		return err
	}, ttldb.ErrValidation)

	// Filters: every refusal of the filter compiler, through each method
	// that takes one.
	badFilters := []struct {
		name string
		f    ttldb.Document
	}{
		{"unknown top-level operator", ttldb.Document{"$where": "1"}},
		{"$and not an array", ttldb.Document{"$and": ttldb.Document{"a": 1}}},
		{"$or empty", ttldb.Document{"$or": []any{}}},
		{"$nor element not a document", ttldb.Document{"$nor": []any{1}}},
		{"unknown operator", ttldb.Document{"a": ttldb.Document{"$near": "x"}}},
		{"operators mixed with fields", ttldb.Document{"a": ttldb.Document{"$gt": 1, "b": 2}}},
		{"$in not an array", ttldb.Document{"a": ttldb.Document{"$in": 1}}},
		{"$nin not an array", ttldb.Document{"a": ttldb.Document{"$nin": "x"}}},
		{"$exists not a bool", ttldb.Document{"a": ttldb.Document{"$exists": "yes"}}},
		{"$not a value", ttldb.Document{"a": ttldb.Document{"$not": 1}}},
		{"$not empty", ttldb.Document{"a": ttldb.Document{"$not": ttldb.Document{}}}},
		{"$not of fields", ttldb.Document{"a": ttldb.Document{"$not": ttldb.Document{"b": 1}}}},
		{"empty path component", ttldb.Document{"a..b": 1}},
		{"empty path", ttldb.Document{"": 1}},
		{"invalid UTF-8 path", ttldb.Document{badUTF8: 1}},
		{"invalid UTF-8 value", ttldb.Document{"s": badUTF8}},
		{"invalid UTF-8 in $in", ttldb.Document{"s": ttldb.Document{"$in": []any{"a", badUTF8}}}},
		{"unsupported value", ttldb.Document{"a": make(chan int)}},
		{"cyclic value", ttldb.Document{"a": cyclicDoc()}},
		{"cyclic value in $in", ttldb.Document{"a": ttldb.Document{"$in": []any{cyclicDoc()}}}},
		{"cyclic _id", ttldb.Document{"_id": cyclicDoc()}},
		{"1M-deep _id", ttldb.Document{"_id": deep1M}},
		{"1M-deep value", ttldb.Document{"a": deep1M}},
		{"value 101 levels down", ttldb.Document{"a": nested(101)}},
		{"cyclic $and", func() ttldb.Document { f := ttldb.Document{}; f["$and"] = []any{f}; return f }()},
		{"$and 101 deep", deepLogical("$and", 101)},
		{"$or 1M deep", deepLogical("$or", 1_000_000)},
		{"$not 101 deep", deepNot(101)},
		{"json.Number not a number", ttldb.Document{"a": json.Number("five")}},
		{"json.Number in $gte", ttldb.Document{"a": ttldb.Document{"$gte": json.Number("--1")}}},
	}
	for _, bf := range badFilters {
		f := bf.f
		add("Find: "+bf.name, find(f), filter)
		add("FindOne: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.FindOne(f).Document(); return err }, filter)
		add("CountDocuments: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CountDocuments(context.Background(), f)
			return err
		}, filter)
		add("Explain: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.Explain(f); return err }, filter)
		add("DeleteMany: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.DeleteMany(context.Background(), f)
			return err
		}, filter)
		add("DeleteOne: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.DeleteOne(f); return err }, filter)
		add("UpdateMany: "+bf.name, update(f, ttldb.Document{"$set": ttldb.Document{"z": 1}}), filter)
		add("ReplaceOne: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.ReplaceOne(f, ttldb.Document{"z": 1}, ttldb.UpdateOptions{Upsert: true})
			return err
		}, filter)
		add("partial index: "+bf.name, index(ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("p")}, PartialFilterExpression: f}), ix)
	}
	add("upsert: one path, two values", update(ttldb.Document{"$and": []any{ttldb.Document{"q": 1}, ttldb.Document{"q": 2}}},
		ttldb.Document{"$set": ttldb.Document{"z": 1}}), filter)

	// Updates: every refusal of the update compiler and of its application.
	for _, bu := range []struct {
		name string
		f, u ttldb.Document
		want []error
	}{
		{"nil update", ttldb.Document{"_id": 1}, nil, []error{upd}},
		{"empty update", ttldb.Document{"_id": 1}, ttldb.Document{}, []error{upd}},
		{"unknown operator", ttldb.Document{"_id": 1}, ttldb.Document{"$bit": ttldb.Document{"arr": 1}}, []error{upd}},
		{"a replacement", ttldb.Document{"_id": 1}, ttldb.Document{"a": 1}, []error{upd}},
		{"argument not a document", ttldb.Document{"_id": 1}, ttldb.Document{"$set": 1}, []error{upd}},
		{"empty path", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"": 1}}, []error{upd}},
		{"empty component", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"a..b": 1}}, []error{upd}},
		{"$ component", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"arr.$": 1}}, []error{upd}},
		{"invalid UTF-8 path", ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{badUTF8: 1}}, []error{upd}},
		{"path conflict", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"n": 1}, "$unset": ttldb.Document{"n.x": ""}}, []error{upd}},
		{"$unset _id", ttldb.Document{"_id": 1}, ttldb.Document{"$unset": ttldb.Document{"_id": ""}}, []error{upd, ttldb.ErrImmutableID}},
		{"$inc _id", ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"_id": 1}}, []error{upd, ttldb.ErrImmutableID}},
		{"$set _id to another value", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"_id": 2}}, []error{upd, ttldb.ErrImmutableID}},
		{"$inc by a string", ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"a": "1"}}, []error{upd}},
		{"$inc by a named string", ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"a": badLevel("1")}}, []error{upd}},
		{"$inc by a bad json.Number", ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"a": json.Number("x")}}, []error{upd}},
		{"$inc of a string field", ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"s": 1}}, []error{upd}},
		{"$inc overflow", ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"a": int64(math.MaxInt64)}}, []error{upd}},
		{"$currentDate bad spec", ttldb.Document{"_id": 1}, ttldb.Document{"$currentDate": ttldb.Document{"d": 1}}, []error{upd}},
		{"$currentDate timestamp", ttldb.Document{"_id": 1}, ttldb.Document{"$currentDate": ttldb.Document{"d": ttldb.Document{"$type": "timestamp"}}}, []error{upd}},
		{"$set through a string", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"s.x": 1}}, []error{upd}},
		{"$set named field of an array", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"arr.x": 1}}, []error{upd}},
		{"$set far past an array's end", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"arr.1000000": 1}}, []error{upd}},
		{"$set 101 levels", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"n.x": nested(100)}}, []error{upd}},
		{"$set cyclic", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"v": cyclicDoc()}}, []error{upd}},
		{"$set makes a unique duplicate", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"u": 0}}, []error{ttldb.ErrDuplicateKey}},
		{"$set makes parallel arrays", ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"a": []any{1}, "b": []any{2}}}, []error{doc}},
		{"UpdateMany makes a duplicate among the matches", ttldb.Document{"u": ttldb.Document{"$in": []any{0, 4}}}, ttldb.Document{"$set": ttldb.Document{"u": 99}}, []error{ttldb.ErrDuplicateKey}},
	} {
		add("UpdateMany: "+bu.name, update(bu.f, bu.u), bu.want...)
	}
	add("ReplaceOne: update operators", func(_ *ttldb.DB, c *ttldb.Collection) error {
		_, err := c.ReplaceOne(ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"a": 1}})
		return err
	}, upd)
	add("ReplaceOne: another _id", func(_ *ttldb.DB, c *ttldb.Collection) error {
		_, err := c.ReplaceOne(ttldb.Document{"_id": 1}, ttldb.Document{"_id": 2})
		return err
	}, ttldb.ErrImmutableID)
	add("ReplaceOne: validator", func(*ttldb.DB, *ttldb.Collection) error {
		if _, err := validated.InsertOne(ttldb.Document{"_id": 1, "a": 1}); err != nil && !errors.Is(err, ttldb.ErrDuplicateKey) {
			return err
		}
		_, err := validated.ReplaceOne(ttldb.Document{"_id": 1}, ttldb.Document{"b": 1})
		return err
	}, ttldb.ErrValidation)

	// Find options: projections, sorts, skip and limit.
	for _, bo := range []struct {
		name string
		o    ttldb.FindOptions
	}{
		{"projection mixes inclusion and exclusion", ttldb.FindOptions{Projection: ttldb.Document{"a": 1, "b": 0}}},
		{"projection value a string", ttldb.FindOptions{Projection: ttldb.Document{"a": "yes"}}},
		{"projection value NaN", ttldb.FindOptions{Projection: ttldb.Document{"a": math.NaN()}}},
		{"projection value cyclic", ttldb.FindOptions{Projection: ttldb.Document{"a": cyclicDoc()}}},
		{"projection paths collide", ttldb.FindOptions{Projection: ttldb.Document{"n": 1, "n.x": 1}}},
		{"projection empty component", ttldb.FindOptions{Projection: ttldb.Document{"n..x": 1}}},
		{"projection $ component", ttldb.FindOptions{Projection: ttldb.Document{"arr.$": 1}}},
		{"projection invalid UTF-8", ttldb.FindOptions{Projection: ttldb.Document{badUTF8: 1}}},
		{"sort order 2", ttldb.FindOptions{Sort: []ttldb.IndexKey{{Field: "a", Order: 2}}}},
		{"sort empty field", ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("")}}},
		{"sort field twice", ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Desc("a")}}},
		{"sort invalid UTF-8", ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc(badUTF8)}}},
		{"negative skip", ttldb.FindOptions{Skip: -1}},
		{"negative limit", ttldb.FindOptions{Limit: -1}},
	} {
		add("Find: "+bo.name, find(nil, bo.o), opt)
		add("FindOne: "+bo.name, func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.FindOne(nil, bo.o).Document(); return err }, opt)
	}

	// Collections and DB options.
	for _, bc := range []struct {
		name string
		coll string
		o    ttldb.CollectionOptions
	}{
		{"capped without caps", "x", ttldb.CollectionOptions{Capped: true}},
		{"negative cap", "x", ttldb.CollectionOptions{Capped: true, MaxDocuments: -1}},
		{"caps without Capped", "x", ttldb.CollectionOptions{MaxBytes: 10}},
		{"bad validator", "x", ttldb.CollectionOptions{Validator: ttldb.Document{"$where": 1}}},
		{"cyclic validator", "x", ttldb.CollectionOptions{Validator: ttldb.Document{"$jsonSchema": cyclicDoc()}}},
		{"empty name", "", ttldb.CollectionOptions{}},
		{"$ in the name", "a$b", ttldb.CollectionOptions{}},
		{"system. name", "system.x", ttldb.CollectionOptions{}},
		{"invalid UTF-8 name", badUTF8, ttldb.CollectionOptions{}},
	} {
		add("CreateCollection: "+bc.name, func(db *ttldb.DB, _ *ttldb.Collection) error {
			_, err := db.CreateCollection(bc.coll, bc.o)
			return err
		}, opt)
	}
	add("InsertOne into an invalid collection name", func(db *ttldb.DB, _ *ttldb.Collection) error {
		_, err := db.Collection("a$b").InsertOne(ttldb.Document{})
		return err
	}, opt)
	for _, bo := range []struct {
		name string
		o    ttldb.Option
	}{
		{"nil clock", ttldb.WithClock(nil)},
		{"nil logger", ttldb.WithLogger(nil)},
		{"negative interval", ttldb.WithMonitor(ttldb.MonitorOptions{Interval: -time.Second})},
		{"negative batch", ttldb.WithMonitor(ttldb.MonitorOptions{BatchSize: -1})},
		{"nil primary func", ttldb.WithPrimary(nil)},
		{"nil hook", ttldb.WithOnExpire(nil)},
		{"nil observer", ttldb.WithDeleteObserver(nil)},
	} {
		add("Open: "+bo.name, func(*ttldb.DB, *ttldb.Collection) error {
			db, err := ttldb.Open(bo.o)
			if err == nil {
				db.Close()
			}
			return err
		}, opt)
	}

	// Index specifications.
	for _, bi := range []struct {
		name string
		m    ttldb.IndexModel
		want error
	}{
		{"no keys", ttldb.IndexModel{}, ix},
		{"empty field", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("")}}, ix},
		{"empty component", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("a..b")}}, ix},
		{"$ component", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("a.$b")}}, ix},
		{"invalid UTF-8 field", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc(badUTF8)}}, ix},
		{"order 0", ttldb.IndexModel{Keys: []ttldb.IndexKey{{Field: "p", Order: 0}}}, ix},
		{"field twice", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("p"), ttldb.Desc("p")}}, ix},
		{"the _id index's name", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("p")}, Name: "_id_"}, ix},
		{"invalid UTF-8 name", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("p")}, Name: badUTF8}, ix},
		{"negative TTL", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("p")}, ExpireAfterSeconds: ttldb.Seconds(-1)}, ttl},
		{"compound TTL", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("p"), ttldb.Asc("q")}, ExpireAfterSeconds: ttldb.Seconds(1)}, ttl},
		{"TTL on _id", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("_id")}, ExpireAfterSeconds: ttldb.Seconds(1)}, ttl},
		{"unknown TTL value forms", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("p")}, ExpireAfterSeconds: ttldb.Seconds(1), TTLValueForms: 99}, ttl},
		{"same keys, other options", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("a")}, Unique: true}, ttldb.ErrIndexOptionsConflict},
		{"same name, other keys", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("p")}, Name: "a_1"}, ttldb.ErrIndexOptionsConflict},
		{"unique over duplicates", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("b")}, Unique: true}, ttldb.ErrDuplicateKey},
		{"compound over parallel arrays", ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("arr"), ttldb.Asc("tags")}}, doc},
	} {
		add("CreateIndex: "+bi.name, index(bi.m), bi.want)
	}
	add("CreateIndex: TTL in a capped collection", func(*ttldb.DB, *ttldb.Collection) error {
		_, err := capped.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("d")}, ExpireAfterSeconds: ttldb.Seconds(1)})
		return err
	}, ttl)
	add("DropIndex: the _id index", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.DropIndex("_id_") }, ix)
	add("DropIndex: missing", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.DropIndex("nope") }, ttldb.ErrNotFound)
	for _, bm := range []struct {
		name string
		m    ttldb.CollModIndex
		want error
	}{
		{"no seconds", ttldb.CollModIndex{Name: "d_1"}, ttl},
		{"negative seconds", ttldb.CollModIndex{Name: "d_1", ExpireAfterSeconds: ttldb.Seconds(-5)}, ttl},
		{"no selection", ttldb.CollModIndex{ExpireAfterSeconds: ttldb.Seconds(5)}, ix},
		{"the _id index", ttldb.CollModIndex{KeyPattern: []ttldb.IndexKey{ttldb.Asc("_id")}, ExpireAfterSeconds: ttldb.Seconds(5)}, ttl},
		{"missing index", ttldb.CollModIndex{Name: "nope", ExpireAfterSeconds: ttldb.Seconds(5)}, ttldb.ErrNotFound},
	} {
		add("CollMod: "+bm.name, func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.CollMod(bm.m); return err }, bm.want)
	}

	// ExpiresAt ids.
	for _, be := range []struct {
		name string
		id   any
		want error
	}{
		{"cyclic", cyclicDoc(), doc},
		{"1M deep", deep1M, doc},
		{"array", []any{1}, doc},
		{"channel", make(chan int), doc},
		{"invalid UTF-8", badUTF8, doc},
		{"bad json.Number", json.Number("x"), doc},
		{"missing", 12345, ttldb.ErrNotFound},
	} {
		add("ExpiresAt: "+be.name, func(_ *ttldb.DB, c *ttldb.Collection) error { _, _, err := c.ExpiresAt(be.id); return err }, be.want)
	}
	return cases
}
