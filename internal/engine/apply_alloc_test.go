package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A replica applies a one-document insert (DB.Apply, which has no pooled
// insert scratch) with a bounded number of allocations, 7 when this test
// was written: a replicated insert is applied by every follower. The _id
// key's hash must not add one (for one document it stays on the stack;
// the hashed insert path made it 8 until then).
func TestApplyInsertAllocations(t *testing.T) {
	ctx := context.Background()
	origin, _ := openMon(t, quiet(MonitorOptions{}))
	rec := &recordingSink{}
	origin.ops.attach(rec)
	c := origin.Collection("c")
	for i := range 200 {
		_, err := c.InsertOne(ctx, Document{"_id": i, "x": i})
		require.NoError(t, err)
	}
	ops := rec.take()
	replica, _ := openMon(t, quiet(MonitorOptions{}))
	require.NoError(t, replica.Apply(ctx, ops[:2]...)) // the collection, a first insert
	i := 2
	n := testing.AllocsPerRun(100, func() {
		if err := replica.Apply(ctx, ops[i]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	require.LessOrEqual(t, n, 7.0, "allocations per applied one-document insert")
}
