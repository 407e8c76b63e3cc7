package ttldb_test

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/internal/testutil"
)

// DB level: collections are created by the first write, reads of a missing
// collection see nothing, names are listed sorted, drops and re-creation.
func TestStoreCollections(t *testing.T) {
	db, _ := openStore(t)
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	assert.Empty(t, names)

	ghost := db.Collection("ghost")
	assert.Equal(t, "ghost", ghost.Name())
	docs, err := findDocs(ghost, nil)
	require.NoError(t, err)
	assert.Empty(t, docs)
	_, err = ghost.FindOne(context.Background(), nil).Document()
	require.ErrorIs(t, err, ttldb.ErrNotFound)
	assert.Equal(t, 0, count(t, ghost, nil))
	n, err := ghost.DeleteMany(context.Background(), nil)
	require.NoError(t, err)
	assert.Zero(t, n.DeletedCount)
	res, err := ghost.UpdateMany(context.Background(), ttldb.Document{"a": 1}, ttldb.Document{"$set": ttldb.Document{"b": 1}})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{}, res)
	require.NoError(t, ghost.Compact(context.Background()))
	names, err = db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	assert.Empty(t, names, "reads (and writes that write nothing) do not create collections")

	_, err = db.Collection("zeta").InsertOne(context.Background(), ttldb.Document{"_id": 1})
	require.NoError(t, err)
	_, err = db.Collection("alpha").CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("x")}})
	require.NoError(t, err)
	_, err = db.CreateCollection(context.Background(), "mid", ttldb.CollectionOptions{})
	require.NoError(t, err)
	names, err = db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"alpha", "mid", "zeta"}, names)

	_, err = db.CreateCollection(context.Background(), "zeta", ttldb.CollectionOptions{})
	require.ErrorIs(t, err, ttldb.ErrCollectionExists)
	assert.Contains(t, err.Error(), `"zeta"`)

	zeta := db.Collection("zeta")
	require.NoError(t, db.DropCollection(context.Background(), "zeta"))
	err = db.DropCollection(context.Background(), "zeta")
	require.ErrorIs(t, err, ttldb.ErrNotFound)
	assert.Contains(t, err.Error(), `"zeta"`)
	assert.Equal(t, 0, count(t, zeta, nil), "the old handle sees the drop")
	names, err = db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"alpha", "mid"}, names)
	// A later write through the old handle creates it anew, empty and
	// without the old indexes.
	_, err = zeta.InsertOne(context.Background(), ttldb.Document{"_id": 1})
	require.NoError(t, err, "the old _id is free again")
	assert.Equal(t, 1, count(t, zeta, nil))
	require.NoError(t, db.DropCollection(context.Background(), "alpha"))
	specs, err := db.Collection("alpha").Indexes(context.Background())
	require.NoError(t, err)
	assert.Empty(t, specs)
	_, err = db.Collection("alpha").InsertOne(context.Background(), ttldb.Document{"x": 1})
	require.NoError(t, err)
	specs, err = db.Collection("alpha").Indexes(context.Background())
	require.NoError(t, err)
	assert.Len(t, specs, 1, "only _id_ after re-creation")
	// CreateCollection after a drop works too.
	require.NoError(t, db.DropCollection(context.Background(), "mid"))
	_, err = db.CreateCollection(context.Background(), "mid", ttldb.CollectionOptions{Capped: true, MaxDocuments: 1})
	require.NoError(t, err)

	// Invalid names.
	for _, name := range []string{"", "a$b", "nul\x00", "system.users"} {
		c := db.Collection(name)
		_, err := c.InsertOne(context.Background(), ttldb.Document{"x": 1})
		require.ErrorIs(t, err, ttldb.ErrInvalidOptions, "%q", name)
		_, err = findDocs(c, nil)
		require.ErrorIs(t, err, ttldb.ErrInvalidOptions, "%q", name)
		_, err = db.CreateCollection(context.Background(), name, ttldb.CollectionOptions{})
		require.ErrorIs(t, err, ttldb.ErrInvalidOptions, "%q", name)
	}
	names, err = db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"alpha", "mid", "zeta"}, names)
}

// Rule 6: capped collections keep insertion order and drop the oldest.
func TestStoreCapped(t *testing.T) {
	db, _ := openStore(t)
	c, err := db.CreateCollection(context.Background(), "capped", ttldb.CollectionOptions{Capped: true, MaxDocuments: 3})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("k")}})
	require.NoError(t, err)
	for _, id := range []int{50, 10, 40, 20, 30} {
		_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": id, "k": "same"})
		require.NoError(t, err)
	}
	docs, err := findDocs(c, nil)
	require.NoError(t, err)
	assert.Equal(t, []any{40, 20, 30}, ids(docs), "natural order is insertion order; the two oldest are gone")
	docs, err = findDocs(c, ttldb.Document{"k": "same"})
	require.NoError(t, err)
	assert.Equal(t, []int{20, 30, 40}, intIDs(t, docs), "evicted documents left the index")
	_, err = c.InsertMany(context.Background(), []ttldb.Document{{"_id": 1}, {"_id": 2}, {"_id": 3}, {"_id": 4}})
	require.NoError(t, err)
	docs, err = findDocs(c, nil)
	require.NoError(t, err)
	assert.Equal(t, []any{2, 3, 4}, ids(docs))
	assert.Equal(t, 0, count(t, c, ttldb.Document{"k": "same"}))
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 1})
	require.NoError(t, err, "an evicted _id is free")

	bc, err := db.CreateCollection(context.Background(), "bytes", ttldb.CollectionOptions{Capped: true, MaxBytes: 4096})
	require.NoError(t, err)
	payload := strings.Repeat("x", 1000)
	for i := range 20 {
		_, err := bc.InsertOne(context.Background(), ttldb.Document{"_id": i, "p": payload})
		require.NoError(t, err)
	}
	docs, err = findDocs(bc, nil)
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	assert.Less(t, len(docs), 5, "about 4 KiB of 1 KB documents")
	assert.Equal(t, 19, docs[len(docs)-1]["_id"], "the newest is kept")
	for i, d := range docs {
		assert.Equal(t, 20-len(docs)+i, d["_id"], "a suffix of the insertion order")
	}

	both, err := db.CreateCollection(context.Background(), "both", ttldb.CollectionOptions{Capped: true, MaxDocuments: 10, MaxBytes: 2500})
	require.NoError(t, err)
	for i := range 5 {
		_, err := both.InsertOne(context.Background(), ttldb.Document{"_id": i, "p": payload})
		require.NoError(t, err)
	}
	assert.Less(t, count(t, both, nil), 3, "the byte cap bites first")

	for _, opts := range []ttldb.CollectionOptions{
		{Capped: true},
		{Capped: true, MaxDocuments: -1},
		{Capped: true, MaxBytes: -5},
		{MaxDocuments: 3},
		{MaxBytes: 100},
	} {
		_, err := db.CreateCollection(context.Background(), "bad", opts)
		require.ErrorIs(t, err, ttldb.ErrInvalidOptions, "%+v", opts)
	}
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("t")}, ExpireAfterSeconds: ttldb.Seconds(10)})
	require.ErrorIs(t, err, ttldb.ErrInvalidTTL, "no TTL index on a capped collection")
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	assert.NotContains(t, names, "bad")
}

// eventlogValidator is reference 002's "TTL and schema validation" example.
func eventlogValidator() ttldb.Document {
	return ttldb.Document{"$jsonSchema": ttldb.Document{
		"bsonType": "object",
		"required": []any{"lastModifiedDate"},
		"properties": ttldb.Document{
			"lastModifiedDate": ttldb.Document{
				"bsonType":    "date",
				"description": "Must be a valid date.",
			},
		},
	}}
}

// Rule 7: a failing insert, update or replacement is ErrValidation naming
// the field and the rule, and writes nothing.
func TestStoreValidation(t *testing.T) {
	db, clk := openStore(t)
	v := eventlogValidator()
	c, err := db.CreateCollection(context.Background(), "eventlog", ttldb.CollectionOptions{Validator: v})
	require.NoError(t, err)
	v["$jsonSchema"].(ttldb.Document)["required"] = []any{"other"} // the collection keeps its own copy
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 1, "lastModifiedDate": clk.Now(), "msg": "ok"})
	require.NoError(t, err)
	before := all(t, c)

	check := func(err error, field, rule string) {
		t.Helper()
		require.ErrorIs(t, err, ttldb.ErrValidation)
		var ve *ttldb.ValidationError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, field, ve.Field)
		assert.Equal(t, rule, ve.Rule)
		assert.Contains(t, err.Error(), `"eventlog"`)
		assert.Equal(t, before, all(t, c), "nothing written")
	}
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 2, "msg": "no date"})
	check(err, "lastModifiedDate", "required")
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 2, "lastModifiedDate": "2026-01-01"})
	check(err, "lastModifiedDate", "bsonType")
	_, err = c.InsertMany(context.Background(), []ttldb.Document{{"_id": 2, "lastModifiedDate": clk.Now()}, {"_id": 3, "lastModifiedDate": 1}})
	check(err, "lastModifiedDate", "bsonType")
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$unset": ttldb.Document{"lastModifiedDate": ""}})
	check(err, "lastModifiedDate", "required")
	_, err = c.UpdateMany(context.Background(), nil, ttldb.Document{"$set": ttldb.Document{"lastModifiedDate": nil}})
	check(err, "lastModifiedDate", "bsonType")
	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"msg": "replaced"})
	check(err, "lastModifiedDate", "required")
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 9}, ttldb.Document{"$set": ttldb.Document{"msg": 1}}, ttldb.UpdateOptions{Upsert: true})
	check(err, "lastModifiedDate", "required")
	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 9}, ttldb.Document{"msg": 1}, ttldb.UpdateOptions{Upsert: true})
	check(err, "lastModifiedDate", "required")

	// Valid writes pass: $currentDate is how the date is refreshed, and an
	// upsert can seed it.
	clk.Advance(time.Minute)
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$currentDate": ttldb.Document{"lastModifiedDate": true}})
	require.NoError(t, err)
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 9}, ttldb.Document{"$currentDate": ttldb.Document{"lastModifiedDate": true}}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 9}, ttldb.Document{"lastModifiedDate": clk.Now(), "x": 1})
	require.NoError(t, err)
	assert.Equal(t, 2, count(t, c, ttldb.Document{"lastModifiedDate": clk.Now()}))

	// Nested properties name the full path.
	nested, err := db.CreateCollection(context.Background(), "nested", ttldb.CollectionOptions{Validator: ttldb.Document{"$jsonSchema": ttldb.Document{
		"properties": ttldb.Document{"user": ttldb.Document{
			"bsonType": "object", "required": []any{"name"},
			"properties": ttldb.Document{"name": ttldb.Document{"bsonType": "string"}, "age": ttldb.Document{"bsonType": []any{"int", "long"}}},
		}},
	}}})

	require.NoError(t, err)
	_, err = nested.InsertOne(context.Background(), ttldb.Document{"user": ttldb.Document{"name": "ada", "age": 36}})
	require.NoError(t, err)
	_, err = nested.InsertOne(context.Background(), ttldb.Document{"user": ttldb.Document{"name": "ada", "age": 36.5}})
	var ve *ttldb.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "user.age", ve.Field)
	assert.Equal(t, "bsonType", ve.Rule)
	_, err = nested.UpdateOne(context.Background(), nil, ttldb.Document{"$set": ttldb.Document{"user.name": 5}})
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "user.name", ve.Field)
	assert.Equal(t, 1, count(t, nested, ttldb.Document{"user.name": "ada"}))

	// A malformed validator is refused.
	_, err = db.CreateCollection(context.Background(), "badschema", ttldb.CollectionOptions{Validator: ttldb.Document{"$jsonSchema": ttldb.Document{"bsonType": "galaxy"}}})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
}

// Rule 10: every sentinel is reachable and says where it came from.
func TestStoreErrorsNameTheirSource(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("errs")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("u")}, Unique: true, Sparse: true})
	require.NoError(t, err)
	mustInsert(t, c, ttldb.Document{"_id": 1, "u": 1, "s": "str"})
	v, err := db.CreateCollection(context.Background(), "valid", ttldb.CollectionOptions{Validator: eventlogValidator()})
	require.NoError(t, err)
	tests := []struct {
		name     string
		call     func() error
		sentinel error
		mentions []string
	}{
		{"FindOne none", func() error {
			_, err := c.FindOne(context.Background(), ttldb.Document{"_id": 2}).Document()
			return err
		}, ttldb.ErrNotFound, []string{`"errs"`}},
		{"DropIndex missing", func() error { return c.DropIndex(context.Background(), "zz_1") }, ttldb.ErrNotFound, []string{`"errs"`, `"zz_1"`}},
		{"DropCollection missing", func() error { return db.DropCollection(context.Background(), "nope") }, ttldb.ErrNotFound, []string{`"nope"`}},
		{"CreateCollection taken", func() error {
			_, err := db.CreateCollection(context.Background(), "errs", ttldb.CollectionOptions{})
			return err
		}, ttldb.ErrCollectionExists, []string{`"errs"`}},
		{"duplicate _id", func() error { _, err := c.InsertOne(context.Background(), ttldb.Document{"_id": 1}); return err }, ttldb.ErrDuplicateKey, []string{`"errs"`, `"_id_"`}},
		{"duplicate unique key", func() error { _, err := c.InsertOne(context.Background(), ttldb.Document{"u": 1}); return err }, ttldb.ErrDuplicateKey, []string{`"errs"`, `"u_1"`}},
		{"index conflict", func() error {
			_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("u")}})
			return err
		}, ttldb.ErrIndexOptionsConflict, []string{`"errs"`, `"u_1"`}},
		{"invalid index", func() error {
			_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{{Field: "w", Order: 3}}})
			return err
		}, ttldb.ErrInvalidIndex, []string{`"errs"`, `"w"`}},
		{"invalid TTL", func() error {
			_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("t")}, ExpireAfterSeconds: ttldb.Seconds(-1)})
			return err
		}, ttldb.ErrInvalidTTL, []string{`"errs"`, `"t_1"`}},
		{"validation", func() error { _, err := v.InsertOne(context.Background(), ttldb.Document{"x": 1}); return err }, ttldb.ErrValidation, []string{`"valid"`, `"lastModifiedDate"`, "required"}},
		{"invalid document", func() error {
			_, err := c.InsertOne(context.Background(), ttldb.Document{"a": ttldb.Document{"b": make(chan int)}})
			return err
		}, ttldb.ErrInvalidDocument, []string{`"errs"`, `"a.b"`}},
		{"invalid filter", func() error { _, err := findDocs(c, ttldb.Document{"a": ttldb.Document{"$where": "x"}}); return err }, ttldb.ErrInvalidFilter, []string{`"errs"`, "$where"}},
		{"invalid update", func() error {
			_, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"s": 1}})
			return err
		}, ttldb.ErrInvalidUpdate, []string{`"errs"`, `"s"`}},
		{"immutable _id", func() error {
			_, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"_id": 5}})
			return err
		}, ttldb.ErrImmutableID, []string{`"errs"`, "_id"}},
		{"invalid find options", func() error { _, err := findDocs(c, nil, ttldb.FindOptions{Skip: -1}); return err }, ttldb.ErrInvalidOptions, []string{`"errs"`}},
		{"invalid sort", func() error {
			_, err := findDocs(c, nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{{Field: "q", Order: 0}}})
			return err
		}, ttldb.ErrInvalidOptions, []string{`"errs"`, `"q"`}},
		{"invalid projection", func() error {
			_, err := findDocs(c, nil, ttldb.FindOptions{Projection: ttldb.Document{"a": 1, "b": 0}})
			return err
		}, ttldb.ErrInvalidOptions, []string{`"errs"`}},
		{"invalid collection name", func() error {
			_, err := db.Collection("a$b").InsertOne(context.Background(), ttldb.Document{})
			return err
		}, ttldb.ErrInvalidOptions, []string{`"a$b"`}},
		{"invalid Open option", func() error { _, err := ttldb.Open(ttldb.WithClock(nil)); return err }, ttldb.ErrInvalidOptions, []string{"WithClock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.ErrorIs(t, err, tt.sentinel)
			for _, m := range tt.mentions {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
	assert.Equal(t, 1, count(t, c, nil))
}

// Rule 8: after a mass deletion, Compact gives the memory of the maps and
// trees back: the live heap drops clearly.
func TestStoreCompactReleasesMemory(t *testing.T) {
	n := 100_000 // 200_000 with TTLDB_SOAK set
	switch {
	case os.Getenv("TTLDB_SOAK") != "" && !testutil.RaceEnabled:
		n = 200_000
	case testing.Short() || testutil.RaceEnabled:
		n = 30_000
	}
	fill := func(c *ttldb.Collection, n int) {
		_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("k")}})
		require.NoError(t, err)
		_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("t")}, ExpireAfterSeconds: ttldb.Seconds(3600)})
		require.NoError(t, err)
		batch := make([]ttldb.Document, 0, 1000)
		for i := range n {
			batch = append(batch, ttldb.Document{"_id": i, "k": i % 1000, "t": time.Unix(int64(i), 0)})
			if len(batch) == cap(batch) || i == n-1 {
				mustInsert(t, c, batch...)
				batch = batch[:0]
			}
		}
	}
	base := testutil.HeapAlloc()
	db, _ := openStore(t)
	c := db.Collection("big")
	fill(c, n)
	full := testutil.HeapAlloc()
	deleted, err := c.DeleteMany(context.Background(), ttldb.Document{"_id": ttldb.Document{"$gte": n / 10}})
	require.NoError(t, err)
	require.EqualValues(t, n-n/10, deleted.DeletedCount)
	before := testutil.HeapAlloc()
	require.NoError(t, c.Compact(context.Background()))
	after := testutil.HeapAlloc()
	t.Logf("%d docs: heap full %d KiB, after deleting 90%% %d KiB, after Compact %d KiB", n, full>>10, before>>10, after>>10)
	// Go maps never shrink: the _id map alone keeps the buckets of n
	// documents until Compact rebuilds it at a tenth of the size.
	assert.Less(t, float64(after), 0.8*float64(before), "Compact must release a clear share of the heap")

	// The collection still works, indexes included.
	assert.Equal(t, n/10, count(t, c, nil))
	ex, err := c.Explain(context.Background(), ttldb.Document{"k": 7})
	require.NoError(t, err)
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, n/10/1000, ex.NReturned)
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": n, "k": 7})
	require.NoError(t, err)
	assert.Equal(t, n/10/1000+1, count(t, c, ttldb.Document{"k": 7}))

	// Within 1.3x of a fresh DB holding what is left.
	compacted := after - base
	require.NoError(t, db.Close())
	base = testutil.HeapAlloc()
	fresh, _ := openStore(t)
	fill(fresh.Collection("big"), n/10)
	freshHeap := testutil.HeapAlloc() - base
	t.Logf("compacted %d KiB, fresh %d KiB: %.2fx", compacted>>10, freshHeap>>10, float64(compacted)/float64(freshHeap))
	assert.LessOrEqual(t, float64(compacted), 1.3*float64(freshHeap))
	runtime.KeepAlive(fresh)
}

// WithMemoryLimit refuses the write that would pass the limit, with
// ErrMemoryLimit, and that write changes nothing.
func TestMemoryLimitOption(t *testing.T) {
	db, err := ttldb.Open(ttldb.WithMemoryLimit(256 << 10))
	require.NoError(t, err)
	defer db.Close()
	c := db.Collection("c")
	payload := string(make([]byte, 1024))
	var stored int
	for i := range 1000 {
		if _, err = c.InsertOne(context.Background(), ttldb.Document{"_id": i, "p": payload}); err != nil {
			break
		}
		stored++
	}
	require.ErrorIs(t, err, ttldb.ErrMemoryLimit)
	require.Greater(t, stored, 0)
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, stored, n, "the refused insert stored nothing")
	m := db.Metrics().Storage
	require.Equal(t, int64(256<<10), m.Limit)
	// Within a document of the limit: the accounting may pass it by less
	// than one document when a chunk is sealed partly filled.
	require.LessOrEqual(t, m.Bytes, int64(256<<10)+2048)
}
