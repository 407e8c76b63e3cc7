package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// passMallocs inserts n expired documents (string _id values, a TTL index
// only) and returns the heap allocations of the TTL pass
// that deletes them.
func passMallocs(t *testing.T, n int, opts ...Option) uint64 {
	t.Helper()
	db, clk := openMon(t, append([]Option{quiet(MonitorOptions{})}, opts...)...)
	c := ttlColl(t, db, "events", 60)
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = Document{"_id": fmt.Sprintf("doc:%09d", i), "user": fmt.Sprintf("u%d", i%7), "lastModifiedDate": t0}
	}
	mustInsert(t, c, docs...)
	clk.Advance(time.Hour)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := db.RunTTLPass(context.Background())
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Equal(t, n, res.Deleted)
	return after.Mallocs - before.Mallocs
}

// A TTL batch allocates per batch, not per document: removing a document
// from its indexes recomputes no docKeys, and the batch chooses into a
// buffer the monitor reuses. A mass expiry's garbage is what triggers GC
// cycles during it, and each cycle takes a processor from the monitor.
func TestTTLPassAllocatesPerBatchNotPerDocument(t *testing.T) {
	const n = 8 * DefaultMonitorBatchSize
	got := passMallocs(t, n)
	require.Less(t, got, uint64(n/8), "allocations of a pass deleting %d documents without observers", n)
}

// With a DeleteObserver, a batch's string _id values share one string: a
// document costs one allocation (its value's interface), not two.
func TestTTLPassObserverIDsShareAString(t *testing.T) {
	const n = 8 * DefaultMonitorBatchSize
	var got []any
	obs := WithDeleteObserver(func(ev DeleteEvent) { got = append(got, ev.IDs...) })
	allocs := passMallocs(t, n, obs)
	require.Less(t, allocs, uint64(n+n/8), "allocations of a pass deleting %d documents, telling an observer", n)
	require.Len(t, got, n)
	seen := map[any]bool{}
	for _, id := range got {
		s, ok := id.(string)
		require.True(t, ok)
		require.Regexp(t, `^doc:\d{9}$`, s)
		seen[id] = true
	}
	require.Len(t, seen, n, "every deleted _id, once")
}
