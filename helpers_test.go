package ttldb_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// storeT0 is the fake clock's start in the store tests: not on a whole
// second, so that tests can tell truncation to the second.
var storeT0 = time.Date(2026, 3, 4, 5, 6, 7, 500_000_000, time.UTC)

// openStore opens a DB on a fake clock with the monitor off and closes it
// when the test ends.
func openStore(t testing.TB) (*ttldb.DB, *ttltest.Clock) {
	t.Helper()
	clk := ttltest.NewClock(storeT0)
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db, clk
}

// ids returns the _id values of docs, in order.
func ids(docs []ttldb.Document) []any {
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d["_id"]
	}
	return out
}

// intIDs returns the int _id values of docs, sorted.
func intIDs(t testing.TB, docs []ttldb.Document) []int {
	t.Helper()
	out := make([]int, len(docs))
	for i, d := range docs {
		id, ok := d["_id"].(int)
		require.True(t, ok, "_id %v (%T) is not an int", d["_id"], d["_id"])
		out[i] = id
	}
	slices.Sort(out)
	return out
}

// mustInsert inserts docs, failing the test on error.
func mustInsert(t testing.TB, c *ttldb.Collection, docs ...ttldb.Document) {
	t.Helper()
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
}

// count returns CountDocuments(filter), failing the test on error.
func count(t testing.TB, c *ttldb.Collection, filter ttldb.Document) int {
	t.Helper()
	n, err := c.CountDocuments(context.Background(), filter)
	require.NoError(t, err)
	return int(n)
}

// ptr returns a pointer to v, for the options the driver's way takes as
// pointers (Ordered).
func ptr[T any](v T) *T { return &v }

// all returns every document of c sorted by _id.
func all(t testing.TB, c *ttldb.Collection) []ttldb.Document {
	t.Helper()
	docs, err := findDocs(c, nil, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("_id")}})
	require.NoError(t, err)
	return docs
}

// findDocs runs Find and reads the cursor to the end: the results as the
// slice Find used to return.
func findDocs(c *ttldb.Collection, filter ttldb.Document, opts ...ttldb.FindOptions) ([]ttldb.Document, error) {
	cur, err := c.Find(context.Background(), filter, opts...)
	if err != nil {
		return nil, err
	}
	var docs []ttldb.Document
	err = cur.All(context.Background(), &docs)
	return docs, err
}
