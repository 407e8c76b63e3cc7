package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keepingSink keeps the ops it receives as they are, without copying
// them: what it keeps must stay valid after the write returns.
type keepingSink struct {
	mu  sync.Mutex
	ops []Op
}

func (k *keepingSink) appendOps(ops []Op) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, ops...)
}

func (k *keepingSink) wantsPreImages() bool { return false }

// opsOfKind returns the ops of ops that are of kind k, in order.
func opsOfKind(ops []Op, k OpKind) []Op {
	var out []Op
	for _, op := range ops {
		if op.Kind == k {
			out = append(out, op)
		}
	}
	return out
}

// An insert's working memory (its documents' encodings, keys and index
// entries) is reused by the next insert, so nothing that outlives the call
// may refer to it: an insert's ops carry the store's bytes, which never
// change. Here a sink keeps the ops of one batch uncopied while the next
// batches reuse the memory, and they still read back as inserted.
func TestInsertOpsDoNotShareTheScratch(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	sink := &keepingSink{}
	db.ops.attach(sink)
	c := db.Collection("c")
	batch := func(round int) []Document {
		docs := make([]Document, 50)
		for i := range docs {
			docs[i] = Document{"_id": fmt.Sprintf("r%d-%02d", round, i), "round": round, "pad": fmt.Sprintf("%0*d", 20+round, i)}
		}
		return docs
	}
	for round := range 5 {
		_, err := c.InsertMany(context.Background(), batch(round))
		require.NoError(t, err)
	}
	inserts := opsOfKind(sink.ops, OpInsert)
	require.Len(t, inserts, 5)
	for round, op := range inserts {
		want := batch(round)
		require.Len(t, op.Docs, len(want))
		for i, d := range op.Docs {
			assert.Equal(t, want[i], d.Document(), "round %d document %d", round, i)
		}
	}
}

// The records an index build's side table keeps for inserts made during
// the build are the store's, not the insert's reused memory: inserts after
// them leave them intact, and the built index matches a fresh one.
func TestInsertsDuringBuildDoNotShareTheScratch(t *testing.T) {
	db, _ := newTTLDB(t)
	c := db.Collection("c")
	for i := range 100 {
		mustInsert(t, c, Document{"_id": i, "v": i % 7})
	}
	w := watchBuilds(t, "c", true)
	built := make(chan error, 1)
	go func() {
		_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}})
		built <- err
	}()
	<-w.paused
	for round := range 4 {
		docs := make([]Document, 40)
		for i := range docs {
			docs[i] = Document{"_id": fmt.Sprintf("r%d-%02d", round, i), "v": 100*round + i}
		}
		_, err := c.InsertMany(context.Background(), docs)
		require.NoError(t, err)
	}
	w.release()
	require.NoError(t, <-built)
	requireIndexLikeFresh(t, c, "v_1")
	n, err := c.CountDocuments(context.Background(), Document{"v": Document{"$gte": 100}})
	require.NoError(t, err)
	assert.EqualValues(t, 120, n)
}

// insertWith is InsertMany through the given scratch, as insertDocs does
// with a pooled one.
func insertWith(t *testing.T, c *Collection, sc *insertScratch, docs ...Document) {
	t.Helper()
	prepared := sc.preparedFor(len(docs))
	for i, d := range docs {
		p, err := c.prepareNewDocument(d, &sc.enc)
		require.NoError(t, err)
		prepared[i] = p
	}
	require.NoError(t, c.writeDurableByCaller(func(s *collState) error { return s.insertPrepared(prepared, sc) }))
	sc.release()
}

// A reused scratch holds the index entries of the inserts before: none of
// them leaks into the next insert's. Here the entries of documents with an
// array in a multikey index sit where the next insert, into another
// collection, keeps its entry in a TTL index (which has no B-tree): that
// index stays non-multikey, as on a DB applying the same ops.
func TestInsertScratchDoesNotCarryMultikey(t *testing.T) {
	ctx := context.Background()
	db, clk := newTTLDB(t)
	arrays, dates := db.Collection("arrays"), db.Collection("dates")
	_, err := arrays.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("tags")}})
	require.NoError(t, err)
	_, err = dates.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	sc := new(insertScratch)
	for i := range 3 {
		insertWith(t, arrays, sc, Document{"_id": i, "tags": []any{1, 2}})
		insertWith(t, dates, sc, Document{"_id": i, "at": clk.Now()})
	}
	specs, err := dates.Indexes(context.Background())
	require.NoError(t, err)
	require.Len(t, specs, 2)
	require.Equal(t, "at_1", specs[1].Name)
	require.False(t, specs[1].Multikey, "no document of dates has an array")
	specs, err = arrays.Indexes(context.Background())
	require.NoError(t, err)
	require.True(t, specs[1].Multikey)
}
