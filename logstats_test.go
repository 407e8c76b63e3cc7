package ttldb

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// TestLogStats: a DB without a data directory has no log stats; under
// SyncAlways each sequential write adds one record and at least one fsync,
// concurrent writers add no more fsyncs than writes, Bytes and Size grow
// with the records, and the counts are still readable after Close.
func TestLogStats(t *testing.T) {
	mem, err := Open(WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer mem.Close()
	s, ok := mem.LogStats()
	require.False(t, ok)
	require.Equal(t, LogStats{}, s)

	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, t.TempDir(), WithSync(SyncAlways))
	c := db.Collection("c")
	_, err = c.InsertOne(Document{"_id": 0})
	require.NoError(t, err)
	before, ok := db.LogStats()
	require.True(t, ok)
	const n = 5
	for i := 1; i <= n; i++ {
		_, err := c.InsertOne(Document{"_id": i})
		require.NoError(t, err)
	}
	after, _ := db.LogStats()
	require.Equal(t, int64(n), after.Records-before.Records, "one record per sequential write")
	require.GreaterOrEqual(t, after.Syncs-before.Syncs, int64(n), "SyncAlways: each sequential write waits for its fsync")
	require.Greater(t, after.Bytes, before.Bytes)
	require.GreaterOrEqual(t, after.Size, after.Bytes-before.Bytes)

	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := c.InsertOne(Document{"_id": 1000 + w*each + i})
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	conc, _ := db.LogStats()
	require.LessOrEqual(t, conc.Records-after.Records, int64(writers*each))
	require.Positive(t, conc.Syncs-after.Syncs)
	require.LessOrEqual(t, conc.Syncs-after.Syncs, int64(writers*each), "no more fsyncs than commits")

	require.NoError(t, db.Close())
	closed, ok := db.LogStats()
	require.True(t, ok)
	require.GreaterOrEqual(t, closed.Syncs, conc.Syncs)
	require.Equal(t, conc.Records, closed.Records)
}
