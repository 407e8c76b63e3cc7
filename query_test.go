package ttldb_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// queryDocs hold one value of each kind in field a, plus nested documents
// and arrays.
func queryDocs() []ttldb.Document {
	return []ttldb.Document{
		{"_id": 1, "a": 1, "b": ttldb.Document{"c": "x"}, "tags": []string{"red", "blue"}},
		{"_id": 2, "a": 2.0, "b": ttldb.Document{"c": "y"}, "tags": []any{"green"}},
		{"_id": 3, "a": int64(3), "b": ttldb.Document{"c": "x", "d": []any{ttldb.Document{"e": 1}, ttldb.Document{"e": 2}}}},
		{"_id": 4, "a": "3"},
		{"_id": 5, "a": nil},
		{"_id": 6},
		{"_id": 7, "a": []any{1, 5}},
		{"_id": 8, "a": storeT0},
		{"_id": 9, "a": true},
		{"_id": 10, "a": uint16(2), "b": ttldb.Document{"c": "z"}},
	}
}

// Rule 3: the query language through the store, with and without an index
// on the queried fields (the answer must not depend on the plan).
func TestStoreFilters(t *testing.T) {
	tests := []struct {
		filter ttldb.Document
		want   []int
	}{
		{nil, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{ttldb.Document{}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{ttldb.Document{"a": 1}, []int{1, 7}},
		{ttldb.Document{"a": 2}, []int{2, 10}},
		{ttldb.Document{"a": float32(3)}, []int{3}},
		{ttldb.Document{"a": uint8(2)}, []int{2, 10}},
		{ttldb.Document{"a": "3"}, []int{4}},
		{ttldb.Document{"a": nil}, []int{5, 6}},
		{ttldb.Document{"a": true}, []int{9}},
		{ttldb.Document{"a": storeT0}, []int{8}},
		{ttldb.Document{"a": []any{1, 5}}, []int{7}},
		{ttldb.Document{"a": 5}, []int{7}},
		{ttldb.Document{"b.c": "x"}, []int{1, 3}},
		{ttldb.Document{"b": ttldb.Document{"c": "y"}}, []int{2}},
		{ttldb.Document{"b.d.e": 2}, []int{3}},
		{ttldb.Document{"b.d.1.e": 2}, []int{3}},
		{ttldb.Document{"b.d.0.e": 2}, nil},
		{ttldb.Document{"tags": "blue"}, []int{1}},
		{ttldb.Document{"tags": ttldb.Document{"$in": []any{"green", "blue"}}}, []int{1, 2}},
		{ttldb.Document{"a": ttldb.Document{"$eq": 1.0}}, []int{1, 7}},
		{ttldb.Document{"a": ttldb.Document{"$ne": 1}}, []int{2, 3, 4, 5, 6, 8, 9, 10}},
		{ttldb.Document{"a": ttldb.Document{"$gt": 1}}, []int{2, 3, 7, 10}},
		// Each bound may be met by a different element of an array ([1, 5]).
		{ttldb.Document{"a": ttldb.Document{"$gte": 2, "$lt": 3}}, []int{2, 7, 10}},
		{ttldb.Document{"a": ttldb.Document{"$lte": int8(1)}}, []int{1, 7}},
		{ttldb.Document{"a": ttldb.Document{"$lt": 2.5, "$gt": 1.5}}, []int{2, 7, 10}},
		{ttldb.Document{"a": ttldb.Document{"$lt": 2.5, "$gt": 1.5}, "_id": ttldb.Document{"$ne": 7}}, []int{2, 10}},
		{ttldb.Document{"a": ttldb.Document{"$gt": "2"}}, []int{4}},
		{ttldb.Document{"a": ttldb.Document{"$lt": storeT0.Add(time.Second)}}, []int{8}},
		{ttldb.Document{"a": ttldb.Document{"$in": []any{2, "3", nil}}}, []int{2, 4, 5, 6, 10}},
		{ttldb.Document{"a": ttldb.Document{"$nin": []any{1, 2, nil}}}, []int{3, 4, 8, 9}},
		{ttldb.Document{"a": ttldb.Document{"$exists": false}}, []int{6}},
		{ttldb.Document{"a": ttldb.Document{"$exists": true}}, []int{1, 2, 3, 4, 5, 7, 8, 9, 10}},
		{ttldb.Document{"a": ttldb.Document{"$not": ttldb.Document{"$gt": 1}}}, []int{1, 4, 5, 6, 8, 9}},
		{ttldb.Document{"$and": []any{ttldb.Document{"a": ttldb.Document{"$gt": 0}}, ttldb.Document{"b.c": "x"}}}, []int{1, 3}},
		{ttldb.Document{"$or": []any{ttldb.Document{"a": 2}, ttldb.Document{"tags": "red"}}}, []int{1, 2, 10}},
		{ttldb.Document{"$nor": []any{ttldb.Document{"a": 1}, ttldb.Document{"a": 2}}}, []int{3, 4, 5, 6, 8, 9}},
		{ttldb.Document{"a": ttldb.Document{"$gte": 1}, "b.c": ttldb.Document{"$ne": "x"}}, []int{2, 7, 10}},
		{ttldb.Document{"_id": ttldb.Document{"$in": []any{1, 3.0, uint(5), 99}}}, []int{1, 3, 5}},
		{ttldb.Document{"_id": ttldb.Document{"$gt": 8}}, []int{9, 10}},
	}
	for _, indexed := range []bool{false, true} {
		db, _ := openStore(t)
		c := db.Collection("q")
		if indexed {
			for _, f := range []string{"a", "b.c", "tags", "b.d.e"} {
				_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc(f)}})
				require.NoError(t, err)
			}
		}
		mustInsert(t, c, queryDocs()...)
		for _, tt := range tests {
			docs, err := findDocs(c, tt.filter)
			require.NoError(t, err, "%v", tt.filter)
			got := intIDs(t, docs)
			want := tt.want
			if want == nil {
				want = []int{}
			}
			assert.Equal(t, want, got, "indexed=%v filter %v", indexed, tt.filter)
			assert.Equal(t, len(tt.want), count(t, c, tt.filter), "CountDocuments %v", tt.filter)
		}
	}
}

// Rule 3: values of different types sort in MongoDB's type order (null and
// missing, numbers, strings, documents, arrays, binary, ObjectID, bool,
// date); an array sorts by its smallest element ascending, its largest
// descending.
func TestStoreSortTypeOrder(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		db, _ := openStore(t)
		c := db.Collection("s")
		if indexed {
			_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("a")}})
			require.NoError(t, err)
		}
		mustInsert(t, c, queryDocs()...)
		mustInsert(t, c,
			ttldb.Document{"_id": 11, "a": ttldb.Document{"k": 1}},
			ttldb.Document{"_id": 12, "a": []byte{1}},
			ttldb.Document{"_id": 13, "a": ttldb.ObjectID{1}},
			ttldb.Document{"_id": 14, "a": -0.5},
		)
		asc, err := findDocs(c, nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Asc("_id")}})
		require.NoError(t, err)
		assert.Equal(t, []any{5, 6, 14, 1, 7, 2, 10, 3, 4, 11, 12, 13, 9, 8}, ids(asc), "indexed=%v", indexed)
		desc, err := findDocs(c, nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Desc("a"), ttldb.Asc("_id")}})
		require.NoError(t, err)
		assert.Equal(t, []any{8, 9, 13, 12, 11, 4, 7, 3, 2, 10, 1, 14, 5, 6}, ids(desc), "indexed=%v", indexed)
		page, err := findDocs(c, ttldb.Document{"a": ttldb.Document{"$type": nil}}, ttldb.FindOptions{})
		assert.ErrorIs(t, err, ttldb.ErrInvalidFilter, "unsupported $type is refused, not ignored")
		assert.Nil(t, page)
		page, err = findDocs(c, ttldb.Document{"a": ttldb.Document{"$gte": 0}},
			ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Desc("a"), ttldb.Asc("_id")}, Skip: 1, Limit: 3, Projection: ttldb.Document{"a": 1}})
		require.NoError(t, err)
		assert.Equal(t, []ttldb.Document{{"_id": 3, "a": int64(3)}, {"_id": 2, "a": 2.0}, {"_id": 10, "a": uint16(2)}}, page)
	}
}

// Rule 3: a malformed filter is an error from every method that takes one,
// and changes nothing.
func TestStoreInvalidFilter(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("bad")
	mustInsert(t, c, queryDocs()...)
	before := all(t, c)
	for _, f := range []ttldb.Document{
		{"a": ttldb.Document{"$foo": 1}},
		{"$bogus": 1},
		{"$and": 1},
		{"$or": []any{}},
		{"$nor": []any{1}},
		{"a": ttldb.Document{"$in": 5}},
		{"a": ttldb.Document{"$nin": "x"}},
		{"a": ttldb.Document{"$not": 3}},
		{"a": ttldb.Document{"$gt": 1, "$bad": 2}},
		{"a": ttldb.Document{"$eq": func() {}}},
		{"a..b": 1},
	} {
		calls := map[string]func() error{
			"Find": func() error { _, err := findDocs(c, f); return err },
			"FindOne": func() error {
				_, err := c.FindOne(context.Background(), f).Document()
				return err
			},
			"CountDocuments": func() error { _, err := c.CountDocuments(context.Background(), f); return err },
			"Explain":        func() error { _, err := c.Explain(context.Background(), f); return err },
			"UpdateOne": func() error {
				_, err := c.UpdateOne(context.Background(), f, ttldb.Document{"$set": ttldb.Document{"z": 1}})
				return err
			},
			"UpdateMany": func() error {
				_, err := c.UpdateMany(context.Background(), f, ttldb.Document{"$set": ttldb.Document{"z": 1}})
				return err
			},
			"Upsert": func() error {
				_, err := c.UpdateOne(context.Background(), f, ttldb.Document{"$set": ttldb.Document{"z": 1}}, ttldb.UpdateOptions{Upsert: true})
				return err
			},
			"ReplaceOne": func() error {
				_, err := c.ReplaceOne(context.Background(), f, ttldb.Document{"z": 1})
				return err
			},
			"DeleteOne":  func() error { _, err := c.DeleteOne(context.Background(), f); return err },
			"DeleteMany": func() error { _, err := c.DeleteMany(context.Background(), f); return err },
		}
		for name, call := range calls {
			err := call()
			require.ErrorIs(t, err, ttldb.ErrInvalidFilter, "%s(%v)", name, f)
			assert.Contains(t, err.Error(), `"bad"`, "%s: the error names the collection", name)
		}
	}
	assert.Equal(t, before, all(t, c), "nothing changed")
}

// NaN is a storable value; queries on it neither panic nor misbehave.
func TestStoreNaN(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("nan")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("x")}})
	require.NoError(t, err)
	mustInsert(t, c, ttldb.Document{"_id": 1, "x": math.NaN()}, ttldb.Document{"_id": 2, "x": 1.0})
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": math.NaN()})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": float32(math.NaN())})
	require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "NaN _id values are one key")
	got, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
	require.NoError(t, err)
	assert.True(t, math.IsNaN(got["x"].(float64)))
	assert.Equal(t, 1, count(t, c, ttldb.Document{"x": math.NaN()}), "NaN equals NaN in queries, as in MongoDB")
	assert.Equal(t, 1, count(t, c, ttldb.Document{"x": ttldb.Document{"$gte": 0}}))
	docs, err := findDocs(c, nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("x")}})
	require.NoError(t, err)
	assert.Len(t, docs, 3)
}

// Distinct follows MongoDB: arrays contribute their elements (nested
// arrays whole), paths reach into arrays of documents, missing fields
// contribute nothing and null contributes null, values are distinct by
// BSON equality (1, int64(1) and 1.0 are one) and come in BSON order.
func TestDistinct(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	mustInsert(t, c,
		ttldb.Document{"_id": 1, "v": 2, "g": "a"},
		ttldb.Document{"_id": 2, "v": []any{1, 3, []any{4}}, "g": "a"},
		ttldb.Document{"_id": 3, "v": int64(1), "g": "b"},
		ttldb.Document{"_id": 4, "v": 1.0, "g": "a"},
		ttldb.Document{"_id": 5, "v": "x", "g": "a"},
		ttldb.Document{"_id": 6, "g": "a"},
		ttldb.Document{"_id": 7, "v": nil, "g": "a"},
		ttldb.Document{"_id": 8, "v": ttldb.Document{"k": 1}, "g": "a"},
		ttldb.Document{"_id": 9, "items": []any{ttldb.Document{"sku": "p"}, ttldb.Document{"sku": "q"}, ttldb.Document{"sku": "p"}}},
	)
	got, err := c.Distinct(context.Background(), "v", nil)
	require.NoError(t, err)
	require.Equal(t, []any{nil, 1, 2, 3, "x", map[string]any{"k": 1}, []any{4}}, got)

	got, err = c.Distinct(context.Background(), "v", ttldb.Document{"g": "b"})
	require.NoError(t, err)
	require.Equal(t, []any{int64(1)}, got)

	got, err = c.Distinct(context.Background(), "items.sku", nil)
	require.NoError(t, err)
	require.Equal(t, []any{"p", "q"}, got)

	got, err = c.Distinct(context.Background(), "nope", nil)
	require.NoError(t, err)
	require.Empty(t, got)

	got, err = db.Collection("missing").Distinct(context.Background(), "v", nil)
	require.NoError(t, err)
	require.Empty(t, got)

	_, err = c.Distinct(context.Background(), "", nil)
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = c.Distinct(context.Background(), "v", ttldb.Document{"$bad": 1})
	require.ErrorIs(t, err, ttldb.ErrInvalidFilter)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Distinct(ctx, "v", nil)
	require.ErrorIs(t, err, context.Canceled)
}

// EstimatedDocumentCount follows inserts, deletions, TTL deletions and
// capped evictions, and counts expired documents HideExpired hides until
// the monitor deletes them.
func TestEstimatedDocumentCount(t *testing.T) {
	db, clk := openStore(t)
	c, err := db.CreateCollection(context.Background(), "c", ttldb.CollectionOptions{HideExpired: true})
	require.NoError(t, err)
	n, err := c.EstimatedDocumentCount(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	for i := range 10 {
		at := clk.Now()
		if i < 4 {
			at = at.Add(-time.Hour) // expired
		}
		mustInsert(t, c, ttldb.Document{"_id": i, "at": at})
	}
	n, err = c.EstimatedDocumentCount(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 10, n, "expired documents are stored until deleted")
	require.Equal(t, 6, count(t, c, nil), "reads do not see them")
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	n, _ = c.EstimatedDocumentCount(context.Background())
	require.EqualValues(t, 6, n)
	_, err = c.DeleteOne(context.Background(), ttldb.Document{"_id": 9})
	require.NoError(t, err)
	n, _ = c.EstimatedDocumentCount(context.Background())
	require.EqualValues(t, 5, n)

	capped, err := db.CreateCollection(context.Background(), "capped", ttldb.CollectionOptions{Capped: true, MaxDocuments: 3})
	require.NoError(t, err)
	for i := range 5 {
		mustInsert(t, capped, ttldb.Document{"_id": i})
	}
	n, _ = capped.EstimatedDocumentCount(context.Background())
	require.EqualValues(t, 3, n)
	n, err = db.Collection("missing").EstimatedDocumentCount(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestPointerTimeFilters checks issue item 3: a *time.Time in a filter
// matches what the time.Time it points to (or nil, for a nil pointer)
// matches, through an index as by a full scan, and in the filters of
// writes.
func TestPointerTimeFilters(t *testing.T) {
	db, _ := openStore(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	indexed, plain := db.Collection("indexed"), db.Collection("plain")
	_, err := indexed.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("d")}, ExpireAfterSeconds: ttldb.Seconds(3600)})
	require.NoError(t, err)
	for _, c := range []*ttldb.Collection{indexed, plain} {
		mustInsert(t, c,
			ttldb.Document{"_id": t0, "d": t0},
			ttldb.Document{"_id": 2, "d": t0.Add(time.Hour)},
			ttldb.Document{"_id": 3, "d": nil},
			ttldb.Document{"_id": 4},
		)
	}
	tp := &t0
	local := t0.In(time.FixedZone("X", 3600))
	var nilTime *time.Time
	for _, tc := range []struct {
		f    ttldb.Document
		want []any
	}{
		{ttldb.Document{"d": tp}, []any{t0}},
		{ttldb.Document{"d": &local}, []any{t0}},
		{ttldb.Document{"d": ttldb.Document{"$gte": tp}}, []any{t0, 2}},
		{ttldb.Document{"d": ttldb.Document{"$gt": tp}}, []any{2}},
		{ttldb.Document{"d": ttldb.Document{"$in": []any{tp, nilTime}}}, []any{t0, 3, 4}},
		{ttldb.Document{"d": nilTime}, []any{3, 4}},
		{ttldb.Document{"d": ttldb.Document{"$eq": nilTime}}, []any{3, 4}},
		{ttldb.Document{"_id": tp}, []any{t0}},
		{ttldb.Document{"_id": ttldb.Document{"$in": []any{tp, 2}}}, []any{t0, 2}},
	} {
		for _, c := range []*ttldb.Collection{indexed, plain} {
			docs, err := findDocs(c, tc.f, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("_id")}})
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, ids(docs), "%s: %v", c.Name(), tc.f)
		}
	}
	ex, err := indexed.Explain(context.Background(), ttldb.Document{"d": tp})
	require.NoError(t, err)
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, 1, ex.NReturned)
	for _, c := range []*ttldb.Collection{indexed, plain} {
		got, err := c.FindOne(context.Background(), ttldb.Document{"_id": tp}).Document()
		require.NoError(t, err, c.Name())
		assert.Equal(t, t0, got["_id"])
		_, expires, err := c.ExpiresAt(context.Background(), tp)
		require.NoError(t, err, c.Name())
		assert.Equal(t, c == indexed, expires)
		res, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": tp}, ttldb.Document{"$set": ttldb.Document{"x": 1}})
		require.NoError(t, err)
		assert.EqualValues(t, 1, res.MatchedCount, c.Name())
		n, err := c.DeleteOne(context.Background(), ttldb.Document{"_id": tp})
		require.NoError(t, err)
		assert.EqualValues(t, 1, n.DeletedCount, c.Name())
		n, err = c.DeleteMany(context.Background(), ttldb.Document{"d": nilTime})
		require.NoError(t, err)
		assert.EqualValues(t, 2, n.DeletedCount, c.Name())
	}
	// An upsert from a filter with a pointer stores the time it points to.
	res, err := indexed.UpdateOne(context.Background(), ttldb.Document{"_id": 9, "d": tp}, ttldb.Document{"$set": ttldb.Document{"y": 1}}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	assert.Equal(t, 9, res.UpsertedID)
	got, err := indexed.FindOne(context.Background(), ttldb.Document{"_id": 9}).Document()
	require.NoError(t, err)
	assert.Equal(t, t0, got["d"])
}

// Cursor.Document returns the current result as a Document, in the
// cursor's order.
func TestCursorDocument(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	mustInsert(t, c, ttldb.Document{"_id": 2, "v": "b"}, ttldb.Document{"_id": 1, "v": "a"}, ttldb.Document{"_id": 3, "v": "c"})
	cur, err := c.Find(context.Background(), nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("_id")}})
	require.NoError(t, err)
	defer cur.Close(context.Background())
	var got []string
	for cur.Next(context.Background()) {
		d, err := cur.Document()
		require.NoError(t, err)
		got = append(got, d["v"].(string))
	}
	require.NoError(t, cur.Err())
	require.Equal(t, []string{"a", "b", "c"}, got)
}

// SystemClock reads the wall clock: the default of every DB.
func TestSystemClock(t *testing.T) {
	before := time.Now()
	now := ttldb.SystemClock().Now()
	require.False(t, now.Before(before.Add(-time.Second)), "SystemClock is the wall clock")
}

// TestExprThatFailsFailsTheQuery: a $expr that fails on a document (a
// type mismatch) fails the query with ErrExpression, as MongoDB's does,
// in every read and write that takes a filter, and changes nothing.
func TestExprThatFailsFailsTheQuery(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	c := db.Collection("c")
	mustInsert(t, c, ttldb.Document{"_id": 1, "s": 5}, ttldb.Document{"_id": 2, "s": "text"})
	bad := ttldb.Document{"$expr": ttldb.Document{"$gt": []any{ttldb.Document{"$add": []any{"$s", 1}}, 100}}} // _id 1 does not match, _id 2 fails
	set := ttldb.Document{"$set": ttldb.Document{"x": 1}}
	for name, call := range map[string]func() error{
		"Find": func() error {
			cur, err := c.Find(ctx, bad)
			if err != nil {
				return err
			}
			var out []ttldb.Document
			return cur.All(ctx, &out)
		},
		"FindOne":        func() error { return c.FindOne(ctx, bad).Err() },
		"CountDocuments": func() error { _, err := c.CountDocuments(ctx, bad); return err },
		"Distinct":       func() error { _, err := c.Distinct(ctx, "s", bad); return err },
		"Explain":        func() error { _, err := c.Explain(ctx, bad); return err },
		"UpdateMany":     func() error { _, err := c.UpdateMany(ctx, bad, set); return err },
		"DeleteMany":     func() error { _, err := c.DeleteMany(ctx, bad); return err },
		"FindOneAndUpdate upsert": func() error {
			return c.FindOneAndUpdate(ctx, bad, set, ttldb.FindOneAndUpdateOptions{Upsert: true}).Err()
		},
		"Aggregate $match": func() error {
			_, err := c.Aggregate(ctx, []any{ttldb.Document{"$set": ttldb.Document{"y": 1}}, ttldb.Document{"$match": bad}})
			return err
		},
	} {
		err := call()
		require.ErrorIs(t, err, ttldb.ErrExpression, name)
		assert.Contains(t, err.Error(), "$add", name)
	}
	n, err := c.CountDocuments(ctx, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 2, n, "nothing deleted, nothing upserted")
	n, err = c.CountDocuments(ctx, ttldb.Document{"x": 1})
	require.NoError(t, err)
	assert.Zero(t, n, "nothing updated")
}
