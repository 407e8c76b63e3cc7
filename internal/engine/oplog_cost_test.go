package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// keepSink keeps every op committed, as a sink may.
type keepSink struct{ ops []Op }

func (k *keepSink) appendOps(ops []Op) { k.ops = append(k.ops, ops...) }

// Rule: when every sink copies the ops it is given (a DB whose only sink
// is its log), a one-document insert's op is pooled once committed: a
// durable InsertOne allocates no more than an in-memory one. A sink that
// keeps ops (a change stream's buffer, a replicator, this test's keepSink)
// turns the pooling off while it is attached: the ops it keeps stay whole
// while later inserts run.
func TestInsertOneOpPooledWhenNoSinkKeepsIt(t *testing.T) {
	ctx := context.Background()
	i := 1 << 20 // every _id boxed alike (Go boxes small integers without allocating)
	insertInto := func(c *Collection) func() {
		return func() {
			_, err := c.InsertOne(ctx, Document{"_id": i, "s": "payload"})
			require.NoError(t, err)
			i++
		}
	}
	mem := openCS(t)
	durable := openCS(t, WithDir(t.TempDir()), WithSync(SyncNever))
	for _, db := range []*DB{mem, durable} {
		insertInto(db.Collection("c"))() // the collection, the op pool
	}
	inMemory := testing.AllocsPerRun(300, insertInto(mem.Collection("c")))
	logged := testing.AllocsPerRun(300, insertInto(durable.Collection("c")))
	if !testutil.RaceEnabled { // the race detector's instrumentation allocates
		assert.Less(t, logged-inMemory, 0.5, "allocations a durable insert adds (%v in memory, %v with the log)", inMemory, logged)
	}

	sink := &keepSink{}
	durable.ops.attach(sink)
	c := durable.Collection("c")
	first := i
	for range 50 {
		insertInto(c)()
	}
	inserts := opsOfKind(sink.ops, OpInsert)
	require.Len(t, inserts, 50)
	for k, op := range inserts {
		require.Len(t, op.Docs, 1, "insert %d", k)
		require.Len(t, op.Versions, 1, "insert %d", k)
		assert.Equal(t, first+k, op.Docs[0].ID(), "insert %d: the op a sink keeps is not reused", k)
		assert.NotZero(t, op.Versions[0], "insert %d", k)
		assert.Equal(t, "c", op.Collection, "insert %d", k)
	}

	durable.ops.detach(sink)
	again := testing.AllocsPerRun(300, insertInto(c))
	if !testutil.RaceEnabled {
		assert.Less(t, again-inMemory, 0.5, "pooled again once the keeping sink left (%v in memory, %v now)", inMemory, again)
	}
}

// Rule: building the op of a one-document insert costs one allocation
// (the op, its document and version together), and the op is whole: the
// stored document, its version, the collection and the time. A capped
// insert that evicts still commits its insert and then its delete.
func TestInsertOneOpInOneAllocation(t *testing.T) {
	db := openCS(t)
	c := db.Collection("c")
	_, err := c.InsertOne(context.Background(), Document{"_id": -1})
	require.NoError(t, err)
	i := 0
	insert := func() {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "s": "payload"})
		require.NoError(t, err)
		i++
	}
	without := testing.AllocsPerRun(200, insert)
	sink := &keepSink{}
	db.ops.attach(sink)
	with := testing.AllocsPerRun(200, insert)
	if !testutil.RaceEnabled { // the race detector's instrumentation allocates
		assert.LessOrEqual(t, with-without, 1.0, "allocations an insert's op adds (%v without, %v with)", without, with)
	}

	require.NotEmpty(t, sink.ops)
	op := sink.ops[len(sink.ops)-1]
	assert.Equal(t, OpInsert, op.Kind)
	assert.Equal(t, "c", op.Collection)
	assert.False(t, op.Time.IsZero())
	require.Len(t, op.Docs, 1)
	require.Len(t, op.Versions, 1)
	assert.Equal(t, i-1, op.Docs[0].ID())
	s, err := db.state("c", false)
	require.NoError(t, err)
	key, err := idKey(op.Docs[0].ID())
	require.NoError(t, err)
	s.mu.RLock()
	rec, ok := s.lookup([]byte(key))
	s.mu.RUnlock()
	require.True(t, ok)
	assert.Equal(t, rec.ver, op.Versions[0], "the version stored")
	assert.Equal(t, []byte(rec.enc), []byte(op.Docs[0]), "the document stored")

	_, err = db.CreateCollection(context.Background(), "capped", CollectionOptions{Capped: true, MaxDocuments: 1})
	require.NoError(t, err)
	capped := db.Collection("capped")
	_, err = capped.InsertOne(context.Background(), Document{"_id": "a"})
	require.NoError(t, err)
	n := len(sink.ops)
	_, err = capped.InsertOne(context.Background(), Document{"_id": "b"})
	require.NoError(t, err)
	require.Len(t, sink.ops, n+2)
	assert.Equal(t, OpInsert, sink.ops[n].Kind)
	assert.Equal(t, "b", sink.ops[n].Docs[0].ID())
	assert.Equal(t, OpDelete, sink.ops[n+1].Kind)
	assert.Equal(t, "a", sink.ops[n+1].Keys[0].ID())
	assert.Equal(t, sink.ops[n].Seq+1, sink.ops[n+1].Seq)
}

// Rule: a TTL batch's op holds the key of every document it deleted, in
// order, built into one buffer as the batch goes (_id values of mixed
// types and lengths: a buffer sized from the first key grows, and the
// keys cut before stay whole), and its pre-images only while they are
// asked for.
func TestExpireOpKeys(t *testing.T) {
	clk := ttltest.NewClock(csT0)
	db, err := Open(WithClock(clk), WithMonitor(MonitorOptions{Disabled: true, BatchSize: 64}))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	c := db.Collection("c")
	_, err = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	sink := &keepSink{}
	db.ops.attach(sink)
	var want []any
	for i := range 150 {
		var id any
		switch i % 3 {
		case 0:
			id = i * 1000003 // grows by bytes
		case 1:
			id = strings.Repeat("x", i) // up to 149 bytes, past the first key's size
		default:
			id = fmt.Sprintf("k%d", i)
		}
		want = append(want, id)
		_, err := c.InsertOne(context.Background(), Document{"_id": id, "at": csT0.Add(time.Duration(i) * time.Millisecond)})
		require.NoError(t, err)
	}
	clk.Advance(time.Hour)
	sink.ops = nil
	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.Equal(t, 150, res.Deleted)
	var got []any
	for _, op := range sink.ops {
		require.Equal(t, OpExpire, op.Kind)
		assert.Nil(t, op.Before, "no pre-images unless asked for")
		for _, k := range op.Keys {
			got = append(got, k.ID())
			d := k.Document()
			assert.Len(t, d, 1, "a key holds the _id only")
			assert.Equal(t, len(k), cap(k), "a key's capacity ends with it")
		}
	}
	assert.Equal(t, want, got)

	// With pre-images asked for, each key's document comes whole.
	db.ops.requestPreImages(true)
	defer db.ops.requestPreImages(false)
	for i := range 70 {
		_, err := c.InsertOne(context.Background(), Document{"_id": i, "at": "not a date, set below", "n": i})
		require.NoError(t, err)
		_, err = c.UpdateOne(context.Background(), Document{"_id": i}, Document{"$set": Document{"at": clk.Now().Add(-time.Hour)}})
		require.NoError(t, err)
	}
	sink.ops = nil
	res, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.Equal(t, 70, res.Deleted)
	seen := 0
	for _, op := range sink.ops {
		require.Len(t, op.Before, len(op.Keys))
		for j, k := range op.Keys {
			id := k.ID()
			assert.Equal(t, id, op.Before[j].ID())
			n, _ := op.Before[j].Lookup("n")
			assert.Equal(t, id, n, "the document as it was, not only its key")
			seen++
		}
	}
	assert.Equal(t, 70, seen)
}

// Rule: while only change streams take ops, a TTL batch commits its keys
// packed in one buffer (no Keys), and a stream's events carry each key;
// once another sink is attached, or at commit if one was attached since
// the batch began, the op carries Keys as every Op outside the DB does.
func TestExpireOpPackedKeys(t *testing.T) {
	clk := ttltest.NewClock(csT0)
	db, err := Open(WithClock(clk), WithMonitor(MonitorOptions{Disabled: true, BatchSize: 16}))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	c := db.Collection("c")
	_, err = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	cs := watchT(t, db)
	require.True(t, db.ops.keysPackable())
	insert := func(n int) []any {
		var ids []any
		for i := range n {
			id := any(fmt.Sprintf("id-%d-%s", i, strings.Repeat("y", i)))
			if i%2 == 0 {
				id = i * 7919
			}
			ids = append(ids, id)
			_, err := c.InsertOne(context.Background(), Document{"_id": id, "at": clk.Now()})
			require.NoError(t, err)
		}
		drain(t, cs)
		clk.Advance(time.Hour)
		return ids
	}
	want := insert(40)
	head := db.changeBuf.head.Load()
	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.Equal(t, 40, res.Deleted)
	var got []any
	for seq := head + 1; seq <= db.changeBuf.head.Load(); seq++ {
		op := db.changeBuf.load(seq)
		require.NotNil(t, op)
		require.Equal(t, OpExpire, op.Kind)
		assert.Nil(t, op.Keys, "packed: no Keys")
		require.NotNil(t, op.packed)
	}
	for _, ev := range drain(t, cs) {
		assert.True(t, ev.Expired)
		assert.Equal(t, len(ev.DocumentKey), cap(ev.DocumentKey))
		got = append(got, ev.DocumentKey.ID())
	}
	assert.Equal(t, want, got)

	// Another sink: Keys again, for it and for the streams.
	sink := &keepSink{}
	db.ops.attach(sink)
	assert.False(t, db.ops.keysPackable())
	want = insert(20)
	_, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	got = nil
	for _, op := range sink.ops {
		assert.Nil(t, op.packed)
		for _, k := range op.Keys {
			got = append(got, k.ID())
		}
	}
	assert.Equal(t, want, got)
	assert.Len(t, drain(t, cs), 20)

	// An op built packed and committed after a sink came is unpacked.
	d := deletedKeys{pack: true}
	for _, id := range []any{1, "two", 3.5} {
		d.add(&record{enc: enc(t, Document{"_id": id, "x": 1})}, 3)
	}
	keys, packed := d.op()
	require.Nil(t, keys)
	sink.ops = nil
	db.ops.commit([]Op{{Kind: OpExpire, Collection: "c", Time: csT0, Index: "at_1", Cutoff: csT0, packed: packed}})
	require.Len(t, sink.ops, 1)
	assert.Nil(t, sink.ops[0].packed)
	require.Len(t, sink.ops[0].Keys, 3)
	assert.Equal(t, []any{1, "two", 3.5}, []any{sink.ops[0].Keys[0].ID(), sink.ops[0].Keys[1].ID(), sink.ops[0].Keys[2].ID()})
	db.ops.detach(sink)
	assert.True(t, db.ops.keysPackable(), "streams only again")
}

// Rule: a packed key buffer that would outgrow its offsets' range turns
// into Keys, the keys packed so far included, and goes on unpacked.
func TestDeletedKeysUnpackPastLimit(t *testing.T) {
	defer func(old int) { maxPackedKeys = old }(maxPackedKeys)
	maxPackedKeys = 40
	d := deletedKeys{pack: true, pre: true}
	var ids []any
	var docs []RawDocument
	for i := range 10 {
		id := fmt.Sprintf("key-%d", i)
		ids = append(ids, id)
		docs = append(docs, enc(t, Document{"_id": id, "n": i}))
		d.add(&record{enc: docs[i]}, 10)
	}
	keys, packed := d.op()
	assert.Nil(t, packed)
	require.Len(t, keys, 10)
	for i, k := range keys {
		assert.Equal(t, ids[i], k.ID())
		assert.Equal(t, docs[i], d.before[i])
	}
}
