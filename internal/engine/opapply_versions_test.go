package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestApplyKeepsVersions: a DB that applies another's ops stores each
// document with the version the op carries (the origin's), so that both
// give an expire hook the same delivery identity; the applier's own
// versions come after every version applied; bad versions change nothing.
func TestApplyKeepsVersions(t *testing.T) {
	ctx := context.Background()
	origin, clk, sink := openRecorded(t)
	// The origin's counter runs ahead of the replica's: versions given by
	// a replica of its own would differ.
	c := origin.Collection("s")
	for i := range 5 {
		_, err := origin.Collection("other").InsertOne(context.Background(), Document{"_id": i})
		require.NoError(t, err)
	}
	_, err := c.InsertMany(context.Background(), []any{Document{"_id": 1, "n": 1}, Document{"_id": 2, "n": 1}, Document{"_id": 3, "n": 1}})
	require.NoError(t, err)
	_, err = c.UpdateMany(ctx, Document{"_id": Document{"$gte": 2}}, Document{"$inc": Document{"n": 1}})
	require.NoError(t, err)
	_, err = c.ReplaceOne(context.Background(), Document{"_id": 3}, Document{"n": 9})
	require.NoError(t, err)
	ops := sink.take()

	replica, err := Open(WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer replica.Close()
	_, err = replica.Collection("warm").InsertOne(context.Background(), Document{"_id": 0}) // a version of its own first
	require.NoError(t, err)
	require.NoError(t, replica.DropCollection(context.Background(), "warm"))
	// A replica applies from the origin's first op: its LastSeq is 0.
	own := replica.writes.Load() // the last version the replica gave
	rsink := &recordingSink{}
	replica.ops.attach(rsink)
	require.NoError(t, replica.Apply(context.Background(), ops...))

	want, got := dumpCollections(t, origin), dumpCollections(t, replica)
	requireSameDB(t, want, got, true)
	require.Greater(t, want.Colls["s"].Vers[0], own+1, "the origin's versions are not those the replica would give (this test's premise)")
	// The applied ops, as the replica's sinks see them, carry the versions.
	for i, op := range rsink.take() {
		assert.Equal(t, ops[i].Versions, op.Versions, "op %d", i)
	}

	// The replica's own versions follow the greatest applied.
	maxApplied := slices.Max(want.Colls["s"].Vers)
	_, err = replica.Collection("s").InsertOne(context.Background(), Document{"_id": 10})
	require.NoError(t, err)
	vers := dumpCollections(t, replica).Colls["s"].Vers
	assert.Greater(t, vers[len(vers)-1], maxApplied)

	// Versions that do not fit the documents: ErrInvalidOp, nothing applied.
	before := dumpCollections(t, replica)
	seq := replica.LastSeq()
	doc := encDoc(t, Document{"_id": 20})
	for name, v := range map[string][]uint64{"too many": {7, 8}, "zero": {0}} {
		op := Op{Seq: seq + 1, Kind: OpInsert, Collection: "s", Docs: []RawDocument{doc}, Versions: v}
		err := replica.Apply(context.Background(), op)
		require.ErrorIs(t, err, ErrInvalidOp, name)
		require.Equal(t, seq, replica.LastSeq(), name)
		requireSameDB(t, before, dumpCollections(t, replica), true)
	}
}
