package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/ttltest"
)

// These tests commit ops by hand, through the committer, as writes do:
// they pin the change stream's own rules (order, tokens, filters, lag,
// wake-ups, Close) independently of which writes build which ops.

var csT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func openCS(t testing.TB, opts ...Option) *DB {
	t.Helper()
	db, err := Open(append([]Option{WithMonitor(MonitorOptions{Disabled: true})}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func enc(t testing.TB, d Document) RawDocument {
	t.Helper()
	b, err := codec.Encode(d, nil)
	require.NoError(t, err)
	return b
}

// encUpdate encodes an update document, whose operator names start with
// '$' and paths hold dots, which documents refuse: written with '~' and
// '|' in their place, then patched (same lengths, so the encoding holds).
func encUpdate(t testing.TB, u Document) RawDocument {
	t.Helper()
	d := Document{}
	for k, v := range u {
		args := Document{}
		for p, x := range v.(Document) {
			args[strings.ReplaceAll(p, ".", "|")] = x
		}
		d["~"+k[1:]] = args
	}
	b := enc(t, d)
	b = bytes.ReplaceAll(b, []byte("~"), []byte("$"))
	return bytes.ReplaceAll(b, []byte("|"), []byte("."))
}

func insOp(t testing.TB, coll string, ids ...int) Op {
	op := Op{Kind: OpInsert, Collection: coll, Time: csT0}
	for _, id := range ids {
		op.Docs = append(op.Docs, enc(t, Document{"_id": id, "v": id * 10}))
	}
	return op
}

func delOp(t testing.TB, coll string, ids ...int) Op {
	op := Op{Kind: OpDelete, Collection: coll, Time: csT0}
	for _, id := range ids {
		op.Keys = append(op.Keys, enc(t, Document{"_id": id}))
	}
	return op
}

// commitOps commits each op as a write of its own.
func commitOps(db *DB, ops ...Op) {
	for i := range ops {
		db.ops.commit(ops[i : i+1 : i+1])
	}
}

func watchT(t testing.TB, db *DB, opts ...ChangeStreamOptions) *ChangeStream {
	t.Helper()
	cs, err := db.Watch(context.Background(), nil, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close(context.Background()) })
	return cs
}

// drain reads every event ready now.
func drain(t testing.TB, cs *ChangeStream) []ChangeEvent {
	t.Helper()
	var out []ChangeEvent
	for cs.TryNext(context.Background()) {
		out = append(out, cs.Event())
	}
	require.NoError(t, cs.Err())
	return out
}

func evID(t testing.TB, ev ChangeEvent) any {
	t.Helper()
	require.NotNil(t, ev.DocumentKey, "event %s has no documentKey", ev.ID)
	return ev.DocumentKey.ID()
}

func TestChangeStreamOrderAndTokens(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db)
	assert.Equal(t, ResumeToken{Seq: 1}, cs.ResumeToken(), "a new stream starts at the next op")
	commitOps(db, insOp(t, "a", 1, 2, 3), delOp(t, "b", 9), insOp(t, "a", 4))
	evs := drain(t, cs)
	require.Len(t, evs, 5)
	wantIDs := []any{1, 2, 3, 9, 4}
	wantTok := []ResumeToken{{1, 1}, {1, 2}, {2, 0}, {3, 0}, {4, 0}}
	wantSeq := []uint64{1, 1, 1, 2, 3}
	for i, ev := range evs {
		assert.Equal(t, wantIDs[i], evID(t, ev))
		assert.Equal(t, wantTok[i], ev.ID)
		assert.Equal(t, wantSeq[i], ev.ClusterTime)
		assert.Equal(t, csT0, ev.WallTime)
		if i > 0 {
			assert.True(t, evs[i-1].ID.less(ev.ID), "tokens increase")
		}
	}
	assert.Equal(t, OperationInsert, evs[0].OperationType)
	assert.Equal(t, Namespace{Coll: "a"}, evs[0].Ns)
	assert.Equal(t, Document{"_id": 2, "v": 20}, evs[1].FullDocument.Document())
	assert.Equal(t, OperationDelete, evs[3].OperationType)
	assert.Nil(t, evs[3].FullDocument)
	assert.False(t, evs[3].Expired)
	assert.Equal(t, ResumeToken{Seq: 4}, cs.ResumeToken())

	// Resuming after each event goes on with the next one.
	for i, ev := range evs {
		r := watchT(t, db, ChangeStreamOptions{ResumeAfter: &ev.ID})
		got := drain(t, r)
		require.Len(t, got, len(evs)-i-1, "after %s", ev.ID)
		for j, g := range got {
			assert.Equal(t, evs[i+1+j].ID, g.ID)
		}
	}
	// The zero token is the start of history; StartAfter is ResumeAfter.
	r := watchT(t, db, ChangeStreamOptions{StartAfter: &ResumeToken{}})
	assert.Len(t, drain(t, r), 5)
}

func TestChangeStreamResumeTokenText(t *testing.T) {
	for _, tok := range []ResumeToken{{}, {1, 0}, {43, 7}, {1<<64 - 1, 1<<32 - 1}} {
		b, err := tok.MarshalText()
		require.NoError(t, err)
		var back ResumeToken
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, tok, back)
	}
	assert.Equal(t, "43:0", ResumeToken{Seq: 43}.String())
	for _, bad := range []string{"", "43", "43:", ":1", "a:b", "-1:0", "1:4294967296", "1:2:3"} {
		_, err := ParseResumeToken(bad)
		assert.ErrorIs(t, err, ErrInvalidOptions, "%q", bad)
	}
}

func TestChangeStreamFilters(t *testing.T) {
	db := openCS(t)
	all := watchT(t, db)
	expanded := watchT(t, db, ChangeStreamOptions{ShowExpandedEvents: true})
	deletes := watchT(t, db, ChangeStreamOptions{OperationTypes: []OperationType{OperationDelete}})
	idx := watchT(t, db, ChangeStreamOptions{OperationTypes: []OperationType{OperationCreateIndexes}})
	onlyB := watchT(t, db, ChangeStreamOptions{Collections: []string{"b"}})
	collA, err := db.Collection("a").Watch(context.Background(), nil)
	require.NoError(t, err)
	defer collA.Close(context.Background())

	commitOps(db,
		Op{Kind: OpCreateCollection, Collection: "a", Spec: enc(t, Document{"capped": false})},
		insOp(t, "a", 1),
		Op{Kind: OpCreateIndex, Collection: "a", Index: "x_1", Spec: enc(t, Document{"key": Document{"x": 1}, "name": "x_1"})},
		insOp(t, "b", 2),
		delOp(t, "a", 1),
		Op{Kind: OpDropIndex, Collection: "a", Index: "x_1"},
		Op{Kind: OpCollMod, Collection: "a", Index: "x_1", Spec: enc(t, Document{"expireAfterSeconds": 5})},
		Op{Kind: OpDropCollection, Collection: "b"},
		insOp(t, "b", 3),
	)
	types := func(evs []ChangeEvent) (out []string) {
		for _, e := range evs {
			out = append(out, e.Ns.Coll+"."+string(e.OperationType))
		}
		return out
	}
	assert.Equal(t, []string{"a.insert", "b.insert", "a.delete", "b.drop", "b.insert"}, types(drain(t, all)))
	exp := drain(t, expanded)
	assert.Equal(t, []string{"a.create", "a.insert", "a.createIndexes", "b.insert", "a.delete", "a.dropIndexes", "a.modify", "b.drop", "b.insert"}, types(exp))
	assert.Equal(t, "x_1", exp[2].Index)
	assert.Equal(t, Document{"key": Document{"x": 1}, "name": "x_1"}, exp[2].OperationDescription.Document())
	assert.Nil(t, exp[5].OperationDescription)
	assert.Equal(t, "x_1", exp[5].Index)
	assert.Equal(t, Document{"capped": false}, exp[0].OperationDescription.Document())
	assert.Equal(t, []string{"a.delete"}, types(drain(t, deletes)))
	assert.Equal(t, []string{"a.createIndexes"}, types(drain(t, idx)))
	assert.Equal(t, []string{"b.insert", "b.drop", "b.insert"}, types(drain(t, onlyB)))
	assert.Equal(t, []string{"a.insert", "a.delete"}, types(drain(t, collA)))
	// A filtered stream's token moves past the ops it skipped.
	assert.Equal(t, ResumeToken{Seq: 10}, collA.ResumeToken())
}

func TestChangeStreamBadOptions(t *testing.T) {
	db := openCS(t, WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: 16}))
	ctx := context.Background()
	future := ResumeToken{Seq: 5}
	for name, o := range map[string]ChangeStreamOptions{
		"unknown type":      {OperationTypes: []OperationType{"upsert"}},
		"bad collection":    {Collections: []string{"a$b"}},
		"fullDocument":      {FullDocument: "always"},
		"before default":    {FullDocumentBeforeChange: FullDocumentDefault},
		"before lookup":     {FullDocumentBeforeChange: FullDocumentUpdateLookup},
		"negative MaxLag":   {MaxLag: -1},
		"MaxLag > Size":     {MaxLag: 17},
		"both resumes":      {ResumeAfter: &ResumeToken{}, StartAfter: &ResumeToken{}},
		"token ahead":       {ResumeAfter: &future},
		"token ahead index": {ResumeAfter: &ResumeToken{Seq: 1, Index: 1}},
	} {
		_, err := db.Watch(ctx, nil, o)
		assert.ErrorIs(t, err, ErrInvalidOptions, name)
		assert.False(t, db.ops.opsWanted(), "%s: a refused Watch attaches nothing", name)
		assert.Nil(t, db.changeBuf, name)
	}
	_, err := db.Collection("a").Watch(ctx, nil, ChangeStreamOptions{Collections: []string{"b"}})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = db.Collection("a$").Watch(ctx, nil)
	assert.ErrorIs(t, err, ErrInvalidOptions)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = db.Watch(cctx, nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, db.ops.opsWanted())
	_, err = Open(WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: MaxChangeStreamBufferSize + 1}))
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = Open(WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: -1}))
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.Equal(t, 0, int(db.ops.preImages.Load()))
}

func TestChangeStreamFullDocumentAndUpdateDescription(t *testing.T) {
	db := openCS(t)
	plain := watchT(t, db)
	lookup := watchT(t, db, ChangeStreamOptions{FullDocument: FullDocumentUpdateLookup})
	after := enc(t, Document{"_id": 1, "a": Document{"b": 2}, "n": 3, "arr": []any{1, 2, 9}, "new": "x"})
	update := encUpdate(t, Document{
		"$set":    Document{"a.b": 2},
		"$inc":    Document{"n": 1},
		"$unset":  Document{"gone": ""},
		"$push":   Document{"arr": 9},
		"$rename": Document{"old": "new"},
	})
	commitOps(db,
		Op{Kind: OpUpdate, Collection: "c", Docs: []RawDocument{after}, Updates: []RawDocument{update}},
		Op{Kind: OpUpdate, Collection: "c", Docs: []RawDocument{after}}, // no update document kept
		Op{Kind: OpReplace, Collection: "c", Docs: []RawDocument{after}},
	)
	p := drain(t, plain)
	require.Len(t, p, 3)
	assert.Nil(t, p[0].FullDocument, "update events carry no document by default")
	assert.Equal(t, 1, p[0].DocumentKey.ID())
	assert.Equal(t, &UpdateDescription{
		UpdatedFields:   Document{"a.b": 2, "n": 3, "arr": []any{1, 2, 9}, "new": "x"},
		RemovedFields:   []string{"gone", "old"},
		TruncatedArrays: []TruncatedArray{}, // always present, as MongoDB 4.7+ sends it
	}, p[0].UpdateDescription)
	assert.Nil(t, p[1].UpdateDescription)
	assert.Equal(t, OperationReplace, p[2].OperationType)
	assert.Equal(t, after, p[2].FullDocument, "replace events carry the document")
	l := drain(t, lookup)
	require.Len(t, l, 3)
	assert.Equal(t, after, l[0].FullDocument)
	assert.Equal(t, after, l[1].FullDocument)

	d := Document{"x": 1}
	v, ok := valueAtPath(Document{"a": []any{d, 5}}, "a.1")
	assert.True(t, ok)
	assert.Equal(t, 5, v)
	_, ok = valueAtPath(Document{"a": []any{d}}, "a.7")
	assert.False(t, ok)
}

func TestChangeStreamPreImages(t *testing.T) {
	db := openCS(t)
	ctx := context.Background()
	assert.False(t, db.ops.preImagesWanted())
	when, err := db.Watch(ctx, nil, ChangeStreamOptions{FullDocumentBeforeChange: FullDocumentWhenAvailable})
	require.NoError(t, err)
	req, err := db.Watch(ctx, nil, ChangeStreamOptions{FullDocumentBeforeChange: FullDocumentRequired})
	require.NoError(t, err)
	none := watchT(t, db)
	assert.True(t, db.ops.preImagesWanted())
	assert.Equal(t, int32(2), db.ops.preImages.Load())

	before := enc(t, Document{"_id": 1, "v": "old"})
	withPre := delOp(t, "c", 1)
	withPre.Before = []RawDocument{before}
	commitOps(db, withPre, delOp(t, "c", 2))

	w := drain(t, when)
	require.Len(t, w, 2)
	assert.Equal(t, before, w[0].FullDocumentBeforeChange)
	assert.Nil(t, w[1].FullDocumentBeforeChange, "whenAvailable: none kept, none given")
	assert.Nil(t, drain(t, none)[0].FullDocumentBeforeChange, "not asked: not given")

	require.True(t, req.Next(ctx))
	assert.Equal(t, before, req.Event().FullDocumentBeforeChange)
	assert.False(t, req.Next(ctx))
	assert.ErrorIs(t, req.Err(), ErrNoPreImage)
	tok := req.ResumeToken()
	assert.False(t, req.Next(ctx), "a failed stream stays failed")
	assert.Equal(t, ResumeToken{Seq: 2}, tok, "the failed event is not consumed")

	require.NoError(t, when.Close(context.Background()))
	require.NoError(t, when.Close(context.Background()))
	assert.Equal(t, int32(1), db.ops.preImages.Load(), "Close withdraws the request, once")
	require.NoError(t, req.Close(context.Background()))
	assert.False(t, db.ops.preImagesWanted())

	// The buffer option keeps them asked for.
	db2 := openCS(t, WithChangeStreamBuffer(ChangeStreamBufferOptions{PreImages: true}))
	assert.False(t, db2.ops.preImagesWanted(), "asked for when the buffer is attached")
	watchT(t, db2).Close(context.Background())
	assert.True(t, db2.ops.preImagesWanted())
	db3 := openCS(t, WithChangeStreamBuffer(ChangeStreamBufferOptions{PreImages: true, AttachAtOpen: true}))
	assert.True(t, db3.ops.preImagesWanted())
	assert.True(t, db3.ops.opsWanted())
}

// TestChangeStreamPreImageBarrier: Watch with pre-images waits for a write
// that holds its collection's write lock (it may have decided to keep no
// pre-images before the request), so that every op after the stream's
// start has them.
func TestChangeStreamPreImageBarrier(t *testing.T) {
	db := openCS(t)
	c := db.Collection("c")
	_, err := c.InsertOne(context.Background(), Document{"_id": 1})
	require.NoError(t, err)
	st, err := db.state("c", false)
	require.NoError(t, err)
	st.writeMu.Lock() // a write under way
	opened := make(chan *ChangeStream)
	go func() {
		cs, err := db.Watch(context.Background(), nil, ChangeStreamOptions{FullDocumentBeforeChange: FullDocumentRequired})
		assert.NoError(t, err)
		opened <- cs
	}()
	select {
	case <-opened:
		t.Fatal("Watch returned while a write held its collection's lock")
	case <-time.After(20 * time.Millisecond):
	}
	// The write commits an op without pre-images before releasing.
	commitOps(db, delOp(t, "c", 1))
	st.writeMu.Unlock()
	cs := <-opened
	defer cs.Close(context.Background())
	assert.Equal(t, ResumeToken{Seq: db.ops.lastSeq() + 1}, cs.ResumeToken(), "the stream starts after the write")
	assert.False(t, cs.TryNext(context.Background()))
	assert.NoError(t, cs.Err())
}

// TestChangeStreamPreImageBarrierTimeSeries: the same for a time-series
// collection, whose writes decide and commit under its own lock.
func TestChangeStreamPreImageBarrierTimeSeries(t *testing.T) {
	db := openCS(t)
	_, err := db.CreateCollection(context.Background(), "w", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t"}})
	require.NoError(t, err)
	st, err := db.state("w", false)
	require.NoError(t, err)
	require.NotNil(t, st.ts)
	st.ts.mu.Lock() // a time-series write under way
	opened := make(chan *ChangeStream)
	go func() {
		cs, err := db.Watch(context.Background(), nil, ChangeStreamOptions{FullDocumentBeforeChange: FullDocumentRequired})
		assert.NoError(t, err)
		opened <- cs
	}()
	select {
	case <-opened:
		t.Fatal("Watch returned while a time-series write held its collection's lock")
	case <-time.After(20 * time.Millisecond):
	}
	commitOps(db, delOp(t, "w", 1)) // committed without pre-images, before the stream's start
	st.ts.mu.Unlock()
	cs := <-opened
	defer cs.Close(context.Background())
	assert.Equal(t, ResumeToken{Seq: db.ops.lastSeq() + 1}, cs.ResumeToken())
}

func TestChangeStreamExpiredDeletes(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db)
	cut := csT0.Add(-time.Hour)
	exp := delOp(t, "s", 1, 2)
	exp.Kind, exp.Index, exp.Cutoff = OpExpire, "lastSeen_1", cut
	hidden := delOp(t, "s", 3)
	hidden.Expired, hidden.Index, hidden.Cutoff = true, "lastSeen_1", cut
	commitOps(db, exp, hidden, delOp(t, "s", 4))
	evs := drain(t, cs)
	require.Len(t, evs, 4)
	for i, ev := range evs[:3] {
		assert.Equal(t, OperationDelete, ev.OperationType)
		assert.True(t, ev.Expired, "event %d", i)
		assert.Equal(t, "lastSeen_1", ev.Index)
		assert.Equal(t, cut, ev.Cutoff)
	}
	assert.False(t, evs[3].Expired)
	assert.Empty(t, evs[3].Index)
	assert.True(t, evs[3].Cutoff.IsZero())
}

func TestChangeStreamLagWithinWindowResumesWithoutLoss(t *testing.T) {
	db := openCS(t, WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: 8}))
	ctx := context.Background()
	slow := watchT(t, db, ChangeStreamOptions{MaxLag: 3})
	commitOps(db, insOp(t, "c", 1, 2))
	require.True(t, slow.Next(ctx))
	assert.Equal(t, 1, evID(t, slow.Event()))
	commitOps(db, insOp(t, "c", 3), insOp(t, "c", 4), insOp(t, "c", 5))
	// Still within MaxLag: op 1's second event, then ops 2..4 are 3 behind.
	require.True(t, slow.Next(ctx))
	assert.Equal(t, 2, evID(t, slow.Event()))
	commitOps(db, insOp(t, "c", 6))
	assert.False(t, slow.Next(ctx))
	var lag *ChangeStreamLagError
	require.ErrorAs(t, slow.Err(), &lag)
	assert.ErrorIs(t, slow.Err(), ErrChangeStreamLagged)
	assert.NotErrorIs(t, slow.Err(), ErrChangeStreamHistoryLost)
	assert.False(t, lag.Lost)
	assert.Equal(t, ResumeToken{Seq: 2}, lag.Resume)
	assert.Equal(t, uint64(4), lag.Behind)
	assert.Equal(t, lag.Resume, slow.ResumeToken())
	assert.False(t, slow.Next(ctx), "a lagged stream stays ended")

	// Resumed from the error's token (within the window): nothing lost.
	again := watchT(t, db, ChangeStreamOptions{ResumeAfter: &lag.Resume})
	var got []any
	for _, ev := range drain(t, again) {
		got = append(got, evID(t, ev))
	}
	assert.Equal(t, []any{3, 4, 5, 6}, got)
}

func TestChangeStreamHistoryLost(t *testing.T) {
	db := openCS(t, WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: 4}))
	ctx := context.Background()
	slow := watchT(t, db)
	for i := range 4 {
		commitOps(db, insOp(t, "c", i))
	}
	require.True(t, slow.Next(ctx), "4 ops behind a buffer of 4: all retained")
	tok := slow.ResumeToken()
	commitOps(db, insOp(t, "c", 4), insOp(t, "c", 5))
	assert.False(t, slow.Next(ctx))
	var lag *ChangeStreamLagError
	require.ErrorAs(t, slow.Err(), &lag)
	assert.True(t, lag.Lost)
	assert.ErrorIs(t, slow.Err(), ErrChangeStreamLagged)
	assert.ErrorIs(t, slow.Err(), ErrChangeStreamHistoryLost)
	assert.Equal(t, tok, lag.Resume)
	_, err := db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: &lag.Resume})
	assert.ErrorIs(t, err, ErrChangeStreamHistoryLost)
	_, err = db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: &ResumeToken{}})
	assert.ErrorIs(t, err, ErrChangeStreamHistoryLost, "the start of history is gone too")
	oldest := ResumeToken{Seq: 3}
	r := watchT(t, db, ChangeStreamOptions{ResumeAfter: &oldest})
	assert.Len(t, drain(t, r), 4, "the oldest op retained")

	// Before any buffer: a token before the committer's next op was never
	// held; the next op's token is fine.
	db2 := openCS(t)
	db2.ops.commit([]Op{insOp(t, "c", 1)}) // as if another sink had numbered it
	_, err = db2.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: &ResumeToken{Seq: 1}})
	assert.ErrorIs(t, err, ErrChangeStreamHistoryLost)
	assert.Nil(t, db2.changeBuf)
	watchT(t, db2, ChangeStreamOptions{ResumeAfter: &ResumeToken{Seq: 2}})
}

func TestChangeStreamAttachAtOpenFromFirstWrite(t *testing.T) {
	db := openCS(t, WithChangeStreamBuffer(ChangeStreamBufferOptions{AttachAtOpen: true}))
	require.True(t, db.ops.opsWanted())
	commitOps(db, insOp(t, "c", 1), insOp(t, "c", 2))
	cs := watchT(t, db, ChangeStreamOptions{ResumeAfter: &ResumeToken{}})
	assert.Len(t, drain(t, cs), 2)
	late := watchT(t, db)
	assert.Empty(t, drain(t, late), "without ResumeAfter a stream starts at the next write")
}

func TestChangeStreamWaitsAndWakes(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db)
	ctx := context.Background()
	got := make(chan any)
	go func() {
		for cs.Next(ctx) {
			got <- cs.Event().DocumentKey.ID()
		}
		close(got)
	}()
	for i := range 50 {
		commitOps(db, insOp(t, "c", i))
		assert.Equal(t, i, <-got)
	}
	require.NoError(t, db.Close())
	_, open := <-got
	assert.False(t, open, "Close ends a waiting Next")
	assert.ErrorIs(t, cs.Err(), ErrClosed)
	assert.False(t, cs.Next(ctx))
	_, err := db.Watch(ctx, nil)
	assert.ErrorIs(t, err, ErrClosed)
}

func TestChangeStreamCloseAndContext(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- cs.Next(ctx) }()
	cancel()
	assert.False(t, <-done)
	assert.ErrorIs(t, cs.Err(), context.Canceled)
	// The stream keeps its place: a later Next goes on.
	commitOps(db, insOp(t, "c", 1))
	require.True(t, cs.Next(context.Background()))
	assert.NoError(t, cs.Err())
	assert.Equal(t, 1, evID(t, cs.Event()))

	tctx, tcancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer tcancel()
	assert.False(t, cs.Next(tctx))
	assert.ErrorIs(t, cs.Err(), context.DeadlineExceeded)

	go func() { done <- cs.Next(context.Background()) }()
	require.NoError(t, cs.Close(context.Background()))
	assert.False(t, <-done, "Close from another goroutine ends a waiting Next")
	assert.NoError(t, cs.Err())
	commitOps(db, insOp(t, "c", 2))
	assert.False(t, cs.Next(context.Background()), "a closed stream returns nothing more")
	assert.Equal(t, ChangeEvent{}, cs.Event())
	assert.ErrorIs(t, cs.Decode(&Document{}), ErrNotFound)
}

func TestChangeStreamTryNext(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db)
	ctx := context.Background()
	assert.False(t, cs.TryNext(ctx))
	assert.NoError(t, cs.Err())
	commitOps(db, insOp(t, "c", 1))
	assert.True(t, cs.TryNext(ctx))
	assert.False(t, cs.TryNext(ctx))
	assert.NoError(t, cs.Err())
}

// TestChangeStreamWritersNeverWait: a stream that never reads holds back
// no commit, and the commit's hand-off to the buffer allocates nothing.
func TestChangeStreamWritersNeverWait(t *testing.T) {
	db := openCS(t, WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: 64}))
	idle := watchT(t, db)
	ops := make([]Op, 10*64)
	for i := range ops {
		ops[i] = insOp(t, "c", i)
	}
	commitOps(db, ops...)
	assert.False(t, idle.Next(context.Background()))
	assert.ErrorIs(t, idle.Err(), ErrChangeStreamHistoryLost)

	// Each commit gets ops of its own, as writes do (the buffer keeps
	// pointers to them).
	fresh := make([]Op, 1100)
	for i := range fresh {
		fresh[i] = insOp(t, "c", i)
	}
	next := 0
	commitNext := func() { db.ops.commit(fresh[next : next+1 : next+1]); next++ }
	allocs := testing.AllocsPerRun(1000, commitNext)
	assert.Zero(t, allocs, "commit with a change-stream buffer attached")

	// With a stream waiting, the commit closes its wake channel: still no
	// allocation by the writer.
	waiter := watchT(t, db)
	got := make(chan bool)
	go func() { got <- waiter.Next(context.Background()) }()
	for !db.changeBuf.waiting.Load() {
		time.Sleep(time.Millisecond)
	}
	allocs = testing.AllocsPerRun(1, commitNext)
	assert.True(t, <-got)
	assert.Zero(t, allocs)
}

func TestChangeStreamDecode(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db, ChangeStreamOptions{FullDocumentBeforeChange: FullDocumentWhenAvailable})
	up := Op{Kind: OpUpdate, Collection: "users", Time: csT0,
		Docs:    []RawDocument{enc(t, Document{"_id": "ada", "n": 2})},
		Updates: []RawDocument{encUpdate(t, Document{"$inc": Document{"n": 1}})},
		Before:  []RawDocument{enc(t, Document{"_id": "ada", "n": 1})},
	}
	commitOps(db, up)
	require.True(t, cs.Next(context.Background()))
	type user struct {
		ID string `bson:"_id"`
		N  int    `bson:"n"`
	}
	var ev struct {
		ID struct {
			Data string `bson:"_data"`
		} `bson:"_id"`
		OperationType string    `bson:"operationType"`
		ClusterTime   uint64    `bson:"clusterTime"`
		WallTime      time.Time `bson:"wallTime"`
		Ns            struct {
			Coll string `bson:"coll"`
		} `bson:"ns"`
		DocumentKey       Document `bson:"documentKey"`
		Before            user     `bson:"fullDocumentBeforeChange"`
		UpdateDescription struct {
			UpdatedFields Document `bson:"updatedFields"`
			RemovedFields []string `bson:"removedFields"`
		} `bson:"updateDescription"`
	}
	require.NoError(t, cs.Decode(&ev))
	assert.Equal(t, "2:0", ev.ID.Data)
	assert.Equal(t, "update", ev.OperationType)
	assert.Equal(t, uint64(1), ev.ClusterTime)
	assert.Equal(t, csT0, ev.WallTime)
	assert.Equal(t, "users", ev.Ns.Coll)
	assert.Equal(t, Document{"_id": "ada"}, ev.DocumentKey)
	assert.Equal(t, user{"ada", 1}, ev.Before)
	assert.Equal(t, Document{"n": 2}, ev.UpdateDescription.UpdatedFields)
	assert.Empty(t, ev.UpdateDescription.RemovedFields)
	var d Document
	require.NoError(t, cs.Decode(&d))
	assert.Equal(t, "update", d["operationType"])
	var wrong struct {
		OperationType int `bson:"operationType"`
	}
	assert.ErrorIs(t, cs.Decode(&wrong), ErrDecode)
}

func TestChangeEventJSON(t *testing.T) {
	db := openCS(t)
	cs := watchT(t, db, ChangeStreamOptions{ShowExpandedEvents: true, FullDocument: FullDocumentUpdateLookup})
	oid := ObjectID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	exp := delOp(t, "s", 7)
	exp.Kind, exp.Index, exp.Cutoff = OpExpire, "lastSeen_1", csT0.Add(-time.Second)
	commitOps(db,
		Op{Kind: OpInsert, Collection: "s", Time: csT0, Docs: []RawDocument{enc(t, Document{
			"_id": oid, "z": 1.0, "a": "q\"\n<\u2028", "when": csT0.Add(123 * time.Nanosecond),
			"bin": []byte{0xff, 0}, "arr": []int{1, 2}, "nan": 0.0, "old": time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC),
		})}},
		Op{Kind: OpUpdate, Collection: "s", Time: csT0, Docs: []RawDocument{enc(t, Document{"_id": 1, "n": int64(5)})},
			Updates: []RawDocument{encUpdate(t, Document{"$set": Document{"n": int64(5)}, "$unset": Document{"x": ""}})}},
		exp,
		Op{Kind: OpCreateIndex, Collection: "s", Time: csT0, Index: "lastSeen_1", Spec: enc(t, Document{"name": "lastSeen_1"})},
	)
	evs := drain(t, cs)
	require.Len(t, evs, 4)
	want := []string{
		`{"_id":{"_data":"2:0"},"operationType":"insert","clusterTime":1,"wallTime":{"$date":"2026-01-02T03:04:05Z"},"ns":{"coll":"s"},` +
			`"documentKey":{"_id":{"$oid":"0102030405060708090a0b0c"}},"fullDocument":{"_id":{"$oid":"0102030405060708090a0b0c"},"a":"q\"\n<\u2028",` +
			`"arr":[1,2],"bin":{"$binary":{"base64":"/wA=","subType":"00"}},"nan":0.0,"old":{"$date":{"$numberLong":"-31536000000"}},` +
			`"when":{"$date":"2026-01-02T03:04:05Z"},"z":1.0}}`, // to the millisecond, as Extended JSON writes dates
		`{"_id":{"_data":"3:0"},"operationType":"update","clusterTime":2,"wallTime":{"$date":"2026-01-02T03:04:05Z"},"ns":{"coll":"s"},` +
			`"documentKey":{"_id":1},"updateDescription":{"updatedFields":{"n":5},"removedFields":["x"],"truncatedArrays":[]},"fullDocument":{"_id":1,"n":5}}`,
		`{"_id":{"_data":"4:0"},"operationType":"delete","clusterTime":3,"wallTime":{"$date":"2026-01-02T03:04:05Z"},"ns":{"coll":"s"},` +
			`"documentKey":{"_id":7},"expired":true,"index":"lastSeen_1","cutoff":{"$date":"2026-01-02T03:04:04Z"}}`,
		`{"_id":{"_data":"5:0"},"operationType":"createIndexes","clusterTime":4,"wallTime":{"$date":"2026-01-02T03:04:05Z"},"ns":{"coll":"s"},` +
			`"operationDescription":{"name":"lastSeen_1"},"index":"lastSeen_1"}`,
	}
	for i, ev := range evs {
		b, err := ev.MarshalJSON()
		require.NoError(t, err)
		// A document stored from a map keeps the map's (unordered) fields
		// in the order they were written: compare as JSON.
		assert.JSONEq(t, want[i], string(b))
		assert.Equal(t, string(b), string(ev.AppendJSON(nil)))
		// encoding/json accepts it (and re-escapes <, > and & for HTML).
		viaJSON, err := json.Marshal(ev)
		require.NoError(t, err)
		var a, b2 any
		require.NoError(t, json.Unmarshal(b, &a))
		require.NoError(t, json.Unmarshal(viaJSON, &b2))
		assert.Equal(t, a, b2)
	}
	var round map[string]any
	b, _ := json.Marshal(evs[0])
	require.NoError(t, json.Unmarshal(b, &round))
	assert.Equal(t, "q\"\n<\u2028", round["fullDocument"].(map[string]any)["a"])
	b, err := json.Marshal(RawDocument(nil))
	require.NoError(t, err)
	assert.Equal(t, "null", string(b))
}

func TestChangeStreamClosedDBFirst(t *testing.T) {
	db := openCS(t)
	require.NoError(t, db.Close())
	_, err := db.Watch(context.Background(), nil, ChangeStreamOptions{OperationTypes: []OperationType{"bogus"}})
	assert.ErrorIs(t, err, ErrClosed, "a closed DB answers ErrClosed before checking options")
	_, err = db.Collection("a").Watch(context.Background(), nil)
	assert.ErrorIs(t, err, ErrClosed)
	assert.False(t, errors.Is(err, ErrInvalidOptions))
}

// TestChangeStreamPreImageBarrierWithDrops: opening streams that ask for
// pre-images while collections are dropped and written (DropCollection
// takes a collection's write lock before the DB's) never deadlocks, and
// every stream sees pre-images for the ops after its start.
func TestChangeStreamPreImageBarrierWithDrops(t *testing.T) {
	db := openCS(t)
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := db.Collection(fmt.Sprintf("c%d", w))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = c.InsertOne(context.Background(), Document{"_id": i % 5})
				_, _ = c.DeleteOne(context.Background(), Document{"_id": (i + 2) % 5})
				if i%7 == 0 {
					_ = db.DropCollection(context.Background(), c.Name())
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			cs, err := db.Watch(ctx, nil, ChangeStreamOptions{FullDocumentBeforeChange: FullDocumentRequired, OperationTypes: []OperationType{OperationDelete}})
			if !assert.NoError(t, err) {
				return
			}
			for range 3 {
				if !cs.Next(ctx) {
					break
				}
				assert.NotNil(t, cs.Event().FullDocumentBeforeChange)
			}
			assert.NoError(t, cs.Err())
			cs.Close(context.Background())
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Error("Watch with pre-images did not return: deadlock")
	}
	close(stop)
	wg.Wait()
	<-done
	assert.False(t, db.ops.preImagesWanted(), "every stream withdrew its request")
}

// TestChangeStreamBatchSize: a waiting Next with BatchSize n is woken by
// the commit that makes n ops ready, not before; or, once MaxAwaitTime
// has passed on the DB's clock, with what is ready, then by the next
// commit.
func TestChangeStreamBatchSize(t *testing.T) {
	clk := ttltest.NewClock(csT0)
	db := openCS(t, WithClock(clk), WithChangeStreamBuffer(ChangeStreamBufferOptions{Size: 64}))
	cs := watchT(t, db, ChangeStreamOptions{BatchSize: 4, MaxAwaitTime: time.Second})
	ctx := context.Background()
	got := make(chan any, 16)
	go func() {
		for cs.Next(ctx) {
			got <- cs.Event().DocumentKey.ID()
		}
		close(got)
	}()
	// waitingFor returns once Next waits to be woken by op seq at the
	// latest (a stream that left an earlier wait may leave a lower target
	// behind: a spurious wake-up, harmless) and, if armedBefore >= 0, has
	// armed a timer since the clock had armed armedBefore (the disabled
	// monitor's timer counts among the clock's waiters, so Waiters cannot
	// tell).
	waitingFor := func(seq uint64, armedBefore int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !db.changeBuf.waiting.Load() || db.changeBuf.wakeAt.Load() > seq || armedBefore >= 0 && clk.Armed() <= armedBefore {
			require.True(t, time.Now().Before(deadline), "Next never waited for op %d", seq)
			time.Sleep(100 * time.Microsecond)
		}
	}
	waitingFor(4, -1) // a batch of 4: ops 1 to 4
	for i := range 3 {
		commitOps(db, insOp(t, "c", i))
		require.True(t, db.changeBuf.waiting.Load(), "commit %d woke the stream before its batch filled", i)
		assert.Len(t, got, 0)
	}
	commitOps(db, insOp(t, "c", 3))
	for i := range 4 {
		assert.Equal(t, i, <-got)
	}
	// A batch that does not fill: the timer delivers what is ready.
	waitingFor(8, -1)
	commitOps(db, insOp(t, "c", 4))
	assert.Len(t, got, 0)
	armed := clk.Armed()
	clk.Advance(time.Second)
	assert.Equal(t, 4, <-got)
	// After an expiry with nothing ready, the next op comes at once.
	waitingFor(9, armed)
	clk.Advance(time.Second)
	waitingFor(6, -1)
	commitOps(db, insOp(t, "c", 5))
	assert.Equal(t, 5, <-got)
	require.NoError(t, cs.Close(context.Background()))
	_, open := <-got
	assert.False(t, open)

	_, err := db.Watch(ctx, nil, ChangeStreamOptions{BatchSize: 65})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = db.Watch(ctx, nil, ChangeStreamOptions{BatchSize: -1})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = db.Watch(ctx, nil, ChangeStreamOptions{BatchSize: 2, MaxAwaitTime: -time.Second})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}
