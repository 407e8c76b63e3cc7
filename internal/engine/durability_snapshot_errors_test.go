package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// TestFailedSnapshotKeepsWriting: a snapshot that cannot start the log's
// new segment (the log's directory takes no new file) fails with that
// cause, saying that only dropping the log failed, and the DB goes on writing to the segment it had, under every
// sync policy; a reopen finds every write.
func TestFailedSnapshotKeepsWriting(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncAlways, SyncEverySecond, SyncNever} {
		t.Run(pol.String(), func(t *testing.T) {
			m := vfs.NewFaultFS()
			clk := ttltest.NewClock(opEpoch)
			db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(pol))
			c := db.Collection("c")
			for i := range 10 {
				_, err := c.InsertOne(context.Background(), Document{"_id": i})
				require.NoError(t, err)
			}
			flushLog(t, db)
			m.Inject(vfs.Fault{Op: vfs.FaultCreate, Err: syscall.EACCES, Match: func(n string) bool { return strings.Contains(n, "log/") }})
			err := db.Snapshot(context.Background())
			require.ErrorIs(t, err, syscall.EACCES, "the snapshot says what failed")
			// The snapshot file is in place: only dropping the log before
			// it failed, as Snapshot's doc says.
			require.Contains(t, err.Error(), "dropping the log before the snapshot")
			require.NotErrorIs(t, err, ErrLogFailed)
			for i := 10; i < 20; i++ {
				_, err := c.InsertOne(context.Background(), Document{"_id": i})
				require.NoError(t, err, "writes go on after a failed snapshot")
			}
			require.NoError(t, db.persist.sink.err())
			require.NoError(t, db.Close())

			m.ClearFaults()
			db2 := mustOpenDurable(t, clk, "d", withFS(m))
			defer db2.Close()
			require.Len(t, findIDs(t, db2.Collection("c"), nil), 20, "every acknowledged write")
			_, err = db2.Collection("c").InsertOne(context.Background(), Document{"_id": 20})
			require.NoError(t, err)
			require.NoError(t, db2.Snapshot(context.Background()), "a snapshot succeeds once the directory takes files again")
		})
	}
}

// TestSnapshotCutShortByClose: a Snapshot call that Close cuts short
// fails with an error matching ErrClosed.
func TestSnapshotCutShortByClose(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, t.TempDir())
	c := db.Collection("c")
	for i := range 100 {
		_, err := c.InsertOne(context.Background(), Document{"_id": i})
		require.NoError(t, err)
	}
	defer func(n int) { snapshotChunk = n }(snapshotChunk)
	snapshotChunk = 4
	closed := make(chan error, 1)
	first := true
	snapshotChunkHook = func() {
		if first {
			first = false
			go func() { closed <- db.Close() }()
			<-db.persist.closing // Close has begun: the walk gives up at its next chunk
		}
	}
	defer func() { snapshotChunkHook = nil }()
	err := db.Snapshot(context.Background())
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, <-closed)
}

// TestSnapshotPathIsDirectory: a snapshot name taken by a directory is
// reported with its real cause (EISDIR), not as damage that salvage
// would mend, WithSalvage or not.
func TestSnapshotPathIsDirectory(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	dir := durableWithData(t, clk, 5, 5, true)
	require.NoError(t, os.Mkdir(filepath.Join(dir, snapshotName(1000)), 0o700))
	for _, salvage := range []bool{false, true} {
		t.Run(fmt.Sprint("salvage=", salvage), func(t *testing.T) {
			var opts []Option
			if salvage {
				opts = append(opts, WithSalvage())
			}
			_, err := openDurable(t, clk, dir, opts...)
			require.ErrorIs(t, err, syscall.EISDIR)
			require.NotErrorIs(t, err, ErrCorrupt)
			require.NotContains(t, err.Error(), "WithSalvage to load")
		})
	}
}
