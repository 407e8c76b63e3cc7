package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/google/btree"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/schema"
	"github.com/ttldb/ttldb/internal/store"
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
var ErrTimeSeries = errors.New("ttldb: time-series collection rule")

// Granularity is MongoDB's coarse setting of a time-series collection's
// bucket span and rounding.
type Granularity string

// The granularities, with the bucket span and rounding each sets (as
// MongoDB's defaults): seconds 3600 s span, 60 s rounding (the default);
// minutes 86400 s, 3600 s; hours 2592000 s (30 days), 86400 s.
const (
	GranularitySeconds Granularity = "seconds"
	GranularityMinutes Granularity = "minutes"
	GranularityHours   Granularity = "hours"
)

// MaxBucketSpanSeconds is the largest BucketMaxSpanSeconds (one year), as
// in MongoDB.
const MaxBucketSpanSeconds = 31536000

// Bucket size limits, MongoDB's defaults (timeseriesBucketMaxCount and
// timeseriesBucketMaxSize): a measurement that would take a bucket past
// either opens a new bucket.
const (
	TimeSeriesBucketMaxCount = 1000
	TimeSeriesBucketMaxBytes = 125 * 1024
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
type TimeSeriesOptions struct {
	// TimeField names the top-level field holding each measurement's
	// time.Time. Required; it may not be "_id" or contain '.' or start with
	// '$'. An insert whose measurement lacks a date there fails with
	// ErrTimeSeries (and ErrInvalidDocument) and stores nothing.
	TimeField string
	// MetaField optionally names the top-level field holding the
	// measurement's source (a sensor id, a document of tags): any value but
	// an array. Measurements with equal meta values share buckets. It may
	// not be "_id" or the TimeField.
	MetaField string
	// Granularity sets the bucket span and rounding (default seconds). Give
	// either Granularity or both BucketMaxSpanSeconds and
	// BucketRoundingSeconds, equal, 1 to MaxBucketSpanSeconds.
	Granularity           Granularity
	BucketMaxSpanSeconds  int32
	BucketRoundingSeconds int32
	// PreciseExpiry, beyond MongoDB, makes expiry remove each measurement
	// at its own threshold (its time + ExpireAfterSeconds) rather than with
	// its whole bucket: the monitor trims expired measurements out of their
	// buckets in its passes (never one before its own threshold) and
	// removes a bucket left empty. Off by default: as in MongoDB, a bucket
	// goes only once its whole time range has expired.
	PreciseExpiry bool

	// legacyPlacement is set on a collection whose spec predates bucket
	// reopening (it lacks reopenBuckets): its inserts open a new bucket
	// for a measurement outside the open bucket's range, as they always
	// did, so that the ops it logged replay into the same buckets.
	legacyPlacement bool
}

// resolved returns the options with the span and rounding worked out, or
// why they are refused.
func (o TimeSeriesOptions) resolved(where string) (TimeSeriesOptions, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w: %s: timeseries: %s", ErrInvalidOptions, ErrTimeSeries, where, fmt.Sprintf(format, args...))
	}
	checkField := func(role, f string) error {
		switch {
		case f == "_id":
			return bad("%s may not be _id", role)
		case strings.Contains(f, "."):
			return bad("%s %q may not contain '.'", role, f)
		}
		if err := validateFieldPath(f); err != nil {
			return bad("%s: %v", role, err)
		}
		return nil
	}
	if o.TimeField == "" {
		return o, bad("timeField is required")
	}
	if err := checkField("timeField", o.TimeField); err != nil {
		return o, err
	}
	if o.MetaField != "" {
		if err := checkField("metaField", o.MetaField); err != nil {
			return o, err
		}
		if o.MetaField == o.TimeField {
			return o, bad("metaField and timeField may not be the same field %q", o.MetaField)
		}
	}
	explicit := o.BucketMaxSpanSeconds != 0 || o.BucketRoundingSeconds != 0
	switch {
	case explicit && o.Granularity != "":
		return o, bad("give granularity or bucketMaxSpanSeconds and bucketRoundingSeconds, not both")
	case explicit && (o.BucketMaxSpanSeconds == 0 || o.BucketRoundingSeconds == 0):
		return o, bad("bucketMaxSpanSeconds and bucketRoundingSeconds must be given together")
	case explicit && o.BucketMaxSpanSeconds != o.BucketRoundingSeconds:
		return o, bad("bucketMaxSpanSeconds (%d) and bucketRoundingSeconds (%d) must be equal", o.BucketMaxSpanSeconds, o.BucketRoundingSeconds)
	case explicit && (o.BucketMaxSpanSeconds < 1 || o.BucketMaxSpanSeconds > MaxBucketSpanSeconds):
		return o, bad("bucketMaxSpanSeconds %d out of range (1 to %d)", o.BucketMaxSpanSeconds, MaxBucketSpanSeconds)
	case explicit:
		return o, nil
	}
	switch o.Granularity {
	case "", GranularitySeconds:
		o.Granularity, o.BucketMaxSpanSeconds, o.BucketRoundingSeconds = GranularitySeconds, 3600, 60
	case GranularityMinutes:
		o.BucketMaxSpanSeconds, o.BucketRoundingSeconds = 86400, 3600
	case GranularityHours:
		o.BucketMaxSpanSeconds, o.BucketRoundingSeconds = 2592000, 86400
	default:
		return o, bad("unknown granularity %q (valid: seconds, minutes, hours)", o.Granularity)
	}
	return o, nil
}

// newTimeSeriesCollState makes the state of a collection created with
// TimeSeries or ExpireAfterSeconds options.
func newTimeSeriesCollState(db *DB, name string, opts CollectionOptions) (*collState, error) {
	where := fmt.Sprintf("collection %q", name)
	if opts.TimeSeries == nil {
		return nil, fmt.Errorf("%w: %w: %s: a collection-level ExpireAfterSeconds needs TimeSeries options", ErrInvalidOptions, ErrTimeSeries, where)
	}
	switch {
	case opts.Capped || opts.MaxDocuments != 0 || opts.MaxBytes != 0:
		return nil, fmt.Errorf("%w: %w: %s: a time-series collection cannot be capped", ErrInvalidOptions, ErrTimeSeries, where)
	case opts.HideExpired:
		return nil, fmt.Errorf("%w: %w: %s: HideExpired is not supported on a time-series collection", ErrInvalidOptions, ErrTimeSeries, where)
	}
	if e := opts.ExpireAfterSeconds; e != nil && *e < 0 {
		return nil, fmt.Errorf("%w: %w: %s: expireAfterSeconds %d is negative (valid: 0 to %d)", ErrInvalidTTL, ErrTimeSeries, where, *e, math.MaxInt32)
	}
	tso, err := opts.TimeSeries.resolved(where)
	if err != nil {
		return nil, err
	}
	v, err := schema.CompileValidator(opts.Validator)
	if err != nil {
		return nil, fmt.Errorf("collection %q: validator: %w", name, err)
	}
	if opts.Validator != nil {
		opts.Validator = codec.CopyDocument(opts.Validator)
	}
	opts.TimeSeries = &tso
	if opts.ExpireAfterSeconds != nil {
		opts.ExpireAfterSeconds = Seconds(*opts.ExpireAfterSeconds)
	}
	ts := &tsColl{
		db:        db,
		name:      name,
		opts:      tso,
		span:      int64(tso.BucketMaxSpanSeconds),
		rounding:  int64(tso.BucketRoundingSeconds),
		validator: v,
		buckets:   btree.NewG(btreeDegree, bucketLess),
		open:      map[string]*bucket{},
		nextSeq:   1,
	}
	if !tso.legacyPlacement {
		ts.reopen = btree.NewG(btreeDegree, reopenLess)
	}
	ts.collExp = newTSExpiry(ts, CollectionExpiryName, nil, nil)
	ts.collExp.expireAfter.Store(-1)
	if e := opts.ExpireAfterSeconds; e != nil {
		ts.collExp.expireAfter.Store(int64(*e))
	}
	s := &collState{
		db:      db,
		name:    name,
		opts:    opts,
		natural: newNatOrder(),
		nextSeq: 1,
		ts:      ts,
	}
	s.st.Store(store.New(storeOptions(db))) // empty: the buckets hold the data
	ts.state = s
	return s, nil
}

// CollectionExpiryName names a time-series collection's collection-level
// expiry (its ExpireAfterSeconds) where an index name is expected: in
// Metrics().TTL.DeletedByIndex, ExpiredBatch.Index, DeleteEvent.Index,
// CurrentOp.Index and for ExplainTTLDelete. No index may take it.
const CollectionExpiryName = "$expireAfterSeconds"

// tsColl is a time-series collection: buckets of measurements.
//
// Locking: mu guards everything below it. Writers (inserts, deletes,
// updates, index changes, the monitor's deletions) hold it for writing for
// their whole change; readers hold it for reading while they unpack
// buckets. No callback runs with it held.
type tsColl struct {
	db        *DB
	name      string
	opts      TimeSeriesOptions // resolved
	span      int64             // bucket max span, seconds
	rounding  int64             // bucket rounding, seconds
	validator *schema.Validator

	collExp *tsExpiry // the collection-level ExpireAfterSeconds (off: -1)

	state *collState // the collection's state: its memory account

	mu      sync.RWMutex
	dropped bool
	buckets *btree.BTreeG[*bucket] // every bucket, by seq (creation order)
	open    map[string]*bucket     // by meta key: where new measurements go
	// reopen holds the buckets not full by count, by meta key, start and
	// seq: where a measurement outside its open bucket's range goes when
	// one covers its time (nil with legacyPlacement).
	reopen   *btree.BTreeG[*bucket]
	nextSeq  uint64
	count    int        // measurements stored
	indexes  []*tsIndex // in creation order
	bytesLen int64      // bytes of measurement encodings stored
	// memSlices and memMetas are the bytes of the buckets' slices (their
	// capacity) and of their meta values' keys (tsmemory.go).
	memSlices int64
	memMetas  int64
	// undo, set while an insert may yet be refused for the memory limit,
	// records what it changes (tsmemory.go).
	undo *tsUndo
}

// timeSeries returns the time-series state of the collection c names, or
// nil if it is not a time-series collection (or does not exist, or c is
// unusable: the ordinary path then reports that).
func (c *Collection) timeSeries() *tsColl {
	if c.usable() != nil {
		return nil
	}
	s, err := c.db.state(c.name, false)
	if err != nil || s == nil {
		return nil
	}
	return s.ts
}

// errDroppedTS tells a time-series operation its collection was dropped.
func (ts *tsColl) errDropped() error {
	return fmt.Errorf("%w: collection %q was dropped", ErrNotFound, ts.name)
}

// TimeSeriesCollMod is the collection part of MongoDB's collMod on a
// time-series collection: {collMod: <collection>, expireAfterSeconds: <n> |
// "off"}. Give exactly one of its fields.
type TimeSeriesCollMod struct {
	// ExpireAfterSeconds sets or changes the collection-level period, 0 to
	// 2147483647 seconds.
	ExpireAfterSeconds *int32
	// Off removes the collection-level period (MongoDB's "off"): buckets
	// no longer expire by it (partial TTL indexes still apply).
	Off bool
}

// TimeSeriesCollModResult reports what CollModTimeSeries changed. Old and
// New are nil when the collection-level expiry was (or now is) off.
type TimeSeriesCollModResult struct {
	ExpireAfterSecondsOld *int32
	ExpireAfterSecondsNew *int32
}

// CollModTimeSeries implements ttldb.DB.CollModTimeSeries, whose documentation is the contract.
func (db *DB) CollModTimeSeries(ctx context.Context, collection string, m TimeSeriesCollMod) (TimeSeriesCollModResult, error) {
	return db.Collection(collection).CollModTimeSeries(ctx, m)
}

// CollModTimeSeries implements ttldb.Collection.CollModTimeSeries, whose documentation is the contract.
func (c *Collection) CollModTimeSeries(ctx context.Context, m TimeSeriesCollMod) (res TimeSeriesCollModResult, err error) {
	if err := c.db.writable(); err != nil {
		return TimeSeriesCollModResult{}, err
	}
	if err := c.started(ctx); err != nil {
		return TimeSeriesCollModResult{}, err
	}
	if err := c.db.refuseTxn(ctx, "CollModTimeSeries"); err != nil {
		return TimeSeriesCollModResult{}, err
	}
	defer c.db.durable(&err)
	return replicated(c.db, func() (TimeSeriesCollModResult, error) { return c.collModTimeSeriesBegun(m) })
}

// collModTimeSeriesBegun is CollModTimeSeries once the replicator (if any) let it begin.
func (c *Collection) collModTimeSeriesBegun(m TimeSeriesCollMod) (TimeSeriesCollModResult, error) {
	var res TimeSeriesCollModResult
	if err := c.usable(); err != nil {
		return res, err
	}
	where := fmt.Sprintf("collMod %q", c.name)
	switch {
	case m.ExpireAfterSeconds == nil && !m.Off:
		return res, fmt.Errorf("%w: %w: %s: give ExpireAfterSeconds or Off", ErrInvalidOptions, ErrTimeSeries, where)
	case m.ExpireAfterSeconds != nil && m.Off:
		return res, fmt.Errorf("%w: %w: %s: give ExpireAfterSeconds or Off, not both", ErrInvalidOptions, ErrTimeSeries, where)
	case m.ExpireAfterSeconds != nil && *m.ExpireAfterSeconds < 0:
		return res, fmt.Errorf("%w: %w: %s: expireAfterSeconds %d is negative (valid: 0 to %d)", ErrInvalidTTL, ErrTimeSeries, where, *m.ExpireAfterSeconds, math.MaxInt32)
	}
	s, err := c.read()
	if err != nil {
		return res, err
	}
	if s == nil {
		return res, fmt.Errorf("%w: %s: no such collection", ErrNotFound, where)
	}
	ts := s.ts
	if ts == nil {
		return res, fmt.Errorf("%w: %w: %s: expireAfterSeconds is a time-series collection option; use CollMod with an index for a TTL index", ErrInvalidOptions, ErrTimeSeries, where)
	}
	var next *int32
	if m.ExpireAfterSeconds != nil {
		next = Seconds(*m.ExpireAfterSeconds)
	}
	return ts.setCollExpiry(next, nil)
}

// setCollExpiry is CollModTimeSeries's change: the collection-level period
// becomes next (nil: off). applied is the op DB.Apply applies, if it runs.
func (ts *tsColl) setCollExpiry(next *int32, applied *Op) (TimeSeriesCollModResult, error) {
	var res TimeSeriesCollModResult
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.dropped {
		return res, ts.errDropped()
	}
	secs := int64(-1)
	if next != nil {
		secs = int64(*next)
		res.ExpireAfterSecondsNew = Seconds(*next)
	}
	old := ts.collExp.expireAfter.Swap(secs)
	if old >= 0 {
		res.ExpireAfterSecondsOld = Seconds(int32(old))
	}
	if err := ts.emit(applied, func() Op { return Op{Kind: OpCollMod, Spec: collModSpec(next)} }); err != nil {
		return res, err
	}
	if th, ok := ts.collExp.earliestThreshold(); ok {
		ts.db.monitor.notifyThreshold(th)
	}
	return res, nil
}

// setPaused pauses or resumes the collection's expiry (CollMod's
// TTLPaused), committing its op, or applied's.
func (ts *tsColl) setPaused(paused bool, applied *Op) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.dropped {
		return ts.errDropped()
	}
	ts.state.ttlPaused.Store(paused)
	if err := ts.emit(applied, func() Op { return Op{Kind: OpCollMod, Spec: pauseSpec(paused)} }); err != nil {
		return err
	}
	if !paused {
		ts.db.monitor.poke()
	}
	return nil
}

// TimeSeriesInfo describes a time-series collection's options as they
// apply now (MongoDB's listCollections options).
type TimeSeriesInfo struct {
	Options TimeSeriesOptions // resolved: span and rounding filled in
	// ExpireAfterSeconds is the collection-level period; nil when off.
	ExpireAfterSeconds *int32
	Buckets            int // buckets stored
	Measurements       int // measurements stored
}

// TimeSeriesInfo implements ttldb.Collection.TimeSeriesInfo, whose documentation is the contract.
func (c *Collection) TimeSeriesInfo(ctx context.Context) (info TimeSeriesInfo, ok bool, err error) {
	if err := c.usable(); err != nil {
		return info, false, err
	}
	if err := c.started(ctx); err != nil {
		return info, false, err
	}
	ts := c.timeSeries()
	if ts == nil {
		return info, false, nil
	}
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	info.Options = ts.opts
	info.Options.legacyPlacement = false // options given back create a collection that reopens buckets
	if e := ts.collExp.expireAfter.Load(); e >= 0 {
		info.ExpireAfterSeconds = Seconds(int32(e))
	}
	info.Buckets = ts.buckets.Len()
	info.Measurements = ts.count
	return info, true, nil
}
