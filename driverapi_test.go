package ttldb_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb"
)

// The task: code written by the driver's reflexes — ctx first, results
// read as InsertedID and DeletedCount, filters as bson.D, options Ordered,
// Hint, Sort, Skip and Limit — compiles and does what the driver does.

// noCtxMethods are the exported methods that neither read nor write data,
// and so take no context: handles, accessors of in-memory state, hooks for
// replication, and the lifecycle. Every other method must take ctx first.
var noCtxMethods = map[string]bool{
	"DB.Close":                     true, // lifecycle, as io.Closer
	"DB.Collection":                true, // a handle: reads nothing
	"DB.Metrics":                   true, // in-memory counters
	"DB.Recovery":                  true, // what Open found, in memory
	"DB.CurrentOp":                 true, // the monitor's state, in memory
	"DB.LastSeq":                   true, // a counter
	"DB.MarkCommitted":             true, // the Replicator's bookkeeping, never blocks
	"DB.SetPrimary":                true, // a flag
	"DB.SetTTLMonitorEnabled":      true, // a flag
	"DB.TTLPaused":                 true, // a flag
	"DB.StartSession":              true, // a handle (the driver's Client.StartSession takes no ctx)
	"DB.TransactionCommitted":      true, // an in-memory record, for a Replicator's CommitResolver
	"DB.SetTTLMonitorInterval":     true, // a setting
	"Collection.Name":              true, // the handle's name
	"Cursor.Decode":                true, // decodes the current document, in memory
	"Cursor.Document":              true, // idem
	"Cursor.Err":                   true, // an accessor
	"ChangeStream.Decode":          true, // the current event, in memory
	"ChangeStream.Event":           true, // idem
	"ChangeStream.Current":         true, // idem
	"ChangeStream.Err":             true, // an accessor
	"ChangeStream.ResumeToken":     true, // an accessor
	"Cursor.RemainingBatchLength":  true, // an accessor, if present
	"ChangeStream.SetBatchSize":    true, // a setting, if present
	"Collection.Database":          true, // a handle, if present
	"Collection.ExpireHookMetrics": true, // in-memory counters, if present
}

// TestEveryMethodTakesCtxFirst walks the exported methods of the types a
// service calls and fails for any that reads or writes without taking a
// context.Context first.
func TestEveryMethodTakesCtxFirst(t *testing.T) {
	ctxType := reflect.TypeFor[context.Context]()
	checked := 0
	for _, typ := range []reflect.Type{
		reflect.TypeFor[*ttldb.DB](), reflect.TypeFor[*ttldb.Collection](),
		reflect.TypeFor[*ttldb.Cursor](), reflect.TypeFor[*ttldb.ChangeStream](),
	} {
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			name := typ.Elem().Name() + "." + m.Name
			if noCtxMethods[name] {
				continue
			}
			checked++
			// In: the receiver, then the parameters.
			if m.Type.NumIn() < 2 || m.Type.In(1) != ctxType {
				t.Errorf("%s takes no context.Context first: %s", name, m.Type)
			}
		}
	}
	assert.Greater(t, checked, 40, "the walk saw the API")
}

// TestCancelledCtxChangesNothing: every write given a ctx already done
// returns its error and changes nothing, as every read returns it.
func TestCancelledCtxChangesNothing(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	mustInsert(t, c, ttldb.Document{"_id": 1, "n": 1}, ttldb.Document{"_id": 2, "n": 2})
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("n")}, Name: "n_1"})
	require.NoError(t, err)
	before := all(t, c)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	f, u := ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"n": 9}}
	calls := map[string]func() error{
		"InsertOne":  func() error { _, err := c.InsertOne(done, ttldb.Document{"_id": 3}); return err },
		"InsertMany": func() error { _, err := c.InsertMany(done, []ttldb.Document{{"_id": 3}}); return err },
		"InsertMany unordered": func() error {
			_, err := c.InsertMany(done, []ttldb.Document{{"_id": 3}}, ttldb.InsertManyOptions{Ordered: ptr(false)})
			return err
		},
		"UpdateOne":         func() error { _, err := c.UpdateOne(done, f, u); return err },
		"UpdateMany":        func() error { _, err := c.UpdateMany(done, nil, u); return err },
		"ReplaceOne":        func() error { _, err := c.ReplaceOne(done, f, ttldb.Document{"n": 9}); return err },
		"DeleteOne":         func() error { _, err := c.DeleteOne(done, f); return err },
		"DeleteMany":        func() error { _, err := c.DeleteMany(done, nil); return err },
		"FindOneAndUpdate":  func() error { return c.FindOneAndUpdate(done, f, u).Err() },
		"FindOneAndReplace": func() error { return c.FindOneAndReplace(done, f, ttldb.Document{"n": 9}).Err() },
		"FindOneAndDelete":  func() error { return c.FindOneAndDelete(done, f).Err() },
		"BulkWrite": func() error {
			_, err := c.BulkWrite(done, []ttldb.WriteModel{ttldb.DeleteManyModel{}})
			return err
		},
		"DropIndex": func() error { return c.DropIndex(done, "n_1") },
		"CreateIndex": func() error {
			_, err := c.CreateIndex(done, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("m")}})
			return err
		},
		"Compact": func() error { return c.Compact(done) },
		"CollMod": func() error {
			_, err := c.CollMod(done, ttldb.CollModIndex{Name: "n_1", ExpireAfterSeconds: ttldb.Seconds(5)})
			return err
		},
		"CreateCollection": func() error { _, err := db.CreateCollection(done, "x", ttldb.CollectionOptions{}); return err },
		"DropCollection":   func() error { return db.DropCollection(done, "c") },
		"FindOne":          func() error { return c.FindOne(done, f).Err() },
		"Find":             func() error { _, err := c.Find(done, nil); return err },
		"CountDocuments":   func() error { _, err := c.CountDocuments(done, nil); return err },
		"Distinct":         func() error { _, err := c.Distinct(done, "n", nil); return err },
		"EstimatedCount":   func() error { _, err := c.EstimatedDocumentCount(done); return err },
		"Indexes":          func() error { _, err := c.Indexes(done); return err },
		"ListCollections":  func() error { _, err := db.ListCollectionNames(done); return err },
		"ExpiresAt":        func() error { _, _, err := c.ExpiresAt(done, 1); return err },
		"Explain":          func() error { _, err := c.Explain(done, nil); return err },
	}
	for name, call := range calls {
		err := call()
		require.ErrorIs(t, err, context.Canceled, name)
		assert.Equal(t, before, all(t, c), "%s changed something", name)
	}
	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	assert.Len(t, specs, 2, "no index dropped or created")
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, names)
}

// TestDriverResults: the driver's result shapes and ErrNoDocuments.
func TestDriverResults(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("r")
	ctx := context.Background()
	one, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: 1}})
	require.NoError(t, err)
	assert.Equal(t, "a", one.InsertedID)
	many, err := c.InsertMany(ctx, []any{bson.D{{Key: "n", Value: 2}}, bson.M{"_id": "c", "n": 3}})
	require.NoError(t, err)
	require.Len(t, many.InsertedIDs, 2)
	assert.IsType(t, ttldb.ObjectID{}, many.InsertedIDs[0], "a generated _id is an ObjectID, the driver's")
	assert.Equal(t, "c", many.InsertedIDs[1])

	upd, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{MatchedCount: 1, ModifiedCount: 1}, upd)
	upd, err = c.UpdateOne(ctx, bson.M{"_id": "z"}, bson.M{"$set": bson.M{"n": 0}}, ttldb.UpdateOptions{Upsert: true})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.UpdateResult{UpsertedCount: 1, UpsertedID: "z"}, upd)
	del, err := c.DeleteMany(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 2}}}})
	require.NoError(t, err)
	assert.Equal(t, &ttldb.DeleteResult{DeletedCount: 3}, del)
	n, err := c.CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)

	err = c.FindOne(ctx, bson.D{{Key: "_id", Value: "gone"}}).Err()
	require.ErrorIs(t, err, ttldb.ErrNoDocuments)
	require.ErrorIs(t, err, ttldb.ErrNotFound, "one sentinel, two names")

	// A struct as a whole filter is refused (so that a Document literal
	// given as a filter can stay on the caller's stack: see documentArg);
	// a struct value inside a filter is matched as the document it is.
	type byName struct {
		N int `bson:"n"`
	}
	mustInsert(t, c, ttldb.Document{"_id": "s", "n": 7})
	err = c.FindOne(ctx, byName{N: 7}).Err()
	require.ErrorIs(t, err, ttldb.ErrInvalidFilter)
	assert.ErrorContains(t, err, "byName")
	var got struct {
		ID string `bson:"_id"`
	}
	raw, err := bson.Marshal(bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 6}}}})
	require.NoError(t, err)
	require.NoError(t, c.FindOne(ctx, bson.Raw(raw)).Decode(&got))
	assert.Equal(t, "s", got.ID)

	_, err = c.Find(ctx, 42)
	require.ErrorIs(t, err, ttldb.ErrInvalidFilter, "a filter must be a document")
	_, err = c.UpdateOne(ctx, nil, "not an update")
	require.ErrorIs(t, err, ttldb.ErrInvalidUpdate)

	// A single InsertOne's error names no index; InsertMany's does.
	_, err = c.InsertOne(ctx, ttldb.Document{"_id": "s"})
	require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
	assert.NotContains(t, err.Error(), "document 0")
	assert.NotContains(t, err.Error(), "index 0")
}

// TestInsertManyOrdering: ordered (the default) is all-or-nothing and
// names the failing index; unordered inserts what it can and reports
// every failure by index.
func TestInsertManyOrdering(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("im")
	ctx := context.Background()
	mustInsert(t, c, ttldb.Document{"_id": 2})
	docs := []ttldb.Document{{"_id": 1}, {"_id": 2}, {"_id": 3}, {"_id": 3}, {"_id": 4, "bad": make(chan int)}, {"_id": 5}}

	for _, ordered := range []*bool{nil, ptr(true)} {
		res, err := c.InsertMany(ctx, docs, ttldb.InsertManyOptions{Ordered: ordered})
		var bwe *ttldb.BulkWriteError
		require.ErrorAs(t, err, &bwe)
		require.Len(t, bwe.WriteErrors, 1, "one failure: the call stops there")
		// A document that cannot be stored is found before any key is
		// looked up: index 4 here, though 1 duplicates a stored _id.
		assert.Equal(t, 4, bwe.WriteErrors[0].Index)
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
		assert.Empty(t, res.InsertedIDs)
		assert.Equal(t, []any{2}, ids(all(t, c)), "nothing inserted")
		_, err = c.InsertMany(ctx, docs[:4], ttldb.InsertManyOptions{Ordered: ordered})
		require.ErrorAs(t, err, &bwe)
		assert.Equal(t, 1, bwe.WriteErrors[0].Index, "among valid documents, the first duplicate")
		require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
		assert.Equal(t, []any{2}, ids(all(t, c)), "nothing inserted")
	}

	res, err := c.InsertMany(ctx, docs, ttldb.InsertManyOptions{Ordered: ptr(false)})
	var bwe *ttldb.BulkWriteError
	require.ErrorAs(t, err, &bwe)
	var idx []int
	for _, we := range bwe.WriteErrors {
		idx = append(idx, we.Index)
	}
	assert.Equal(t, []int{1, 3, 4}, idx, "every failure, by index")
	require.ErrorIs(t, bwe.WriteErrors[0], ttldb.ErrDuplicateKey)
	require.ErrorIs(t, bwe.WriteErrors[2], ttldb.ErrInvalidDocument)
	assert.Equal(t, []any{1, 3, 5}, res.InsertedIDs)
	assert.ElementsMatch(t, []any{1, 2, 3, 5}, ids(all(t, c)))
}

// TestBulkWriteOrdering: Ordered nil and true stop at the first failure
// (what came before stays); false attempts every model.
func TestBulkWriteOrdering(t *testing.T) {
	for _, tc := range []struct {
		ordered *bool
		failed  []int
		left    []any
	}{
		{nil, []int{1}, []any{1, 2}},
		{ptr(true), []int{1}, []any{1, 2}},
		{ptr(false), []int{1, 3}, []any{1, 2, 4}},
	} {
		db, _ := openStore(t)
		c := db.Collection("bw")
		mustInsert(t, c, ttldb.Document{"_id": 2})
		res, err := c.BulkWrite(context.Background(), []ttldb.WriteModel{
			ttldb.InsertOneModel{Document: ttldb.Document{"_id": 1}},
			ttldb.InsertOneModel{Document: ttldb.Document{"_id": 2}},
			ttldb.InsertOneModel{Document: ttldb.Document{"_id": 4}},
			ttldb.UpdateOneModel{Filter: bson.D{}, Update: ttldb.Document{"$bad": 1}},
		}, ttldb.BulkWriteOptions{Ordered: tc.ordered})
		var bwe *ttldb.BulkWriteError
		require.ErrorAs(t, err, &bwe)
		var idx []int
		for _, we := range bwe.WriteErrors {
			idx = append(idx, we.Index)
		}
		assert.Equal(t, tc.failed, idx)
		assert.ElementsMatch(t, tc.left, ids(all(t, c)))
		assert.Equal(t, int64(len(tc.left)-1), res.InsertedCount)
	}
}

// TestHint: a hint by name or by keys makes the query use that index
// (Explain), in every call that takes one; an index the collection lacks
// or one that may miss documents is refused, and nothing changes.
func TestHint(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("h")
	ctx := context.Background()
	for _, m := range []ttldb.IndexModel{
		{Keys: []ttldb.IndexKey{ttldb.Asc("a")}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("b"), ttldb.Desc("a")}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("p")}, Name: "partial", PartialFilterExpression: ttldb.Document{"p": ttldb.Document{"$gt": 0}}},
		{Keys: []ttldb.IndexKey{ttldb.Asc("s")}, Name: "sparse", Sparse: true},
	} {
		_, err := c.CreateIndex(ctx, m)
		require.NoError(t, err)
	}
	for i := range 10 {
		mustInsert(t, c, ttldb.Document{"_id": i, "a": i, "b": i % 3})
	}
	filter := ttldb.Document{"a": ttldb.Document{"$gte": 5}}

	ex, err := c.Explain(ctx, filter)
	require.NoError(t, err)
	assert.Equal(t, "a_1", ex.IndexName, "without a hint, the planner takes a_1")
	for _, hint := range []any{"b_1_a_-1", []ttldb.IndexKey{ttldb.Asc("b"), ttldb.Desc("a")}, bson.D{{Key: "b", Value: 1}, {Key: "a", Value: -1}}} {
		ex, err := c.Explain(ctx, filter, ttldb.FindOptions{Hint: hint})
		require.NoError(t, err)
		assert.Equal(t, "b_1_a_-1", ex.IndexName, "hint %v", hint)
		docs, err := findDocs(c, filter, ttldb.FindOptions{Hint: hint, Sort: []ttldb.IndexKey{ttldb.Asc("_id")}})
		require.NoError(t, err)
		assert.Equal(t, []any{5, 6, 7, 8, 9}, ids(docs), "the same answer through the hinted index")
	}
	ex, err = c.Explain(ctx, ttldb.Document{"_id": 3}, ttldb.FindOptions{Hint: "_id_"})
	require.NoError(t, err)
	assert.Equal(t, "_id_", ex.IndexName)

	n, err := c.CountDocuments(ctx, filter, ttldb.CountOptions{Hint: "b_1_a_-1"})
	require.NoError(t, err)
	assert.Equal(t, int64(5), n)
	upd, err := c.UpdateMany(ctx, filter, ttldb.Document{"$set": ttldb.Document{"x": 1}}, ttldb.UpdateOptions{Hint: bson.D{{Key: "a", Value: 1}}})
	require.NoError(t, err)
	assert.Equal(t, int64(5), upd.ModifiedCount)
	del, err := c.DeleteOne(ctx, filter, ttldb.DeleteOptions{Hint: "a_1"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), del.DeletedCount)
	require.NoError(t, c.FindOneAndUpdate(ctx, filter, ttldb.Document{"$set": ttldb.Document{"y": 1}}, ttldb.FindOneAndUpdateOptions{Hint: "a_1"}).Err())

	before := all(t, c)
	for name, hint := range map[string]any{
		"missing name": "nope", "missing keys": bson.D{{Key: "zz", Value: 1}}, "partial": "partial",
		"sparse": "sparse", "not a key pattern": 42, "bad direction": bson.D{{Key: "a", Value: "x"}},
	} {
		_, err := c.Find(ctx, filter, ttldb.FindOptions{Hint: hint})
		require.ErrorIs(t, err, ttldb.ErrInvalidOptions, name)
		_, err = c.CountDocuments(ctx, filter, ttldb.CountOptions{Hint: hint})
		require.ErrorIs(t, err, ttldb.ErrInvalidOptions, name)
		_, err = c.UpdateMany(ctx, filter, ttldb.Document{"$set": ttldb.Document{"z": 1}}, ttldb.UpdateOptions{Hint: hint, Upsert: true})
		require.ErrorIs(t, err, ttldb.ErrInvalidOptions, name)
		_, err = c.DeleteMany(ctx, filter, ttldb.DeleteOptions{Hint: hint})
		require.ErrorIs(t, err, ttldb.ErrInvalidOptions, name)
		require.ErrorIs(t, c.FindOneAndDelete(ctx, filter, ttldb.FindOneAndDeleteOptions{Hint: hint}).Err(), ttldb.ErrInvalidOptions, name)
		assert.Equal(t, before, all(t, c), "%s: nothing changed", name)
	}
}

// TestUpdateSort: UpdateOne and ReplaceOne with Sort write the first match
// in that order; UpdateMany refuses a Sort.
func TestUpdateSort(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("us")
	ctx := context.Background()
	mustInsert(t, c, ttldb.Document{"_id": 1, "k": "x", "v": 2}, ttldb.Document{"_id": 2, "k": "x", "v": 3}, ttldb.Document{"_id": 3, "k": "x", "v": 1})
	_, err := c.UpdateOne(ctx, ttldb.Document{"k": "x"}, ttldb.Document{"$set": ttldb.Document{"top": true}}, ttldb.UpdateOptions{Sort: []ttldb.IndexKey{ttldb.Desc("v")}})
	require.NoError(t, err)
	top, err := findDocs(c, ttldb.Document{"top": true})
	require.NoError(t, err)
	assert.Equal(t, []any{2}, ids(top))
	_, err = c.ReplaceOne(ctx, ttldb.Document{"k": "x"}, ttldb.Document{"k": "x", "v": 0, "low": true}, ttldb.UpdateOptions{Sort: []ttldb.IndexKey{ttldb.Asc("v")}})
	require.NoError(t, err)
	low, err := findDocs(c, ttldb.Document{"low": true})
	require.NoError(t, err)
	assert.Equal(t, []any{3}, ids(low))
	_, err = c.UpdateMany(ctx, nil, ttldb.Document{"$set": ttldb.Document{"q": 1}}, ttldb.UpdateOptions{Sort: []ttldb.IndexKey{ttldb.Asc("v")}})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	assert.Equal(t, 0, count(t, c, ttldb.Document{"q": 1}))
}

// TestCountSkipLimit: CountDocuments counts the matches after Skip, at
// most Limit, as MongoDB does.
func TestCountSkipLimit(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("csl")
	for i := range 10 {
		mustInsert(t, c, ttldb.Document{"_id": i, "even": i%2 == 0})
	}
	for _, tc := range []struct {
		skip, limit, want int64
	}{{0, 0, 5}, {2, 0, 3}, {0, 2, 2}, {4, 3, 1}, {9, 0, 0}, {1, 10, 4}} {
		n, err := c.CountDocuments(context.Background(), ttldb.Document{"even": true}, ttldb.CountOptions{Skip: tc.skip, Limit: tc.limit})
		require.NoError(t, err)
		assert.Equal(t, tc.want, n, "skip %d limit %d", tc.skip, tc.limit)
	}
	_, err := c.CountDocuments(context.Background(), nil, ttldb.CountOptions{Skip: -1})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = c.CountDocuments(context.Background(), nil, ttldb.CountOptions{Limit: -1})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
}

// TestCollationRefused: ttldb compares strings by their bytes; the
// simple collation is accepted, any other refused, and nothing changes.
func TestCollationRefused(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("coll")
	ctx := context.Background()
	mustInsert(t, c, ttldb.Document{"_id": 1, "s": "A"})
	simple := &ttldb.Collation{Locale: "simple"}
	docs, err := findDocs(c, ttldb.Document{"s": "a"}, ttldb.FindOptions{Collation: simple})
	require.NoError(t, err)
	assert.Empty(t, docs, "the simple collation: by bytes")
	en := &ttldb.Collation{Locale: "en", Strength: 2}
	_, err = c.Find(ctx, nil, ttldb.FindOptions{Collation: en})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = c.CountDocuments(ctx, nil, ttldb.CountOptions{Collation: en})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = c.UpdateOne(ctx, nil, ttldb.Document{"$set": ttldb.Document{"x": 1}}, ttldb.UpdateOptions{Collation: en})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = c.ReplaceOne(ctx, nil, ttldb.Document{"x": 1}, ttldb.UpdateOptions{Collation: en})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = c.DeleteMany(ctx, nil, ttldb.DeleteOptions{Collation: en})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	require.ErrorIs(t, c.FindOneAndDelete(ctx, nil, ttldb.FindOneAndDeleteOptions{Collation: en}).Err(), ttldb.ErrInvalidOptions)
	assert.Equal(t, []ttldb.Document{{"_id": 1, "s": "A"}}, all(t, c))
	assert.False(t, errors.Is(err, ttldb.ErrInvalidFilter))
}

// TestArrayFilters: the driver's arrayFilters through UpdateOne,
// UpdateMany, FindOneAndUpdate and BulkWrite; a bad one changes nothing.
func TestArrayFilters(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("af")
	ctx := context.Background()
	mustInsert(t, c,
		ttldb.Document{"_id": 1, "grades": []any{95, 102, 90}},
		ttldb.Document{"_id": 2, "grades": []any{98, 100, 102}},
		ttldb.Document{"_id": 3, "scores": []any{ttldb.Document{"g": 80, "m": 75}, ttldb.Document{"g": 85, "m": 90}}},
	)
	res, err := c.UpdateMany(ctx, nil, bson.D{{Key: "$set", Value: bson.D{{Key: "grades.$[e]", Value: 100}}}},
		ttldb.UpdateOptions{ArrayFilters: []any{bson.D{{Key: "e", Value: bson.D{{Key: "$gte", Value: 100}}}}}})
	require.Error(t, err, "document 3 has no grades: MongoDB's error, and nothing changes")
	require.ErrorIs(t, err, ttldb.ErrInvalidUpdate)
	assert.Equal(t, &ttldb.UpdateResult{}, res)

	res, err = c.UpdateMany(ctx, ttldb.Document{"grades": ttldb.Document{"$exists": true}}, bson.D{{Key: "$set", Value: bson.D{{Key: "grades.$[e]", Value: 100}}}},
		ttldb.UpdateOptions{ArrayFilters: []any{bson.D{{Key: "e", Value: bson.D{{Key: "$gte", Value: 100}}}}}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), res.ModifiedCount)
	got, err := c.FindOne(ctx, ttldb.Document{"_id": 2}).Document()
	require.NoError(t, err)
	assert.Equal(t, []any{98, 100, 100}, got["grades"])

	var after struct {
		Scores []struct{ G, M int } `bson:"scores"`
	}
	err = c.FindOneAndUpdate(ctx, ttldb.Document{"_id": 3}, ttldb.Document{"$set": ttldb.Document{"scores.$[s].m": 100}},
		ttldb.FindOneAndUpdateOptions{ReturnDocument: ttldb.After, ArrayFilters: []any{ttldb.Document{"s.g": ttldb.Document{"$gte": 85}}}}).Decode(&after)
	require.NoError(t, err)
	assert.Equal(t, 75, after.Scores[0].M)
	assert.Equal(t, 100, after.Scores[1].M)

	_, err = c.BulkWrite(ctx, []ttldb.WriteModel{ttldb.UpdateOneModel{
		Filter: ttldb.Document{"_id": 1}, Update: ttldb.Document{"$inc": ttldb.Document{"grades.$[]": 1}},
	}})
	require.NoError(t, err)
	got, err = c.FindOne(ctx, ttldb.Document{"_id": 1}).Document()
	require.NoError(t, err)
	assert.Equal(t, []any{96, 101, 91}, got["grades"])

	before := all(t, c)
	_, err = c.UpdateOne(ctx, ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"grades.$[x]": 0}})
	require.ErrorIs(t, err, ttldb.ErrInvalidUpdate, "no filter for x")
	_, err = c.UpdateOne(ctx, ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"grades.$[]": 0}},
		ttldb.UpdateOptions{ArrayFilters: []any{ttldb.Document{"y": 1}}})
	require.ErrorIs(t, err, ttldb.ErrInvalidUpdate, "a filter not used")
	_, err = c.ReplaceOne(ctx, ttldb.Document{"_id": 1}, ttldb.Document{"a": 1}, ttldb.UpdateOptions{ArrayFilters: []any{ttldb.Document{"y": 1}}})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	assert.Equal(t, before, all(t, c))
}

// TestArrayFiltersChangeEvent: an update through "$[e]" reports the array
// it changed, whole, in updatedFields.
func TestArrayFiltersChangeEvent(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("afcs")
	ctx := context.Background()
	mustInsert(t, c, ttldb.Document{"_id": 1, "a": []any{1, 5}})
	cs, err := c.Watch(ctx, nil)
	require.NoError(t, err)
	defer cs.Close(ctx)
	_, err = c.UpdateOne(ctx, ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"a.$[big]": 0}},
		ttldb.UpdateOptions{ArrayFilters: []any{ttldb.Document{"big": ttldb.Document{"$gt": 2}}}})
	require.NoError(t, err)
	require.True(t, cs.TryNext(ctx))
	ev := cs.Event()
	require.NotNil(t, ev.UpdateDescription)
	assert.Equal(t, ttldb.Document{"a": []any{1, 0}}, ev.UpdateDescription.UpdatedFields)
}
