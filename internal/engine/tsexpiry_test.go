package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
)

// The manual's example: a bucket covering data up until 2023-03-27T18:29:59Z
// with expireAfterSeconds 300 expires after 2023-03-27T18:34:59Z. With a
// 1800 s span, the bucket starting at 18:00:00 covers data until 18:29:59
// (its range is [18:00, 18:30)).
func TestTimeSeriesExpiryManualExample(t *testing.T) {
	start := time.Date(2023, 3, 27, 18, 0, 0, 0, time.UTC)
	db, clk, c := openTS(t, start, weatherOpts(1800, Seconds(300)))
	_, err := c.InsertMany(context.Background(), []Document{
		{"timestamp": start.Add(5 * time.Minute), "sensor": "a"},
		{"timestamp": time.Date(2023, 3, 27, 18, 29, 59, 0, time.UTC), "sensor": "a"},
	})

	require.NoError(t, err)
	info, _, _ := c.TimeSeriesInfo(context.Background())
	require.Equal(t, 1, info.Buckets)

	clk.Set(time.Date(2023, 3, 27, 18, 34, 59, 0, time.UTC))
	res := tsPass(t, db)
	require.Zero(t, res.Deleted, "at 18:34:59 the bucket's upper limit + E has not passed")
	n, _ := c.CountDocuments(context.Background(), nil)
	require.EqualValues(t, 2, n)

	clk.Set(time.Date(2023, 3, 27, 18, 35, 0, 0, time.UTC)) // start <= now - E - span
	res = tsPass(t, db)
	require.Equal(t, 1, res.Deleted, "one bucket")
	n, _ = c.CountDocuments(context.Background(), nil)
	require.Zero(t, n)
	m := db.Metrics().TTL
	require.Equal(t, int64(1), m.DeletedDocuments)
	require.Equal(t, int64(2), m.DeletedMeasurements)
	require.Equal(t, int64(1), m.DeletedByIndex[IndexRef{"w", CollectionExpiryName}])
}

// A bucket holding an old and a fresh measurement keeps both: the old one
// outlives E by up to the span.
func TestTimeSeriesOldAndFreshShareBucketFate(t *testing.T) {
	db, clk, c := openTS(t, t0, weatherOpts(3600, Seconds(60)))
	_, err := c.InsertMany(context.Background(), []Document{{"timestamp": t0, "sensor": "a"}, {"timestamp": t0.Add(59 * time.Minute), "sensor": "a"}})
	require.NoError(t, err)
	at, expires, err := c.ExpiresAt(context.Background(), must(c.FindOne(context.Background(), Document{"timestamp": t0}).Document())["_id"])
	require.NoError(t, err)
	require.True(t, expires)
	require.Equal(t, t0.Add(time.Hour+time.Minute), at, "the whole bucket: start + span + E")
	clk.Set(t0.Add(time.Hour + time.Minute - time.Second))
	tsPass(t, db)
	n, _ := c.CountDocuments(context.Background(), nil)
	require.EqualValues(t, 2, n, "the old measurement is long past its own threshold but stays with its bucket")
	clk.Set(t0.Add(time.Hour + time.Minute))
	tsPass(t, db)
	n, _ = c.CountDocuments(context.Background(), nil)
	require.Zero(t, n)
}

func must(d Document, err error) Document {
	if err != nil {
		panic(err)
	}
	return d
}

// No 32-bit bucket times: before 1970 and after 2038 the same rule holds.
func TestTimeSeriesExpiryBefore1970AndAfter2038(t *testing.T) {
	for _, start := range []time.Time{
		time.Date(1965, 7, 1, 10, 0, 0, 0, time.UTC),
		time.Date(2100, 7, 1, 10, 0, 0, 0, time.UTC),
	} {
		t.Run(start.Format("2006"), func(t *testing.T) {
			db, clk, c := openTS(t, start, weatherOpts(600, Seconds(30)))
			_, err := c.InsertOne(context.Background(), Document{"timestamp": start.Add(7 * time.Minute), "sensor": "a"})
			require.NoError(t, err)
			var b *bucket
			c.timeSeries().buckets.Ascend(func(x *bucket) bool { b = x; return false })
			require.Equal(t, start, b.start)
			clk.Set(start.Add(600*time.Second + 30*time.Second - time.Nanosecond))
			require.Zero(t, tsPass(t, db).Deleted)
			clk.Set(start.Add(600*time.Second + 30*time.Second))
			require.Equal(t, 1, tsPass(t, db).Deleted)
		})
	}
}

func TestTimeSeriesPreciseExpiry(t *testing.T) {
	opts := weatherOpts(3600, Seconds(60))
	opts.TimeSeries.PreciseExpiry = true
	db, clk, c := openTS(t, t0, opts)
	var docs []Document
	for i := range 6 {
		docs = append(docs, Document{"_id": i, "timestamp": t0.Add(time.Duration(i) * 10 * time.Minute), "sensor": "a"})
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	for i := range 6 {
		th := t0.Add(time.Duration(i)*10*time.Minute + time.Minute)
		clk.Set(th.Add(-time.Nanosecond))
		tsPass(t, db)
		n, _ := c.CountDocuments(context.Background(), Document{"_id": i})
		require.EqualValues(t, 1, n, "measurement %d is never trimmed before its own threshold", i)
		clk.Set(th)
		tsPass(t, db)
		n, _ = c.CountDocuments(context.Background(), Document{"_id": i})
		require.Zero(t, n, "measurement %d goes at its own threshold", i)
		left, _ := c.CountDocuments(context.Background(), nil)
		require.EqualValues(t, 5-i, left)
	}
	info, _, _ := c.TimeSeriesInfo(context.Background())
	require.Zero(t, info.Buckets, "the bucket left empty is removed")
	m := db.Metrics().TTL
	require.Equal(t, int64(6), m.DeletedMeasurements)
	require.Equal(t, int64(1), m.DeletedDocuments, "one bucket deleted; the trims delete none")
}

func TestTimeSeriesCollMod(t *testing.T) {
	db, clk, c := openTS(t, t0, weatherOpts(3600, nil))
	_, err := c.InsertOne(context.Background(), Document{"timestamp": t0, "sensor": "a"})
	require.NoError(t, err)
	clk.Set(t0.Add(48 * time.Hour))
	require.Zero(t, tsPass(t, db).Deleted, "no collection-level expiry yet")

	res, err := db.CollModTimeSeries(context.Background(), "w", TimeSeriesCollMod{ExpireAfterSeconds: Seconds(172800)})
	require.NoError(t, err)
	require.Nil(t, res.ExpireAfterSecondsOld)
	require.Equal(t, int32(172800), *res.ExpireAfterSecondsNew)
	require.Zero(t, tsPass(t, db).Deleted)

	res, err = c.CollModTimeSeries(context.Background(), TimeSeriesCollMod{ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	require.Equal(t, int32(172800), *res.ExpireAfterSecondsOld)
	res, err = c.CollModTimeSeries(context.Background(), TimeSeriesCollMod{Off: true})
	require.NoError(t, err)
	require.Equal(t, int32(3600), *res.ExpireAfterSecondsOld)
	require.Nil(t, res.ExpireAfterSecondsNew)
	require.Zero(t, tsPass(t, db).Deleted, "off: nothing expires")
	info, _, _ := c.TimeSeriesInfo(context.Background())
	require.Nil(t, info.ExpireAfterSeconds)

	for name, m := range map[string]TimeSeriesCollMod{
		"neither": {},
		"both":    {ExpireAfterSeconds: Seconds(1), Off: true},
	} {
		_, err := c.CollModTimeSeries(context.Background(), m)
		require.ErrorIs(t, err, ErrTimeSeries, name)
		require.ErrorIs(t, err, ErrInvalidOptions, name)
	}
	_, err = c.CollModTimeSeries(context.Background(), TimeSeriesCollMod{ExpireAfterSeconds: Seconds(-1)})
	require.ErrorIs(t, err, ErrTimeSeries)
	require.ErrorIs(t, err, ErrInvalidTTL)
	info, _, _ = c.TimeSeriesInfo(context.Background())
	require.Nil(t, info.ExpireAfterSeconds, "refusals change nothing")

	_, err = db.Collection("plain").InsertOne(context.Background(), Document{"x": 1})
	require.NoError(t, err)
	_, err = db.CollModTimeSeries(context.Background(), "plain", TimeSeriesCollMod{ExpireAfterSeconds: Seconds(5)})
	require.ErrorIs(t, err, ErrTimeSeries)
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = db.CollModTimeSeries(context.Background(), "missing", TimeSeriesCollMod{ExpireAfterSeconds: Seconds(5)})
	require.ErrorIs(t, err, ErrNotFound)

	_, err = c.CollModTimeSeries(context.Background(), TimeSeriesCollMod{ExpireAfterSeconds: Seconds(0)})
	require.NoError(t, err)
	require.Equal(t, 1, tsPass(t, db).Deleted)
}

const hq = "40.761873, -73.984287"

func hqIndex(expire int32) IndexModel {
	return IndexModel{Keys: []IndexKey{Asc("timestamp")}, PartialFilterExpression: Document{"sensor": Document{"$eq": hq}}, ExpireAfterSeconds: Seconds(expire)}
}

func TestTimeSeriesPartialTTLRefusals(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(0, Seconds(86400)))
	metaF := Document{"sensor": hq}
	for name, m := range map[string]IndexModel{
		"no partial filter":    {Keys: []IndexKey{Asc("timestamp")}, ExpireAfterSeconds: Seconds(60)},
		"on the meta field":    {Keys: []IndexKey{Asc("sensor")}, PartialFilterExpression: metaF, ExpireAfterSeconds: Seconds(60)},
		"on a data field":      {Keys: []IndexKey{Asc("temp")}, PartialFilterExpression: metaF, ExpireAfterSeconds: Seconds(60)},
		"filter on data":       {Keys: []IndexKey{Asc("timestamp")}, PartialFilterExpression: Document{"temp": 1}, ExpireAfterSeconds: Seconds(60)},
		"filter meta and data": {Keys: []IndexKey{Asc("timestamp")}, PartialFilterExpression: Document{"sensor": hq, "temp": 1}, ExpireAfterSeconds: Seconds(60)},
		"filter on time":       {Keys: []IndexKey{Asc("timestamp")}, PartialFilterExpression: Document{"timestamp": Document{"$gt": t0}}, ExpireAfterSeconds: Seconds(60)},
		"compound":             {Keys: []IndexKey{Asc("timestamp"), Asc("sensor")}, PartialFilterExpression: metaF, ExpireAfterSeconds: Seconds(60)},
		"negative":             {Keys: []IndexKey{Asc("timestamp")}, PartialFilterExpression: metaF, ExpireAfterSeconds: Seconds(-1)},
	} {
		_, err := c.CreateIndex(context.Background(), m)
		require.ErrorIs(t, err, ErrTimeSeries, name)
		require.ErrorIs(t, err, ErrInvalidTTL, name)
	}
	specs, _ := c.Indexes(context.Background())
	require.Empty(t, specs)

	db, _ := openMon(t, quiet(MonitorOptions{}))
	noMeta, err := db.CreateCollection(context.Background(), "nometa", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "timestamp"}})
	require.NoError(t, err)
	_, err = noMeta.CreateIndex(context.Background(), hqIndex(60))
	require.ErrorIs(t, err, ErrTimeSeries)
}

// The shorter period wins: a matching measurement goes after the partial
// index's E, a non-matching one after the collection's; a partial index
// with a longer E than the collection's has no effect.
func TestTimeSeriesPartialTTLShorterWins(t *testing.T) {
	db, clk, c := openTS(t, t0, weatherOpts(600, Seconds(86400)))
	name, err := c.CreateIndex(context.Background(), hqIndex(3600))
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"timestamp": t0, "sensor": hq, "temp": 1}, {"timestamp": t0, "sensor": "elsewhere", "temp": 2}})
	require.NoError(t, err)

	clk.Set(t0.Add(600*time.Second + time.Hour - time.Second))
	require.Zero(t, tsPass(t, db).Deleted)
	clk.Set(t0.Add(600*time.Second + time.Hour))
	require.Equal(t, 1, tsPass(t, db).Deleted)
	n, _ := c.CountDocuments(context.Background(), Document{"sensor": hq})
	require.Zero(t, n, "headquarters goes after 1 hour (+ the span)")
	n, _ = c.CountDocuments(context.Background(), nil)
	require.EqualValues(t, 1, n)
	require.Equal(t, int64(1), db.Metrics().TTL.DeletedByIndex[IndexRef{"w", name}])

	clk.Set(t0.Add(600*time.Second + 24*time.Hour))
	require.Equal(t, 1, tsPass(t, db).Deleted)
	n, _ = c.CountDocuments(context.Background(), nil)
	require.Zero(t, n, "the others go after 24 hours")

	// A partial index longer than the collection's period has no effect.
	_, err = c.CollMod(context.Background(), CollModIndex{Name: name, ExpireAfterSeconds: Seconds(200000)})
	require.NoError(t, err)
	now := clk.Now()
	_, err = c.InsertOne(context.Background(), Document{"timestamp": now, "sensor": hq})
	require.NoError(t, err)
	clk.Set(now.Add(600*time.Second + 24*time.Hour))
	require.Equal(t, 1, tsPass(t, db).Deleted)
	require.Equal(t, int64(2), db.Metrics().TTL.DeletedByIndex[IndexRef{"w", CollectionExpiryName}])
}

func TestTimeSeriesPartialTTLWithoutCollectionExpiry(t *testing.T) {
	db, clk, c := openTS(t, t0, weatherOpts(600, nil))
	_, err := c.CreateIndex(context.Background(), hqIndex(3600))
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"timestamp": t0, "sensor": hq}, {"timestamp": t0, "sensor": "other"}})
	require.NoError(t, err)
	clk.Set(t0.Add(1000 * time.Hour))
	require.Equal(t, 1, tsPass(t, db).Deleted)
	n, _ := c.CountDocuments(context.Background(), nil)
	require.EqualValues(t, 1, n, "only the partial index's measurements expire")
}

// Hooks and observers receive the measurements of a deleted bucket; a hook
// error keeps the whole bucket.
func TestTimeSeriesHooksAndObservers(t *testing.T) {
	var mu sync.Mutex
	var hooked, observed []Document
	fail := true
	hook := func(_ context.Context, b ExpiredBatch) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return &ExpireHookError{Failed: []any{"a1"}}
		}
		hooked = append(hooked, b.Docs...)
		return nil
	}
	var events []DeleteEvent
	obs := func(ev DeleteEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		observed = append(observed, slices.Collect(ev.Measurements())...)
	}
	db, clk, c := openTS(t, t0, weatherOpts(600, Seconds(60)), WithOnExpire(hook), WithDeleteObserver(obs))
	_, err := c.InsertMany(context.Background(), []Document{
		{"_id": "a1", "timestamp": t0, "sensor": "a"}, {"_id": "a2", "timestamp": t0.Add(time.Minute), "sensor": "a"},
		{"_id": "b1", "timestamp": t0, "sensor": "b"}, {"_id": "b2", "timestamp": t0.Add(time.Minute), "sensor": "b"},
	})

	require.NoError(t, err)
	clk.Set(t0.Add(660 * time.Second))
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, res.Deleted, "b's bucket goes")
	require.False(t, res.Complete)
	require.Equal(t, 1, res.Errors)
	n, _ := c.CountDocuments(context.Background(), Document{"sensor": "a"})
	require.EqualValues(t, 2, n, "a hook error for a1 keeps a's whole bucket")
	require.Len(t, events, 1)
	require.ElementsMatch(t, []any{"b1", "b2"}, events[0].IDs)
	require.Len(t, observed, 2)
	require.Equal(t, "b", observed[0]["sensor"])
	require.Equal(t, CollectionExpiryName, events[0].Index)
	require.Equal(t, int64(1), db.Metrics().TTL.HookErrors)

	mu.Lock()
	fail = false
	mu.Unlock()
	res = tsPass(t, db)
	require.Equal(t, 0, res.Deleted, "the failed bucket backs off")
	clk.Advance(DefaultDeadlineWakeFloor) // the first backoff step
	res = tsPass(t, db)
	require.Equal(t, 1, res.Deleted, "retried once its backoff has passed")
	require.Len(t, hooked, 2)
	ids := []any{hooked[0]["_id"], hooked[1]["_id"]}
	require.ElementsMatch(t, []any{"a1", "a2"}, ids)
	require.Equal(t, "a", hooked[0]["sensor"], "hooks receive whole measurements")
	n, _ = c.CountDocuments(context.Background(), nil)
	require.Zero(t, n)
}

// The monitor's budgets apply to buckets: a batch deletes BatchSize
// buckets per hold of the lock, and a visit PerIndexMaxDeletes before the
// sub-pass moves on.
func TestTimeSeriesMonitorBudgets(t *testing.T) {
	var batches []int
	var mu sync.Mutex
	obs := func(ev DeleteEvent) {
		mu.Lock()
		batches = append(batches, len(slices.Collect(ev.Measurements())))
		mu.Unlock()
	}
	clkStart := t0
	db, clk, c := openTS(t, clkStart, weatherOpts(60, Seconds(0)), WithDeleteObserver(obs),
		quiet(MonitorOptions{BatchSize: 2, PerIndexMaxDeletes: 3, SubPassMaxTime: SubPassEveryRound}))
	var docs []Document
	for i := range 7 { // seven sensors: seven buckets of three measurements
		for j := range 3 {
			docs = append(docs, Document{"timestamp": t0.Add(time.Duration(j) * time.Second), "sensor": fmt.Sprintf("s%d", i)})
		}
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	ex, err := c.ExplainTTLDelete(context.Background(), CollectionExpiryName)
	require.NoError(t, err)
	require.Zero(t, ex.KeysExamined)
	clk.Set(t0.Add(time.Minute))
	ex, err = c.ExplainTTLDelete(context.Background(), CollectionExpiryName)
	require.NoError(t, err)
	require.Equal(t, "BATCHED_DELETE", ex.Stage)
	require.Equal(t, 3, ex.BucketsExamined, "capped at PerIndexMaxDeletes")
	require.Equal(t, 9, ex.Measurements)
	require.Equal(t, 2, ex.Batches)
	res := tsPass(t, db)
	require.Equal(t, 7, res.Deleted)
	require.Equal(t, 3, res.SubPasses, "3 + 3 + 1 buckets")
	require.Equal(t, []int{6, 3, 6, 3, 3}, batches, "two buckets (six measurements) per batch, three per visit")
	_, err = c.ExplainTTLDelete(context.Background(), "nope")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestTimeSeriesCurrentOpDescribesBuckets(t *testing.T) {
	var seen []CurrentOp
	var db *DB
	obs := func(DeleteEvent) { seen = append(seen, db.CurrentOp()...) }
	db, clk, c := openTS(t, t0, weatherOpts(60, Seconds(0)), WithDeleteObserver(obs), quiet(MonitorOptions{BatchSize: 1}))
	_, err := c.InsertMany(context.Background(), []Document{{"timestamp": t0, "sensor": "a"}, {"timestamp": t0, "sensor": "a"}, {"timestamp": t0, "sensor": "b"}})
	require.NoError(t, err)
	clk.Set(t0.Add(time.Minute))
	tsPass(t, db)
	require.Len(t, seen, 2, "one observer call per batch of one bucket")
	// An observer runs before the visit's progress is updated: the second
	// sees the first batch's.
	require.True(t, seen[1].TimeSeries)
	require.Equal(t, CollectionExpiryName, seen[1].Index)
	require.Equal(t, "w", seen[1].Collection)
	require.Equal(t, 1, seen[1].Deleted)
	require.Equal(t, 2, seen[1].Measurements)
}

// With DeadlineWake the monitor wakes for a bucket's threshold.
func TestTimeSeriesDeadlineWake(t *testing.T) {
	deleted := make(chan DeleteEvent, 4)
	_, clk, c := openTS(t, t0, weatherOpts(60, Seconds(30)), WithDeleteObserver(func(ev DeleteEvent) { deleted <- ev }),
		WithMonitor(MonitorOptions{DeadlineWake: true, Interval: 1000 * time.Hour}))
	_, err := c.InsertOne(context.Background(), Document{"timestamp": t0, "sensor": "a"})
	require.NoError(t, err)
	// The insert re-arms the sleep for the bucket's threshold: start + span + E.
	next := t0.Add(90 * time.Second)
	require.Eventually(t, func() bool {
		w, ok := clk.NextWake()
		return ok && w.Equal(next)
	}, 5*time.Second, time.Millisecond)
	clk.Advance(next.Sub(clk.Now()))
	// A poke the insert sent may still make the monitor re-arm once, for
	// the floor (1 ms) past now: follow its wakes, never past that.
	limit := next.Add(DefaultDeadlineWakeFloor)
	var ev DeleteEvent
	require.Eventually(t, func() bool {
		select {
		case ev = <-deleted:
			return true
		default:
		}
		if w, ok := clk.NextWake(); ok && w.After(clk.Now()) && !w.After(limit) {
			clk.Advance(w.Sub(clk.Now()))
		}
		return false
	}, 10*time.Second, time.Millisecond, "the monitor did not wake for the bucket")
	require.Len(t, ev.IDs, 1)
	require.False(t, clk.Now().After(limit), "woken at %v, the bucket's threshold is %v", clk.Now(), next)
}

// DeleteEvent.Measurements yields exactly the removed measurements, as Find
// returned them, in the order of IDs, for whole buckets and for trims; each
// call yields documents of the caller's own; the event stays readable after
// the observer returned and after later writes to the same buckets.
func TestTimeSeriesDeleteEventMeasurements(t *testing.T) {
	var events []DeleteEvent
	opts := weatherOpts(3600, Seconds(60))
	opts.TimeSeries.PreciseExpiry = true
	db, clk, c := openTS(t, t0, opts, WithDeleteObserver(func(ev DeleteEvent) { events = append(events, ev) }))
	var docs []Document
	for i := range 10 {
		docs = append(docs, Document{"_id": i, "timestamp": t0.Add(time.Duration(i) * time.Minute), "sensor": fmt.Sprintf("s%d", i%2), "temp": float64(i) / 2, "tags": []any{"x", i}})
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	before, err := findDocs(c, nil)
	require.NoError(t, err)
	byID := map[any]Document{}
	for _, d := range before {
		byID[d["_id"]] = d
	}

	clk.Set(t0.Add(5 * time.Minute)) // trims _id 0..4 (times up to 4 min + E = 5 min)
	tsPass(t, db)
	// Later writes to the trimmed buckets must not change what the event holds.
	_, err = c.InsertMany(context.Background(), []Document{{"_id": 100, "timestamp": t0.Add(30 * time.Minute), "sensor": "s0"}, {"_id": 101, "timestamp": t0.Add(31 * time.Minute), "sensor": "s1"}})
	require.NoError(t, err)
	clk.Set(t0.Add(2 * time.Hour)) // everything left goes: whole buckets
	tsPass(t, db)

	var ids []any
	var got []Document
	for _, ev := range events {
		ms := slices.Collect(ev.Measurements())
		require.Len(t, ms, len(ev.IDs))
		for k, m := range ms {
			require.Equal(t, ev.IDs[k], m["_id"], "Measurements follows the order of IDs")
		}
		ids = append(ids, ev.IDs...)
		got = append(got, ms...)
	}
	require.ElementsMatch(t, []any{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101}, ids)
	require.ElementsMatch(t, []any{0, 1, 2, 3, 4}, events[0].IDs, "the first pass trims only what expired")
	for _, m := range got {
		if want, ok := byID[m["_id"]]; ok {
			require.Equal(t, want, m, "a removed measurement is yielded as Find returned it")
		}
	}
	// Each call decodes afresh: a change to one yield is not seen by the next.
	first := slices.Collect(events[0].Measurements())
	first[0]["temp"] = "changed"
	first[0]["tags"].([]any)[0] = "changed"
	again := slices.Collect(events[0].Measurements())
	require.Equal(t, byID[again[0]["_id"]], again[0])
	// Stopping early is allowed.
	n := 0
	for range events[len(events)-1].Measurements() {
		n++
		break
	}
	require.Equal(t, 1, n)
	// An event of an ordinary collection yields nothing.
	require.Empty(t, slices.Collect(DeleteEvent{IDs: []any{1}}.Measurements()))
}

// An observer that reads only IDs costs no decoding of measurements: a
// mass expiry of whole buckets allocates well under one document's worth
// (a map and its values, several allocations) per measurement.
func TestTimeSeriesDeleteEventDecodesLazily(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	const n = 20000
	seen := 0
	db, clk, c := openTS(t, t0, weatherOpts(3600, Seconds(0)), WithDeleteObserver(func(ev DeleteEvent) { seen += len(ev.IDs) }))
	docs := make([]Document, 0, n)
	for i := range n {
		docs = append(docs, Document{"timestamp": t0.Add(time.Duration(i) * time.Second / 10), "sensor": fmt.Sprintf("s%d", i%20), "temp": float64(i), "unit": "C"})
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	clk.Set(t0.Add(24 * time.Hour))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tsPass(t, db)
	runtime.ReadMemStats(&after)
	require.Equal(t, n, seen)
	perMeasurement := float64(after.Mallocs-before.Mallocs) / n
	require.Less(t, perMeasurement, 2.0, "the pass decoded measurements nobody asked for")
}

// TestTimeSeriesHookFailureBackoff: a bucket whose hook always fails is
// offered again after a backoff that doubles from the wake floor up to
// Interval, as documents are (TestHookFailureBackoff), so DeadlineWake does
// not call the hook at every wake; other buckets of the rule still expire
// at their threshold, and a clock stepped back makes the retry due at once.
func TestTimeSeriesHookFailureBackoff(t *testing.T) {
	const floor, interval = time.Millisecond, time.Minute
	var (
		mu    sync.Mutex
		calls []time.Time // of the failing bucket
	)
	var clk interface{ Now() time.Time }
	hook := func(ctx context.Context, b ExpiredBatch) error {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range b.Docs {
			if d["sensor"] == "poison" {
				calls = append(calls, clk.Now())
				return errors.New("archive refuses it")
			}
		}
		return nil
	}
	db, fake := openMon(t, quiet(MonitorOptions{DeadlineWake: true, DeadlineWakeFloor: floor, Interval: interval}), WithOnExpire(hook))
	clk = fake
	ex := int32(0)
	c, err := db.CreateCollection(context.Background(), "w", CollectionOptions{
		TimeSeries:         &TimeSeriesOptions{TimeField: "timestamp", MetaField: "sensor", BucketMaxSpanSeconds: 60, BucketRoundingSeconds: 60},
		ExpireAfterSeconds: &ex,
	})

	require.NoError(t, err)
	start := fake.Now().Truncate(time.Minute).Add(-2 * time.Minute)
	_, err = c.InsertOne(context.Background(), Document{"timestamp": start, "sensor": "poison"})
	require.NoError(t, err)

	end := fake.Now().Add(10 * time.Minute)
	freshAt := fake.Now().Add(5*time.Minute + 30*time.Second)
	inserted := false
	for i := 0; fake.Now().Before(end); i++ {
		require.Less(t, i, 10000, "the monitor keeps waking: %d hook calls", len(calls))
		if !inserted && !fake.Now().Before(freshAt) {
			inserted = true
			_, err := c.InsertOne(context.Background(), Document{"timestamp": fake.Now().Add(-time.Minute), "sensor": "fresh"})
			require.NoError(t, err)
		}
		fake.Advance(db.monitor.sleepFor(fake.Now()))
		_, err := db.RunTTLPass(context.Background())
		require.NoError(t, err)
	}
	require.True(t, inserted)
	n, err := c.CountDocuments(context.Background(), Document{"sensor": "fresh"})
	require.NoError(t, err)
	assert.Zero(t, n, "the fresh bucket went while the failing one backs off")

	mu.Lock()
	got := len(calls)
	for i := 1; i < len(calls); i++ {
		want := min(floor<<(i-1), interval)
		assert.Equal(t, want, calls[i].Sub(calls[i-1]), "gap %d", i)
	}
	mu.Unlock()
	assert.Less(t, got, 40, "hook calls in 10 minutes (without backoff: one per wake, thousands)")
	assert.Greater(t, got, 10)

	// A failure while the clock is a day fast, then the clock corrected:
	// the retry is due at once, not a day later.
	now := fake.Now()
	fake.Set(now.Add(24 * time.Hour))
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	fake.Set(now)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	mu.Lock()
	assert.Equal(t, got+2, len(calls), "offered with the clock fast, then again at the first pass after the correction")
	mu.Unlock()
}
