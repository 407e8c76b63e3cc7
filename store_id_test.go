package ttldb_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// Rule 1: a missing _id is generated as a time-ordered ObjectID read from
// the DB's clock; the caller's document is not changed.
func TestStoreGeneratedObjectID(t *testing.T) {
	db, clk := openStore(t)
	c := db.Collection("c")
	doc := ttldb.Document{"x": 1}
	id1, err := c.InsertOne(doc)
	require.NoError(t, err)
	assert.NotContains(t, doc, "_id", "InsertOne must not change the caller's document")
	oid1, ok := id1.(ttldb.ObjectID)
	require.True(t, ok, "generated _id is %T, want ObjectID", id1)
	assert.Equal(t, storeT0.Truncate(time.Second), oid1.Timestamp(), "timestamp comes from the DB clock")

	got, err := c.FindOne(ttldb.Document{"_id": oid1}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"_id": oid1, "x": 1}, got)
	parsed, err := ttldb.ObjectIDFromHex(oid1.String())
	require.NoError(t, err)
	assert.Equal(t, oid1, parsed)

	// Same second: a different id. Later seconds: greater ids, in order.
	id2, err := c.InsertOne(ttldb.Document{"x": 2})
	require.NoError(t, err)
	assert.NotEqual(t, id1, id2)
	prev := id2.(ttldb.ObjectID)
	for i := range 5 {
		clk.Advance(1500 * time.Millisecond)
		ids, err := c.InsertMany([]ttldb.Document{{"i": i}})
		require.NoError(t, err)
		oid := ids[0].(ttldb.ObjectID)
		assert.Equal(t, clk.Now().Truncate(time.Second), oid.Timestamp())
		assert.Equal(t, 1, bytes.Compare(oid[:], prev[:]), "ObjectIDs are time-ordered")
		prev = oid
	}
	// Upserts generate them too.
	res, err := c.UpdateOne(ttldb.Document{"nope": 1}, ttldb.Document{"$set": ttldb.Document{"y": 1}}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	uid, ok := res.UpsertedID.(ttldb.ObjectID)
	require.True(t, ok, "upserted _id is %T", res.UpsertedID)
	assert.Equal(t, clk.Now().Truncate(time.Second), uid.Timestamp())
}

// Rule 1: _id is unique, across every Go number kind.
func TestStoreDuplicateID(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("dups")
	_, err := c.InsertOne(ttldb.Document{"_id": 1, "v": "first"})
	require.NoError(t, err)
	for _, id := range []any{1, 1.0, int64(1), uint8(1), float32(1), uint64(1)} {
		_, err := c.InsertOne(ttldb.Document{"_id": id, "v": "second"})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "_id %v (%T)", id, id)
		var dk *ttldb.DuplicateKeyError
		require.ErrorAs(t, err, &dk)
		assert.Equal(t, "dups", dk.Collection)
		assert.Equal(t, "_id_", dk.Index)
		assert.EqualValues(t, id, dk.Key)
		// The same key finds the document, whatever its kind.
		got, err := c.FindOne(ttldb.Document{"_id": id}).Document()
		require.NoError(t, err)
		assert.Equal(t, "first", got["v"])
	}
	assert.Equal(t, 1, count(t, c, nil))
	for _, id := range []any{"1", 1.5, true, nil, ttldb.Document{"a": 1}, time.Unix(1, 0)} {
		_, err := c.InsertOne(ttldb.Document{"_id": id})
		require.NoError(t, err, "_id %v (%T) is a different key", id, id)
		_, err = c.InsertOne(ttldb.Document{"_id": id})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "_id %v (%T)", id, id)
	}
	// An array is not a valid _id.
	_, err = c.InsertOne(ttldb.Document{"_id": []any{1}})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
}

// Rule 1: InsertMany is atomic: a duplicate against the collection or
// within the batch, or an invalid document, stores nothing.
func TestStoreInsertManyAtomic(t *testing.T) {
	tests := []struct {
		name string
		docs []ttldb.Document
		want error
	}{
		{"duplicate within the batch", []ttldb.Document{{"_id": "a"}, {"_id": "b"}, {"_id": "a"}}, ttldb.ErrDuplicateKey},
		{"duplicate within the batch across kinds", []ttldb.Document{{"_id": 7}, {"_id": 7.0}}, ttldb.ErrDuplicateKey},
		{"duplicate of a stored document", []ttldb.Document{{"_id": "a"}, {"_id": "existing"}}, ttldb.ErrDuplicateKey},
		{"unique index conflict within the batch", []ttldb.Document{{"_id": "a", "u": 1}, {"_id": "b", "u": 1.0}}, ttldb.ErrDuplicateKey},
		{"unique index conflict with a stored document", []ttldb.Document{{"_id": "a", "u": 2}, {"_id": "b", "u": 100}}, ttldb.ErrDuplicateKey},
		{"invalid document", []ttldb.Document{{"_id": "a"}, {"_id": "b", "f": func() {}}}, ttldb.ErrInvalidDocument},
		{"nil document", []ttldb.Document{{"_id": "a"}, nil}, ttldb.ErrInvalidDocument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openStore(t)
			c := db.Collection("c")
			_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("u")}, Unique: true, Sparse: true})
			require.NoError(t, err)
			mustInsert(t, c, ttldb.Document{"_id": "existing", "u": 100})
			_, err = c.InsertMany(tt.docs)
			require.ErrorIs(t, err, tt.want)
			assert.Equal(t, []ttldb.Document{{"_id": "existing", "u": 100}}, all(t, c), "nothing stored")
			assert.Equal(t, 0, count(t, c, ttldb.Document{"_id": "a"}))
			assert.Equal(t, 1, count(t, c, ttldb.Document{"u": ttldb.Document{"$exists": true}}))
		})
	}
}

// Rule 1: _id is immutable under updates; ReplaceOne keeps it.
func TestStoreImmutableID(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	mustInsert(t, c, ttldb.Document{"_id": 1, "v": 1}, ttldb.Document{"_id": 2, "v": 1})
	before := all(t, c)

	for _, u := range []ttldb.Document{
		{"$set": ttldb.Document{"_id": 3}},
		{"$set": ttldb.Document{"_id": "1"}},
		{"$unset": ttldb.Document{"_id": ""}},
		{"$inc": ttldb.Document{"_id": 1}},
		{"$currentDate": ttldb.Document{"_id": true}},
		{"$set": ttldb.Document{"v": 2, "_id": 9}},
	} {
		_, err := c.UpdateOne(ttldb.Document{"_id": 1}, u)
		require.ErrorIs(t, err, ttldb.ErrImmutableID, "%v", u)
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate, "%v", u)
		_, err = c.UpdateMany(context.Background(), nil, u)
		require.ErrorIs(t, err, ttldb.ErrImmutableID, "%v", u)
	}
	assert.Equal(t, before, all(t, c), "failed updates changed nothing")

	// Setting _id to its own value (of another number kind) is allowed and
	// keeps the stored value.
	res, err := c.UpdateOne(ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"_id": 1.0, "v": 5}})
	require.NoError(t, err)
	assert.Equal(t, 1, res.MatchedCount)
	got, err := c.FindOne(ttldb.Document{"_id": 1}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"_id": 1, "v": 5}, got)

	// ReplaceOne: a replacement without _id keeps it; with the same _id
	// too; with another one it fails.
	res, err = c.ReplaceOne(ttldb.Document{"_id": 2}, ttldb.Document{"w": "new"})
	require.NoError(t, err)
	assert.Equal(t, ttldb.UpdateResult{MatchedCount: 1, ModifiedCount: 1}, res)
	got, err = c.FindOne(ttldb.Document{"w": "new"}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"_id": 2, "w": "new"}, got)
	_, err = c.ReplaceOne(ttldb.Document{"_id": 2}, ttldb.Document{"_id": 2.0, "w": "again"})
	require.NoError(t, err)
	_, err = c.ReplaceOne(ttldb.Document{"_id": 2}, ttldb.Document{"_id": 3, "w": "moved"})
	require.ErrorIs(t, err, ttldb.ErrImmutableID)
	got, err = c.FindOne(ttldb.Document{"_id": 2}).Document()
	require.NoError(t, err)
	assert.Equal(t, "again", got["w"])
	assert.Equal(t, 2, count(t, c, nil))
}

// Rule 2: the collection owns its documents: mutating what went in, or what
// came out, changes neither the stored documents nor the indexes.
func TestStoreOwnsDocuments(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("own")
	for _, f := range []string{"tags", "nested.x", "ints", "nested.arr.y"} {
		_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc(f)}})
		require.NoError(t, err)
	}
	t1 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	makeDoc := func() ttldb.Document {
		return ttldb.Document{
			"_id":    1,
			"tags":   []any{"a", "b"},
			"nested": ttldb.Document{"x": 1, "arr": []any{ttldb.Document{"y": 1}}, "maps": []map[string]any{{"z": 1}}},
			"bin":    []byte{1, 2, 3},
			"ints":   []int{10, 20},
			"strs":   []string{"p", "q"},
			"times":  []time.Time{t1},
		}
	}
	want := makeDoc()
	in := makeDoc()
	_, err := c.InsertOne(in)
	require.NoError(t, err)

	mutate := func(d ttldb.Document) {
		d["tags"].([]any)[0] = "zz"
		n := d["nested"].(ttldb.Document)
		n["x"] = 99
		n["arr"].([]any)[0].(ttldb.Document)["y"] = 99
		n["maps"].([]map[string]any)[0]["z"] = 99
		n["added"] = true
		d["bin"].([]byte)[0] = 99
		d["ints"].([]int)[0] = 99
		d["strs"].([]string)[0] = "zz"
		d["times"].([]time.Time)[0] = time.Time{}
		d["new"] = 1
		delete(d, "tags")
	}
	check := func(when string) {
		t.Helper()
		got, err := c.FindOne(ttldb.Document{"_id": 1}).Document()
		require.NoError(t, err)
		assert.Equal(t, want, got, when)
		for _, q := range []ttldb.Document{
			{"tags": "a"}, {"nested.x": 1}, {"ints": 10}, {"nested.arr.y": 1},
		} {
			ex, err := c.Explain(q)
			require.NoError(t, err)
			assert.Equal(t, "IXSCAN", ex.Stage, "%v", q)
			assert.Equal(t, 1, ex.NReturned, "%s: %v through the index", when, q)
		}
		for _, q := range []ttldb.Document{
			{"tags": "zz"}, {"nested.x": 99}, {"ints": 99}, {"nested.arr.y": 99}, {"new": 1}, {"strs": "zz"},
		} {
			assert.Equal(t, 0, count(t, c, q), "%s: %v", when, q)
		}
	}
	mutate(in)
	check("after mutating the inserted map")

	got, err := c.FindOne(ttldb.Document{"_id": 1}).Document()
	require.NoError(t, err)
	mutate(got)
	check("after mutating FindOne's result")

	found, err := findDocs(c, ttldb.Document{"tags": "a"})
	require.NoError(t, err)
	require.Len(t, found, 1)
	mutate(found[0])
	check("after mutating Find's result")

	// Values handed to $set and ReplaceOne are copied too.
	sub := ttldb.Document{"k": []any{1}}
	_, err = c.UpdateOne(ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"sub": sub}})
	require.NoError(t, err)
	sub["k"].([]any)[0] = 2
	sub["extra"] = 1
	want["sub"] = ttldb.Document{"k": []any{1}}
	check("after mutating a $set value")

	repl := makeDoc()
	delete(repl, "_id")
	_, err = c.ReplaceOne(ttldb.Document{"_id": 1}, repl)
	require.NoError(t, err)
	mutate(repl)
	want = makeDoc()
	check("after mutating a replacement")
}
