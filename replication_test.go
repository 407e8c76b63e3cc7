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

// propReplicator is a recReplicator that proposes TTL batches first
// (ttldb.ExpireProposer): it records each proposal and its DB's state at
// that moment, and commits it or refuses it as told.
type propReplicator struct {
	recReplicator
	db       func() *ttldb.DB
	refuseEx error         // ProposeExpire's answer (nil: committed, apply called)
	inside   func()        // called inside ProposeExpire, before the answer
	proposed []ttldb.Op    // every op proposed
	during   []int         // documents of collection s stored when each was proposed
	lastSeq  []uint64      // DB.LastSeq() when each was proposed
	applyErr []error       // apply's result, for each committed proposal
	pmu      sync.Mutex    // guards the fields above
	wait     chan struct{} // when set, ProposeExpire waits for it to close
}

func (r *propReplicator) ProposeExpire(op ttldb.Op, apply func() error) error {
	r.pmu.Lock()
	wait, inside, refuse := r.wait, r.inside, r.refuseEx
	r.pmu.Unlock()
	n, err := r.db().Collection("s").CountDocuments(context.Background(), ttldb.Document{})
	if err != nil {
		return err
	}
	r.pmu.Lock()
	r.proposed = append(r.proposed, op)
	r.during = append(r.during, int(n))
	r.lastSeq = append(r.lastSeq, r.db().LastSeq())
	r.pmu.Unlock()
	if inside != nil {
		inside()
	}
	if wait != nil {
		<-wait
	}
	if refuse != nil {
		return refuse
	}
	err = apply()
	r.pmu.Lock()
	r.applyErr = append(r.applyErr, err)
	r.pmu.Unlock()
	return err
}

func openProposing(t *testing.T, opts ...ttldb.Option) (*ttldb.DB, *propReplicator, *ttltest.Clock) {
	t.Helper()
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := &propReplicator{}
	opts = append([]ttldb.Option{ttldb.WithClock(clk), ttldb.WithReplicator(r), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true, BatchSize: 4, ProposalBatchSize: 4})}, opts...)
	db, err := ttldb.Open(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	r.db = func() *ttldb.DB { return db }
	_, err = db.Collection("s").CreateIndex(context.Background(), ttldb.IndexModel{Name: "at_ttl", Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	var docs []any
	for i := range 10 {
		docs = append(docs, ttldb.Document{"_id": i, "at": clk.Now()})
	}
	_, err = db.Collection("s").InsertMany(context.Background(), docs)
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	return db, r, clk
}

// TestProposeExpireCommitted: with an ExpireProposer, each TTL batch is
// proposed before anything is deleted, as an OpExpire holding the keys,
// the index, the cutoff and the next sequence number; once committed
// (apply), it is deleted and committed to the change streams with that
// sequence number, never through Replicator.Commit.
func TestProposeExpireCommitted(t *testing.T) {
	db, r, clk := openProposing(t)
	ctx := context.Background()
	cs, err := db.Watch(ctx, nil)
	require.NoError(t, err)
	defer cs.Close(context.Background())
	before := db.LastSeq()
	r.mu.Lock()
	committedBefore := len(r.ops)
	r.mu.Unlock()

	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 10, res.Deleted)
	assert.Zero(t, count(t, db.Collection("s"), nil))

	r.pmu.Lock()
	defer r.pmu.Unlock()
	require.Len(t, r.proposed, 3, "10 documents in batches of 4")
	keys := 0
	for i, op := range r.proposed {
		assert.Equal(t, ttldb.OpExpire, op.Kind)
		assert.Equal(t, "s", op.Collection)
		assert.Equal(t, "at_ttl", op.Index)
		assert.True(t, op.Cutoff.Equal(clk.Now()), "the batch's instant")
		assert.Equal(t, before+uint64(i)+1, op.Seq, "the next sequence number, reserved")
		assert.Equal(t, before+uint64(i), r.lastSeq[i], "not yet used while proposed")
		assert.Equal(t, 10-keys, r.during[i], "nothing of the batch deleted before it is committed")
		assert.NoError(t, r.applyErr[i])
		keys += len(op.Keys)
	}
	assert.Equal(t, 10, keys)
	assert.Equal(t, before+3, db.LastSeq())
	r.mu.Lock()
	assert.Len(t, r.ops, committedBefore, "a proposed batch does not go through Commit")
	assert.Equal(t, r.begins, r.ends, "each batch runs between a Begin and an End")
	r.mu.Unlock()

	seqs := map[uint64]int{}
	for range 10 {
		require.True(t, cs.Next(ctx))
		ev := cs.Event()
		assert.Equal(t, ttldb.OperationType("delete"), ev.OperationType)
		seqs[ev.ClusterTime]++
	}
	assert.Equal(t, map[uint64]int{before + 1: 4, before + 2: 4, before + 3: 2}, seqs, "the change stream sees each batch with its reserved number")
}

// TestProposeExpireRefused: a refused proposal changes nothing (no
// document deleted, the sequence number not used: the next write takes
// it), and the pass stops with ErrNotPrimary.
func TestProposeExpireRefused(t *testing.T) {
	db, r, _ := openProposing(t)
	ctx := context.Background()
	refusal := errors.New("leadership lost")
	r.refuseEx = refusal
	before := db.LastSeq()
	res, err := db.RunTTLPass(ctx)
	require.ErrorIs(t, err, ttldb.ErrNotPrimary)
	require.ErrorIs(t, err, refusal)
	assert.Zero(t, res.Deleted)
	assert.Equal(t, 10, count(t, db.Collection("s"), nil))
	assert.Equal(t, before, db.LastSeq(), "the reserved sequence number is not used")
	assert.Len(t, r.proposed, 1, "the pass stops at the refused batch")
	assert.Empty(t, r.applyErr)

	_, err = db.Collection("s").InsertOne(context.Background(), ttldb.Document{"_id": "next"})
	require.NoError(t, err)
	assert.Equal(t, before+1, db.LastSeq(), "the next write takes the number")
	r.mu.Lock()
	assert.Equal(t, before+1, r.ops[len(r.ops)-1].Seq)
	assert.Equal(t, r.begins, r.ends)
	r.mu.Unlock()
}

// TestProposeExpireHoldsWrites: while a batch is proposed, writes to the
// collection and to others wait (nothing may be numbered between the
// proposal and its application), DB.LastSeq answers; a write that waited
// commits after the batch.
func TestProposeExpireHoldsWrites(t *testing.T) {
	db, r, _ := openProposing(t, ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true, BatchSize: 100}))
	ctx := context.Background()
	wait := make(chan struct{})
	proposing := make(chan struct{})
	r.wait = wait
	r.inside = func() { close(proposing) }
	passErr := make(chan error, 1)
	go func() {
		_, err := db.RunTTLPass(ctx)
		passErr <- err
	}()
	<-proposing
	seq := db.LastSeq()
	wrote := make(chan error, 2)
	go func() {
		_, err := db.Collection("other").InsertOne(context.Background(), ttldb.Document{"_id": 1})
		wrote <- err
	}()
	go func() {
		_, err := db.Collection("s").InsertOne(context.Background(), ttldb.Document{"_id": "new"})
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("a write ran while a TTL batch was proposed: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	assert.Equal(t, seq, db.LastSeq())
	close(wait)
	require.NoError(t, <-passErr)
	require.NoError(t, <-wrote)
	require.NoError(t, <-wrote)
	r.pmu.Lock()
	batchSeq := r.proposed[0].Seq
	r.pmu.Unlock()
	assert.Equal(t, seq+1, batchSeq)
	assert.Equal(t, batchSeq+3, db.LastSeq(), "the batch, then the waiting writes (one creates its collection)")
	assert.Equal(t, 1, count(t, db.Collection("s"), nil), "the new document, written after the batch")
}

// TestProposeExpireRecheck: a document updated while the hooks run (after
// it was chosen) is re-checked before the batch is proposed: refreshed,
// it is not in the batch; changed but still expired, it is proposed in a
// later batch, after the hooks saw its new version.
func TestProposeExpireRecheck(t *testing.T) {
	var once sync.Once
	var db *ttldb.DB
	hook := func(_ context.Context, b ttldb.ExpiredBatch) error {
		once.Do(func() {
			_, err := db.Collection("s").UpdateOne(context.Background(), ttldb.Document{"_id": 0}, ttldb.Document{"$currentDate": ttldb.Document{"at": true}})
			require.NoError(t, err)
			_, err = db.Collection("s").UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"x": 1}})
			require.NoError(t, err)
		})
		return nil
	}
	db, r, _ := openProposing(t, ttldb.WithOnExpire(hook), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true, BatchSize: 100}))
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 9, res.Deleted)
	assert.Equal(t, 1, count(t, db.Collection("s"), ttldb.Document{"_id": 0}), "the refreshed document survives")
	r.pmu.Lock()
	defer r.pmu.Unlock()
	require.Len(t, r.proposed, 2)
	ids := func(op ttldb.Op) []any {
		var out []any
		for _, k := range op.Keys {
			out = append(out, k.ID())
		}
		return out
	}
	assert.NotContains(t, ids(r.proposed[0]), 0)
	assert.NotContains(t, ids(r.proposed[0]), 1, "changed since chosen: offered again first")
	assert.Len(t, r.proposed[0].Keys, 8)
	assert.Equal(t, []any{1}, ids(r.proposed[1]))
}

// TestProposalBatchSize: with an ExpireProposer, the monitor proposes
// batches of ProposalBatchSize documents (4 × BatchSize by default), not
// BatchSize; without one, it deletes batches of BatchSize.
func TestProposalBatchSize(t *testing.T) {
	sizes := func(ops []ttldb.Op) []int {
		var out []int
		for _, op := range ops {
			out = append(out, len(op.Keys))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		o    ttldb.MonitorOptions
		want []int
	}{
		{"given", ttldb.MonitorOptions{Disabled: true, BatchSize: 2, ProposalBatchSize: 3}, []int{3, 3, 3, 1}},
		{"default 4 × BatchSize", ttldb.MonitorOptions{Disabled: true, BatchSize: 2}, []int{8, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, r, _ := openProposing(t, ttldb.WithMonitor(tc.o))
			res, err := db.RunTTLPass(context.Background())
			require.NoError(t, err)
			assert.Equal(t, 10, res.Deleted)
			r.pmu.Lock()
			defer r.pmu.Unlock()
			assert.Equal(t, tc.want, sizes(r.proposed))
		})
	}
	t.Run("no proposer", func(t *testing.T) {
		clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		var batches []int
		db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true, BatchSize: 2, ProposalBatchSize: 8}),
			ttldb.WithDeleteObserver(func(ev ttldb.DeleteEvent) { batches = append(batches, len(ev.IDs)) }))
		require.NoError(t, err)
		defer db.Close()
		_, err = db.Collection("s").CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
		require.NoError(t, err)
		for i := range 5 {
			_, err = db.Collection("s").InsertOne(context.Background(), ttldb.Document{"_id": i, "at": clk.Now()})
			require.NoError(t, err)
		}
		clk.Advance(2 * time.Minute)
		_, err = db.RunTTLPass(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []int{2, 2, 1}, batches)
	})
}

// Rule: a TTL batch applied through ProposeExpire is committed: change
// streams deliver it (and every op before it) with no DB.MarkCommitted,
// while nothing proposed first is delivered before its batch is applied.
func TestProposeExpireCommitsToStreams(t *testing.T) {
	db, _, _ := openProposing(t, ttldb.WithChangeStreamBuffer(ttldb.ChangeStreamBufferOptions{AttachAtOpen: true}))
	ctx := context.Background()
	cs, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{ResumeAfter: &ttldb.ResumeToken{}})
	require.NoError(t, err)
	defer cs.Close(context.Background())
	assert.False(t, cs.TryNext(ctx), "the index and the inserts are not marked committed")
	require.NoError(t, cs.Err())

	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.Equal(t, 10, res.Deleted)
	kinds := map[ttldb.OperationType]int{}
	for cs.TryNext(ctx) {
		kinds[cs.Event().OperationType]++
	}
	require.NoError(t, cs.Err())
	assert.Equal(t, map[ttldb.OperationType]int{ttldb.OperationInsert: 10, ttldb.OperationDelete: 10}, kinds)
	assert.Equal(t, ttldb.ResumeToken{Seq: db.LastSeq() + 1}, cs.ResumeToken())
}

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
	_, err = c.InsertMany(context.Background(), []any{ttldb.Document{"_id": 1, "at": clk.Now()}, ttldb.Document{"_id": 2, "at": clk.Now()}})
	require.NoError(t, err)
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"x": 1}})
	require.NoError(t, err)
	_, err = c.BulkWrite(ctx, []ttldb.WriteModel{ttldb.InsertOneModel{Document: ttldb.Document{"_id": 3}}, ttldb.DeleteOneModel{Filter: ttldb.Document{"_id": 3}}})
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Deleted)
	require.NoError(t, db.DropCollection(context.Background(), "s"))

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
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 1, "at": clk.Now()})
	require.NoError(t, err)
	before := db.LastSeq()

	notLeader := errors.New("not the leader")
	r.set(notLeader, nil)
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 2})
	assert.ErrorIs(t, err, notLeader)
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"x": 1}})
	assert.ErrorIs(t, err, notLeader)
	_, err = c.DeleteMany(ctx, ttldb.Document{})
	assert.ErrorIs(t, err, notLeader)
	_, err = c.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("y")}})
	assert.ErrorIs(t, err, notLeader)
	assert.ErrorIs(t, c.DropIndex(context.Background(), "at_1"), notLeader)
	_, err = db.CreateCollection(context.Background(), "t", ttldb.CollectionOptions{})
	assert.ErrorIs(t, err, notLeader)
	assert.ErrorIs(t, db.DropCollection(context.Background(), "s"), notLeader)
	clk.Advance(2 * time.Minute)
	res, err := db.RunTTLPass(ctx)
	assert.ErrorIs(t, err, ttldb.ErrNotPrimary, "a refused TTL batch ends the pass as a step-down")
	assert.Zero(t, res.Deleted)

	assert.Equal(t, before, db.LastSeq(), "a refused write committed an op")
	n, err := c.CountDocuments(ctx, ttldb.Document{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
	specs, err := c.Indexes(context.Background())
	require.NoError(t, err)
	assert.Len(t, specs, 2)
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"s"}, names)

	// End's error is the write's.
	lost := errors.New("leadership lost")
	r.set(nil, lost)
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 3})
	assert.ErrorIs(t, err, lost)
	r.set(nil, nil)

	// Ops applied with Apply do not go through the replicator.
	r.mu.Lock()
	begins := r.begins
	r.mu.Unlock()
	require.NoError(t, db.Apply(context.Background(), ttldb.Op{Seq: db.LastSeq() + 1, Kind: ttldb.OpDropIndex, Collection: "s", Index: "at_1"}))
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
		_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": i, "at": clk.Now()})
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	require.NoError(t, db.Backup(context.Background(), &buf))

	db2, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithRestore(bytes.NewReader(buf.Bytes())))
	require.NoError(t, err)
	defer db2.Close()
	assert.Equal(t, db.LastSeq(), db2.LastSeq())
	n, err := db2.Collection("s").CountDocuments(ctx, ttldb.Document{})
	require.NoError(t, err)
	assert.EqualValues(t, 100, n)
	specs, err := db2.Collection("s").Indexes(context.Background())
	require.NoError(t, err)
	assert.Len(t, specs, 2)
	// The next op applies.
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 1000})
	require.NoError(t, err)
	r.mu.Lock()
	last := r.ops[len(r.ops)-1]
	r.mu.Unlock()
	require.NoError(t, db2.Apply(context.Background(), last))

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
		_, err := db.Collection("c").InsertOne(context.Background(), ttldb.Document{"_id": i})
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
	cs, err := db.Watch(ctx, nil)
	require.NoError(t, err)
	defer cs.Close(context.Background())
	_, err = db.Collection("c").InsertOne(context.Background(), ttldb.Document{"_id": 9})
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
		_, err := src.Collection("c").InsertOne(context.Background(), ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	require.NoError(t, src.Backup(context.Background(), &buf))
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
		cs, err := db.Watch(ctx, nil)
		require.NoError(t, err)
		defer cs.Close(context.Background())
		resumed, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{ResumeAfter: &ttldb.ResumeToken{Seq: last + 1}})
		require.NoError(t, err, "the restored ops are committed")
		defer resumed.Close(context.Background())
		_, err = db.Collection("c").InsertOne(context.Background(), ttldb.Document{"_id": 9})
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
