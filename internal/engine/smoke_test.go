package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

func TestSmoke(t *testing.T) {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db, err := Open(WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	c := db.Collection("eventlog")
	name, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	require.Equal(t, "lastModifiedDate_1", name)
	for i := 0; i < 1000; i++ {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "lastModifiedDate": clk.Now().Add(time.Duration(i) * time.Second)})
		require.NoError(t, err)
	}
	clk.Advance(time.Hour + 500*time.Second)
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	require.Equal(t, 501, res.Deleted)
	n, _ := c.CountDocuments(context.Background(), nil)
	require.EqualValues(t, 499, n)
	ex, err := c.Explain(context.Background(), Document{"_id": 3})
	require.NoError(t, err)
	t.Logf("%+v", ex)
	m := db.Metrics()
	t.Logf("%+v", m)
}
