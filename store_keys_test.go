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
					ex, err := indexed.Explain(f, opts)
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
	ex, err := c.Explain(ttldb.Document{"tags": ttldb.Document{"$gte": 0}})
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
	_, err = c.InsertOne(ttldb.Document{"_id": "over", "tags": over})
	checkRefused(err, "tags")
	_, err = c.UpdateOne(ttldb.Document{"_id": "big"}, ttldb.Document{"$set": ttldb.Document{"tags": over}})
	checkRefused(err, "tags")
	list := make([]ttldb.Document, n+1)
	for i := range list {
		list[i] = ttldb.Document{"v": i}
	}
	_, err = c.InsertOne(ttldb.Document{"_id": "list", "list": list, "k": 2})
	checkRefused(err, "list.v")
	assert.Equal(t, docsBefore, all(t, c), "a refused write changes nothing")
	assert.Equal(t, 0, count(t, c, ttldb.Document{"tags": "one more"}))

	// An index built over a stored document with too many keys fails and
	// is not created.
	d := db.Collection("build")
	mustInsert(t, d, ttldb.Document{"_id": 1, "xs": over})
	_, err = d.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("xs")}})
	checkRefused(err, "xs")
	specs, err := d.Indexes()
	require.NoError(t, err)
	assert.Len(t, specs, 1, "only _id_")
}
