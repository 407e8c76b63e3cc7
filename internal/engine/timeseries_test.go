package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// weatherOpts is the manual's weather24h collection, with a settable span.
func weatherOpts(span int32, expire *int32) CollectionOptions {
	ts := &TimeSeriesOptions{TimeField: "timestamp", MetaField: "sensor"}
	if span > 0 {
		ts.BucketMaxSpanSeconds, ts.BucketRoundingSeconds = span, span
	}
	return CollectionOptions{TimeSeries: ts, ExpireAfterSeconds: expire}
}

// openTS opens a quiet DB on a fake clock at start and creates a
// time-series collection "w".
func openTS(t *testing.T, start time.Time, opts CollectionOptions, dbOpts ...Option) (*DB, *ttltest.Clock, *Collection) {
	t.Helper()
	clk := ttltest.NewClock(start)
	db, err := Open(append([]Option{WithClock(clk), quiet(MonitorOptions{})}, dbOpts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	c, err := db.CreateCollection(context.Background(), "w", opts)
	require.NoError(t, err)
	return db, clk, c
}

func tsPass(t *testing.T, db *DB) PassResult {
	t.Helper()
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	return res
}

func TestTimeSeriesCreateRefusals(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	ts := func(o TimeSeriesOptions) *TimeSeriesOptions { return &o }
	cases := []struct {
		name string
		opts CollectionOptions
		also error
	}{
		{"no timeField", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{})}, ErrInvalidOptions},
		{"timeField _id", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "_id"})}, ErrInvalidOptions},
		{"timeField dotted", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "a.b"})}, ErrInvalidOptions},
		{"timeField $", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "$t"})}, ErrInvalidOptions},
		{"metaField _id", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "t", MetaField: "_id"})}, ErrInvalidOptions},
		{"metaField = timeField", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "t", MetaField: "t"})}, ErrInvalidOptions},
		{"bad granularity", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "t", Granularity: "days"})}, ErrInvalidOptions},
		{"granularity and span", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "t", Granularity: GranularityHours, BucketMaxSpanSeconds: 60, BucketRoundingSeconds: 60})}, ErrInvalidOptions},
		{"span without rounding", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "t", BucketMaxSpanSeconds: 60})}, ErrInvalidOptions},
		{"rounding without span", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "t", BucketRoundingSeconds: 60})}, ErrInvalidOptions},
		{"span != rounding", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "t", BucketMaxSpanSeconds: 120, BucketRoundingSeconds: 60})}, ErrInvalidOptions},
		{"span negative", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "t", BucketMaxSpanSeconds: -5, BucketRoundingSeconds: -5})}, ErrInvalidOptions},
		{"span too long", CollectionOptions{TimeSeries: ts(TimeSeriesOptions{TimeField: "t", BucketMaxSpanSeconds: MaxBucketSpanSeconds + 1, BucketRoundingSeconds: MaxBucketSpanSeconds + 1})}, ErrInvalidOptions},
		{"capped", CollectionOptions{Capped: true, MaxDocuments: 10, TimeSeries: ts(TimeSeriesOptions{TimeField: "t"})}, ErrInvalidOptions},
		{"hide expired", CollectionOptions{HideExpired: true, TimeSeries: ts(TimeSeriesOptions{TimeField: "t"})}, ErrInvalidOptions},
		{"negative expireAfterSeconds", CollectionOptions{ExpireAfterSeconds: Seconds(-1), TimeSeries: ts(TimeSeriesOptions{TimeField: "t"})}, ErrInvalidTTL},
		{"expireAfterSeconds without timeseries", CollectionOptions{ExpireAfterSeconds: Seconds(60)}, ErrInvalidOptions},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("c%d", i)
			_, err := db.CreateCollection(context.Background(), name, tc.opts)
			require.ErrorIs(t, err, ErrTimeSeries)
			require.ErrorIs(t, err, tc.also)
			names, err := db.ListCollectionNames(context.Background())
			require.NoError(t, err)
			require.NotContains(t, names, name, "a refused collection is not created")
		})
	}
}

func TestTimeSeriesGranularityDefaults(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	for _, tc := range []struct {
		g              Granularity
		span, rounding int32
	}{{"", 3600, 60}, {GranularitySeconds, 3600, 60}, {GranularityMinutes, 86400, 3600}, {GranularityHours, 2592000, 86400}} {
		c, err := db.CreateCollection(context.Background(), "g"+string(tc.g), CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", Granularity: tc.g}})
		require.NoError(t, err)
		info, ok, err := c.TimeSeriesInfo(context.Background())
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, tc.span, info.Options.BucketMaxSpanSeconds, tc.g)
		require.Equal(t, tc.rounding, info.Options.BucketRoundingSeconds, tc.g)
	}
	c, err := db.CreateCollection(context.Background(), "explicit", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", BucketMaxSpanSeconds: 600, BucketRoundingSeconds: 600}})
	require.NoError(t, err)
	info, _, _ := c.TimeSeriesInfo(context.Background())
	require.Equal(t, int32(600), info.Options.BucketMaxSpanSeconds)
	_, ok, err := db.Collection("plain").TimeSeriesInfo(context.Background())
	require.NoError(t, err)
	require.False(t, ok)
}

func TestTimeSeriesInsertRefusals(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(0, nil))
	good := Document{"timestamp": t0, "sensor": "a", "temp": 1}
	for name, doc := range map[string]Document{
		"no time":          {"sensor": "a", "temp": 1},
		"time is a string": {"timestamp": "2026-01-01T00:00:00Z", "sensor": "a"},
		"time is a number": {"timestamp": 1767225600, "sensor": "a"},
		"nil *time.Time":   {"timestamp": (*time.Time)(nil), "sensor": "a"},
		"meta is an array": {"timestamp": t0, "sensor": []any{"a", "b"}},
	} {
		_, err := c.InsertMany(context.Background(), []Document{good, doc})
		require.ErrorIs(t, err, ErrTimeSeries, name)
		require.ErrorIs(t, err, ErrInvalidDocument, name)
		n, err := c.CountDocuments(context.Background(), nil)
		require.NoError(t, err)
		require.Zero(t, n, "%s: an insert that fails writes nothing", name)
	}
	_, err := c.InsertOne(context.Background(), Document{"timestamp": t0, "bad": make(chan int)})
	require.ErrorIs(t, err, ErrInvalidDocument)
}

func TestTimeSeriesIDsGeneratedAndNotUnique(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(0, nil))
	res, err := c.InsertOne(context.Background(), Document{"timestamp": t0, "sensor": "a"})
	require.NoError(t, err)
	require.IsType(t, ObjectID{}, res.InsertedID)
	_, err = c.InsertMany(context.Background(), []Document{{"_id": 7, "timestamp": t0, "sensor": "a"}, {"_id": 7, "timestamp": t0.Add(time.Second), "sensor": "a"}})
	require.NoError(t, err, "measurement _ids need not be unique")
	n, err := c.CountDocuments(context.Background(), Document{"_id": 7})
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
}

func TestTimeSeriesBucketing(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(3600, nil))
	ts := c.timeSeries()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	_, err := c.InsertMany(context.Background(), []Document{
		{"timestamp": at(10 * time.Minute), "sensor": "a", "v": 1},
		{"timestamp": at(5 * time.Minute), "sensor": "a", "v": 2},
		{"timestamp": at(59 * time.Minute), "sensor": "a", "v": 3},
		{"timestamp": at(10 * time.Minute), "sensor": "b", "v": 4},
		{"timestamp": at(70 * time.Minute), "sensor": "a", "v": 5},
		{"timestamp": at(10 * time.Minute), "v": 6},
	})

	require.NoError(t, err)
	var got []*bucket
	ts.buckets.Ascend(func(b *bucket) bool { got = append(got, b); return true })
	require.Len(t, got, 4)
	a1 := got[0]
	require.Equal(t, "a", a1.meta)
	require.Equal(t, 3, a1.len())
	require.Equal(t, t0, a1.start)
	require.Equal(t, at(5*time.Minute), a1.min)
	require.Equal(t, at(59*time.Minute), a1.max)
	require.Equal(t, "b", got[1].meta)
	require.Equal(t, at(time.Hour), got[2].start, "the start is the first measurement's time rounded down")
	require.False(t, got[3].hasMeta)

	// A full bucket opens a new one.
	docs := make([]Document, TimeSeriesBucketMaxCount+1)
	for i := range docs {
		docs[i] = Document{"timestamp": at(2 * time.Hour), "sensor": "full"}
	}
	_, err = c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	info, _, _ := c.TimeSeriesInfo(context.Background())
	require.Equal(t, 6, info.Buckets)
	require.Equal(t, 6+TimeSeriesBucketMaxCount+1, info.Measurements)
}

func TestTimeSeriesBucketStartRoundsDownBefore1970(t *testing.T) {
	start := time.Date(1960, 5, 1, 12, 34, 56, 0, time.UTC)
	_, _, c := openTS(t, start, weatherOpts(3600, nil))
	_, err := c.InsertOne(context.Background(), Document{"timestamp": start, "sensor": "a"})
	require.NoError(t, err)
	var b *bucket
	c.timeSeries().buckets.Ascend(func(x *bucket) bool { b = x; return false })
	require.Equal(t, time.Date(1960, 5, 1, 12, 0, 0, 0, time.UTC), b.start)
}

func TestTimeSeriesReads(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(3600, nil))
	var docs []Document
	for i := range 20 {
		docs = append(docs, Document{"_id": i, "timestamp": t0.Add(time.Duration(i) * 10 * time.Minute), "sensor": fmt.Sprintf("s%d", i%3), "temp": float64(i)})
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)

	one, err := c.FindOne(context.Background(), Document{"_id": 4}).Document()
	require.NoError(t, err)
	require.Equal(t, Document{"_id": 4, "timestamp": t0.Add(40 * time.Minute), "sensor": "s1", "temp": 4.0}, one)

	got, err := findDocs(c, Document{"sensor": "s0", "timestamp": Document{"$gte": t0.Add(time.Hour)}},
		FindOptions{Sort: []IndexKey{Desc("temp")}, Projection: Document{"temp": 1, "_id": 0}})
	require.NoError(t, err)
	require.Equal(t, []Document{{"temp": 18.0}, {"temp": 15.0}, {"temp": 12.0}, {"temp": 9.0}, {"temp": 6.0}}, got)

	n, err := c.CountDocuments(context.Background(), Document{"temp": Document{"$lt": 5}})
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	n, err = c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, 20, n)

	got, err = findDocs(c, nil, FindOptions{Sort: []IndexKey{Asc("timestamp")}, Skip: 2, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, 2, got[0]["_id"])
	require.Equal(t, 3, got[1]["_id"])

	err = c.FindOne(context.Background(), Document{"sensor": "nope"}).Err()
	require.ErrorIs(t, err, ErrNotFound)

	// Buckets are pruned by meta and by min/max time before unpacking.
	ex, err := c.Explain(context.Background(), Document{"sensor": "s1", "timestamp": Document{"$lt": t0.Add(time.Hour)}})
	require.NoError(t, err)
	require.Equal(t, "COLLSCAN", ex.Stage)
	require.Equal(t, 1, ex.BucketsUnpacked, "only s1's first-hour bucket may hold a match")
	require.Greater(t, ex.BucketsExamined, ex.BucketsUnpacked)
	require.Equal(t, 2, ex.NReturned)
}

func TestTimeSeriesIndexOnMetaAndTime(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(3600, nil))
	var docs []Document
	for i := range 100 {
		docs = append(docs, Document{"timestamp": t0.Add(time.Duration(i) * time.Hour), "sensor": fmt.Sprintf("s%d", i%10), "v": i})
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)

	name, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("sensor"), Asc("timestamp")}})
	require.NoError(t, err)
	ex, err := c.Explain(context.Background(), Document{"sensor": "s3"})
	require.NoError(t, err)
	require.Equal(t, "IXSCAN", ex.Stage)
	require.Equal(t, name, ex.IndexName)
	require.Equal(t, 10, ex.KeysExamined, "only s3's buckets are visited")
	require.Equal(t, 10, ex.NReturned)

	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("timestamp")}})
	require.NoError(t, err)
	from := t0.Add(50*time.Hour + 30*time.Minute)
	ex, err = c.Explain(context.Background(), Document{"timestamp": Document{"$gte": from, "$lt": t0.Add(53 * time.Hour)}})
	require.NoError(t, err)
	require.Equal(t, "timestamp_1", ex.IndexName)
	require.Equal(t, 2, ex.NReturned, "hours 51 and 52")
	require.LessOrEqual(t, ex.KeysExamined, 4, "the walk covers one span before the bound, not the whole collection")
	// The widening keeps a bucket whose start is before the bound but
	// whose measurements are after it.
	got, err := findDocs(c, Document{"timestamp": Document{"$gte": t0.Add(50*time.Hour + 1)}}, FindOptions{Sort: []IndexKey{Asc("timestamp")}, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 51, got[0]["v"])

	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	require.Len(t, specs, 2)
	require.NoError(t, c.DropIndex(context.Background(), "timestamp_1"))
	require.ErrorIs(t, c.DropIndex(context.Background(), "timestamp_1"), ErrNotFound)
}

func TestTimeSeriesIndexWithinSpanFindsEarlierStartBucket(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(3600, nil))
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("timestamp")}})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"timestamp": t0.Add(50 * time.Minute), "sensor": "a"}})
	require.NoError(t, err)
	// The bucket starts at t0, before the bound; its measurement is after.
	n, err := c.CountDocuments(context.Background(), Document{"timestamp": Document{"$gt": t0.Add(30 * time.Minute)}})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

func TestTimeSeriesIndexRefusals(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(0, nil))
	for name, tc := range map[string]struct {
		m    IndexModel
		also error
	}{
		"inside the timeField": {IndexModel{Keys: []IndexKey{Asc("timestamp.x")}}, ErrInvalidIndex},
		"unique":               {IndexModel{Keys: []IndexKey{Asc("sensor")}, Unique: true}, ErrInvalidIndex},
		"sparse":               {IndexModel{Keys: []IndexKey{Asc("sensor")}, Sparse: true}, ErrInvalidIndex},
		"partial on data":      {IndexModel{Keys: []IndexKey{Asc("sensor")}, PartialFilterExpression: Document{"temp": 1}}, ErrInvalidIndex},
	} {
		_, err := c.CreateIndex(context.Background(), tc.m)
		require.ErrorIs(t, err, ErrTimeSeries, name)
		require.ErrorIs(t, err, tc.also, name)
	}
	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	require.Empty(t, specs)
}

func TestTimeSeriesDeleteByFilter(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(3600, nil))
	var docs []Document
	for i := range 10 {
		docs = append(docs, Document{"_id": i, "timestamp": t0.Add(time.Duration(i) * time.Minute), "sensor": "a", "temp": i})
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	n, err := c.DeleteMany(context.Background(), Document{"temp": Document{"$gte": 5}})
	require.NoError(t, err)
	require.EqualValues(t, 5, n.DeletedCount)
	n, err = c.DeleteOne(context.Background(), Document{"sensor": "a"})
	require.NoError(t, err)
	require.EqualValues(t, 1, n.DeletedCount)
	left, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, 4, left)
	var b *bucket
	c.timeSeries().buckets.Ascend(func(x *bucket) bool { b = x; return false })
	require.Equal(t, t0.Add(time.Minute), b.min, "min/max follow the measurements left")
	require.Equal(t, t0.Add(4*time.Minute), b.max)
	n, err = c.DeleteMany(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, 4, n.DeletedCount)
	info, _, _ := c.TimeSeriesInfo(context.Background())
	require.Zero(t, info.Buckets, "a bucket left empty is removed")
}

func TestTimeSeriesUpdateMetaOnly(t *testing.T) {
	_, clk, c := openTS(t, t0, weatherOpts(3600, nil))
	_, err := c.InsertMany(context.Background(), []Document{
		{"timestamp": t0, "sensor": Document{"id": 1, "loc": "x"}, "temp": 1},
		{"timestamp": t0.Add(time.Minute), "sensor": Document{"id": 1, "loc": "x"}, "temp": 2},
		{"timestamp": t0, "sensor": Document{"id": 2, "loc": "y"}, "temp": 3},
	})

	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("sensor.loc")}})
	require.NoError(t, err)
	res, err := c.UpdateMany(context.Background(), Document{"sensor.id": 1}, Document{"$set": Document{"sensor.loc": "z"}})
	require.NoError(t, err)
	require.Equal(t, &UpdateResult{MatchedCount: 2, ModifiedCount: 2}, res)
	n, err := c.CountDocuments(context.Background(), Document{"sensor.loc": "z"})
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	ex, err := c.Explain(context.Background(), Document{"sensor.loc": "z"})
	require.NoError(t, err)
	require.Equal(t, "IXSCAN", ex.Stage, "the index follows the new meta value")
	require.Equal(t, 2, ex.NReturned)

	// New measurements with the new meta go to a new bucket, not the moved one.
	_, err = c.InsertOne(context.Background(), Document{"timestamp": t0, "sensor": Document{"id": 1, "loc": "x"}, "temp": 9})
	require.NoError(t, err)
	n, _ = c.CountDocuments(context.Background(), Document{"sensor.loc": "x"})
	require.EqualValues(t, 1, n)

	refusals := map[string]func() error{
		"data field": func() error {
			_, err := c.UpdateMany(context.Background(), Document{"sensor.id": 1}, Document{"$set": Document{"temp": 5}})
			return err
		},
		"time field": func() error {
			_, err := c.UpdateMany(context.Background(), nil, Document{"$set": Document{"timestamp": clk.Now()}})
			return err
		},
		"filter on data": func() error {
			_, err := c.UpdateMany(context.Background(), Document{"temp": 1}, Document{"$set": Document{"sensor.loc": "q"}})
			return err
		},
		"filter on time": func() error {
			_, err := c.UpdateMany(context.Background(), Document{"timestamp": t0}, Document{"$set": Document{"sensor.loc": "q"}})
			return err
		},
		"rename out of meta": func() error {
			_, err := c.UpdateMany(context.Background(), nil, Document{"$rename": Document{"sensor.loc": "loc"}})
			return err
		},
		"UpdateOne": func() error {
			_, err := c.UpdateOne(context.Background(), nil, Document{"$set": Document{"sensor.loc": "q"}})
			return err
		},
		"upsert": func() error {
			_, err := c.UpdateMany(context.Background(), nil, Document{"$set": Document{"sensor.loc": "q"}}, UpdateOptions{Upsert: true})
			return err
		},
		"replace": func() error {
			_, err := c.ReplaceOne(context.Background(), nil, Document{"timestamp": t0})
			return err
		},
		"meta becomes array": func() error {
			_, err := c.UpdateMany(context.Background(), nil, Document{"$set": Document{"sensor": []any{1}}})
			return err
		},
	}
	for name, f := range refusals {
		err := f()
		require.ErrorIs(t, err, ErrTimeSeries, name)
		require.ErrorIs(t, err, ErrInvalidUpdate, name)
	}
	n, _ = c.CountDocuments(context.Background(), Document{"sensor.loc": "q"})
	require.Zero(t, n, "refused updates change nothing")
	n, _ = c.CountDocuments(context.Background(), Document{"sensor.loc": "z"})
	require.EqualValues(t, 2, n)
}

func TestTimeSeriesDropAndErrors(t *testing.T) {
	db, _, c := openTS(t, t0, weatherOpts(0, nil))
	_, err := c.InsertOne(context.Background(), Document{"timestamp": t0, "sensor": "a"})
	require.NoError(t, err)
	require.NoError(t, db.DropCollection(context.Background(), "w"))
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.Zero(t, n)
	// After the drop, the name makes an ordinary collection again.
	_, err = c.InsertOne(context.Background(), Document{"x": 1})
	require.NoError(t, err)
	_, ok, _ := c.TimeSeriesInfo(context.Background())
	require.False(t, ok)
	require.True(t, errors.Is(db.Close(), nil))
	_, err = findDocs(c, nil)
	require.ErrorIs(t, err, ErrClosed)
}

func TestTimeSeriesInsertStructs(t *testing.T) {
	type reading struct {
		At     time.Time `bson:"timestamp"`
		Sensor string    `bson:"sensor"`
		Temp   float64   `bson:"temp"`
	}
	_, _, c := openTS(t, t0, weatherOpts(0, nil))
	_, err := c.InsertMany(context.Background(), []reading{{t0, "a", 1.5}, {t0.Add(time.Minute), "a", 2.5}})
	require.NoError(t, err)
	var got reading
	require.NoError(t, c.FindOne(context.Background(), Document{"temp": 2.5}).Decode(&got))
	require.Equal(t, reading{t0.Add(time.Minute), "a", 2.5}, got)
	_, err = c.InsertOne(context.Background(), struct {
		Sensor string `bson:"sensor"`
	}{"no time"})

	require.ErrorIs(t, err, ErrTimeSeries)
}
