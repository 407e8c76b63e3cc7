package ttldb_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
	"go.mongodb.org/mongo-driver/v2/bson"
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
	_, err = c.InsertMany(context.Background(), seed)
	require.NoError(t, err)
	scan := db.Collection("scan")
	_, err = scan.InsertMany(context.Background(), seed)
	require.NoError(t, err)
	capped, err := db.CreateCollection(context.Background(), "capped", ttldb.CollectionOptions{Capped: true, MaxDocuments: 10})
	require.NoError(t, err)
	validated, err := db.CreateCollection(context.Background(), "validated", ttldb.CollectionOptions{Validator: ttldb.Document{
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
			ex, err := c.Explain(context.Background(), p)
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
		return func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.InsertOne(context.Background(), d)
			return err
		}
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
		{"$-prefixed name inside _id", ttldb.Document{"_id": ttldb.Document{"$x": 1}}},
		{"nested empty field name", ttldb.Document{"n": ttldb.Document{"": 1}}},
		{"invalid UTF-8 field name", ttldb.Document{badUTF8: 1}},
		{"invalid UTF-8 string", ttldb.Document{"s": badUTF8}},
		{"invalid UTF-8 in a []string", ttldb.Document{"s": []string{"ok", badUTF8}}},
		{"invalid UTF-8 in a named string", ttldb.Document{"s": badLevel(badUTF8)}},
		{"invalid UTF-8 _id", ttldb.Document{"_id": badUTF8}},
		{"channel", ttldb.Document{"v": make(chan int)}},
		{"func", ttldb.Document{"v": func() {}}},
		{"map[int]any", ttldb.Document{"v": map[int]any{1: 1}}},
		{"bson.JavaScript", ttldb.Document{"v": bson.JavaScript("f()")}},
		{"bson.Symbol", ttldb.Document{"v": bson.Symbol("s")}},
		{"bson.Undefined", ttldb.Document{"v": bson.Undefined{}}},
		{"bson.DBPointer", ttldb.Document{"v": bson.DBPointer{DB: "x"}}},
		{"bson.D with a key twice", ttldb.Document{"v": bson.D{{Key: "k", Value: 1}, {Key: "k", Value: 2}}}},
		{"invalid bson.Raw", ttldb.Document{"v": bson.Raw{1, 2, 3}}},
		{"bson.RawValue of JavaScript", ttldb.Document{"v": bson.RawValue{Type: bson.TypeJavaScript, Value: []byte{2, 0, 0, 0, 'x', 0}}}},
		{"complex", ttldb.Document{"v": complex(1, 2)}},
		{"uintptr", ttldb.Document{"v": uintptr(1)}},
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
			_, err := c.InsertMany(context.Background(), []ttldb.Document{{"_id": "fine"}, bd.d})
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
			add("ReplaceOne: "+bd.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
				_, err := c.ReplaceOne(context.Background(), ttldb.Document{"_id": 1}, bd.d)
				return err
			}, want)
		}
	}
	add("InsertOne: nil document", insert(nil), doc)
	add("InsertOne: duplicate _id", insert(ttldb.Document{"_id": 1}), ttldb.ErrDuplicateKey)
	add("InsertOne: duplicate _id of another kind", insert(ttldb.Document{"_id": 1.0}), ttldb.ErrDuplicateKey)
	add("InsertOne: unique index", insert(ttldb.Document{"u": 4}), ttldb.ErrDuplicateKey)
	add("InsertMany: duplicate within", func(_ *ttldb.DB, c *ttldb.Collection) error {
		_, err := c.InsertMany(context.Background(), []ttldb.Document{{"_id": "x"}, {"_id": "x"}})
		return err
	}, ttldb.ErrDuplicateKey)
	add("InsertOne: validator", func(*ttldb.DB, *ttldb.Collection) error {
		_, err := validated.InsertOne(context.Background(), ttldb.Document{"b": 1})
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
		add("FindOne: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.FindOne(context.Background(), f).Document()
			return err
		}, filter)
		add("CountDocuments: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CountDocuments(context.Background(), f)
			return err
		}, filter)
		add("Explain: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.Explain(context.Background(), f)
			return err
		}, filter)
		add("DeleteMany: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.DeleteMany(context.Background(), f)
			return err
		}, filter)
		add("DeleteOne: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.DeleteOne(context.Background(), f)
			return err
		}, filter)
		add("UpdateMany: "+bf.name, update(f, ttldb.Document{"$set": ttldb.Document{"z": 1}}), filter)
		add("ReplaceOne: "+bf.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.ReplaceOne(context.Background(), f, ttldb.Document{"z": 1}, ttldb.UpdateOptions{Upsert: true})
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
		_, err := c.ReplaceOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"a": 1}})
		return err
	}, upd)
	add("ReplaceOne: another _id", func(_ *ttldb.DB, c *ttldb.Collection) error {
		_, err := c.ReplaceOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"_id": 2})
		return err
	}, ttldb.ErrImmutableID)
	add("ReplaceOne: validator", func(*ttldb.DB, *ttldb.Collection) error {
		if _, err := validated.InsertOne(context.Background(), ttldb.Document{"_id": 1, "a": 1}); err != nil && !errors.Is(err, ttldb.ErrDuplicateKey) {
			return err
		}
		_, err := validated.ReplaceOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"b": 1})
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
		add("FindOne: "+bo.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.FindOne(context.Background(), nil, bo.o).Document()
			return err
		}, opt)
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
			_, err := db.CreateCollection(context.Background(), bc.coll, bc.o)
			return err
		}, opt)
	}
	add("InsertOne into an invalid collection name", func(db *ttldb.DB, _ *ttldb.Collection) error {
		_, err := db.Collection("a$b").InsertOne(context.Background(), ttldb.Document{})
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
	add("DropIndex: the _id index", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.DropIndex(context.Background(), "_id_") }, ix)
	add("DropIndex: missing", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.DropIndex(context.Background(), "nope") }, ttldb.ErrNotFound)
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
		add("CollMod: "+bm.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CollMod(context.Background(), bm.m)
			return err
		}, bm.want)
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
		add("ExpiresAt: "+be.name, func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, _, err := c.ExpiresAt(context.Background(), be.id)
			return err
		}, be.want)
	}
	return cases
}

// closedCall is one call, with arguments that are wrong, on a DB and on one
// of its collection handles.
type closedCall struct {
	method string // the DB or Collection method it calls
	call   func(db *ttldb.DB, c *ttldb.Collection) error
}

// closedCalls call every public method that returns an error with invalid
// arguments: before Close each fails with its validation error, after
// Close with ErrClosed, whatever else is wrong with the call.
func closedCalls() []closedCall {
	cyclic := ttldb.Document{}
	cyclic["self"] = cyclic
	badDoc := ttldb.Document{"_id": 1, "f": func() {}}
	badFilter := ttldb.Document{"$nope": 1}
	badUpdate := ttldb.Document{"$nope": ttldb.Document{"a": 1}}
	badOpts := ttldb.FindOptions{Limit: -1}
	badIndex := ttldb.IndexModel{Keys: []ttldb.IndexKey{{Field: "x", Order: 7}}}
	noSeconds := ttldb.CollModIndex{Name: "x_1"}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	return []closedCall{
		{"SetTTLPaused", func(db *ttldb.DB, _ *ttldb.Collection) error {
			return db.SetTTLPaused(done, true) // a done ctx
		}},
		{"CreateCollection", func(db *ttldb.DB, _ *ttldb.Collection) error {
			_, err := db.CreateCollection(context.Background(), "$bad", ttldb.CollectionOptions{Capped: true})
			return err
		}},
		{"CreateCollection", func(db *ttldb.DB, _ *ttldb.Collection) error {
			_, err := db.CreateCollection(context.Background(), "fine", ttldb.CollectionOptions{Capped: true})
			return err
		}},
		{"DropCollection", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.DropCollection(context.Background(), "") }},
		{"DropCollection", func(db *ttldb.DB, _ *ttldb.Collection) error {
			return db.DropCollection(context.Background(), "missing")
		}},
		{"CollMod", func(db *ttldb.DB, c *ttldb.Collection) error {
			_, err := db.CollMod(context.Background(), c.Name(), noSeconds)
			return err
		}},
		{"RunTTLPass", func(db *ttldb.DB, _ *ttldb.Collection) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := db.RunTTLPass(ctx)
			return err
		}},
		{"Distinct", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.Distinct(context.Background(), "", badFilter)
			return err
		}},
		{"EstimatedDocumentCount", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.EstimatedDocumentCount(context.Background())
			return err
		}},
		{"InsertOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.InsertOne(context.Background(), badDoc)
			return err
		}},
		{"InsertOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.InsertOne(context.Background(), cyclic)
			return err
		}},
		{"InsertOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.InsertOne(context.Background(), nil)
			return err
		}},
		{"InsertMany", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.InsertMany(context.Background(), []ttldb.Document{{"_id": 2}, badDoc})
			return err
		}},
		{"InsertMany", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.InsertMany(context.Background(), []ttldb.Document{{"_id": 1}})
			return err
		}},
		{"Find", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := findDocs(c, badFilter); return err }},
		{"Find", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := findDocs(c, nil, badOpts); return err }},
		{"FindOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.FindOne(context.Background(), badFilter).Document()
			return err
		}},
		{"FindOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.FindOne(context.Background(), ttldb.Document{"_id": "missing"}).Document()
			return err
		}},
		{"CountDocuments", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CountDocuments(context.Background(), badFilter)
			return err
		}},
		{"Explain", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.Explain(context.Background(), badFilter)
			return err
		}},
		{"Aggregate", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.Aggregate(context.Background(), bson.A{bson.D{{Key: "$bogus", Value: 1}}})
			return err
		}},
		{"ExplainAggregate", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.ExplainAggregate(context.Background(), bson.A{bson.D{{Key: "$match", Value: badFilter}}})
			return err
		}},
		{"UpdateOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.UpdateOne(context.Background(), badFilter, badUpdate)
			return err
		}},
		{"UpdateOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.UpdateOne(context.Background(), nil, badUpdate)
			return err
		}},
		{"UpdateMany", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.UpdateMany(context.Background(), nil, badUpdate)
			return err
		}},
		{"ReplaceOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.ReplaceOne(context.Background(), nil, badDoc)
			return err
		}},
		{"ReplaceOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.ReplaceOne(context.Background(), nil, ttldb.Document{"$set": 1})
			return err
		}},
		{"FindOneAndUpdate", func(_ *ttldb.DB, c *ttldb.Collection) error {
			return c.FindOneAndUpdate(context.Background(), badFilter, badUpdate).Err()
		}},
		{"FindOneAndReplace", func(_ *ttldb.DB, c *ttldb.Collection) error {
			return c.FindOneAndReplace(context.Background(), nil, badDoc).Err()
		}},
		{"FindOneAndDelete", func(_ *ttldb.DB, c *ttldb.Collection) error {
			return c.FindOneAndDelete(context.Background(), badFilter).Err()
		}},
		{"BulkWrite", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.BulkWrite(context.Background(), nil)
			return err
		}},
		{"BulkWrite", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.BulkWrite(context.Background(), []ttldb.WriteModel{ttldb.DeleteManyModel{Filter: badFilter}})
			return err
		}},
		{"DeleteOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.DeleteOne(context.Background(), badFilter)
			return err
		}},
		{"DeleteMany", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.DeleteMany(context.Background(), badFilter)
			return err
		}},
		{"CreateIndex", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CreateIndex(context.Background(), badIndex)
			return err
		}},
		{"CreateIndex", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("_id")}, ExpireAfterSeconds: ttldb.Seconds(1)})
			return err
		}},
		{"DropIndex", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.DropIndex(context.Background(), "_id_") }},
		{"DropIndex", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.DropIndex(context.Background(), "missing") }},
		{"Indexes", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.Indexes(context.Background()); return err }},
		{"Compact", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.Compact(context.Background()) }},
		{"ExpiresAt", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, _, err := c.ExpiresAt(context.Background(), func() {})
			return err
		}},
		{"ExpiresAt", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, _, err := c.ExpiresAt(context.Background(), "missing")
			return err
		}},
		{"CollMod", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CollMod(context.Background(), noSeconds)
			return err
		}},
		{"CollMod", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CollMod(context.Background(), ttldb.CollModIndex{Name: "x_1", ExpireAfterSeconds: ttldb.Seconds(-1)})
			return err
		}},
		{"CollMod", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CollMod(context.Background(), ttldb.CollModIndex{ExpireAfterSeconds: ttldb.Seconds(1)})
			return err
		}},
		{"ExplainTTLDelete", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.ExplainTTLDelete(context.Background(), "missing")
			return err
		}},
		{"ListCollectionNames", func(db *ttldb.DB, _ *ttldb.Collection) error {
			_, err := db.ListCollectionNames(context.Background())
			return err
		}},
		{"Apply", func(db *ttldb.DB, _ *ttldb.Collection) error {
			return db.Apply(context.Background(), ttldb.Op{Seq: 7, Kind: 99})
		}},
		{"Backup", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.Backup(context.Background(), failingWriter{}) }},
		{"CollModTimeSeries", func(db *ttldb.DB, c *ttldb.Collection) error {
			_, err := db.CollModTimeSeries(context.Background(), c.Name(), ttldb.TimeSeriesCollMod{ExpireAfterSeconds: ttldb.Seconds(-1)})
			return err
		}},
		{"CollModTimeSeries", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CollModTimeSeries(context.Background(), ttldb.TimeSeriesCollMod{})
			return err
		}},
		{"TimeSeriesInfo", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, _, err := c.TimeSeriesInfo(context.Background())
			return err
		}},
		{"Watch", func(db *ttldb.DB, _ *ttldb.Collection) error {
			_, err := db.Watch(context.Background(), nil, ttldb.ChangeStreamOptions{OperationTypes: []ttldb.OperationType{"upsert"}})
			return err
		}},
		{"Watch", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.Watch(context.Background(), nil, ttldb.ChangeStreamOptions{Collections: []string{"other"}})
			return err
		}},
		{"Backup", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.Backup(context.Background(), nil) }},
		{"Snapshot", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.Snapshot(context.Background()) }},
		{"Apply", func(db *ttldb.DB, _ *ttldb.Collection) error {
			return db.Apply(context.Background(), ttldb.Op{Seq: 1 << 40})
		}},
		{"MarkCommitted", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.MarkCommitted(1 << 40) }},
		{"StartSession", func(db *ttldb.DB, _ *ttldb.Collection) error {
			_, err := db.StartSession()
			return err
		}},
	}
}

// Rule: once the DB is closed, ErrClosed comes first, before any check of
// the arguments or of the collection's name, for every public method that
// returns an error.
func TestClosedComesFirst(t *testing.T) {
	covered := map[string]bool{}
	for _, cc := range closedCalls() {
		covered[cc.method] = true
	}
	// The table covers every exported method of DB and Collection that can
	// fail (Close itself never does).
	for _, typ := range []reflect.Type{reflect.TypeFor[*ttldb.DB](), reflect.TypeFor[*ttldb.Collection]()} {
		errType := reflect.TypeFor[error]()
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			ft := m.Type
			if ft.NumOut() == 0 || ft.Out(ft.NumOut()-1) != errType || m.Name == "Close" {
				continue
			}
			assert.True(t, covered[m.Name], "%s.%s returns an error but has no case", typ.Elem().Name(), m.Name)
		}
	}

	for _, handle := range []string{"c", "$bad name"} {
		db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
		require.NoError(t, err)
		c := db.Collection("c")
		_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("x")}})
		require.NoError(t, err)
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 1, "x": 1})
		require.NoError(t, err)
		h := db.Collection(handle)

		calls := closedCalls()
		open := make([]error, len(calls))
		for i, cc := range calls {
			open[i] = cc.call(db, h)
		}
		require.NoError(t, db.Close())
		for i, cc := range calls {
			if cc.method == "ListCollectionNames" || cc.method == "Indexes" && handle == "c" ||
				cc.method == "Compact" && handle == "c" || cc.method == "TimeSeriesInfo" && handle == "c" ||
				cc.method == "EstimatedDocumentCount" && handle == "c" || cc.method == "StartSession" {
				// Nothing about these calls is wrong while open.
				assert.NoError(t, open[i], "%s on %q, open", cc.method, handle)
			} else if cc.method != "RunTTLPass" {
				assert.Error(t, open[i], "case %d (%s) on %q is meant to be invalid", i, cc.method, handle)
				assert.False(t, errors.Is(open[i], ttldb.ErrClosed))
			}
			err := cc.call(db, h)
			assert.ErrorIs(t, err, ttldb.ErrClosed, "case %d (%s) on %q after Close: %v", i, cc.method, handle, err)
		}
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("write refused") }

// docBuilder turns fuzzer bytes into a document, recording whether ttldb
// must refuse it (bad) and what it must store otherwise (want).
type docBuilder struct {
	data []byte
	bad  bool
}

func (b *docBuilder) byte() byte {
	if len(b.data) == 0 {
		return 0
	}
	c := b.data[0]
	b.data = b.data[1:]
	return c
}

func (b *docBuilder) u64() uint64 {
	var buf [8]byte
	for i := range buf {
		buf[i] = b.byte()
	}
	return binary.LittleEndian.Uint64(buf[:])
}

var fuzzKeys = []string{"a", "b", "c", "_id", "long-key", "ü", "$x", "a.b", ""}

func (b *docBuilder) key() string {
	k := fuzzKeys[int(b.byte())%len(fuzzKeys)]
	if k == "" {
		b.bad = true // '$'-prefixed and dotted names are stored (MongoDB 5.0+)
	}
	return k
}

// value returns the value to insert and the value ttldb must store.
func (b *docBuilder) value(depth int) (in, want any) {
	in, want = b.rawValue(depth)
	if want != nil {
		return in, want
	}
	if p, ok := in.(*time.Time); ok && p == nil {
		return in, nil
	}
	return in, in
}

// rawValue is value with a nil want meaning "the same as in".
func (b *docBuilder) rawValue(depth int) (in, want any) {
	kind := b.byte() % 26
	if depth > 4 && kind >= 17 && kind <= 21 {
		kind = 0
	}
	switch kind {
	case 0:
		if b.byte()%2 == 1 {
			// A struct inside a Document is stored as a document.
			a := int(b.byte())
			return struct{ A int }{a}, ttldb.Document{"a": a}
		}
		return nil, nil
	case 1:
		return b.byte()%2 == 0, nil
	case 2:
		v := int64(b.u64())
		return v, nil
	case 3:
		return int8(b.byte()), nil
	case 4:
		return uint32(b.u64()), nil
	case 5:
		return b.u64(), nil
	case 6:
		return math.Float64frombits(b.u64()), nil // NaN, ±Inf, -0 included
	case 7:
		return float32(math.Float64frombits(b.u64())), nil
	case 8:
		n := int(b.byte() % 8)
		s := make([]byte, n)
		for i := range s {
			s[i] = b.byte()
		}
		if !utf8.Valid(s) {
			b.bad = true // strings must be valid UTF-8
		}
		return string(s), nil
	case 9:
		n := int(b.byte() % 8)
		s := make([]byte, n)
		for i := range s {
			s[i] = b.byte()
		}
		return s, nil
	case 10:
		t := time.Unix(int64(b.u64()%(1<<40))-(1<<39), int64(b.byte())*1000).In(time.FixedZone("z", int(int8(b.byte()))*900))
		return t, nil
	case 11:
		t := time.Unix(int64(b.u64()%(1<<35)), 0).UTC()
		if b.byte()%2 == 0 {
			return (*time.Time)(nil), nil
		}
		return &t, t
	case 12:
		var id ttldb.ObjectID
		binary.LittleEndian.PutUint64(id[:], b.u64())
		return id, nil
	case 13:
		return []int{int(b.byte()), int(b.byte())}, nil
	case 14:
		return []string{"x", string(rune(b.byte()))}, nil
	case 15:
		return []float64{math.Float64frombits(b.u64())}, nil
	case 16:
		return []time.Time{time.Unix(int64(b.byte()), 0).UTC()}, nil
	case 17:
		n := int(b.byte() % 4)
		in, want := make([]any, n), make([]any, n)
		for i := range n {
			in[i], want[i] = b.value(depth + 1)
		}
		return in, want
	case 18, 19:
		return b.document(depth + 1)
	case 20:
		n := int(b.byte() % 3)
		in, want := make([]map[string]any, n), make([]map[string]any, n)
		for i := range n {
			d, w := b.document(depth + 1)
			in[i], want[i] = d.(ttldb.Document), w.(ttldb.Document)
		}
		return in, want
	case 21:
		// Deep nesting, far from the limit either way.
		levels := 30
		if b.byte()%2 == 0 {
			levels = 150
			b.bad = true
		}
		var in any = 1
		for range levels {
			in = ttldb.Document{"d": in}
		}
		return in, in
	}
	// Values ttldb must refuse.
	b.bad = true
	switch kind {
	case 22:
		return make(chan int), nil
	case 23:
		return func() {}, nil
	case 24:
		return complex(1, 2), nil
	default:
		cyc := ttldb.Document{}
		cyc["self"] = cyc
		return cyc, nil
	}
}

func (b *docBuilder) document(depth int) (in any, want any) {
	n := int(b.byte() % 5)
	d, w := ttldb.Document{}, ttldb.Document{}
	outer := b.bad
	badKey := map[string]bool{} // a later value for a key replaces the earlier one
	for range n {
		b.bad = false
		k := b.key()
		d[k], w[k] = b.value(depth)
		badKey[k] = b.bad
	}
	b.bad = outer
	for k, bad := range badKey {
		if bad && !(depth == 0 && k == "_id") { // the top-level _id is replaced
			b.bad = true
		}
	}
	return d, w
}

// FuzzInsertDocument builds documents from the fuzzer's bytes, inserts
// them and reads them back: nothing panics, a document ttldb must refuse is
// refused with ErrInvalidDocument and not stored, and an accepted document
// comes back equal to what went in.
func FuzzInsertDocument(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {3, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8}, {4, 1, 17, 3, 0, 1, 6, 2, 18, 2, 0, 8, 3, 'a', 'b', 'c'},
		{2, 2, 21, 1, 7, 6, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, {1, 6, 22}, {1, 0, 11, 1, 2, 3, 4, 5, 6, 7, 8, 1},
		{1, 8, 0}, {1, 1, 25}, {2, 0, 20, 2, 1, 1, 9, 3, 1, 2, 3},
	} {
		f.Add(seed)
	}
	db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	c := db.Collection("fuzz")
	var next int64
	f.Fuzz(func(t *testing.T, data []byte) {
		b := &docBuilder{data: data}
		in, want := b.document(0)
		doc, wdoc := in.(ttldb.Document), want.(ttldb.Document)
		next++
		id := next
		doc["_id"], wdoc["_id"] = id, id
		_, err := c.InsertOne(context.Background(), doc)
		if b.bad {
			if !errors.Is(err, ttldb.ErrInvalidDocument) {
				t.Fatalf("want ErrInvalidDocument, got %v", err)
			}
			if _, err := c.FindOne(context.Background(), ttldb.Document{"_id": id}).Document(); !errors.Is(err, ttldb.ErrNotFound) {
				t.Fatalf("refused document was stored: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("InsertOne: %v", err)
		}
		got, err := c.FindOne(context.Background(), ttldb.Document{"_id": id}).Document()
		if err != nil {
			t.Fatalf("FindOne: %v", err)
		}
		if !fuzzEqual(reflect.ValueOf(got), reflect.ValueOf(map[string]any(wdoc))) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, wdoc)
		}
		if _, err := c.DeleteOne(context.Background(), ttldb.Document{"_id": id}); err != nil {
			t.Fatal(err)
		}
	})
}

// fuzzEqual is reflect.DeepEqual with NaN equal to NaN, and a got time
// (a) equal to a wanted one (b) when it is the same instant, in UTC.
func fuzzEqual(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Kind() == reflect.Interface {
		if a.IsNil() || b.Kind() != reflect.Interface || b.IsNil() {
			return b.Kind() == reflect.Interface && a.IsNil() == b.IsNil()
		}
		return fuzzEqual(a.Elem(), b.Elem())
	}
	if a.Type() != b.Type() {
		return false
	}
	if ta, ok := a.Interface().(time.Time); ok {
		// Stored dates come back in UTC, as MongoDB returns them.
		tb := b.Interface().(time.Time)
		return ta.Equal(tb) && ta.Location() == time.UTC
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		fa, fb := a.Float(), b.Float()
		return fa == fb && math.Signbit(fa) == math.Signbit(fb) || math.IsNaN(fa) && math.IsNaN(fb)
	case reflect.Map:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !fuzzEqual(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !fuzzEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// Rule 10: after Close every method fails with ErrClosed; Close is
// idempotent.
func TestStoreClosed(t *testing.T) {
	db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	c := db.Collection("c")
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("x")}})
	require.NoError(t, err)
	mustInsert(t, c, ttldb.Document{"_id": 1, "x": 1})
	require.NoError(t, db.Close())
	require.NoError(t, db.Close(), "Close is idempotent")
	after := db.Collection("made-after-close")
	for _, h := range []*ttldb.Collection{c, after} {
		calls := map[string]func() error{
			"InsertOne":  func() error { _, err := h.InsertOne(context.Background(), ttldb.Document{"x": 2}); return err },
			"InsertMany": func() error { _, err := h.InsertMany(context.Background(), []ttldb.Document{{"x": 2}}); return err },
			"FindOne": func() error {
				_, err := h.FindOne(context.Background(), nil).Document()
				return err
			},
			"Find":  func() error { _, err := findDocs(h, nil); return err },
			"Count": func() error { _, err := h.CountDocuments(context.Background(), nil); return err },
			"UpdateOne": func() error {
				_, err := h.UpdateOne(context.Background(), nil, ttldb.Document{"$set": ttldb.Document{"y": 1}})
				return err
			},
			"UpdateMany": func() error {
				_, err := h.UpdateMany(context.Background(), nil, ttldb.Document{"$set": ttldb.Document{"y": 1}})
				return err
			},
			"ReplaceOne": func() error {
				_, err := h.ReplaceOne(context.Background(), nil, ttldb.Document{"y": 1})
				return err
			},
			"DeleteOne":  func() error { _, err := h.DeleteOne(context.Background(), nil); return err },
			"DeleteMany": func() error { _, err := h.DeleteMany(context.Background(), nil); return err },
			"CreateIndex": func() error {
				_, err := h.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("z")}})
				return err
			},
			"CreateIndex _id": func() error {
				_, err := h.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("_id")}})
				return err
			},
			"DropIndex":     func() error { return h.DropIndex(context.Background(), "x_1") },
			"DropIndex _id": func() error { return h.DropIndex(context.Background(), "_id_") },
			"Indexes":       func() error { _, err := h.Indexes(context.Background()); return err },
			"Explain":       func() error { _, err := h.Explain(context.Background(), nil); return err },
			"Aggregate": func() error {
				_, err := h.Aggregate(context.Background(), bson.A{bson.D{{Key: "$bogus", Value: 1}}})
				return err
			},
			"ExplainAggregate": func() error { _, err := h.ExplainAggregate(context.Background(), bson.A{}); return err },
			"Compact":          func() error { return h.Compact(context.Background()) },
			"ExpiresAt":        func() error { _, _, err := h.ExpiresAt(context.Background(), 1); return err },
			"CollMod": func() error {
				_, err := h.CollMod(context.Background(), ttldb.CollModIndex{Name: "x_1", ExpireAfterSeconds: ttldb.Seconds(5)})
				return err
			},
		}
		for name, call := range calls {
			assert.ErrorIs(t, call(), ttldb.ErrClosed, "%s on %q", name, h.Name())
		}
	}
	_, err = db.CreateCollection(context.Background(), "n", ttldb.CollectionOptions{})
	assert.ErrorIs(t, err, ttldb.ErrClosed)
	_, err = db.ListCollectionNames(context.Background())
	assert.ErrorIs(t, err, ttldb.ErrClosed)
	assert.ErrorIs(t, db.DropCollection(context.Background(), "c"), ttldb.ErrClosed)
	_, err = db.RunTTLPass(context.Background())
	assert.ErrorIs(t, err, ttldb.ErrClosed)
	_, err = db.CollMod(context.Background(), "c", ttldb.CollModIndex{Name: "x_1", ExpireAfterSeconds: ttldb.Seconds(5)})
	assert.ErrorIs(t, err, ttldb.ErrClosed)
}

// Rule 10: hostile documents are refused with ErrInvalidDocument naming the
// path, and nothing panics or is stored.
func TestStoreHostileInput(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("hostile")
	cyclic := ttldb.Document{"_id": 1}
	cyclic["self"] = cyclic
	cyclicArr := ttldb.Document{"_id": 1}
	cyclicArr["list"] = []any{ttldb.Document{"back": cyclicArr}}
	deep := ttldb.Document{}
	cur := deep
	for range 300 {
		next := ttldb.Document{}
		cur["d"] = next
		cur = next
	}
	deepArr := any(1)
	for range 300 {
		deepArr = []any{deepArr}
	}
	type phase complex128 // a named type of a kind no document holds
	for _, tc := range []struct {
		doc  ttldb.Document
		path string
	}{
		{cyclic, "self"},
		{cyclicArr, "list.0.back"},
		{ttldb.Document{"ch": make(chan int)}, "ch"},
		{ttldb.Document{"f": func() {}}, "f"},
		{ttldb.Document{"m": map[float64]any{math.NaN(): 1}}, "m"},
		{ttldb.Document{"t": phase(3)}, "t"},
		{ttldb.Document{"a": []any{1, []any{func() {}}}}, "a.1.0"},
		{ttldb.Document{"_id": ttldb.Document{"$bad": 1}}, "_id.$bad"},
		{ttldb.Document{"js": bson.JavaScript("x")}, "js"},
		{ttldb.Document{"n": ttldb.Document{"": 1}}, "n"},
		{deep, ""},
		{ttldb.Document{"arr": deepArr}, ""},
		{nil, ""},
	} {
		_, err := c.InsertOne(context.Background(), tc.doc)
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument, "%s", tc.path)
		var de *ttldb.DocumentError
		require.ErrorAs(t, err, &de)
		if tc.path != "" {
			assert.Equal(t, tc.path, de.Path)
		}
		// The same values in updates and replacements.
		mustInsertIfMissing(t, c)
		if tc.doc != nil {
			for k, v := range tc.doc {
				if k == "_id" || strings.ContainsAny(k, "$.") || k == "" {
					continue
				}
				_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": "ok"}, ttldb.Document{"$set": ttldb.Document{k: v}})
				require.Error(t, err, "$set %s", k)
				require.True(t, errors.Is(err, ttldb.ErrInvalidDocument) || errors.Is(err, ttldb.ErrInvalidUpdate), "%v", err)
			}
			_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": "ok"}, tc.doc)
			require.Error(t, err)
		}
	}
	assert.Equal(t, []ttldb.Document{{"_id": "ok"}}, all(t, c))

	// Hostile filters and updates: errors, never panics or hangs.
	cycFilter := ttldb.Document{}
	cycFilter["$and"] = []any{cycFilter}
	cycValue := ttldb.Document{}
	cycValue["x"] = cycValue
	for _, f := range []ttldb.Document{cycFilter, {"a": cycValue}, {"a": ttldb.Document{"$in": []any{cycValue}}}, {"a": make(chan int)}} {
		_, err := findDocs(c, f)
		require.Error(t, err, "%p", f)
		_, err = c.DeleteMany(context.Background(), f)
		require.Error(t, err)
	}
	_, err := c.UpdateOne(context.Background(), nil, ttldb.Document{"$set": ttldb.Document{"a": cycValue}})
	require.Error(t, err)
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("a")}, PartialFilterExpression: cycFilter})
	require.Error(t, err)
	_, err = db.CreateCollection(context.Background(), "v", ttldb.CollectionOptions{Validator: ttldb.Document{"$jsonSchema": cycValue}})
	require.Error(t, err)
	assert.Equal(t, []ttldb.Document{{"_id": "ok"}}, all(t, c))
}

func mustInsertIfMissing(t *testing.T, c *ttldb.Collection) {
	t.Helper()
	if count(t, c, ttldb.Document{"_id": "ok"}) == 0 {
		mustInsert(t, c, ttldb.Document{"_id": "ok"})
	}
}

// nested returns n documents nested in one another, {d: {d: … {}}}.
func nested(n int) ttldb.Document {
	top := ttldb.Document{}
	cur := top
	for range n - 1 {
		next := ttldb.Document{}
		cur["d"] = next
		cur = next
	}
	return top
}

// TestCyclicAndDeepIDsRefused checks issue item 2: a self-referencing or
// very deep _id given to the lookups that key it (FindOne's _id shortcut,
// ExpiresAt, and the filters of writes) is refused with a matchable error
// naming the path, instead of overflowing the stack.
func TestCyclicAndDeepIDsRefused(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	mustInsert(t, c, ttldb.Document{"_id": 1})
	cyc := ttldb.Document{}
	cyc["self"] = cyc
	deep := nested(1_000_000)
	for name, id := range map[string]any{"cyclic": cyc, "deep": deep} {
		_, err := c.FindOne(context.Background(), ttldb.Document{"_id": id}).Document()
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, name)
		assert.Contains(t, err.Error(), `"_id`, name)

		_, _, err = c.ExpiresAt(context.Background(), id)
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument, name)
		var de *ttldb.DocumentError
		require.ErrorAs(t, err, &de, name)
		assert.True(t, strings.HasPrefix(de.Path, "_id"), "%s: path %q", name, de.Path)

		_, err = c.DeleteOne(context.Background(), ttldb.Document{"_id": id})
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, name)
		_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": id}, ttldb.Document{"$set": ttldb.Document{"x": 1}}, ttldb.UpdateOptions{Upsert: true})
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, name)
		_, err = findDocs(c, ttldb.Document{"_id": ttldb.Document{"$in": []any{id}}})
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, name)
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": id})
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument, name)
		_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"x": id}})
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate, name)
	}
	assert.Equal(t, []ttldb.Document{{"_id": 1}}, all(t, c))
}

// TestNestingLimitIsMongoDBs checks that documents, filter values and
// update values share one limit, MongoDB's 100 levels: a value 100 levels
// below the top of its document is accepted everywhere, one more level is
// refused everywhere, naming the path.
func TestNestingLimitIsMongoDBs(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	mustInsert(t, c, ttldb.Document{"_id": 0})
	deepPath := "a" + strings.Repeat(".d", 100) // the path of the level-101 document
	for _, n := range []int{100, 101} {
		v := nested(n)
		ok := n <= 100
		check := func(what string, err error, sentinel error) {
			t.Helper()
			if ok {
				require.NoError(t, err, "%s at %d levels", what, n)
				return
			}
			require.ErrorIs(t, err, sentinel, "%s at %d levels", what, n)
			assert.Contains(t, err.Error(), "deeper than 100 levels", what)
			assert.Contains(t, err.Error(), deepPath[:len(deepPath)-2], what)
		}
		_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": n, "a": v})
		check("InsertOne", err, ttldb.ErrInvalidDocument)
		_, err = findDocs(c, ttldb.Document{"a": v})
		check("Find", err, ttldb.ErrInvalidFilter)
		_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 0}, ttldb.Document{"$set": ttldb.Document{"a": v}})
		check("UpdateOne", err, ttldb.ErrInvalidUpdate)
		_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 0}, ttldb.Document{"a": v})
		check("ReplaceOne", err, ttldb.ErrInvalidDocument)
	}
	// Logical operators nest 100 deep, no more, and a million deep is an
	// error, not a crash.
	for _, n := range []int{100, 101, 1_000_000} {
		f := ttldb.Document{"a": 1}
		for range n {
			f = ttldb.Document{"$and": []any{f}}
		}
		_, err := findDocs(c, f)
		if n <= 100 {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, ttldb.ErrInvalidFilter)
		}
	}
}

// TestInvalidUTF8Refused checks issue item 4: invalid UTF-8 in a field
// name, a string value or an _id is refused with ErrInvalidDocument naming
// the path; in a filter with ErrInvalidFilter, in an update with
// ErrInvalidUpdate; in names (collection, index, index field, sort and
// projection paths) with their sentinel.
func TestInvalidUTF8Refused(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("s")}})
	require.NoError(t, err)
	mustInsert(t, c, ttldb.Document{"_id": 1, "s": "é"})
	bad := "\xc3\x28" // an invalid two-byte sequence
	for path, doc := range map[string]ttldb.Document{
		"_id":       {"_id": bad},
		"s":         {"s": bad},
		"n.k" + bad: {"n": ttldb.Document{"k" + bad: 1}},
		"tags.1":    {"tags": []string{"ok", bad}},
		"arr.0.x":   {"arr": []any{ttldb.Document{"x": bad}}},
		"_id.id":    {"_id": ttldb.Document{"id": bad}},
	} {
		_, err := c.InsertOne(context.Background(), doc)
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument, path)
		var de *ttldb.DocumentError
		require.ErrorAs(t, err, &de, path)
		assert.Equal(t, path, de.Path)
		assert.Contains(t, de.Reason, "UTF-8")
	}
	for _, f := range []ttldb.Document{
		{"s": bad}, {"_id": bad}, {"s": ttldb.Document{"$in": []any{"a", bad}}}, {"s" + bad: 1},
		{"s": ttldb.Document{"$gte": bad}}, {"$or": []any{ttldb.Document{"s": bad}}},
	} {
		_, err := findDocs(c, f)
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, "%q", f)
		_, err = c.FindOne(context.Background(), f).Document()
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, "%q", f)
		_, err = c.DeleteMany(context.Background(), f)
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, "%q", f)
	}
	for _, u := range []ttldb.Document{
		{"$set": ttldb.Document{"s": bad}}, {"$set": ttldb.Document{"s" + bad: 1}}, {"$inc": ttldb.Document{"n" + bad: 1}},
	} {
		_, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, u)
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate, "%q", u)
	}
	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"s": bad})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	_, _, err = c.ExpiresAt(context.Background(), bad)
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	_, err = db.CreateCollection(context.Background(), "x"+bad, ttldb.CollectionOptions{})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("s" + bad)}})
	require.ErrorIs(t, err, ttldb.ErrInvalidIndex)
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("t")}, Name: bad})
	require.ErrorIs(t, err, ttldb.ErrInvalidIndex)
	_, err = findDocs(c, nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("s" + bad)}})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = findDocs(c, nil, ttldb.FindOptions{Projection: ttldb.Document{"s" + bad: 1}})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	// Nothing changed, and what is stored encodes as JSON.
	docs := all(t, c)
	assert.Equal(t, []ttldb.Document{{"_id": 1, "s": "é"}}, docs)
	_, err = json.Marshal(docs)
	require.NoError(t, err)
}
