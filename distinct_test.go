package ttldb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// Distinct follows MongoDB: arrays contribute their elements (nested
// arrays whole), paths reach into arrays of documents, missing fields
// contribute nothing and null contributes null, values are distinct by
// BSON equality (1, int64(1) and 1.0 are one) and come in BSON order.
func TestDistinct(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	mustInsert(t, c,
		ttldb.Document{"_id": 1, "v": 2, "g": "a"},
		ttldb.Document{"_id": 2, "v": []any{1, 3, []any{4}}, "g": "a"},
		ttldb.Document{"_id": 3, "v": int64(1), "g": "b"},
		ttldb.Document{"_id": 4, "v": 1.0, "g": "a"},
		ttldb.Document{"_id": 5, "v": "x", "g": "a"},
		ttldb.Document{"_id": 6, "g": "a"},
		ttldb.Document{"_id": 7, "v": nil, "g": "a"},
		ttldb.Document{"_id": 8, "v": ttldb.Document{"k": 1}, "g": "a"},
		ttldb.Document{"_id": 9, "items": []any{ttldb.Document{"sku": "p"}, ttldb.Document{"sku": "q"}, ttldb.Document{"sku": "p"}}},
	)
	got, err := c.Distinct(context.Background(), "v", nil)
	require.NoError(t, err)
	require.Equal(t, []any{nil, 1, 2, 3, "x", map[string]any{"k": 1}, []any{4}}, got)

	got, err = c.Distinct(context.Background(), "v", ttldb.Document{"g": "b"})
	require.NoError(t, err)
	require.Equal(t, []any{int64(1)}, got)

	got, err = c.Distinct(context.Background(), "items.sku", nil)
	require.NoError(t, err)
	require.Equal(t, []any{"p", "q"}, got)

	got, err = c.Distinct(context.Background(), "nope", nil)
	require.NoError(t, err)
	require.Empty(t, got)

	got, err = db.Collection("missing").Distinct(context.Background(), "v", nil)
	require.NoError(t, err)
	require.Empty(t, got)

	_, err = c.Distinct(context.Background(), "", nil)
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = c.Distinct(context.Background(), "v", ttldb.Document{"$bad": 1})
	require.ErrorIs(t, err, ttldb.ErrInvalidFilter)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Distinct(ctx, "v", nil)
	require.ErrorIs(t, err, context.Canceled)
}

// EstimatedDocumentCount follows inserts, deletions, TTL deletions and
// capped evictions, and counts expired documents HideExpired hides until
// the monitor deletes them.
func TestEstimatedDocumentCount(t *testing.T) {
	db, clk := openStore(t)
	c, err := db.CreateCollection("c", ttldb.CollectionOptions{HideExpired: true})
	require.NoError(t, err)
	n, err := c.EstimatedDocumentCount()
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	for i := range 10 {
		at := clk.Now()
		if i < 4 {
			at = at.Add(-time.Hour) // expired
		}
		mustInsert(t, c, ttldb.Document{"_id": i, "at": at})
	}
	n, err = c.EstimatedDocumentCount()
	require.NoError(t, err)
	require.Equal(t, 10, n, "expired documents are stored until deleted")
	require.Equal(t, 6, count(t, c, nil), "reads do not see them")
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	n, _ = c.EstimatedDocumentCount()
	require.Equal(t, 6, n)
	_, err = c.DeleteOne(ttldb.Document{"_id": 9})
	require.NoError(t, err)
	n, _ = c.EstimatedDocumentCount()
	require.Equal(t, 5, n)

	capped, err := db.CreateCollection("capped", ttldb.CollectionOptions{Capped: true, MaxDocuments: 3})
	require.NoError(t, err)
	for i := range 5 {
		mustInsert(t, capped, ttldb.Document{"_id": i})
	}
	n, _ = capped.EstimatedDocumentCount()
	require.Equal(t, 3, n)
	n, err = db.Collection("missing").EstimatedDocumentCount()
	require.NoError(t, err)
	require.Zero(t, n)
}
