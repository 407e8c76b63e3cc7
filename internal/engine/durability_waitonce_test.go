package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// TestWriteWaitsForLogOnce: under SyncAlways every write call waits for
// the log once. A second wait, after the first returned, waits for what
// other writers committed meanwhile: a second fsync per write, and
// concurrent writers split into two groups taking turns at the disk.
func TestWriteWaitsForLogOnce(t *testing.T) {
	ctx := context.Background()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, t.TempDir(), WithSync(SyncAlways))
	c := db.Collection("c")
	_, err := c.InsertOne(context.Background(), Document{"_id": 0}) // creates the collection
	require.NoError(t, err)
	k := db.persist.sink
	calls := map[string]func() error{
		"InsertOne": func() error { _, err := c.InsertOne(context.Background(), Document{"_id": 1, "n": 1}); return err },
		"InsertMany": func() error {
			_, err := c.InsertMany(context.Background(), []Document{{"_id": 2}, {"_id": 3}})
			return err
		},
		"UpdateOne": func() error {
			_, err := c.UpdateOne(context.Background(), Document{"_id": 1}, Document{"$inc": Document{"n": 1}})
			return err
		},
		"UpdateMany": func() error {
			_, err := c.UpdateMany(ctx, nil, Document{"$inc": Document{"n": 1}})
			return err
		},
		"ReplaceOne": func() error {
			_, err := c.ReplaceOne(context.Background(), Document{"_id": 2}, Document{"m": 1})
			return err
		},
		"FindOneAndUpdate": func() error {
			return c.FindOneAndUpdate(context.Background(), Document{"_id": 1}, Document{"$inc": Document{"n": 1}}).Err()
		},
		"DeleteOne":  func() error { _, err := c.DeleteOne(context.Background(), Document{"_id": 3}); return err },
		"DeleteMany": func() error { _, err := c.DeleteMany(ctx, Document{"m": 1}); return err },
	}
	for _, name := range []string{"InsertOne", "InsertMany", "UpdateOne", "UpdateMany", "ReplaceOne", "FindOneAndUpdate", "DeleteOne", "DeleteMany"} {
		before := k.syncCalls.Load()
		require.NoError(t, calls[name](), name)
		require.Equal(t, int64(1), k.syncCalls.Load()-before, "%s waits for the log once", name)
	}
}
