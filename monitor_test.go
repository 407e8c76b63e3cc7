//go:build go1.25

package ttldb_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"go.uber.org/goleak"
)

// A DB on the system clock runs on fake time inside a testing/synctest
// bubble: time.Sleep advances the bubble's clock once every goroutine in it
// is blocked, the monitor's timer fires on that clock, and the monitor's
// goroutine ends with Close inside the bubble (synctest.Test fails if a
// goroutine of the bubble is left blocked).
func TestSynctestWithSystemClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now() // the bubble's fake time
		db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Interval: time.Minute}))
		require.NoError(t, err)
		c := db.Collection("sessions")
		_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{
			Keys:               []ttldb.IndexKey{ttldb.Asc("lastSeen")},
			ExpireAfterSeconds: ttldb.Seconds(90),
		})
		require.NoError(t, err)
		_, err = c.InsertMany(context.Background(), []ttldb.Document{
			{"_id": "old", "lastSeen": start},
			{"_id": "new", "lastSeen": start.Add(10 * time.Minute)},
		})

		require.NoError(t, err)

		time.Sleep(time.Minute + time.Second) // the pass at 1 min: nothing expired yet
		synctest.Wait()
		n, err := c.CountDocuments(context.Background(), nil)
		require.NoError(t, err)
		assert.EqualValues(t, 2, n)
		assert.Equal(t, int64(1), db.Metrics().TTL.Passes)

		time.Sleep(time.Minute) // the pass at 2 min deletes "old" (threshold 1.5 min)
		synctest.Wait()
		m := db.Metrics().TTL
		assert.Equal(t, int64(2), m.Passes)
		assert.Equal(t, int64(1), m.DeletedDocuments)
		assert.Equal(t, start.Add(2*time.Minute), m.LastPassStart)
		_, err = c.FindOne(context.Background(), ttldb.Document{"_id": "old"}).Document()
		assert.ErrorIs(t, err, ttldb.ErrNotFound)

		require.NoError(t, db.Close())
	})
	goleak.VerifyNone(t)
}

// The monitor's runtime controls, on the bubble's fake time:
// SetTTLMonitorEnabled(false) stops the passes (a disabled monitor counts
// none and deletes nothing), SetTTLMonitorInterval re-arms the sleep,
// SetPrimary(false) idles it and makes RunTTLPass fail with
// ErrNotPrimary, and CurrentOp lists nothing between passes.
func TestMonitorControls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		start := time.Now()
		o := ttldb.DefaultMonitorOptions()
		require.Equal(t, ttldb.DefaultMonitorInterval, o.Interval)
		db, err := ttldb.Open(ttldb.WithMonitor(o))
		require.NoError(t, err)
		c := db.Collection("s")
		_, err = c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(0)})
		require.NoError(t, err)
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 1, "at": start})
		require.NoError(t, err)

		db.SetTTLMonitorEnabled(false)
		time.Sleep(3 * ttldb.DefaultMonitorInterval)
		synctest.Wait()
		assert.Zero(t, db.Metrics().TTL.Passes, "a disabled monitor runs no pass")
		n, err := c.CountDocuments(ctx, nil)
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		assert.Empty(t, db.CurrentOp())

		db.SetTTLMonitorEnabled(true)
		db.SetTTLMonitorInterval(time.Hour)
		time.Sleep(ttldb.DefaultMonitorInterval + time.Second)
		synctest.Wait()
		assert.Zero(t, db.Metrics().TTL.Passes, "the hour-long interval replaced the default")
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, int64(1), db.Metrics().TTL.DeletedDocuments)

		db.SetPrimary(false)
		_, err = db.RunTTLPass(ctx)
		assert.ErrorIs(t, err, ttldb.ErrNotPrimary)
		db.SetPrimary(true)
		_, err = db.RunTTLPass(ctx)
		assert.NoError(t, err)
		require.NoError(t, db.Close())
	})
}
