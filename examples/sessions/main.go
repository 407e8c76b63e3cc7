// Command sessions is an HTTP session store on ttldb: login, a sliding
// 30-minute expiry refreshed atomically on every request, logout, and a
// JSON metrics endpoint.
//
// Each request refreshes its session with one FindOneAndUpdate and
// $currentDate: the read and the extension are one step, so the TTL
// monitor either deletes the session before (the request gets 401) or
// sees it refreshed; it never deletes a session a request has just
// extended, and a request never brings back one it deleted. The collection
// hides expired documents (HideExpired), so a session past its 30 minutes
// is never served nor revived, even before the monitor's next pass.
//
// By default it makes a few requests against an in-process server on a
// fake clock, prints what happens and exits; -addr :8080 serves for real on
// the system clock:
//
//	curl -c jar -d user=ada localhost:8080/login
//	curl -b jar localhost:8080/me
//	curl -b jar -X POST localhost:8080/logout
//	curl localhost:8080/metrics
//
// -data DIR keeps the sessions in the directory DIR (ttldb.WithDir): they
// survive a restart, with their expiry dates. With the demo, run it twice:
// the first run logs two users in; the second, "40 minutes later", finds
// the session still alive and not the one that expired while the program
// was down.
//
//	go run ./examples/sessions -data /tmp/sessions
//	go run ./examples/sessions -data /tmp/sessions
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// SessionTTL is how long a session lives after its last request.
const SessionTTL = 30 * time.Minute

// cookieName names the cookie holding the session token.
const cookieName = "session"

// Session is a stored session. Its _id is the token the client holds.
type Session struct {
	Token    string    `bson:"_id" json:"-"`
	User     string    `bson:"user" json:"user"`
	Created  time.Time `bson:"created" json:"created"`
	LastSeen time.Time `bson:"lastSeen" json:"lastSeen"`
}

// Server serves the session store's endpoints. Its handlers are safe for
// concurrent use.
type Server struct {
	db       *ttldb.DB
	sessions *ttldb.Collection
	mux      *http.ServeMux
}

// NewServer makes the sessions collection (HideExpired, a TTL index of
// SessionTTL on lastSeen) in db and returns the server.
func NewServer(db *ttldb.DB) (*Server, error) {
	sessions, err := db.CreateCollection(context.Background(), "sessions", ttldb.CollectionOptions{HideExpired: true})
	if errors.Is(err, ttldb.ErrCollectionExists) {
		// Loaded from a data directory: made by an earlier run. CreateIndex
		// below returns the existing index.
		sessions, err = db.Collection("sessions"), nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := sessions.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastSeen")},
		ExpireAfterSeconds: ttldb.Seconds(int32(SessionTTL / time.Second)),
	}); err != nil {
		return nil, err
	}
	s := &Server{db: db, sessions: sessions, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("GET /me", s.me)
	s.mux.HandleFunc("POST /logout", s.logout)
	s.mux.HandleFunc("GET /metrics", s.metrics)
	return s, nil
}

// ServeHTTP dispatches to the endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// login starts a session for the form value user and sets its cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	user := r.FormValue("user")
	if user == "" {
		http.Error(w, "user required", http.StatusBadRequest)
		return
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	token := hex.EncodeToString(b[:])
	// $currentDate writes the DB clock's time: the same clock the TTL
	// monitor judges expiry by.
	var sess Session
	err := s.sessions.FindOneAndUpdate(context.Background(), ttldb.Document{"_id": token},
		ttldb.Document{
			"$set":         ttldb.Document{"user": user},
			"$currentDate": ttldb.Document{"created": true, "lastSeen": true},
		},
		ttldb.FindOneAndUpdateOptions{Upsert: true, ReturnDocument: ttldb.After}).
		Decode(&sess)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	writeJSON(w, sess)
}

// me returns the caller's session, refreshing it: one atomic step.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.refresh(w, r)
	if ok {
		writeJSON(w, sess)
	}
}

// refresh extends the request's session by SessionTTL and returns it, or
// answers 401 (no cookie, unknown token, or expired: HideExpired makes an
// expired session absent, and without Upsert nothing is inserted).
func (s *Server) refresh(w http.ResponseWriter, r *http.Request) (Session, bool) {
	var sess Session
	c, err := r.Cookie(cookieName)
	if err != nil {
		http.Error(w, "no session", http.StatusUnauthorized)
		return sess, false
	}
	err = s.sessions.FindOneAndUpdate(context.Background(), ttldb.Document{"_id": c.Value},
		ttldb.Document{"$currentDate": ttldb.Document{"lastSeen": true}},
		ttldb.FindOneAndUpdateOptions{ReturnDocument: ttldb.After}).
		Decode(&sess)
	if errors.Is(err, ttldb.ErrNotFound) {
		http.Error(w, "session expired or unknown", http.StatusUnauthorized)
		return sess, false
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return sess, false
	}
	return sess, true
}

// logout deletes the caller's session.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		http.Error(w, "no session", http.StatusUnauthorized)
		return
	}
	if err := s.sessions.FindOneAndDelete(context.Background(), ttldb.Document{"_id": c.Value}).Err(); err != nil {
		if errors.Is(err, ttldb.ErrNotFound) {
			http.Error(w, "session expired or unknown", http.StatusUnauthorized)
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

// metrics returns the DB's metrics as JSON.
func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	b, err := json.Marshal(s.db.Metrics())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func main() {
	addr := flag.String("addr", "", "serve on this address (e.g. :8080) on the system clock; empty: run the demo and exit")
	data := flag.String("data", "", "keep the sessions in this directory (created if missing) so that they survive a restart; empty: in memory")
	flag.Parse()
	var err error
	switch {
	case *addr != "":
		err = serve(*addr, *data)
	case *data != "":
		err = demoRestart(os.Stdout, *data)
	default:
		err = demo(os.Stdout)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// serve runs the store for real: the system clock, the monitor every 60 s,
// the sessions in dir if it is not empty.
func serve(addr, dir string) error {
	var opts []ttldb.Option
	if dir != "" {
		opts = append(opts, ttldb.WithDir(dir))
	}
	db, err := ttldb.Open(opts...)
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := NewServer(db)
	if err != nil {
		return err
	}
	log.Printf("sessions: serving on %s", addr)
	return http.ListenAndServe(addr, srv)
}

// demo runs a session's life against an in-process server on a fake
// clock, with TTL passes run by hand, and prints it to out.
func demo(out io.Writer) error {
	clock := ttltest.NewClock(demoStart)
	db, err := ttldb.Open(ttldb.WithClock(clock), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := NewServer(db)
	if err != nil {
		return err
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	client := &http.Client{Jar: jar}
	defer client.CloseIdleConnections()
	do := requester(out, client, ts.URL)
	steps := []struct {
		advance      time.Duration
		step         string
		method, path string
		form         string
	}{
		{0, "09:00 ada logs in", http.MethodPost, "/login", "user=ada"},
		{20 * time.Minute, "09:20 a request refreshes the session", http.MethodGet, "/me", ""},
		{25 * time.Minute, "09:45 still alive: 25 min since the last", http.MethodGet, "/me", ""},
		{31 * time.Minute, "10:16 31 min idle: expired, not served", http.MethodGet, "/me", ""},
		{0, "10:16 grace logs in", http.MethodPost, "/login", "user=grace"},
		{0, "10:16 grace logs out", http.MethodPost, "/logout", ""},
		{0, "10:16 after logout", http.MethodGet, "/me", ""},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		if err := do(st.step, st.method, st.path, st.form); err != nil {
			return err
		}
	}
	res, err := db.RunTTLPass(context.Background())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "TTL pass: %d expired session(s) deleted\n", res.Deleted)
	return do("metrics", http.MethodGet, "/metrics", "")
}

// downTime is how long the demo of -data is down between two runs, in its
// clock's time.
const downTime = 20 * time.Minute

// demoStart is when the demo's fake clock starts.
var demoStart = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

// requester returns a function that makes one request with client and
// prints it to out.
func requester(out io.Writer, client *http.Client, base string) func(step, method, path, form string) error {
	return func(step, method, path, form string) error {
		var resp *http.Response
		var err error
		if method == http.MethodPost {
			resp, err = client.Post(base+path, "application/x-www-form-urlencoded", strings.NewReader(form))
		} else {
			resp, err = client.Get(base + path)
		}
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-44s %-4s %-8s -> %d %s", step, method, path, resp.StatusCode, body)
		if len(body) == 0 || body[len(body)-1] != '\n' {
			fmt.Fprintln(out)
		}
		return nil
	}
}

// demoRestart is the demo of -data: each run continues the story of the
// previous one, on a fake clock that the data directory remembers. The
// first run logs ada in at 09:00 and grace at 09:10, refreshes grace's
// session at 09:25 and stops; the next run comes downTime later (in the
// clock's time), at 09:45, and finds grace's session (idle 20 minutes) but
// not ada's, which expired at 09:30 while the program was down; its TTL
// pass deletes ada's. The demo's browser (the
// tokens and the clock's time) is kept in the directory too, in a
// collection of its own.
func demoRestart(out io.Writer, dir string) error {
	// The clock's time and the users' tokens, from the previous run.
	state := struct {
		Now    time.Time         `bson:"now"`
		Tokens map[string]string `bson:"tokens"`
	}{Now: demoStart, Tokens: map[string]string{}}
	probe, err := ttldb.Open(ttldb.WithDir(dir), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		return err
	}
	run := 1
	if err := probe.Collection("demo").FindOne(context.Background(), ttldb.Document{"_id": "browser"}).Decode(&state); err == nil {
		run = 2
		state.Now = state.Now.Add(downTime) // the program was down meanwhile
	} else if !errors.Is(err, ttldb.ErrNotFound) {
		probe.Close()
		return err
	}
	if err := probe.Close(); err != nil {
		return err
	}

	clock := ttltest.NewClock(state.Now)
	db, err := ttldb.Open(ttldb.WithDir(dir), ttldb.WithClock(clock), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := db.Collection("sessions").EstimatedDocumentCount(context.Background())
	if err != nil {
		return err
	}
	rec := db.Recovery()
	fmt.Fprintf(out, "run %d at %s: loaded %d stored session(s) from %s (snapshot %q, %d log ops)\n",
		run, clock.Now().Format("15:04"), n, dir, rec.Snapshot, rec.LogOps)
	srv, err := NewServer(db)
	if err != nil {
		return err
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	client := &http.Client{Jar: jar}
	defer client.CloseIdleConnections()
	do := requester(out, client, ts.URL)
	u, err := url.Parse(ts.URL)
	if err != nil {
		return err
	}
	as := func(user string) { // the browser's cookie for user
		jar.SetCookies(u, []*http.Cookie{{Name: cookieName, Value: state.Tokens[user], Path: "/"}})
	}
	login := func(user string) error {
		if err := do(clock.Now().Format("15:04")+" "+user+" logs in", http.MethodPost, "/login", "user="+user); err != nil {
			return err
		}
		for _, c := range jar.Cookies(u) {
			if c.Name == cookieName {
				state.Tokens[user] = c.Value
			}
		}
		return nil
	}

	if run == 1 {
		if err := login("ada"); err != nil {
			return err
		}
		clock.Advance(10 * time.Minute)
		if err := login("grace"); err != nil {
			return err
		}
		clock.Advance(15 * time.Minute)
		as("grace")
		if err := do(clock.Now().Format("15:04")+" grace's request refreshes her session", http.MethodGet, "/me", ""); err != nil {
			return err
		}
		fmt.Fprintf(out, "stopping; run again with the same -data to restart %v later\n", downTime)
	} else {
		as("grace")
		if err := do(clock.Now().Format("15:04")+" grace's session, after the restart", http.MethodGet, "/me", ""); err != nil {
			return err
		}
		as("ada")
		if err := do(clock.Now().Format("15:04")+" ada's session, after the restart", http.MethodGet, "/me", ""); err != nil {
			return err
		}
		res, err := db.RunTTLPass(context.Background())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "TTL pass: %d expired session(s) deleted\n", res.Deleted)
	}
	state.Now = clock.Now()
	tokens := ttldb.Document{}
	for user, tok := range state.Tokens {
		tokens[user] = tok
	}
	_, err = db.Collection("demo").ReplaceOne(context.Background(), ttldb.Document{"_id": "browser"},
		ttldb.Document{"now": state.Now, "tokens": tokens}, ttldb.UpdateOptions{Upsert: true})

	return err
}
