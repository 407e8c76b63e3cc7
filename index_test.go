package ttldb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// Rule 5: default names, idempotent creation, conflicts, Indexes, DropIndex.
func TestStoreIndexLifecycle(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("ix")
	mustInsert(t, c, ttldb.Document{"_id": 1, "a": 1, "b": 2})

	create := func(m ttldb.IndexModel) (string, error) { return c.CreateIndex(context.Background(), m) }
	name, err := create(ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")}})
	require.NoError(t, err)
	assert.Equal(t, "lastModifiedDate_1", name)
	name, err = create(ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Desc("b")}})
	require.NoError(t, err)
	assert.Equal(t, "a_1_b_-1", name)
	name, err = create(ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Desc("user.name")}, Name: "byUser", Sparse: true})
	require.NoError(t, err)
	assert.Equal(t, "byUser", name)
	name, err = create(ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("_id")}})
	require.NoError(t, err)
	assert.Equal(t, "_id_", name, "the implicit _id index")

	// The same specification again is a no-op returning the name.
	name, err = create(ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Desc("b")}})
	require.NoError(t, err)
	assert.Equal(t, "a_1_b_-1", name)
	name, err = create(ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Desc("user.name")}, Name: "byUser", Sparse: true})
	require.NoError(t, err)
	assert.Equal(t, "byUser", name)

	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	require.Len(t, specs, 4)
	assert.Equal(t, ttldb.IndexSpec{Name: "_id_", Keys: []ttldb.IndexKey{ttldb.Asc("_id")}, Unique: true}, specs[0])
	assert.Equal(t, []string{"_id_", "lastModifiedDate_1", "a_1_b_-1", "byUser"},
		[]string{specs[0].Name, specs[1].Name, specs[2].Name, specs[3].Name})
	assert.True(t, specs[3].Sparse)
	assert.Equal(t, []ttldb.IndexKey{{Field: "a", Order: 1}, {Field: "b", Order: -1}}, specs[2].Keys)

	// The same keys (or name) with other options is a conflict that changes nothing.
	for _, m := range []ttldb.IndexModel{
		{Keys: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Desc("b")}, Unique: true},
		{Keys: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Desc("b")}, Sparse: true},
		{Keys: []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")}, ExpireAfterSeconds: ttldb.Seconds(60)},
		{Keys: []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")}, PartialFilterExpression: ttldb.Document{"a": 1}},
		{Keys: []ttldb.IndexKey{ttldb.Desc("user.name")}, Name: "byUser"},
		{Keys: []ttldb.IndexKey{ttldb.Asc("other")}, Name: "byUser"},
		{Keys: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Desc("b")}, Name: "another"},
	} {
		_, err := create(m)
		require.ErrorIs(t, err, ttldb.ErrIndexOptionsConflict, "%+v", m)
		assert.Contains(t, err.Error(), `"ix"`)
	}
	after, err := c.Indexes(context.Background())
	require.NoError(t, err)
	assert.Equal(t, specs, after)

	// Malformed specifications.
	for _, m := range []ttldb.IndexModel{
		{},
		{Keys: []ttldb.IndexKey{{Field: "a", Order: 2}}},
		{Keys: []ttldb.IndexKey{{Field: "a", Order: 0}}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("")}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("a..b")}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("$a")}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("x"), ttldb.Desc("x")}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("x")}, Name: "_id_"},
		{Keys: []ttldb.IndexKey{ttldb.Asc("x")}, PartialFilterExpression: ttldb.Document{"$bad": 1}},
	} {
		_, err := create(m)
		require.ErrorIs(t, err, ttldb.ErrInvalidIndex, "%+v", m)
	}

	// DropIndex.
	require.NoError(t, c.DropIndex(context.Background(), "a_1_b_-1"))
	require.ErrorIs(t, c.DropIndex(context.Background(), "a_1_b_-1"), ttldb.ErrNotFound)
	err = c.DropIndex(context.Background(), "nope")
	require.ErrorIs(t, err, ttldb.ErrNotFound)
	assert.Contains(t, err.Error(), `"nope"`)
	require.ErrorIs(t, c.DropIndex(context.Background(), "_id_"), ttldb.ErrInvalidIndex)
	require.ErrorIs(t, db.Collection("missing").DropIndex(context.Background(), "x_1"), ttldb.ErrNotFound)
	ex, err := c.Explain(context.Background(), ttldb.Document{"a": 1})
	require.NoError(t, err)
	assert.Equal(t, "COLLSCAN", ex.Stage, "a dropped index is not used")
	specs, err = c.Indexes(context.Background())
	require.NoError(t, err)
	assert.Len(t, specs, 3)
	// Re-creating it after the drop works and indexes the stored documents.
	_, err = create(ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Desc("b")}, Unique: true})
	require.NoError(t, err)
	ex, err = c.Explain(context.Background(), ttldb.Document{"a": 1})
	require.NoError(t, err)
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, 1, ex.NReturned)

	specs, err = db.Collection("missing").Indexes(context.Background())
	require.NoError(t, err)
	assert.Empty(t, specs)
}

// Rule 5: unique indexes, with sparse and partial variants.
func TestStoreUniqueIndexes(t *testing.T) {
	t.Run("unique", func(t *testing.T) {
		db, _ := openStore(t)
		c := db.Collection("u")
		_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("email")}, Unique: true})
		require.NoError(t, err)
		mustInsert(t, c, ttldb.Document{"_id": 1, "email": "a@x"}, ttldb.Document{"_id": 2})
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 3, "email": "a@x"})
		var dk *ttldb.DuplicateKeyError
		require.ErrorAs(t, err, &dk)
		assert.Equal(t, ttldb.DuplicateKeyError{Collection: "u", Index: "email_1", Key: "a@x"}, *dk)
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 4, "email": nil})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "a missing field is null in a unique non-sparse index")
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 5, "email": []any{"b@x", "a@x"}})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "each array element is a key")
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 6, "email": []any{"c@x", "c@x"}})
		require.NoError(t, err, "a document does not conflict with itself")
		_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 6}, ttldb.Document{"$set": ttldb.Document{"email": "a@x"}})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
		_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 6}, ttldb.Document{"email": "a@x"})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
		_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"email": "a@x", "n": 1}})
		require.NoError(t, err, "keeping one's own key is no conflict")
		// After a delete the key is free again.
		n, err := c.DeleteOne(context.Background(), ttldb.Document{"_id": 1})
		require.NoError(t, err)
		require.EqualValues(t, 1, n.DeletedCount)
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 7, "email": "a@x"})
		require.NoError(t, err)
		assert.Equal(t, 3, count(t, c, nil))
	})
	t.Run("compound", func(t *testing.T) {
		db, _ := openStore(t)
		c := db.Collection("u")
		_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("a"), ttldb.Desc("b")}, Unique: true})
		require.NoError(t, err)
		mustInsert(t, c, ttldb.Document{"_id": 1, "a": 1, "b": 1}, ttldb.Document{"_id": 2, "a": 1, "b": 2}, ttldb.Document{"_id": 3, "a": 2, "b": 1})
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 4, "a": 1.0, "b": int8(2)})
		var dk *ttldb.DuplicateKeyError
		require.ErrorAs(t, err, &dk)
		assert.Equal(t, "a_1_b_-1", dk.Index)
		assert.Equal(t, []any{1.0, int8(2)}, dk.Key)
	})
	t.Run("sparse", func(t *testing.T) {
		db, _ := openStore(t)
		c := db.Collection("u")
		_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("email")}, Unique: true, Sparse: true})
		require.NoError(t, err)
		mustInsert(t, c, ttldb.Document{"_id": 1}, ttldb.Document{"_id": 2}, ttldb.Document{"_id": 3, "email": "a"})
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 4, "email": "a"})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
		// Queries on null still find the documents the index leaves out.
		docs, err := findDocs(c, ttldb.Document{"email": nil})
		require.NoError(t, err)
		assert.Equal(t, []int{1, 2}, intIDs(t, docs))
		docs, err = findDocs(c, nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("email")}})
		require.NoError(t, err)
		assert.Len(t, docs, 3, "a sort does not use a sparse index to drop documents")
		ex, err := c.Explain(context.Background(), ttldb.Document{"email": "a"})
		require.NoError(t, err)
		assert.Equal(t, "IXSCAN", ex.Stage)
		assert.Equal(t, 1, ex.KeysExamined)
	})
	t.Run("partial", func(t *testing.T) {
		db, _ := openStore(t)
		c := db.Collection("u")
		_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{
			Keys: []ttldb.IndexKey{ttldb.Asc("user")}, Unique: true,
			PartialFilterExpression: ttldb.Document{"active": true},
		})
		require.NoError(t, err)
		mustInsert(t, c,
			ttldb.Document{"_id": 1, "user": "ada", "active": true},
			ttldb.Document{"_id": 2, "user": "ada", "active": false},
			ttldb.Document{"_id": 3, "user": "ada"},
		)
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 4, "user": "ada", "active": true})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
		_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 2}, ttldb.Document{"$set": ttldb.Document{"active": true}})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "an update moving a document into the partial index is checked")
		docs, err := findDocs(c, ttldb.Document{"user": "ada"})
		require.NoError(t, err)
		assert.Equal(t, []int{1, 2, 3}, intIDs(t, docs), "a partial index never hides documents from a query")
		specs, err := c.Indexes(context.Background())
		require.NoError(t, err)
		assert.Equal(t, ttldb.Document{"active": true}, specs[1].PartialFilterExpression)
	})
	t.Run("build on existing duplicates", func(t *testing.T) {
		db, _ := openStore(t)
		c := db.Collection("u")
		mustInsert(t, c, ttldb.Document{"_id": 1, "k": 5}, ttldb.Document{"_id": 2, "k": 5.0}, ttldb.Document{"_id": 3})
		_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("k")}, Unique: true})
		var dk *ttldb.DuplicateKeyError
		require.ErrorAs(t, err, &dk)
		assert.Equal(t, "k_1", dk.Index)
		specs, err := c.Indexes(context.Background())
		require.NoError(t, err)
		assert.Len(t, specs, 1, "nothing was created")
		mustInsert(t, c, ttldb.Document{"_id": 4, "k": 5})
		// Without the duplicate the build succeeds (a missing field and
		// one explicit null would conflict too, so give _id 3 a value).
		_, err = c.DeleteMany(context.Background(), ttldb.Document{"k": 5, "_id": ttldb.Document{"$ne": 1}})
		require.NoError(t, err)
		_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 3}, ttldb.Document{"$set": ttldb.Document{"k": 6}})
		require.NoError(t, err)
		_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("k")}, Unique: true})
		require.NoError(t, err)
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 5, "k": 6})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
	})
}

// Rule 5: multikey indexes hold each element, and never return a document
// twice.
func TestStoreMultikeyIndex(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("mk")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("tags")}})
	require.NoError(t, err)
	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	assert.False(t, specs[1].Multikey)
	mustInsert(t, c,
		ttldb.Document{"_id": 1, "tags": []any{"x", "y", "x"}},
		ttldb.Document{"_id": 2, "tags": []string{"y"}},
		ttldb.Document{"_id": 3, "tags": "x"},
		ttldb.Document{"_id": 4, "tags": []any{}},
	)
	specs, err = c.Indexes(context.Background())
	require.NoError(t, err)
	assert.True(t, specs[1].Multikey)
	for _, tc := range []struct {
		filter ttldb.Document
		want   []int
		keys   int
	}{
		{ttldb.Document{"tags": "x"}, []int{1, 3}, 2},
		{ttldb.Document{"tags": "y"}, []int{1, 2}, 2},
		{ttldb.Document{"tags": ttldb.Document{"$in": []any{"x", "y"}}}, []int{1, 2, 3}, 4},
		{ttldb.Document{"tags": ttldb.Document{"$gte": "a"}}, []int{1, 2, 3}, 4},
	} {
		docs, err := findDocs(c, tc.filter)
		require.NoError(t, err)
		assert.Equal(t, tc.want, intIDs(t, docs), "%v", tc.filter)
		ex, err := c.Explain(context.Background(), tc.filter)
		require.NoError(t, err)
		assert.Equal(t, "IXSCAN", ex.Stage)
		assert.Equal(t, "tags_1", ex.IndexName)
		assert.Equal(t, tc.keys, ex.KeysExamined, "%v", tc.filter)
		assert.Equal(t, len(tc.want), ex.DocsExamined, "%v: each document examined once", tc.filter)
	}
	assert.Equal(t, 1, count(t, c, ttldb.Document{"tags": []any{}}))
	// An update moves the keys.
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"tags": []any{"z"}}})
	require.NoError(t, err)
	assert.Equal(t, 1, count(t, c, ttldb.Document{"tags": "x"}))
	assert.Equal(t, 1, count(t, c, ttldb.Document{"tags": "z"}))
	// A compound index over two arrays cannot hold a document.
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("tags"), ttldb.Asc("more")}})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 9, "tags": []any{1, 2}, "more": []any{3, 4}})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	assert.Equal(t, 0, count(t, c, ttldb.Document{"_id": 9}))
}

// Rule 5: the planner uses an index for equality, $in, ranges on the
// leading key and sort, with exact counts.
func TestStoreExplainPlans(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("plans")
	for _, m := range []ttldb.IndexModel{
		{Keys: []ttldb.IndexKey{ttldb.Asc("a")}},
		{Keys: []ttldb.IndexKey{ttldb.Desc("d")}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("x"), ttldb.Desc("y")}},
	} {
		_, err := c.CreateIndex(context.Background(), m)
		require.NoError(t, err)
	}
	for i := range 10 {
		mustInsert(t, c, ttldb.Document{"_id": i, "a": i % 5, "d": i, "x": i % 2, "y": i, "z": i})
	}
	tests := []struct {
		name    string
		filter  ttldb.Document
		opts    ttldb.FindOptions
		stage   string
		index   string
		keys    int
		docs    int
		ret     int
		inMem   bool
		firstID any
	}{
		{"equality", ttldb.Document{"a": 3}, ttldb.FindOptions{}, "IXSCAN", "a_1", 2, 2, 2, false, 3},
		{"equality other kind", ttldb.Document{"a": 3.0}, ttldb.FindOptions{}, "IXSCAN", "a_1", 2, 2, 2, false, 3},
		{"$eq", ttldb.Document{"a": ttldb.Document{"$eq": 3}}, ttldb.FindOptions{}, "IXSCAN", "a_1", 2, 2, 2, false, 3},
		{"$in", ttldb.Document{"a": ttldb.Document{"$in": []any{1, 3}}}, ttldb.FindOptions{}, "IXSCAN", "a_1", 4, 4, 4, false, 1},
		{"range", ttldb.Document{"a": ttldb.Document{"$gte": 1, "$lt": 3}}, ttldb.FindOptions{}, "IXSCAN", "a_1", 4, 4, 4, false, 1},
		{"range on a descending index", ttldb.Document{"d": ttldb.Document{"$gt": 6}}, ttldb.FindOptions{}, "IXSCAN", "d_-1", 3, 3, 3, false, 9},
		{"leading key of a compound index", ttldb.Document{"x": 1}, ttldb.FindOptions{}, "IXSCAN", "x_1_y_-1", 5, 5, 5, false, 9},
		{"compound, residual filter", ttldb.Document{"x": 1, "y": ttldb.Document{"$lt": 5}}, ttldb.FindOptions{}, "IXSCAN", "x_1_y_-1", 5, 5, 2, false, 3},
		{"equality with an extra condition", ttldb.Document{"a": 3, "z": 8}, ttldb.FindOptions{}, "IXSCAN", "a_1", 2, 2, 1, false, 8},
		{"_id", ttldb.Document{"_id": 4}, ttldb.FindOptions{}, "IXSCAN", "_id_", 1, 1, 1, false, 4},
		{"_id $in", ttldb.Document{"_id": ttldb.Document{"$in": []any{4, 5, 99}}}, ttldb.FindOptions{}, "IXSCAN", "_id_", 2, 2, 2, false, 4},
		{"unindexed", ttldb.Document{"z": 4}, ttldb.FindOptions{}, "COLLSCAN", "", 0, 10, 1, false, 4},
		{"no filter", nil, ttldb.FindOptions{}, "COLLSCAN", "", 0, 10, 10, false, 0},
		{"sort through an index", nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("a")}, Limit: 3}, "IXSCAN", "a_1", 3, 3, 3, false, 0},
		{"reverse sort through an index", nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Desc("a")}, Limit: 1}, "IXSCAN", "a_1", 1, 1, 1, false, 9},
		{"sort through a descending index", nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("d")}, Limit: 2, Skip: 1}, "IXSCAN", "d_-1", 3, 3, 2, false, 1},
		{"compound sort", nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Desc("x"), ttldb.Asc("y")}}, "IXSCAN", "x_1_y_-1", 10, 10, 10, false, 1},
		{"range and sort on the same index", ttldb.Document{"d": ttldb.Document{"$gt": 6}}, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("d")}}, "IXSCAN", "d_-1", 3, 3, 3, false, 7},
		{"filter index, in-memory sort", ttldb.Document{"a": 3}, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Desc("z")}}, "IXSCAN", "a_1", 2, 2, 2, true, 8},
		{"unindexed sort", nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Desc("z")}, Limit: 1}, "COLLSCAN", "", 0, 10, 1, true, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := c.Explain(context.Background(), tt.filter, tt.opts)
			require.NoError(t, err)
			assert.Equal(t, "plans", ex.Collection)
			assert.Equal(t, tt.stage, ex.Stage)
			assert.Equal(t, tt.index, ex.IndexName)
			assert.Equal(t, tt.keys, ex.KeysExamined, "keys examined")
			assert.Equal(t, tt.docs, ex.DocsExamined, "docs examined")
			assert.Equal(t, tt.ret, ex.NReturned)
			assert.Equal(t, tt.inMem, ex.InMemorySort)
			docs, err := findDocs(c, tt.filter, tt.opts)
			require.NoError(t, err)
			require.Len(t, docs, tt.ret)
			if len(tt.opts.Sort) > 0 || len(docs) > 0 && tt.stage == "IXSCAN" {
				assert.Equal(t, tt.firstID, docs[0]["_id"])
			}
		})
	}
	ex, err := db.Collection("nothing").Explain(context.Background(), ttldb.Document{"a": 1})
	require.NoError(t, err)
	assert.Equal(t, 0, ex.NReturned)
}

// Planner cases the differential test found: an index must not narrow a
// query below what the filter matches.
func TestStorePlannerNeverNarrows(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("p")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("tags")}})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("e")}, Sparse: true})
	require.NoError(t, err)
	mustInsert(t, c,
		ttldb.Document{"_id": 1, "tags": []any{1, "x"}},
		ttldb.Document{"_id": 2, "tags": []any{3}, "e": nil},
		ttldb.Document{"_id": 3, "e": 1},
	)
	plain := db.Collection("plain")
	mustInsert(t, plain, all(t, c)...)
	for _, f := range []ttldb.Document{
		// A range with an array operand compares whole arrays, which a
		// multikey index does not hold.
		{"tags": ttldb.Document{"$gt": []any{nil, true}, "$lte": 2.5}},
		{"tags": ttldb.Document{"$lt": []any{2}}},
		// A range that includes null matches documents a sparse index
		// leaves out.
		{"e": ttldb.Document{"$lte": nil}},
		{"e": ttldb.Document{"$gte": nil, "$lte": nil}},
		{"e": ttldb.Document{"$lt": 5}},
	} {
		want, err := findDocs(plain, f)
		require.NoError(t, err)
		got, err := findDocs(c, f)
		require.NoError(t, err)
		assert.Equal(t, intIDs(t, want), intIDs(t, got), "%v", f)
	}
	assert.Equal(t, 2, count(t, c, ttldb.Document{"e": ttldb.Document{"$lte": nil}}))
	assert.Equal(t, 1, count(t, c, ttldb.Document{"tags": ttldb.Document{"$gt": []any{nil, true}, "$lte": 2.5}}))
}

// Index trees order encoded keys: a compound index walked in either
// direction, from a leading value that is a prefix of others ("a" of "a\x00"
// and "ab"), must return exactly the matching documents in the requested
// order, as a collection without indexes does.
func TestStoreIndexCompoundWalks(t *testing.T) {
	db, _ := openStore(t)
	indexed, plain := db.Collection("indexed"), db.Collection("plain")
	for _, m := range []ttldb.IndexModel{
		{Keys: []ttldb.IndexKey{ttldb.Asc("s"), ttldb.Desc("n")}},
		{Keys: []ttldb.IndexKey{ttldb.Desc("t"), ttldb.Asc("n")}},
	} {
		_, err := indexed.CreateIndex(context.Background(), m)
		require.NoError(t, err)
	}
	leads := []any{"", "a", "a\x00", "a\x00b", "ab", "b", 1, 1.5, nil}
	id := 0
	for _, s := range leads {
		for n := range 3 {
			doc := ttldb.Document{"_id": id, "s": s, "t": s, "n": n}
			mustInsert(t, indexed, doc)
			mustInsert(t, plain, doc)
			id++
		}
	}
	for _, field := range []string{"s", "t"} {
		for _, v := range []any{"a", "a\x00", "", 1} {
			filters := []ttldb.Document{
				{field: v},
				{field: ttldb.Document{"$gt": v}},
				{field: ttldb.Document{"$gte": v}},
				{field: ttldb.Document{"$lt": v}},
				{field: ttldb.Document{"$lte": v}},
				{field: ttldb.Document{"$in": []any{v, "b"}}},
			}
			for _, f := range filters {
				for _, sort := range [][]ttldb.IndexKey{
					{ttldb.Asc(field), ttldb.Desc("n")}, {ttldb.Desc(field), ttldb.Asc("n")},
					{ttldb.Asc(field), ttldb.Asc("n")}, {ttldb.Desc(field), ttldb.Desc("n")},
				} {
					opts := ttldb.FindOptions{Sort: sort}
					ex, err := indexed.Explain(context.Background(), f, opts)
					require.NoError(t, err)
					require.Equal(t, "IXSCAN", ex.Stage, "%v", f)
					got, err := findDocs(indexed, f, opts)
					require.NoError(t, err)
					want, err := findDocs(plain, f, opts)
					require.NoError(t, err)
					require.Equal(t, ids(want), ids(got), "Find(%q, sort %v): plan %+v", f, sort, ex)
					if _, isEq := f[field].(string); isEq && !ex.InMemorySort {
						assert.Equal(t, len(want), ex.KeysExamined, "an equality walks only its keys: %v", f)
					}
				}
			}
		}
	}
}

// Multikey expansion: 64k distinct elements index correctly (each found
// through the index, duplicates counted once); a document with more keys
// than MaxIndexKeysPerDocument is refused with ErrInvalidDocument naming
// the field, and nothing changes.
func TestStoreMultikeyLimit(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("mk")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("tags")}})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Desc("list.v"), ttldb.Asc("k")}, Unique: true})
	require.NoError(t, err)

	n := ttldb.MaxIndexKeysPerDocument
	tags := make([]any, 0, n+100)
	for i := range n {
		if i%2 == 0 {
			tags = append(tags, i)
		} else {
			tags = append(tags, fmt.Sprint(i))
		}
	}
	tags = append(tags, 0, "1", 0.0, float32(2)) // duplicates of elements already there
	mustInsert(t, c, ttldb.Document{"_id": "big", "tags": tags, "k": 1})
	for _, probe := range []any{0, 2.0, "1", n - 2, fmt.Sprint(n - 1)} {
		docs, err := findDocs(c, ttldb.Document{"tags": probe})
		require.NoError(t, err)
		require.Len(t, docs, 1, "tags: %v", probe)
	}
	assert.Equal(t, 0, count(t, c, ttldb.Document{"tags": n}))
	assert.Equal(t, 1, count(t, c, ttldb.Document{"tags": ttldb.Document{"$gte": n - 2}}))
	ex, err := c.Explain(context.Background(), ttldb.Document{"tags": ttldb.Document{"$gte": 0}})
	require.NoError(t, err)
	assert.Equal(t, "IXSCAN", ex.Stage)
	// [0, MaxKey] holds every number and string: one entry per distinct
	// element, the four duplicates left out.
	assert.Equal(t, n, ex.KeysExamined)

	// One key over: refused, naming the field, for inserts, updates,
	// and the compound index's multikey field alike.
	over := append(tags[:n:n], "one more")
	docsBefore := all(t, c)
	checkRefused := func(err error, field string) {
		t.Helper()
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
		var de *ttldb.DocumentError
		require.True(t, errors.As(err, &de), "%v", err)
		assert.Equal(t, field, de.Path)
		assert.Contains(t, err.Error(), "MaxIndexKeysPerDocument")
	}
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": "over", "tags": over})
	checkRefused(err, "tags")
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": "big"}, ttldb.Document{"$set": ttldb.Document{"tags": over}})
	checkRefused(err, "tags")
	list := make([]ttldb.Document, n+1)
	for i := range list {
		list[i] = ttldb.Document{"v": i}
	}
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": "list", "list": list, "k": 2})
	checkRefused(err, "list.v")
	assert.Equal(t, docsBefore, all(t, c), "a refused write changes nothing")
	assert.Equal(t, 0, count(t, c, ttldb.Document{"tags": "one more"}))

	// An index built over a stored document with too many keys fails and
	// is not created.
	d := db.Collection("build")
	mustInsert(t, d, ttldb.Document{"_id": 1, "xs": over})
	_, err = d.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("xs")}})
	checkRefused(err, "xs")
	specs, err := d.Indexes(context.Background())
	require.NoError(t, err)
	assert.Len(t, specs, 1, "only _id_")
}

// TestPartialIndexRefusesExpr: $expr is not allowed in a partial index's
// filter, as in MongoDB.
func TestPartialIndexRefusesExpr(t *testing.T) {
	db, _ := openStore(t)
	_, err := db.Collection("c").CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:                    []ttldb.IndexKey{ttldb.Asc("a")},
		PartialFilterExpression: ttldb.Document{"$or": []any{ttldb.Document{"$expr": ttldb.Document{"$gt": []any{"$a", 1}}}}},
	})
	require.ErrorIs(t, err, ttldb.ErrInvalidIndex)
	assert.Contains(t, err.Error(), "$expr")
}
