package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// placeOrder runs order i as one transaction on db (WithTransaction): an
// insert into "orders", an insert into "payments" and an update of
// "stock". A retry that finds the order finds it committed before it.
func placeOrder(db *ttldb.DB, i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := db.StartSession()
	if err != nil {
		return err
	}
	defer s.EndSession(ctx)
	_, err = s.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		switch err := db.Collection("orders").FindOne(ctx, ttldb.Document{"_id": i}).Err(); {
		case err == nil:
			return nil, nil // committed before a retry
		case !errors.Is(err, ttldb.ErrNoDocuments):
			return nil, err
		}
		if _, err := db.Collection("orders").InsertOne(ctx, ttldb.Document{"_id": i, "item": "apple", "qty": i + 1}); err != nil {
			return nil, err
		}
		if _, err := db.Collection("payments").InsertOne(ctx, ttldb.Document{"_id": i, "order": i, "amount": 2 * (i + 1)}); err != nil {
			return nil, err
		}
		_, err := db.Collection("stock").UpdateOne(ctx, ttldb.Document{"_id": "apple"}, ttldb.Document{"$inc": ttldb.Document{"qty": -(i + 1)}})
		return nil, err
	})
	return err
}

// TestClusterTransactions: transactions committed on the leader (inserts
// into two collections and an update, by WithTransaction) reach every
// replica, which all end with identical contents. A transaction on a
// follower stages its writes but fails at its commit with the
// not-leader error, labeled transient, and changes nothing on any node.
func TestClusterTransactions(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()
	c.insertOnLeader("stock", ttldb.Document{"_id": "apple", "qty": 100})
	const orders = 5
	for i := range orders {
		c.writeOnLeader(func(db *ttldb.DB) error { return placeOrder(db, i) })
	}
	want := c.converged()
	check := func() {
		t.Helper()
		for _, tn := range c.nodes {
			db := tn.node.DB()
			assert.Equal(t, orders, count(t, db, "orders", ttldb.Document{}), tn.id)
			assert.Equal(t, orders, count(t, db, "payments", ttldb.Document{}), tn.id)
			var apple struct{ Qty int }
			require.NoError(t, db.Collection("stock").FindOne(ctx, ttldb.Document{"_id": "apple"}).Decode(&apple), tn.id)
			assert.Equal(t, 100-(1+2+3+4+5), apple.Qty, tn.id)
			assert.Equal(t, want, digest(t, db), tn.id)
		}
	}
	check()
	assert.Positive(t, c.leader().node.DB().Metrics().Transactions.Committed)

	// A transaction on a follower: its writes are staged, its commit is
	// refused.
	l := c.leader()
	var f *testNode
	for _, tn := range c.nodes {
		if tn != l {
			f = tn
			break
		}
	}
	fdb := f.node.DB()
	s, err := fdb.StartSession()
	require.NoError(t, err)
	defer s.EndSession(ctx)
	require.NoError(t, s.StartTransaction())
	sctx := ttldb.NewSessionContext(ctx, s)
	_, err = fdb.Collection("orders").InsertOne(sctx, ttldb.Document{"_id": "on-follower"})
	require.NoError(t, err, "a follower's transaction stages its writes")
	_, err = fdb.Collection("stock").UpdateOne(sctx, ttldb.Document{"_id": "apple"}, ttldb.Document{"$inc": ttldb.Document{"qty": -1}})
	require.NoError(t, err)
	err = s.CommitTransaction(ctx)
	require.ErrorIs(t, err, ttldb.ErrNotPrimary)
	var nl *NotLeaderError
	require.ErrorAs(t, err, &nl)
	assert.NotEqual(t, f.id, nl.LeaderID)
	assert.True(t, ttldb.HasErrorLabel(err, ttldb.TransientTransactionErrorLabel), "a commit refused by a follower may run again on the leader")
	tm := fdb.Metrics().Transactions
	assert.Equal(t, int64(1), tm.Aborted["error"])
	assert.Zero(t, tm.Committed)
	assert.Zero(t, tm.Open)
	require.ErrorIs(t, s.CommitTransaction(ctx), ttldb.ErrNoTransaction, "the refused transaction is aborted")

	// Nothing changed, on the follower or elsewhere.
	assert.Equal(t, want, c.converged())
	check()
	for _, tn := range c.nodes {
		assert.Zero(t, count(t, tn.node.DB(), "orders", ttldb.Document{"_id": "on-follower"}), tn.id)
	}
}
