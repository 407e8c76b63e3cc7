package replica

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// badLayer builds a stream layer on loopback with cfg as it is, skipping
// the checks NewTLSStreamLayer makes: a node configured wrongly, or an
// attacker's.
func badLayer(t *testing.T, cfg *tls.Config) *TLSStreamLayer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return &TLSStreamLayer{ln: ln, cfg: cfg, timeout: DefaultHandshakeTimeout}
}

func goodLayer(t *testing.T, ca *testCA, name string) *TLSStreamLayer {
	l, err := NewTLSStreamLayer("127.0.0.1:0", nil, MutualTLSConfig(ca.pool, ca.issue(t, name), ""))
	require.NoError(t, err)
	return l
}

func netTransport(l *TLSStreamLayer) *raft.NetworkTransport {
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: l, MaxPool: 2, Timeout: 2 * time.Second, Logger: hclog.NewNullLogger(),
	})
}

func TestTLSConfigRefused(t *testing.T) {
	ca := newTestCA(t, "ca")
	cert := ca.issue(t, "n1")
	good := MutualTLSConfig(ca.pool, cert, "")
	for name, cfg := range map[string]*tls.Config{
		"nil":            nil,
		"no certificate": MutualTLSConfig(ca.pool, tls.Certificate{}, ""),
		"no ClientCAs":   func() *tls.Config { c := good.Clone(); c.ClientCAs = nil; return c }(),
		"no RootCAs":     func() *tls.Config { c := good.Clone(); c.RootCAs = nil; return c }(),
		"skip verify":    func() *tls.Config { c := good.Clone(); c.InsecureSkipVerify = true; return c }(),
	} {
		if name == "no certificate" {
			cfg.Certificates = nil
		}
		_, err := NewTLSStreamLayer("127.0.0.1:0", nil, cfg)
		assert.ErrorIs(t, err, ErrTLSConfig, name)
		assert.ErrorIs(t, err, ttldb.ErrInvalidOptions, name)
	}
	_, err := NewTLSStreamLayer("0.0.0.0:0", nil, good)
	assert.ErrorIs(t, err, ttldb.ErrInvalidOptions, "unspecified bind without advertise")
}

func TestLoadMutualTLSConfig(t *testing.T) {
	ca := newTestCA(t, "ca")
	caFile, certFile, keyFile := writePEM(t, t.TempDir(), ca, ca.issue(t, "n1"))
	cfg, err := LoadMutualTLSConfig(caFile, certFile, keyFile, "")
	require.NoError(t, err)
	assert.Equal(t, uint16(tls.VersionTLS13), cfg.MinVersion)
	assert.Equal(t, tls.RequireAndVerifyClientCert, cfg.ClientAuth)
	_, err = LoadMutualTLSConfig(caFile+".missing", certFile, keyFile, "")
	assert.ErrorIs(t, err, ErrTLSConfig)
	_, err = LoadMutualTLSConfig(keyFile, certFile, keyFile, "")
	assert.ErrorIs(t, err, ErrTLSConfig, "a key is no CA")
	_, err = LoadMutualTLSConfig(caFile, certFile, caFile, "")
	assert.ErrorIs(t, err, ErrTLSConfig, "a certificate is no key")
}

// TestTLSLayerForcesMutualAuth: a configuration that asks for less (no
// client certificate, TLS 1.2) still gets mutual authentication over TLS
// 1.3 from the layer.
func TestTLSLayerForcesMutualAuth(t *testing.T) {
	ca := newTestCA(t, "ca")
	cfg := MutualTLSConfig(ca.pool, ca.issue(t, "srv"), "")
	cfg.ClientAuth = tls.NoClientCert
	cfg.MinVersion = tls.VersionTLS12
	srv, err := NewTLSStreamLayer("127.0.0.1:0", nil, cfg)
	require.NoError(t, err)
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	addr := srv.Addr().String()

	// TLS 1.2 only, with a valid certificate: refused.
	c12 := MutualTLSConfig(ca.pool, ca.issue(t, "c"), "")
	c12.MinVersion, c12.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	_, err = tls.Dial("tcp", addr, c12)
	assert.Error(t, err, "TLS 1.2 client")

	// No certificate: the server refuses it (TLS 1.3 reports that on the
	// client's first read).
	noCert := &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS13}
	conn, err := tls.Dial("tcp", addr, noCert)
	if err == nil {
		// Bounded, should the server wrongly accept it and wait.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	assert.Error(t, err, "client without certificate")
	assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the server did not refuse the client without certificate")
	require.Eventually(t, func() bool { return srv.HandshakeFailures() >= 2 }, 5*time.Second, time.Millisecond)
}

// TestTLSTransportAppendEntries: two nodes with certificates of the
// cluster's CA exchange a raft AppendEntries.
func TestTLSTransportAppendEntries(t *testing.T) {
	ca := newTestCA(t, "ca")
	la, lb := goodLayer(t, ca, "a"), goodLayer(t, ca, "b")
	ta, tb := netTransport(la), netTransport(lb)
	// The connections each dialled first, so that the other's handler of
	// them ends (Close closes the listener only; goleak would see it).
	defer closeTransports(ta, tb)
	go func() {
		rpc := <-tb.Consumer()
		req := rpc.Command.(*raft.AppendEntriesRequest)
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: 7, Success: true}, nil)
	}()
	var resp raft.AppendEntriesResponse
	err := ta.AppendEntries("b", tb.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte(ta.LocalAddr())}, Term: 3}, &resp)
	require.NoError(t, err)
	assert.True(t, resp.Success)
	assert.Equal(t, uint64(7), resp.LastLog)
	assert.Zero(t, la.HandshakeFailures()+lb.HandshakeFailures())
}

// badConfigs are the certificates a node must not be let in with.
func badConfigs(t *testing.T, ca *testCA) map[string]*tls.Config {
	other := newTestCA(t, "other")
	return map[string]*tls.Config{
		"no certificate": {RootCAs: ca.pool, ClientCAs: ca.pool, MinVersion: tls.VersionTLS13},
		"self-signed":    MutualTLSConfig(ca.pool, selfSigned(t, "intruder"), ""),
		"wrong CA":       MutualTLSConfig(ca.pool, other.issue(t, "intruder"), ""),
	}
}

// TestTLSBadPeerCannotAppend: a node without a valid certificate (none,
// self-signed, signed by another CA) cannot deliver an AppendEntries to a
// member: the member refuses the handshake and its raft sees no request.
// Nor can a member be made to talk to it: dialling it fails the handshake.
func TestTLSBadPeerCannotAppend(t *testing.T) {
	ca := newTestCA(t, "ca")
	member := goodLayer(t, ca, "member")
	mt := netTransport(member)
	defer mt.Close()
	var got atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case rpc := <-mt.Consumer():
				got.Add(1)
				rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
			case <-stop:
				return
			}
		}
	}()
	want := uint64(0)
	for name, cfg := range badConfigs(t, ca) {
		bl := badLayer(t, cfg)
		bt := netTransport(bl)
		var resp raft.AppendEntriesResponse
		err := bt.AppendEntries("member", mt.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte(bt.LocalAddr())}, Term: 99}, &resp)
		assert.Error(t, err, name)
		assert.False(t, resp.Success, name)
		// The member counts this refusal on its handshake goroutine, after
		// the bad node's call has failed: wait for it (the count holds the
		// refusals in so far and the refusals out before this round).
		want++
		require.Eventually(t, func() bool { return member.HandshakeFailures() >= 2*want-1 }, 5*time.Second, time.Millisecond, name)

		// The member dialling the bad node: the bad node's certificate
		// fails verification (with no certificate, it cannot even serve).
		err = mt.AppendEntries("bad", bt.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte(mt.LocalAddr())}, Term: 1}, &resp)
		assert.Error(t, err, name)
		bt.Close()
	}
	assert.Zero(t, got.Load(), "the member's raft received a request from a node without a valid certificate")
	assert.GreaterOrEqual(t, member.HandshakeFailures(), uint64(6), "3 refused in, 3 refused out")
}

// countFSM counts applied entries.
type countFSM struct{ n atomic.Uint64 }

func (f *countFSM) Apply(*raft.Log) any                 { return f.n.Add(1) }
func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots") }
func (f *countFSM) Restore(r io.ReadCloser) error       { return r.Close() }

// fastRaftConfig is a raft configuration for loopback tests: elections in
// a few hundred milliseconds.
func fastRaftConfig(id string) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(id)
	// Short, but not so short that a loaded machine (the race detector,
	// other packages' tests) deposes a leader mid-test: at 50 ms one did,
	// moving the term TestTLSBadNodeCannotJoin checks.
	c.HeartbeatTimeout = 200 * time.Millisecond
	c.ElectionTimeout = 200 * time.Millisecond
	c.LeaderLeaseTimeout = 200 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.Logger = hclog.NewNullLogger()
	return c
}

func startRaft(t *testing.T, id string, trans raft.Transport, fsm raft.FSM) *raft.Raft {
	store := raft.NewInmemStore()
	r, err := raft.NewRaft(fastRaftConfig(id), fsm, store, store, raft.NewInmemSnapshotStore(), trans)
	require.NoError(t, err)
	return r
}

// TestTLSBadNodeCannotJoin runs raft over TLS: two members with the
// cluster's certificates form a cluster and commit; a node without a valid
// certificate, added as a voter by the leader (a join), receives no entry,
// and its own AppendEntries with a higher term (a forged leader) changes
// nothing on a member.
func TestTLSBadNodeCannotJoin(t *testing.T) {
	ca := newTestCA(t, "ca")
	for name, cfg := range badConfigs(t, ca) {
		t.Run(name, func(t *testing.T) {
			la, lb := goodLayer(t, ca, "a"), goodLayer(t, ca, "b")
			ta, tb := netTransport(la), netTransport(lb)
			fa, fb := &countFSM{}, &countFSM{}
			ra, rb := startRaft(t, "a", ta, fa), startRaft(t, "b", tb, fb)
			defer func() {
				require.NoError(t, ra.Shutdown().Error())
				require.NoError(t, rb.Shutdown().Error())
				closeTransports(ta, tb)
			}()
			require.NoError(t, ra.BootstrapCluster(raft.Configuration{Servers: []raft.Server{
				{ID: "a", Address: ta.LocalAddr()}, {ID: "b", Address: tb.LocalAddr()},
			}}).Error())
			leader := waitLeader(t, ra, rb)

			bl := badLayer(t, cfg)
			bt := netTransport(bl)
			fbad := &countFSM{}
			rbad := startRaft(t, "bad", bt, fbad)
			defer func() { require.NoError(t, rbad.Shutdown().Error()); closeTransports(bt) }()

			// The leader adds it: the configuration entry commits on the
			// two members (2 of 3), but nothing reaches the bad node.
			require.NoError(t, leader.AddVoter("bad", bt.LocalAddr(), 0, 0).Error())
			for range 5 {
				require.NoError(t, leader.Apply([]byte("x"), time.Second).Error())
			}
			ll := la
			if leader == rb {
				ll = lb
			}
			require.Eventually(t, func() bool { return ll.HandshakeFailures() >= 2 }, 5*time.Second, time.Millisecond)
			assert.Zero(t, rbad.LastIndex(), "the bad node received log entries")
			assert.Zero(t, fbad.n.Load())

			// Forged AppendEntries from the bad node with a higher term.
			term := leader.Stats()["term"]
			var resp raft.AppendEntriesResponse
			for _, target := range []raft.ServerAddress{ta.LocalAddr(), tb.LocalAddr()} {
				err := bt.AppendEntries("x", target, &raft.AppendEntriesRequest{
					RPCHeader: raft.RPCHeader{Addr: []byte(bt.LocalAddr()), ID: []byte("bad")}, Term: 1 << 40, PrevLogEntry: 0, LeaderCommitIndex: 1 << 40,
					Entries: []*raft.Log{{Index: 1 << 30, Term: 1 << 40, Type: raft.LogCommand, Data: []byte("forged")}},
				}, &resp)
				assert.Error(t, err)
			}
			assert.Equal(t, term, leader.Stats()["term"], "a forged append moved the term")
			assert.Equal(t, raft.Leader, leader.State())
			require.NoError(t, leader.Barrier(time.Second).Error())
			assert.Equal(t, uint64(5), max(fa.n.Load(), fb.n.Load()), "entries applied on the leader")
		})
	}
}

// closeTransports shuts transports down: the connections they dialled
// first, so that their peers' handlers of them end, then the listeners.
func closeTransports(ts ...*raft.NetworkTransport) {
	for _, tr := range ts {
		tr.CloseStreams()
	}
	for _, tr := range ts {
		_ = tr.Close()
	}
}

// waitLeader waits until one of rs is the leader and returns it.
func waitLeader(t *testing.T, rs ...*raft.Raft) *raft.Raft {
	t.Helper()
	var leader *raft.Raft
	require.Eventually(t, func() bool {
		for _, r := range rs {
			if r.State() == raft.Leader {
				leader = r
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond)
	return leader
}
