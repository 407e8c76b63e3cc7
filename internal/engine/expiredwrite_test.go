package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openHidden opens a DB with HideExpired, the monitor quiet, and collection
// c with a TTL index (0 s) holding X, expired at t0 + 1 s.
func openHidden(t *testing.T, opts ...Option) (*DB, *Collection) {
	t.Helper()
	db, clk := openMon(t, append([]Option{quiet(MonitorOptions{}), WithHideExpired()}, opts...)...)
	c := ttlColl(t, db, "c", 0)
	_, err := c.InsertOne(context.Background(), Document{"_id": "X", "lastModifiedDate": t0, "email": "x@example.com", "v": "old"})
	require.NoError(t, err)
	clk.Advance(time.Second)
	_, err = c.FindOne(context.Background(), Document{"_id": "X"}).Document()
	require.ErrorIs(t, err, ErrNotFound, "hidden")
	return db, c
}

// Issue 9 item 11: with HideExpired, a write that meets an expired, hidden
// document behaves as if the monitor had deleted it already, and deletes it
// through the monitor's path: counted in Metrics and told to observers.
func TestHideExpiredWriteMeetsExpired(t *testing.T) {
	later := t0.Add(time.Hour)
	for _, tc := range []struct {
		name  string
		write func(c *Collection) error
	}{
		{"InsertOne", func(c *Collection) error {
			_, err := c.InsertOne(context.Background(), Document{"_id": "X", "lastModifiedDate": later, "v": "new"})
			return err
		}},
		{"InsertMany", func(c *Collection) error {
			_, err := c.InsertMany(context.Background(), []Document{{"_id": "Y", "lastModifiedDate": later}, {"_id": "X", "lastModifiedDate": later, "v": "new"}})
			return err
		}},
		{"UpdateOne upsert", func(c *Collection) error {
			res, err := c.UpdateOne(context.Background(), Document{"_id": "X"}, Document{"$set": Document{"lastModifiedDate": later, "v": "new"}}, UpdateOptions{Upsert: true})
			if err == nil && (res.MatchedCount != 0 || res.UpsertedID != "X") {
				err = errors.New("not an upsert of X")
			}
			return err
		}},
		{"ReplaceOne upsert", func(c *Collection) error {
			res, err := c.ReplaceOne(context.Background(), Document{"_id": "X"}, Document{"lastModifiedDate": later, "v": "new"}, UpdateOptions{Upsert: true})
			if err == nil && (res.MatchedCount != 0 || res.UpsertedID != "X") {
				err = errors.New("not an upsert of X")
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &eventLog{}
			db, c := openHidden(t, WithDeleteObserver(log.observe))
			require.NoError(t, tc.write(c))
			got, err := c.FindOne(context.Background(), Document{"_id": "X"}).Document()
			require.NoError(t, err)
			assert.Equal(t, "new", got["v"])
			m := db.Metrics().TTL
			assert.Equal(t, int64(1), m.DeletedDocuments, "counted as a TTL deletion")
			assert.Equal(t, map[IndexRef]int64{{"c", "lastModifiedDate_1"}: 1}, m.DeletedByIndex)
			require.Len(t, log.events(), 1)
			ev := log.events()[0]
			assert.Equal(t, []any{"X"}, ev.IDs)
			assert.Equal(t, "c", ev.Collection)
			assert.Equal(t, "lastModifiedDate_1", ev.Index)
		})
	}
}

// Issue 9 item 11: a unique key held only by an expired, hidden document is
// free for an insert and for an update.
func TestHideExpiredUniqueKeyMeetsExpired(t *testing.T) {
	db, c := openHidden(t)
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("email")}, Unique: true})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), Document{"_id": "A", "email": "x@example.com"})
	require.NoError(t, err, "the only holder of the key is expired")
	_, err = c.InsertOne(context.Background(), Document{"_id": "B", "email": "b@example.com"})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), Document{"_id": "X2", "lastModifiedDate": t0, "email": "x2@example.com"})
	require.NoError(t, err) // expired at once
	res, err := c.UpdateOne(context.Background(), Document{"_id": "B"}, Document{"$set": Document{"email": "x2@example.com"}})
	require.NoError(t, err)
	assert.EqualValues(t, 1, res.ModifiedCount)
	assert.Equal(t, int64(2), db.Metrics().TTL.DeletedDocuments)
	_, err = c.InsertOne(context.Background(), Document{"_id": "C", "email": "x2@example.com"})
	assert.ErrorIs(t, err, ErrDuplicateKey, "a live holder still conflicts")
}

// Issue 9 item 11: an update that would match an expired, hidden document
// matches nothing, as if it were deleted, and does not revive it.
func TestHideExpiredUpdateDoesNotRevive(t *testing.T) {
	_, c := openHidden(t)
	res, err := c.UpdateOne(context.Background(), Document{"_id": "X"}, Document{"$set": Document{"lastModifiedDate": t0.Add(time.Hour)}})
	require.NoError(t, err)
	assert.Zero(t, res.MatchedCount)
	res, err = c.UpdateMany(context.Background(), Document{"email": "x@example.com"}, Document{"$currentDate": Document{"lastModifiedDate": true}})
	require.NoError(t, err)
	assert.Zero(t, res.MatchedCount)
	_, err = c.FindOne(context.Background(), Document{"_id": "X"}).Document()
	assert.ErrorIs(t, err, ErrNotFound)
}

// Issue 9 item 11: the expire hooks see the met document before it is
// deleted, outside every lock (the hook reads and writes the collection),
// and again if it changes while they run. If a hook fails, the write fails
// with ErrExpireHook and nothing is lost: the expired document stays, and
// the write stored nothing.
func TestHideExpiredWriteRunsHooksFirst(t *testing.T) {
	var (
		db     *DB
		mu     sync.Mutex
		seen   []string
		fail   bool
		during func(c *Collection) error // run once by the hook, with no mutex held
	)
	hook := func(ctx context.Context, b ExpiredBatch) error {
		c := db.Collection(b.Collection)
		if _, err := c.CountDocuments(context.Background(), nil); err != nil { // no lock is held
			return err
		}
		mu.Lock()
		for _, d := range b.Docs {
			seen = append(seen, d["v"].(string))
		}
		f, run := fail, during
		during = nil
		mu.Unlock()
		if f {
			return &ExpireHookError{Failed: []any{"X"}, Err: errors.New("archive down")}
		}
		if run != nil {
			return run(c)
		}
		return nil
	}
	log := &eventLog{}
	db, c := openHidden(t, WithOnExpire(hook), WithDeleteObserver(log.observe))
	insertX := func() (err error) {
		within(t, 10*time.Second, "InsertOne", func() {
			_, err = c.InsertOne(context.Background(), Document{"_id": "X", "lastModifiedDate": t0.Add(time.Hour), "v": "new"})
		})
		return err
	}

	mu.Lock()
	fail = true
	mu.Unlock()
	err := insertX()
	require.ErrorIs(t, err, ErrExpireHook)
	var he *ExpireHookError
	require.ErrorAs(t, err, &he, "the hook's own error is kept")
	assert.Contains(t, err.Error(), "archive down")
	_, _, err = c.ExpiresAt(context.Background(), "X")
	require.NoError(t, err, "the expired document is still stored")
	assert.Zero(t, db.Metrics().TTL.DeletedDocuments)
	assert.Empty(t, log.events())
	_, err = c.UpdateOne(context.Background(), Document{"_id": "X"}, Document{"$set": Document{"v": "new"}}, UpdateOptions{Upsert: true})
	require.ErrorIs(t, err, ErrExpireHook, "an upsert fails the same way")

	// Replaced (by another write that met it) while the hook ran: the new
	// version, expired too, is offered before it goes.
	mu.Lock()
	fail, seen = false, nil
	during = func(c *Collection) error {
		_, err := c.ReplaceOne(context.Background(), Document{"_id": "X"}, Document{"lastModifiedDate": t0, "v": "changed"}, UpdateOptions{Upsert: true})
		return err
	}
	mu.Unlock()
	require.NoError(t, insertX())
	mu.Lock()
	assert.Equal(t, []string{"old", "old", "changed"}, seen, "old by both writes, then the version changed while the hook ran")
	mu.Unlock()
	got, err := c.FindOne(context.Background(), Document{"_id": "X"}).Document()
	require.NoError(t, err)
	assert.Equal(t, "new", got["v"])
	assert.Equal(t, int64(2), db.Metrics().TTL.DeletedDocuments, "old by the hook's write, changed by the insert")
	assert.Equal(t, []any{"X", "X"}, log.ids())
}

// Issue 9 item 11: the write re-checks after its hooks ran: a document no
// longer expired (here CollMod, run by the hook, raised the TTL) is in the
// way again, and the write fails as it would have without HideExpired.
func TestHideExpiredWriteRechecksAfterHooks(t *testing.T) {
	var db *DB
	var once sync.Once
	hook := func(ctx context.Context, b ExpiredBatch) (err error) {
		once.Do(func() {
			_, err = db.CollMod(context.Background(), "c", CollModIndex{Name: "lastModifiedDate_1", ExpireAfterSeconds: Seconds(3600)})
		})
		return err
	}
	db, c := openHidden(t, WithOnExpire(hook))
	_, err := c.InsertOne(context.Background(), Document{"_id": "X", "v": "new"})
	require.ErrorIs(t, err, ErrDuplicateKey)
	got, err := c.FindOne(context.Background(), Document{"_id": "X"}).Document()
	require.NoError(t, err, "alive again, and kept")
	assert.Equal(t, "old", got["v"])
	assert.Zero(t, db.Metrics().TTL.DeletedDocuments)
}
