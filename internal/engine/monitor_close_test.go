package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// Close called from an expire hook or a delete observer, on the goroutine
// that runs the pass (the monitor's or RunTTLPass's), returns; the pass
// stops before its next batch and the monitor goroutine exits once the
// callback has returned. For RunTTLPass the monitor goroutine is first made
// to wait for the pass RunTTLPass holds, the case that once deadlocked.
func TestCloseFromCallback(t *testing.T) {
	for _, background := range []bool{true, false} {
		for _, from := range []string{"hook", "observer"} {
			t.Run(fmt.Sprintf("background=%v/%s", background, from), func(t *testing.T) {
				var (
					db   *DB
					clk  *ttltest.Clock
					once sync.Once
				)
				closed := make(chan error, 1)
				closeDB := func() {
					once.Do(func() {
						if !background {
							// The monitor wakes and waits for this pass.
							clk.Advance(DefaultMonitorInterval)
							waitForStack(t, "engine.(*monitor).loop", "engine.(*monitor).runPass")
						}
						closed <- db.Close()
					})
				}
				var opts []Option
				if from == "hook" {
					opts = append(opts, WithOnExpire(func(context.Context, ExpiredBatch) error { closeDB(); return nil }))
				} else {
					opts = append(opts, WithDeleteObserver(func(DeleteEvent) { closeDB() }))
				}
				clk = ttltest.NewClock(t0)
				var err error
				db, err = Open(append(opts, WithClock(clk), WithMonitor(MonitorOptions{BatchSize: 10}))...)
				require.NoError(t, err)
				c := ttlColl(t, db, "c", 0)
				insertDated(t, c, "x", 50, t0.Add(-time.Hour))
				clk.BlockUntilWaiters(1)
				if background {
					clk.Advance(DefaultMonitorInterval)
				} else {
					within(t, 10*time.Second, "RunTTLPass", func() {
						_, err := db.RunTTLPass(context.Background())
						assert.ErrorIs(t, err, context.Canceled)
					})
				}
				select {
				case err := <-closed:
					assert.NoError(t, err)
				case <-time.After(10 * time.Second):
					t.Fatal("Close from the callback did not return (deadlock?)")
				}
				select {
				case <-db.monitor.done:
				case <-time.After(10 * time.Second):
					t.Fatal("the monitor goroutine did not exit after the callback returned")
				}
				want := 10 // the observer runs after its batch committed
				if from == "hook" {
					want = 0 // the batch whose hook closed the DB is not deleted
				}
				assert.Equal(t, int64(want), db.Metrics().TTL.DeletedDocuments, "no batch after Close")
				assert.NoError(t, db.Close())
			})
		}
	}
}

// waitForStack waits until one goroutine's stack holds every one of frames.
func waitForStack(t *testing.T, frames ...string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n := runtime.Stack(buf, true)
		for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
			all := true
			for _, f := range frames {
				all = all && strings.Contains(g, f)
			}
			if all {
				return
			}
		}
		runtime.Gosched()
	}
	t.Fatalf("no goroutine reached %v", frames)
}

// goid tells goroutines apart and is stable within one.
func TestGoid(t *testing.T) {
	self := goid()
	require.NotZero(t, self)
	assert.Equal(t, self, goid())
	other := make(chan uint64)
	go func() { other <- goid() }()
	id := <-other
	assert.NotZero(t, id)
	assert.NotEqual(t, self, id)
}
