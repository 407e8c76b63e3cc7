package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxBacklogProbes bounds the counts atOrBefore reads for one query.
const maxBacklogProbes = countLevels*(countFan/2+1) + 1

// The counts answer "how many keys <= k" exactly for any multiset of keys
// over the whole uint64 range, reading a bounded number of counts.
func TestExpiryCountsAtOrBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 14))
	keyOf := func() uint64 {
		switch rng.IntN(6) {
		case 0: // the extremes
			return []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1, 1 << 63, 1<<63 - 1}[rng.IntN(6)]
		case 1: // anywhere
			return rng.Uint64()
		default: // clustered around present-day dates, as real data is
			return uint64(1_770_000_000+rng.Int64N(10_000_000)) ^ 1<<63
		}
	}
	c := newExpiryCounts()
	var keys []uint64
	addKey := func(k uint64) {
		keys = append(keys, k)
		c.add(int64(k^1<<63), 0, 1)
	}
	check := func(q uint64) {
		t.Helper()
		want := int64(0)
		for _, k := range keys {
			if k <= q {
				want++
			}
		}
		got, probes := c.atOrBefore(q)
		require.Equal(t, want, got, "keys <= %#x among %d", q, len(keys))
		require.LessOrEqual(t, probes, maxBacklogProbes)
	}
	for round := range 3000 {
		addKey(keyOf())
		if rng.IntN(4) == 0 && len(keys) > 0 { // remove one
			i := rng.IntN(len(keys))
			k := keys[i]
			keys = slices.Delete(keys, i, i+1)
			c.add(int64(k^1<<63), 0, -1)
		}
		if round%10 == 0 {
			check(keyOf())
			if len(keys) > 0 {
				k := keys[rng.IntN(len(keys))]
				check(k)
				check(k - 1)
				check(k + 1)
			}
		}
	}
	check(0)
	check(math.MaxUint64)
	// Removing everything leaves empty maps: no bucket of count 0 stays.
	for _, k := range keys {
		c.add(int64(k^1<<63), 0, -1)
	}
	for l := range c.levels {
		assert.Empty(t, c.levels[l], "level %d", l)
	}
	assert.Zero(t, c.total)
}

// countKey rounds a date up to its whole second and keeps the order of
// dates, before and after 1970; cutoffKey rounds down.
func TestCountKeyRounding(t *testing.T) {
	dates := []time.Time{
		time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 500, time.UTC),
		time.Unix(0, 0),
		time.Unix(0, 1),
		time.Unix(1, 0),
		time.Date(2026, 1, 1, 0, 0, 0, 999_999_999, time.UTC),
	}
	for _, d := range dates {
		e := entryFor(d, &record{})
		k := countKey(e.sec, e.nsec)
		up := d.Truncate(time.Second)
		if !up.Equal(d) {
			up = up.Add(time.Second)
		}
		assert.Equal(t, cutoffKey(up), k, "%v rounds up to %v", d, up)
		assert.Equal(t, cutoffKey(d.Truncate(time.Second)), cutoffKey(d), "%v rounds down", d)
	}
	for i := 1; i < len(dates); i++ {
		a, b := entryFor(dates[i-1], &record{}), entryFor(dates[i], &record{})
		assert.LessOrEqual(t, countKey(a.sec, a.nsec), countKey(b.sec, b.nsec))
	}
}

// modelBacklog computes what Metrics must report by visiting every entry
// of every TTL index: the backlog to the second (its documented rule), the
// exact number expired, and the oldest expired threshold. It also checks
// that each index's counts hold as many entries as its tree.
func modelBacklog(t testing.TB, db *DB, now time.Time) (toSecond, exact int64, oldest time.Duration) {
	t.Helper()
	for _, s := range db.snapshotCollections() {
		s.mu.RLock()
		for _, ix := range s.indexes {
			if ix.ttl == nil {
				continue
			}
			require.Equal(t, int64(ix.ttl.expiry.Len()), ix.ttl.counts.total, "index %s.%s", s.name, ix.name)
			cut := ix.ttl.cutoff(now)
			ix.ttl.expiry.Ascend(func(e expiryEntry) bool {
				th := ix.ttl.threshold(e)
				if countKey(e.sec, e.nsec) <= cutoffKey(cut) {
					toSecond++
				}
				if !th.After(now) {
					exact++
					oldest = max(oldest, now.Sub(th))
				}
				return true
			})
		}
		s.mu.RUnlock()
	}
	return toSecond, exact, oldest
}

// Rule: Metrics' backlog follows every change of the expiry trees —
// inserts, updates that move, add or remove a date, deletes, TTL passes,
// CollMod, Compact, index drops and builds, clock steps back and forth —
// as counted to the second: exact for whole-second thresholds, otherwise
// at most the documents expired less than a second ago are missing.
func TestMetricsBacklogFollowsWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 14))
	db, clk := openMon(t, quiet(MonitorOptions{PerIndexMaxDeletes: 7}))
	colls := []*Collection{ttlColl(t, db, "a", 30), ttlColl(t, db, "b", 0)}
	_, err := colls[1].CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("seen")}, ExpireAfterSeconds: Seconds(5)})
	require.NoError(t, err)
	date := func() any {
		base := clk.Now().Add(time.Duration(rng.IntN(240)-120) * time.Second)
		switch rng.IntN(8) {
		case 0:
			return base.Add(time.Duration(rng.IntN(1e9))) // a fraction of a second
		case 1:
			return time.Date(1969, 12, 31, 23, 59, 59, rng.IntN(1e9), time.UTC)
		case 2:
			return "not a date"
		case 3:
			return []any{base, base.Add(-time.Duration(rng.IntN(90)) * time.Second)}
		default:
			return base
		}
	}
	for step := range 1500 {
		c := colls[rng.IntN(len(colls))]
		id := rng.IntN(60)
		var err error
		switch op := rng.IntN(100); {
		case op < 30:
			_, err = c.InsertOne(context.Background(), Document{"_id": fmt.Sprint(id, "-", step), "lastModifiedDate": date(), "seen": date()})
		case op < 50:
			_, err = c.UpdateMany(context.Background(), Document{"_id": Document{"$gte": fmt.Sprint(id)}}, Document{"$set": Document{"lastModifiedDate": date()}})
		case op < 55:
			_, err = c.UpdateOne(context.Background(), Document{}, Document{"$unset": Document{"seen": ""}})
		case op < 62:
			_, err = c.DeleteOne(context.Background(), Document{"_id": Document{"$gte": fmt.Sprint(id)}})
		case op < 70:
			_, err = db.RunTTLPass(context.Background())
		case op < 80:
			clk.Advance(time.Duration(rng.IntN(5000)) * time.Millisecond)
		case op < 83:
			clk.Set(clk.Now().Add(time.Duration(rng.IntN(600)-300) * time.Second))
		case op < 87:
			_, err = db.CollMod(context.Background(), "a", CollModIndex{Name: "lastModifiedDate_1", ExpireAfterSeconds: Seconds(int32(rng.IntN(120)))})
		case op < 89:
			err = c.Compact(context.Background())
		case op < 91:
			if err = colls[1].DropIndex(context.Background(), "seen_1"); err == nil {
				_, err = colls[1].CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("seen")}, ExpireAfterSeconds: Seconds(int32(rng.IntN(10)))})
			}
		}
		require.NoError(t, err, "step %d", step)

		now := clk.Now()
		m := db.Metrics().TTL
		toSecond, exact, oldest := modelBacklog(t, db, now)
		require.Equal(t, toSecond, m.Backlog, "step %d", step)
		require.LessOrEqual(t, m.Backlog, exact, "never counted before it expired")
		require.Equal(t, oldest, m.OldestBacklogAge, "step %d", step)
		if now.Equal(now.Truncate(time.Second)) {
			// Whole-second now: only fractional dates within the last
			// second can be missing.
			_, exactAgo, _ := modelBacklog(t, db, now.Add(-time.Second+time.Nanosecond))
			require.GreaterOrEqual(t, m.Backlog, exactAgo, "step %d", step)
		}
	}
	require.Positive(t, db.Metrics().TTL.Backlog+db.Metrics().TTL.DeletedDocuments)
}

// Rule: Metrics finds the backlog without walking it: the counts and
// entries it reads per TTL index are bounded whatever the backlog, the same
// bound at 100 and at 100,000 expired documents.
func TestMetricsBacklogDoesNotWalk(t *testing.T) {
	work := func(backlog int) (int64, int64) {
		db, clk := openMon(t, quiet(MonitorOptions{}))
		c := ttlColl(t, db, "c", 60)
		docs := make([]Document, backlog)
		for i := range docs {
			docs[i] = Document{"_id": i, "lastModifiedDate": t0.Add(time.Duration(i) * time.Millisecond)}
		}
		_, err := c.InsertMany(context.Background(), docs)
		require.NoError(t, err)
		clk.Advance(time.Duration(backlog)*time.Millisecond + time.Hour)
		before := db.metrics.backlogWork.Load()
		m := db.Metrics().TTL
		return m.Backlog, db.metrics.backlogWork.Load() - before
	}
	n, small := work(100)
	require.Equal(t, int64(100), n)
	n, large := work(100_000)
	require.Equal(t, int64(100_000), n)
	bound := int64(maxBacklogProbes + 1) // the counts, and the tree's first entry
	assert.LessOrEqual(t, small, bound)
	assert.LessOrEqual(t, large, bound, "work with 100,000 expired: %d, with 100: %d", large, small)
	assert.Less(t, large, int64(1000))
}

// Rule: a TTL index built while writers change its documents (the build
// applies their writes from a side list) ends with counts that agree with
// its tree.
func TestMetricsBacklogAfterConcurrentBuild(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("c")
	docs := make([]Document, 20_000)
	for i := range docs {
		docs[i] = Document{"_id": i, "at": t0.Add(time.Duration(i) * time.Millisecond)}
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(3, 4))
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := rng.IntN(len(docs))
			var err error
			switch rng.IntN(3) {
			case 0:
				_, err = c.UpdateOne(context.Background(), Document{"_id": id}, Document{"$set": Document{"at": t0.Add(time.Duration(rng.IntN(60_000)) * time.Millisecond)}})
			case 1:
				_, err = c.UpdateOne(context.Background(), Document{"_id": id}, Document{"$unset": Document{"at": ""}})
			default:
				_, err = c.DeleteOne(context.Background(), Document{"_id": id})
			}
			if !assert.NoError(t, err) {
				return
			}
		}
	}()
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(10)})
	close(stop)
	<-done
	require.NoError(t, err)
	clk.Advance(40 * time.Second)
	toSecond, _, oldest := modelBacklog(t, db, clk.Now())
	m := db.Metrics().TTL
	assert.Equal(t, toSecond, m.Backlog)
	assert.Equal(t, oldest, m.OldestBacklogAge)
	assert.Positive(t, m.Backlog)
}

// Within a TTL batch (deferAdds .. flush) the counts sum the changes of one
// key and touch the maps only when the key changes: a batch of one second's
// documents changes each level once. After flush they equal counts kept
// change by change, for any sequence.
func TestExpiryCountsDeferredBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	ref, c := newExpiryCounts(), newExpiryCounts()
	base := int64(1_770_000_000)
	for round := range 200 {
		// Some documents to delete, over a few seconds.
		for range 20 {
			sec := base + rng.Int64N(5)
			ref.add(sec, 0, 1)
			c.add(sec, 0, 1)
		}
		c.deferAdds()
		for range rng.IntN(30) {
			sec := base + rng.Int64N(5)
			if rng.IntN(8) == 0 {
				ref.add(sec, 0, 1) // a rare add inside the batch
				c.add(sec, 0, 1)
			} else if ref.levels[0][countKey(sec, 0)] > 0 {
				ref.add(sec, 0, -1)
				c.add(sec, 0, -1)
			}
		}
		if round == 0 {
			// One key repeated: the levels wait for flush.
			k := countKey(base, 0)
			n := c.levels[0][k]
			c.add(base, 0, -1)
			c.add(base, 0, -1)
			require.Equal(t, n, c.levels[0][k], "changes of one key are deferred")
			ref.add(base, 0, -1)
			ref.add(base, 0, -1)
		}
		c.flush()
		require.Equal(t, ref.total, c.total, "round %d", round)
		for l := range ref.levels {
			require.Equal(t, ref.levels[l], c.levels[l], "round %d level %d", round, l)
		}
	}
}
