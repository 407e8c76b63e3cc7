package replica

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// offers records, per node, the delivery identities (_id → version) its
// expire hooks were offered.
type offers struct {
	mu   sync.Mutex
	seen map[string]map[any]uint64
}

func (o *offers) add(node string, b ttldb.ExpiredBatch) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[node] == nil {
		o.seen[node] = map[any]uint64{}
	}
	for i, d := range b.Docs {
		o.seen[node][d["_id"]] = b.Versions[i]
	}
}

func (o *offers) of(node string) map[any]uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[any]uint64{}
	for k, v := range o.seen[node] {
		out[k] = v
	}
	return out
}

// TestClusterDeliveryIdentityAcrossFailover: the leader's expire hook is
// offered a batch and the leader dies before the batch is proposed; the
// new leader's hook is offered the same documents with the same (_id,
// version) identity, so that a consumer deduplicating on it handles each
// document once.
func TestClusterDeliveryIdentityAcrossFailover(t *testing.T) {
	o := &offers{seen: map[string]map[any]uint64{}}
	offered, killed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var victim string
	var victimMu sync.Mutex
	c := newCluster(t, 3, func(id string) []ttldb.Option {
		return []ttldb.Option{
			ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true, BatchSize: 50, ProposalBatchSize: 50}),
			ttldb.WithOnExpire(func(_ context.Context, b ttldb.ExpiredBatch) error {
				o.add(id, b)
				victimMu.Lock()
				v := victim
				victimMu.Unlock()
				if v != id {
					return nil
				}
				once.Do(func() { close(offered) })
				<-killed
				return errors.New("killed")
			}),
		}
	})
	l := c.leader()
	ttlIndex(t, l.node.DB(), "s")
	var docs []any
	for i := range 200 {
		docs = append(docs, ttldb.Document{"_id": i, "at": c.clk.Now(), "n": 0})
	}
	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.Collection("s").InsertMany(context.Background(), docs)
		if errors.Is(err, ttldb.ErrDuplicateKey) {
			return nil
		}
		return err
	})
	// Updates give some documents later versions (the dates stay).
	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.Collection("s").UpdateMany(context.Background(), ttldb.Document{"_id": ttldb.Document{"$lt": 30}}, ttldb.Document{"$inc": ttldb.Document{"n": 1}})
		return err
	})
	c.converged()
	c.clk.Advance(2 * time.Minute)

	old := c.leader()
	victimMu.Lock()
	victim = old.id
	victimMu.Unlock()
	passErr := passInBackground(old.node.DB())
	<-offered
	c.kill(old)
	close(killed)
	assert.Error(t, <-passErr, "the killed leader's pass must stop")
	first := o.of(old.id)
	require.Len(t, first, 50, "the old leader's hook was offered one batch")

	nl := c.leader()
	require.NotEqual(t, old.id, nl.id)
	assert.Equal(t, 200, count(t, nl.node.DB(), "s", ttldb.Document{}), "the old leader's batch was never proposed")
	c.passOnLeader()
	c.converged()
	assert.Zero(t, count(t, nl.node.DB(), "s", ttldb.Document{}))
	// The new leader's hooks (another's, should leadership move again
	// during the pass) were offered every document, with the identity the
	// old leader's hook saw.
	again := map[any]uint64{}
	for _, tn := range c.nodes {
		if tn == old {
			continue
		}
		for id, ver := range o.of(tn.id) {
			if prev, ok := again[id]; ok {
				assert.Equal(t, prev, ver, "document %v offered with two versions", id)
			}
			again[id] = ver
		}
	}
	require.Len(t, again, 200)
	for id, ver := range first {
		assert.Equal(t, ver, again[id], "document %v: the identity the new leader's hook saw", id)
	}
}
