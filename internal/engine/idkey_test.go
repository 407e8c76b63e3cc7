package engine

import (
	"context"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// A document whose _id is a string or an ObjectID holds its store key: the
// record's key is a view of its encoding, not a copy. Other _ids keep a
// key of their own, under which equal values (2 and 2.0) still meet and
// unequal ones ("2" and 2) do not; every kind is found by Find, updated
// and deleted by _id.
func TestIDKeyHeldByDocument(t *testing.T) {
	db, _ := newTTLDB(t)
	c := db.Collection("c")
	ctx := context.Background()
	oid := bson.ObjectID{9, 8, 7, 11: 1}
	ids := []any{"doc:000000001", oid, int32(2), "2", 2.5, Document{"a": 1}}
	for _, id := range ids {
		mustInsert(t, c, Document{"_id": id, "v": 1})
	}
	s := collStateOf(t, c)
	heldKind := func(id any) bool {
		switch id.(type) {
		case string, bson.ObjectID:
			return true
		}
		return false
	}
	within := func(k, enc []byte) bool {
		p, lo := uintptr(unsafe.Pointer(&k[0])), uintptr(unsafe.Pointer(&enc[0]))
		return p >= lo && p+uintptr(len(k)) <= lo+uintptr(len(enc))
	}
	for _, id := range ids {
		k, err := appendIDKey(nil, id)
		require.NoError(t, err)
		rec, ok := s.lookup(k)
		require.True(t, ok, "%v", id)
		assert.Equal(t, k, rec.key)
		assert.Equal(t, heldKind(id), within(rec.key, rec.enc), "%v: key held by the document: %x in %x", id, rec.key, rec.enc)
	}
	_, err := c.InsertOne(ctx, Document{"_id": 2.0})
	assert.ErrorIs(t, err, ErrDuplicateKey, "2.0 is 2")
	_, err = c.InsertOne(ctx, Document{"_id": "doc:000000001"})
	assert.ErrorIs(t, err, ErrDuplicateKey)
	for _, id := range append(ids, int64(2), 2.0) {
		got, err := c.FindOne(ctx, Document{"_id": id}).Document()
		require.NoError(t, err, "%v", id)
		assert.Equal(t, 1, got["v"])
		n, err := c.CountDocuments(ctx, Document{"_id": Document{"$in": []any{id, "absent"}}})
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "%v", id)
	}
	for _, id := range ids {
		res, err := c.UpdateOne(ctx, Document{"_id": id}, Document{"$set": Document{"v": 2}})
		require.NoError(t, err)
		assert.Equal(t, int64(1), res.ModifiedCount, "%v", id)
	}
	for _, id := range ids {
		k, _ := appendIDKey(nil, id)
		rec, ok := s.lookup(k)
		require.True(t, ok)
		assert.Equal(t, heldKind(id), within(rec.key, rec.enc), "%v: still held after an update", id)
		del, err := c.DeleteOne(ctx, Document{"_id": id})
		require.NoError(t, err)
		assert.Equal(t, int64(1), del.DeletedCount, "%v", id)
	}
	n, err := c.CountDocuments(ctx, Document{})
	require.NoError(t, err)
	assert.Zero(t, n)
}

// The two forms of _id keys never meet: no ordered key (internal/keys)
// begins with the byte a held string or ObjectID key begins with, so no
// number, date, document or other _id shares a key with a string or an
// ObjectID.
func TestIDKeyFormsNeverMeet(t *testing.T) {
	held := map[byte]bool{}
	for _, v := range []any{"", "x", bson.ObjectID{}} {
		k, err := appendIDKey(nil, v)
		require.NoError(t, err)
		held[k[0]] = true
	}
	require.Len(t, held, 2)
	for _, v := range []any{nil, true, false, 0, -1, 1, int64(-1 << 62), uint64(1 << 63), 1.5, math.Copysign(0, -1),
		math.NaN(), math.Inf(1), math.Inf(-1), time.Unix(0, 0), time.Unix(-1, 0), []byte("b"),
		bson.Binary{Subtype: 4, Data: []byte{1}}, bson.Timestamp{T: 1}, bson.Regex{Pattern: "a"},
		bson.MinKey{}, bson.MaxKey{}, Document{"a": "x"}, Document{}} {
		k, err := appendIDKey(nil, v)
		require.NoError(t, err, "%v", v)
		assert.False(t, held[k[0]], "%v (%T): key %x", v, v, k)
	}
}
