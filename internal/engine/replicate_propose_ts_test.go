package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// tsReplicator is a Replicator that records the ops it is given (Commit).
// Wrapped in tsProposer it also proposes TTL batches first.
type tsReplicator struct {
	mu  sync.Mutex
	ops []Op // every op committed through Commit
}

func (r *tsReplicator) Begin() error { return nil }

func (r *tsReplicator) Commit(ops []Op) {
	r.mu.Lock()
	r.ops = append(r.ops, ops...)
	r.mu.Unlock()
}

func (r *tsReplicator) End(err error) error { return err }

// tsProposer is a tsReplicator that proposes TTL batches first
// (ExpireProposer): it records each proposal with the measurements the
// collection held and the DB's LastSeq at that moment, and commits it
// (calls apply) unless refuse is set.
type tsProposer struct {
	tsReplicator
	ts       func() *tsColl // the collection whose measurements it counts
	db       *DB
	refuse   error
	proposed []Op
	during   []int    // measurements stored when each was proposed
	lastSeq  []uint64 // DB.LastSeq() when each was proposed
	applyErr []error  // apply's result, for each proposal (nil: refused, or applied)
	applied  []bool   // whether each proposal was committed (apply called)
}

func (p *tsProposer) ProposeExpire(op Op, apply func() error) error {
	// Called on the goroutine that holds the collection's lock for the
	// batch: its count is read as that goroutine sees it.
	p.proposed = append(p.proposed, op)
	p.during = append(p.during, p.ts().count)
	p.lastSeq = append(p.lastSeq, p.db.LastSeq())
	if p.refuse != nil {
		p.applyErr, p.applied = append(p.applyErr, nil), append(p.applied, false)
		return p.refuse
	}
	err := apply()
	p.applyErr, p.applied = append(p.applyErr, err), append(p.applied, true)
	return err
}

// tsFixture is the time-series collection "s" of the proposal tests:
// sensors 0-4 have 3 expired measurements each, in one bucket per sensor
// (meta {id, tier: "hot"}), and sensor 5 has 3 fresh ones. With partial,
// the expiry rule is the partial TTL index "hot_ttl" on {sensor.tier:
// "hot"}, else the collection-level expireAfterSeconds; either is 60 s.
type tsFixture struct {
	db       *DB
	clk      *ttltest.Clock
	events   []DeleteEvent
	measured []int // measurements of each event (DeleteEvent.Measurements)
}

const tsFixtureAll = 18 // measurements of tsFixture's collection

func openTSFixture(t *testing.T, r Replicator, partial bool, opts ...Option) *tsFixture {
	t.Helper()
	f := &tsFixture{clk: ttltest.NewClock(opEpoch)}
	opts = append([]Option{WithClock(f.clk), WithReplicator(r), WithMonitor(MonitorOptions{Disabled: true, BatchSize: 2}),
		WithDeleteObserver(func(ev DeleteEvent) {
			f.events = append(f.events, ev)
			n := 0
			for range ev.Measurements() {
				n++
			}
			f.measured = append(f.measured, n)
		})}, opts...)
	db, err := Open(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	f.db = db
	if p, ok := r.(*tsProposer); ok {
		p.db = db
		p.ts = func() *tsColl {
			s, _ := db.state("s", false)
			return s.ts
		}
	}
	co := CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "sensor", BucketMaxSpanSeconds: 60, BucketRoundingSeconds: 60}}
	if !partial {
		co.ExpireAfterSeconds = Seconds(60)
	}
	c, err := db.CreateCollection(context.Background(), "s", co)
	require.NoError(t, err)
	if partial {
		_, err = c.CreateIndex(context.Background(), IndexModel{Name: "hot_ttl", Keys: []IndexKey{Asc("t")}, ExpireAfterSeconds: Seconds(60),
			PartialFilterExpression: Document{"sensor.tier": "hot"}})
		require.NoError(t, err)
	}
	var ms []any
	for s := range 6 {
		at := opEpoch
		if s == 5 {
			at = opEpoch.Add(time.Hour)
		}
		for i := range 3 {
			ms = append(ms, Document{"_id": fmt.Sprintf("m%d-%d", s, i), "t": at.Add(time.Duration(i) * 10 * time.Second), "sensor": Document{"id": s, "tier": "hot"}})
		}
	}
	_, err = c.InsertMany(context.Background(), ms)
	require.NoError(t, err)
	f.clk.Advance(3 * time.Minute) // past start + span + 60 s of the old buckets
	return f
}

// expireOps returns the OpExpire ops among ops.
func expireOps(ops []Op) []Op {
	var out []Op
	for _, op := range ops {
		if op.Kind == OpExpire {
			out = append(out, op)
		}
	}
	return out
}

// follow applies, to a new DB, the ops a proposing DB committed (through
// Commit) and the batches it proposed that were committed, in sequence
// order, as a replica applies its log.
func follow(t *testing.T, p *tsProposer) *DB {
	t.Helper()
	var log []Op
	log = append(log, p.ops...)
	for i, op := range p.proposed {
		if p.applied[i] && p.applyErr[i] == nil {
			log = append(log, op)
		}
	}
	slices.SortFunc(log, func(a, b Op) int { return cmp.Compare(a.Seq, b.Seq) })
	return replay(t, log)
}

// TestProposeExpireTimeSeries: with an ExpireProposer, a time-series
// collection's TTL batch is proposed before anything of it is deleted,
// as an OpExpire with the removed measurements' keys, the rule, the
// cutoff and the next sequence number (exactly the op the same batch
// commits without a proposer); once committed (apply) it is deleted, never
// through Replicator.Commit. The pass's result, the metrics, the
// observers' events and the collection end as without a proposer, and a
// replica applying the log with DB.Apply ends identical.
func TestProposeExpireTimeSeries(t *testing.T) {
	ctx := context.Background()
	p := &tsProposer{}
	f := openTSFixture(t, p, false)
	plain := openTSFixture(t, &tsReplicator{}, false)
	before := f.db.LastSeq()
	committedBefore := len(p.ops)

	res, err := f.db.RunTTLPass(ctx)
	require.NoError(t, err)
	plainRes, err := plain.db.RunTTLPass(ctx)
	require.NoError(t, err)
	assert.Equal(t, plainRes, res, "the pass's result")
	assert.Equal(t, 5, res.Deleted, "buckets")

	require.Len(t, p.proposed, 3, "5 buckets in batches of 2")
	assert.Len(t, p.ops, committedBefore, "a proposed batch does not go through Commit")
	keys := 0
	for i, op := range p.proposed {
		assert.Equal(t, OpExpire, op.Kind)
		assert.Equal(t, "s", op.Collection)
		assert.Equal(t, CollectionExpiryName, op.Index)
		assert.True(t, op.Cutoff.Equal(f.clk.Now()), "the batch's instant")
		assert.True(t, op.Time.Equal(op.Cutoff))
		assert.Equal(t, before+uint64(i)+1, op.Seq, "the next sequence number, reserved")
		assert.Equal(t, before+uint64(i), p.lastSeq[i], "not used yet while proposed")
		assert.Equal(t, tsFixtureAll-keys, p.during[i], "nothing of the batch removed before it is committed")
		assert.True(t, p.applied[i])
		assert.NoError(t, p.applyErr[i])
		for _, k := range op.Keys {
			_, _, _, err := tsKeyOf(k)
			require.NoError(t, err)
		}
		keys += len(op.Keys)
	}
	assert.Equal(t, 15, keys)
	assert.Equal(t, before+3, f.db.LastSeq())

	// Without a proposer the same batches commit the same ops.
	plainOps := expireOps(plain.db.cfg.replicator.(*tsReplicator).ops)
	require.Len(t, plainOps, len(p.proposed))
	for i := range plainOps {
		requireSameOp(t, plainOps[i], p.proposed[i])
	}
	requireSameState(t, plain.db, f.db)
	assert.Equal(t, plain.db.Metrics().TTL, f.db.Metrics().TTL, "the metrics")
	assert.Equal(t, int64(15), f.db.Metrics().TTL.DeletedMeasurements)
	assert.Equal(t, plain.measured, f.measured, "the measurements each observed event carries")
	assert.Equal(t, plain.events, f.events, "the observers' events")
	require.Len(t, f.events, 3)

	// A replica applying the log ends identical.
	requireSameState(t, f.db, follow(t, p))
	assert.Equal(t, 3, count(t, f.db.Collection("s")))
}

// TestProposeExpireTimeSeriesRefused: a refused proposal removes no
// measurement, leaves the sequence number unused (the next write takes
// it), counts and tells nothing, and the pass stops with ErrNotPrimary.
func TestProposeExpireTimeSeriesRefused(t *testing.T) {
	p := &tsProposer{refuse: errors.New("leadership lost")}
	f := openTSFixture(t, p, false)
	before := f.db.LastSeq()
	res, err := f.db.RunTTLPass(context.Background())
	require.ErrorIs(t, err, ErrNotPrimary)
	require.ErrorIs(t, err, p.refuse)
	assert.Zero(t, res.Deleted)
	assert.Equal(t, tsFixtureAll, count(t, f.db.Collection("s")), "every measurement in place")
	assert.Equal(t, before, f.db.LastSeq(), "the reserved sequence number is not used")
	require.Len(t, p.proposed, 1, "the pass stops at the refused batch")
	assert.Len(t, p.proposed[0].Keys, 6)
	assert.Equal(t, []bool{false}, p.applied, "apply is not called")
	assert.Zero(t, f.db.Metrics().TTL.DeletedDocuments)
	assert.Zero(t, f.db.Metrics().TTL.DeletedMeasurements)
	assert.Empty(t, f.events)

	_, err = f.db.Collection("s").InsertOne(context.Background(), Document{"_id": "next", "t": f.clk.Now(), "sensor": Document{"id": 9}})
	require.NoError(t, err)
	assert.Equal(t, before+1, f.db.LastSeq(), "the next write takes the number")
	assert.Equal(t, before+1, p.ops[len(p.ops)-1].Seq)

	// Once the proposals commit again, the batches go.
	p.refuse = nil
	res, err = f.db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5, res.Deleted)
	requireSameState(t, f.db, follow(t, p))
}

// TestProposeExpireTimeSeriesRecheck: buckets changed while the hooks run
// (after they were chosen) are re-checked before the batch is proposed:
// one whose meta value left the partial TTL index's rule is not proposed
// and survives; one changed but still expired is proposed in a later
// batch, after the hooks saw its new version. Every replica ends alike.
func TestProposeExpireTimeSeriesRecheck(t *testing.T) {
	var once sync.Once
	var db *DB
	var offered [][]any // the _id values of each hook call
	hook := func(_ context.Context, b ExpiredBatch) error {
		var ids []any
		for _, d := range b.Docs {
			ids = append(ids, d["_id"])
		}
		offered = append(offered, ids)
		once.Do(func() {
			_, err := db.Collection("s").UpdateMany(context.Background(), Document{"sensor.id": 0}, Document{"$set": Document{"sensor.tier": "cold"}})
			require.NoError(t, err)
			_, err = db.Collection("s").UpdateMany(context.Background(), Document{"sensor.id": 1}, Document{"$set": Document{"sensor.loc": "x"}})
			require.NoError(t, err)
		})
		return nil
	}
	p := &tsProposer{}
	f := openTSFixture(t, p, true, WithOnExpire(hook), WithMonitor(MonitorOptions{Disabled: true, BatchSize: 100}))
	db = f.db
	res, err := f.db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 4, res.Deleted, "buckets")
	require.Len(t, p.proposed, 2)
	ids := func(op Op) []any {
		var out []any
		for _, k := range op.Keys {
			out = append(out, k.ID())
		}
		return out
	}
	assert.Equal(t, []any{"m2-0", "m2-1", "m2-2", "m3-0", "m3-1", "m3-2", "m4-0", "m4-1", "m4-2"}, ids(p.proposed[0]), "the changed buckets are not in the batch")
	assert.Equal(t, []any{"m1-0", "m1-1", "m1-2"}, ids(p.proposed[1]), "changed but still expired: offered again, then proposed")
	require.Len(t, offered, 2)
	assert.Equal(t, []any{"m1-0", "m1-1", "m1-2"}, offered[1])
	assert.Equal(t, []any{"m0-0", "m0-1", "m0-2", "m5-0", "m5-1", "m5-2"}, findIDs(t, f.db.Collection("s"), nil), "the bucket that left the rule survives")
	requireSameState(t, f.db, follow(t, p))
}

// TestApplyTimeSeriesExpireRecheck: DB.Apply of a time-series OpExpire
// re-checks each measurement as the monitor does: a bucket whose meta
// value left the rule's partial filter since the batch was chosen, or
// whose measurements are no longer expired at the op's Cutoff, keeps them
// all; the others go.
func TestApplyTimeSeriesExpireRecheck(t *testing.T) {
	p := &tsProposer{}
	f := openTSFixture(t, p, true, WithMonitor(MonitorOptions{Disabled: true, BatchSize: 100}))
	_, err := f.db.RunTTLPass(context.Background())
	require.NoError(t, err)
	require.Len(t, p.proposed, 1)
	op := p.proposed[0]
	require.Len(t, op.Keys, 15)

	// A replica holding the state before the batch, where sensor 0's
	// bucket has left the rule.
	var log []Op
	for _, o := range p.ops {
		if o.Seq < op.Seq {
			log = append(log, o)
		}
	}
	replica := replay(t, log)
	_, err = replica.Collection("s").UpdateMany(context.Background(), Document{"sensor.id": 0}, Document{"$set": Document{"sensor.tier": "cold"}})
	require.NoError(t, err)
	require.Equal(t, op.Seq-1, replica.LastSeq(), "a local write without sinks commits no op")
	require.NoError(t, replica.Apply(context.Background(), op))
	assert.Equal(t, []any{"m0-0", "m0-1", "m0-2", "m5-0", "m5-1", "m5-2"}, findIDs(t, replica.Collection("s"), nil))
	assert.Equal(t, int64(12), replica.Metrics().TTL.DeletedMeasurements)

	// A replica applying the op with a Cutoff before the buckets expire
	// keeps every measurement.
	early := op
	early.Cutoff = opEpoch.Add(2*time.Minute - time.Nanosecond) // a bucket goes at its start + span (60 s) + 60 s
	replica = replay(t, log)
	require.NoError(t, replica.Apply(context.Background(), early))
	assert.Equal(t, tsFixtureAll, count(t, replica.Collection("s")))
	assert.Zero(t, replica.Metrics().TTL.DeletedMeasurements)
}
