package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/internal/testutil"
)

// writeOnLeader runs a write on the leader, again on the new leader
// should leadership move during it.
func (c *cluster) writeOnLeader(write func(db *ttldb.DB) error) {
	c.t.Helper()
	var err error
	for range 50 {
		if err = write(c.leader().node.DB()); err == nil {
			return
		}
		if !errors.Is(err, ttldb.ErrNotPrimary) && !errors.Is(err, ErrNotCommitted) && !errors.Is(err, ttldb.ErrClosed) {
			break
		}
	}
	require.NoError(c.t, err)
}

// insertOnLeader inserts docs into coll on the leader (writeOnLeader): a
// retry that meets its own documents finds them committed before it.
func (c *cluster) insertOnLeader(coll string, docs ...any) {
	c.t.Helper()
	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.Collection(coll).InsertMany(context.Background(), docs)
		if errors.Is(err, ttldb.ErrDuplicateKey) {
			return nil // committed before a retry
		}
		return err
	})
}

// TestClusterPartitionHeal: a follower cut off while the leader writes,
// snapshots and compacts its log catches up when healed, by installing
// the snapshot and applying the entries after it; expiry after the heal
// reaches it too. Each round cuts off another follower (one round by
// default, more under TTLDB_SOAK).
func TestClusterPartitionHeal(t *testing.T) {
	c := newCluster(t, 3, nil)
	ttlIndex(t, c.leader().node.DB(), "s")
	insert := func(i int) {
		c.insertOnLeader("s", ttldb.Document{"_id": i, "at": c.clk.Now()})
	}
	rounds := bySoak(1, 4, 12)
	for round := range rounds {
		l := c.leader()
		var follower *testNode
		for i := range c.nodes {
			if tn := c.nodes[(round+i)%len(c.nodes)]; tn != l {
				follower = tn
				break
			}
		}
		c.partition(follower)
		base := round * 1000
		for i := range 200 {
			insert(base + i)
		}
		// A snapshot, and the log before it dropped (TrailingLogs is 16):
		// the follower cannot catch up from the log alone.
		require.NoError(t, c.leader().node.Raft().Snapshot().Error())
		for i := 200; i < 220; i++ {
			insert(base + i)
		}
		assert.Less(t, follower.node.DB().LastSeq(), c.leader().node.DB().LastSeq())
		c.connectAll()
		c.converged()
		assert.Equal(t, 220, count(t, follower.node.DB(), "s", ttldb.Document{}), "round %d", round)
		// Expiry after the heal reaches it too.
		c.clk.Advance(2 * time.Minute)
		c.passOnLeader()
		c.converged()
		assert.Zero(t, count(t, follower.node.DB(), "s", ttldb.Document{}), "round %d", round)
	}
}

// TestClusterRandomized mixes writes, TTL passes, clock steps, leader
// kills and restarts, from a seed (TTLDB_SEED to replay one), and checks
// that the replicas converge on identical contents.
func TestClusterRandomized(t *testing.T) {
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(int64(seed)))
	steps := bySoak(60, 200, 600)
	c := newCluster(t, 3, nil)
	ttlIndex(t, c.leader().node.DB(), "s")
	next := 0
	for step := range steps {
		switch k := rng.Intn(10); {
		case k < 5: // a batch of inserts, some expiring sooner
			n := 1 + rng.Intn(20)
			var docs []any
			for range n {
				docs = append(docs, ttldb.Document{"_id": next, "at": c.clk.Now().Add(time.Duration(rng.Intn(120)) * time.Second)})
				next++
			}
			c.writeOnLeader(func(db *ttldb.DB) error {
				_, err := db.Collection("s").InsertMany(context.Background(), docs)
				if errors.Is(err, ttldb.ErrDuplicateKey) {
					return nil
				}
				return err
			})
		case k < 7: // refresh some documents
			lo := rng.Intn(next + 1)
			c.writeOnLeader(func(db *ttldb.DB) error {
				_, err := db.Collection("s").UpdateMany(context.Background(), ttldb.Document{"_id": ttldb.Document{"$gte": lo, "$lt": lo + 5}}, ttldb.Document{"$currentDate": ttldb.Document{"at": true}})
				return err
			})
		case k < 8:
			c.clk.Advance(time.Duration(rng.Intn(90)) * time.Second)
			c.passOnLeader()
		case k < 9: // kill the leader, and bring it back
			l := c.leader()
			c.kill(l)
			c.leader()
			c.restart(l)
		default:
			c.converged()
		}
		_ = step
	}
	c.clk.Advance(3 * time.Minute)
	c.passOnLeader()
	d := c.converged()
	assert.NotEmpty(t, d)
	for _, tn := range c.up() {
		assert.Zero(t, count(t, tn.node.DB(), "s", ttldb.Document{"at": ttldb.Document{"$lte": c.clk.Now().Add(-time.Minute)}}), "expired documents left on %s", tn.id)
	}
	_ = fmt.Sprint
}
