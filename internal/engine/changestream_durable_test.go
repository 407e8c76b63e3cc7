package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// Durable before delivered: on a DB with a data directory a stream
// delivers an op only once the log holds it as durably as the sync policy
// promises.

// TestWatchDeliversNoOpWhoseLogWriteFailed: under SyncAlways, a write
// whose fsync (or write) fails is committed in memory but never durable;
// no stream may deliver it, and a waiting stream ends with the log's
// failure rather than waiting forever.
func TestWatchDeliversNoOpWhoseLogWriteFailed(t *testing.T) {
	for _, op := range []vfs.FaultOp{vfs.FaultSync, vfs.FaultWrite} {
		t.Run(fmt.Sprint(op), func(t *testing.T) {
			m := vfs.NewFaultFS()
			db := mustOpenDurable(t, ttltest.NewClock(opEpoch), "d", withFS(m), WithSync(SyncAlways))
			ctx := context.Background()
			c := db.Collection("c")
			cs, err := db.Watch(ctx, nil)
			require.NoError(t, err)
			_, err = c.InsertOne(ctx, Document{"_id": 1})
			require.NoError(t, err)
			require.True(t, cs.Next(ctx))
			require.Equal(t, 1, idOf(t, cs.Event().DocumentKey))
			first := cs.Event().ClusterTime

			m.Inject(vfs.Fault{Op: op, Match: func(n string) bool { return strings.Contains(n, "log/") }})
			_, err = c.InsertOne(ctx, Document{"_id": 2})
			require.ErrorIs(t, err, ErrLogFailed)
			require.Equal(t, first+1, db.ops.lastSeq(), "the op is committed in memory")

			require.False(t, cs.TryNext(ctx), "an op the log did not take is delivered")
			require.ErrorIs(t, cs.Err(), ErrLogFailed, "TryNext says the log failed")
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			require.False(t, cs.Next(wctx))
			require.ErrorIs(t, cs.Err(), ErrLogFailed, "a stream waiting behind a failed log ends with its failure")
		})
	}
}

// idOf returns the integer _id of a document key.
func idOf(t testing.TB, key RawDocument) int {
	t.Helper()
	id, ok := intID(key)
	require.True(t, ok, "the _id of %v is not an integer", key.Document())
	return id
}

// intID returns the _id of a document key, if it is an integer.
func intID(key RawDocument) (int, bool) {
	v, _ := key.Lookup("_id")
	switch x := v.(type) {
	case int:
		return x, true
	case int32:
		return int(x), true
	case int64:
		return int(x), true
	}
	return 0, false
}

// TestWatchWaitsForTheLogWrite: under SyncEverySecond (and SyncNever) an
// op is delivered once written to the log, not before; a stream waiting
// for one has the log write it at once, so that it does not wait for the
// writer goroutine's delay (which a fake clock never lets pass).
func TestWatchWaitsForTheLogWrite(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncEverySecond, SyncNever} {
		t.Run(policy.String(), func(t *testing.T) {
			db := mustOpenDurable(t, ttltest.NewClock(opEpoch), t.TempDir(), WithSync(policy))
			ctx := context.Background()
			c := db.Collection("c")
			cs, err := db.Watch(ctx, nil)
			require.NoError(t, err)
			type got struct {
				seq, written uint64
				err          error
			}
			events := make(chan got, 100)
			go func() {
				for cs.Next(ctx) {
					ev := cs.Event()
					// Read at delivery: the log must hold the op already.
					events <- got{seq: ev.ClusterTime, written: db.persist.sink.written.Load()}
				}
				events <- got{err: cs.Err()}
			}()
			for i := range 50 {
				_, err := c.InsertOne(ctx, Document{"_id": i})
				require.NoError(t, err)
				select {
				case g := <-events:
					require.NoError(t, g.err)
					require.GreaterOrEqual(t, g.written, g.seq, "op %d delivered before the log had it", g.seq)
				case <-time.After(10 * time.Second):
					t.Fatalf("insert %d was not delivered: the stream did not have the log written", i)
				}
			}
			require.NoError(t, cs.Close(ctx))
		})
	}
}

// TestTryNextHurriesTheLog: TryNext returns false while the op is not yet
// written, and asks the log to write it, so that a later TryNext finds it
// without the writer goroutine's delay.
func TestTryNextHurriesTheLog(t *testing.T) {
	db := mustOpenDurable(t, ttltest.NewClock(opEpoch), t.TempDir())
	ctx := context.Background()
	cs, err := db.Watch(ctx, nil)
	require.NoError(t, err)
	_, err = db.Collection("c").InsertOne(ctx, Document{"_id": 1})
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for !cs.TryNext(ctx) {
		require.NoError(t, cs.Err())
		require.True(t, time.Now().Before(deadline), "TryNext never found the op: nothing wrote it to the log")
		time.Sleep(time.Millisecond) // waits for the writer goroutine, not for expiry
	}
	require.GreaterOrEqual(t, db.persist.sink.written.Load(), cs.Event().ClusterTime)
}

// TestWatchUnderSyncAlwaysDeliversOnlyFsynced: every event a stream
// delivered under SyncAlways is in the DB after a power cut taken right
// after it (FaultFS drops whatever was not fsynced).
func TestWatchUnderSyncAlwaysDeliversOnlyFsynced(t *testing.T) {
	m := vfs.NewFaultFS()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(SyncAlways))
	ctx := context.Background()
	c := db.Collection("c")
	cs, err := db.Watch(ctx, nil)
	require.NoError(t, err)
	delivered := make(chan int, 1000)
	go func() {
		defer close(delivered)
		for cs.Next(ctx) {
			delivered <- idOf(t, cs.Event().DocumentKey)
		}
	}()
	const n = 200
	writes := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := c.InsertOne(ctx, Document{"_id": int32(i)}); err != nil {
				writes <- err
				return
			}
		}
		writes <- nil
	}()
	// Cut the power as soon as a tenth of the inserts were delivered,
	// writes still running: whatever was delivered must survive.
	var seen []int
	for id := range delivered {
		seen = append(seen, id)
		if len(seen) == n/10 {
			m.PowerCut()
			break
		}
	}
	<-writes // fails after the cut, or finished
	_ = db.Close()
	db2 := mustOpenDurable(t, clk, "d", withFS(m))
	for _, id := range seen {
		err := db2.Collection("c").FindOne(ctx, Document{"_id": id}).Err()
		if errors.Is(err, ErrNotFound) {
			t.Fatalf("document %d was delivered, and lost by the power cut", id)
		}
		require.NoError(t, err)
	}
}
