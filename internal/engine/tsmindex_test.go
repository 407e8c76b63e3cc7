package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireTightBounds checks every measurement index of c: each member
// bucket's stored [min, max] equals the bounds computed afresh from its
// measurements, and every bucket is in both trees once.
func requireTightBounds(t *testing.T, c *Collection) {
	t.Helper()
	ts := c.timeSeries()
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	for _, ix := range ts.indexes {
		if ix.measured == nil {
			continue
		}
		n := 0
		ts.buckets.Ascend(func(b *bucket) bool {
			n++
			got, ok := ix.measured.bounds[b]
			require.True(t, ok, "bucket %d has bounds in %s", b.seq, ix.name)
			multi := ix.multikey
			require.Equal(t, ix.measuredBounds(b), got, "bucket %d bounds in %s", b.seq, ix.name)
			ix.multikey = multi
			require.True(t, ix.tree.Has(tsEntry{got.min, b}))
			require.True(t, ix.measured.byMax.Has(tsEntry{got.max, b}))
			return true
		})
		require.Equal(t, n, len(ix.measured.bounds), ix.name)
		require.Equal(t, n, ix.tree.Len(), ix.name)
		require.Equal(t, n, ix.measured.byMax.Len(), ix.name)
	}
}

// A bucket-level index on a measurement field: a range query unpacks only
// the buckets whose [min, max] of the field overlaps it, and Explain says
// so.
func TestTimeSeriesMeasurementIndexExplain(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(3600, nil))
	var docs []Document
	for h := range 10 { // ten hourly buckets of sensor a: temps 10h .. 10h+5
		for m := range 6 {
			docs = append(docs, Document{"timestamp": t0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute), "sensor": "a", "temp": 10*h + m})
		}
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	f := Document{"temp": Document{"$gte": 42, "$lt": 61}}
	ex, err := c.Explain(context.Background(), f)
	require.NoError(t, err)
	require.Equal(t, "COLLSCAN", ex.Stage)
	require.Equal(t, 10, ex.BucketsUnpacked)

	name, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("temp")}})
	require.NoError(t, err)
	ex, err = c.Explain(context.Background(), f)
	require.NoError(t, err)
	require.Equal(t, "IXSCAN", ex.Stage)
	require.Equal(t, name, ex.IndexName)
	require.Equal(t, []string{"[42, 61)"}, ex.IndexBounds)
	require.Equal(t, 3, ex.BucketsExamined, "buckets 4 (40..45), 5 (50..55) and 6 (60..65) overlap")
	require.Equal(t, 3, ex.BucketsUnpacked)
	require.Equal(t, 18, ex.DocsExamined)
	require.Equal(t, 4+6+1, ex.NReturned)
	require.LessOrEqual(t, ex.KeysExamined, 2*10)

	// An insert widens a bucket's bounds: bucket 0 now holds 100.
	_, err = c.InsertOne(context.Background(), Document{"timestamp": t0.Add(30 * time.Minute), "sensor": "a", "temp": 100})
	require.NoError(t, err)
	ex, err = c.Explain(context.Background(), Document{"temp": 100})
	require.NoError(t, err)
	require.Equal(t, "IXSCAN", ex.Stage)
	require.Equal(t, 1, ex.BucketsUnpacked)
	require.Equal(t, 1, ex.NReturned)
	// A delete narrows them again: nothing above 95 is left.
	_, err = c.DeleteMany(context.Background(), Document{"temp": 100})
	require.NoError(t, err)
	ex, err = c.Explain(context.Background(), Document{"temp": Document{"$gt": 95}})
	require.NoError(t, err)
	require.Zero(t, ex.BucketsUnpacked, "the bounds follow the delete")
	requireTightBounds(t, c)
}

// Values of several types in one bucket: the bounds order them by BSON
// type order (numbers < strings < documents < arrays < ... < dates), so a
// bucket is found for a query on any of its types.
func TestTimeSeriesMeasurementIndexMixedTypes(t *testing.T) {
	_, _, c := openTS(t, t0, weatherOpts(3600, nil))
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{
		{"_id": 1, "timestamp": t0, "sensor": "mixed", "v": 5},
		{"_id": 2, "timestamp": t0.Add(time.Second), "sensor": "mixed", "v": "abc"},
		{"_id": 3, "timestamp": t0.Add(2 * time.Second), "sensor": "mixed", "v": true},
		{"_id": 4, "timestamp": t0.Add(3 * time.Second), "sensor": "mixed"},
		{"_id": 5, "timestamp": t0, "sensor": "nums", "v": 7.5},
		{"_id": 6, "timestamp": t0, "sensor": "strs", "v": "zzz"},
	})

	require.NoError(t, err)
	for _, tc := range []struct {
		f        Document
		want     []any
		unpacked int
	}{
		// Bounds are not bracketed by type: [3, MaxKey] also overlaps the
		// strings bucket, which is unpacked and filtered out.
		{Document{"v": Document{"$gt": 3}}, []any{1, 5}, 3},
		{Document{"v": "abc"}, []any{2}, 1},
		{Document{"v": Document{"$gte": "b"}}, []any{6}, 2},
		{Document{"v": true}, []any{3}, 1},
		{Document{"v": nil}, []any{4}, 1},
		{Document{"v": Document{"$lt": 6}}, []any{1}, 1},
		{Document{"v": Document{"$in": []any{7.5, "zzz"}}}, []any{5, 6}, 3}, // 7.5 lies in the mixed bucket's [null, true]
	} {
		docs, err := findDocs(c, tc.f, FindOptions{Sort: []IndexKey{Asc("_id")}})
		require.NoError(t, err)
		var ids []any
		for _, d := range docs {
			ids = append(ids, d["_id"])
		}
		require.Equal(t, tc.want, ids, "%v", tc.f)
		ex, err := c.Explain(context.Background(), tc.f)
		require.NoError(t, err)
		require.Equal(t, "IXSCAN", ex.Stage, "%v", tc.f)
		require.Equal(t, tc.unpacked, ex.BucketsUnpacked, "%v", tc.f)
	}
}

// The bounds are computed for every bucket when the index is created,
// widened by inserts and recomputed by trims and deletes: always tight.
func TestTimeSeriesMeasurementIndexBoundsMaintained(t *testing.T) {
	opts := weatherOpts(3600, Seconds(600))
	opts.TimeSeries.PreciseExpiry = true
	db, clk, c := openTS(t, t0, opts)
	var docs []Document
	for i := range 40 {
		docs = append(docs, Document{"timestamp": t0.Add(time.Duration(i) * time.Minute), "sensor": fmt.Sprintf("s%d", i%3), "v": i, "d": Document{"x": []any{i, -i}}})
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Desc("d.x"), Asc("sensor")}})
	require.NoError(t, err)
	requireTightBounds(t, c)
	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	require.False(t, specs[0].Multikey)
	require.True(t, specs[1].Multikey, "d.x holds arrays")

	_, err = c.InsertOne(context.Background(), Document{"timestamp": t0.Add(41 * time.Minute), "sensor": "s0", "v": -5})
	require.NoError(t, err)
	requireTightBounds(t, c)
	clk.Set(t0.Add(20 * time.Minute)) // trims the first ten minutes
	tsPass(t, db)
	requireTightBounds(t, c)
	n, err := c.CountDocuments(context.Background(), Document{"v": Document{"$lt": 10}})
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "only -5 is left below 10")
	_, err = c.DeleteMany(context.Background(), Document{"v": Document{"$gte": 30}})
	require.NoError(t, err)
	requireTightBounds(t, c)
	_, err = c.UpdateMany(context.Background(), Document{"sensor": "s1"}, Document{"$set": Document{"sensor": "s9"}})
	require.NoError(t, err)
	requireTightBounds(t, c)
	ex, err := c.Explain(context.Background(), Document{"d.x": -25})
	require.NoError(t, err)
	require.Equal(t, "IXSCAN", ex.Stage)
	require.Equal(t, "d.x_-1_sensor_1", ex.IndexName)
	require.Equal(t, 1, ex.NReturned)
}

// tsDiffValue draws a value of a random type for the differential test.
func tsDiffValue(r *rand.Rand, arrays bool) any {
	switch r.IntN(10) {
	case 0:
		return nil
	case 1:
		return fmt.Sprintf("%c", 'a'+r.IntN(5))
	case 2:
		return r.IntN(2) == 0
	case 3:
		return float64(r.IntN(40)) / 2
	case 4:
		if arrays {
			return []any{r.IntN(20), r.IntN(20)}
		}
		return r.IntN(20)
	case 5:
		return t0.Add(time.Duration(r.IntN(5)) * time.Hour)
	default:
		return r.IntN(20)
	}
}

// tsDiffFilter draws a filter on a measurement field (alone, with the
// meta field, or twice in an $and).
func tsDiffFilter(r *rand.Rand, arrays bool) Document {
	field := []string{"v", "d.x"}[r.IntN(2)]
	op := func() Document {
		x := tsDiffValue(r, false)
		switch r.IntN(9) {
		case 0:
			return Document{field: x}
		case 1:
			return Document{field: Document{"$gt": x}}
		case 2:
			return Document{field: Document{"$gte": x}}
		case 3:
			return Document{field: Document{"$lt": x}}
		case 4:
			return Document{field: Document{"$lte": x}}
		case 5:
			return Document{field: Document{"$in": []any{x, tsDiffValue(r, false)}}}
		case 6:
			return Document{field: Document{"$gte": r.IntN(20), "$lt": r.IntN(20)}}
		case 7:
			return Document{field: Document{"$ne": x}}
		default:
			return Document{field: Document{"$gt": float64(r.IntN(20)) - 0.5, "$lte": "c"}}
		}
	}
	switch r.IntN(4) {
	case 0:
		return Document{"$and": []any{op(), op()}}
	case 1:
		f := op()
		f["sensor"] = fmt.Sprintf("s%d", r.IntN(4))
		return f
	}
	return op()
}

// The differential test: the same random measurements, random deletes,
// precise-expiry trims and random filters on measurement fields give the
// same results on a time-series collection with indexes on those fields,
// one without, and a plain collection holding the same measurements (whose
// TTL index expires each at its time + E, as PreciseExpiry does).
func TestTimeSeriesMeasurementIndexDifferential(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 11))
			arrays := seed%2 == 1
			opts := weatherOpts(600, Seconds(1800))
			opts.TimeSeries.PreciseExpiry = true
			db, clk, plainTS := openTS(t, t0, opts)
			indexed, err := db.CreateCollection(context.Background(), "ix", opts)
			require.NoError(t, err)
			plain := db.Collection("plain")
			_, err = plain.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("timestamp")}, ExpireAfterSeconds: Seconds(1800)})
			require.NoError(t, err)
			all := []*Collection{plainTS, indexed, plain}
			nextID := 0
			insert := func(n int) {
				var docs []Document
				for range n {
					d := Document{"_id": nextID, "timestamp": clk.Now().Add(time.Duration(r.IntN(1200)) * time.Second), "sensor": fmt.Sprintf("s%d", r.IntN(4))}
					nextID++
					if r.IntN(6) > 0 {
						d["v"] = tsDiffValue(r, arrays)
					}
					switch r.IntN(4) {
					case 0:
						d["d"] = Document{"x": tsDiffValue(r, arrays)}
					case 1:
						if arrays {
							d["d"] = []any{Document{"x": r.IntN(20)}, Document{"x": tsDiffValue(r, false)}}
						}
					}
					docs = append(docs, d)
				}
				for _, c := range all {
					_, err := c.InsertMany(context.Background(), docs)
					require.NoError(t, err)
				}
			}
			insert(150)
			_, err = indexed.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}})
			require.NoError(t, err)
			_, err = indexed.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Desc("d.x")}})
			require.NoError(t, err)
			requireTightBounds(t, indexed)
			ixScans, pruned := 0, 0
			for step := range 30 {
				switch r.IntN(5) {
				case 0:
					insert(1 + r.IntN(60))
				case 1:
					f := tsDiffFilter(r, arrays)
					var want int64
					for i, c := range all {
						res, err := c.DeleteMany(context.Background(), f)
						require.NoError(t, err)
						n := res.DeletedCount
						if i == 0 {
							want = n
						}
						require.Equal(t, want, n, "step %d: delete %v on %s", step, f, c.Name())
					}
				case 2:
					clk.Advance(time.Duration(r.IntN(600)) * time.Second)
					tsPass(t, db)
				}
				requireTightBounds(t, indexed)
				for range 8 {
					f := tsDiffFilter(r, arrays)
					var want []Document
					for i, c := range all {
						got, err := findDocs(c, f, FindOptions{Sort: []IndexKey{Asc("_id")}})
						require.NoError(t, err)
						if i == 0 {
							want = got
							continue
						}
						require.Equal(t, want, got, "step %d: filter %v on %s", step, f, c.Name())
					}
					ex, err := indexed.Explain(context.Background(), f)
					require.NoError(t, err)
					if ex.Stage == "IXSCAN" {
						ixScans++
						ts := indexed.timeSeries()
						ts.mu.RLock()
						total := ts.buckets.Len()
						ts.mu.RUnlock()
						if ex.BucketsUnpacked < total {
							pruned++
						}
					}
				}
			}
			require.Positive(t, ixScans, "the planner used the measurement indexes")
			require.Positive(t, pruned, "some queries skipped buckets")
		})
	}
}
