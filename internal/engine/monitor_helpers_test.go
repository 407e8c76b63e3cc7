package engine

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// t0 is where every fake clock of the monitor tests starts.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// openMon opens a DB on a fresh fake clock at t0 and closes it when the
// test ends.
func openMon(t testing.TB, opts ...Option) (*DB, *ttltest.Clock) {
	t.Helper()
	clk := ttltest.NewClock(t0)
	db, err := Open(append([]Option{WithClock(clk)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db, clk
}

// quiet returns a WithMonitor option for tests that drive passes with
// RunTTLPass: the monitor is disabled and its interval so long that no
// clock advance of the test wakes it (a woken monitor calls Now, which would
// upset tests that count Now calls with SetAutoAdvance).
func quiet(o MonitorOptions) Option {
	o.Disabled = true
	if o.Interval == 0 {
		o.Interval = 10000 * time.Hour
	}
	return WithMonitor(o)
}

// ttlColl creates a TTL index on lastModifiedDate of collection name.
func ttlColl(t testing.TB, db *DB, name string, expireAfter int32) *Collection {
	t.Helper()
	c := db.Collection(name)
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("lastModifiedDate")}, ExpireAfterSeconds: Seconds(expireAfter)})
	require.NoError(t, err)
	return c
}

// insertDated inserts n documents with _id prefix-0.. prefix-(n-1) and the
// given lastModifiedDate.
func insertDated(t testing.TB, c *Collection, prefix string, n int, date time.Time) []any {
	t.Helper()
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = Document{"_id": fmt.Sprintf("%s-%05d", prefix, i), "lastModifiedDate": date, "n": i}
	}
	res, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
	return res.InsertedIDs
}

func count(t testing.TB, c *Collection) int {
	t.Helper()
	n, err := c.CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	return int(n)
}

// boolPtr returns a pointer to b (the driver's optional booleans).
func boolPtr(b bool) *bool { return &b }

// eventLog records DeleteEvents.
type eventLog struct {
	mu  sync.Mutex
	evs []DeleteEvent
}

func (l *eventLog) observe(ev DeleteEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) events() []DeleteEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]DeleteEvent(nil), l.evs...)
}

// ids returns every deleted _id, in order.
func (l *eventLog) ids() []any {
	var out []any
	for _, ev := range l.events() {
		out = append(out, ev.IDs...)
	}
	return out
}

// syncBuffer is a goroutine-safe buffer for slog output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func bufferLogger() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

// within fails the test if fn does not return within d: the guard for
// tests whose failure mode is a deadlock.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v (deadlock?)", what, d)
	}
}
