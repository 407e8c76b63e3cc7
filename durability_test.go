package ttldb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// A data directory through the public API: a bad AutoSnapshot is refused,
// a directory opened with automatic snapshots off keeps what was written
// across a restart, and WithSalvage opens a sound directory as it is.
func TestDataDirectoryOptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := ttltest.NewClock(storeT0)
	_, err := ttldb.Open(ttldb.WithDir(dir), ttldb.WithAutoSnapshot(ttldb.AutoSnapshot{LogRatio: -1}))
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)

	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithDir(dir), ttldb.WithSync(ttldb.SyncAlways),
		ttldb.WithAutoSnapshot(ttldb.AutoSnapshot{Disabled: true}))
	require.NoError(t, err)
	_, err = db.Collection("c").InsertOne(context.Background(), ttldb.Document{"_id": 1, "v": "kept"})
	require.NoError(t, err)
	require.NoError(t, db.Close())

	for _, opts := range [][]ttldb.Option{nil, {ttldb.WithSalvage()}} {
		db, err := ttldb.Open(append([]ttldb.Option{ttldb.WithClock(clk), ttldb.WithDir(dir)}, opts...)...)
		require.NoError(t, err)
		doc, err := db.Collection("c").FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
		require.NoError(t, err)
		require.Equal(t, "kept", doc["v"])
		n, err := db.Collection("c").CountDocuments(ctx, nil)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.NoError(t, db.Close())
	}
}
