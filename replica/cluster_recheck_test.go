package replica

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// TestClusterUpdateBetweenChooseAndApply: the leader chooses a batch and
// runs its hooks; meanwhile one chosen document is refreshed (no longer
// expired) and another changed but still expired. On every replica the
// refreshed one survives and the other is deleted, after its new version
// was offered to the hooks: the batch the leader ships is what its
// re-check under the collection's write lock deleted, and every replica
// applies it, in log order after the update, with the same re-check.
func TestClusterUpdateBetweenChooseAndApply(t *testing.T) {
	chosen, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var offeredY []uint64 // versions of _id 1 offered, in order
	c := newCluster(t, 3, func(string) []ttldb.Option {
		return []ttldb.Option{
			ttldb.WithOnExpire(func(_ context.Context, b ttldb.ExpiredBatch) error {
				mu.Lock()
				for i, d := range b.Docs {
					if d["_id"] == 1 {
						offeredY = append(offeredY, b.Versions[i])
					}
				}
				mu.Unlock()
				once.Do(func() {
					close(chosen)
					<-proceed
				})
				return nil
			}),
		}
	})
	ttlIndex(t, c.leader().node.DB(), "s")
	var docs []any
	for i := range 10 {
		docs = append(docs, ttldb.Document{"_id": i, "at": c.clk.Now(), "n": 0})
	}
	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.Collection("s").InsertMany(context.Background(), docs)
		return err
	})
	c.converged()
	c.clk.Advance(2 * time.Minute)

	l := c.leader()
	passErr := passInBackground(l.node.DB())
	<-chosen // the batch is chosen, its hooks are running
	db := l.node.DB()
	_, err := db.Collection("s").UpdateOne(context.Background(), ttldb.Document{"_id": 0}, ttldb.Document{"$currentDate": ttldb.Document{"at": true}})
	require.NoError(t, err, "refresh _id 0")
	_, err = db.Collection("s").UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"n": 1}})
	require.NoError(t, err, "change _id 1, still expired")
	close(proceed)
	require.NoError(t, <-passErr)

	c.converged()
	for _, tn := range c.nodes {
		db := tn.node.DB()
		assert.Equal(t, 1, count(t, db, "s", ttldb.Document{}), tn.id)
		assert.Equal(t, 1, count(t, db, "s", ttldb.Document{"_id": 0}), "the refreshed document survives on %s", tn.id)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, offeredY, 2, "_id 1 offered twice: as chosen, then its new version")
	assert.Less(t, offeredY[0], offeredY[1])
}
