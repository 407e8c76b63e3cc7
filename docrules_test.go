package ttldb_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

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
		_, err := c.FindOne(ttldb.Document{"_id": id}).Document()
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, name)
		assert.Contains(t, err.Error(), `"_id`, name)

		_, _, err = c.ExpiresAt(id)
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument, name)
		var de *ttldb.DocumentError
		require.ErrorAs(t, err, &de, name)
		assert.True(t, strings.HasPrefix(de.Path, "_id"), "%s: path %q", name, de.Path)

		_, err = c.DeleteOne(ttldb.Document{"_id": id})
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, name)
		_, err = c.UpdateOne(ttldb.Document{"_id": id}, ttldb.Document{"$set": ttldb.Document{"x": 1}}, ttldb.UpdateOptions{Upsert: true})
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, name)
		_, err = findDocs(c, ttldb.Document{"_id": ttldb.Document{"$in": []any{id}}})
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, name)
		_, err = c.InsertOne(ttldb.Document{"_id": id})
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument, name)
		_, err = c.UpdateOne(ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"x": id}})
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
		_, err := c.InsertOne(ttldb.Document{"_id": n, "a": v})
		check("InsertOne", err, ttldb.ErrInvalidDocument)
		_, err = findDocs(c, ttldb.Document{"a": v})
		check("Find", err, ttldb.ErrInvalidFilter)
		_, err = c.UpdateOne(ttldb.Document{"_id": 0}, ttldb.Document{"$set": ttldb.Document{"a": v}})
		check("UpdateOne", err, ttldb.ErrInvalidUpdate)
		_, err = c.ReplaceOne(ttldb.Document{"_id": 0}, ttldb.Document{"a": v})
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
		_, err := c.InsertOne(doc)
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
		_, err = c.FindOne(f).Document()
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, "%q", f)
		_, err = c.DeleteMany(context.Background(), f)
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter, "%q", f)
	}
	for _, u := range []ttldb.Document{
		{"$set": ttldb.Document{"s": bad}}, {"$set": ttldb.Document{"s" + bad: 1}}, {"$inc": ttldb.Document{"n" + bad: 1}},
	} {
		_, err := c.UpdateOne(ttldb.Document{"_id": 1}, u)
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate, "%q", u)
	}
	_, err = c.ReplaceOne(ttldb.Document{"_id": 1}, ttldb.Document{"s": bad})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	_, _, err = c.ExpiresAt(bad)
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	_, err = db.CreateCollection("x"+bad, ttldb.CollectionOptions{})
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
		got, err := c.FindOne(ttldb.Document{"_id": "a"}).Document()
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
		_, err = c.UpdateOne(ttldb.Document{"lvl": level("warn")}, ttldb.Document{
			"$inc": ttldb.Document{"dur": time.Second, "n": json.Number("1")},
			"$set": ttldb.Document{"lvl": level("error")},
		})
		require.NoError(t, err)
		got, err = c.FindOne(ttldb.Document{"_id": "a"}).Document()
		require.NoError(t, err)
		assert.Equal(t, int64(91e9), got["dur"])
		assert.Equal(t, int64(6), got["n"])
		assert.Equal(t, "error", got["lvl"])
		// Not a number: refused everywhere, naming the path.
		_, err = c.InsertOne(ttldb.Document{"n": json.Number("five")})
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
		var de *ttldb.DocumentError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "n", de.Path)
		_, err = findDocs(c, ttldb.Document{"n": json.Number("NaN")})
		require.ErrorIs(t, err, ttldb.ErrInvalidFilter)
		_, err = c.UpdateOne(ttldb.Document{}, ttldb.Document{"$set": ttldb.Document{"n": json.Number("1e999")}})
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate)
		_, err = c.UpdateOne(ttldb.Document{}, ttldb.Document{"$inc": ttldb.Document{"n": json.Number("x")}})
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate)
		assert.Equal(t, 1, count(t, c, nil))
	}
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
	ex, err := indexed.Explain(ttldb.Document{"d": tp})
	require.NoError(t, err)
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, 1, ex.NReturned)
	for _, c := range []*ttldb.Collection{indexed, plain} {
		got, err := c.FindOne(ttldb.Document{"_id": tp}).Document()
		require.NoError(t, err, c.Name())
		assert.Equal(t, t0, got["_id"])
		_, expires, err := c.ExpiresAt(tp)
		require.NoError(t, err, c.Name())
		assert.Equal(t, c == indexed, expires)
		res, err := c.UpdateOne(ttldb.Document{"_id": tp}, ttldb.Document{"$set": ttldb.Document{"x": 1}})
		require.NoError(t, err)
		assert.Equal(t, 1, res.MatchedCount, c.Name())
		n, err := c.DeleteOne(ttldb.Document{"_id": tp})
		require.NoError(t, err)
		assert.Equal(t, 1, n, c.Name())
		n, err = c.DeleteMany(context.Background(), ttldb.Document{"d": nilTime})
		require.NoError(t, err)
		assert.Equal(t, 2, n, c.Name())
	}
	// An upsert from a filter with a pointer stores the time it points to.
	res, err := indexed.UpdateOne(ttldb.Document{"_id": 9, "d": tp}, ttldb.Document{"$set": ttldb.Document{"y": 1}}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	assert.Equal(t, 9, res.UpsertedID)
	got, err := indexed.FindOne(ttldb.Document{"_id": 9}).Document()
	require.NoError(t, err)
	assert.Equal(t, t0, got["d"])
}
