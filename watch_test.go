package ttldb_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/internal/testutil"
	"github.com/ttldb/ttldb/ttltest"
)

// seenEvent is what a test keeps of an event.
type seenEvent struct {
	ev ttldb.ChangeEvent
	// op and idx place the event: its op's Seq and its index in the op.
	op  uint64
	idx int
	// last marks the op's last event (its ID is {op+1, 0}).
	last bool
}

func place(ev ttldb.ChangeEvent) seenEvent {
	s := seenEvent{ev: ev, op: ev.ClusterTime}
	if ev.ID.Seq == ev.ClusterTime {
		s.idx = int(ev.ID.Index) - 1
	} else {
		s.last = true
		s.idx = -1 // known from the events before it
	}
	return s
}

func (s seenEvent) key() string {
	return fmt.Sprintf("%d/%s/%s/%v", s.op, s.ev.OperationType, s.ev.Ns.Coll, s.ev.DocumentKey.ID())
}

// readUntilEnd reads events until the insert of {_id: "end"} into "a".
func readUntilEnd(t *testing.T, cs *ttldb.ChangeStream) ([]seenEvent, error) {
	var out []seenEvent
	ctx := context.Background()
	for cs.Next(ctx) {
		ev := cs.Event()
		out = append(out, place(ev))
		if ev.Ns.Coll == "a" && ev.OperationType == ttldb.OperationInsert && ev.DocumentKey.ID() == "end" {
			return out, nil
		}
	}
	return out, cs.Err()
}

// Rule: every watcher sees every event exactly once, in commit order,
// across concurrent writers on several collections and the TTL monitor's
// passes; the events describe the writes (replaying them rebuilds the
// DB's contents, pre-images included); a slow watcher ends with
// ErrChangeStreamLagged and resumes from its token without loss.
func TestWatchConcurrentWritersAndMonitor(t *testing.T) {
	seed := testutil.Seed(t)
	clk := ttltest.NewClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Interval: time.Minute, BatchSize: 8}))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	colls := []string{"a", "b", "c"}
	_, err = db.CreateCollection(context.Background(), "c", ttldb.CollectionOptions{HideExpired: true})
	require.NoError(t, err)
	ttl := ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)}

	// The watchers open before any write they must see.
	all, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{ShowExpandedEvents: true})
	require.NoError(t, err)
	images, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{FullDocument: ttldb.FullDocumentUpdateLookup, FullDocumentBeforeChange: ttldb.FullDocumentRequired})
	require.NoError(t, err)
	onlyA, err := db.Collection("a").Watch(ctx, nil)
	require.NoError(t, err)
	slow, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{MaxLag: 32})
	require.NoError(t, err)
	for _, cs := range []*ttldb.ChangeStream{all, images, onlyA, slow} {
		defer cs.Close(context.Background())
	}
	for _, name := range colls {
		_, err := db.Collection(name).CreateIndex(ctx, ttl)
		require.NoError(t, err)
	}

	type result struct {
		evs []seenEvent
		err error
	}
	var readers sync.WaitGroup
	results := make([]result, 3)
	for i, cs := range []*ttldb.ChangeStream{all, images, onlyA} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			results[i].evs, results[i].err = readUntilEnd(t, cs)
		}()
	}

	// The monitor: a pass every clock minute while the writers run.
	stop := make(chan struct{})
	var driver sync.WaitGroup
	driver.Add(1)
	go func() {
		defer driver.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			if clk.BlockUntilWaitersContext(wctx, 1) == nil {
				clk.Advance(time.Minute)
			}
			cancel()
		}
	}()

	const writers, perWriter, idSpace = 3, 1500, 150
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)+1))
			for range perWriter {
				c := db.Collection(colls[rng.IntN(len(colls))])
				id := rng.IntN(idSpace)
				at := clk.Now().Add(-time.Duration(rng.IntN(120)) * time.Second)
				var err error
				switch r := rng.IntN(100); {
				case r < 30:
					_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": id, "at": at, "w": w})
				case r < 38:
					_, err = c.InsertMany(context.Background(), []ttldb.Document{{"_id": id, "at": at}, {"_id": id + idSpace, "at": at}})
				case r < 55:
					_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": id}, ttldb.Document{"$inc": ttldb.Document{"n": 1}, "$set": ttldb.Document{"w": w}})
				case r < 65:
					_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": id}, ttldb.Document{"$currentDate": ttldb.Document{"at": true}, "$unset": ttldb.Document{"w": ""}}, ttldb.UpdateOptions{Upsert: true})
				case r < 72:
					_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": id}, ttldb.Document{"at": at, "r": rng.IntN(9)})
				case r < 82:
					_, err = c.DeleteOne(context.Background(), ttldb.Document{"_id": id})
				case r < 86:
					_, err = c.DeleteMany(ctx, ttldb.Document{"_id": ttldb.Document{"$gte": id, "$lt": id + 5}})
				case r < 90:
					_, err = c.UpdateMany(ctx, ttldb.Document{"_id": ttldb.Document{"$lt": id}}, ttldb.Document{"$inc": ttldb.Document{"m": 1}})
				case r < 95:
					err = c.FindOneAndUpdate(context.Background(), ttldb.Document{"_id": id}, ttldb.Document{"$set": ttldb.Document{"f": true}}).Err()
				case r < 99:
					err = c.FindOneAndDelete(context.Background(), ttldb.Document{"_id": id}).Err()
				default:
					if err = db.DropCollection(context.Background(), c.Name()); err == nil {
						_, err = c.CreateIndex(ctx, ttl)
					}
				}
				if err != nil && !errors.Is(err, ttldb.ErrDuplicateKey) && !errors.Is(err, ttldb.ErrNotFound) {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	driver.Wait()
	_, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	_, err = db.Collection("a").InsertOne(context.Background(), ttldb.Document{"_id": "end"})
	require.NoError(t, err)
	readers.Wait()
	for i, r := range results {
		require.NoError(t, r.err, "watcher %d", i)
	}
	wantAll, wantImages, wantA := results[0].evs, results[1].evs, results[2].evs
	metrics := db.Metrics().TTL
	t.Logf("%d events, %d TTL deletions in %d passes", len(wantAll), metrics.DeletedDocuments, metrics.Passes)
	require.Greater(t, metrics.DeletedDocuments, int64(0), "the monitor deleted documents during the run")

	// Exactly once, in order: with every type shown and no filter, the
	// events are ops 1, 2, 3... each with its events 0..n-1.
	var prevOp uint64
	next, ended := 0, true
	expired := 0
	for i, e := range wantAll {
		if e.op != prevOp {
			require.Equal(t, prevOp+1, e.op, "event %d: op %d follows op %d", i, e.op, prevOp)
			require.True(t, ended, "event %d: op %d did not end", i, prevOp)
			prevOp = e.op
		} else {
			require.False(t, ended, "event %d: op %d goes on after its last event", i, e.op)
		}
		ended = e.last
		if !e.last {
			require.Equal(t, next, e.idx, "event %d of op %d", i, e.op)
			next++
		} else {
			next = 0
		}
		if e.ev.Expired {
			expired++
		}
	}
	assert.True(t, ended, "the last op ended")
	assert.Positive(t, expired, "TTL deletions came as expired deletes")

	// The other watchers see the same events, filtered.
	var dataEvents, aEvents []string
	for _, e := range wantAll {
		switch e.ev.OperationType {
		case ttldb.OperationInsert, ttldb.OperationUpdate, ttldb.OperationReplace, ttldb.OperationDelete, ttldb.OperationDrop:
			dataEvents = append(dataEvents, e.key())
			if e.ev.Ns.Coll == "a" {
				aEvents = append(aEvents, e.key())
			}
		}
	}
	keys := func(evs []seenEvent) (out []string) {
		for _, e := range evs {
			out = append(out, e.key())
		}
		return out
	}
	assert.Equal(t, dataEvents, keys(wantImages))
	assert.Equal(t, aEvents, keys(wantA))

	// Replaying the events with their images rebuilds the DB; every
	// pre-image is the document as the events left it.
	live := map[string]map[any]ttldb.Document{}
	for _, e := range wantImages {
		ev := e.ev
		m := live[ev.Ns.Coll]
		if m == nil {
			m = map[any]ttldb.Document{}
			live[ev.Ns.Coll] = m
		}
		switch ev.OperationType {
		case ttldb.OperationDrop:
			delete(live, ev.Ns.Coll)
			continue
		case ttldb.OperationUpdate, ttldb.OperationReplace, ttldb.OperationDelete:
			require.NotNil(t, ev.FullDocumentBeforeChange, "%s has a pre-image", e.key())
			require.Equal(t, m[ev.DocumentKey.ID()], ev.FullDocumentBeforeChange.Document(), "%s: pre-image", e.key())
		}
		switch ev.OperationType {
		case ttldb.OperationInsert, ttldb.OperationUpdate, ttldb.OperationReplace:
			require.NotNil(t, ev.FullDocument, e.key())
			_, had := m[ev.DocumentKey.ID()]
			require.Equal(t, ev.OperationType != ttldb.OperationInsert, had, "%s", e.key())
			m[ev.DocumentKey.ID()] = ev.FullDocument.Document()
		case ttldb.OperationDelete:
			if ev.Expired {
				at, _ := ev.FullDocumentBeforeChange.Lookup("at")
				th, ok := at.(time.Time)
				require.True(t, ok, "%s: an expired document has a date", e.key())
				require.False(t, th.Add(time.Minute).After(ev.Cutoff), "%s: deleted at its threshold or after", e.key())
			}
			delete(m, ev.DocumentKey.ID())
		}
	}
	for _, name := range colls {
		cur, err := db.Collection(name).Find(ctx, nil)
		require.NoError(t, err)
		var docs []ttldb.Document
		require.NoError(t, cur.All(ctx, &docs))
		got := map[any]ttldb.Document{}
		for _, d := range docs {
			got[d["_id"]] = d
		}
		want := live[name]
		if want == nil {
			want = map[any]ttldb.Document{}
		}
		assert.Equal(t, want, got, "collection %s rebuilt from its events", name)
	}

	// The slow watcher read nothing: it ends with the lag error while its
	// place is still retained, and resuming loses nothing.
	assert.False(t, slow.Next(ctx))
	var lag *ttldb.ChangeStreamLagError
	require.ErrorAs(t, slow.Err(), &lag)
	assert.ErrorIs(t, slow.Err(), ttldb.ErrChangeStreamLagged)
	assert.False(t, lag.Lost)
	resumed, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{ResumeAfter: &lag.Resume})
	require.NoError(t, err)
	defer resumed.Close(context.Background())
	evs, err := readUntilEnd(t, resumed)
	require.NoError(t, err)
	assert.Equal(t, dataEvents, keys(evs), "the resumed stream sees every event")
}

// Rule: a stream whose place the buffer overwrote gets
// ErrChangeStreamHistoryLost (with ErrChangeStreamLagged), and so does a
// resume from a token older than the buffer's window; a stream resumed
// within the window after a restart misses nothing.
func TestWatchHistoryLostAndRestart(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("c")
	ctx := context.Background()
	_, err := ttldb.Open(ttldb.WithChangeStreamBuffer(ttldb.ChangeStreamBufferOptions{Size: -5}))
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)

	small, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}),
		ttldb.WithChangeStreamBuffer(ttldb.ChangeStreamBufferOptions{Size: 16}))
	require.NoError(t, err)
	defer small.Close()
	sc := small.Collection("c")
	cs, err := small.Watch(ctx, nil)
	require.NoError(t, err)
	defer cs.Close(context.Background())
	_, err = sc.InsertOne(context.Background(), ttldb.Document{"_id": 0})
	require.NoError(t, err)
	require.True(t, cs.Next(ctx))
	last := cs.ResumeToken()
	for i := 1; i <= 40; i++ {
		_, err = sc.InsertOne(context.Background(), ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	assert.False(t, cs.Next(ctx))
	assert.ErrorIs(t, cs.Err(), ttldb.ErrChangeStreamHistoryLost)
	assert.ErrorIs(t, cs.Err(), ttldb.ErrChangeStreamLagged)
	var lag *ttldb.ChangeStreamLagError
	require.ErrorAs(t, cs.Err(), &lag)
	assert.Equal(t, last, lag.Resume)
	_, err = small.Watch(ctx, nil, ttldb.ChangeStreamOptions{ResumeAfter: &lag.Resume})
	assert.ErrorIs(t, err, ttldb.ErrChangeStreamHistoryLost)

	// A watcher restarted within the window resumes where it stopped.
	w, err := c.Watch(ctx, nil)
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []ttldb.Document{{"_id": 1}, {"_id": 2}, {"_id": 3}})
	require.NoError(t, err)
	require.True(t, w.Next(ctx))
	require.True(t, w.Next(ctx))
	tok := w.ResumeToken()
	require.NoError(t, w.Close(context.Background()))
	_, err = c.DeleteOne(context.Background(), ttldb.Document{"_id": 1})
	require.NoError(t, err)
	w2, err := c.Watch(ctx, nil, ttldb.ChangeStreamOptions{ResumeAfter: &tok})
	require.NoError(t, err)
	defer w2.Close(context.Background())
	var got []string
	for w2.TryNext(ctx) {
		ev := w2.Event()
		got = append(got, fmt.Sprintf("%s %v", ev.OperationType, ev.DocumentKey.ID()))
	}
	require.NoError(t, w2.Err())
	assert.Equal(t, []string{"insert 3", "delete 1"}, got)
}

// Rule: a stream resumed from a lag error's token, with the same MaxLag,
// makes progress: the backlog it resumes into is not held against it, so
// that resuming as the error says delivers every event, once and in
// order, even with no further write.
func TestChangeStreamResumeAfterLagMakesProgress(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	c := db.Collection("c")
	opts := ttldb.ChangeStreamOptions{MaxLag: 8}
	cs, err := c.Watch(ctx, nil, opts)
	require.NoError(t, err)
	const n = 100
	for i := range n {
		_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	require.False(t, cs.Next(ctx), "100 ops behind a MaxLag of 8")
	var lag *ttldb.ChangeStreamLagError
	require.ErrorAs(t, cs.Err(), &lag)
	require.False(t, lag.Lost)
	require.NoError(t, cs.Close(context.Background()))

	var got []any
	resumes := 0
	for tok := lag.Resume; len(got) < n && resumes < 50; resumes++ {
		opts.ResumeAfter = &tok
		again, err := c.Watch(ctx, nil, opts)
		require.NoError(t, err, "resume %d from %s", resumes, tok)
		for again.TryNext(ctx) {
			got = append(got, again.Event().DocumentKey.ID())
		}
		tok = again.ResumeToken()
		if err := again.Err(); err != nil {
			require.ErrorAs(t, err, &lag)
			require.False(t, lag.Lost, "resume %d", resumes)
			tok = lag.Resume
		}
		require.NoError(t, again.Close(context.Background()))
	}
	want := make([]any, n)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, got, "after %d resumes", resumes)
}

// Rule: a resumed stream still ends lagged when more than MaxLag ops are
// committed after it resumed and it does not read them, but only after
// reading at least the op it resumed at, so that each resume from the
// error's token moves on.
func TestChangeStreamResumeLagCountsFromResume(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	c := db.Collection("c")
	insert := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": i})
			require.NoError(t, err)
		}
	}
	first, err := c.Watch(ctx, nil, ttldb.ChangeStreamOptions{MaxLag: 4})
	require.NoError(t, err)
	defer first.Close(context.Background())
	insert(0, 20)
	require.False(t, first.Next(ctx))
	var lag *ttldb.ChangeStreamLagError
	require.ErrorAs(t, first.Err(), &lag)
	tok := lag.Resume

	// Resumed, then 4 more ops: within MaxLag of the resume, the stream
	// reads the backlog and the new ops alike.
	again, err := c.Watch(ctx, nil, ttldb.ChangeStreamOptions{MaxLag: 4, ResumeAfter: &tok})
	require.NoError(t, err)
	defer again.Close(context.Background())
	insert(20, 24)
	var got []any
	for again.TryNext(ctx) {
		got = append(got, again.Event().DocumentKey.ID())
	}
	require.NoError(t, again.Err())
	assert.Len(t, got, 24)

	// Resumed, then 10 more ops than MaxLag allows: the stream reads its
	// first op, then ends lagged with a later token.
	third, err := c.Watch(ctx, nil, ttldb.ChangeStreamOptions{MaxLag: 4, ResumeAfter: &tok})
	require.NoError(t, err)
	defer third.Close(context.Background())
	insert(24, 34)
	require.True(t, third.Next(ctx), "a resumed stream reads the op it resumed at")
	assert.Equal(t, 0, third.Event().DocumentKey.ID())
	require.False(t, third.Next(ctx))
	var lag2 *ttldb.ChangeStreamLagError
	require.ErrorAs(t, third.Err(), &lag2)
	assert.Greater(t, lag2.Resume.Seq, tok.Seq, "the error's token is past the one resumed from")
}

// A change stream decodes its event into a struct, and a resume token
// survives its text form: ParseResumeToken(tok.String()) resumes after the
// same event.
func TestChangeStreamDecodeAndTokenText(t *testing.T) {
	ctx := context.Background()
	db, _ := openStore(t)
	c := db.Collection("c")
	cs, err := c.Watch(ctx, nil)
	require.NoError(t, err)
	defer cs.Close(context.Background())
	mustInsert(t, c, ttldb.Document{"_id": 1, "v": "a"}, ttldb.Document{"_id": 2, "v": "b"})
	require.True(t, cs.Next(ctx))
	var ev struct {
		OperationType string         `bson:"operationType"`
		FullDocument  ttldb.Document `bson:"fullDocument"`
	}
	require.NoError(t, cs.Decode(&ev))
	require.Equal(t, "insert", ev.OperationType)
	require.Equal(t, "a", ev.FullDocument["v"])

	tok, err := ttldb.ParseResumeToken(cs.ResumeToken().String())
	require.NoError(t, err)
	require.Equal(t, cs.ResumeToken(), tok)
	resumed, err := c.Watch(ctx, nil, ttldb.ChangeStreamOptions{ResumeAfter: &tok})
	require.NoError(t, err)
	defer resumed.Close(context.Background())
	require.True(t, resumed.Next(ctx))
	require.Equal(t, 2, resumed.Event().DocumentKey.Document()["_id"])
}
