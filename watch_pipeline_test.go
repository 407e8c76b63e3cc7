package ttldb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb"
)

// The user task: watch a collection through a pipeline, as with the
// driver's Watch(ctx, pipeline, opts).

// drainDocs reads every ready event of cs as the pipeline left it.
func drainDocs(t *testing.T, cs *ttldb.ChangeStream) []ttldb.Document {
	t.Helper()
	var out []ttldb.Document
	for cs.TryNext(context.Background()) {
		var d ttldb.Document
		require.NoError(t, cs.Decode(&d))
		out = append(out, d)
	}
	require.NoError(t, cs.Err())
	return out
}

// watchPipeline opens a stream of collection "s" with pipeline.
func watchPipeline(t *testing.T, db *ttldb.DB, pipeline any, opts ...ttldb.ChangeStreamOptions) *ttldb.ChangeStream {
	t.Helper()
	cs, err := db.Collection("s").Watch(context.Background(), pipeline, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close(context.Background()) })
	return cs
}

// sessionWrites inserts ada's and bob's sessions, updates one, replaces
// one, deletes one.
func sessionWrites(t *testing.T, db *ttldb.DB) {
	t.Helper()
	ctx := context.Background()
	c := db.Collection("s")
	_, err := c.InsertMany(ctx, []any{
		ttldb.Document{"_id": 1, "user": "ada", "n": 1},
		ttldb.Document{"_id": 2, "user": "bob", "n": 5},
	})
	require.NoError(t, err)
	_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 7}}}})
	require.NoError(t, err)
	_, err = c.ReplaceOne(ctx, ttldb.Document{"_id": 2}, ttldb.Document{"user": "bob", "n": 9})
	require.NoError(t, err)
	_, err = c.DeleteOne(ctx, ttldb.Document{"_id": 1})
	require.NoError(t, err)
	_, err = db.Collection("other").InsertOne(ctx, ttldb.Document{"_id": 1, "user": "ada"})
	require.NoError(t, err)
}

// kindsAndIDs returns "type:_id" for each document of an event stream.
func kindsAndIDs(docs []ttldb.Document) []string {
	var out []string
	for _, d := range docs {
		key, _ := d["documentKey"].(ttldb.Document)
		out = append(out, fmt.Sprintf("%v:%v", d["operationType"], key["_id"]))
	}
	return out
}

// TestWatchPipelineMatch: $match on every kind of event field, with the
// query language, as mongo.Pipeline ([]bson.D), bson.A and []Document.
func TestWatchPipelineMatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match any
		want  []string
	}{
		{"operationType", bson.D{{Key: "operationType", Value: "insert"}}, []string{"insert:1", "insert:2"}},
		{"operationType $in", ttldb.Document{"operationType": ttldb.Document{"$in": []any{"update", "delete"}}}, []string{"update:1", "delete:1"}},
		{"documentKey", bson.D{{Key: "documentKey._id", Value: 2}}, []string{"insert:2", "replace:2"}},
		{"fullDocument.x", ttldb.Document{"fullDocument.n": ttldb.Document{"$gte": 5}}, []string{"insert:2", "replace:2"}},
		{"updateDescription", ttldb.Document{"updateDescription.updatedFields.n": ttldb.Document{"$exists": true}}, []string{"update:1"}},
		{"$or", ttldb.Document{"$or": []any{ttldb.Document{"operationType": "delete"}, ttldb.Document{"fullDocument.user": "bob"}}},
			[]string{"insert:2", "replace:2", "delete:1"}},
		{"ns.coll", ttldb.Document{"ns.coll": "s"}, []string{"insert:1", "insert:2", "update:1", "replace:2", "delete:1"}},
		{"_id", ttldb.Document{"_id._data": ttldb.Document{"$exists": true}, "operationType": "replace"}, []string{"replace:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openStore(t)
			for _, form := range []any{
				[]bson.D{{{Key: "$match", Value: tc.match}}}, // mongo.Pipeline's type
				bson.A{bson.M{"$match": tc.match}},
				[]ttldb.Document{{"$match": tc.match}},
			} {
				watchPipeline(t, db, form)
			}
			streams := []*ttldb.ChangeStream{
				watchPipeline(t, db, []bson.D{{{Key: "$match", Value: tc.match}}}),
				watchPipeline(t, db, bson.A{bson.M{"$match": tc.match}}),
				watchPipeline(t, db, []ttldb.Document{{"$match": tc.match}}),
			}
			sessionWrites(t, db)
			for _, cs := range streams {
				assert.Equal(t, tc.want, kindsAndIDs(drainDocs(t, cs)))
			}
		})
	}
}

// TestWatchPipelineMatchOnTTLDeletes: a TTL deletion is a delete event
// without fullDocument (as MongoDB's); a $match on fullDocument never
// passes one, and one on the pre-image (FullDocumentBeforeChange) picks a
// user's expired sessions.
func TestWatchPipelineMatchOnTTLDeletes(t *testing.T) {
	db, clk := openStore(t)
	ctx := context.Background()
	c := db.Collection("s")
	_, err := c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	onFull := watchPipeline(t, db, bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "fullDocument.user", Value: "ada"}}}}})
	adaExpired := watchPipeline(t, db, bson.A{bson.D{{Key: "$match", Value: bson.D{
		{Key: "operationType", Value: "delete"}, {Key: "expired", Value: true}, {Key: "fullDocumentBeforeChange.user", Value: "ada"},
	}}}}, ttldb.ChangeStreamOptions{FullDocumentBeforeChange: ttldb.FullDocumentWhenAvailable})
	noFull := watchPipeline(t, db, bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "expired", Value: true}, {Key: "fullDocument", Value: bson.D{{Key: "$exists", Value: false}}}}}}})
	for i, user := range []string{"ada", "bob", "ada"} {
		_, err := c.InsertOne(ctx, ttldb.Document{"_id": i, "user": user, "at": clk.Now()})
		require.NoError(t, err)
	}
	clk.Advance(2 * time.Minute)
	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, res.Deleted)

	assert.Equal(t, []string{"insert:0", "insert:2"}, kindsAndIDs(drainDocs(t, onFull)), "a TTL delete has no fullDocument")
	got := drainDocs(t, adaExpired)
	assert.Equal(t, []string{"delete:0", "delete:2"}, kindsAndIDs(got))
	for _, d := range got {
		assert.Equal(t, true, d["expired"])
		assert.Equal(t, "at_1", d["index"])
	}
	assert.Equal(t, []string{"delete:0", "delete:1", "delete:2"}, kindsAndIDs(drainDocs(t, noFull)))
}

// TestWatchPipelineReshape: $project (inclusion, exclusion, computed),
// $addFields/$set, $unset, $replaceRoot/$replaceWith reshape what
// Current and Decode give; Event stays the event, and the resume token
// (_id) is kept.
func TestWatchPipelineReshape(t *testing.T) {
	type row struct {
		name     string
		pipeline any
		want     ttldb.Document // the first event's document, without _id
	}
	for _, tc := range []row{
		{"$project inclusion", bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "operationType", Value: 1}, {Key: "fullDocument.user", Value: 1}}}}},
			ttldb.Document{"operationType": "insert", "fullDocument": ttldb.Document{"user": "ada"}}},
		{"$project computed", bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "user", Value: "$fullDocument.user"}, {Key: "op", Value: "$operationType"}}}}},
			ttldb.Document{"user": "ada", "op": "insert"}},
		{"$project exclusion", bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "fullDocument", Value: 0}, {Key: "wallTime", Value: false}, {Key: "clusterTime", Value: 0}, {Key: "documentKey", Value: 0}}}}},
			ttldb.Document{"operationType": "insert", "ns": ttldb.Document{"coll": "s"}}},
		{"$addFields then $project", bson.A{
			bson.D{{Key: "$addFields", Value: bson.D{{Key: "user", Value: "$fullDocument.user"}, {Key: "meta.src", Value: "ttldb"}, {Key: "tag", Value: bson.D{{Key: "$literal", Value: "$notapath"}}}}}},
			bson.D{{Key: "$project", Value: bson.D{{Key: "user", Value: 1}, {Key: "meta", Value: 1}, {Key: "tag", Value: 1}}}},
		}, ttldb.Document{"user": "ada", "meta": ttldb.Document{"src": "ttldb"}, "tag": "$notapath"}},
		{"$set and $unset", bson.A{
			bson.D{{Key: "$set", Value: bson.D{{Key: "doc", Value: "$fullDocument"}}}},
			bson.D{{Key: "$unset", Value: bson.A{"fullDocument", "documentKey", "wallTime", "clusterTime", "ns"}}},
			bson.D{{Key: "$unset", Value: "doc.n"}},
		}, ttldb.Document{"operationType": "insert", "doc": ttldb.Document{"_id": 1, "user": "ada"}}},
		{"$replaceRoot keeping _id", bson.A{bson.D{{Key: "$replaceRoot", Value: bson.D{{Key: "newRoot", Value: bson.D{{Key: "_id", Value: "$_id"}, {Key: "who", Value: "$fullDocument.user"}, {Key: "list", Value: bson.A{"$operationType", "$missing", 3}}}}}}}},
			ttldb.Document{"who": "ada", "list": []any{"insert", nil, 3}}},
		{"$replaceWith $$ROOT", bson.A{bson.D{{Key: "$replaceWith", Value: "$$ROOT"}}, bson.D{{Key: "$project", Value: bson.D{{Key: "operationType", Value: 1}}}}},
			ttldb.Document{"operationType": "insert"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openStore(t)
			cs := watchPipeline(t, db, tc.pipeline)
			sessionWrites(t, db)
			require.True(t, cs.TryNext(context.Background()), "%v", cs.Err())
			var got ttldb.Document
			require.NoError(t, cs.Decode(&got))
			id, ok := got["_id"].(ttldb.Document)
			require.True(t, ok, "the resume token is kept: %v", got)
			assert.Equal(t, cs.Event().ID.String(), id["_data"])
			delete(got, "_id")
			assert.Equal(t, tc.want, got)
			assert.Equal(t, ttldb.OperationInsert, cs.Event().OperationType, "Event is the event as ttldb built it")

			cur := cs.Current()
			require.NotNil(t, cur)
			curDoc := cur.Document()
			delete(curDoc, "_id")
			assert.Equal(t, tc.want, curDoc, "Current is what Decode decodes")
		})
	}
}

// TestWatchPipelineDecodeIntoStruct: a reshaped event decodes into the
// application's struct, and so does a RawDocument of an event.
func TestWatchPipelineDecodeIntoStruct(t *testing.T) {
	type session struct {
		ID   int    `bson:"_id"`
		User string `bson:"user"`
		N    int    `bson:"n"`
	}
	type slim struct {
		Token struct {
			Data string `bson:"_data"`
		} `bson:"_id"`
		Op   string  `bson:"operationType"`
		Doc  session `bson:"doc"`
		Coll string  `bson:"coll"`
	}
	db, _ := openStore(t)
	cs := watchPipeline(t, db, []bson.D{
		{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "insert"}}}},
		{{Key: "$project", Value: bson.D{{Key: "operationType", Value: 1}, {Key: "doc", Value: "$fullDocument"}, {Key: "coll", Value: "$ns.coll"}}}},
	})
	plain := watchPipeline(t, db, nil)
	sessionWrites(t, db)
	var got []slim
	for cs.TryNext(context.Background()) {
		var s slim
		require.NoError(t, cs.Decode(&s))
		got = append(got, s)
	}
	require.NoError(t, cs.Err())
	require.Len(t, got, 2)
	assert.Equal(t, session{ID: 2, User: "bob", N: 5}, got[1].Doc)
	assert.Equal(t, "insert", got[1].Op)
	assert.Equal(t, "s", got[1].Coll)
	assert.NotEmpty(t, got[1].Token.Data)

	require.True(t, plain.TryNext(context.Background()))
	var s session
	require.NoError(t, plain.Event().FullDocument.Decode(&s), "RawDocument.Decode into a struct")
	assert.Equal(t, session{ID: 1, User: "ada", N: 1}, s)
	var bad struct {
		User int `bson:"user"`
	}
	require.ErrorIs(t, plain.Event().FullDocument.Decode(&bad), ttldb.ErrDecode)
	require.ErrorIs(t, ttldb.RawDocument(nil).Decode(&s), ttldb.ErrNotFound)
}

// TestWatchPipelineRefused: stages ttldb or MongoDB refuse in a change
// stream, and stages that would remove or change _id (the resume token),
// are ErrInvalidOptions at Watch, naming the stage.
func TestWatchPipelineRefused(t *testing.T) {
	db, _ := openStore(t)
	long := make(bson.A, ttldb.MaxPipelineStages+1)
	for i := range long {
		long[i] = bson.D{{Key: "$match", Value: bson.D{}}}
	}
	for _, tc := range []struct {
		name     string
		pipeline any
		says     string
	}{
		{"not a slice", bson.D{{Key: "$match", Value: bson.D{}}}, "slice of stages"},
		{"not a document", bson.A{"$match"}, "stage 0"},
		{"two names", bson.A{bson.D{{Key: "$match", Value: bson.D{}}, {Key: "$project", Value: bson.D{}}}}, "one field"},
		{"$group", bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$ns"}}}}}, "not allowed in a change stream"},
		{"$sort", bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "x", Value: 1}}}}}, "not allowed"},
		{"$redact", bson.A{bson.D{{Key: "$redact", Value: "$$KEEP"}}}, "not supported"},
		{"$match not a document", bson.A{bson.D{{Key: "$match", Value: 3}}}, "$match"},
		{"$match bad operator", bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$bogus", Value: 1}}}}}}}, "$match"},
		{"$project _id 0", bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}}}, "resume token"},
		{"$project computed _id", bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: "$documentKey"}}}}}, "resume token"},
		{"$project mixes", bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "a", Value: 0}, {Key: "b", Value: "$x"}}}}}, "exclusion"},
		{"$unset _id", bson.A{bson.D{{Key: "$unset", Value: "_id"}}}, "resume token"},
		{"$unset _id._data", bson.A{bson.D{{Key: "$unset", Value: bson.A{"ns", "_id._data"}}}}, "resume token"},
		{"$set _id", bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: 1}}}}}, "resume token"},
		{"$addFields _id.x", bson.A{bson.D{{Key: "$addFields", Value: bson.D{{Key: "_id.x", Value: 1}}}}}, "resume token"},
		{"unknown operator", bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$bogus", Value: bson.A{1, 2}}}}}}}}, "$bogus"},
		{"unknown variable", bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: "$$nope"}}}}}, "$$nope"},
		{"$replaceRoot without newRoot", bson.A{bson.D{{Key: "$replaceRoot", Value: bson.D{{Key: "root", Value: "$x"}}}}}, "newRoot"},
		{"too many stages", long, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.Watch(context.Background(), tc.pipeline)
			require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

// TestWatchPipelineReplaceRootChangingIDEndsTheStream: a $replaceWith
// whose result has another _id ends the stream at that event with
// ErrInvalidOptions, the token left before it, as MongoDB's does.
func TestWatchPipelineReplaceRootChangingIDEndsTheStream(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	cs := watchPipeline(t, db, bson.A{bson.D{{Key: "$replaceWith", Value: "$fullDocument"}}})
	sessionWrites(t, db)
	require.False(t, cs.TryNext(ctx))
	require.ErrorIs(t, cs.Err(), ttldb.ErrInvalidOptions)
	assert.Contains(t, cs.Err().Error(), "resume token")
	require.False(t, cs.Next(ctx), "a failed stream stays failed")
	// The stream stays before the event it could not deliver: resumed
	// without the pipeline, it starts with that event.
	tok := cs.ResumeToken()
	again := watchPipeline(t, db, nil, ttldb.ChangeStreamOptions{ResumeAfter: &tok})
	require.True(t, again.TryNext(ctx))
	assert.Equal(t, ttldb.OperationInsert, again.Event().OperationType)
	assert.Equal(t, 1, again.Event().DocumentKey.ID())

	notDoc := watchPipeline(t, db, bson.A{bson.D{{Key: "$replaceWith", Value: "$operationType"}}})
	_, err := db.Collection("s").InsertOne(ctx, ttldb.Document{"_id": 99})
	require.NoError(t, err)
	require.False(t, notDoc.TryNext(ctx))
	require.ErrorIs(t, notDoc.Err(), ttldb.ErrInvalidOptions)
	assert.Contains(t, notDoc.Err().Error(), "must give a document")
}

// TestWatchPipelineResume: a stream resumed with a pipeline goes on after
// the token of the last event it returned, the events its $match skipped
// included.
func TestWatchPipelineResume(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	match := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "fullDocument.user", Value: "bob"}}}}}
	cs := watchPipeline(t, db, match)
	sessionWrites(t, db)
	require.True(t, cs.TryNext(ctx))
	tok := cs.ResumeToken()
	resumed := watchPipeline(t, db, match, ttldb.ChangeStreamOptions{ResumeAfter: &tok})
	assert.Equal(t, []string{"replace:2"}, kindsAndIDs(drainDocs(t, resumed)))
}

// TestUpdateDescriptionTruncatedArraysAndDisambiguatedPaths: every update
// event carries truncatedArrays (empty: ttldb's updates are operator
// updates, which report a changed array whole); with ShowExpandedEvents,
// a path whose numeric component names a field or an array element is
// disambiguated, as MongoDB 6.1+ does.
func TestUpdateDescriptionTruncatedArraysAndDisambiguatedPaths(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	c := db.Collection("s")
	_, err := c.InsertMany(ctx, []any{
		ttldb.Document{"_id": "doc", "a": ttldb.Document{"0": 1}},
		ttldb.Document{"_id": "arr", "a": []any{1, 2}, "b": []any{ttldb.Document{"c": 1}}},
	})
	require.NoError(t, err)
	expanded := watchPipeline(t, db, nil, ttldb.ChangeStreamOptions{ShowExpandedEvents: true})
	plain := watchPipeline(t, db, nil)
	for _, u := range []struct {
		id     string
		update ttldb.Document
	}{
		{"doc", ttldb.Document{"$inc": ttldb.Document{"a.0": 1}}},
		{"arr", ttldb.Document{"$set": ttldb.Document{"a.1": 5, "b.0.c": 2, "x": 1}}},
		{"arr", ttldb.Document{"$unset": ttldb.Document{"b.0.c": ""}}},
		{"arr", ttldb.Document{"$pop": ttldb.Document{"a": 1}}},
	} {
		_, err := c.UpdateOne(ctx, ttldb.Document{"_id": u.id}, u.update)
		require.NoError(t, err)
	}
	var descs []*ttldb.UpdateDescription
	for expanded.TryNext(ctx) {
		if ev := expanded.Event(); ev.OperationType == ttldb.OperationUpdate {
			descs = append(descs, ev.UpdateDescription)
			assert.NotNil(t, ev.UpdateDescription.TruncatedArrays)
			assert.Empty(t, ev.UpdateDescription.TruncatedArrays)
			b, err := ev.MarshalJSON()
			require.NoError(t, err)
			assert.Contains(t, string(b), `"truncatedArrays":[]`)
		}
	}
	require.Len(t, descs, 4)
	assert.Equal(t, ttldb.Document{"a.0": []any{"a", "0"}}, descs[0].DisambiguatedPaths, "a field named 0")
	assert.Equal(t, ttldb.Document{"a.1": []any{"a", int32(1)}, "b.0.c": []any{"b", int32(0), "c"}}, descs[1].DisambiguatedPaths, "array elements")
	assert.Equal(t, ttldb.Document{"b.0.c": []any{"b", int32(0), "c"}}, descs[2].DisambiguatedPaths, "a removed path")
	assert.Nil(t, descs[3].DisambiguatedPaths, "no ambiguous path: none")
	assert.Equal(t, []any{1}, descs[3].UpdatedFields["a"], "$pop: the array whole")

	var d ttldb.Document
	for plain.TryNext(ctx) {
		if plain.Event().OperationType == ttldb.OperationUpdate {
			assert.Nil(t, plain.Event().UpdateDescription.DisambiguatedPaths, "only with ShowExpandedEvents")
			require.NoError(t, plain.Decode(&d))
		}
	}
	ud := d["updateDescription"].(ttldb.Document)
	assert.Equal(t, []any{}, ud["truncatedArrays"])
	_, has := ud["disambiguatedPaths"]
	assert.False(t, has)
	assert.True(t, strings.HasPrefix(fmt.Sprint(ud["removedFields"]), "["))
}
