package replica

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// heldFuture is the future a testSubmit hook returns for an entry it has
// not given to raft yet: Error waits until release.
type heldFuture struct {
	done chan struct{}
	err  error // set before done is closed
}

func (h *heldFuture) Error() error    { <-h.done; return h.err }
func (h *heldFuture) Response() any   { return nil }
func (h *heldFuture) Index() uint64   { return 0 }
func (h *heldFuture) release(e error) { h.err = e; close(h.done) }

// opCapture is a Replicator that keeps the ops of a scratch DB's writes.
type opCapture struct{ ops []ttldb.Op }

func (r *opCapture) Begin() error          { return nil }
func (r *opCapture) Commit(ops []ttldb.Op) { r.ops = append(r.ops, ops...) }
func (r *opCapture) End(err error) error   { return err }

// foreignInsert returns the entry another leader would have made of an
// insert into collection coll, numbered seq: an entry of another epoch.
func foreignInsert(t *testing.T, c *cluster, coll string, seq uint64) []byte {
	t.Helper()
	capture := &opCapture{}
	scratch, err := ttldb.Open(ttldb.WithClock(c.clk), ttldb.WithReplicator(capture), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer scratch.Close()
	_, err = scratch.Collection(coll).InsertOne(context.Background(), ttldb.Document{"_id": "foreign"})
	require.NoError(t, err)
	for _, op := range capture.ops {
		if op.Kind == ttldb.OpInsert {
			op.Seq = seq
			data, err := encodeEntry(0x5eed, []ttldb.Op{op})
			require.NoError(t, err)
			return data
		}
	}
	t.Fatal("the scratch insert committed no OpInsert")
	return nil
}

// TestClusterProposalAbandoned drives the paths where a proposed TTL batch
// is given up by the state machine rather than by raft, while its proposer
// waits holding the DB's locks:
//
//   - "foreign entry": the state machine meets an entry that is not the
//     node's own before the batch's (a node that lost and regained its
//     leadership before it knew: another leader's entry took the batch's
//     sequence number); its branch for such entries abandons the proposal
//     before it applies the entry;
//   - "rebuild": the DB is rebuilt from the log (fsm.rebuild);
//   - "restore": a snapshot is installed (fsm.Restore).
//
// The batch's entry reaches raft only after that (a testSubmit hook holds
// it). In every case the proposer returns an error matching
// ttldb.ErrNotPrimary and deletes nothing; the entry, once committed, is
// applied by the state machine of every node exactly once (rebuild,
// restore: the documents go, once, on every node) or by none (foreign
// entry: its sequence number was taken, and every node refuses it alike);
// and every replica ends with the same digest.
func TestClusterProposalAbandoned(t *testing.T) {
	for _, mode := range []string{"foreign entry", "rebuild", "restore"} {
		t.Run(mode, func(t *testing.T) {
			const nExpired = 10
			var mu sync.Mutex
			deleted := map[string]int{} // node → documents of "s" it deleted, its monitor's or applied
			c := newCluster(t, 3, func(id string) []ttldb.Option {
				return []ttldb.Option{ttldb.WithDeleteObserver(func(ev ttldb.DeleteEvent) {
					if ev.Collection == "s" {
						mu.Lock()
						deleted[id] += len(ev.IDs)
						mu.Unlock()
					}
				})}
			})
			deletedBy := func(id string) int {
				mu.Lock()
				defer mu.Unlock()
				return deleted[id]
			}
			l := c.leader()
			db := l.node.DB()
			ttlIndex(t, db, "s")
			var docs []any
			for i := range nExpired {
				docs = append(docs, ttldb.Document{"_id": i, "at": c.clk.Now()})
			}
			_, err := db.Collection("s").InsertMany(context.Background(), docs)
			require.NoError(t, err)
			_, err = db.Collection("other").InsertOne(context.Background(), ttldb.Document{"_id": "local"})
			require.NoError(t, err)
			c.converged()
			c.clk.Advance(2 * time.Minute)
			var snap []byte
			if mode == "restore" {
				s, err := l.node.fsm.Snapshot()
				require.NoError(t, err)
				snap = s.(snapshotData)
			}
			seq := db.LastSeq()

			submitted := make(chan []byte, 1)
			held := &heldFuture{done: make(chan struct{})}
			proposed := make(chan error, 1)
			l.node.testSubmit = func(data []byte) raft.ApplyFuture { submitted <- data; return held }
			l.node.testProposed = func(err error) { proposed <- err }
			passDone := make(chan error, 1)
			go func() {
				_, err := db.RunTTLPass(context.Background())
				passDone <- err
			}()
			var data []byte
			select {
			case data = <-submitted:
			case <-time.After(10 * time.Second):
				t.Fatal("no TTL batch proposed")
			}
			h, ops, err := decodeEntry(data)
			require.NoError(t, err)
			require.NotZero(t, h.proposal)
			require.Equal(t, seq+1, ops[0].Seq, "the next sequence number, reserved")
			assert.Len(t, ops[0].Keys, nExpired)
			assert.Equal(t, nExpired, count(t, db, "s", ttldb.Document{}), "nothing deleted while proposed")

			// The state machine's move, on another goroutine: without the
			// abandonment it would wait for the proposer's locks forever.
			moved := make(chan error, 1)
			go func() {
				switch mode {
				case "foreign entry":
					// Committed at once (every node has it); the leader's
					// state machine applies it once the proposer has let go.
					moved <- l.node.raft.Apply(foreignInsert(t, c, "other", seq+1), 0).Error()
				case "rebuild":
					l.node.fsm.diverged.Store(true)
					l.node.fsm.rebuildIfDiverged()
					moved <- nil
				case "restore":
					moved <- l.node.fsm.Restore(io.NopCloser(bytes.NewReader(snap)))
				}
			}()
			select {
			case err = <-proposed:
			case <-time.After(10 * time.Second):
				t.Fatal("the proposer still waits")
			}
			require.NoError(t, <-moved)
			require.ErrorIs(t, err, ttldb.ErrNotPrimary)
			require.Error(t, <-passDone)
			assert.Zero(t, deletedBy(l.id), "the proposer deleted nothing")
			assert.Equal(t, nExpired, count(t, l.node.DB(), "s", ttldb.Document{}))

			// The entry reaches the log now, in the same term: it commits.
			held.release(l.node.raft.Apply(data, 0).Error())
			require.NoError(t, held.Error())
			c.converged()
			for _, tn := range c.up() {
				got := tn.node.DB()
				if mode == "foreign entry" {
					assert.Equal(t, seq+1, got.LastSeq(), "node %s: the foreign entry only", tn.id)
					assert.Equal(t, nExpired, count(t, got, "s", ttldb.Document{}), "node %s", tn.id)
					assert.Zero(t, deletedBy(tn.id), "node %s applied the out-of-sequence batch", tn.id)
					assert.Equal(t, 2, count(t, got, "other", ttldb.Document{}), "node %s", tn.id)
				} else {
					assert.Equal(t, seq+1, got.LastSeq(), "node %s: the batch's entry", tn.id)
					assert.Zero(t, count(t, got, "s", ttldb.Document{}), "node %s", tn.id)
					assert.Equal(t, nExpired, deletedBy(tn.id), "node %s deleted the batch exactly once", tn.id)
				}
			}
			// The node proposes and writes normally afterwards.
			l.node.testSubmit, l.node.testProposed = nil, nil
			retry(t, func() error {
				_, err := c.leader().node.DB().Collection("other").InsertOne(context.Background(), ttldb.Document{"_id": fmt.Sprint("after-", mode)})
				return err
			})
			c.converged()
		})
	}
}
