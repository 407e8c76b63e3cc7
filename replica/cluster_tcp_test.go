package replica

import (
	"crypto/tls"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
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
