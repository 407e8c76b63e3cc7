package replica

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/internal/codec"
	snapfile "github.com/ttldb/ttldb/internal/snapshot"
)

// bucketsDigest hashes what a DB's Backup says of its collections and
// time-series buckets: every collection block (name, options, indexes,
// multikey indexes, a time-series collection's expiry and next bucket
// number) and every bucket (its number, record version, meta value,
// start, whether it is open, and its measurements' bytes). Documents of
// ordinary collections are left to digest (their natural order may differ
// between replicas), and so are the header's time and the trailer's
// version counter (a DB's own). Encoded documents are compared by value:
// a Backup encodes a document-valued meta field in map order.
func bucketsDigest(t testing.TB, db *ttldb.DB) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, db.Backup(context.Background(), &buf))
	r, err := snapfile.NewReader(&buf)
	require.NoError(t, err)
	h := sha256.New()
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch b.Kind {
		case snapfile.KindCollection:
			c, err := snapfile.ParseCollection(b.Payload)
			require.NoError(t, err)
			fmt.Fprintf(h, "collection %d %q asOf %d next %d docs %d spec %s state %s\n", c.ID, c.Name, c.AsOf, c.Next, c.Docs, canonical(c.Spec), canonical(c.State))
			for _, ix := range c.Indexes {
				fmt.Fprintf(h, "index %s\n", canonical(ix))
			}
		case snapfile.KindBuckets:
			_, err := snapfile.ParseBuckets(b, func(coll uint32, bk []byte) error {
				seq, n1 := binary.Uvarint(bk)
				ver, n2 := binary.Uvarint(bk[max(n1, 0):])
				require.True(t, n1 > 0 && n2 > 0 && len(bk) > n1+n2, "bucket header")
				p := bk[n1+n2:]
				flags := p[0]
				p = p[1:]
				meta := ""
				if flags&1 != 0 {
					l, n := binary.Uvarint(p)
					require.True(t, n > 0 && uint64(len(p)-n) >= l, "bucket meta")
					meta, p = canonical(p[n:n+int(l)]), p[n+int(l):]
				}
				fmt.Fprintf(h, "bucket %d/%d ver %d flags %d meta %s rest %x\n", coll, seq, ver, flags, meta, p)
				return nil
			})
			require.NoError(t, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// canonical describes an encoded document by value, its fields sorted.
func canonical(enc []byte) string {
	if len(enc) == 0 {
		return "-"
	}
	var sb strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := slices.Sorted(maps.Keys(v))
			sb.WriteByte('{')
			for _, k := range keys {
				fmt.Fprintf(&sb, "%q:", k)
				walk(v[k])
				sb.WriteByte(',')
			}
			sb.WriteByte('}')
		case []any:
			sb.WriteByte('[')
			for _, e := range v {
				walk(e)
				sb.WriteByte(',')
			}
			sb.WriteByte(']')
		default:
			fmt.Fprintf(&sb, "%T(%v)", v, v)
		}
	}
	walk(map[string]any(codec.Decode(enc)))
	return sb.String()
}

// The time-series collection of TestClusterTimeSeries: measurements every
// 10 s in 60 s buckets, one sensor's meta value {tier, id} per bucket.
const (
	tsColl    = "metrics"
	tsHotTTL  = 60   // the partial TTL index on {sensor.tier: "hot"}
	tsCollTTL = 7200 // the collection's expireAfterSeconds
	tsSpan    = 60
	tsStep    = 10 * time.Second
)

// TestClusterTimeSeries: a time-series collection with a collection-level
// expireAfterSeconds and a partial TTL index on its metaField, written on
// the leader and expired by the leader's TTL monitor, each batch through
// the log. The leader is killed in the middle of the partial index's
// expiry; the new leader's monitor finishes it. Every replica ends with
// the same measurements and the same buckets (bucketsDigest), nothing
// before its threshold is deleted on any of them, the killed node and
// then all three restart from their directories with the same state, and
// the collection-level expiry goes on after that. Every batch is a
// proposal entry in every node's log (proposed first, see
// TestClusterTimeSeriesProposalFirst).
func TestClusterTimeSeries(t *testing.T) {
	// 120 measurements: 20 buckets per sensor, 6 measurements each.
	sensors, perSensor, batch := bySoak(16, 64, 200), bySoak(120, 120, 240), bySoak(4, 8, 16)
	ctx := context.Background()
	var (
		armed      atomic.Bool // the next leader batch count starts
		killOnce   sync.Once
		kill       = make(chan string, 1) // the leader's id, at its third batch
		release    = make(chan struct{})  // the blocked hook returns
		early      atomic.Int64           // measurements deleted before their threshold, on any node
		observedMu sync.Mutex
		observed   = map[string]int{} // node → measurements it deleted (its monitor's or applied)
	)
	c := newClusterIn(t, 3, func(id string) []ttldb.Option {
		var hooked atomic.Int64 // batches offered to this node's hooks while armed
		return []ttldb.Option{
			// The monitor runs: a pass every second of the fake clock, a
			// few buckets a batch (batch sizes count buckets).
			ttldb.WithMonitor(ttldb.MonitorOptions{Interval: time.Second, BatchSize: batch}),
			// Hooks run on the leader only, before its batch is proposed.
			ttldb.WithOnExpire(func(_ context.Context, b ttldb.ExpiredBatch) error {
				if b.Collection != tsColl || !armed.Load() {
					return nil
				}
				if hooked.Add(1) == 3 {
					blocked := false
					killOnce.Do(func() { kill <- id; blocked = true })
					if blocked {
						<-release
					}
				}
				return nil
			}),
			ttldb.WithDeleteObserver(func(ev ttldb.DeleteEvent) {
				if ev.Collection != tsColl {
					return
				}
				ttl := time.Duration(tsCollTTL) * time.Second
				if ev.Index != ttldb.CollectionExpiryName {
					ttl = tsHotTTL * time.Second
				}
				n := 0
				for m := range ev.Measurements() {
					n++
					at, _ := m["t"].(time.Time)
					// A bucket goes when its start + span + E has passed: each
					// of its measurements is at least E old.
					if at.Add(ttl).After(ev.BatchNow) || m["kind"] == "fresh" {
						early.Add(1)
					}
				}
				observedMu.Lock()
				observed[id] += n
				observedMu.Unlock()
			}),
		}
	}, true)

	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.CreateCollection(context.Background(), tsColl, ttldb.CollectionOptions{
			TimeSeries: &ttldb.TimeSeriesOptions{
				TimeField: "t", MetaField: "sensor",
				BucketMaxSpanSeconds: tsSpan, BucketRoundingSeconds: tsSpan,
			},
			ExpireAfterSeconds: ttldb.Seconds(tsCollTTL),
		})

		if errors.Is(err, ttldb.ErrCollectionExists) {
			return nil // committed before a retry
		}
		return err
	})
	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.Collection(tsColl).CreateIndex(ctx, ttldb.IndexModel{
			Name: "hot_ttl", Keys: []ttldb.IndexKey{ttldb.Asc("t")}, ExpireAfterSeconds: ttldb.Seconds(tsHotTTL),
			PartialFilterExpression: ttldb.Document{"sensor.tier": "hot"},
		})
		return err
	})

	// Old measurements of every sensor, then fresh ones (due long after
	// the clock will be), written in chunks on the leader.
	start := c.clk.Now()
	oldEnd := start.Add(time.Duration(perSensor) * tsStep) // a bucket boundary
	freshFrom := oldEnd.Add(2 * tsCollTTL * time.Second)
	var ms []ttldb.Document
	for s := range sensors {
		tier := "cold"
		if s%2 == 0 {
			tier = "hot"
		}
		for i := range perSensor {
			ms = append(ms, ttldb.Document{"_id": fmt.Sprintf("o%03d-%05d", s, i), "t": start.Add(time.Duration(i) * tsStep),
				"sensor": ttldb.Document{"tier": tier, "id": s}, "kind": "old", "v": i})
		}
		for i := range 12 {
			ms = append(ms, ttldb.Document{"_id": fmt.Sprintf("f%03d-%05d", s, i), "t": freshFrom.Add(time.Duration(i) * tsStep),
				"sensor": ttldb.Document{"tier": tier, "id": s}, "kind": "fresh", "v": i})
		}
	}
	for chunk := 0; chunk*1000 < len(ms); chunk++ {
		c.insertMeasurements(chunk, ms[chunk*1000:min((chunk+1)*1000, len(ms))])
	}
	c.converged()
	oldHot, oldCold, fresh := sensors/2*perSensor, sensors/2*perSensor, sensors*12
	c.requireTS(oldHot, oldCold, fresh)
	info, _, err := c.leader().node.DB().Collection(tsColl).TimeSeriesInfo(context.Background())
	require.NoError(t, err)
	require.Equal(t, sensors*(perSensor*int(tsStep/time.Second)/tsSpan+2), info.Buckets, "buckets: 6 measurements 10 s apart in each 60 s bucket")

	// The old hot buckets pass the partial index's threshold (the cold
	// ones are far from the collection's): the leader's monitor deletes
	// them, and its third batch kills it.
	armed.Store(true)
	c.clk.Advance(oldEnd.Add((tsSpan + tsHotTTL + 10) * time.Second).Sub(c.clk.Now())) // fires the monitor's timer
	var victim string
	select {
	case victim = <-kill:
	case <-time.After(30 * time.Second):
		t.Fatal("the leader's monitor did not reach its third batch")
	}
	var old *testNode
	for _, tn := range c.nodes {
		if tn.id == victim {
			old = tn
		}
	}
	require.NotNil(t, old)
	require.NoError(t, old.node.Raft().Shutdown().Error()) // dead to the cluster first,
	close(release)                                         // then its monitor may go on (and fail to propose),
	c.kill(old)                                            // and its DB closes
	mid := count(t, c.leader().node.DB(), tsColl, ttldb.Document{"sensor.tier": "hot", "kind": "old"})
	t.Logf("killed the leader %s with %d of %d old hot measurements left", victim, mid, oldHot)
	require.Less(t, mid, oldHot, "the old leader's first batches are committed")
	require.Positive(t, mid, "the old leader did not finish")

	// The new leader's monitor finishes the expiry.
	c.monitorUntil(func(db *ttldb.DB) bool {
		return count(t, db, tsColl, ttldb.Document{"sensor.tier": "hot", "kind": "old"}) == 0
	})
	nl := c.leader()
	require.NotSame(t, old, nl)
	c.converged()
	c.requireTS(0, oldCold, fresh)

	// The old leader restarts from its directory and catches up.
	c.restart(old)
	d := c.converged()
	c.requireTS(0, oldCold, fresh)
	buckets := bucketsDigest(t, c.leader().node.DB())

	// All three restart from their directories: the same state.
	for _, tn := range c.nodes {
		c.kill(tn)
	}
	for _, tn := range c.nodes {
		c.restart(tn)
	}
	assert.Equal(t, d, c.converged(), "the state after restarting all from disk")
	assert.Equal(t, buckets, bucketsDigest(t, c.leader().node.DB()))
	c.requireTS(0, oldCold, fresh)

	// The collection-level expiry takes the cold buckets, through the log.
	c.clk.Advance(oldEnd.Add((tsSpan + tsCollTTL + 10) * time.Second).Sub(c.clk.Now()))
	c.monitorUntil(func(db *ttldb.DB) bool {
		return count(t, db, tsColl, ttldb.Document{"kind": "old"}) == 0
	})
	c.converged()
	c.requireTS(0, 0, fresh)
	for _, tn := range c.nodes {
		assert.Positive(t, tsExpiryEntries(t, tn), "%s: the batches are proposal entries", tn.id)
	}
	assert.Zero(t, early.Load(), "measurements deleted before their threshold")
	observedMu.Lock()
	defer observedMu.Unlock()
	t.Logf("measurements deleted, by node (its monitor's and those applied from the log, again after a restart): %v", observed)
	for _, tn := range c.nodes {
		assert.Positive(t, observed[tn.id], "%s deleted nothing", tn.id)
	}
}

// insertMeasurements inserts one chunk on the leader. A time-series
// collection does not refuse a measurement twice (_id is not unique): a
// write whose commit is unknown is retried only if the new leader does not
// hold its measurements.
func (c *cluster) insertMeasurements(chunk int, ms []ttldb.Document) {
	c.t.Helper()
	for range 20 {
		_, err := c.leader().node.DB().Collection(tsColl).InsertMany(context.Background(), ms)
		if err == nil {
			return
		}
		require.True(c.t, notLeaderErr(err), "chunk %d: %v", chunk, err)
		switch n := count(c.t, c.leader().node.DB(), tsColl, ttldb.Document{"_id": ms[0]["_id"]}); n {
		case 1:
			return // committed
		case 0:
		default:
			c.t.Fatalf("chunk %d stored %d times", chunk, n)
		}
	}
	c.t.Fatalf("chunk %d: no leader kept its leadership", chunk)
}

// notLeaderErr reports whether err says the node was not, or stopped
// being, the leader.
func notLeaderErr(err error) bool {
	return errors.Is(err, ttldb.ErrNotPrimary) || errors.Is(err, ErrNotCommitted) || errors.Is(err, ttldb.ErrClosed)
}

// requireTS checks every node up: the old hot, old cold and fresh
// measurements it holds, and that its buckets are the leader's.
func (c *cluster) requireTS(oldHot, oldCold, fresh int) {
	c.t.Helper()
	want := bucketsDigest(c.t, c.leader().node.DB())
	for _, tn := range c.up() {
		db := tn.node.DB()
		assert.Equal(c.t, oldHot, count(c.t, db, tsColl, ttldb.Document{"sensor.tier": "hot", "kind": "old"}), "old hot measurements on %s", tn.id)
		assert.Equal(c.t, oldCold, count(c.t, db, tsColl, ttldb.Document{"sensor.tier": "cold", "kind": "old"}), "old cold measurements on %s", tn.id)
		assert.Equal(c.t, fresh, count(c.t, db, tsColl, ttldb.Document{"kind": "fresh"}), "fresh measurements on %s", tn.id)
		assert.Equal(c.t, want, bucketsDigest(c.t, db), "buckets of %s", tn.id)
	}
}

// monitorUntil polls until done holds on the leader (the passes run on
// its monitor's goroutine), moving the fake clock on by a second every
// 100 ms, each step starting a pass (the pass ends at its PerIndexMaxTime
// of fake time, the next goes on). It gives up after two minutes.
func (c *cluster) monitorUntil(done func(db *ttldb.DB) bool) {
	c.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		l := c.leader()
		if l.node.Raft().State() == raft.Leader && done(l.node.DB()) {
			return
		}
		require.True(c.t, time.Now().Before(deadline), "the leader's monitor did not finish")
		if i%5 == 0 {
			c.clk.Advance(time.Second)
		}
		<-tick.C
	}
}

// TestClusterTimeSeriesProposalFirst: the leader's TTL batches of a
// time-series collection are proposed before anything is removed. While
// the entry of its first batch is held (not committed), the leader has
// committed, removed and observed nothing and the followers hold every
// measurement; once released, every batch is one proposal entry (no
// ordinary entry carries a time-series OpExpire, on any node's log), and
// every replica removes the same measurements (digests, metrics and the
// observers' counts alike).
func TestClusterTimeSeriesProposalFirst(t *testing.T) {
	const sensors, perBucket, batch = 10, 6, 4
	var observed sync.Map // node id → *atomic.Int64: measurements its observers saw removed
	h := newHolds()
	c := newClusterWrapped(t, 3, func(id string) []ttldb.Option {
		n := new(atomic.Int64)
		observed.Store(id, n)
		return []ttldb.Option{
			ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true, BatchSize: batch}),
			ttldb.WithDeleteObserver(func(ev ttldb.DeleteEvent) {
				for range ev.Measurements() {
					n.Add(1)
				}
			}),
		}
	}, false, testRaftConfig, h.wrap)
	seen := func(tn *testNode) int64 {
		n, _ := observed.Load(tn.id)
		return n.(*atomic.Int64).Load()
	}
	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.CreateCollection(context.Background(), tsColl, ttldb.CollectionOptions{
			TimeSeries:         &ttldb.TimeSeriesOptions{TimeField: "t", MetaField: "sensor", BucketMaxSpanSeconds: tsSpan, BucketRoundingSeconds: tsSpan},
			ExpireAfterSeconds: ttldb.Seconds(60),
		})

		return err
	})
	start := c.clk.Now()
	var ms []any
	for s := range sensors + 1 {
		at, kind := start, "old"
		if s == sensors {
			at, kind = start.Add(time.Hour), "fresh"
		}
		for i := range perBucket {
			ms = append(ms, ttldb.Document{"_id": fmt.Sprintf("%s%02d-%d", kind, s, i), "t": at.Add(time.Duration(i) * tsStep), "sensor": ttldb.Document{"id": s}, "kind": kind})
		}
	}
	c.writeOnLeader(func(db *ttldb.DB) error {
		_, err := db.Collection(tsColl).InsertMany(context.Background(), ms)
		return err
	})
	c.converged()
	c.clk.Advance(3 * time.Minute) // past start + span + 60 s of the old buckets

	l := c.leader()
	seq := l.node.DB().LastSeq()
	release := h.hold()
	defer release()
	passErr := passInBackground(l.node.DB())
	h.next(t) // the first batch's entry is in the leader's log, not replicated
	// The leader's collection is locked while its batch is proposed: what
	// it did is read from its sequence and its observers.
	assert.Equal(t, seq, l.node.DB().LastSeq(), "the leader committed nothing before the entry")
	assert.Zero(t, seen(l), "the leader removed nothing before the entry committed")
	for _, tn := range c.nodes {
		if tn != l {
			assert.Equal(t, len(ms), count(t, tn.node.DB(), tsColl, ttldb.Document{}), "%s removed something", tn.id)
		}
	}
	release()
	require.NoError(t, <-passErr)
	c.converged()
	buckets := (sensors + batch - 1) / batch
	for _, tn := range c.nodes {
		db := tn.node.DB()
		assert.Zero(t, count(t, db, tsColl, ttldb.Document{"kind": "old"}), tn.id)
		assert.Equal(t, perBucket, count(t, db, tsColl, ttldb.Document{"kind": "fresh"}), tn.id)
		assert.Equal(t, seq+uint64(buckets), db.LastSeq(), "%s: one op per batch", tn.id)
		m := db.Metrics().TTL
		assert.EqualValues(t, sensors, m.DeletedDocuments, "%s: buckets", tn.id)
		assert.EqualValues(t, sensors*perBucket, m.DeletedMeasurements, tn.id)
		assert.EqualValues(t, sensors*perBucket, seen(tn), "%s: observed", tn.id)
		assert.Equal(t, buckets, tsExpiryEntries(t, tn), "%s: the batches' proposal entries", tn.id)
	}
}

// tsExpiryEntries counts the proposal entries holding an OpExpire of the
// time-series collection in a node's raft log, failing the test if an
// ordinary entry (a write's, deleted then shipped) holds one.
func tsExpiryEntries(t *testing.T, tn *testNode) int {
	t.Helper()
	first, err := tn.node.logs.FirstIndex()
	require.NoError(t, err)
	last, err := tn.node.logs.LastIndex()
	require.NoError(t, err)
	proposals := 0
	for i := first; i <= last && first > 0; i++ {
		var l raft.Log
		require.NoError(t, tn.node.logs.GetLog(i, &l))
		if l.Type != raft.LogCommand {
			continue
		}
		h, ops, err := decodeEntry(l.Data)
		require.NoError(t, err)
		for _, op := range ops {
			if op.Kind != ttldb.OpExpire || op.Collection != tsColl {
				continue
			}
			require.NotZero(t, h.proposal, "%s: entry %d ships a time-series TTL batch as a write", tn.id, i)
			proposals++
		}
	}
	return proposals
}
