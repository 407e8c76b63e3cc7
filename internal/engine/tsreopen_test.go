package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// lateTimes returns n times spread evenly over d from t0, shuffled by r
// (r nil: in time order).
func lateTimes(r *rand.Rand, n int, d time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = t0.Add(d * time.Duration(i) / time.Duration(n))
	}
	if r != nil {
		r.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// requireBucketsSound checks every bucket of ts: its measurements in its
// range [start, start+span), its min and max theirs, at most the count
// limit, in the reopen tree exactly when not full, and every one in the
// collection's expiry tree under its key.
func requireBucketsSound(t *testing.T, ts *tsColl) {
	t.Helper()
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	span := time.Duration(ts.span) * time.Second
	n := 0
	ts.buckets.Ascend(func(b *bucket) bool {
		require.LessOrEqual(t, b.len(), TimeSeriesBucketMaxCount)
		lo, hi := b.timeAt(0), b.timeAt(0)
		for i := range b.offs {
			at := b.timeAt(i)
			require.False(t, at.Before(b.start), "bucket %d: measurement %d before its start", b.seq, i)
			require.True(t, at.Before(b.start.Add(span)), "bucket %d: measurement %d past its range", b.seq, i)
			if at.Before(lo) {
				lo = at
			}
			if at.After(hi) {
				hi = at
			}
		}
		require.Equal(t, lo, b.min, "bucket %d control.min", b.seq)
		require.Equal(t, hi, b.max, "bucket %d control.max", b.seq)
		if ts.reopen != nil {
			_, listed := ts.reopen.Get(b)
			require.Equal(t, b.len() < TimeSeriesBucketMaxCount, listed, "bucket %d in the reopen tree", b.seq)
		}
		_, inExp := ts.collExp.tree.Get(ts.expEntry(b))
		require.True(t, inExp, "bucket %d in the expiry tree", b.seq)
		for _, ix := range ts.indexes {
			if ix.measured != nil {
				// The bounds widened by each insert are those of its
				// measurements.
				want := ix.measuredBounds(b)
				require.Equal(t, want, ix.measured.bounds[b], "bucket %d bounds in %s", b.seq, ix.name)
				_, inMin := ix.tree.Get(tsEntry{want.min, b})
				_, inMax := ix.measured.byMax.Get(tsEntry{want.max, b})
				require.True(t, inMin && inMax, "bucket %d in %s", b.seq, ix.name)
				continue
			}
			k, _ := ix.keyOf(ts, b)
			_, in := ix.tree.Get(tsEntry{k, b})
			require.True(t, in, "bucket %d in %s", b.seq, ix.name)
		}
		n += b.len()
		return true
	})
	require.Equal(t, ts.count, n)
	for _, ix := range ts.indexes {
		require.Equal(t, ts.buckets.Len(), ix.tree.Len(), "entries of %s", ix.name)
	}
	if ts.reopen != nil {
		require.LessOrEqual(t, ts.reopen.Len(), ts.buckets.Len())
	}
}

// loadLate inserts one measurement per time into a new time-series
// collection "w" of one sensor whose meta value is 512 bytes, and returns
// it.
func loadLate(t *testing.T, db *DB, times []time.Time, opts CollectionOptions, indexes ...IndexKey) *Collection {
	t.Helper()
	c, err := db.CreateCollection(context.Background(), "w", opts)
	require.NoError(t, err)
	for _, k := range indexes {
		_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{k}})
		require.NoError(t, err)
	}
	meta := strings.Repeat("s", 512)
	for i, at := range times {
		_, err := c.InsertOne(context.Background(), Document{"timestamp": at, "sensor": meta, "i": i})
		require.NoError(t, err)
	}
	return c
}

// Rule (MongoDB 6.3+): a measurement later than its sensor's open bucket
// goes into an existing bucket of the sensor whose range covers it, if
// one has room: 20,000 measurements of one sensor over 6 hours in random
// order make at most three times the buckets they make in time order (20
// full ones), where they made 16,949. Past the full buckets, a random
// order ends with partly filled ones whose ranges overlap (33 to 48
// buckets in all over 12 seeds); the bound leaves room for that spread.
func TestTimeSeriesLateMeasurementsReopenBuckets(t *testing.T) {
	seed := testutil.Seed(t)
	const n = 20_000
	ordered, _ := openMon(t, quiet(MonitorOptions{}))
	oc := loadLate(t, ordered, lateTimes(nil, n, 6*time.Hour), weatherOpts(0, nil))
	random, _ := openMon(t, quiet(MonitorOptions{}))
	rc := loadLate(t, random, lateTimes(rand.New(rand.NewPCG(seed, 13)), n, 6*time.Hour), weatherOpts(0, nil), Asc("i"), Asc("sensor"), Asc("timestamp"))

	oi, _, err := oc.TimeSeriesInfo(context.Background())
	require.NoError(t, err)
	ri, _, err := rc.TimeSeriesInfo(context.Background())
	require.NoError(t, err)
	t.Logf("time order: %d buckets; random order: %d buckets", oi.Buckets, ri.Buckets)
	assert.Equal(t, n/TimeSeriesBucketMaxCount, oi.Buckets)
	assert.LessOrEqual(t, ri.Buckets, 3*oi.Buckets)
	assert.Equal(t, n, ri.Measurements)
	requireBucketsSound(t, oc.timeSeries())
	requireBucketsSound(t, rc.timeSeries())

	// Every measurement reads back, and a time range finds exactly its
	// measurements.
	got, err := rc.CountDocuments(context.Background(), Document{"timestamp": Document{"$gte": t0.Add(time.Hour), "$lt": t0.Add(2 * time.Hour)}})
	require.NoError(t, err)
	assert.EqualValues(t, n/6, got)
}

// Rule: a collection whose spec predates reopening (no reopenBuckets)
// places as it always did, so that the ops it logged replay alike: a late
// measurement opens a bucket.
func TestTimeSeriesLegacyPlacement(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	opts := weatherOpts(0, nil)
	spec := collectionSpec(CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "timestamp", MetaField: "sensor", legacyPlacement: true}})
	assert.NotContains(t, spec.Document()["timeseries"], "reopenBuckets")
	legacy, err := collectionOptionsOf(spec)
	require.NoError(t, err)
	require.True(t, legacy.TimeSeries.legacyPlacement)
	cur, err := collectionOptionsOf(collectionSpec(opts))
	require.NoError(t, err)
	require.False(t, cur.TimeSeries.legacyPlacement)

	s, err := newTimeSeriesCollState(db, "old", legacy)
	require.NoError(t, err)
	for _, at := range []time.Duration{2 * time.Hour, 0, 2 * time.Hour, time.Minute} {
		s.ts.mu.Lock()
		m, err := s.ts.prepare(Document{"timestamp": t0.Add(at), "sensor": 1}, t0)
		require.NoError(t, err)
		s.ts.place(m)
		s.ts.mu.Unlock()
	}
	assert.Equal(t, 4, s.ts.buckets.Len(), "each measurement out of the open bucket's range opens one")
}

// Rule: with late measurements in reopened buckets, expiry stays exact: no
// measurement goes before its own threshold (time + E), and none stays
// past its bucket's (start + span + E), which is less than a span after
// its own; with PreciseExpiry each goes at its own threshold.
func TestTimeSeriesLateMeasurementsExpireExactly(t *testing.T) {
	seed := testutil.Seed(t)
	for _, precise := range []bool{false, true} {
		t.Run(fmt.Sprintf("precise=%v", precise), func(t *testing.T) {
			const n, e = 5000, 600
			expire := int32(e)
			opts := weatherOpts(0, &expire)
			opts.TimeSeries.PreciseExpiry = precise
			db, clk := openMon(t, quiet(MonitorOptions{}))
			times := lateTimes(rand.New(rand.NewPCG(seed, 17)), n, 4*time.Hour)
			c := loadLate(t, db, times, opts)
			ts := c.timeSeries()
			requireBucketsSound(t, ts)
			span := time.Duration(ts.span) * time.Second
			for step := 0; step < 40; step++ {
				clk.Advance(7*time.Minute + 13*time.Second)
				_, err := db.RunTTLPass(context.Background())
				require.NoError(t, err)
				now := clk.Now()
				cur, err := c.Find(context.Background(), nil)
				require.NoError(t, err)
				left := map[int]bool{}
				for d, err := range cur.Documents(context.Background()) {
					require.NoError(t, err)
					left[d["i"].(int)] = true
				}
				for i, at := range times {
					own := at.Add(e * time.Second)
					switch {
					case !left[i]:
						require.False(t, now.Before(own), "measurement %d (%v) deleted at %v, before its threshold %v", i, at, now, own)
					case precise:
						require.True(t, now.Before(own), "measurement %d (%v) kept at %v past its threshold %v", i, at, now, own)
					default:
						require.True(t, now.Before(own.Add(span)), "measurement %d (%v) kept at %v a span past its threshold %v", i, at, now, own)
					}
				}
				requireBucketsSound(t, ts)
			}
		})
	}
}

// tsDump describes a time-series collection's buckets as a snapshot keeps
// them, and its reopen tree.
func tsDump(ts *tsColl) string {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	var sb strings.Builder
	fmt.Fprintf(&sb, "next %d count %d\n", ts.nextSeq, ts.count)
	ts.buckets.Ascend(func(b *bucket) bool {
		fmt.Fprintf(&sb, "%d %v open=%v %v %x\n", b.seq, b.start, ts.open[b.metaKey] == b, b.offs, b.data)
		return true
	})
	if ts.reopen != nil {
		ts.reopen.Ascend(func(b *bucket) bool { fmt.Fprintf(&sb, "reopen %d\n", b.seq); return true })
	}
	return sb.String()
}

// Rule: late measurements reload to the same buckets, from a snapshot and
// from the log (the ops after it placed into reopened buckets alike), and
// a DB applying the origin's ops holds the same buckets.
func TestTimeSeriesLateMeasurementsReload(t *testing.T) {
	seed := testutil.Seed(t)
	for _, snap := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", snap), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 19))
			clk := ttltest.NewClock(t0)
			dir := t.TempDir()
			db := mustOpenDurable(t, clk, dir)
			sink := &recordingSink{}
			db.ops.attach(sink)
			c, err := db.CreateCollection(context.Background(), "w", weatherOpts(0, nil))
			require.NoError(t, err)
			times := lateTimes(r, 3000, 6*time.Hour)
			for i, at := range times {
				_, err := c.InsertOne(context.Background(), Document{"timestamp": at, "sensor": i % 3, "i": i})
				require.NoError(t, err)
				if snap && i == 1500 {
					require.NoError(t, db.Snapshot(context.Background()))
				}
				if i%500 == 499 {
					// Deletes name measurements by bucket and position.
					_, err := c.DeleteMany(context.Background(), Document{"i": r.IntN(i)})
					require.NoError(t, err)
				}
			}
			want := tsDump(c.timeSeries())
			requireBucketsSound(t, c.timeSeries())
			require.NoError(t, db.Close())

			again := mustOpenDurable(t, clk, dir)
			requireSameDump(t, want, tsDump(again.Collection("w").timeSeries()), "reloaded")
			replica, _ := openMon(t, quiet(MonitorOptions{}))
			require.NoError(t, replica.Apply(context.Background(), sink.take()...))
			requireSameDump(t, want, tsDump(replica.Collection("w").timeSeries()), "applied")

			// The next late inserts place alike on both.
			for i, at := range lateTimes(r, 500, 6*time.Hour) {
				d := Document{"_id": i, "timestamp": at, "sensor": i % 3}
				_, err := again.Collection("w").InsertOne(context.Background(), d)
				require.NoError(t, err)
				_, err = replica.Collection("w").InsertOne(context.Background(), d)
				require.NoError(t, err)
			}
			requireSameDump(t, tsDump(again.Collection("w").timeSeries()), tsDump(replica.Collection("w").timeSeries()), "after more inserts")
			require.NoError(t, again.Close())
		})
	}
}

// requireSameDump compares two tsDumps line by line, reporting the first
// difference only.
func requireSameDump(t *testing.T, want, got, what string) {
	t.Helper()
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			t.Fatalf("%s: line %d differs:\nwant %.300s\ngot  %.300s", what, i, w[i], g[i])
		}
	}
	require.Equal(t, len(w), len(g), "%s: lines", what)
}
