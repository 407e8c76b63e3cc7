package ttldb_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

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
	id, err := c.InsertOne(&u)
	require.NoError(t, err)
	oid, ok := id.(ttldb.ObjectID)
	require.True(t, ok, "generated _id is %T", id)
	assert.Equal(t, structT0, oid.Timestamp())
	assert.True(t, u.ID.IsZero(), "the generated _id is not written back into the struct")

	var got user
	require.NoError(t, c.FindOne(ttldb.Document{"_id": oid}).Decode(&got))
	want := u
	want.ID, want.Password = oid, "" // the password is tagged "-"
	assert.Equal(t, want, got)

	// An _id the struct holds is kept.
	u2 := sampleUser("bob", 41)
	u2.ID = ttldb.NewObjectIDFromTime(structT0)
	id, err = c.InsertOne(u2)
	require.NoError(t, err)
	assert.Equal(t, u2.ID, id)
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
		_, err := structs.InsertOne(u)
		require.NoError(t, err)
		d := userDocument(name, 20+i*10)
		d["_id"] = u.ID
		_, err = docs.InsertOne(d)
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
	assert.Equal(t, 3, n, "the filters select something")
}

// TestInsertManyForms checks InsertMany's accepted slices, its refusals,
// and that it stays atomic with structs.
func TestInsertManyForms(t *testing.T) {
	c := openStructDB(t).Collection("users")
	ids, err := c.InsertMany([]user{sampleUser("a", 1), sampleUser("b", 2)})
	require.NoError(t, err)
	assert.Len(t, ids, 2)
	ids, err = c.InsertMany([]*user{{Name: "c"}, {Name: "d"}})
	require.NoError(t, err)
	assert.Len(t, ids, 2)
	ids, err = c.InsertMany([]any{user{Name: "e"}, ttldb.Document{"name": "f"}, &user{Name: "g"}, map[string]string{"name": "h"}})
	require.NoError(t, err)
	assert.Len(t, ids, 4)
	ids, err = c.InsertMany([...]user{{Name: "i"}})
	require.NoError(t, err)
	assert.Len(t, ids, 1)
	ids, err = c.InsertMany(nil)
	require.NoError(t, err)
	assert.Empty(t, ids)
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, 9, n)

	// Refusals change nothing.
	_, err = c.InsertMany(user{Name: "not a slice"})
	assert.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	type bad struct {
		Name string `bson:"name"`
		C    chan int
	}
	_, err = c.InsertMany([]any{user{Name: "ok"}, bad{Name: "x"}})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	var de *ttldb.DocumentError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "c", de.Path)
	assert.Contains(t, err.Error(), "document 1")
	_, err = c.InsertMany([]any{user{Name: "ok"}, (*user)(nil)})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	dupID := ttldb.NewObjectIDFromTime(structT0)
	_, err = c.InsertMany([]user{{ID: dupID}, {ID: dupID}})
	require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
	n, err = c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, 9, n)
}

// TestReplaceOneStruct checks a struct replacement keeps the stored _id
// when its own is left out, refuses another _id, and upserts.
func TestReplaceOneStruct(t *testing.T) {
	c := openStructDB(t).Collection("users")
	id, err := c.InsertOne(sampleUser("ada", 36))
	require.NoError(t, err)
	res, err := c.ReplaceOne(ttldb.Document{"name": "ada"}, user{Name: "ada", Age: 37})
	require.NoError(t, err)
	assert.Equal(t, ttldb.UpdateResult{MatchedCount: 1, ModifiedCount: 1}, res)
	var got user
	require.NoError(t, c.FindOne(ttldb.Document{"_id": id}).Decode(&got))
	assert.Equal(t, user{ID: id.(ttldb.ObjectID), Name: "ada", Age: 37, Seen: time.Time{}.UTC()}, got)

	_, err = c.ReplaceOne(ttldb.Document{"name": "ada"}, user{ID: ttldb.NewObjectIDFromTime(structT0), Name: "x"})
	assert.ErrorIs(t, err, ttldb.ErrImmutableID)

	res, err = c.ReplaceOne(ttldb.Document{"name": "zed"}, &user{Name: "zed"}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	require.NotNil(t, res.UpsertedID)
	require.NoError(t, c.FindOne(ttldb.Document{"_id": res.UpsertedID}).Decode(&got))
	assert.Equal(t, "zed", got.Name)

	_, err = c.ReplaceOne(ttldb.Document{"name": "zed"}, struct{ F func() }{})
	assert.ErrorIs(t, err, ttldb.ErrInvalidDocument)
}

// TestFindOneDecode checks SingleResult: ErrNotFound through Decode and
// Err, decoding into a map (reused), a projected result, and a mismatch
// (ErrDecode, naming the field, the destination unchanged).
func TestFindOneDecode(t *testing.T) {
	c := openStructDB(t).Collection("users")
	_, err := c.InsertOne(sampleUser("ada", 36))
	require.NoError(t, err)

	var u user
	r := c.FindOne(ttldb.Document{"name": "nobody"})
	assert.ErrorIs(t, r.Err(), ttldb.ErrNotFound)
	assert.ErrorIs(t, r.Decode(&u), ttldb.ErrNotFound)
	_, err = r.Document()
	assert.ErrorIs(t, err, ttldb.ErrNotFound)
	require.NoError(t, c.FindOne(ttldb.Document{"name": "ada"}).Err())

	m := ttldb.Document{"stale": 1}
	require.NoError(t, c.FindOne(ttldb.Document{"name": "ada"}).Decode(&m))
	assert.Equal(t, "ada", m["name"])
	assert.NotContains(t, m, "stale")

	var p struct {
		Name string `bson:"name"`
		Age  int8   `bson:"age"`
	}
	require.NoError(t, c.FindOne(ttldb.Document{"age": 36}, ttldb.FindOptions{Projection: ttldb.Document{"name": 1, "age": 1}}).Decode(&p))
	assert.Equal(t, "ada", p.Name)
	assert.Equal(t, int8(36), p.Age)

	var wrong struct {
		Name int `bson:"name"`
		Home struct {
			City bool `bson:"city"`
		} `bson:"home"`
	}
	wrong.Name = 7
	err = c.FindOne(ttldb.Document{"name": "ada"}).Decode(&wrong)
	require.ErrorIs(t, err, ttldb.ErrDecode)
	var de *ttldb.DecodeError
	require.True(t, errors.As(err, &de))
	assert.Contains(t, []string{"name", "home.city"}, de.Path)
	assert.Equal(t, 7, wrong.Name, "unchanged on error")

	assert.ErrorIs(t, c.FindOne(ttldb.Document{"name": "ada"}).Decode(u), ttldb.ErrDecode, "not a pointer")
}

// TestStructInsertValidated checks a struct goes through the collection's
// validator and unique indexes like a Document.
func TestStructInsertValidated(t *testing.T) {
	db := openStructDB(t)
	c, err := db.CreateCollection("v", ttldb.CollectionOptions{Validator: ttldb.Document{
		"$jsonSchema": ttldb.Document{"required": []any{"name"}, "properties": ttldb.Document{"age": ttldb.Document{"bsonType": "int", "minimum": 0}}},
	}})
	require.NoError(t, err)
	_, err = c.InsertOne(user{Name: "ok", Age: 1})
	require.NoError(t, err)
	_, err = c.InsertOne(user{Name: "neg", Age: -1})
	assert.ErrorIs(t, err, ttldb.ErrValidation)
	_, err = c.InsertOne(struct {
		Age int `bson:"age"`
	}{Age: 3})
	assert.ErrorIs(t, err, ttldb.ErrValidation)
	ids, err := findDocs(c, nil)
	require.NoError(t, err)
	assert.Len(t, ids, 1)
	assert.True(t, slices.ContainsFunc(ids, func(d ttldb.Document) bool { return d["name"] == "ok" }))
}
