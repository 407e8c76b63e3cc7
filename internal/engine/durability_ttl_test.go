package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// hookLog records what an expire hook was offered: each document's
// delivery identity (_id, version).
type hookLog struct {
	mu  sync.Mutex
	ids []delivery
	// then runs after each batch is recorded (nil: nothing).
	then func()
}

type delivery struct {
	id  any
	ver uint64
}

func (h *hookLog) hook(_ context.Context, b ExpiredBatch) error {
	h.mu.Lock()
	for i, d := range b.Docs {
		h.ids = append(h.ids, delivery{d["_id"], b.Versions[i]})
	}
	then := h.then
	h.mu.Unlock()
	if then != nil {
		then()
	}
	return nil
}

func (h *hookLog) take() []delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.ids
	h.ids = nil
	return out
}

// TestTTLAcrossRestart: dates survive a restart; a document that expired
// while the DB was down is never served (HideExpired) after Open, and the
// first pass deletes it with its hooks and counts it in the (restarted)
// metrics; the deletion is logged, so the next Open does not bring it
// back.
func TestTTLAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir, WithHideExpired())
	c := db.Collection("sessions")
	ctx := context.Background()
	_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("lastSeen")}, ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{
		{"_id": "old", "lastSeen": opEpoch},
		{"_id": "new", "lastSeen": opEpoch.Add(2 * time.Hour)},
	})

	require.NoError(t, err)
	atNew, _, err := c.ExpiresAt(context.Background(), "new")
	require.NoError(t, err)
	verOld := versionOf(t, db, "sessions", "old")
	require.Zero(t, db.Metrics().TTL.Passes)
	_, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, db.Metrics().TTL.Passes)
	require.NoError(t, db.Close())

	// Down for 90 minutes: "old" expired meanwhile.
	clk.Advance(90 * time.Minute)
	hooks := &hookLog{}
	db = mustOpenDurable(t, clk, dir, WithHideExpired(), WithOnExpire(hooks.hook))
	c = db.Collection("sessions")
	err = c.FindOne(context.Background(), Document{"_id": "old"}).Err()
	require.ErrorIs(t, err, ErrNotFound, "an expired document is never served after Open")
	n, err := c.CountDocuments(ctx, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	at, expires, err := c.ExpiresAt(context.Background(), "new")
	require.NoError(t, err)
	require.True(t, expires)
	require.True(t, atNew.Equal(at), "dates are kept: %v, then %v", atNew, at)
	m := db.Metrics()
	require.Zero(t, m.TTL.Passes, "metrics restart from zero")
	require.Zero(t, m.TTL.DeletedDocuments)

	res, err := db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Deleted)
	require.Equal(t, []delivery{{"old", verOld}}, hooks.take(), "the hook sees it, with the identity it had before the restart")
	m = db.Metrics()
	require.EqualValues(t, 1, m.TTL.Passes)
	require.EqualValues(t, 1, m.TTL.DeletedDocuments)
	require.NoError(t, db.Close())

	db = mustOpenDurable(t, clk, dir, WithHideExpired(), WithOnExpire(hooks.hook))
	defer db.Close()
	n, err = db.Collection("sessions").EstimatedDocumentCount(context.Background()) // counts hidden expired documents too
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the deleted document does not come back: its TTL delete is in the log")
	_, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.Empty(t, hooks.take())
}

// versionOf returns the record version of the document with _id id.
func versionOf(t testing.TB, db *DB, coll string, id any) uint64 {
	t.Helper()
	s, _ := db.state(coll, false)
	require.NotNil(t, s)
	k, err := appendIDKey(nil, id)
	require.NoError(t, err)
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec, ok := s.lookup(k)
	require.True(t, ok)
	return rec.ver
}

// TestHookAtLeastOnceAcrossCrash: the process dies after a document's
// expire hook ran and before its deletion reached the log; after the
// restart the hook is offered the document again, with the same delivery
// identity.
func TestHookAtLeastOnceAcrossCrash(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncAlways, SyncEverySecond} {
		t.Run(pol.String(), func(t *testing.T) {
			m := vfs.NewFaultFS()
			clk := ttltest.NewClock(opEpoch)
			db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(pol))
			c := db.Collection("s")
			ctx := context.Background()
			_, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(60)})
			require.NoError(t, err)
			for i := range 3 {
				_, err = c.InsertOne(context.Background(), Document{"_id": i, "at": opEpoch})
				require.NoError(t, err)
			}
			require.NoError(t, db.Snapshot(context.Background())) // on disk, whatever the policy
			want := map[any]uint64{}
			for i := range 3 {
				want[i] = versionOf(t, db, "s", i)
			}
			require.NoError(t, db.Close())

			clk.Advance(time.Hour)
			first := &hookLog{}
			first.then = m.Crash // the hook ran; the process dies before the delete is logged
			db = mustOpenDurable(t, clk, "d", withFS(m), WithSync(pol), WithOnExpire(first.hook))
			_, _ = db.RunTTLPass(ctx)
			_ = db.Close()
			got := first.take()
			require.Len(t, got, 3)

			second := &hookLog{}
			db = mustOpenDurable(t, clk, "d", withFS(m), WithSync(pol), WithOnExpire(second.hook))
			defer db.Close()
			res, err := db.RunTTLPass(ctx)
			require.NoError(t, err)
			require.Equal(t, 3, res.Deleted)
			again := second.take()
			require.ElementsMatch(t, got, again, "offered again, with the same identity")
			for _, d := range again {
				require.Equal(t, want[d.id], d.ver)
			}
		})
	}
}

// TestTimeSeriesExpiryReplayNotCounted: reopening a durable DB replays the
// TTL deletions of a time-series collection from its log as history: the
// measurements stay gone, and the new DB's metrics count none of them
// (DeletedMeasurements starts from zero, as DeletedDocuments does).
func TestTimeSeriesExpiryReplayNotCounted(t *testing.T) {
	dir := t.TempDir()
	clk := ttltest.NewClock(opEpoch)
	ctx := context.Background()
	db := mustOpenDurable(t, clk, dir)
	c, err := db.CreateCollection(context.Background(), "ts", CollectionOptions{
		TimeSeries:         &TimeSeriesOptions{TimeField: "t", BucketMaxSpanSeconds: 60, BucketRoundingSeconds: 60},
		ExpireAfterSeconds: Seconds(10),
	})

	require.NoError(t, err)
	_, err = c.InsertMany(context.Background(), []Document{{"_id": 1, "t": opEpoch}, {"_id": 2, "t": opEpoch.Add(time.Second)}, {"_id": 3, "t": opEpoch.Add(time.Hour)}})
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	_, err = db.RunTTLPass(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, db.Metrics().TTL.DeletedMeasurements)
	require.NoError(t, db.Close())

	db = mustOpenDurable(t, clk, dir)
	defer db.Close()
	require.Equal(t, []any{3}, findIDs(t, db.Collection("ts"), nil), "the expired measurements stay gone")
	require.Zero(t, db.Metrics().TTL.DeletedMeasurements, "a replayed deletion is history, not a deletion of this DB")
}
