package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A background build of a TTL index and of a secondary index meets the
// store's slots being freed and reused (documents deleted, others inserted
// into their slots) while it scans; Compact, which renumbers slots, waits
// for the builds to end. The indexes come out as fresh ones would.
func TestIndexBuildWithSlotReuseAndCompact(t *testing.T) {
	db, _ := newTTLDB(t)
	c := db.Collection("c")
	docs := make([]Document, 2000)
	for i := range docs {
		docs[i] = Document{"_id": i, "v": i % 10, "at": ttlT0.Add(time.Duration(i) * time.Second)}
	}
	mustInsert(t, c, docs...)
	w := watchBuilds(t, "c", true)
	built := make(chan error, 1)
	go func() {
		_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
		built <- err
	}()
	<-w.paused

	// Free half the slots, then insert documents that take them.
	_, err := c.DeleteMany(context.Background(), Document{"_id": Document{"$lt": 1000}})
	require.NoError(t, err)
	more := make([]Document, 1000)
	for i := range more {
		more[i] = Document{"_id": 5000 + i, "v": 100 + i%10, "at": ttlT0.Add(-time.Duration(i) * time.Second)}
	}
	mustInsert(t, c, more...)
	compacted := make(chan error, 1)
	go func() { compacted <- c.Compact(context.Background()) }()
	select {
	case err := <-compacted:
		t.Fatalf("Compact ran during the build (err %v): it renumbers the slots the build holds", err)
	case <-time.After(50 * time.Millisecond):
	}
	w.release()
	require.NoError(t, <-built)
	require.NoError(t, <-compacted)
	requireIndexLikeFresh(t, c, "at_1")

	ex, err := c.Explain(context.Background(), Document{"at": Document{"$lt": ttlT0}})
	require.NoError(t, err)
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, 999, ex.NReturned)
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	assert.EqualValues(t, 2000, n)
}

// Readers by _id (no collection lock) run while a writer rewrites
// documents (their old chunks reclaimed), deletes and re-inserts others
// (slots reused), and compacts (the store replaced): every read returns a
// whole version of the document asked for. Run with -race.
func TestReadByIDDuringRewritesAndCompact(t *testing.T) {
	db, _ := newTTLDB(t)
	c := db.Collection("c")
	const n = 300
	doc := func(i, v int) Document {
		return Document{"_id": i, "v": v, "check": v*7 + i, "pad": fmt.Sprintf("%0*d", 20+v%200, v)}
	}
	for i := range n {
		mustInsert(t, c, doc(i, 0))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; ; k += 7 {
				select {
				case <-stop:
					return
				default:
				}
				i := k % n
				d, err := c.FindOne(context.Background(), Document{"_id": i}).Document()
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				v := d["v"].(int)
				if d["_id"] != i || d["check"] != v*7+i || d["pad"] != fmt.Sprintf("%0*d", 20+v%200, v) {
					t.Errorf("read %d: %v", i, d)
					return
				}
				reads.Add(1)
			}
		}()
	}
	for v := 1; v <= 40; v++ {
		for i := 0; i < n; i += 3 {
			_, err := c.ReplaceOne(context.Background(), Document{"_id": i}, doc(i, v))
			require.NoError(t, err)
		}
		_, err := c.DeleteMany(context.Background(), Document{"_id": Document{"$mod": []any{10, v % 10}}})
		require.NoError(t, err)
		for i := v % 10; i < n; i += 10 {
			mustInsert(t, c, doc(i, v))
		}
		if v%10 == 5 {
			require.NoError(t, c.Compact(context.Background()))
		}
	}
	close(stop)
	wg.Wait()
	st := collStateOf(t, c).store().Stats()
	t.Logf("%d reads; store: %+v", reads.Load(), st)
	assert.Positive(t, reads.Load())
	assert.Positive(t, st.Dropped, "chunks were reclaimed while readers read")
}
