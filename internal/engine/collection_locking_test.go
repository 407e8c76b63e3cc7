package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// Rule 9, at the lock level: while one reader holds the collection's read
// lock (as every read does for its duration), other readers still run to
// completion; and while a writer holds writeMu for its preparation (or an
// index build), readers run too. With a reader-exclusive lock, or readers
// taking writeMu, these reads would deadlock.
func TestStoreReadersNotBlocked(t *testing.T) {
	db, err := Open(WithClock(ttltest.NewClock(time.Unix(0, 0))), WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	c := db.Collection("c")
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}})
	require.NoError(t, err)
	for i := range 100 {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "v": i})
		require.NoError(t, err)
	}
	s, err := c.read()
	require.NoError(t, err)

	reads := func() <-chan error {
		done := make(chan error, 1)
		go func() {
			if _, err := c.FindOne(context.Background(), Document{"_id": 5}).Document(); err != nil {
				done <- err
				return
			}
			if docs, err := findDocs(c, Document{"v": Document{"$gte": 50}}); err != nil || len(docs) != 50 {
				done <- err
				return
			}
			if _, err := c.CountDocuments(context.Background(), nil); err != nil {
				done <- err
				return
			}
			if _, err := c.Explain(context.Background(), Document{"v": 3}); err != nil {
				done <- err
				return
			}
			_, err := c.Indexes(context.Background())
			done <- err
		}()
		return done
	}

	s.mu.RLock() // another reader, mid-read
	require.NoError(t, <-reads())
	s.mu.RUnlock()

	s.writeMu.Lock() // a writer preparing, or an index build
	require.NoError(t, <-reads())
	s.writeMu.Unlock()
}
