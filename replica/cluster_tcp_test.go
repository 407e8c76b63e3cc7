package replica

import (
	"crypto/tls"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// tcpNode is a test node's transport on loopback: raft's TCP transport
// over NewTLSTransport's stream layer (TLS 1.3, mutual authentication),
// with the certificate the node keeps across restarts.
type tcpNode struct {
	tls       *tls.Config
	trans     *raft.NetworkTransport
	closeOnce *sync.Once
}

// listen opens tn's transport: on a free port of 127.0.0.1 the first
// time, then on the same address (its peers' configuration names it).
func (c *cluster) listen(tn *testNode) {
	bind := "127.0.0.1:0"
	if tn.tcp == nil {
		tn.tcp = &tcpNode{tls: MutualTLSConfig(c.tcp.pool, c.tcp.issue(c.t, tn.id), "")}
	} else {
		bind = string(tn.addr)
	}
	trans, layer, err := NewTLSTransport(bind, nil, tn.tcp.tls, TransportOptions{Logger: hclog.NewNullLogger()})
	require.NoError(c.t, err)
	tn.addr = raft.ServerAddress(layer.Addr().String())
	tn.tcp.trans, tn.tcp.closeOnce = trans, new(sync.Once)
}

// close shuts the transport down (after its node): the connections it
// dialled first, so that the peers' handlers of them end, then the
// listener.
func (t *tcpNode) close() {
	t.closeOnce.Do(func() {
		t.trans.CloseStreams()
		_ = t.trans.Close()
	})
}

// TestClusterTLSLoopback: the test cluster on loopback TLS (what the
// -tls benchmarks run on): writes replicate, the leader is killed and
// another expires the documents through the log, and the killed node
// restarts on its address and catches up.
func TestClusterTLSLoopback(t *testing.T) {
	c := newClusterOn(t, 3, nil, false, testRaftConfig, true)
	ttlIndex(t, c.leader().node.DB(), "s")
	var docs []any
	for i := range 100 {
		docs = append(docs, ttldb.Document{"_id": i, "at": c.clk.Now()})
	}
	c.insertOnLeader("s", docs...)
	c.converged()
	old := c.leader()
	addr := old.addr
	c.kill(old)
	c.clk.Advance(2 * time.Minute)
	c.passOnLeader()
	require.NotSame(t, old, c.leader())
	c.converged()
	c.restart(old)
	assert.Equal(t, addr, old.addr, "restarted on its address")
	c.converged()
	for _, tn := range c.nodes {
		assert.Zero(t, count(t, tn.node.DB(), "s", ttldb.Document{}), tn.id)
		assert.Equal(t, "127.0.0.1", strings.Split(string(tn.addr), ":")[0])
	}
}
