package replica

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/ttldb/ttldb"
)

// ErrTLSConfig is returned (wrapping ttldb.ErrInvalidOptions) for a TLS
// configuration that would not authenticate both ends of every raft
// connection: no certificate of the node's own, no CA pool to verify peers
// against, or an unreadable certificate file.
var ErrTLSConfig = fmt.Errorf("%w: replica TLS", ttldb.ErrInvalidOptions)

// DefaultHandshakeTimeout bounds the TLS handshake of a connection a
// TLSStreamLayer accepted: a peer that connects and says nothing holds a
// goroutine for at most this long.
const DefaultHandshakeTimeout = 10 * time.Second

// MutualTLSConfig returns a TLS configuration for a raft node that both
// presents cert and verifies every peer against ca, in either direction: as
// a server it requires and verifies a client certificate signed by ca, as a
// client it verifies the server's certificate against ca (and, when
// serverName is not empty, that it names serverName; else the dialled
// host, see TLSStreamLayer.Dial). TLS 1.3 only. The certificate must allow
// both server and client authentication (extended key usages ServerAuth
// and ClientAuth), as each node is both.
//
// Every holder of a certificate ca signed is a member of the cluster: use
// a CA dedicated to it.
func MutualTLSConfig(ca *x509.CertPool, cert tls.Certificate, serverName string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca,
		RootCAs:      ca,
		ServerName:   serverName,
	}
}

// LoadMutualTLSConfig is MutualTLSConfig with PEM files: the CA
// certificates (one or more) in caFile, the node's certificate chain in
// certFile and its key in keyFile. A missing or malformed file is
// ErrTLSConfig naming it.
func LoadMutualTLSConfig(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: CA file: %w", ErrTLSConfig, err)
	}
	ca := x509.NewCertPool()
	if !ca.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: CA file %s: no PEM certificate", ErrTLSConfig, caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s, key %s: %w", ErrTLSConfig, certFile, keyFile, err)
	}
	return MutualTLSConfig(ca, cert, serverName), nil
}

// checkMutual returns a copy of cfg that authenticates both ends, or
// ErrTLSConfig when it cannot: whatever cfg says, peers' certificates are
// required and verified, and TLS is 1.3.
func checkMutual(cfg *tls.Config) (*tls.Config, error) {
	switch {
	case cfg == nil:
		return nil, fmt.Errorf("%w: nil *tls.Config", ErrTLSConfig)
	case len(cfg.Certificates) == 0 && cfg.GetCertificate == nil:
		return nil, fmt.Errorf("%w: no certificate of the node's own", ErrTLSConfig)
	case cfg.ClientCAs == nil:
		return nil, fmt.Errorf("%w: no ClientCAs: peers dialling in would not be verified", ErrTLSConfig)
	case cfg.RootCAs == nil:
		return nil, fmt.Errorf("%w: no RootCAs: peers dialled would not be verified", ErrTLSConfig)
	case cfg.InsecureSkipVerify:
		return nil, fmt.Errorf("%w: InsecureSkipVerify", ErrTLSConfig)
	}
	c := cfg.Clone()
	c.MinVersion = tls.VersionTLS13
	c.MaxVersion = 0
	c.ClientAuth = tls.RequireAndVerifyClientCert
	return c, nil
}

// TLSStreamLayer is a raft.StreamLayer over crypto/tls with mutual
// authentication: it accepts only peers whose certificate its CA pool
// verifies, and dials only peers it can verify in turn. Build a transport
// on it with NewTLSTransport (or raft.NewNetworkTransport). Its methods are
// safe for concurrent use.
type TLSStreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	cfg       *tls.Config
	timeout   time.Duration

	failed atomic.Uint64
}

// NewTLSStreamLayer listens on bind (host:port; port 0 picks a free one)
// and returns the stream layer. advertise is the address peers dial (nil:
// the listener's, which must then not be unspecified such as 0.0.0.0).
// cfg is checked and copied (see MutualTLSConfig): a configuration that
// would leave either end unauthenticated is ErrTLSConfig.
func NewTLSStreamLayer(bind string, advertise net.Addr, cfg *tls.Config) (*TLSStreamLayer, error) {
	c, err := checkMutual(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		if a, ok := ln.Addr().(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
			ln.Close()
			return nil, fmt.Errorf("%w: %s is not an address peers can dial: give an advertise address", ttldb.ErrInvalidOptions, ln.Addr())
		}
	}
	return &TLSStreamLayer{ln: ln, advertise: advertise, cfg: c, timeout: DefaultHandshakeTimeout}, nil
}

// Accept waits for the next connection. The TLS handshake runs on the
// connection's first read or write, on raft's goroutine for it (a slow
// peer never holds up Accept), within DefaultHandshakeTimeout; a peer
// without a certificate the CA pool verifies fails it, and raft closes the
// connection having read no request.
func (t *TLSStreamLayer) Accept() (net.Conn, error) {
	c, err := t.ln.Accept()
	if err != nil {
		return nil, err
	}
	return &serverConn{Conn: tls.Server(c, t.cfg), layer: t}, nil
}

// Close stops listening. Connections already accepted stay open until raft
// closes them.
func (t *TLSStreamLayer) Close() error { return t.ln.Close() }

// Addr is the address peers dial: the advertise address, else the
// listener's.
func (t *TLSStreamLayer) Addr() net.Addr {
	if t.advertise != nil {
		return t.advertise
	}
	return t.ln.Addr()
}

// Dial connects to a peer and completes the handshake within timeout: the
// peer must present a certificate the CA pool verifies, naming the
// configuration's ServerName or, when that is empty, the host of address.
func (t *TLSStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	cfg := t.cfg
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(string(address))
		if err != nil {
			return nil, err
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(address), cfg)
	if err != nil {
		t.failed.Add(1)
		return nil, err
	}
	return c, nil
}

// HandshakeFailures counts the connections, accepted or dialled, whose TLS
// handshake failed: peers that could not prove their identity, or that
// this node could not verify.
func (t *TLSStreamLayer) HandshakeFailures() uint64 { return t.failed.Load() }

// serverConn is an accepted connection that completes its handshake, with
// a time limit, before its first read or write.
type serverConn struct {
	*tls.Conn
	layer *TLSStreamLayer
	once  sync.Once
	err   error
}

func (c *serverConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.layer.timeout)
		defer cancel()
		if c.err = c.Conn.HandshakeContext(ctx); c.err != nil {
			c.layer.failed.Add(1)
			c.Conn.Close()
		}
	})
	return c.err
}

// Read completes the handshake first.
func (c *serverConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

// Write completes the handshake first.
func (c *serverConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// TransportOptions configure NewTLSTransport. Zero fields take the
// defaults shown.
type TransportOptions struct {
	// MaxPool is how many connections to each peer are kept for reuse.
	// Default 3.
	MaxPool int
	// Timeout bounds each dial and each RPC but snapshot installs (raft
	// scales those with their size). Default 10 s.
	Timeout time.Duration
	// Logger receives the transport's log (a refused peer is logged there
	// as a failed decode). Default: warnings and errors to standard error.
	Logger hclog.Logger
}

// NewTLSTransport returns a raft transport over a TLSStreamLayer listening
// on bind (see NewTLSStreamLayer for advertise and cfg). Shut it down after
// the raft using it with its CloseStreams (the connections it dialled, so
// that the peers' handlers of them end) and then Close.
func NewTLSTransport(bind string, advertise net.Addr, cfg *tls.Config, o TransportOptions) (*raft.NetworkTransport, *TLSStreamLayer, error) {
	if o.MaxPool < 0 || o.Timeout < 0 {
		return nil, nil, errors.Join(ttldb.ErrInvalidOptions, errors.New("replica: TransportOptions: negative value"))
	}
	if o.MaxPool == 0 {
		o.MaxPool = 3
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft-net", Level: hclog.Warn, Output: os.Stderr})
	}
	layer, err := NewTLSStreamLayer(bind, advertise, cfg)
	if err != nil {
		return nil, nil, err
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  layer,
		MaxPool: o.MaxPool,
		Timeout: o.Timeout,
		Logger:  o.Logger,
	})
	return trans, layer, nil
}
