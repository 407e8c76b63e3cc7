package engine

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// TestPlannerOperatorsBoundNothing checks that the array, evaluation and
// type operators give no index bounds of their own: a *regexp.Regexp given
// as a value is a pattern, not a value to look up, and $in with a pattern
// cannot be answered from point lookups.
func TestPlannerOperatorsBoundNothing(t *testing.T) {
	db, err := Open(WithClock(ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))), WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	c := db.Collection("c")
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("a")}})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"_id": 1, "a": "apple"}, {"_id": 2, "a": "banana"}, {"_id": 3, "a": []any{"cherry", "avocado"}}})
	require.NoError(t, err)
	for _, f := range []Document{
		{"a": regexp.MustCompile("^a")},
		{"a": Document{"$in": []any{regexp.MustCompile("^a"), "zzz"}}},
		{"_id": regexp.MustCompile("1")},
		{"a": Document{"$regex": "^a"}},
		{"a": Document{"$all": []any{"cherry"}}},
		{"a": Document{"$elemMatch": Document{"$eq": "cherry"}}},
		{"a": Document{"$size": 2}},
		{"a": Document{"$type": "string"}},
	} {
		ex, err := c.Explain(context.Background(), f)
		require.NoError(t, err, "%v", f)
		if ex.Stage == "IXSCAN" {
			require.Equal(t, []string{"[MinKey, MaxKey]"}, ex.IndexBounds, "%v", f)
		}
	}
	docs, err := findDocs(c, Document{"a": regexp.MustCompile("^a")})
	require.NoError(t, err)
	require.Len(t, docs, 2) // apple, and the array holding avocado
	docs, err = findDocs(c, Document{"a": Document{"$in": []any{regexp.MustCompile("^b"), "cherry"}}})
	require.NoError(t, err)
	require.Len(t, docs, 2)
}

func openOperatorsDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(WithClock(ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))), WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestUpsertSetOnInsert checks that $setOnInsert writes only when an upsert
// inserts, through UpdateOne and UpdateMany.
func TestUpsertSetOnInsert(t *testing.T) {
	c := openOperatorsDB(t).Collection("c")
	u := Document{"$set": Document{"seen": true}, "$inc": Document{"n": 1}, "$setOnInsert": Document{"created": "first"}}

	res, err := c.UpdateOne(context.Background(), Document{"_id": "k"}, u, UpdateOptions{Upsert: true})
	require.NoError(t, err)
	require.Equal(t, "k", res.UpsertedID)
	doc, err := c.FindOne(context.Background(), Document{"_id": "k"}).Document()
	require.NoError(t, err)
	require.Equal(t, Document{"_id": "k", "seen": true, "n": 1, "created": "first"}, doc)

	u["$setOnInsert"] = Document{"created": "second"}
	res, err = c.UpdateOne(context.Background(), Document{"_id": "k"}, u, UpdateOptions{Upsert: true})
	require.NoError(t, err)
	require.Nil(t, res.UpsertedID)
	require.EqualValues(t, 1, res.ModifiedCount)
	doc, err = c.FindOne(context.Background(), Document{"_id": "k"}).Document()
	require.NoError(t, err)
	require.Equal(t, Document{"_id": "k", "seen": true, "n": 2, "created": "first"}, doc, "a match ignores $setOnInsert")

	res, err = c.UpdateMany(context.Background(), Document{"kind": "x"}, Document{"$setOnInsert": Document{"created": "many"}}, UpdateOptions{Upsert: true})
	require.NoError(t, err)
	require.NotNil(t, res.UpsertedID)
	doc, err = c.FindOne(context.Background(), Document{"kind": "x"}).Document()
	require.NoError(t, err)
	require.Equal(t, "many", doc["created"])
	require.Equal(t, "x", doc["kind"])

	// Only $setOnInsert, matching: nothing to modify.
	res, err = c.UpdateOne(context.Background(), Document{"_id": "k"}, Document{"$setOnInsert": Document{"created": "third"}})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.MatchedCount)
	require.EqualValues(t, 0, res.ModifiedCount)
}

// TestUpdateManyOperatorErrorChangesNothing checks that one document an
// operator cannot update (a $push to a non-array) leaves every document as
// it was, and that the error wraps ErrInvalidUpdate.
func TestUpdateManyOperatorErrorChangesNothing(t *testing.T) {
	c := openOperatorsDB(t).Collection("c")
	_, err := c.InsertMany(context.Background(), []Document{
		{"_id": 1, "tags": []any{"a"}},
		{"_id": 2, "tags": "not an array"},
		{"_id": 3, "tags": []any{"b"}},
	})

	require.NoError(t, err)
	before, err := findDocs(c, nil)
	require.NoError(t, err)
	_, err = c.UpdateMany(context.Background(), nil, Document{"$push": Document{"tags": "new"}, "$set": Document{"touched": true}})
	require.ErrorIs(t, err, ErrInvalidUpdate)
	require.Contains(t, err.Error(), "$push")
	after, err := findDocs(c, nil)
	require.NoError(t, err)
	require.Equal(t, before, after)

	// A conflicting update is refused before anything is read.
	_, err = c.UpdateMany(context.Background(), nil, Document{"$rename": Document{"tags": "labels"}, "$set": Document{"labels": 1}})
	require.ErrorIs(t, err, ErrInvalidUpdate)
	require.Contains(t, err.Error(), "conflict")
}

// TestUpdateOperatorsKeepIndexes checks that documents changed by the new
// operators are re-indexed: a $push to an indexed array field and a $rename
// of an indexed field are found through the index.
func TestUpdateOperatorsKeepIndexes(t *testing.T) {
	c := openOperatorsDB(t).Collection("c")
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("tags")}})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("b")}})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"_id": 1, "tags": []any{"a"}, "a": 5}, {"_id": 2, "tags": []any{"b"}}})
	require.NoError(t, err)
	_, err = c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$push": Document{"tags": "z"}, "$rename": Document{"a": "b"}})
	require.NoError(t, err)
	_, err = c.UpdateOne(context.Background(), Document{"_id": 2}, Document{"$pull": Document{"tags": "b"}})
	require.NoError(t, err)
	for f, want := range map[string]Document{
		"tags z": {"tags": "z"}, "b 5": {"b": 5},
	} {
		ex, err := c.Explain(context.Background(), want)
		require.NoError(t, err, f)
		require.Equal(t, "IXSCAN", ex.Stage, f)
		require.Equal(t, 1, ex.NReturned, f)
	}
	n, err := c.CountDocuments(context.Background(), Document{"tags": "b"})
	require.NoError(t, err)
	require.Zero(t, n)
}
