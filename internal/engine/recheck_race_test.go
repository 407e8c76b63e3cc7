package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
)

// Rule 5: no document is ever deleted before its threshold, under any
// interleaving of writers and passes. Writers push dates forward ($set to a
// later date, $currentDate), unset them and re-insert deleted documents
// while passes run back to back (RunTTLPass in a loop, and the background
// monitor woken by the advancing clock). Every write is recorded, under a
// per-document lock held across the write, so that when an observer learns
// of a deletion it can check that the document's last written date plus
// ExpireAfterSeconds was not after that pass's now.
//
// With an expire hook the monitor chooses a batch, leaves every lock for
// the hook, then re-checks: the window this test aims at. Without one it
// chooses and deletes under the write lock.
func TestRecheckRace(t *testing.T) {
	for _, withHook := range []bool{true, false} {
		t.Run(fmt.Sprintf("hook=%v", withHook), func(t *testing.T) {
			runRecheckRace(t, 1500, withHook)
		})
	}
}

// TestSoakRecheckRace is TestRecheckRace for longer: TTLDB_SOAK=short (CI)
// or any other non-empty value for the long run.
func TestSoakRecheckRace(t *testing.T) {
	rounds := 0
	switch os.Getenv("TTLDB_SOAK") {
	case "":
		t.Skip("set TTLDB_SOAK=short or TTLDB_SOAK=long")
	case "short":
		rounds = 10000
	default:
		rounds = 200000
	}
	for _, withHook := range []bool{true, false} {
		t.Run(fmt.Sprintf("hook=%v", withHook), func(t *testing.T) {
			runRecheckRace(t, rounds, withHook)
		})
	}
}

func runRecheckRace(t *testing.T, rounds int, withHook bool) {
	seed := testutil.Seed(t)

	const (
		nDocs   = 48
		writers = 4
		expire  = 10 * time.Second
	)
	type docState struct {
		mu     sync.Mutex
		exists bool
		dated  bool      // has a date in lastModifiedDate
		date   time.Time // its last written date (a lower bound after an unread $currentDate)
	}
	states := make([]docState, nDocs)
	var (
		deleted, offered, early atomic.Int64
		reportMu                sync.Mutex
		reports                 []string
	)
	observe := func(ev DeleteEvent) {
		for _, id := range ev.IDs {
			st := &states[id.(int)]
			st.mu.Lock()
			var bad string
			switch {
			case !st.exists:
				bad = "deleted although not stored"
			case !st.dated:
				bad = "deleted without a date"
			case st.date.Add(expire).After(ev.PassNow):
				bad = fmt.Sprintf("deleted at pass now %v, before its threshold %v", ev.PassNow, st.date.Add(expire))
			}
			st.exists = false
			st.mu.Unlock()
			deleted.Add(1)
			if bad != "" {
				early.Add(1)
				reportMu.Lock()
				if len(reports) < 10 {
					reports = append(reports, fmt.Sprintf("document %v: %s", id, bad))
				}
				reportMu.Unlock()
			}
		}
	}
	opts := []Option{WithDeleteObserver(observe), WithMonitor(MonitorOptions{Interval: 3 * time.Second, BatchSize: 8})}
	if withHook {
		opts = append(opts, WithOnExpire(func(ctx context.Context, b ExpiredBatch) error {
			offered.Add(int64(len(b.Docs)))
			return nil
		}))
	}
	db, clk := openMon(t, opts...)
	c := ttlColl(t, db, "sessions", int32(expire/time.Second))
	for i := range states {
		st := &states[i]
		st.exists, st.dated, st.date = true, true, t0.Add(-expire+time.Duration(i)*100*time.Millisecond)
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "lastModifiedDate": st.date})
		require.NoError(t, err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range writers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)+1))
		goWG(&wg, func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := rng.IntN(nDocs)
				st := &states[i]
				st.mu.Lock()
				err := recheckWrite(c, clk.Now, rng, i, expire, &st.exists, &st.dated, &st.date)
				st.mu.Unlock()
				if !assert.NoError(t, err) {
					return
				}
				writes.Add(1)
			}
		})
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	passes := 0
	for range rounds {
		clk.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
		_, err := db.RunTTLPass(context.Background())
		require.NoError(t, err)
		passes++
		if early.Load() > 0 {
			break
		}
	}
	close(stop)
	wg.Wait()
	// The background monitor runs passes too: stop it (Close waits for it)
	// so that the counts below are final.
	require.NoError(t, db.Close())
	reportMu.Lock()
	defer reportMu.Unlock()
	assert.Zero(t, early.Load(), "early deletions (seed %d):\n%v", seed, reports)
	assert.Positive(t, deleted.Load())
	m := db.Metrics().TTL
	assert.Equal(t, deleted.Load(), m.DeletedDocuments, "metrics count exactly the committed deletions")
	t.Logf("%d RunTTLPass rounds (%d passes in all), %d writes, %d deletions", passes, m.Passes, writes.Load(), deleted.Load())
	if withHook {
		t.Logf("%d documents offered to the hook, %d of them saved by the re-check", offered.Load(), offered.Load()-deleted.Load())
	}
}

// recheckWrite makes one random write to document i and records it; the
// caller holds the document's lock.
func recheckWrite(c *Collection, now func() time.Time, rng *rand.Rand, i int, expire time.Duration, exists, dated *bool, date *time.Time) error {
	filter := Document{"_id": i}
	if !*exists {
		// Bring it back, often already expired or about to.
		d := now().Add(-expire + time.Duration(rng.IntN(3000)-2000)*time.Millisecond)
		if _, err := c.InsertOne(context.Background(), Document{"_id": i, "lastModifiedDate": d}); err != nil {
			return err
		}
		*exists, *dated, *date = true, true, d
		return nil
	}
	switch op := rng.IntN(10); {
	case op < 5: // push the date forward: to a little before or after now - expire
		d := now().Add(-expire + time.Duration(rng.IntN(2000))*time.Millisecond)
		if d.Before(*date) && *dated {
			d = *date
		}
		res, err := c.UpdateOne(context.Background(), filter, Document{"$set": Document{"lastModifiedDate": d}})
		if err != nil || res.MatchedCount == 0 {
			return err // a deletion got there first
		}
		*dated, *date = true, d
	case op < 8: // $currentDate: the stored date is read back
		lower := now()
		res, err := c.UpdateOne(context.Background(), filter, Document{"$currentDate": Document{"lastModifiedDate": true}})
		if err != nil || res.MatchedCount == 0 {
			return err
		}
		*dated, *date = true, lower
		if doc, err := c.FindOne(context.Background(), filter).Document(); err == nil {
			*date = doc["lastModifiedDate"].(time.Time)
		}
	default: // unset: the document no longer expires
		res, err := c.UpdateOne(context.Background(), filter, Document{"$unset": Document{"lastModifiedDate": ""}})
		if err != nil || res.MatchedCount == 0 {
			return err
		}
		*dated = false
	}
	return nil
}
