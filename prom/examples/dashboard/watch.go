package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ttldb/ttldb"
)

// keepAlive is how long a quiet /watch stream waits before it sends a
// comment line, so that proxies do not close it as idle.
const keepAlive = 15 * time.Second

// watchHandler serves a DB's change events as server-sent events
// (text/event-stream): one event per change, its id the event's resume
// token and its data the event's JSON form (ttldb.ChangeEvent.MarshalJSON).
// A client that reconnects with Last-Event-ID (browsers' EventSource do)
// resumes after that token, within the DB's change-stream buffer. The
// query selects events, as ChangeStreamOptions does: coll and op
// (repeatable), fullDocument=updateLookup, fullDocumentBeforeChange=
// whenAvailable|required, and after=<token> in place of Last-Event-ID.
//
// Statuses: 400 for a bad query or token, 410 Gone when the token is no
// longer retained (the client must resynchronize, then watch anew), 503
// once the DB is closed. A stream that fails later (it fell behind, the
// DB closed) ends with an event of type "error" whose data is
// {"error": "...", "resumeAfter": "<token>"}. A stream quiet for
// keepAlive sends a comment line.
func watchHandler(db *ttldb.DB, keepAlive time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts, err := watchOptions(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cs, err := db.Watch(r.Context(), nil, opts)
		switch {
		case errors.Is(err, ttldb.ErrChangeStreamHistoryLost):
			http.Error(w, err.Error(), http.StatusGone)
			return
		case errors.Is(err, ttldb.ErrInvalidOptions):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer cs.Close(context.Background())
		flusher, _ := w.(http.Flusher)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		flush := func() {
			if flusher != nil {
				flusher.Flush()
			}
		}
		flush()
		ctx := r.Context()
		buf := make([]byte, 0, 1024)
		for {
			// Write what is ready; flush before waiting.
			if !cs.TryNext(ctx) {
				if cs.Err() != nil {
					break
				}
				flush()
				wait, cancel := context.WithTimeout(ctx, keepAlive)
				ok := cs.Next(wait)
				cancel()
				if !ok {
					if ctx.Err() != nil {
						return // the client went away
					}
					if errors.Is(cs.Err(), context.DeadlineExceeded) {
						if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
							return
						}
						continue
					}
					break
				}
			}
			ev := cs.Event()
			buf = append(buf[:0], "id: "...)
			buf = append(buf, ev.ID.String()...)
			buf = append(buf, "\ndata: "...)
			buf = ev.AppendJSON(buf)
			buf = append(buf, "\n\n"...)
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		data, _ := json.Marshal(struct {
			Error       string `json:"error"`
			ResumeAfter string `json:"resumeAfter"`
		}{cs.Err().Error(), cs.ResumeToken().String()})
		_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
		flush()
	})
}

// watchOptions reads a /watch request's query and Last-Event-ID.
func watchOptions(r *http.Request) (ttldb.ChangeStreamOptions, error) {
	q := r.URL.Query()
	var o ttldb.ChangeStreamOptions
	o.Collections = q["coll"]
	for _, op := range q["op"] {
		o.OperationTypes = append(o.OperationTypes, ttldb.OperationType(op))
	}
	o.FullDocument = ttldb.FullDocument(q.Get("fullDocument"))
	o.FullDocumentBeforeChange = ttldb.FullDocument(q.Get("fullDocumentBeforeChange"))
	after := r.Header.Get("Last-Event-ID")
	if a := q.Get("after"); a != "" {
		after = a
	}
	if after != "" {
		tok, err := ttldb.ParseResumeToken(after)
		if err != nil {
			return o, err
		}
		o.ResumeAfter = &tok
	}
	return o, nil
}
