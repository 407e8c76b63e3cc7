// Command cluster runs a replicated ttldb: three raft nodes in one
// process, talking over loopback TLS 1.3 with mutual authentication (a CA
// and the nodes' certificates are made at start), each keeping its raft
// log in its own directory, sharing a sessions collection with a TTL
// index.
//
// Each round writes sessions on the leader, kills the leader, and shows
// another node taking over expiry: the new leader's TTL monitor deletes
// the sessions, and the surviving follower applies the same deletions
// from the log. The killed node then restarts from its directory and
// catches up.
//
//	go run ./examples/cluster          # rounds on the system clock, until Ctrl-C
//	go run ./examples/cluster -once    # one round on a fake clock (a few seconds)
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/replica"
	"github.com/ttldb/ttldb/ttltest"
)

// serverName is the name every node's certificate carries.
const serverName = "ttldb-node"

// sessionTTL is how long a session lives after its lastSeen time.
const sessionTTL = 3 * time.Second

func main() {
	once := flag.Bool("once", false, "run one round on a fake clock and exit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := options{out: os.Stdout, rounds: 0}
	if *once {
		opts.rounds, opts.fake = 1, true
	}
	if err := run(ctx, opts); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// options configure run.
type options struct {
	out    io.Writer
	rounds int  // 0: until ctx is done
	fake   bool // a fake clock the program advances, instead of the system clock
	dir    string
}

// member is one node of the cluster and what it needs to restart.
type member struct {
	id, dir, addr string
	tls           *tls.Config
	node          atomic.Pointer[replica.Node] // nil while down
	trans         *raft.NetworkTransport
	expired       atomic.Int64 // sessions its monitor deleted as leader
	applied       atomic.Int64 // sessions it deleted applying the leader's entries
}

type cluster struct {
	opts    options
	clock   ttldb.Clock
	fake    *ttltest.Clock // nil on the system clock
	members []*member
}

func run(ctx context.Context, opts options) error {
	if opts.dir == "" {
		d, err := os.MkdirTemp("", "ttldb-cluster-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		opts.dir = d
	}
	c := &cluster{opts: opts, clock: ttldb.SystemClock()}
	if opts.fake {
		c.fake = ttltest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
		c.clock = c.fake
	}
	pool, issue, err := newCA()
	if err != nil {
		return err
	}
	for i := range 3 {
		cert, err := issue()
		if err != nil {
			return err
		}
		m := &member{id: fmt.Sprintf("n%d", i+1), dir: filepath.Join(opts.dir, fmt.Sprintf("n%d", i+1)),
			addr: "127.0.0.1:0", tls: replica.MutualTLSConfig(pool, cert, serverName)}
		if err := c.start(m); err != nil {
			return err
		}
		c.members = append(c.members, m)
	}
	defer c.stopAll()
	var servers []replica.Server
	for _, m := range c.members {
		servers = append(servers, replica.Server{ID: m.id, Address: m.addr})
	}
	if err := c.members[0].node.Load().Bootstrap(servers...); err != nil {
		return err
	}
	l, err := c.leader(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.opts.out, "3 nodes on loopback TLS (%s, %s, %s); leader %s\n", servers[0].Address, servers[1].Address, servers[2].Address, l.id)
	if err := c.write(ctx, func(db *ttldb.DB) error {
		_, err := db.Collection("sessions").CreateIndex(ctx, ttldb.IndexModel{
			Keys: []ttldb.IndexKey{ttldb.Asc("lastSeen")}, ExpireAfterSeconds: ttldb.Seconds(int32(sessionTTL / time.Second)),
		})
		return err
	}); err != nil {
		return err
	}
	for round := 1; opts.rounds == 0 || round <= opts.rounds; round++ {
		if err := c.round(ctx, round); err != nil {
			return err
		}
	}
	return nil
}

// round writes sessions, kills the leader, waits for another to expire
// them, and restarts the killed node.
func (c *cluster) round(ctx context.Context, round int) error {
	out := c.opts.out
	var docs []any
	for i := range 100 {
		docs = append(docs, ttldb.Document{"_id": fmt.Sprintf("r%d-%03d", round, i), "user": fmt.Sprintf("user%d", i%10), "lastSeen": c.clock.Now()})
	}
	if err := c.write(ctx, func(db *ttldb.DB) error {
		_, err := db.Collection("sessions").InsertMany(context.Background(), docs)
		if errors.Is(err, ttldb.ErrDuplicateKey) {
			return nil // committed before a retry
		}
		return err
	}); err != nil {
		return err
	}
	if err := c.waitCount(ctx, 100, false); err != nil {
		return err
	}
	old, err := c.leader(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "round %d: 100 sessions on every node; killing the leader %s\n", round, old.id)
	c.stop(old)

	start := time.Now()
	nl, err := c.leader(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "round %d: %s leads after %v\n", round, nl.id, time.Since(start).Round(time.Millisecond))
	if err := c.waitCount(ctx, 0, true); err != nil {
		return err
	}
	if nl.expired.Load() == 0 {
		if l, err := c.leader(ctx); err == nil {
			nl = l // leadership moved again meanwhile
		}
	}
	for _, m := range c.up() {
		role := "applied the leader's deletions"
		if m == nl {
			role = "took over expiry"
		}
		fmt.Fprintf(out, "round %d: %s %s (%d sessions by its monitor, %d applied from the log so far); %d left\n",
			round, m.id, role, m.expired.Load(), m.applied.Load(), count(m))
	}

	if err := c.start(old); err != nil {
		return err
	}
	if err := c.waitCount(ctx, 0, false); err != nil {
		return err
	}
	if err := c.converged(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "round %d: %s restarted from its directory and caught up (op %d on every node)\n", round, old.id, old.node.Load().DB().LastSeq())
	return nil
}

// start opens (or reopens) a member's node on its address and directory.
func (c *cluster) start(m *member) error {
	trans, layer, err := replica.NewTLSTransport(m.addr, nil, m.tls, replica.TransportOptions{Logger: hclog.NewNullLogger()})
	if err != nil {
		return err
	}
	m.addr = layer.Addr().String()
	rc := raft.DefaultConfig()
	rc.Logger = hclog.NewNullLogger()
	interval := time.Second
	if c.fake != nil {
		interval = 10 * time.Second // passes as the program advances the fake clock
	}
	n, err := replica.Open(replica.Config{
		ID: m.id, Transport: trans, Dir: m.dir, Raft: rc,
		DBOptions: []ttldb.Option{
			ttldb.WithClock(c.clock),
			ttldb.WithMonitor(ttldb.MonitorOptions{Interval: interval}),
			ttldb.WithDeleteObserver(func(ev ttldb.DeleteEvent) {
				if n := m.node.Load(); n != nil && n.Raft().State() == raft.Leader {
					m.expired.Add(int64(len(ev.IDs)))
				} else {
					m.applied.Add(int64(len(ev.IDs)))
				}
			}),
		},
	})
	if err != nil {
		trans.Close()
		return err
	}
	m.trans = trans
	m.node.Store(n)
	return nil
}

// stop kills a member: its raft stops, its DB closes, its directory stays.
func (c *cluster) stop(m *member) {
	n := m.node.Swap(nil)
	if n == nil {
		return
	}
	_ = n.Close()
	m.trans.CloseStreams() // the connections it dialled: peers' handlers end
	_ = m.trans.Close()
}

func (c *cluster) stopAll() {
	for _, m := range c.members {
		c.stop(m)
	}
}

func (c *cluster) up() []*member {
	var out []*member
	for _, m := range c.members {
		if m.node.Load() != nil {
			out = append(out, m)
		}
	}
	return out
}

// waitTimeout bounds every wait: an election with raft's default timeouts
// takes a few seconds.
const waitTimeout = 30 * time.Second

// poll calls done until it reports true. With advance, it moves the fake
// clock on by a second between calls (the sessions' expiry and the
// monitor's passes follow it); on the system clock it just waits.
func (c *cluster) poll(ctx context.Context, what string, advance bool, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("cluster: no %s within %v", what, waitTimeout)
			}
			return ctx.Err()
		case <-tick.C:
			if advance && c.fake != nil {
				c.fake.Advance(time.Second)
			}
		}
	}
	return nil
}

// leader waits for a leader ready to write.
func (c *cluster) leader(ctx context.Context) (*member, error) {
	var l *member
	err := c.poll(ctx, "leader", false, func() bool {
		for _, m := range c.up() {
			if s := m.node.Load().Status(); s.State == "Leader" {
				l = m
				return true
			}
		}
		return false
	})
	return l, err
}

// write runs a write on the leader, again on the next leader if
// leadership moves meanwhile.
func (c *cluster) write(ctx context.Context, fn func(db *ttldb.DB) error) error {
	for {
		l, err := c.leader(ctx)
		if err != nil {
			return err
		}
		err = fn(l.node.Load().DB())
		if err == nil || !(errors.Is(err, ttldb.ErrNotPrimary) || errors.Is(err, replica.ErrNotCommitted) || errors.Is(err, ttldb.ErrClosed)) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond) // the node is not ready yet
	}
}

func count(m *member) int {
	n, err := m.node.Load().DB().Collection("sessions").CountDocuments(context.Background(), ttldb.Document{})
	if err != nil {
		return -1
	}
	return int(n)
}

// waitCount waits until every node up holds n sessions; with advance,
// moving the fake clock on meanwhile.
func (c *cluster) waitCount(ctx context.Context, n int, advance bool) error {
	return c.poll(ctx, fmt.Sprintf("%d sessions on every node", n), advance, func() bool {
		for _, m := range c.up() {
			if count(m) != n {
				return false
			}
		}
		return true
	})
}

// converged waits until every node up has applied the same ops.
func (c *cluster) converged(ctx context.Context) error {
	return c.poll(ctx, "convergence", false, func() bool {
		var seq uint64
		for i, m := range c.up() {
			s := m.node.Load().DB().LastSeq()
			if i > 0 && s != seq {
				return false
			}
			seq = s
		}
		return true
	})
}

// newCA makes a CA dedicated to the cluster and returns its pool and a
// function issuing node certificates (server and client use, for
// serverName and 127.0.0.1).
func newCA() (*x509.CertPool, func() (tls.Certificate, error), error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ttldb cluster CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	serial := int64(1)
	issue := func() (tls.Certificate, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return tls.Certificate{}, err
		}
		serial++
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: serverName},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			DNSNames: []string{serverName}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return tls.Certificate{}, err
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
	}
	return pool, issue, nil
}
