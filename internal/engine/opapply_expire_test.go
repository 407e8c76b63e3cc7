package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestApplyExpireKeys: an OpExpire that names a key twice deletes the
// document once (the observers see it once, the metrics count one); one
// with a malformed key fails with ErrInvalidOp and deletes nothing, not
// even the documents of the keys before it.
func TestApplyExpireKeys(t *testing.T) {
	ctx := context.Background()
	origin, _, sink := openRecorded(t)
	c := origin.Collection("s")
	_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"_id": 1, "at": opEpoch}, {"_id": 2, "at": opEpoch}, {"_id": 3, "at": opEpoch}})
	require.NoError(t, err)
	var events []DeleteEvent
	db := replay(t, sink.take(), WithDeleteObserver(func(ev DeleteEvent) { events = append(events, ev) }))
	cutoff := opEpoch.Add(90 * time.Second)
	key := func(id any) RawDocument { return encDoc(t, Document{"_id": id}) }

	bad := Op{Seq: db.ops.lastSeq() + 1, Kind: OpExpire, Collection: "s", Index: "at_1", Cutoff: cutoff, Keys: []RawDocument{key(1), {0xff, 0x01}}}
	require.ErrorIs(t, db.Apply(context.Background(), bad), ErrInvalidOp)
	require.Equal(t, []any{1, 2, 3}, findIDs(t, db.Collection("s"), nil), "nothing deleted")
	require.Empty(t, events)

	twice := Op{Seq: db.ops.lastSeq() + 1, Kind: OpExpire, Collection: "s", Index: "at_1", Cutoff: cutoff, Keys: []RawDocument{key(1), key(2), key(1)}}
	require.NoError(t, db.Apply(context.Background(), twice))
	require.Equal(t, []any{3}, findIDs(t, db.Collection("s"), nil))
	require.Len(t, events, 1)
	require.Equal(t, []any{1, 2}, events[0].IDs)
	require.Equal(t, int64(2), db.Metrics().TTL.DeletedDocuments)
	n, err := db.Collection("s").CountDocuments(ctx, Document{"at": Document{"$lte": cutoff}})
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the TTL index still holds _id 3 only")
}

// TestApplyExpireOrder: an OpExpire whose keys do not follow this DB's
// expiry order (another primary's choice, a document refreshed since)
// deletes the same documents as one that does.
func TestApplyExpireOrder(t *testing.T) {
	ctx := context.Background()
	origin, _, sink := openRecorded(t)
	c := origin.Collection("s")
	_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"_id": 1, "at": opEpoch}, {"_id": 2, "at": opEpoch}, {"_id": 3, "at": opEpoch.Add(time.Second)}, {"_id": 4, "at": opEpoch.Add(time.Hour)}, {"_id": 5, "at": opEpoch.Add(2 * time.Second)}})
	require.NoError(t, err)
	db := replay(t, sink.take())
	cutoff := opEpoch.Add(90 * time.Second)
	key := func(id any) RawDocument { return encDoc(t, Document{"_id": id}) }
	// 1 is the head; 3 is not next (2 is); 4 is not expired; 5 follows 3.
	op := Op{Seq: db.ops.lastSeq() + 1, Kind: OpExpire, Collection: "s", Index: "at_1", Cutoff: cutoff, Keys: []RawDocument{key(1), key(3), key(4), key(5)}}
	require.NoError(t, db.Apply(context.Background(), op))
	require.Equal(t, []any{2, 4}, findIDs(t, db.Collection("s"), nil))
	n, err := db.Collection("s").CountDocuments(ctx, Document{"at": Document{"$lte": opEpoch.Add(time.Hour)}})
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "2 and 4 remain")
}
