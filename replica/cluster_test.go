package replica

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// testNode is a cluster member whose stores outlive it, so that it can
// restart.
type testNode struct {
	id     string
	addr   raft.ServerAddress
	trans  *raft.InmemTransport
	store  *raft.InmemStore
	snaps  *raft.InmemSnapshotStore
	node   *Node // nil while down
	dbOpts []ttldb.Option
	dir    string   // raft.db (bbolt) and file snapshots here, when set
	tcp    *tcpNode // on loopback TLS instead of trans, when set
	// wrap, when set, gives the node its transport around trans (at each
	// start: a restart makes a new trans).
	wrap func(trans *raft.InmemTransport) raft.Transport
}

type cluster struct {
	rc    func(id string) *raft.Config // raft's configuration (testRaftConfig)
	tcp   *testCA                      // the cluster's CA, on loopback TLS
	t     testing.TB
	clk   *ttltest.Clock
	nodes []*testNode
}

var epoch0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newCluster starts n nodes on raft's in-memory transport, bootstraps
// them from the first and waits for a ready leader. Every DB runs on one
// fake clock with its monitor off: tests run passes with RunTTLPass.
func newCluster(t testing.TB, n int, optsFor func(id string) []ttldb.Option) *cluster {
	return newClusterIn(t, n, optsFor, false)
}

// newClusterIn is newCluster, with each node's raft state on disk
// (Config.Dir: raft.db and file snapshots in a temporary directory)
// when onDisk is set.
func newClusterIn(t testing.TB, n int, optsFor func(id string) []ttldb.Option, onDisk bool) *cluster {
	return newClusterWith(t, n, optsFor, onDisk, testRaftConfig)
}

// newClusterWith is newClusterIn with raft's configuration from rc.
func newClusterWith(t testing.TB, n int, optsFor func(id string) []ttldb.Option, onDisk bool, rc func(id string) *raft.Config) *cluster {
	return newClusterWrapped(t, n, optsFor, onDisk, rc, nil)
}

// newClusterWrapped is newClusterWith, each node's transport given by
// wrap (nil: the in-memory transport itself).
func newClusterWrapped(t testing.TB, n int, optsFor func(id string) []ttldb.Option, onDisk bool, rc func(id string) *raft.Config, wrap func(trans *raft.InmemTransport) raft.Transport) *cluster {
	return newClusterOnWrapped(t, n, optsFor, onDisk, rc, false, wrap)
}

// newClusterOn is newClusterWith, on raft's TCP transport over loopback
// TLS 1.3 with mutual authentication (NewTLSTransport, a CA made for the
// cluster) when tcp is set.
func newClusterOn(t testing.TB, n int, optsFor func(id string) []ttldb.Option, onDisk bool, rc func(id string) *raft.Config, tcp bool) *cluster {
	return newClusterOnWrapped(t, n, optsFor, onDisk, rc, tcp, nil)
}

// newClusterOnWrapped is newClusterOn with newClusterWrapped's wrap (on
// the in-memory transport only).
func newClusterOnWrapped(t testing.TB, n int, optsFor func(id string) []ttldb.Option, onDisk bool, rc func(id string) *raft.Config, tcp bool, wrap func(trans *raft.InmemTransport) raft.Transport) *cluster {
	require.False(t, tcp && wrap != nil, "wrap wraps the in-memory transport")
	c := &cluster{t: t, clk: ttltest.NewClock(epoch0), rc: rc}
	if tcp {
		c.tcp = newTestCA(t, "cluster")
	}
	var servers []Server
	for i := range n {
		tn := &testNode{id: fmt.Sprintf("n%d", i), store: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
		if onDisk {
			tn.dir = filepath.Join(t.TempDir(), "raft") // Open creates it
		}
		if tcp {
			c.listen(tn)
		} else {
			tn.addr, tn.trans = raft.NewInmemTransport("")
		}
		tn.wrap = wrap
		tn.dbOpts = []ttldb.Option{ttldb.WithClock(c.clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true})}
		if optsFor != nil {
			tn.dbOpts = append(tn.dbOpts, optsFor(tn.id)...)
		}
		c.nodes = append(c.nodes, tn)
		servers = append(servers, Server{ID: tn.id, Address: string(tn.addr)})
	}
	c.connectAll()
	for _, tn := range c.nodes {
		c.start(tn)
	}
	require.NoError(t, c.nodes[0].node.Bootstrap(servers...))
	c.leader()
	t.Cleanup(func() {
		for _, tn := range c.nodes {
			if tn.node != nil {
				tn.node.Close()
			}
			if tn.tcp != nil {
				tn.tcp.close()
			}
		}
	})
	return c
}

func (c *cluster) connectAll() {
	if c.tcp != nil {
		return // peers dial each other
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

func testRaftConfig(id string) *raft.Config {
	rc := fastRaftConfig(id)
	// Slower than the transport tests': the race detector on a small
	// machine can hold a goroutine past 50 ms, and a deposed leader
	// mid-setup fails the setup's writes.
	rc.HeartbeatTimeout = 250 * time.Millisecond
	rc.ElectionTimeout = 250 * time.Millisecond
	rc.LeaderLeaseTimeout = 200 * time.Millisecond
	rc.TrailingLogs = 16
	rc.SnapshotThreshold = 1 << 30 // snapshots only on request
	rc.SnapshotInterval = time.Hour
	return rc
}

func (c *cluster) start(tn *testNode) {
	var trans raft.Transport = tn.trans
	if tn.wrap != nil {
		trans = tn.wrap(tn.trans)
	}
	cfg := Config{
		ID: tn.id, Transport: trans,
		Raft: c.rc(tn.id), DBOptions: tn.dbOpts,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if tn.tcp != nil {
		cfg.Transport = tn.tcp.trans
	}
	if tn.dir != "" {
		cfg.Dir = tn.dir
	} else {
		cfg.LogStore, cfg.StableStore, cfg.SnapshotStore = tn.store, tn.store, tn.snaps
	}
	n, err := Open(cfg)
	require.NoError(c.t, err)
	tn.node = n
}

// kill stops a node (as a crash would, its stores kept) and cuts it off.
func (c *cluster) kill(tn *testNode) {
	require.NoError(c.t, tn.node.Close())
	tn.node = nil
	if tn.tcp != nil {
		tn.tcp.close()
		return
	}
	for _, o := range c.nodes {
		if o != tn {
			o.trans.Disconnect(tn.addr)
		}
	}
	tn.trans.DisconnectAll()
}

// restart brings a killed node back with its stores.
func (c *cluster) restart(tn *testNode) {
	if tn.tcp != nil {
		c.listen(tn) // on its address again
		c.start(tn)
		return
	}
	tn.addr, tn.trans = raft.NewInmemTransport(tn.addr)
	c.connectAll()
	c.start(tn)
}

// partition cuts tn off from the others, both ways.
func (c *cluster) partition(tn *testNode) {
	require.Nil(c.t, c.tcp, "partition: in-memory transport only")
	for _, o := range c.nodes {
		if o != tn {
			o.trans.Disconnect(tn.addr)
		}
	}
	tn.trans.DisconnectAll()
}

func (c *cluster) up() []*testNode {
	var out []*testNode
	for _, tn := range c.nodes {
		if tn.node != nil {
			out = append(out, tn)
		}
	}
	return out
}

// leader waits for a ready leader among the nodes up.
func (c *cluster) leader() *testNode {
	c.t.Helper()
	return c.leaderBut(nil)
}

// leaderBut waits for a ready leader other than old (which, cut off, may
// still think itself ready for a moment); nil: any.
func (c *cluster) leaderBut(old *testNode) *testNode {
	c.t.Helper()
	var l *testNode
	require.Eventually(c.t, func() bool {
		for _, tn := range c.up() {
			tn.node.mu.Lock()
			ready := tn.node.ready
			tn.node.mu.Unlock()
			if ready && tn != old {
				l = tn
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "no leader (other than the old one)")
	return l
}

// converged waits until every node up has applied the leader's last op,
// and returns the common digest.
func (c *cluster) converged() string {
	c.t.Helper()
	l := c.leader()
	want := l.node.DB().LastSeq()
	require.Eventually(c.t, func() bool {
		for _, tn := range c.up() {
			if tn.node.DB().LastSeq() != want {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "followers did not catch up")
	d := digest(c.t, l.node.DB())
	for _, tn := range c.up() {
		assert.Equal(c.t, d, digest(c.t, tn.node.DB()), "replica %s differs from the leader %s", tn.id, l.id)
	}
	return d
}

// digest hashes every collection's indexes and documents, and its
// definition and time-series buckets as a Backup holds them
// (bucketsDigest).
func digest(t testing.TB, db *ttldb.DB) string {
	t.Helper()
	h := sha256.New()
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	ctx := context.Background()
	for _, name := range names {
		c := db.Collection(name)
		specs, err := c.Indexes(context.Background())
		require.NoError(t, err)
		cur, err := c.Find(ctx, ttldb.Document{}, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("_id")}})
		require.NoError(t, err)
		var docs []ttldb.Document
		require.NoError(t, cur.All(ctx, &docs))
		b, err := json.Marshal(map[string]any{"name": name, "indexes": specs, "docs": docs})
		require.NoError(t, err)
		h.Write(b)
	}
	h.Write([]byte(bucketsDigest(t, db)))
	return hex.EncodeToString(h.Sum(nil))
}

// passInBackground runs one TTL pass of db on another goroutine; its
// error arrives on the channel.
func passInBackground(db *ttldb.DB) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := db.RunTTLPass(context.Background())
		done <- err
	}()
	return done
}

func count(t testing.TB, db *ttldb.DB, coll string, filter ttldb.Document) int {
	t.Helper()
	n, err := db.Collection(coll).CountDocuments(context.Background(), filter)
	require.NoError(t, err)
	return int(n)
}

func ttlIndex(t testing.TB, db *ttldb.DB, coll string) {
	t.Helper()
	_, err := db.Collection(coll).CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
}

// TestClusterReplicatesWrites: writes on the leader reach every replica;
// a write on a follower is refused with the leader's address.
func TestClusterReplicatesWrites(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	db := l.node.DB()
	ttlIndex(t, db, "sessions")
	var docs []any
	for i := range 100 {
		docs = append(docs, ttldb.Document{"_id": i, "at": c.clk.Now(), "user": fmt.Sprint("u", i%7)})
	}
	_, err := db.Collection("sessions").InsertMany(context.Background(), docs)
	require.NoError(t, err)
	_, err = db.Collection("sessions").UpdateOne(context.Background(), ttldb.Document{"_id": 3}, ttldb.Document{"$currentDate": ttldb.Document{"at": true}, "$inc": ttldb.Document{"n": 1}})
	require.NoError(t, err)
	_, err = db.Collection("sessions").DeleteOne(context.Background(), ttldb.Document{"_id": 4})
	require.NoError(t, err)
	c.converged()
	for _, tn := range c.nodes {
		assert.Equal(t, 99, count(t, tn.node.DB(), "sessions", ttldb.Document{}), tn.id)
	}

	for _, tn := range c.nodes {
		if tn == l {
			continue
		}
		_, err := tn.node.DB().Collection("sessions").InsertOne(context.Background(), ttldb.Document{"_id": "x"})
		var nl *NotLeaderError
		require.ErrorAs(t, err, &nl)
		assert.ErrorIs(t, err, ttldb.ErrNotPrimary)
		assert.Equal(t, string(l.addr), nl.LeaderAddress)
		assert.Equal(t, l.id, nl.LeaderID)
		err = tn.node.ReadLinearizable(func(*ttldb.DB) error { return nil })
		assert.ErrorIs(t, err, ttldb.ErrNotPrimary)
		_, err = tn.node.DB().RunTTLPass(context.Background())
		assert.ErrorIs(t, err, ttldb.ErrNotPrimary, "a follower runs no TTL pass")
	}
	var n int
	require.NoError(t, l.node.ReadLinearizable(func(db *ttldb.DB) error {
		n = count(t, db, "sessions", ttldb.Document{})
		return nil
	}))
	assert.Equal(t, 99, n)

	st := l.node.Status()
	assert.Equal(t, "Leader", st.State)
	assert.Len(t, st.Members, 3)
	assert.Equal(t, db.LastSeq(), st.LastSeq)
	assert.GreaterOrEqual(t, st.CommitIndex, st.AppliedIndex)
	m := l.node.Metrics()
	assert.Equal(t, st.Term, m.Replication.Term)
}

// TestClusterLeaderKilledMidPass: the leader dies in the middle of a TTL
// pass over many expired documents; a new leader finishes the expiry, the
// replicas end identical, and no document is deleted before its threshold
// on any of them.
func TestClusterLeaderKilledMidPass(t *testing.T) {
	expired, live := bySoak(5000, 100_000, 100_000), 500
	kill, killed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var killing atomic.Pointer[string] // the id of the node to kill at its third batch
	c := newCluster(t, 3, func(id string) []ttldb.Option {
		batches := 0
		return []ttldb.Option{
			ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true, BatchSize: 100, ProposalBatchSize: 100}),
			ttldb.WithDeleteObserver(func(ttldb.DeleteEvent) {
				if p := killing.Load(); p == nil || *p != id {
					return
				}
				if batches++; batches == 3 {
					once.Do(func() { close(kill) })
					<-killed
				}
			}),
		}
	})
	l := c.leader()
	db := l.node.DB()
	ttlIndex(t, db, "s")
	for start := 0; start < expired+live; start += 1000 {
		var docs []any
		for i := start; i < min(start+1000, expired+live); i++ {
			at := c.clk.Now()
			if i >= expired {
				at = at.Add(time.Hour) // threshold an hour after the others'
			}
			docs = append(docs, ttldb.Document{"_id": i, "at": at})
		}
		c.insertOnLeader("s", docs...)
	}
	c.converged()
	c.clk.Advance(2 * time.Minute) // the first ones expired, the others not

	// The leader runs a pass; at its third batch it is killed. (Should
	// leadership move before that, the new leader runs it.)
	var old *testNode
	for attempt := 0; old == nil; attempt++ {
		require.Less(t, attempt, 20, "no leader kept its leadership for three batches")
		l := c.leader()
		killing.Store(&l.id)
		passErr := passInBackground(l.node.DB())
		select {
		case <-kill:
			old = l
			c.kill(old)
			close(killed)
			assert.Error(t, <-passErr, "the killed leader's pass must stop")
		case err := <-passErr:
			require.Error(t, err, "a pass over %d expired documents ended within three batches", expired)
		}
	}

	nl := c.leader()
	require.NotSame(t, old, nl)
	mid := count(t, nl.node.DB(), "s", ttldb.Document{})
	assert.Less(t, mid, expired+live, "the old leader's first batches are committed")
	assert.Greater(t, mid, live, "the old leader did not finish")
	c.passOnLeader()
	c.converged()
	for _, tn := range c.up() {
		assert.Equal(t, live, count(t, tn.node.DB(), "s", ttldb.Document{}), tn.id)
		assert.Equal(t, live, count(t, tn.node.DB(), "s", ttldb.Document{"_id": ttldb.Document{"$gte": expired}}), "a document was deleted before its threshold on %s", tn.id)
	}

	// The old leader restarts from its stores and catches up.
	c.restart(old)
	c.converged()
	assert.Equal(t, live, count(t, old.node.DB(), "s", ttldb.Document{}))
}

// passOnLeader runs a complete TTL pass on the leader, again on the new
// leader should leadership move during it (as a client retries).
func (c *cluster) passOnLeader() {
	c.t.Helper()
	var err error
	for range 50 {
		var res ttldb.PassResult
		res, err = c.leader().node.DB().RunTTLPass(context.Background())
		if err == nil && res.Complete {
			return
		}
		if err != nil && !errors.Is(err, ttldb.ErrNotPrimary) && !errors.Is(err, ErrNotCommitted) && !errors.Is(err, ttldb.ErrClosed) {
			break
		}
	}
	require.NoError(c.t, err, "no complete TTL pass on the leader")
}
