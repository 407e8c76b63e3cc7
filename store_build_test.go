package ttldb

import (
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
		_, err := c.CreateIndex(IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
		built <- err
	}()
	<-w.paused

	// Free half the slots, then insert documents that take them.
	_, err := c.DeleteMany(Document{"_id": Document{"$lt": 1000}})
	require.NoError(t, err)
	more := make([]Document, 1000)
	for i := range more {
		more[i] = Document{"_id": 5000 + i, "v": 100 + i%10, "at": ttlT0.Add(-time.Duration(i) * time.Second)}
	}
	mustInsert(t, c, more...)
	compacted := make(chan error, 1)
	go func() { compacted <- c.Compact() }()
	select {
	case err := <-compacted:
		t.Fatalf("Compact ran during the build (err %v): it renumbers the slots the build holds", err)
	case <-time.After(50 * time.Millisecond):
	}
	w.release()
	require.NoError(t, <-built)
	require.NoError(t, <-compacted)
	requireIndexLikeFresh(t, c, "at_1")

	ex, err := c.Explain(Document{"at": Document{"$lt": ttlT0}})
	require.NoError(t, err)
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, 999, ex.NReturned)
	n, err := c.CountDocuments(nil)
	require.NoError(t, err)
	assert.Equal(t, 2000, n)
}
