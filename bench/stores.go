package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jellydator/ttlcache/v3"
	gocache "github.com/patrickmn/go-cache"
	"github.com/tidwall/buntdb"
	"github.com/ttldb/ttldb"
)

// Doc is a generated benchmark document, in one of two shapes (docShape):
// the bench's own event {_id, user, kind, bytes, lastModifiedDate}, or the
// session services store most {_id, user, payload (200 bytes),
// lastModifiedDate}. Every store holds the same content: ttldb as a
// Document, buntdb as JSON, the caches and the floor as the shape's own
// struct (Event or Session), so that no store carries the other shape's
// fields.
type Doc struct {
	ID               string    `json:"_id"`
	User             string    `json:"user"`
	Kind             string    `json:"kind,omitempty"`
	Bytes            int       `json:"bytes,omitempty"`
	Payload          string    `json:"payload,omitempty"`
	LastModifiedDate time.Time `json:"lastModifiedDate"`
}

// Event is the event shape as the struct stores hold it.
type Event struct {
	ID, User, Kind   string
	Bytes            int
	LastModifiedDate time.Time
}

// Session is the session shape as the struct stores hold it.
type Session struct {
	ID, User, Payload string
	LastModifiedDate  time.Time
}

func (e Event) key() string            { return e.ID }
func (e Event) threshold() time.Time   { return e.LastModifiedDate.Add(ttlSeconds * time.Second) }
func (s Session) key() string          { return s.ID }
func (s Session) threshold() time.Time { return s.LastModifiedDate.Add(ttlSeconds * time.Second) }
func eventOf(d Doc) Event              { return Event{d.ID, d.User, d.Kind, d.Bytes, d.LastModifiedDate} }
func sessionOf(d Doc) Session          { return Session{d.ID, d.User, d.Payload, d.LastModifiedDate} }

// value is what the struct stores hold: one of the shapes' structs.
type value interface {
	Event | Session
	key() string
	threshold() time.Time
}

// The document shapes (docShape).
const (
	shapeEvent   = "event"
	shapeSession = "session"
)

// docShape is the shape of the documents this trial generates: set once
// from the workload's name (sessionWorkload) before anything runs (each
// trial is a process of its own).
var docShape = shapeEvent

// sessionPayload is the session shape's payload length in bytes.
const sessionPayload = 200

// ttlSeconds is the ExpireAfterSeconds of ttldb's TTL index: a document
// whose threshold is T carries lastModifiedDate T - ttlSeconds.
const ttlSeconds = 3600

var kinds = []string{"click", "view", "purchase", "login", "logout", "search", "share", "comment"}

func docKey(i int) string { return fmt.Sprintf("doc:%09d", i) }

func keyIndex(k string) int {
	n, _ := strconv.Atoi(k[4:])
	return n
}

// genDoc returns document i of the trial's shape (docShape), expiring
// (reaching its threshold) at exp.
func genDoc(i int, exp time.Time) Doc {
	if docShape == shapeSession {
		return Doc{
			ID:               docKey(i),
			User:             fmt.Sprintf("user%05d", (i*7919)%10000),
			Payload:          payloadOf(i),
			LastModifiedDate: exp.Add(-ttlSeconds * time.Second),
		}
	}
	return Doc{
		ID:               docKey(i),
		User:             fmt.Sprintf("user%05d", (i*7919)%10000),
		Kind:             kinds[i%len(kinds)],
		Bytes:            (i * 37) % 4096,
		LastModifiedDate: exp.Add(-ttlSeconds * time.Second),
	}
}

func threshold(d Doc) time.Time { return d.LastModifiedDate.Add(ttlSeconds * time.Second) }

// payloadOf returns session i's payload: sessionPayload bytes of base-32
// text that differ from session to session (as a token or a serialized
// state would).
func payloadOf(i int) string {
	const digits = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, sessionPayload)
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	for j := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[j] = digits[x&31]
	}
	return string(b)
}

// store is one contender. prepare turns documents into the store's native
// input outside the timed region; insert stores them (timed); get reads a
// document by key; remaining is the number of documents physically held
// (expired or not), read as cheaply as the store allows.
type store interface {
	prepare(docs []Doc) any
	insert(batch any) error
	get(key string) bool
	remaining() int
	close()
}

// storeNames in table order: ttldb first, the floor last.
var storeNames = []string{"ttldb", "buntdb", "ttlcache", "go-cache", "golang-lru", "floor"}

// storeOpts tunes a store for a trial.
type storeOpts struct {
	lruTTL    time.Duration                    // golang-lru: the cache's single TTL
	onRemoved func(ids []string, at time.Time) // expiry-lag recording (ttldb, ttlcache, floor)
	ttldbRead string                           // "findone" or "expiresat"
	ttldbOpts []ttldb.Option                   // more options for ttldb.Open (durability workloads)
}

func newStore(name string, o storeOpts) (store, error) {
	switch name {
	case "ttldb":
		return newTTLDBStore(o)
	case "buntdb":
		return newBuntStore()
	}
	if docShape == shapeSession {
		return newStructStore(name, o, sessionOf)
	}
	return newStructStore(name, o, eventOf)
}

// newStructStore makes one of the stores that hold V, a shape's struct,
// converted from each Doc by conv.
func newStructStore[V value](name string, o storeOpts, conv func(Doc) V) (store, error) {
	switch name {
	case "ttlcache":
		return newTTLCacheStore(o, conv), nil
	case "go-cache":
		return &goCacheStore[V]{c: gocache.New(gocache.NoExpiration, goCacheJanitor), conv: conv}, nil
	case "golang-lru":
		if o.lruTTL <= 0 {
			o.lruTTL = time.Hour
		}
		return &lruStore[V]{c: expirable.NewLRU[string, V](0, nil, o.lruTTL), conv: conv}, nil
	case "floor":
		return newFloor(floorBatch, o.onRemoved, conv), nil
	}
	return nil, fmt.Errorf("unknown store %q", name)
}

// goCacheJanitor is go-cache's cleanup interval: its janitor scans the whole
// map under the write lock this often.
const goCacheJanitor = time.Second

// ---- ttldb ----

type ttldbStore struct {
	db       *ttldb.DB
	coll     *ttldb.Collection
	inserted atomic.Int64
	deleted  atomic.Int64
	read     string
}

func newTTLDBStore(o storeOpts) (*ttldbStore, error) {
	s := &ttldbStore{read: o.ttldbRead}
	if s.read == "" {
		s.read = "findone"
	}
	obs := func(ev ttldb.DeleteEvent) {
		if o.onRemoved != nil {
			at := time.Now()
			ids := make([]string, len(ev.IDs))
			for i, id := range ev.IDs {
				ids[i], _ = id.(string)
			}
			o.onRemoved(ids, at)
		}
		s.deleted.Add(int64(len(ev.IDs)))
	}
	// The real monitor with default batching; DeadlineWake makes it wake at
	// the earliest threshold instead of every 60 s.
	db, err := ttldb.Open(append([]ttldb.Option{
		ttldb.WithMonitor(ttldb.MonitorOptions{DeadlineWake: true}),
		ttldb.WithDeleteObserver(obs),
	}, o.ttldbOpts...)...)
	if err != nil {
		return nil, err
	}
	s.db, s.coll = db, db.Collection("events")
	if _, err := s.coll.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys:               []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")},
		ExpireAfterSeconds: ttldb.Seconds(ttlSeconds),
	}); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *ttldbStore) prepare(docs []Doc) any {
	out := make([]ttldb.Document, len(docs))
	for i, d := range docs {
		out[i] = ttldbDoc(d)
	}
	return out
}

func (s *ttldbStore) insert(b any) error {
	docs := b.([]ttldb.Document)
	if _, err := s.coll.InsertMany(context.Background(), docs); err != nil {
		return err
	}
	s.inserted.Add(int64(len(docs)))
	return nil
}

func (s *ttldbStore) get(key string) bool {
	if s.read == "expiresat" {
		_, _, err := s.coll.ExpiresAt(context.Background(), key)
		return err == nil
	}
	d, err := s.coll.FindOne(context.Background(), ttldb.Document{"_id": key}).Document()
	return err == nil && d != nil
}

func (s *ttldbStore) remaining() int { return int(s.inserted.Load() - s.deleted.Load()) }
func (s *ttldbStore) close()         { s.db.Close() }

// accounter is a store that accounts its own memory (ttldb's memory
// budget), so the bench can compare the accounting with the heap.
type accounter interface{ accountedBytes() int64 }

func (s *ttldbStore) accountedBytes() int64 { return s.db.Metrics().Storage.Bytes }

// probeFindOne reports whether FindOne({_id: key}) is a correct point
// lookup here (it returns that document, examining at most one).
func (s *ttldbStore) probeFindOne(key string) (bool, string) {
	d, err := s.coll.FindOne(context.Background(), ttldb.Document{"_id": key}).Document()
	if err != nil {
		return false, "FindOne by _id failed: " + err.Error()
	}
	if d["_id"] != key {
		return false, fmt.Sprintf("FindOne({_id: %q}) returned _id %v (the filter does not filter yet)", key, d["_id"])
	}
	ex, err := s.coll.Explain(context.Background(), ttldb.Document{"_id": key})
	if err == nil && ex.DocsExamined > 1 {
		return false, fmt.Sprintf("FindOne({_id}) is a %s examining %d documents (no _id fast path)", ex.Stage, ex.DocsExamined)
	}
	return true, ""
}

// ---- buntdb ----

type buntStore struct {
	db *buntdb.DB
}

type buntItem struct {
	key, val string
	exp      time.Time
}

func newBuntStore() (*buntStore, error) {
	db, err := buntdb.Open(":memory:")
	if err != nil {
		return nil, err
	}
	if err := db.CreateIndex("lastModifiedDate", "*", buntdb.IndexJSON("lastModifiedDate")); err != nil {
		return nil, err
	}
	return &buntStore{db: db}, nil
}

func (s *buntStore) prepare(docs []Doc) any {
	out := make([]buntItem, len(docs))
	for i, d := range docs {
		b, _ := json.Marshal(d)
		out[i] = buntItem{d.ID, string(b), threshold(d)}
	}
	return out
}

func (s *buntStore) insert(b any) error {
	items := b.([]buntItem)
	return s.db.Update(func(tx *buntdb.Tx) error {
		for _, it := range items {
			if _, _, err := tx.Set(it.key, it.val, &buntdb.SetOptions{Expires: true, TTL: time.Until(it.exp)}); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *buntStore) get(key string) bool {
	ok := false
	_ = s.db.View(func(tx *buntdb.Tx) error {
		_, err := tx.Get(key)
		ok = err == nil
		return nil
	})
	return ok
}

func (s *buntStore) remaining() int {
	n := 0
	_ = s.db.View(func(tx *buntdb.Tx) error {
		n, _ = tx.Len()
		return nil
	})
	return n
}

func (s *buntStore) close() { s.db.Close() }

// ---- ttlcache ----

type ttlcacheStore[V value] struct {
	c        *ttlcache.Cache[string, V]
	conv     func(Doc) V
	inserted atomic.Int64
}

func newTTLCacheStore[V value](o storeOpts, conv func(Doc) V) *ttlcacheStore[V] {
	c := ttlcache.New[string, V](ttlcache.WithDisableTouchOnHit[string, V]())
	if o.onRemoved != nil {
		c.OnEviction(func(_ context.Context, r ttlcache.EvictionReason, it *ttlcache.Item[string, V]) {
			if r == ttlcache.EvictionReasonExpired {
				o.onRemoved([]string{it.Key()}, time.Now())
			}
		})
	}
	go c.Start()
	return &ttlcacheStore[V]{c: c, conv: conv}
}

func (s *ttlcacheStore[V]) prepare(docs []Doc) any { return convAll(docs, s.conv) }

// convAll converts docs to a shape's struct.
func convAll[V value](docs []Doc, conv func(Doc) V) []V {
	out := make([]V, len(docs))
	for i, d := range docs {
		out[i] = conv(d)
	}
	return out
}

func (s *ttlcacheStore[V]) insert(b any) error {
	vs := b.([]V)
	for _, v := range vs {
		s.c.Set(v.key(), v, time.Until(v.threshold()))
	}
	s.inserted.Add(int64(len(vs)))
	return nil
}

func (s *ttlcacheStore[V]) get(key string) bool { return s.c.Get(key) != nil }

// remaining counts evictions through Metrics, which does not take the
// cache's item lock (Len would, and would count only unexpired items).
func (s *ttlcacheStore[V]) remaining() int {
	return int(s.inserted.Load() - int64(s.c.Metrics().Evictions))
}
func (s *ttlcacheStore[V]) close() { s.c.Stop() }

// ---- go-cache ----

type goCacheStore[V value] struct {
	c    *gocache.Cache
	conv func(Doc) V
}

func (s *goCacheStore[V]) prepare(docs []Doc) any { return convAll(docs, s.conv) }

func (s *goCacheStore[V]) insert(b any) error {
	for _, v := range b.([]V) {
		s.c.Set(v.key(), v, time.Until(v.threshold()))
	}
	return nil
}

func (s *goCacheStore[V]) get(key string) bool { _, ok := s.c.Get(key); return ok }
func (s *goCacheStore[V]) remaining() int      { return s.c.ItemCount() }
func (s *goCacheStore[V]) close()              { s.c.Flush() }

// ---- golang-lru/v2/expirable ----

// lruStore: expirable.LRU has one TTL for the whole cache, counted from
// each Add; the documents' own thresholds are ignored.
type lruStore[V value] struct {
	c    *expirable.LRU[string, V]
	conv func(Doc) V
}

func (s *lruStore[V]) prepare(docs []Doc) any { return convAll(docs, s.conv) }

func (s *lruStore[V]) insert(b any) error {
	for _, v := range b.([]V) {
		s.c.Add(v.key(), v)
	}
	return nil
}

func (s *lruStore[V]) get(key string) bool { _, ok := s.c.Get(key); return ok }
func (s *lruStore[V]) remaining() int      { return s.c.Len() }
func (s *lruStore[V]) close()              { s.c.Purge() } // its goroutine cannot be stopped (v2.0.7)
