package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// openCancelDB opens a DB on a fake clock with the monitor off.
func openCancelDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(WithClock(ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))),
		WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// snapshot returns every stored record of c (its version and bytes), in
// natural order: equal snapshots mean nothing changed.
func snapshot(t *testing.T, c *Collection) []string {
	t.Helper()
	s, err := c.read()
	require.NoError(t, err)
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	s.natural.Ascend(func(it natItem) bool {
		r := s.rec(it.slot)
		out = append(out, fmt.Sprintf("%d:%x", r.ver, r.enc))
		return true
	})
	return out
}

// withCancelAt makes the k-th look at a context (1-based) cancel it, and
// returns the context and a func reporting how many looks there were.
func withCancelAt(t *testing.T, k int) (context.Context, func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	looks := 0
	cancelHook = func() {
		looks++
		if looks == k {
			cancel()
		}
	}
	t.Cleanup(func() { cancelHook = nil; cancel() })
	return ctx, func() int { return looks }
}

func fillCancel(t *testing.T, c *Collection, n int) {
	t.Helper()
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = Document{"_id": i, "v": i % 7}
	}
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
}

// An UpdateMany cancelled at any of its looks at the context (before the
// call, during the scan, while applying the update, while encoding, just
// before the commit) changes nothing and returns the context's error;
// uncancelled, the same call updates everything.
func TestUpdateManyCancelledChangesNothing(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	fillCancel(t, c, 1000)
	before := snapshot(t, c)
	update := Document{"$inc": Document{"v": 1}}

	_, looks := withCancelAt(t, -1)
	res, err := c.UpdateMany(context.Background(), nil, update)
	require.NoError(t, err)
	total := looks()
	require.EqualValues(t, 1000, res.ModifiedCount)
	require.GreaterOrEqual(t, total, 1+3+3+3+1, "looks: start, scan, apply, encode, commit")
	updated := snapshot(t, c)
	require.NotEqual(t, before, updated)

	for k := 1; k <= total; k++ {
		ctx, _ := withCancelAt(t, k)
		res, err := c.UpdateMany(ctx, nil, update)
		require.ErrorIs(t, err, context.Canceled, "cancelled at look %d", k)
		require.Equal(t, &UpdateResult{}, res, "a failed update's result is zero")
		require.Equal(t, updated, snapshot(t, c), "cancelled at look %d: something changed", k)
	}

	// A context already past its deadline: DeadlineExceeded, nothing done.
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	_, err = c.UpdateMany(ctx, Document{"v": 3}, update)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, updated, snapshot(t, c))
}

// A DeleteMany cancelled before the call, mid-scan or just before it
// deletes deletes nothing.
func TestDeleteManyCancelledDeletesNothing(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	fillCancel(t, c, 1000)
	before := snapshot(t, c)

	_, looks := withCancelAt(t, -1)
	// Count the looks of a DeleteMany that matches nothing (a full scan).
	n, err := c.DeleteMany(context.Background(), Document{"v": 99})
	require.NoError(t, err)
	require.Zero(t, n.DeletedCount)
	total := looks()
	require.GreaterOrEqual(t, total, 1+3+1)
	for k := 1; k <= total; k++ {
		ctx, _ := withCancelAt(t, k)
		n, err := c.DeleteMany(ctx, nil)
		require.ErrorIs(t, err, context.Canceled, "cancelled at look %d", k)
		require.Zero(t, n.DeletedCount)
		require.Equal(t, before, snapshot(t, c), "cancelled at look %d: something was deleted", k)
	}
	cancelHook = nil
	n, err = c.DeleteMany(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1000, n.DeletedCount)
}

// Time-series: DeleteMany, Find and CountDocuments cancelled mid-scan
// (DeleteMany deletes nothing); the cursor, EstimatedDocumentCount and
// Distinct work on measurements.
func TestTimeSeriesReadsAndCancel(t *testing.T) {
	db := openCancelDB(t)
	c, err := db.CreateCollection(context.Background(), "w", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m"}})
	require.NoError(t, err)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	docs := make([]Document, 1000)
	for i := range docs {
		docs[i] = Document{"t": t0.Add(time.Duration(i) * time.Second), "m": i % 3, "v": i}
	}
	_, err = c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	ctx, _ := withCancelAt(t, 2) // the call's own look, then the scan's first
	_, err = c.DeleteMany(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	ctx, _ = withCancelAt(t, 2)
	_, err = c.Find(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	ctx, _ = withCancelAt(t, 2)
	_, err = c.CountDocuments(ctx, Document{"v": 5})
	require.ErrorIs(t, err, context.Canceled)
	cancelHook = nil
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1000, n)
	n, err = c.EstimatedDocumentCount(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 1000, n)
	ms, err := c.Distinct(context.Background(), "m", nil)
	require.NoError(t, err)
	require.Equal(t, []any{0, 1, 2}, ms)
	cur, err := c.Find(context.Background(), Document{"m": 1}, FindOptions{Sort: []IndexKey{Desc("v")}, Limit: 2})
	require.NoError(t, err)
	var got []struct {
		V int `bson:"v"`
	}
	require.NoError(t, cur.All(context.Background(), &got))
	require.Equal(t, 997, got[0].V)
	require.Equal(t, 994, got[1].V)
}

// CreateIndex cancelled before the call or mid-scan builds nothing and
// leaves nothing behind; the same build then succeeds.
func TestCreateIndexCancelled(t *testing.T) {
	db := openCancelDB(t)
	c := db.Collection("c")
	fillCancel(t, c, 2000)
	m := IndexModel{Keys: []IndexKey{Asc("v")}}
	names := func() []string {
		ixs, err := c.Indexes(context.Background())
		require.NoError(t, err)
		var out []string
		for _, ix := range ixs {
			out = append(out, ix.Name)
		}
		return out
	}
	before := names()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.CreateIndex(ctx, m)
	require.ErrorIs(t, err, context.Canceled)
	for _, k := range []int{2, 4} { // the scan's first and third chunks
		ctx, _ := withCancelAt(t, k)
		_, err = c.CreateIndex(ctx, m)
		require.ErrorIs(t, err, context.Canceled, "cancelled at look %d", k)
		require.Equal(t, before, names())
		s, err := c.read()
		require.NoError(t, err)
		s.writeMu.Lock()
		require.Empty(t, s.builds, "no build left registered")
		s.writeMu.Unlock()
	}
	cancelHook = nil
	name, err := c.CreateIndex(context.Background(), m)
	require.NoError(t, err)
	ex, err := c.Explain(context.Background(), Document{"v": 3})
	require.NoError(t, err)
	require.Equal(t, name, ex.IndexName)
}
