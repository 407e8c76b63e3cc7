package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// Each batch deletes against min(pass now, clock now read under the write
// lock): a clock a day fast when the pass starts and corrected during it
// never deletes a document before its threshold by the clock at the delete.
// The correction happens in an observer of collection a's batch (the
// documents of b are chosen after it) or in b's own expire hook (b's batch
// was chosen under the fast clock and is re-checked under the corrected
// one). DeleteEvent.BatchNow records the instant each batch used.
func TestBatchNowClockStepsBackDuringPass(t *testing.T) {
	fast := t0.Add(24 * time.Hour) // the clock at the pass's start
	for _, where := range []string{"observer", "hook"} {
		t.Run(where, func(t *testing.T) {
			var (
				clk  *ttltest.Clock
				once sync.Once
			)
			correct := func() { once.Do(func() { clk.Set(t0) }) }
			log := &eventLog{}
			opts := []Option{quiet(MonitorOptions{}), WithDeleteObserver(func(ev DeleteEvent) {
				log.observe(ev)
				if where == "observer" && ev.Collection == "a" {
					correct()
				}
			})}
			if where == "hook" {
				opts = append(opts, WithOnExpire(func(_ context.Context, b ExpiredBatch) error {
					if b.Collection == "b" {
						correct()
					}
					return nil
				}))
			}
			var db *DB
			db, clk = openMon(t, opts...)
			a, b := ttlColl(t, db, "a", 60), ttlColl(t, db, "b", 60)
			insertDated(t, a, "a", 3, fast.Add(-time.Hour))
			// Threshold (date + 60 s) 30 minutes after the corrected clock.
			_, err := b.InsertOne(context.Background(), Document{"_id": "soon", "lastModifiedDate": t0.Add(30*time.Minute - time.Minute)})
			require.NoError(t, err)
			// Expired by the corrected clock too.
			_, err = b.InsertOne(context.Background(), Document{"_id": "due", "lastModifiedDate": t0.Add(-2 * time.Minute)})
			require.NoError(t, err)
			clk.Set(fast)

			res, err := db.RunTTLPass(context.Background())
			require.NoError(t, err)
			assert.Equal(t, fast, res.Now)
			_, err = b.FindOne(context.Background(), Document{"_id": "soon"}).Document()
			assert.NoError(t, err, "a document 30 minutes from its threshold by the clock at the delete must survive")
			_, err = b.FindOne(context.Background(), Document{"_id": "due"}).Document()
			assert.ErrorIs(t, err, ErrNotFound)
			assert.Equal(t, 4, res.Deleted)

			evs := log.events()
			require.Len(t, evs, 2)
			assert.Equal(t, "a", evs[0].Collection)
			assert.Equal(t, fast, evs[0].BatchNow, "before the correction the batch uses the pass's now")
			assert.Equal(t, "b", evs[1].Collection)
			assert.Equal(t, []any{"due"}, evs[1].IDs)
			assert.Equal(t, t0, evs[1].BatchNow, "after it, the clock's")
			for _, ev := range evs {
				assert.Equal(t, fast, ev.PassNow)
				assert.False(t, ev.BatchNow.After(ev.PassNow))
			}
			assert.True(t, t0.Add(-2*time.Minute).Add(60*time.Second).Compare(evs[1].BatchNow) <= 0, "due's threshold is at or before its batch's now")
		})
	}
}

// A deletion by a write that meets an expired, hidden document records the
// write's clock reading as BatchNow, at or after the document's threshold.
func TestBatchNowOfHideExpiredWrite(t *testing.T) {
	log := &eventLog{}
	db, clk := openMon(t, quiet(MonitorOptions{}), WithHideExpired(), WithDeleteObserver(log.observe))
	c := ttlColl(t, db, "c", 60)
	_, err := c.InsertOne(context.Background(), Document{"_id": 1, "lastModifiedDate": t0})
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	_, err = c.InsertOne(context.Background(), Document{"_id": 1, "lastModifiedDate": t0.Add(2 * time.Minute)})
	require.NoError(t, err)
	evs := log.events()
	require.Len(t, evs, 1)
	assert.Equal(t, []any{1}, evs[0].IDs)
	assert.Equal(t, t0.Add(2*time.Minute), evs[0].BatchNow)
	assert.Equal(t, evs[0].PassNow, evs[0].BatchNow)
}
