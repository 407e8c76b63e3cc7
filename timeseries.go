package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// ErrTimeSeries is returned for what a time-series collection refuses, as
// MongoDB refuses it: bad time-series options, options a time-series
// collection cannot have (Capped, HideExpired, a collection-level
// ExpireAfterSeconds on an ordinary collection), a measurement without a
// date in the timeField or with an array as metaField, an update of
// anything but the metaField, a replacement, an upsert, a unique index, an
// index on a path inside the timeField, a TTL index that is not a partial TTL index
// on the timeField filtered by the metaField. The error also wraps the
// general sentinel that applies (ErrInvalidOptions, ErrInvalidDocument,
// ErrInvalidUpdate, ErrInvalidIndex or ErrInvalidTTL), so either matches.
var (
	ErrTimeSeries = engine.ErrTimeSeries
)

// Granularity is MongoDB's coarse setting of a time-series collection's
// bucket span and rounding.
type Granularity = engine.Granularity

// The granularities, with the bucket span and rounding each sets (as
// MongoDB's defaults): seconds 3600 s span, 60 s rounding (the default);
// minutes 86400 s, 3600 s; hours 2592000 s (30 days), 86400 s.
const (
	GranularitySeconds = engine.GranularitySeconds
	GranularityMinutes = engine.GranularityMinutes
	GranularityHours   = engine.GranularityHours
)

// MaxBucketSpanSeconds is the largest BucketMaxSpanSeconds (one year), as
// in MongoDB.
const (
	MaxBucketSpanSeconds = engine.MaxBucketSpanSeconds
)

// Bucket size limits, MongoDB's defaults (timeseriesBucketMaxCount and
// timeseriesBucketMaxSize): a measurement that would take a bucket past
// either opens a new bucket.
const (
	TimeSeriesBucketMaxCount = engine.TimeSeriesBucketMaxCount
	TimeSeriesBucketMaxBytes = engine.TimeSeriesBucketMaxBytes
)

// TimeSeriesOptions makes CreateCollection create a time-series
// collection: MongoDB's {timeseries: {timeField, metaField, granularity |
// bucketMaxSpanSeconds + bucketRoundingSeconds}}.
//
// Measurements are stored grouped in buckets, one stored unit per meta
// value and time window (see README, "Time-series collections"). Reads see
// measurements, never buckets. As in MongoDB, measurement _id values are
// not indexed and need not be unique: an _id is generated (an ObjectID from
// the DB's clock) only when a measurement has none.
type TimeSeriesOptions = engine.TimeSeriesOptions

// CollectionExpiryName names a time-series collection's collection-level
// expiry (its ExpireAfterSeconds) where an index name is expected: in
// Metrics().TTL.DeletedByIndex, ExpiredBatch.Index, DeleteEvent.Index,
// CurrentOp.Index and for ExplainTTLDelete. No index may take it.
const (
	CollectionExpiryName = engine.CollectionExpiryName
)

// TimeSeriesCollMod is the collection part of MongoDB's collMod on a
// time-series collection: {collMod: <collection>, expireAfterSeconds: <n> |
// "off"}. Give exactly one of its fields.
type TimeSeriesCollMod = engine.TimeSeriesCollMod

// TimeSeriesCollModResult reports what CollModTimeSeries changed. Old and
// New are nil when the collection-level expiry was (or now is) off.
type TimeSeriesCollModResult = engine.TimeSeriesCollModResult

// CollModTimeSeries sets, changes or removes the collection-level
// ExpireAfterSeconds of a time-series collection, as MongoDB's collMod
// {expireAfterSeconds: n | "off"} does. Nothing is re-keyed: buckets are
// kept in time order whatever the period, and the next pass deletes by the
// new one. Lowering it can make many buckets eligible at once.
//
// Errors (nothing changed): ErrNotFound for a missing collection;
// ErrTimeSeries with ErrInvalidOptions for a collection that is not
// time-series, and for a request with neither or both fields; ErrInvalidTTL
// (with ErrTimeSeries) for a negative period. The type system refuses a
// period of another type (MongoDB's "wrong type" error).
func (db *DB) CollModTimeSeries(ctx context.Context, collection string, m TimeSeriesCollMod) (TimeSeriesCollModResult, error) {
	return (*engine.DB)(db).CollModTimeSeries(ctx, collection, m)
}

// CollModTimeSeries is DB.CollModTimeSeries for this collection.
func (c *Collection) CollModTimeSeries(ctx context.Context, m TimeSeriesCollMod) (TimeSeriesCollModResult, error) {
	return (*engine.Collection)(c).CollModTimeSeries(ctx, m)
}

// TimeSeriesInfo describes a time-series collection's options as they
// apply now (MongoDB's listCollections options).
type TimeSeriesInfo = engine.TimeSeriesInfo

// TimeSeriesInfo returns the collection's time-series options and sizes;
// ok is false for a collection that is not time-series (or is missing).
func (c *Collection) TimeSeriesInfo(ctx context.Context) (TimeSeriesInfo, bool, error) {
	return (*engine.Collection)(c).TimeSeriesInfo(ctx)
}
