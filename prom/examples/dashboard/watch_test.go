package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sseEvent is one server-sent event.
type sseEvent struct {
	id, event, data string
	comment         bool
}

// sseReader reads server-sent events from a response body.
type sseReader struct{ sc *bufio.Scanner }

func (r sseReader) next(t *testing.T) sseEvent {
	t.Helper()
	var ev sseEvent
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "":
			return ev
		case strings.HasPrefix(line, ":"):
			ev.comment = true
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
	require.NoError(t, r.sc.Err())
	t.Fatal("the stream ended")
	return ev
}

// watch opens srv's /watch with the query and headers given.
func watch(t *testing.T, srv *httptest.Server, query string, lastID string) (*http.Response, sseReader) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/watch"+query, nil)
	require.NoError(t, err)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	return res, sseReader{bufio.NewScanner(res.Body)}
}

func TestWatchEndpoint(t *testing.T) {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	sessions := db.Collection("sessions")
	_, err = sessions.CreateIndex(ctx, ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("lastSeen")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/watch", watchHandler(db, time.Hour))
	mux.Handle("/quiet/watch", watchHandler(db, time.Millisecond))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, events := watch(t, srv, "?coll=sessions", "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	_, err = sessions.InsertMany(context.Background(), []ttldb.Document{{"_id": "a", "lastSeen": clk.Now()}, {"_id": "b", "lastSeen": clk.Now()}})
	require.NoError(t, err)
	_, err = db.Collection("other").InsertOne(context.Background(), ttldb.Document{"_id": 1}) // filtered out
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	_, err = db.RunTTLPass(ctx)
	require.NoError(t, err)

	type event struct {
		ID struct {
			Data string `json:"_data"`
		} `json:"_id"`
		OperationType string         `json:"operationType"`
		Ns            map[string]any `json:"ns"`
		DocumentKey   map[string]any `json:"documentKey"`
		FullDocument  map[string]any `json:"fullDocument"`
		Expired       bool           `json:"expired"`
		Index         string         `json:"index"`
	}
	var got []event
	var ids []string
	for range 4 {
		ev := events.next(t)
		var e event
		require.NoError(t, json.Unmarshal([]byte(ev.data), &e), ev.data)
		assert.Equal(t, ev.id, e.ID.Data, "the SSE id is the resume token")
		got = append(got, e)
		ids = append(ids, ev.id)
	}
	assert.Equal(t, "insert", got[0].OperationType)
	assert.Equal(t, map[string]any{"_id": "a"}, got[0].DocumentKey)
	assert.Equal(t, map[string]any{"$date": "2026-01-01T00:00:00Z"}, got[0].FullDocument["lastSeen"])
	assert.Equal(t, map[string]any{"coll": "sessions"}, got[0].Ns)
	assert.Equal(t, "insert", got[1].OperationType)
	for _, e := range got[2:] {
		assert.Equal(t, "delete", e.OperationType)
		assert.True(t, e.Expired)
		assert.Equal(t, "lastSeen_1", e.Index)
	}
	res.Body.Close()

	// A client reconnecting with Last-Event-ID resumes after it.
	res, events = watch(t, srv, "?coll=sessions", ids[1])
	require.Equal(t, http.StatusOK, res.StatusCode)
	for _, want := range ids[2:] {
		assert.Equal(t, want, events.next(t).id)
	}
	// ?after= does the same; op filters.
	res, events = watch(t, srv, "?op=delete&after="+ids[0], "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, ids[2], events.next(t).id)

	// A quiet stream sends keep-alive comments.
	quiet, err := srv.Client().Get(srv.URL + "/quiet/watch")
	require.NoError(t, err)
	defer quiet.Body.Close()
	assert.True(t, sseReader{bufio.NewScanner(quiet.Body)}.next(t).comment)

	for query, status := range map[string]int{
		"?after=nonsense":        http.StatusBadRequest,
		"?op=upsert":             http.StatusBadRequest,
		"?coll=a$b":              http.StatusBadRequest,
		"?fullDocument=always":   http.StatusBadRequest,
		"?after=999:0":           http.StatusBadRequest,
		"?fullDocument=required": http.StatusOK,
	} {
		res, _ := watch(t, srv, query, "")
		assert.Equal(t, status, res.StatusCode, query)
		res.Body.Close()
	}

	// Closing the DB ends the streams with an error event.
	res, events = watch(t, srv, "", "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NoError(t, db.Close())
	ev := events.next(t)
	for ev.comment {
		ev = events.next(t)
	}
	assert.Equal(t, "error", ev.event)
	var e struct{ Error, ResumeAfter string }
	require.NoError(t, json.Unmarshal([]byte(ev.data), &e))
	assert.Contains(t, e.Error, "closed")
	assert.NotEmpty(t, e.ResumeAfter)
	res, _ = watch(t, srv, "", "")
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
}

// A token the DB's buffer no longer holds is 410 Gone.
func TestWatchEndpointHistoryLost(t *testing.T) {
	db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}),
		ttldb.WithChangeStreamBuffer(ttldb.ChangeStreamBufferOptions{Size: 4, AttachAtOpen: true}))
	require.NoError(t, err)
	defer db.Close()
	for i := range 10 {
		_, err := db.Collection("c").InsertOne(context.Background(), ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	srv := httptest.NewServer(watchHandler(db, time.Hour))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "?after=1:0")
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, http.StatusGone, res.StatusCode)
}
