package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func bulkColl(t *testing.T) (*DB, *Collection) {
	t.Helper()
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("b")
	_, err := c.InsertMany(context.Background(), []Document{{"_id": 1, "k": "x"}, {"_id": 2, "k": "x"}, {"_id": 3, "k": "y"}})
	require.NoError(t, err)
	return db, c
}

func bulkIDs(t *testing.T, c *Collection) []any {
	t.Helper()
	cur, err := c.Find(context.Background(), nil, FindOptions{Sort: []IndexKey{Asc("_id")}})
	require.NoError(t, err)
	var docs []Document
	require.NoError(t, cur.All(context.Background(), &docs))
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d["_id"]
	}
	return out
}

func TestBulkWriteMixedCounts(t *testing.T) {
	_, c := bulkColl(t)
	type item struct {
		ID int    `bson:"_id"`
		K  string `bson:"k"`
	}
	res, err := c.BulkWrite(context.Background(), []WriteModel{
		InsertOneModel{Document: Document{"_id": 4, "k": "y"}},
		&InsertOneModel{Document: item{ID: 5, K: "z"}},
		UpdateOneModel{Filter: Document{"k": "x"}, Update: Document{"$set": Document{"v": 1}}},
		UpdateManyModel{Filter: Document{"k": "y"}, Update: Document{"$set": Document{"v": 2}}},
		UpdateOneModel{Filter: Document{"_id": 9}, Update: Document{"$set": Document{"k": "u"}}, Upsert: true},
		ReplaceOneModel{Filter: Document{"_id": 2}, Replacement: Document{"k": "r"}},
		ReplaceOneModel{Filter: Document{"_id": 10}, Replacement: Document{"k": "r"}, Upsert: true},
		UpdateManyModel{Filter: Document{"k": "y"}, Update: Document{"$set": Document{"v": 2}}}, // matches, changes nothing
		DeleteOneModel{Filter: Document{"k": "r"}},
		&DeleteManyModel{Filter: Document{"k": "y"}},
	})
	require.NoError(t, err)
	assert.Equal(t, BulkWriteResult{
		InsertedCount: 2,
		MatchedCount:  1 + 2 + 0 + 1 + 0 + 2,
		ModifiedCount: 1 + 2 + 0 + 1 + 0 + 0,
		DeletedCount:  1 + 2,
		UpsertedCount: 2,
		UpsertedIDs:   map[int64]any{4: 9, 6: 10},
		InsertedIDs:   map[int64]any{0: 4, 1: 5},
	}, res)
	assert.Equal(t, []any{1, 5, 9, 10}, bulkIDs(t, c))
}

func TestBulkWriteOrderedStopsAtFirstError(t *testing.T) {
	_, c := bulkColl(t)
	res, err := c.BulkWrite(context.Background(), []WriteModel{
		InsertOneModel{Document: Document{"_id": 4}},
		InsertOneModel{Document: Document{"_id": 1}}, // duplicate
		InsertOneModel{Document: Document{"_id": 5}},
		UpdateOneModel{Filter: Document{"_id": 1}, Update: Document{"bad": 1}},
	})
	var bwe *BulkWriteError
	require.ErrorAs(t, err, &bwe)
	require.Len(t, bwe.WriteErrors, 1, "ordered: only the first error")
	assert.Equal(t, 1, bwe.WriteErrors[0].Index)
	require.ErrorIs(t, bwe.WriteErrors[0].Err, ErrDuplicateKey)
	require.ErrorIs(t, err, ErrDuplicateKey)
	var dke *DuplicateKeyError
	require.ErrorAs(t, err, &dke)
	assert.Equal(t, 1, dke.Key)
	assert.Contains(t, err.Error(), "index 1")
	assert.EqualValues(t, 1, res.InsertedCount, "what came before is kept and counted")
	assert.Equal(t, map[int64]any{0: 4}, res.InsertedIDs)
	assert.Equal(t, []any{1, 2, 3, 4}, bulkIDs(t, c), "nothing after the error ran")
}

func TestBulkWriteUnorderedReportsEveryError(t *testing.T) {
	_, c := bulkColl(t)
	res, err := c.BulkWrite(context.Background(), []WriteModel{
		InsertOneModel{Document: Document{"_id": 1}},                                  // 0: duplicate
		InsertOneModel{Document: Document{"_id": 4}},                                  // 1
		UpdateOneModel{Filter: Document{"_id": 2}, Update: Document{"bad": 1}},        // 2: not an update
		UpdateManyModel{Filter: Document{"$bogus": 1}, Update: Document{"$set": nil}}, // 3: bad filter
		ReplaceOneModel{Filter: Document{"_id": 3}, Replacement: Document{"_id": 7}},  // 4: immutable _id
		DeleteOneModel{Filter: Document{"_id": 2}},                                    // 5
		nil,                     // 6: nil model
		(*DeleteManyModel)(nil), // 7: nil pointer
		InsertOneModel{},        // 8: no document
		DeleteManyModel{Filter: Document{"k": Document{"$regex": "(?=x)"}}},             // 9: PCRE
		ReplaceOneModel{Filter: Document{"_id": 3}, Replacement: Document{"$set": nil}}, // 10: operator in replacement
		DeleteManyModel{Filter: Document{"k": "y"}},                                     // 11
	}, BulkWriteOptions{Ordered: new(bool)})
	var bwe *BulkWriteError
	require.ErrorAs(t, err, &bwe)
	want := []struct {
		index int
		err   error
	}{{0, ErrDuplicateKey}, {2, ErrInvalidUpdate}, {3, ErrInvalidFilter}, {4, ErrImmutableID},
		{6, ErrInvalidOptions}, {7, ErrInvalidOptions}, {8, ErrInvalidDocument}, {9, ErrInvalidFilter}, {10, ErrInvalidUpdate}}
	require.Len(t, bwe.WriteErrors, len(want))
	for i, w := range want {
		assert.Equal(t, w.index, bwe.WriteErrors[i].Index)
		assert.ErrorIs(t, bwe.WriteErrors[i].Err, w.err, "model %d", w.index)
	}
	assert.Equal(t, BulkWriteResult{InsertedCount: 1, DeletedCount: 2, InsertedIDs: map[int64]any{1: 4}, UpsertedIDs: map[int64]any{}}, res)
	assert.Equal(t, []any{1, 4}, bulkIDs(t, c))
}

func TestBulkWriteArgumentsAndContext(t *testing.T) {
	db, c := bulkColl(t)
	_, err := c.BulkWrite(context.Background(), nil)
	require.ErrorIs(t, err, ErrInvalidOptions)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := c.BulkWrite(ctx, []WriteModel{DeleteManyModel{}})
	require.ErrorIs(t, err, context.Canceled, "a ctx done before the call is its error, as the driver's")
	var bwe *BulkWriteError
	require.False(t, errors.As(err, &bwe), "no model ran")
	assert.Zero(t, res.DeletedCount)
	assert.Len(t, bulkIDs(t, c), 3, "nothing done once cancelled")

	// Cancelled by a model's own effect (here: a hook-free stand-in, a
	// cancel between models), BulkWrite stops before the next model.
	ctx, cancel = context.WithCancel(context.Background())
	calls := 0
	models := []WriteModel{DeleteOneModel{Filter: Document{"_id": 1}}, DeleteOneModel{Filter: Document{"_id": 2}}}
	// How many times a one-model BulkWrite looks at its ctx (BulkWrite's
	// start, the model's turn, DeleteOne's own looks): cancelled at the
	// next look, the second model's turn.
	looks := 0
	_, err = c.BulkWrite(ctxAfter(context.Background(), &looks, 1<<30, func() {}), []WriteModel{DeleteOneModel{Filter: Document{"_id": "none"}}})
	require.NoError(t, err)
	res, err = c.BulkWrite(ctxAfter(ctx, &calls, looks, cancel), models, BulkWriteOptions{Ordered: new(bool)})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorAs(t, err, &bwe)
	assert.Equal(t, 1, bwe.WriteErrors[0].Index, "stops at the first model not attempted")
	assert.EqualValues(t, 1, res.DeletedCount)

	// An UpdateManyModel or DeleteManyModel runs with the bulk's ctx:
	// cancelled inside it, it changes nothing and reports ctx's error.
	for _, m := range []WriteModel{
		UpdateManyModel{Filter: nil, Update: Document{"$set": Document{"z": 1}}},
		DeleteManyModel{},
	} {
		calls = 0
		ctx, cancel = context.WithCancel(context.Background())
		// Cancelled at the fourth look: inside the model (BulkWrite's
		// start, the model's turn, the model's start, its scan).
		res, err = c.BulkWrite(ctxAfter(ctx, &calls, 3, cancel), []WriteModel{m})
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorAs(t, err, &bwe)
		assert.Equal(t, 0, bwe.WriteErrors[0].Index)
		assert.Zero(t, res.ModifiedCount+res.DeletedCount)
		n, err := c.CountDocuments(context.Background(), Document{"z": 1})
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Len(t, bulkIDs(t, c), 2, "nothing deleted")
	}

	require.NoError(t, db.Close())
	_, err = c.BulkWrite(context.Background(), []WriteModel{DeleteManyModel{}})
	require.ErrorIs(t, err, ErrClosed)
	assert.False(t, errors.As(err, &bwe), "closed: not a per-model error")
}

// ctxAfter returns a context that cancels itself after its Err has been
// asked n times.
func ctxAfter(ctx context.Context, calls *int, n int, cancel context.CancelFunc) context.Context {
	return &countingCtx{Context: ctx, calls: calls, n: n, cancel: cancel}
}

type countingCtx struct {
	context.Context
	calls  *int
	n      int
	cancel context.CancelFunc
}

func (c *countingCtx) Err() error {
	*c.calls++
	if *c.calls > c.n {
		c.cancel()
	}
	return c.Context.Err()
}

func TestBulkWriteTimeSeries(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	ts, err := db.CreateCollection(context.Background(), "ts", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t"}})
	require.NoError(t, err)
	res, err := ts.BulkWrite(context.Background(), []WriteModel{
		InsertOneModel{Document: Document{"t": t0, "v": 1}},
		ReplaceOneModel{Filter: Document{"v": 1}, Replacement: Document{"t": t0}},
	}, BulkWriteOptions{Ordered: new(bool)})
	assert.EqualValues(t, 1, res.InsertedCount)
	require.ErrorIs(t, err, ErrTimeSeries, "each model is refused as its single call would be")
}
