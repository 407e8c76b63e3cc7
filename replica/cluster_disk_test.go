package replica

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// TestClusterRestartAllFromDisk: three nodes keeping their raft state in
// raft.db (bbolt) and file snapshots (Config.Dir) are all stopped and opened
// again from their directories; they hold the same contents as before,
// elect a leader, and expiry goes on through the log.
func TestClusterRestartAllFromDisk(t *testing.T) {
	c := newClusterIn(t, 3, nil, true)
	ttlIndex(t, c.leader().node.DB(), "s")
	insert := func(from, to int, at time.Time) {
		var docs []any
		for i := from; i < to; i++ {
			docs = append(docs, ttldb.Document{"_id": i, "at": at})
		}
		c.insertOnLeader("s", docs...)
	}
	// 0..299 expire first, 300..399 an hour later; a snapshot on every
	// node in the middle, so that reopening loads a snapshot and a log.
	insert(0, 200, c.clk.Now())
	c.converged()
	for _, tn := range c.nodes {
		require.NoError(t, tn.node.Raft().Snapshot().Error(), tn.id)
	}
	insert(200, 300, c.clk.Now())
	insert(300, 400, c.clk.Now().Add(time.Hour))
	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.Collection("s").DeleteOne(context.Background(), ttldb.Document{"_id": 7})
		return err
	})
	before := c.converged()
	seq := c.leader().node.DB().LastSeq()

	for _, tn := range c.nodes {
		c.kill(tn)
	}
	for _, tn := range c.nodes {
		_, err := os.Stat(filepath.Join(tn.dir, "raft.db"))
		require.NoError(t, err, "raft.db of %s", tn.id)
		snaps, err := os.ReadDir(filepath.Join(tn.dir, "snapshots"))
		require.NoError(t, err)
		assert.NotEmpty(t, snaps, "snapshot of %s", tn.id)
	}
	for _, tn := range c.nodes {
		c.restart(tn)
	}
	c.leader()
	// The new leader's first entry commits the old ones: every node
	// applies them again, from its own snapshot and log.
	assert.Equal(t, before, c.converged(), "the state after reopening from disk")
	for _, tn := range c.nodes {
		assert.Equal(t, seq, tn.node.DB().LastSeq(), tn.id)
		assert.Equal(t, 399, count(t, tn.node.DB(), "s", ttldb.Document{}), tn.id)
	}

	// Expiry continues: the first 300 (less the one deleted) go, through
	// the log, on every node; the later ones stay.
	c.clk.Advance(2 * time.Minute)
	c.passOnLeader()
	c.converged()
	for _, tn := range c.nodes {
		assert.Equal(t, 100, count(t, tn.node.DB(), "s", ttldb.Document{}), tn.id)
		assert.Zero(t, count(t, tn.node.DB(), "s", ttldb.Document{"_id": ttldb.Document{"$lt": 300}}), tn.id)
	}
	// And a write after the restart replicates.
	insert(1000, 1010, c.clk.Now())
	c.converged()
}
