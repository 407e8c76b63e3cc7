package ttldb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

type level string

// TestNamedTypesAccepted checks issue item 5: named types whose kind a
// document holds are stored as that kind, in documents, filters and
// updates alike; json.Number is stored as the number it holds and matches
// that number; a json.Number that is not a number is refused.
func TestNamedTypesAccepted(t *testing.T) {
	db, _ := openStore(t)
	for _, indexed := range []bool{false, true} {
		c := db.Collection("plain")
		if indexed {
			c = db.Collection("indexed")
			for _, f := range []string{"dur", "lvl", "n", "f", "lvls"} {
				_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc(f)}})
				require.NoError(t, err)
			}
		}
		mustInsert(t, c, ttldb.Document{
			"_id": level("a"), "dur": 90 * time.Second, "lvl": level("warn"),
			"n": json.Number("5"), "f": json.Number("2.5"), "lvls": []level{"x", "y"},
		})
		got, err := c.FindOne(context.Background(), ttldb.Document{"_id": "a"}).Document()
		require.NoError(t, err, "indexed %v", indexed)
		assert.Equal(t, ttldb.Document{
			"_id": "a", "dur": int64(90 * time.Second), "lvl": "warn",
			"n": int64(5), "f": 2.5, "lvls": []string{"x", "y"},
		}, got)
		for _, f := range []ttldb.Document{
			{"_id": level("a")},
			{"dur": 90 * time.Second}, {"dur": int64(90e9)}, {"dur": ttldb.Document{"$gte": time.Minute}},
			{"lvl": level("warn")}, {"lvl": "warn"}, {"lvl": ttldb.Document{"$in": []level{"info", "warn"}}},
			{"n": 5}, {"n": json.Number("5")}, {"n": ttldb.Document{"$lt": json.Number("5.5")}},
			{"f": 2.5}, {"f": json.Number("2.5")}, {"lvls": level("y")},
			{"n": ttldb.Document{"$exists": level("") == ""}},
		} {
			assert.Equal(t, 1, count(t, c, f), "indexed %v: %v", indexed, f)
		}
		assert.Equal(t, 0, count(t, c, ttldb.Document{"n": json.Number("6")}))
		_, err = c.UpdateOne(context.Background(), ttldb.Document{"lvl": level("warn")}, ttldb.Document{
			"$inc": ttldb.Document{"dur": time.Second, "n": json.Number("1")},
			"$set": ttldb.Document{"lvl": level("error")},
		})

		require.NoError(t, err)
		got, err = c.FindOne(context.Background(), ttldb.Document{"_id": "a"}).Document()
		require.NoError(t, err)
		assert.Equal(t, int64(91e9), got["dur"])
		assert.Equal(t, int64(6), got["n"])
		assert.Equal(t, "error", got["lvl"])
		// Not a number: refused everywhere, naming the path.
		_, err = c.InsertOne(context.Background(), ttldb.Document{"n": json.Number("five")})
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
		var de *ttldb.DocumentError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "n", de.Path)
		_, err = findDocs(c, ttldb.Document{"n": json.Number("NaN")})
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter)
		_, err = c.UpdateOne(context.Background(), ttldb.Document{}, ttldb.Document{"$set": ttldb.Document{"n": json.Number("1e999")}})
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate)
		_, err = c.UpdateOne(context.Background(), ttldb.Document{}, ttldb.Document{"$inc": ttldb.Document{"n": json.Number("x")}})
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate)
		assert.Equal(t, 1, count(t, c, nil))
	}
}

// Rule 1: a missing _id is generated as a time-ordered ObjectID read from
// the DB's clock; the caller's document is not changed.
func TestStoreGeneratedObjectID(t *testing.T) {
	db, clk := openStore(t)
	c := db.Collection("c")
	doc := ttldb.Document{"x": 1}
	res1, err := c.InsertOne(context.Background(), doc)
	require.NoError(t, err)
	id1 := res1.InsertedID
	assert.NotContains(t, doc, "_id", "InsertOne must not change the caller's document")
	oid1, ok := id1.(ttldb.ObjectID)
	require.True(t, ok, "generated _id is %T, want ObjectID", id1)
	assert.Equal(t, storeT0.Truncate(time.Second), oid1.Timestamp(), "timestamp comes from the DB clock")

	got, err := c.FindOne(context.Background(), ttldb.Document{"_id": oid1}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"_id": oid1, "x": 1}, got)
	parsed, err := ttldb.ObjectIDFromHex(oid1.Hex())
	require.NoError(t, err)
	assert.Equal(t, oid1, parsed)

	// Same second: a different id. Later seconds: greater ids, in order.
	res2, err := c.InsertOne(context.Background(), ttldb.Document{"x": 2})
	require.NoError(t, err)
	id2 := res2.InsertedID
	assert.NotEqual(t, id1, id2)
	prev := id2.(ttldb.ObjectID)
	for i := range 5 {
		clk.Advance(1500 * time.Millisecond)
		res, err := c.InsertMany(context.Background(), []ttldb.Document{{"i": i}})
		require.NoError(t, err)
		oid := res.InsertedIDs[0].(ttldb.ObjectID)
		assert.Equal(t, clk.Now().Truncate(time.Second), oid.Timestamp())
		assert.Equal(t, 1, bytes.Compare(oid[:], prev[:]), "ObjectIDs are time-ordered")
		prev = oid
	}
	// Upserts generate them too.
	res, err := c.UpdateOne(context.Background(), ttldb.Document{"nope": 1}, ttldb.Document{"$set": ttldb.Document{"y": 1}}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	uid, ok := res.UpsertedID.(ttldb.ObjectID)
	require.True(t, ok, "upserted _id is %T", res.UpsertedID)
	assert.Equal(t, clk.Now().Truncate(time.Second), uid.Timestamp())
}

// Rule 1: _id is unique, across every Go number kind.
func TestStoreDuplicateID(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("dups")
	_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": 1, "v": "first"})
	require.NoError(t, err)
	for _, id := range []any{1, 1.0, int64(1), uint8(1), float32(1), uint64(1)} {
		_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": id, "v": "second"})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "_id %v (%T)", id, id)
		var dk *ttldb.DuplicateKeyError
		require.ErrorAs(t, err, &dk)
		assert.Equal(t, "dups", dk.Collection)
		assert.Equal(t, "_id_", dk.Index)
		assert.EqualValues(t, id, dk.Key)
		// The same key finds the document, whatever its kind.
		got, err := c.FindOne(context.Background(), ttldb.Document{"_id": id}).Document()
		require.NoError(t, err)
		assert.Equal(t, "first", got["v"])
	}
	assert.Equal(t, 1, count(t, c, nil))
	for _, id := range []any{"1", 1.5, true, nil, ttldb.Document{"a": 1}, time.Unix(1, 0)} {
		_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": id})
		require.NoError(t, err, "_id %v (%T) is a different key", id, id)
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": id})
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "_id %v (%T)", id, id)
	}
	// An array is not a valid _id.
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": []any{1}})
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
			_, err = c.InsertMany(context.Background(), tt.docs)
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
		_, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, u)
		require.ErrorIs(t, err, ttldb.ErrImmutableID, "%v", u)
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate, "%v", u)
		_, err = c.UpdateMany(context.Background(), nil, u)
		require.ErrorIs(t, err, ttldb.ErrImmutableID, "%v", u)
	}
	assert.Equal(t, before, all(t, c), "failed updates changed nothing")

	// Setting _id to its own value (of another number kind) is allowed and
	// keeps the stored value.
	res, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"_id": 1.0, "v": 5}})
	require.NoError(t, err)
	assert.EqualValues(t, 1, res.MatchedCount)
	got, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"_id": 1, "v": 5}, got)

	// ReplaceOne: a replacement without _id keeps it; with the same _id
	// too; with another one it fails.
	res, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 2}, ttldb.Document{"w": "new"})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{MatchedCount: 1, ModifiedCount: 1}, res)
	got, err = c.FindOne(context.Background(), ttldb.Document{"w": "new"}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"_id": 2, "w": "new"}, got)
	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 2}, ttldb.Document{"_id": 2.0, "w": "again"})
	require.NoError(t, err)
	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 2}, ttldb.Document{"_id": 3, "w": "moved"})
	require.ErrorIs(t, err, ttldb.ErrImmutableID)
	got, err = c.FindOne(context.Background(), ttldb.Document{"_id": 2}).Document()
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
	_, err := c.InsertOne(context.Background(), in)
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
		got, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
		require.NoError(t, err)
		assert.Equal(t, want, got, when)
		for _, q := range []ttldb.Document{
			{"tags": "a"}, {"nested.x": 1}, {"ints": 10}, {"nested.arr.y": 1},
		} {
			ex, err := c.Explain(context.Background(), q)
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

	got, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
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
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"sub": sub}})
	require.NoError(t, err)
	sub["k"].([]any)[0] = 2
	sub["extra"] = 1
	want["sub"] = ttldb.Document{"k": []any{1}}
	check("after mutating a $set value")

	repl := makeDoc()
	delete(repl, "_id")
	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 1}, repl)
	require.NoError(t, err)
	mutate(repl)
	want = makeDoc()
	check("after mutating a replacement")
}

// Two _id values are one key exactly when they compare equal: embedded
// documents whose renderings look alike are different _ids.
func TestStoreIDKeyDistinctDocuments(t *testing.T) {
	cases := []struct {
		name   string
		first  any
		second any
	}{
		{"rendering of a two-field document", ttldb.Document{"a": "x b string:y"}, ttldb.Document{"a": "x", "b": "y"}},
		{"number and string in an array", ttldb.Document{"a": []any{1}}, ttldb.Document{"a": []any{"1"}}},
		{"typed array of number and of string", ttldb.Document{"k": []string{"7"}}, ttldb.Document{"k": []int{7}}},
		{"field order in names", ttldb.Document{"ab": 1}, ttldb.Document{"a": ttldb.Document{"b": 1}}},
		{"string with a NUL", ttldb.Document{"a": "x\x00"}, ttldb.Document{"a": "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openStore(t)
			c := db.Collection("ids")
			_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": tc.first, "v": 1})
			require.NoError(t, err)
			_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": tc.second, "v": 2})
			require.NoError(t, err, "a different _id must not be a duplicate key")
			for v, id := range map[int]any{1: tc.first, 2: tc.second} {
				got, err := c.FindOne(context.Background(), ttldb.Document{"_id": id}).Document()
				require.NoError(t, err)
				assert.Equal(t, v, got["v"], "FindOne(_id: %v) found the other document", id)
				n, err := c.CountDocuments(context.Background(), ttldb.Document{"_id": id})
				require.NoError(t, err)
				assert.EqualValues(t, 1, n, "CountDocuments(_id: %v)", id)
				_, expires, err := c.ExpiresAt(context.Background(), id)
				require.NoError(t, err)
				assert.False(t, expires)
			}
			assert.Equal(t, 2, count(t, c, nil))
		})
	}
}

// Equal _id values are one key whatever their Go representation: a typed
// array equals the []any with the same elements, numbers of every kind
// with the same value are equal, inside documents too.
func TestStoreIDKeyEqualValues(t *testing.T) {
	cases := []struct {
		name   string
		first  any
		second any
	}{
		{"typed and untyped array", ttldb.Document{"t": []int{1, 2}}, ttldb.Document{"t": []any{1, 2}}},
		{"number kinds in an array", ttldb.Document{"t": []any{int8(1), 2.0}}, ttldb.Document{"t": []float32{1, 2}}},
		{"typed array of documents", ttldb.Document{"t": []ttldb.Document{{"x": 1}}}, ttldb.Document{"t": []any{ttldb.Document{"x": uint64(1)}}}},
		{"negative zero", ttldb.Document{"z": 0}, ttldb.Document{"z": math.Copysign(0, -1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openStore(t)
			c := db.Collection("ids")
			_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": tc.first, "v": 1})
			require.NoError(t, err)
			_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": tc.second, "v": 2})
			require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "an equal _id is a duplicate key")
			got, err := c.FindOne(context.Background(), ttldb.Document{"_id": tc.second}).Document()
			require.NoError(t, err)
			assert.Equal(t, 1, got["v"])
			assert.Equal(t, 1, count(t, c, nil))
		})
	}
}

// A model struct written for MongoDB's Go driver (bson tags), with the
// kinds of fields such models hold.
type (
	address struct {
		City string `bson:"city"`
		Zip  string `bson:"zip,omitempty"`
	}
	user struct {
		ID       ttldb.ObjectID    `bson:"_id,omitempty"`
		Name     string            `bson:"name"`
		Age      int               `bson:"age"`
		Score    float64           `bson:"score"`
		Admin    bool              `bson:"admin"`
		Tags     []string          `bson:"tags"`
		Seen     time.Time         `bson:"seen"`
		Home     address           `bson:"home"`
		Work     *address          `bson:"work"`
		Past     []address         `bson:"past"`
		Counts   map[string]int    `bson:"counts"`
		Level    userLevel         `bson:"userLevel"`
		Note     string            `bson:"note,omitempty"`
		Password string            `bson:"-"`
		Extra    map[string]string `ttldb:"extra,omitempty"`
	}
	userLevel string
)

var structT0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func openStructDB(t *testing.T) *ttldb.DB {
	t.Helper()
	db, err := ttldb.Open(ttldb.WithClock(ttltest.NewClock(structT0)), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func sampleUser(name string, age int) user {
	return user{
		Name: name, Age: age, Score: float64(age) / 2, Admin: age > 40, Tags: []string{"t" + name, "all"},
		Seen: structT0.Add(time.Duration(age) * time.Minute), Home: address{City: "c" + name, Zip: "z"},
		Work: &address{City: "w" + name}, Past: []address{{City: "p1"}, {City: "p2", Zip: "9"}},
		Counts: map[string]int{"logins": age}, Level: "warn", Password: "secret",
	}
}

// userDocument is the Document form of sampleUser: the same document
// written by hand as a map.
func userDocument(name string, age int) ttldb.Document {
	return ttldb.Document{
		"name": name, "age": age, "score": float64(age) / 2, "admin": age > 40, "tags": []string{"t" + name, "all"},
		"seen": structT0.Add(time.Duration(age) * time.Minute), "home": ttldb.Document{"city": "c" + name, "zip": "z"},
		"work": ttldb.Document{"city": "w" + name}, "past": []ttldb.Document{{"city": "p1"}, {"city": "p2", "zip": "9"}},
		"counts": ttldb.Document{"logins": age}, "userLevel": "warn",
	}
}

// TestInsertStructGeneratesID checks a struct inserted without an _id
// value gets a generated ObjectID, returned and stored, that the struct
// (given by pointer) is not changed, and that the stored document decodes
// back into the same struct.
func TestInsertStructGeneratesID(t *testing.T) {
	c := openStructDB(t).Collection("users")
	u := sampleUser("ada", 36)
	res, err := c.InsertOne(context.Background(), &u)
	require.NoError(t, err)
	id := res.InsertedID
	oid, ok := id.(ttldb.ObjectID)
	require.True(t, ok, "generated _id is %T", id)
	assert.Equal(t, structT0, oid.Timestamp())
	assert.True(t, u.ID.IsZero(), "the generated _id is not written back into the struct")

	var got user
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"_id": oid}).Decode(&got))
	want := u
	want.ID, want.Password = oid, "" // the password is tagged "-"
	assert.Equal(t, want, got)

	// An _id the struct holds is kept.
	u2 := sampleUser("bob", 41)
	u2.ID = ttldb.NewObjectIDFromTime(structT0)
	res, err = c.InsertOne(context.Background(), u2)
	require.NoError(t, err)
	assert.Equal(t, u2.ID, res.InsertedID)
}

// TestStructAndDocumentStoreAndMatchIdentically is the differential test
// at the collection userLevel: structs inserted in one collection and their
// Document forms in another store the same documents and match the same
// filters.
func TestStructAndDocumentStoreAndMatchIdentically(t *testing.T) {
	db := openStructDB(t)
	structs, docs := db.Collection("structs"), db.Collection("docs")
	for i, name := range []string{"ada", "bob", "cy", "dee", "eve"} {
		u := sampleUser(name, 20+i*10)
		u.ID = ttldb.NewObjectIDFromTime(structT0)
		_, err := structs.InsertOne(context.Background(), u)
		require.NoError(t, err)
		d := userDocument(name, 20+i*10)
		d["_id"] = u.ID
		_, err = docs.InsertOne(context.Background(), d)
		require.NoError(t, err)
	}
	all, err := findDocs(structs, nil)
	require.NoError(t, err)
	allDocs, err := findDocs(docs, nil)
	require.NoError(t, err)
	assert.Equal(t, allDocs, all)

	filters := []ttldb.Document{
		{"name": "ada"},
		{"age": ttldb.Document{"$gte": 40}},
		{"age": 30.0},
		{"tags": "all"},
		{"tags": []string{"tcy", "all"}},
		{"home.city": "cbob"},
		{"home": ttldb.Document{"city": "cdee", "zip": "z"}},
		{"work": ttldb.Document{"city": "weve"}},
		{"past.zip": "9"},
		{"past": ttldb.Document{"$size": 2}},
		{"counts.logins": ttldb.Document{"$lt": 35}},
		{"seen": ttldb.Document{"$gt": structT0.Add(45 * time.Minute)}},
		{"userLevel": "warn", "admin": true},
		{"note": ttldb.Document{"$exists": false}},
		{"password": ttldb.Document{"$exists": true}},
		{"score": ttldb.Document{"$in": []any{10, 25}}},
	}
	for _, f := range filters {
		a, err := findDocs(structs, f)
		require.NoError(t, err, "%v", f)
		b, err := findDocs(docs, f)
		require.NoError(t, err, "%v", f)
		assert.Equal(t, b, a, "%v", f)
	}
	n, err := structs.CountDocuments(context.Background(), ttldb.Document{"age": ttldb.Document{"$gte": 40}})
	require.NoError(t, err)
	assert.EqualValues(t, 3, n, "the filters select something")
}

// TestInsertManyForms checks InsertMany's accepted slices, its refusals,
// and that it stays atomic with structs.
func TestInsertManyForms(t *testing.T) {
	c := openStructDB(t).Collection("users")
	ids, err := c.InsertMany(context.Background(), []user{sampleUser("a", 1), sampleUser("b", 2)})
	require.NoError(t, err)
	assert.Len(t, ids.InsertedIDs, 2)
	ids, err = c.InsertMany(context.Background(), []*user{{Name: "c"}, {Name: "d"}})
	require.NoError(t, err)
	assert.Len(t, ids.InsertedIDs, 2)
	ids, err = c.InsertMany(context.Background(), []any{user{Name: "e"}, ttldb.Document{"name": "f"}, &user{Name: "g"}, map[string]string{"name": "h"}})
	require.NoError(t, err)
	assert.Len(t, ids.InsertedIDs, 4)
	ids, err = c.InsertMany(context.Background(), [...]user{{Name: "i"}})
	require.NoError(t, err)
	assert.Len(t, ids.InsertedIDs, 1)
	ids, err = c.InsertMany(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, ids.InsertedIDs)
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	assert.EqualValues(t, 9, n)

	// Refusals change nothing.
	_, err = c.InsertMany(context.Background(), user{Name: "not a slice"})
	assert.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	type bad struct {
		Name string `bson:"name"`
		C    chan int
	}
	_, err = c.InsertMany(context.Background(), []any{user{Name: "ok"}, bad{Name: "x"}})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	var de *ttldb.DocumentError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "c", de.Path)
	assert.Contains(t, err.Error(), "index 1")
	_, err = c.InsertMany(context.Background(), []any{user{Name: "ok"}, (*user)(nil)})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	dupID := ttldb.NewObjectIDFromTime(structT0)
	_, err = c.InsertMany(context.Background(), []user{{ID: dupID}, {ID: dupID}})
	require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
	n, err = c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	assert.EqualValues(t, 9, n)
}

// TestReplaceOneStruct checks a struct replacement keeps the stored _id
// when its own is left out, refuses another _id, and upserts.
func TestReplaceOneStruct(t *testing.T) {
	c := openStructDB(t).Collection("users")
	ins, err := c.InsertOne(context.Background(), sampleUser("ada", 36))
	require.NoError(t, err)
	id := ins.InsertedID
	res, err := c.ReplaceOne(context.Background(), ttldb.Document{"name": "ada"}, user{Name: "ada", Age: 37})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{MatchedCount: 1, ModifiedCount: 1}, res)
	var got user
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"_id": id}).Decode(&got))
	assert.Equal(t, user{ID: id.(ttldb.ObjectID), Name: "ada", Age: 37, Seen: time.Time{}.UTC()}, got)

	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"name": "ada"}, user{ID: ttldb.NewObjectIDFromTime(structT0), Name: "x"})
	assert.ErrorIs(t, err, ttldb.ErrImmutableID)

	res, err = c.ReplaceOne(context.Background(), ttldb.Document{"name": "zed"}, &user{Name: "zed"}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	require.NotNil(t, res.UpsertedID)
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"_id": res.UpsertedID}).Decode(&got))
	assert.Equal(t, "zed", got.Name)

	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"name": "zed"}, struct{ F func() }{})
	assert.ErrorIs(t, err, ttldb.ErrInvalidDocument)
}

// TestFindOneDecode checks SingleResult: ErrNotFound through Decode and
// Err, decoding into a map (reused), a projected result, and a mismatch
// (ErrDecode, naming the field, the destination unchanged).
func TestFindOneDecode(t *testing.T) {
	c := openStructDB(t).Collection("users")
	_, err := c.InsertOne(context.Background(), sampleUser("ada", 36))
	require.NoError(t, err)

	var u user
	r := c.FindOne(context.Background(), ttldb.Document{"name": "nobody"})
	assert.ErrorIs(t, r.Err(), ttldb.ErrNotFound)
	assert.ErrorIs(t, r.Decode(&u), ttldb.ErrNotFound)
	_, err = r.Document()
	assert.ErrorIs(t, err, ttldb.ErrNotFound)
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"name": "ada"}).Err())

	m := ttldb.Document{"stale": 1}
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"name": "ada"}).Decode(&m))
	assert.Equal(t, "ada", m["name"])
	assert.NotContains(t, m, "stale")

	var p struct {
		Name string `bson:"name"`
		Age  int8   `bson:"age"`
	}
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"age": 36}, ttldb.FindOptions{Projection: ttldb.Document{"name": 1, "age": 1}}).Decode(&p))
	assert.Equal(t, "ada", p.Name)
	assert.Equal(t, int8(36), p.Age)

	var wrong struct {
		Name int `bson:"name"`
		Home struct {
			City bool `bson:"city"`
		} `bson:"home"`
	}
	wrong.Name = 7
	err = c.FindOne(context.Background(), ttldb.Document{"name": "ada"}).Decode(&wrong)
	require.ErrorIs(t, err, ttldb.ErrDecode)
	var de *ttldb.DecodeError
	require.True(t, errors.As(err, &de))
	assert.Contains(t, []string{"name", "home.city"}, de.Path)
	assert.Equal(t, 7, wrong.Name, "unchanged on error")

	assert.ErrorIs(t, c.FindOne(context.Background(), ttldb.Document{"name": "ada"}).Decode(u), ttldb.ErrDecode, "not a pointer")
}

// TestStructInsertValidated checks a struct goes through the collection's
// validator and unique indexes like a Document.
func TestStructInsertValidated(t *testing.T) {
	db := openStructDB(t)
	c, err := db.CreateCollection(context.Background(), "v", ttldb.CollectionOptions{Validator: ttldb.Document{
		"$jsonSchema": ttldb.Document{"required": []any{"name"}, "properties": ttldb.Document{"age": ttldb.Document{"bsonType": "int", "minimum": 0}}},
	}})

	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), user{Name: "ok", Age: 1})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), user{Name: "neg", Age: -1})
	assert.ErrorIs(t, err, ttldb.ErrValidation)
	_, err = c.InsertOne(context.Background(), struct {
		Age int `bson:"age"`
	}{Age: 3})

	assert.ErrorIs(t, err, ttldb.ErrValidation)
	ids, err := findDocs(c, nil)
	require.NoError(t, err)
	assert.Len(t, ids, 1)
	assert.True(t, slices.ContainsFunc(ids, func(d ttldb.Document) bool { return d["name"] == "ok" }))
}

// Rule 4: $set, $unset, $inc and $currentDate with dotted paths.
func TestStoreUpdateOperators(t *testing.T) {
	db, clk := openStore(t)
	c := db.Collection("u")
	mustInsert(t, c, ttldb.Document{"_id": 1, "a": ttldb.Document{"b": 1, "gone": "x"}, "n": 1, "f": 1.5, "arr": []any{1, 2}})

	update := func(u ttldb.Document) ttldb.Document {
		t.Helper()
		res, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, u)
		require.NoError(t, err, "%v", u)
		assert.EqualValues(t, 1, res.MatchedCount)
		got, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
		require.NoError(t, err)
		return got
	}
	got := update(ttldb.Document{"$set": ttldb.Document{"a.c": 2, "x.y.z": "deep", "arr.1": 20}})
	assert.Equal(t, ttldb.Document{"b": 1, "gone": "x", "c": 2}, got["a"])
	assert.Equal(t, ttldb.Document{"y": ttldb.Document{"z": "deep"}}, got["x"])
	assert.Equal(t, []any{1, 20}, got["arr"])

	got = update(ttldb.Document{"$unset": ttldb.Document{"a.gone": "", "missing.path": 1}})
	assert.Equal(t, ttldb.Document{"b": 1, "c": 2}, got["a"])

	got = update(ttldb.Document{"$inc": ttldb.Document{"n": 2, "f": 1, "a.b": -1, "counter.hits": 1}})
	assert.Equal(t, 3, got["n"], "an int stays an int")
	assert.Equal(t, 2.5, got["f"])
	assert.Equal(t, 0, got["a"].(ttldb.Document)["b"])
	assert.Equal(t, ttldb.Document{"hits": 1}, got["counter"])

	clk.Advance(90 * time.Minute)
	got = update(ttldb.Document{"$currentDate": ttldb.Document{"meta.lastModifiedDate": true, "ts": ttldb.Document{"$type": "date"}}})
	assert.Equal(t, clk.Now(), got["meta"].(ttldb.Document)["lastModifiedDate"], "$currentDate reads the DB clock")
	assert.Equal(t, clk.Now(), got["ts"])
	clk.Advance(time.Hour)
	got = update(ttldb.Document{"$currentDate": ttldb.Document{"meta.lastModifiedDate": true}})
	assert.Equal(t, storeT0.Add(150*time.Minute), got["meta"].(ttldb.Document)["lastModifiedDate"])

	// An update that cannot apply is an error and changes nothing.
	before := all(t, c)
	for _, u := range []ttldb.Document{
		{"$inc": ttldb.Document{"a.c": "one"}},
		{"$inc": ttldb.Document{"x.y.z": 1}},
		{"$set": ttldb.Document{"n.sub": 1}},
		{"$bit": ttldb.Document{"n": ttldb.Document{"and": 1}}},
		{"$rename": ttldb.Document{"n": "_id"}},
		{"$push": ttldb.Document{"n": 1}},
		{"n": 5},
		{},
		{"$set": ttldb.Document{"a": 1}, "$unset": ttldb.Document{"a.b": 1}},
	} {
		_, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, u)
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate, "%v", u)
	}
	assert.Equal(t, before, all(t, c))
}

// Rule 4: MatchedCount counts matches, ModifiedCount actual changes.
func TestStoreUpdateCounts(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("u")
	mustInsert(t, c,
		ttldb.Document{"_id": 1, "g": 1, "v": 1},
		ttldb.Document{"_id": 2, "g": 1, "v": 0},
		ttldb.Document{"_id": 3, "g": 1},
		ttldb.Document{"_id": 4, "g": 2},
	)
	res, err := c.UpdateMany(context.Background(), ttldb.Document{"g": 1}, ttldb.Document{"$set": ttldb.Document{"v": 1}})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{MatchedCount: 3, ModifiedCount: 2}, res)
	res, err = c.UpdateMany(context.Background(), ttldb.Document{"g": 1}, ttldb.Document{"$set": ttldb.Document{"v": 1}})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{MatchedCount: 3, ModifiedCount: 0}, res)
	res, err = c.UpdateOne(context.Background(), ttldb.Document{"g": 1}, ttldb.Document{"$unset": ttldb.Document{"nothing": ""}})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{MatchedCount: 1, ModifiedCount: 0}, res)
	res, err = c.UpdateOne(context.Background(), ttldb.Document{"g": 1}, ttldb.Document{"$inc": ttldb.Document{"v": 1}})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{MatchedCount: 1, ModifiedCount: 1}, res)
	res, err = c.UpdateOne(context.Background(), ttldb.Document{"g": 9}, ttldb.Document{"$inc": ttldb.Document{"v": 1}})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{}, res)
	res, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 4}, ttldb.Document{"g": 2})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{MatchedCount: 1, ModifiedCount: 0}, res, "an identical replacement modifies nothing")
	assert.Equal(t, 4, count(t, c, nil))
}

// Rule 4: upserts insert the filter's equalities with the update applied;
// ReplaceOne upserts the replacement with the filter's _id.
func TestStoreUpsert(t *testing.T) {
	db, clk := openStore(t)
	c := db.Collection("up")
	filter := ttldb.Document{
		"name":  "ada",
		"k.sub": 5,
		"age":   ttldb.Document{"$gt": 3},
		"lang":  ttldb.Document{"$eq": "go"},
		"$and":  []any{ttldb.Document{"team": "core"}},
	}
	res, err := c.UpdateOne(context.Background(), filter, ttldb.Document{"$set": ttldb.Document{"v": 1}, "$currentDate": ttldb.Document{"seen": true}}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	assert.EqualValues(t, 0, res.MatchedCount)
	assert.EqualValues(t, 0, res.ModifiedCount)
	require.NotNil(t, res.UpsertedID)
	got, err := c.FindOne(context.Background(), ttldb.Document{"_id": res.UpsertedID}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{
		"_id": res.UpsertedID, "name": "ada", "k": ttldb.Document{"sub": 5}, "lang": "go", "team": "core",
		"v": 1, "seen": clk.Now(),
	}, got)

	// The range on age was not seeded.
	assert.Equal(t, 0, count(t, c, ttldb.Document{"age": ttldb.Document{"$exists": true}}))

	// Now a filter matches it: no second insert.
	res, err = c.UpdateOne(context.Background(), ttldb.Document{"name": "ada", "k.sub": 5.0}, ttldb.Document{"$set": ttldb.Document{"v": 1}}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{MatchedCount: 1, ModifiedCount: 0}, res, "matched once, unchanged")
	assert.Equal(t, 1, count(t, c, nil))

	// The filter's _id becomes the document's.
	res, err = c.UpdateMany(context.Background(), ttldb.Document{"_id": "u1"}, ttldb.Document{"$inc": ttldb.Document{"n": 1}}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	assert.Equal(t, "u1", res.UpsertedID)
	got, err = c.FindOne(context.Background(), ttldb.Document{"_id": "u1"}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"_id": "u1", "n": 1}, got)

	// ReplaceOne upsert.
	res, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": "r1"}, ttldb.Document{"x": 1}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	assert.Equal(t, "r1", res.UpsertedID)
	got, err = c.FindOne(context.Background(), ttldb.Document{"_id": "r1"}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"_id": "r1", "x": 1}, got)
	res, err = c.ReplaceOne(context.Background(), ttldb.Document{"x": 2}, ttldb.Document{"x": 2}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	_, isOID := res.UpsertedID.(ttldb.ObjectID)
	assert.True(t, isOID, "no _id in filter or replacement: one is generated")
	assert.Equal(t, 4, count(t, c, nil))

	// Without Upsert, nothing is inserted.
	res, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": "none"}, ttldb.Document{"$set": ttldb.Document{"v": 1}})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{}, res)
	res, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": "none"}, ttldb.Document{"v": 1})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{}, res)
	assert.Equal(t, 4, count(t, c, nil))
}

// Rule 4: UpdateMany is atomic: a unique conflict, or one document the
// update cannot apply to, leaves every document as it was.
func TestStoreUpdateManyAtomic(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("atomic")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("u")}, Unique: true})
	require.NoError(t, err)
	mustInsert(t, c,
		ttldb.Document{"_id": 1, "u": 1, "g": "x", "n": 1},
		ttldb.Document{"_id": 2, "u": 2, "g": "x", "n": 2},
		ttldb.Document{"_id": 3, "u": 3, "g": "y", "n": "str"},
	)
	before := all(t, c)
	for _, tc := range []struct {
		filter, update ttldb.Document
		want           error
	}{
		{ttldb.Document{"g": "x"}, ttldb.Document{"$set": ttldb.Document{"u": 3}}, ttldb.ErrDuplicateKey},   // with a stored doc
		{ttldb.Document{"g": "x"}, ttldb.Document{"$set": ttldb.Document{"u": 10}}, ttldb.ErrDuplicateKey},  // within the batch
		{ttldb.Document{"g": "x"}, ttldb.Document{"$unset": ttldb.Document{"u": 1}}, ttldb.ErrDuplicateKey}, // two nulls
		{nil, ttldb.Document{"$inc": ttldb.Document{"n": 1}}, ttldb.ErrInvalidUpdate},                       // third doc fails
	} {
		_, err := c.UpdateMany(context.Background(), tc.filter, tc.update)
		require.ErrorIs(t, err, tc.want, "%v %v", tc.filter, tc.update)
		assert.Equal(t, before, all(t, c), "nothing changed after %v", tc.update)
		for _, d := range before {
			n, err := c.CountDocuments(context.Background(), ttldb.Document{"u": d["u"]})
			require.NoError(t, err)
			assert.EqualValues(t, 1, n, "index entry for u=%v", d["u"])
		}
	}
	// Keys swapped within one batch are fine: the check is on the result.
	res, err := c.UpdateMany(context.Background(), ttldb.Document{"g": "x"}, ttldb.Document{"$inc": ttldb.Document{"u": 10}})
	require.NoError(t, err)
	assert.EqualValues(t, 2, res.ModifiedCount)
	assert.Equal(t, 1, count(t, c, ttldb.Document{"u": 11}))
	assert.Equal(t, 0, count(t, c, ttldb.Document{"u": 1}))
}
