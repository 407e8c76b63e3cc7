package ttldb_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// recReplicator records what a DB's Replicator sees.
type recReplicator struct {
	mu      sync.Mutex
	refuse  error // Begin's answer
	endErr  error // End's answer when the write succeeded
	begins  int
	ends    int
	ops     []ttldb.Op
	endSeen []error
}

func (r *recReplicator) Begin() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse != nil {
		return r.refuse
	}
	r.begins++
	return nil
}

func (r *recReplicator) Commit(ops []ttldb.Op) {
	r.mu.Lock()
	r.ops = append(r.ops, ops...)
	r.mu.Unlock()
}

func (r *recReplicator) End(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends++
	r.endSeen = append(r.endSeen, err)
	if err == nil {
		return r.endErr
	}
	return err
}

func (r *recReplicator) set(refuse, endErr error) {
	r.mu.Lock()
	r.refuse, r.endErr = refuse, endErr
	r.mu.Unlock()
}

// TestReplicatorSeesEveryWrite: every kind of local write runs between a
// Begin and an End, and Commit receives its ops, numbered, in order.
func TestReplicatorSeesEveryWrite(t *testing.T) {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := &recReplicator{}
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithReplicator(r), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	c := db.Collection("s")
	_, err = c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	_, err = c.InsertMany([]any{ttldb.Document{"_id": 1, "at": clk.Now()}, ttldb.Document{"_id": 2, "at": clk.Now()}})
	require.NoError(t, err)
	_, err = c.UpdateOne(ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"x": 1}})
	require.NoError(t, err)
	_, err = c.BulkWrite(ctx, []ttldb.WriteModel{ttldb.InsertOneModel{Document: ttldb.Document{"_id": 3}}, ttldb.DeleteOneModel{Filter: ttldb.Document{"_id": 3}}})
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Deleted)
	require.NoError(t, db.DropCollection("s"))

	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Equal(t, r.begins, r.ends, "every Begin has its End")
	for _, e := range r.endSeen {
		assert.NoError(t, e)
	}
	var kinds []ttldb.OpKind
	for i, op := range r.ops {
		assert.Equal(t, uint64(i+1), op.Seq)
		kinds = append(kinds, op.Kind)
	}
	assert.Equal(t, []ttldb.OpKind{ttldb.OpCreateCollection, ttldb.OpCreateIndex, ttldb.OpInsert, ttldb.OpUpdate, ttldb.OpInsert, ttldb.OpDelete, ttldb.OpExpire, ttldb.OpDropCollection}, kinds)
	assert.Equal(t, uint64(len(r.ops)), db.LastSeq())
}

// TestReplicatorRefuses: a write Begin refuses returns its error and
// changes nothing; the monitor deletes nothing.
func TestReplicatorRefuses(t *testing.T) {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := &recReplicator{}
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithReplicator(r), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	c := db.Collection("s")
	_, err = c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	_, err = c.InsertOne(ttldb.Document{"_id": 1, "at": clk.Now()})
	require.NoError(t, err)
	before := db.LastSeq()

	notLeader := errors.New("not the leader")
	r.set(notLeader, nil)
	_, err = c.InsertOne(ttldb.Document{"_id": 2})
	assert.ErrorIs(t, err, notLeader)
	_, err = c.UpdateOne(ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"x": 1}})
	assert.ErrorIs(t, err, notLeader)
	_, err = c.DeleteMany(ctx, ttldb.Document{})
	assert.ErrorIs(t, err, notLeader)
	_, err = c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("y")}})
	assert.ErrorIs(t, err, notLeader)
	assert.ErrorIs(t, c.DropIndex("at_1"), notLeader)
	_, err = db.CreateCollection("t", ttldb.CollectionOptions{})
	assert.ErrorIs(t, err, notLeader)
	assert.ErrorIs(t, db.DropCollection("s"), notLeader)
	clk.Advance(2 * time.Minute)
	res, err := db.RunTTLPass(ctx)
	assert.ErrorIs(t, err, ttldb.ErrNotPrimary, "a refused TTL batch ends the pass as a step-down")
	assert.Zero(t, res.Deleted)

	assert.Equal(t, before, db.LastSeq(), "a refused write committed an op")
	n, err := c.CountDocuments(ctx, ttldb.Document{})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	specs, err := c.Indexes()
	require.NoError(t, err)
	assert.Len(t, specs, 2)
	names, err := db.ListCollectionNames()
	require.NoError(t, err)
	assert.Equal(t, []string{"s"}, names)

	// End's error is the write's.
	lost := errors.New("leadership lost")
	r.set(nil, lost)
	_, err = c.InsertOne(ttldb.Document{"_id": 3})
	assert.ErrorIs(t, err, lost)
	r.set(nil, nil)

	// Ops applied with Apply do not go through the replicator.
	r.mu.Lock()
	begins := r.begins
	r.mu.Unlock()
	require.NoError(t, db.Apply(ttldb.Op{Seq: db.LastSeq() + 1, Kind: ttldb.OpDropIndex, Collection: "s", Index: "at_1"}))
	r.mu.Lock()
	assert.Equal(t, begins, r.begins)
	r.mu.Unlock()
}

// TestWithRestore: a DB opened from a Backup holds the same documents and
// indexes and continues the sequence.
func TestWithRestore(t *testing.T) {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := &recReplicator{}
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithReplicator(r))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	c := db.Collection("s")
	_, err = c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	for i := range 100 {
		_, err = c.InsertOne(ttldb.Document{"_id": i, "at": clk.Now()})
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	require.NoError(t, db.Backup(&buf))

	db2, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithRestore(bytes.NewReader(buf.Bytes())))
	require.NoError(t, err)
	defer db2.Close()
	assert.Equal(t, db.LastSeq(), db2.LastSeq())
	n, err := db2.Collection("s").CountDocuments(ctx, ttldb.Document{})
	require.NoError(t, err)
	assert.Equal(t, 100, n)
	specs, err := db2.Collection("s").Indexes()
	require.NoError(t, err)
	assert.Len(t, specs, 2)
	// The next op applies.
	_, err = c.InsertOne(ttldb.Document{"_id": 1000})
	require.NoError(t, err)
	r.mu.Lock()
	last := r.ops[len(r.ops)-1]
	r.mu.Unlock()
	require.NoError(t, db2.Apply(last))

	_, err = ttldb.Open(ttldb.WithRestore(bytes.NewReader(buf.Bytes()[:buf.Len()/2])))
	assert.Error(t, err, "a truncated copy")
	_, err = ttldb.Open(ttldb.WithRestore(nil))
	assert.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	_, err = ttldb.Open(ttldb.WithReplicator(nil))
	assert.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	// A replicated DB's only log is the replicator's: no data directory.
	dir := t.TempDir()
	_, err = ttldb.Open(ttldb.WithDir(dir), ttldb.WithReplicator(&recReplicator{}))
	assert.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the refused Open wrote nothing")
}

// Rule: a change-stream buffer attached at open starts after what the DB
// loaded (WithDir): a stream opened on the reopened DB delivers its next
// write.
func TestAttachAtOpenAfterDir(t *testing.T) {
	dir := t.TempDir()
	db, err := ttldb.Open(ttldb.WithDir(dir), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	for i := range 3 {
		_, err := db.Collection("c").InsertOne(ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	last := db.LastSeq()
	require.NoError(t, db.Close())
	db, err = ttldb.Open(ttldb.WithDir(dir), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}),
		ttldb.WithChangeStreamBuffer(ttldb.ChangeStreamBufferOptions{AttachAtOpen: true}))
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, last, db.LastSeq())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := db.Watch(ctx)
	require.NoError(t, err)
	defer cs.Close()
	_, err = db.Collection("c").InsertOne(ttldb.Document{"_id": 9})
	require.NoError(t, err)
	require.True(t, cs.Next(ctx), "%v", cs.Err())
	assert.Equal(t, ttldb.ResumeToken{Seq: last + 2}, cs.Event().ID)
}

// Rule: a change-stream buffer attached at open starts after what the DB
// loaded (WithRestore): a stream opened on the restored DB delivers its
// next write, and one resumed just after the loaded ops too.
func TestAttachAtOpenAfterRestore(t *testing.T) {
	attach := ttldb.WithChangeStreamBuffer(ttldb.ChangeStreamBufferOptions{AttachAtOpen: true})
	src, err := ttldb.Open(attach, ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer src.Close()
	for i := range 3 {
		_, err := src.Collection("c").InsertOne(ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	require.NoError(t, src.Backup(&buf))
	for _, replicated := range []bool{false, true} {
		opts := []ttldb.Option{attach, ttldb.WithRestore(bytes.NewReader(buf.Bytes())), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true})}
		if replicated {
			opts = append(opts, ttldb.WithReplicator(&recReplicator{}))
		}
		db, err := ttldb.Open(opts...)
		require.NoError(t, err)
		defer db.Close()
		last := db.LastSeq()
		require.Equal(t, src.LastSeq(), last)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cs, err := db.Watch(ctx)
		require.NoError(t, err)
		defer cs.Close()
		resumed, err := db.Watch(ctx, ttldb.ChangeStreamOptions{ResumeAfter: &ttldb.ResumeToken{Seq: last + 1}})
		require.NoError(t, err, "the restored ops are committed")
		defer resumed.Close()
		_, err = db.Collection("c").InsertOne(ttldb.Document{"_id": 9})
		require.NoError(t, err)
		if replicated {
			require.NoError(t, db.MarkCommitted(last+1))
		}
		for _, s := range []*ttldb.ChangeStream{cs, resumed} {
			require.True(t, s.Next(ctx), "replicated %v: %v", replicated, s.Err())
			assert.Equal(t, ttldb.ResumeToken{Seq: last + 2}, s.Event().ID)
		}
	}
}
