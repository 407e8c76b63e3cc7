package ttldb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb"
)

// The aggregation pipeline, as a user runs it: the engine's side (plans,
// the expiry cutoff, transactions, the write stages, bounds). The stages'
// and operators' semantics are tested in internal/aggregate and
// internal/query, and against a naive evaluator in
// aggregate_differential_test.go.

func stage(name string, arg any) bson.D { return bson.D{{Key: name, Value: arg}} }

// aggregateAll runs a pipeline and returns every result.
func aggregateAll(t testing.TB, c *ttldb.Collection, pipeline bson.A, opts ...ttldb.AggregateOptions) []ttldb.Document {
	t.Helper()
	cur, err := c.Aggregate(context.Background(), pipeline, opts...)
	require.NoError(t, err)
	var out []ttldb.Document
	require.NoError(t, cur.All(context.Background(), &out))
	return out
}

func TestAggregateGroupsRequestsPerRoute(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("requests")
	mustInsert(t, c,
		ttldb.Document{"_id": 1, "route": "/a", "ms": 10},
		ttldb.Document{"_id": 2, "route": "/b", "ms": 30},
		ttldb.Document{"_id": 3, "route": "/a", "ms": 20},
		ttldb.Document{"_id": 4, "route": "/a"},
	)
	out := aggregateAll(t, c, bson.A{
		stage("$group", bson.D{{Key: "_id", Value: "$route"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$ms"}}}}),
		stage("$sort", bson.D{{Key: "_id", Value: 1}}),
	})
	require.Len(t, out, 2)
	assert.Equal(t, "/a", out[0]["_id"])
	assert.EqualValues(t, 3, out[0]["n"])
	assert.EqualValues(t, 30, out[0]["total"])
	assert.Equal(t, "/b", out[1]["_id"])
	assert.EqualValues(t, 30, out[1]["total"])
}

// TestAggregateSelectiveMatchUsesTheIndex: a pipeline whose leading
// $match an index answers examines only the matching documents.
func TestAggregateSelectiveMatchUsesTheIndex(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("events")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("user")}})
	require.NoError(t, err)
	var docs []ttldb.Document
	for i := range 1000 {
		docs = append(docs, ttldb.Document{"_id": i, "user": i % 100, "n": i})
	}
	mustInsert(t, c, docs...)
	pipeline := bson.A{
		stage("$match", bson.D{{Key: "user", Value: 7}}),
		stage("$group", bson.D{{Key: "_id", Value: nil}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$n"}}}}),
	}
	ex, err := c.ExplainAggregate(context.Background(), pipeline)
	require.NoError(t, err)
	assert.Equal(t, "IXSCAN", ex.Read.Stage)
	assert.Equal(t, "user_1", ex.Read.IndexName)
	assert.Equal(t, 10, ex.Read.DocsExamined, "only the matching documents are examined")
	assert.Equal(t, []string{"$match"}, ex.Pushed)
	assert.Equal(t, []string{"$group"}, ex.Stages)
	out := aggregateAll(t, c, pipeline)
	require.Len(t, out, 1)
	assert.EqualValues(t, 7+107+207+307+407+507+607+707+807+907, out[0]["total"])
}

// TestAggregateSortReadsInIndexOrder: a $sort an index gives is answered
// by the walk (with its $limit), not sorted in memory.
func TestAggregateSortReadsInIndexOrder(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("scores")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Desc("score")}})
	require.NoError(t, err)
	for i := range 100 {
		mustInsert(t, c, ttldb.Document{"_id": i, "score": (i * 37) % 100})
	}
	pipeline := bson.A{
		stage("$sort", bson.D{{Key: "score", Value: -1}}),
		stage("$limit", 3),
		stage("$project", bson.D{{Key: "score", Value: 1}, {Key: "_id", Value: 0}}),
	}
	ex, err := c.ExplainAggregate(context.Background(), pipeline)
	require.NoError(t, err)
	assert.Equal(t, []string{"$sort", "$limit"}, ex.Pushed)
	assert.False(t, ex.Read.InMemorySort)
	assert.Equal(t, 3, ex.Read.DocsExamined, "the walk stops after the limit")
	out := aggregateAll(t, c, pipeline)
	assert.Equal(t, []ttldb.Document{{"score": 99}, {"score": 98}, {"score": 97}}, out)

	// Without an index for the order, $sort is a stage of the pipeline (a
	// top-k with the $limit): same results.
	c2 := db.Collection("scores2")
	for i := range 100 {
		mustInsert(t, c2, ttldb.Document{"_id": i, "score": (i * 37) % 100})
	}
	ex, err = c2.ExplainAggregate(context.Background(), pipeline)
	require.NoError(t, err)
	assert.Empty(t, ex.Pushed)
	assert.Equal(t, []string{"$sort", "$limit", "$project"}, ex.Stages)
	assert.Equal(t, out, aggregateAll(t, c2, pipeline))
}

// TestAggregateGroupOnIndexedFieldStreams: a $group by a field an index
// orders reads in that order and streams, with the results of a hashing
// group.
func TestAggregateGroupOnIndexedFieldStreams(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("events")
	plain := db.Collection("events_plain")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("user")}})
	require.NoError(t, err)
	var docs []ttldb.Document
	for i := range 300 {
		d := ttldb.Document{"_id": i, "n": i}
		switch i % 7 {
		case 0: // missing user: groups with null
		case 1:
			d["user"] = nil
		case 2:
			d["user"] = float64(i % 5) // 1.0 groups with 1
		default:
			d["user"] = i % 5
		}
		docs = append(docs, d)
	}
	mustInsert(t, c, docs...)
	mustInsert(t, plain, docs...)
	pipeline := bson.A{
		stage("$group", bson.D{{Key: "_id", Value: "$user"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$n"}}}}),
		stage("$sort", bson.D{{Key: "_id", Value: 1}}),
	}
	ex, err := c.ExplainAggregate(context.Background(), pipeline)
	require.NoError(t, err)
	assert.Equal(t, []string{"$group (streaming)", "$sort"}, ex.Stages)
	assert.Equal(t, "user_1", ex.Read.IndexName)
	ex, err = plain.ExplainAggregate(context.Background(), pipeline)
	require.NoError(t, err)
	assert.Equal(t, []string{"$group", "$sort"}, ex.Stages)
	streamed := aggregateAll(t, c, pipeline)
	hashed := aggregateAll(t, plain, pipeline)
	require.Len(t, streamed, 6) // null and 0..4
	assert.Equal(t, hashed, streamed)
}

// TestAggregateTimeSeriesReadsOnlyTheHour: "the last reading of each
// sensor over the last hour" unpacks only that hour's buckets.
func TestAggregateTimeSeriesReadsOnlyTheHour(t *testing.T) {
	const sensors, minutes = 50, 600
	c, clock := loadAggReadings(t, sensors*minutes, sensors)
	pipeline := lastReadingPipeline(clock.Now())
	ex, err := c.ExplainAggregate(context.Background(), pipeline)
	require.NoError(t, err)
	assert.Equal(t, []string{"$match"}, ex.Pushed)
	assert.Equal(t, sensors*60, ex.Read.NReturned, "the hour's measurements")
	// Buckets of an hour (granularity seconds), aligned on the hour: ten
	// per sensor, of which the last hour's one is unpacked.
	assert.Equal(t, sensors*minutes/60, ex.Read.BucketsExamined)
	assert.Equal(t, sensors, ex.Read.BucketsUnpacked, "only the hour's buckets are unpacked")
	assert.Equal(t, sensors*60, ex.Read.DocsExamined, "measurements outside the hour are not read")
	out := aggregateAll(t, c, pipeline)
	require.Len(t, out, sensors)
	last := clock.Now().Add(-time.Minute)
	for _, d := range out {
		assert.Equal(t, last, d["t"], "sensor %v", d["_id"])
		assert.EqualValues(t, float64((minutes-1)*sensors+d["_id"].(int)), d["v"])
	}
}

// TestAggregateOneCutoff: with HideExpired, an expired document never
// enters a pipeline, and the pipeline reads every collection ($lookup's
// included) at the one instant of the Aggregate call, even while the clock
// moves on.
func TestAggregateOneCutoff(t *testing.T) {
	db, clock := openStore(t)
	ctx := context.Background()
	opts := ttldb.CollectionOptions{HideExpired: true}
	users, err := db.CreateCollection(ctx, "users", opts)
	require.NoError(t, err)
	sessions, err := db.CreateCollection(ctx, "sessions", opts)
	require.NoError(t, err)
	for _, c := range []*ttldb.Collection{users, sessions} {
		_, err := c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
		require.NoError(t, err)
	}
	now := clock.Now()
	mustInsert(t, users,
		ttldb.Document{"_id": "ann", "at": now},
		ttldb.Document{"_id": "bob", "at": now.Add(-61 * time.Second)}, // expired
	)
	var docs []ttldb.Document
	for i := range 300 {
		// Session i expires i seconds from now.
		docs = append(docs, ttldb.Document{"_id": i, "user": "ann", "at": now.Add(time.Duration(i-60) * time.Second)})
	}
	docs = append(docs, ttldb.Document{"_id": 1000, "user": "bob", "at": now})
	mustInsert(t, sessions, docs...)
	clock.SetAutoAdvance(time.Second) // every reading of the clock moves it on
	pipeline := bson.A{
		stage("$lookup", bson.D{{Key: "from", Value: "sessions"}, {Key: "localField", Value: "_id"}, {Key: "foreignField", Value: "user"}, {Key: "as", Value: "s"}}),
		stage("$project", bson.D{{Key: "n", Value: bson.D{{Key: "$size", Value: "$s"}}}}),
	}
	out := aggregateAll(t, users, pipeline)
	require.Len(t, out, 1, "bob expired: he never enters the pipeline")
	assert.Equal(t, "ann", out[0]["_id"])
	// At the call's instant sessions 0 (expires now) .. 299: 0 is expired
	// (the threshold is inclusive), 1..299 are not.
	assert.EqualValues(t, 299, out[0]["n"], "one cutoff for the lookup's reads")
}

func TestAggregateLetAndNow(t *testing.T) {
	db, clock := openStore(t)
	c := db.Collection("c")
	mustInsert(t, c, ttldb.Document{"_id": 1, "x": 5})
	out := aggregateAll(t, c, bson.A{
		stage("$project", bson.D{{Key: "now", Value: "$$NOW"}, {Key: "lim", Value: "$$limit"}, {Key: "over", Value: bson.D{{Key: "$gt", Value: bson.A{"$x", "$$limit"}}}}}),
	}, ttldb.AggregateOptions{Let: bson.D{{Key: "limit", Value: 3}}})
	require.Len(t, out, 1)
	assert.Equal(t, clock.Now().Truncate(time.Millisecond), out[0]["now"].(time.Time).Truncate(time.Millisecond))
	assert.EqualValues(t, 3, out[0]["lim"])
	assert.Equal(t, true, out[0]["over"])

	_, err := c.Aggregate(context.Background(), bson.A{stage("$project", bson.D{{Key: "x", Value: "$$nope"}})})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "$$nope")
	_, err = c.Aggregate(context.Background(), bson.A{}, ttldb.AggregateOptions{Let: bson.D{{Key: "Upper", Value: 1}}})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
}

// TestAggregateErrorsNameTheStage: compile errors and evaluation errors
// name the stage and the operator; nothing is returned.
func TestAggregateErrorsNameTheStage(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	mustInsert(t, c, ttldb.Document{"_id": 1, "s": "text"})
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		pipeline any
		is       error
		says     []string
	}{
		{"not a slice", bson.D{{Key: "$match", Value: bson.D{}}}, ttldb.ErrInvalidOptions, []string{"slice of stages"}},
		{"unknown stage", bson.A{stage("$match", bson.D{}), stage("$bogus", 1)}, ttldb.ErrInvalidOptions, []string{"stage 1", "$bogus"}},
		{"later stage", bson.A{stage("$setWindowFields", bson.D{})}, ttldb.ErrInvalidOptions, []string{"$setWindowFields"}},
		{"two fields", bson.A{bson.D{{Key: "$match", Value: bson.D{}}, {Key: "$limit", Value: 1}}}, ttldb.ErrInvalidOptions, []string{"stage 0"}},
		{"bad limit", bson.A{stage("$limit", -1)}, ttldb.ErrInvalidOptions, []string{"$limit"}},
		{"out not last", bson.A{stage("$out", "x"), stage("$limit", 1)}, ttldb.ErrInvalidOptions, []string{"$out", "last"}},
		{"unknown operator", bson.A{stage("$set", bson.D{{Key: "a", Value: bson.D{{Key: "$bogus", Value: 1}}}})}, ttldb.ErrInvalidOptions, []string{"$bogus"}},
		{"type mismatch", bson.A{stage("$set", bson.D{{Key: "a", Value: bson.D{{Key: "$add", Value: bson.A{"$s", 1}}}}})}, ttldb.ErrExpression, []string{"stage 0", "$set", "$add"}},
		{"division by zero", bson.A{stage("$project", bson.D{{Key: "a", Value: bson.D{{Key: "$divide", Value: bson.A{1, 0}}}}})}, ttldb.ErrExpression, []string{"stage 0", "$divide"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, err := c.Aggregate(ctx, tc.pipeline)
			require.ErrorIs(t, err, tc.is)
			assert.Nil(t, cur)
			for _, s := range tc.says {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestAggregateMemoryLimit: a blocking stage over MaxMemoryBytes fails
// with ErrMemoryLimit, and so does one the DB's budget cannot hold; the
// budget is given back after.
func TestAggregateMemoryLimit(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	var docs []ttldb.Document
	for i := range 2000 {
		docs = append(docs, ttldb.Document{"_id": i, "k": i, "pad": "0123456789012345678901234567890123456789"})
	}
	mustInsert(t, c, docs...)
	group := bson.A{stage("$group", bson.D{{Key: "_id", Value: "$k"}, {Key: "all", Value: bson.D{{Key: "$push", Value: "$$ROOT"}}}})}
	sort := bson.A{stage("$sort", bson.D{{Key: "pad", Value: 1}, {Key: "k", Value: -1}})}
	for _, p := range []bson.A{group, sort} {
		_, err := c.Aggregate(context.Background(), p, ttldb.AggregateOptions{MaxMemoryBytes: 10_000})
		require.ErrorIs(t, err, ttldb.ErrMemoryLimit)
		assert.Len(t, aggregateAll(t, c, p), 2000, "the default limit holds it")
	}

	// The DB's budget: a limit just above what the collection holds.
	used := db.Metrics().Storage.Bytes
	small, err := ttldb.Open(ttldb.WithMemoryLimit(used + 40_000))
	require.NoError(t, err)
	defer small.Close()
	c2 := small.Collection("c")
	mustInsert(t, c2, docs...)
	_, err = c2.Aggregate(context.Background(), group)
	require.ErrorIs(t, err, ttldb.ErrMemoryLimit)
	// Nothing stays booked: a write that needs most of the room left
	// goes through.
	_, err = c2.InsertOne(context.Background(), ttldb.Document{"_id": "big", "pad": strings.Repeat("x", 20_000)})
	require.NoError(t, err)
}

// TestAggregateContextStops: a cancelled ctx stops the pipeline.
func TestAggregateContextStops(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	var docs []ttldb.Document
	for i := range 5000 {
		docs = append(docs, ttldb.Document{"_id": i})
	}
	mustInsert(t, c, docs...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Aggregate(ctx, bson.A{stage("$group", bson.D{{Key: "_id", Value: "$_id"}})})
	require.ErrorIs(t, err, context.Canceled)

	// Cancelled between batches of the cursor.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	cur, err := c.Aggregate(ctx, bson.A{stage("$set", bson.D{{Key: "x", Value: 1}})})
	require.NoError(t, err)
	n := 0
	for cur.Next(ctx) {
		if n++; n == 10 {
			cancel()
		}
	}
	require.ErrorIs(t, cur.Err(), context.Canceled)
	assert.Less(t, n, 5000)
}

// TestAggregateInTransaction: a pipeline reads the transaction's
// snapshot and its own writes; $out and $merge are refused in one.
func TestAggregateInTransaction(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	c := db.Collection("accounts")
	mustInsert(t, c, ttldb.Document{"_id": 1, "b": 10}, ttldb.Document{"_id": 2, "b": 20})
	sess, err := db.StartSession()
	require.NoError(t, err)
	defer sess.EndSession(ctx)
	require.NoError(t, sess.StartTransaction())
	sctx := ttldb.NewSessionContext(ctx, sess)
	_, err = c.InsertOne(sctx, ttldb.Document{"_id": 3, "b": 5})
	require.NoError(t, err)
	_, err = c.InsertOne(ctx, ttldb.Document{"_id": 4, "b": 100}) // outside: after the snapshot
	require.NoError(t, err)
	sum := bson.A{stage("$group", bson.D{{Key: "_id", Value: nil}, {Key: "t", Value: bson.D{{Key: "$sum", Value: "$b"}}}})}
	cur, err := c.Aggregate(sctx, sum)
	require.NoError(t, err)
	var out []ttldb.Document
	require.NoError(t, cur.All(ctx, &out))
	require.Len(t, out, 1)
	assert.EqualValues(t, 35, out[0]["t"], "the snapshot and the transaction's own insert")
	_, err = c.Aggregate(sctx, bson.A{stage("$out", "copy")})
	require.ErrorIs(t, err, ttldb.ErrNotInTransaction)
	require.NoError(t, sess.AbortTransaction(ctx))
	assert.EqualValues(t, 130, aggregateAll(t, c, sum)[0]["t"])
}

// TestAggregateOut: $out replaces the target's documents, keeping its
// indexes; output that cannot be stored changes nothing.
func TestAggregateOut(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	src := db.Collection("events")
	mustInsert(t, src, ttldb.Document{"_id": 1, "u": "a"}, ttldb.Document{"_id": 2, "u": "b"}, ttldb.Document{"_id": 3, "u": "a"})
	dst := db.Collection("per_user")
	_, err := dst.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("n")}})
	require.NoError(t, err)
	mustInsert(t, dst, ttldb.Document{"_id": "old", "n": 0})
	cur, err := src.Aggregate(ctx, bson.A{
		stage("$group", bson.D{{Key: "_id", Value: "$u"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}),
		stage("$out", "per_user"),
	})
	require.NoError(t, err)
	assert.False(t, cur.Next(ctx), "$out returns nothing")
	got := aggregateAll(t, dst, bson.A{stage("$sort", bson.D{{Key: "_id", Value: 1}})})
	// {$sum: 1} counts in a long: a Go int is a long in ttldb.
	assert.Equal(t, []ttldb.Document{{"_id": "a", "n": int64(2)}, {"_id": "b", "n": int64(1)}}, got)
	specs, err := dst.Indexes(ctx)
	require.NoError(t, err)
	assert.Len(t, specs, 2, "the target keeps its index")

	// Duplicate _id values in the output: an error, and the target is
	// unchanged.
	_, err = src.Aggregate(ctx, bson.A{stage("$project", bson.D{{Key: "_id", Value: "$u"}}), stage("$out", "per_user")})
	require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
	assert.Equal(t, got, aggregateAll(t, dst, bson.A{stage("$sort", bson.D{{Key: "_id", Value: 1}})}))
}

// TestAggregateMergeRollsUpIntoATTLCollection: the typical use of
// $merge, raw events rolled up per minute into a longer-lived TTL
// collection, run twice (the second run merges into the first's).
func TestAggregateMergeRollsUpIntoATTLCollection(t *testing.T) {
	db, clock := openStore(t)
	ctx := context.Background()
	raw := db.Collection("raw")
	rollup := db.Collection("per_minute")
	_, err := rollup.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("minute")}, ExpireAfterSeconds: ttldb.Seconds(86400)})
	require.NoError(t, err)
	t0 := clock.Now().Truncate(time.Minute)
	for i := range 10 {
		mustInsert(t, raw, ttldb.Document{"route": "/a", "at": t0.Add(time.Duration(i*10) * time.Second)})
	}
	pipeline := bson.A{
		stage("$group", bson.D{
			{Key: "_id", Value: bson.D{{Key: "route", Value: "$route"}, {Key: "minute", Value: bson.D{{Key: "$dateTrunc", Value: bson.D{{Key: "date", Value: "$at"}, {Key: "unit", Value: "minute"}}}}}}},
			{Key: "minute", Value: bson.D{{Key: "$min", Value: bson.D{{Key: "$dateTrunc", Value: bson.D{{Key: "date", Value: "$at"}, {Key: "unit", Value: "minute"}}}}}}},
			{Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
		}),
		stage("$merge", bson.D{{Key: "into", Value: "per_minute"}, {Key: "whenMatched", Value: "replace"}}),
	}
	_, err = raw.Aggregate(ctx, pipeline)
	require.NoError(t, err)
	got := aggregateAll(t, rollup, bson.A{stage("$sort", bson.D{{Key: "minute", Value: 1}})})
	require.Len(t, got, 2)
	assert.EqualValues(t, 6, got[0]["n"])
	assert.EqualValues(t, 4, got[1]["n"])
	assert.Equal(t, t0, got[0]["minute"])
	when, ok, err := rollup.ExpiresAt(ctx, got[0]["_id"])
	require.NoError(t, err)
	require.True(t, ok, "the rolled-up document is under the TTL index")
	assert.Equal(t, t0.Add(24*time.Hour), when)

	mustInsert(t, raw, ttldb.Document{"route": "/a", "at": t0.Add(5 * time.Second)})
	_, err = raw.Aggregate(ctx, pipeline)
	require.NoError(t, err)
	got = aggregateAll(t, rollup, bson.A{stage("$sort", bson.D{{Key: "minute", Value: 1}})})
	require.Len(t, got, 2)
	assert.EqualValues(t, 7, got[0]["n"], "replaced by the second run's count")

	// whenMatched: fail.
	_, err = raw.Aggregate(ctx, bson.A{pipeline[0], stage("$merge", bson.D{{Key: "into", Value: "per_minute"}, {Key: "whenMatched", Value: "fail"}})})
	require.ErrorIs(t, err, ttldb.ErrDuplicateKey)
	// on a field without a unique index: refused.
	_, err = raw.Aggregate(ctx, bson.A{pipeline[0], stage("$merge", bson.D{{Key: "into", Value: "per_minute"}, {Key: "on", Value: "minute"}})})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
}

// TestAggregateLookupAndUnionWith: $lookup's equality (an array local
// field matches any element; a missing one matches null and missing) and
// $unionWith with a sub-pipeline.
func TestAggregateLookupAndUnionWith(t *testing.T) {
	db, _ := openStore(t)
	orders := db.Collection("orders")
	items := db.Collection("items")
	mustInsert(t, orders,
		ttldb.Document{"_id": 1, "item": "almonds"},
		ttldb.Document{"_id": 2, "item": bson.A{"pecans", "almonds"}},
		ttldb.Document{"_id": 3},
	)
	mustInsert(t, items,
		ttldb.Document{"_id": 10, "sku": "almonds"},
		ttldb.Document{"_id": 11, "sku": "pecans"},
		ttldb.Document{"_id": 12},
	)
	out := aggregateAll(t, orders, bson.A{
		stage("$lookup", bson.D{{Key: "from", Value: "items"}, {Key: "localField", Value: "item"}, {Key: "foreignField", Value: "sku"}, {Key: "as", Value: "inv"}}),
		stage("$project", bson.D{{Key: "ids", Value: "$inv._id"}}),
		stage("$sort", bson.D{{Key: "_id", Value: 1}}),
	})
	require.Len(t, out, 3)
	assert.ElementsMatch(t, []any{10}, out[0]["ids"])
	assert.ElementsMatch(t, []any{10, 11}, out[1]["ids"])
	assert.ElementsMatch(t, []any{12}, out[2]["ids"], "missing matches missing")

	out = aggregateAll(t, orders, bson.A{
		stage("$project", bson.D{{Key: "_id", Value: 1}}),
		stage("$unionWith", bson.D{{Key: "coll", Value: "items"}, {Key: "pipeline", Value: bson.A{stage("$match", bson.D{{Key: "sku", Value: "pecans"}}), stage("$project", bson.D{{Key: "_id", Value: 1}})}}}),
	})
	assert.Equal(t, []any{1, 2, 3, 11}, ids(out))
}

func TestAggregateMissingCollection(t *testing.T) {
	db, _ := openStore(t)
	out := aggregateAll(t, db.Collection("none"), bson.A{stage("$count", "n")})
	assert.Empty(t, out)
	ex, err := db.Collection("none").ExplainAggregate(context.Background(), bson.A{stage("$match", bson.D{{Key: "a", Value: 1}})})
	require.NoError(t, err)
	assert.Equal(t, "EOF", ex.Read.Stage)
}

// TestAggregateWhileWriting: pipelines (a streaming $group, an index
// sort, a $lookup) run while a writer inserts, updates (moving documents
// along the index the $group streams in) and deletes, and TTL passes
// expire documents: each group appears once, the limit holds, and
// nothing races (go test -race).
func TestAggregateWhileWriting(t *testing.T) {
	db, clock := openStore(t)
	ctx := context.Background()
	c := db.Collection("events")
	users := db.Collection("users")
	_, err := c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("user")}})
	require.NoError(t, err)
	_, err = c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	for u := range 10 {
		mustInsert(t, users, ttldb.Document{"_id": u, "name": "u"})
	}
	done := make(chan struct{})
	writerErr := make(chan error, 1)
	go func() {
		defer close(writerErr)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if _, err := c.InsertOne(ctx, ttldb.Document{"_id": i, "user": i % 10, "at": clock.Now()}); err != nil {
				writerErr <- err
				return
			}
			if i%7 == 0 {
				if _, err := c.UpdateOne(ctx, ttldb.Document{"_id": i / 2}, ttldb.Document{"$set": ttldb.Document{"user": (i + 3) % 10}}); err != nil {
					writerErr <- err
					return
				}
			}
			if i%11 == 0 {
				if _, err := c.DeleteOne(ctx, ttldb.Document{"_id": i / 3}); err != nil {
					writerErr <- err
					return
				}
			}
			if i%500 == 0 {
				clock.Advance(30 * time.Second)
				if _, err := db.RunTTLPass(ctx); err != nil {
					writerErr <- err
					return
				}
			}
		}
	}()
	pipelines := []bson.A{
		{stage("$group", bson.D{{Key: "_id", Value: "$user"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}})},
		{stage("$sort", bson.D{{Key: "at", Value: 1}}), stage("$limit", 50), stage("$group", bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}})},
		{stage("$match", bson.D{{Key: "user", Value: 3}}), stage("$lookup", bson.D{{Key: "from", Value: "users"}, {Key: "localField", Value: "user"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "u"}}), stage("$unwind", "$u"), stage("$count", "n")},
	}
	for round := range 60 {
		p := pipelines[round%len(pipelines)]
		out := aggregateAll(t, c, p)
		switch round % len(pipelines) {
		case 0:
			seen := map[any]bool{}
			for _, d := range out {
				require.False(t, seen[d["_id"]], "a group appears once: %v", out)
				seen[d["_id"]] = true
			}
		case 1:
			if len(out) == 1 {
				assert.LessOrEqual(t, out[0]["n"], int64(50))
			}
		}
	}
	close(done)
	require.NoError(t, <-writerErr)
}
