package ttldb_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/internal/testutil"
)

// Rule 9: every method is safe for concurrent use (run with -race): many
// goroutines insert, update, find, delete and create indexes at once, and
// the end state is consistent through every index.
func TestStoreConcurrentMixedWorkload(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("mixed")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("w")}})
	require.NoError(t, err)
	const workers, ops = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers*ops)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ops {
				id := fmt.Sprintf("%d-%d", w, i)
				if _, err := c.InsertOne(context.Background(), ttldb.Document{"_id": id, "w": w, "i": i, "n": 0}); err != nil {
					errs <- err
				}
				if _, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": id}, ttldb.Document{"$inc": ttldb.Document{"n": 1}}); err != nil {
					errs <- err
				}
				if _, err := findDocs(c, ttldb.Document{"w": w}, ttldb.FindOptions{Limit: 5}); err != nil {
					errs <- err
				}
				if _, err := c.FindOne(context.Background(), ttldb.Document{"_id": id}).Document(); err != nil {
					errs <- err
				}
				if i%3 == 0 {
					if _, err := c.DeleteOne(context.Background(), ttldb.Document{"_id": id}); err != nil {
						errs <- err
					}
				}
				switch i {
				case 50:
					if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("i")}}); err != nil {
						errs <- err
					}
				case 100:
					if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Desc("n"), ttldb.Asc("w")}}); err != nil {
						errs <- err
					}
				case 150:
					if err := c.Compact(context.Background()); err != nil {
						errs <- err
					}
				}
				if i%40 == 0 {
					if _, err := c.Indexes(context.Background()); err != nil {
						errs <- err
					}
					if _, err := c.Explain(context.Background(), ttldb.Document{"i": i}); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	kept := ops - (ops+2)/3
	assert.Equal(t, workers*kept, count(t, c, nil))
	assert.Equal(t, workers*kept, count(t, c, ttldb.Document{"n": 1}))
	for w := range workers {
		assert.Equal(t, kept, count(t, c, ttldb.Document{"w": w}), "through w_1")
	}
	assert.Equal(t, workers, count(t, c, ttldb.Document{"i": 1}), "through i_1, created mid-way")
	ex, err := c.Explain(context.Background(), ttldb.Document{"i": 1})
	require.NoError(t, err)
	assert.Equal(t, "i_1", ex.IndexName)
}

// Rule 9: a long index build does not block readers, and documents
// written during the build are in the index afterwards.
func TestStoreIndexBuildDoesNotBlockReaders(t *testing.T) {
	n := 100_000
	if testing.Short() || testutil.RaceEnabled {
		n = 40_000
	}
	db, _ := openStore(t)
	c := db.Collection("build")
	batch := make([]ttldb.Document, 0, 1000)
	for i := range n {
		batch = append(batch, ttldb.Document{"_id": i, "k": i % 100})
		if len(batch) == cap(batch) {
			mustInsert(t, c, batch...)
			batch = batch[:0]
		}
	}

	buildStarted := make(chan struct{})
	buildDone := make(chan struct{})
	stopReader := make(chan struct{})
	readerReady := make(chan struct{})
	var duringBuild atomic.Int64
	var readerErr error
	var readerWG sync.WaitGroup
	readerWG.Add(1)
	go func() {
		defer readerWG.Done()
		ready := false
		for i := 0; ; i++ {
			select {
			case <-stopReader:
				return
			default:
			}
			inBuild := false
			select {
			case <-buildStarted:
				inBuild = true
			default:
			}
			if _, err := c.FindOne(context.Background(), ttldb.Document{"_id": i % n}).Document(); err != nil {
				readerErr = err
				return
			}
			if !ready {
				ready = true
				close(readerReady)
			}
			select {
			case <-buildDone:
			default:
				if inBuild {
					duringBuild.Add(1) // started after the build began, finished before it ended
				}
			}
		}
	}()
	// Writers during the build.
	var writerWG sync.WaitGroup
	writerWG.Add(1)
	go func() {
		defer writerWG.Done()
		<-buildStarted
		for i := range 50 {
			if _, err := c.InsertOne(context.Background(), ttldb.Document{"_id": n + i, "k": 1000 + i}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	<-readerReady
	close(buildStarted)
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("k")}})
	close(buildDone)
	require.NoError(t, err)
	writerWG.Wait()
	close(stopReader)
	readerWG.Wait()
	require.NoError(t, readerErr)
	t.Logf("%d FindOne calls completed during the build of an index over %d documents", duringBuild.Load(), n)
	assert.Greater(t, duringBuild.Load(), int64(10), "readers must keep completing during an index build")

	for i := range 50 {
		ex, err := c.Explain(context.Background(), ttldb.Document{"k": 1000 + i})
		require.NoError(t, err)
		require.Equal(t, "k_1", ex.IndexName)
		require.Equal(t, 1, ex.NReturned, "document written during the build is in the index")
	}
	assert.Equal(t, n/100, count(t, c, ttldb.Document{"k": 5}))
}
