package ttldb

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// A Snapshot whose file is in place but that cannot drop the log before it
// (the log folder takes no new segment) says so, as its doc does: the new
// snapshot replaced the previous one, the log is kept whole, writes go on,
// and a reopen holds everything.
func TestSnapshotFailingToDropLogSaysSo(t *testing.T) {
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(SyncAlways))
	c := db.Collection("c")
	for i := range 20 {
		_, err := c.InsertOne(Document{"_id": i})
		require.NoError(t, err)
	}
	m.Inject(vfs.Fault{Op: vfs.FaultCreate, Err: syscall.EACCES, Match: func(n string) bool { return strings.Contains(n, "log/") }})
	err := db.Snapshot()
	require.ErrorIs(t, err, syscall.EACCES)
	require.Contains(t, err.Error(), "dropping the log before the snapshot")
	_, err = c.InsertOne(Document{"_id": 20})
	require.NoError(t, err, "writes go on")
	m.ClearFaults()
	require.NoError(t, db.Close())
	db = mustOpenDurable(t, clk, "d", withFS(m), WithSync(SyncAlways))
	defer db.Close()
	require.Equal(t, 21, docCount(t, db))
}
