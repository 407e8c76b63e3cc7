package ttlexpvar_test

import (
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttlexpvar"
	"github.com/ttldb/ttldb/ttltest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// names are unique per run: expvar's names last as long as the process,
// and -count=N runs the tests N times in one.
var seq atomic.Int64

func uniqueName(base string) string { return fmt.Sprintf("%s.%d", base, seq.Add(1)) }

// openWithExpired opens a DB with n documents expired under a TTL index of
// collection coll, and runs one pass that deletes them.
func openWithExpired(t *testing.T, coll string, n int) *ttldb.DB {
	t.Helper()
	clk := ttltest.NewClock(t0)
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	c := db.Collection(coll)
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(0)})
	require.NoError(t, err)
	for i := range n {
		_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": i, "at": t0})
		require.NoError(t, err)
	}
	clk.Advance(time.Second)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	return db
}

// decode reads the published variable name as Metrics.
func decode(t *testing.T, name string) ttldb.Metrics {
	t.Helper()
	v := expvar.Get(name)
	require.NotNil(t, v, name)
	var m ttldb.Metrics
	require.NoError(t, json.Unmarshal([]byte(v.String()), &m))
	return m
}

// Rule: two DBs publish side by side under their own names, and each
// variable renders its DB's Metrics as JSON that decodes into Metrics, also
// through the /debug/vars handler.
func TestPublishTwoDBs(t *testing.T) {
	a, b := openWithExpired(t, "sessions", 3), openWithExpired(t, "carts", 5)
	na, nb := uniqueName("ttldb.sessions"), uniqueName("ttldb.carts")
	require.NoError(t, ttlexpvar.Publish(na, a))
	require.NoError(t, ttlexpvar.Publish(nb, b))

	ma, mb := decode(t, na), decode(t, nb)
	assert.Equal(t, a.Metrics(), ma)
	assert.Equal(t, b.Metrics(), mb)
	assert.Equal(t, map[string]int64{"sessions": 3}, ma.TTL.DeletedByCollection)
	assert.Equal(t, map[string]int64{"carts": 5}, mb.TTL.DeletedByCollection)

	// A read is live: a later pass shows.
	_, err := a.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(2), decode(t, na).TTL.Passes)

	rec := httptest.NewRecorder()
	expvar.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/debug/vars", nil))
	var all map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &all))
	var viaHTTP ttldb.Metrics
	require.NoError(t, json.Unmarshal(all[nb], &viaHTTP))
	assert.Equal(t, b.Metrics(), viaHTTP)
}

// Rule: a name already published — by Publish or by anyone else — is
// ErrNameTaken, not expvar's panic, and leaves the variable as it was.
func TestPublishDuplicateName(t *testing.T) {
	a, b := openWithExpired(t, "a", 1), openWithExpired(t, "b", 2)
	name := uniqueName("ttldb.dup")
	require.NoError(t, ttlexpvar.Publish(name, a))
	var err error
	require.NotPanics(t, func() { err = ttlexpvar.Publish(name, b) })
	require.ErrorIs(t, err, ttlexpvar.ErrNameTaken)
	assert.Contains(t, err.Error(), name)
	assert.Equal(t, map[string]int64{"a": 1}, decode(t, name).TTL.DeletedByCollection, "still the first DB")

	other := uniqueName("other")
	expvar.NewInt(other)
	require.NotPanics(t, func() { err = ttlexpvar.Publish(other, a) })
	require.ErrorIs(t, err, ttlexpvar.ErrNameTaken)
	_, isInt := expvar.Get(other).(*expvar.Int)
	assert.True(t, isInt, "the other package's variable is untouched")
}

// Rule: concurrent Publish calls with one name: exactly one wins, the
// others get ErrNameTaken, none panics.
func TestPublishConcurrent(t *testing.T) {
	db := openWithExpired(t, "c", 0)
	name := uniqueName("ttldb.race")
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			defer func() {
				if p := recover(); p != nil {
					errs <- fmt.Errorf("panic: %v", p)
				}
			}()
			errs <- ttlexpvar.Publish(name, db)
		}()
	}
	won := 0
	for range cap(errs) {
		err := <-errs
		if err == nil {
			won++
			continue
		}
		assert.ErrorIs(t, err, ttlexpvar.ErrNameTaken)
	}
	assert.Equal(t, 1, won)
}

// Rule: bad arguments are ErrInvalidOptions and publish nothing.
func TestPublishBadArguments(t *testing.T) {
	db := openWithExpired(t, "c", 0)
	require.ErrorIs(t, ttlexpvar.Publish("", db), ttldb.ErrInvalidOptions)
	name := uniqueName("ttldb.nil")
	require.ErrorIs(t, ttlexpvar.Publish(name, nil), ttldb.ErrInvalidOptions)
	assert.Nil(t, expvar.Get(name))
}

// Rule: the variable outlives Close and shows the DB's last counters.
func TestPublishAfterClose(t *testing.T) {
	db := openWithExpired(t, "c", 4)
	name := uniqueName("ttldb.closed")
	require.NoError(t, ttlexpvar.Publish(name, db))
	want := db.Metrics()
	require.NoError(t, db.Close())
	got := decode(t, name)
	assert.Equal(t, int64(4), got.TTL.DeletedDocuments)
	assert.Equal(t, want.TTL.Passes, got.TTL.Passes)
}

// Rule: the variable carries the change streams' figures: a named
// stream's lag, in ops and time, and the DB-wide largest lag.
func TestPublishChangeStreamLag(t *testing.T) {
	db := openWithExpired(t, "c", 0)
	ctx := context.Background()
	cs, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{Name: "audit"})
	require.NoError(t, err)
	defer cs.Close(ctx)
	for i := range 3 {
		_, err := db.Collection("w").InsertOne(ctx, ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	name := uniqueName("ttldb.streams")
	require.NoError(t, ttlexpvar.Publish(name, db))
	got := decode(t, name).ChangeStreams
	assert.Equal(t, 1, got.Open)
	assert.Equal(t, uint64(4), got.Streams["audit"].LagOps, "the collection's creation and 3 inserts")
	assert.Equal(t, uint64(4), got.MaxLagOps)
	assert.Equal(t, db.Metrics().ChangeStreams, got)
}
