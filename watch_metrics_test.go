package ttldb_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb"
)

// The user task: see how far behind each change stream is.

// TestChangeStreamMetricsLagAndBufferUse: Metrics reports the buffer's
// use, each named stream's lag in ops and in time (by the DB's clock) and
// its events, and the largest lag of all streams, named or not.
func TestChangeStreamMetricsLagAndBufferUse(t *testing.T) {
	db, clk := openStore(t)
	ctx := context.Background()
	require.Zero(t, db.Metrics().ChangeStreams.BufferSize, "no buffer before the first Watch")
	audit, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{Name: "audit"})
	require.NoError(t, err)
	defer audit.Close(ctx)
	anon, err := db.Watch(ctx, nil)
	require.NoError(t, err)
	defer anon.Close(ctx)

	c := db.Collection("s")
	_, err = c.InsertOne(ctx, ttldb.Document{"_id": 0}) // op 1 creates the collection, op 2 inserts
	require.NoError(t, err)
	for i := 1; i < 10; i++ {
		_, err := c.InsertOne(ctx, ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	clk.Advance(5 * time.Second)
	m := db.Metrics().ChangeStreams
	assert.Equal(t, 2, m.Open)
	assert.Equal(t, ttldb.DefaultChangeStreamBufferSize, m.BufferSize)
	assert.Equal(t, 11, m.BufferOps)
	require.Len(t, m.Streams, 1, "only named streams have their own entry")
	a := m.Streams["audit"]
	assert.Equal(t, uint64(11), a.LagOps)
	assert.Equal(t, 5*time.Second, a.Lag)
	assert.InDelta(t, 11.0/ttldb.DefaultChangeStreamBufferSize, a.BufferUse, 1e-12)
	assert.Zero(t, a.Events)
	assert.Equal(t, uint64(11), m.MaxLagOps)
	assert.Equal(t, 5*time.Second, m.MaxLag)

	for range 4 {
		require.True(t, audit.TryNext(ctx))
	}
	for anon.TryNext(ctx) {
	}
	m = db.Metrics().ChangeStreams
	a = m.Streams["audit"]
	assert.Equal(t, uint64(6), a.LagOps, "4 inserts read, and the create op they passed")
	assert.Equal(t, int64(4), a.Events)
	assert.Equal(t, uint64(6), m.MaxLagOps)
	for audit.TryNext(ctx) {
	}
	m = db.Metrics().ChangeStreams
	assert.Zero(t, m.Streams["audit"].LagOps)
	assert.Zero(t, m.Streams["audit"].Lag, "caught up: no lag")
	assert.Zero(t, m.MaxLagOps)

	require.NoError(t, audit.Close(ctx))
	m = db.Metrics().ChangeStreams
	assert.Equal(t, 1, m.Open)
	assert.Empty(t, m.Streams)
}

// TestChangeStreamMetricsForgetUnclosedStreams: a stream never closed
// leaves the metrics once it is garbage, as it holds nothing else.
func TestChangeStreamMetricsForgetUnclosedStreams(t *testing.T) {
	db, _ := openStore(t)
	func() {
		_, err := db.Watch(context.Background(), nil, ttldb.ChangeStreamOptions{Name: "lost"})
		require.NoError(t, err)
	}()
	require.Equal(t, 1, db.Metrics().ChangeStreams.Open)
	for i := 0; db.Metrics().ChangeStreams.Open > 0; i++ {
		require.Less(t, i, 100, "the unreachable stream stays in the metrics")
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on their own goroutine
	}
	assert.Empty(t, db.Metrics().ChangeStreams.Streams)
}

// TestChangeStreamNameBound: a name beyond MaxStreamNameLen, or not
// UTF-8, is ErrInvalidOptions.
func TestChangeStreamNameBound(t *testing.T) {
	db, _ := openStore(t)
	for _, name := range []string{strings.Repeat("n", ttldb.MaxStreamNameLen+1), "\xff"} {
		_, err := db.Watch(context.Background(), nil, ttldb.ChangeStreamOptions{Name: name})
		require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	}
	_, err := db.Watch(context.Background(), nil, ttldb.ChangeStreamOptions{Name: strings.Repeat("n", ttldb.MaxStreamNameLen)})
	require.NoError(t, err)
}
