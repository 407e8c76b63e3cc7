package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
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

var start = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

type harness struct {
	t      *testing.T
	clock  *ttltest.Clock
	db     *ttldb.DB
	url    string
	client *http.Client
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clock := ttltest.NewClock(start)
	db, err := ttldb.Open(ttldb.WithClock(clock), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	srv, err := NewServer(db)
	require.NoError(t, err)
	ts := httptest.NewServer(srv) // loopback
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	h := &harness{t: t, clock: clock, db: db, url: ts.URL, client: &http.Client{Jar: jar}}
	t.Cleanup(func() {
		h.client.CloseIdleConnections()
		ts.Close()
		require.NoError(t, db.Close())
	})
	return h
}

func (h *harness) req(method, path, form string) (int, []byte) {
	h.t.Helper()
	var resp *http.Response
	var err error
	if method == http.MethodPost {
		resp, err = h.client.Post(h.url+path, "application/x-www-form-urlencoded", strings.NewReader(form))
	} else {
		resp, err = h.client.Get(h.url + path)
	}
	require.NoError(h.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, body
}

func (h *harness) me() (int, Session) {
	h.t.Helper()
	code, body := h.req(http.MethodGet, "/me", "")
	var s Session
	if code == http.StatusOK {
		require.NoError(h.t, json.Unmarshal(body, &s))
	}
	return code, s
}

func (h *harness) login(user string) Session {
	h.t.Helper()
	code, body := h.req(http.MethodPost, "/login", "user="+user)
	require.Equal(h.t, http.StatusOK, code, string(body))
	var s Session
	require.NoError(h.t, json.Unmarshal(body, &s))
	return s
}

func (h *harness) token() string {
	u, _ := url.Parse(h.url)
	for _, c := range h.client.Jar.Cookies(u) {
		if c.Name == cookieName {
			return c.Value
		}
	}
	return ""
}

// Each request slides the expiry: a session used every 29 minutes lives
// on, and the stored lastSeen is the DB clock's time of the last request.
func TestSlidingExpiry(t *testing.T) {
	h := newHarness(t)
	s := h.login("ada")
	assert.Equal(t, "ada", s.User)
	assert.Equal(t, start, s.LastSeen)
	for i := 1; i <= 4; i++ {
		h.clock.Advance(29 * time.Minute)
		code, s := h.me()
		require.Equal(t, http.StatusOK, code, "request %d", i)
		assert.Equal(t, start.Add(time.Duration(i)*29*time.Minute), s.LastSeen)
		assert.Equal(t, start, s.Created)
	}
	res, err := h.db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Zero(t, res.Deleted, "a refreshed session is not expired")
	at, ok, err := h.db.Collection("sessions").ExpiresAt(context.Background(), h.token())
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, start.Add(4*29*time.Minute+SessionTTL), at)
}

// 30 minutes after its last request a session is gone: not served before
// the monitor deletes it (HideExpired), not revived by the request (the
// pass afterwards still finds it expired), and deleted by the pass.
func TestExpiredSessionNeverServedNorRevived(t *testing.T) {
	h := newHarness(t)
	h.login("ada")
	token := h.token()
	h.clock.Advance(SessionTTL)
	code, _ := h.me()
	require.Equal(t, http.StatusUnauthorized, code, "expired at exactly 30 minutes")
	code, _ = h.me()
	require.Equal(t, http.StatusUnauthorized, code, "still expired: the first request did not revive it")
	res, err := h.db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, res.Deleted, "the expired session was still stored, unrefreshed, for the monitor")
	n, err := h.db.Collection("sessions").CountDocuments(context.Background(), ttldb.Document{"_id": token})
	require.NoError(t, err)
	assert.Zero(t, n)

	// Metrics endpoint: JSON of db.Metrics(), counting the deletion.
	code, body := h.req(http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, code)
	var m ttldb.Metrics
	require.NoError(t, json.Unmarshal(body, &m))
	assert.Equal(t, int64(1), m.TTL.DeletedDocuments)
	assert.Equal(t, int64(1), m.TTL.DeletedByCollection["sessions"])
}

func TestLogout(t *testing.T) {
	h := newHarness(t)
	h.login("ada")
	token := h.token()
	code, _ := h.req(http.MethodPost, "/logout", "")
	require.Equal(t, http.StatusNoContent, code)
	code, _ = h.me()
	assert.Equal(t, http.StatusUnauthorized, code)
	// The old token, replayed, finds nothing either.
	u, _ := url.Parse(h.url)
	h.client.Jar.SetCookies(u, []*http.Cookie{{Name: cookieName, Value: token, Path: "/"}})
	code, _ = h.me()
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = h.req(http.MethodPost, "/logout", "")
	assert.Equal(t, http.StatusUnauthorized, code, "logging out twice")
	n, err := h.db.Collection("sessions").CountDocuments(context.Background(), nil)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestBadRequests(t *testing.T) {
	h := newHarness(t)
	code, _ := h.req(http.MethodPost, "/login", "")
	assert.Equal(t, http.StatusBadRequest, code, "login without user")
	code, _ = h.me()
	assert.Equal(t, http.StatusUnauthorized, code, "no cookie")
	code, _ = h.req(http.MethodPost, "/logout", "")
	assert.Equal(t, http.StatusUnauthorized, code, "logout without cookie")
}

func TestDemoRuns(t *testing.T) {
	var out strings.Builder
	require.NoError(t, demo(&out))
	assert.Contains(t, out.String(), "-> 401 session expired or unknown")
	assert.Contains(t, out.String(), "TTL pass: 1 expired session(s) deleted")
}

// With -data the sessions survive a restart: the second run finds the
// first run's live session (grace's) and not the one that expired while
// the program was down (ada's), which its TTL pass deletes.
func TestDemoSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	var first, second strings.Builder
	require.NoError(t, demoRestart(&first, dir))
	assert.Contains(t, first.String(), "run 1 at 09:00: loaded 0 stored session(s)")
	assert.Contains(t, first.String(), "grace's request refreshes her session  GET  /me      -> 200")

	require.NoError(t, demoRestart(&second, dir))
	out := second.String()
	assert.Contains(t, out, "run 2 at 09:45: loaded 2 stored session(s)")
	assert.Contains(t, out, `grace's session, after the restart     GET  /me      -> 200 {"user":"grace","created":"2026-11-21T09:10:00Z"`)
	assert.Contains(t, out, "ada's session, after the restart       GET  /me      -> 401 session expired or unknown")
	assert.Contains(t, out, "TTL pass: 1 expired session(s) deleted")

	// What the second run left: grace's session alone (read at 09:45).
	clock := ttltest.NewClock(demoStart.Add(45 * time.Minute))
	db, err := ttldb.Open(ttldb.WithDir(dir), ttldb.WithClock(clock), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	var users []string
	cur, err := db.Collection("sessions").Find(context.Background(), nil)
	require.NoError(t, err)
	var sessions []Session
	require.NoError(t, cur.All(context.Background(), &sessions))
	for _, s := range sessions {
		users = append(users, s.User)
	}
	assert.Equal(t, []string{"grace"}, users)
}
