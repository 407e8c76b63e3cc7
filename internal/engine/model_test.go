package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
)

// The model test. 4 to 8 writers insert, $set, $unset and $currentDate the
// TTL fields of, replace and delete documents of two collections with three
// TTL indexes, while the background monitor and RunTTLPass run passes, the
// clock advances and jumps a day forward or back, CollMod changes
// ExpireAfterSeconds, and (hooks=true) an expire hook archives, sometimes
// fails, and is offered documents again. A model of every document, which
// each writer updates under the document's lock together with its write,
// is the reference. Checked at every DeleteEvent:
//
//   - no document was deleted before its threshold at the moment of its
//     deletion: its threshold (indexed date + ExpireAfterSeconds, with the
//     lowest value a concurrent CollMod may have put in force) is not after
//     the highest state the clock had while its batch ran, nor after the
//     batch's own now;
//   - the batch's now is honest: not after the pass's now, either the
//     pass's now or a value the clock returned since the previous batch,
//     and not after the clock's highest state during the batch;
//   - with hooks, the version deleted had been offered to the hook.
//
// After the writers stop, a final pass at the clock's time T must leave
// exactly the documents whose threshold is after T, each as the model has
// it (edge documents with thresholds T-1ns, T and T+1ns under each index
// make the boundary certain to be met).
//
// The race between a writer and the monitor needs no guess: a write that
// finds its document gone (the monitor deleted it) leaves the model alone,
// and the DeleteEvent, checked under the document's lock, meets the model
// as it was at the deletion, since no write can succeed on a deleted
// document before its event is checked (writers insert only what the model
// has deleted). A document re-dated just before the monitor's batch is
// deleted only if its new date has expired too; with hooks, only in a
// version the hook was offered.
//
// "During the batch" is a window of the clock's states (modelClock): from
// the return of the previous batch's observer or of this batch's hook,
// whichever is later, to this batch's DeleteEvent. Passes are serialized,
// so the batch's hold of the write lock lies within it.
//
// jumps=between moves the clock back only while no pass runs; jumps=during
// also moves it back in the middle of passes (from the hook, the observer
// and the controller), issue 9 item 8's case.

// modelIndexes are the TTL indexes of the model, in a fixed order: the
// index of this slice is how the model and modelClock name them.
var modelIndexes = []modelIndex{
	{"sessions", "at", TTLValuesDatesAndArango},
	{"events", "a", TTLValuesDatesAndArango},
	{"events", "b", TTLValuesDatesOnly},
}

// modelColls are the collections: the id prefix of their documents and
// their TTL indexes (positions in modelIndexes).
var modelColls = []modelColl{
	{"sessions", "s", []int{0}},
	{"events", "e", []int{1, 2}},
}

var (
	modelEAS        = []int64{0, 1, 10, 60, 600, 3600, 86400} // CollMod draws from these
	modelJumps      = []time.Duration{-24 * time.Hour, 0, 24 * time.Hour}
	errModelHook    = errors.New("model hook: archive unavailable")
	modelISO8601Fmt = "2006-01-02T15:04:05.000000000Z"
)

type modelIndex struct {
	coll, field string
	forms       TTLValueForms
}

type modelColl struct {
	name, prefix string
	idx          []int
}

// modelConfig is one run of the model.
type modelConfig struct {
	seed   uint64
	ops    int  // operations: writes, and one controller action per modelWritesPerAction
	docs   int  // documents per collection the writers use
	hooks  bool // an expire hook (which sometimes fails)
	during bool // clock jumps back during passes too
}

// modelDoc is the model of one document.
type modelDoc struct {
	mu     sync.Mutex
	coll   int
	id     string
	exists bool
	doc    Document // as stored; nil if unknown (a $currentDate not read back)
	v      int64    // the version: the "v" field the last write stored
	dates  []modelDate

	// edge is an edge document of the final phase, as inserted: it must be
	// stored after the final pass exactly when edgeTh is after its time,
	// whatever the DeleteEvents said.
	edge   Document
	edgeTh time.Time
}

// modelDate is what a TTL index reads in one field: ok=false never
// expires; else the date is in lo..hi (equal unless a $currentDate could
// not be read back before the monitor deleted the document).
type modelDate struct {
	ok     bool
	lo, hi time.Time
}

func exactDate(t time.Time) modelDate { return modelDate{true, t, t} }

type model struct {
	cfg   modelConfig
	clk   *modelClock
	db    *DB
	docs  []map[string]*modelDoc // per collection, by _id
	final atomic.Bool            // the final phase: no more jumps nor hook failures

	// batch is the window of the batch whose DeleteEvent comes next: opened
	// when the previous event's observer returns or the hook returns, it
	// holds every state of the clock while the batch held the write lock.
	// since is opened only by the observer: the values the clock returned
	// since the previous batch, among which the batch's own reading is.
	batchMu sync.Mutex
	batch   clockWindow
	since   clockWindow

	rngMu sync.Mutex
	rng   *rand.Rand // the hook's and observer's choices

	offMu   sync.Mutex
	offered map[string]int64 // "coll/_id" -> highest version offered to the hook

	version atomic.Int64

	repMu  sync.Mutex
	counts map[string]int
	msgs   []string

	writes, deleted, offers, hookFails, passes, jumps, collMods, advances atomic.Int64
}

// modelReport is what a run found.
type modelReport struct {
	seed   uint64
	counts map[string]int // violations by kind
	msgs   []string       // the first of them
	stats  string
}

func (r *modelReport) err() error {
	if len(r.counts) == 0 {
		return nil
	}
	kinds := slices.Sorted(maps.Keys(r.counts))
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s=%d", k, r.counts[k])
	}
	return fmt.Errorf("model test, seed %d (TTLDB_SEED=%d to replay): violations%s:\n  %s",
		r.seed, r.seed, b.String(), strings.Join(r.msgs, "\n  "))
}

// violation records a broken invariant of kind: early (deleted before its
// threshold), batchnow (a dishonest batch now), hook (deleted without being
// offered), missed, extra (deleted when it should be stored), content,
// clock, pass, metrics, model (the DB contradicts the model's knowledge).
func (m *model) violation(kind, format string, args ...any) {
	m.repMu.Lock()
	defer m.repMu.Unlock()
	m.counts[kind]++
	if len(m.msgs) < 20 {
		m.msgs = append(m.msgs, kind+": "+fmt.Sprintf(format, args...))
	}
}

// batchNow returns the instant a TTL batch deleted against, as its
// DeleteEvent reports it: the one place the checker reads it.
func batchNow(ev DeleteEvent) time.Time {
	return ev.BatchNow
}

// TestModel runs the model with a short seed: 100k operations in all,
// shared by the four modes (a few seconds with -race).
func TestModel(t *testing.T) {
	runModelModes(t, 100_000)
}

// TestSoakModel is TestModel for longer: TTLDB_SOAK=short (CI) runs 400k
// operations, any other non-empty value 10M.
func TestSoakModel(t *testing.T) {
	ops := 0
	switch os.Getenv("TTLDB_SOAK") {
	case "":
		t.Skip("set TTLDB_SOAK=short or TTLDB_SOAK=1")
	case "short":
		ops = 400_000
	default:
		ops = 10_000_000
	}
	runModelModes(t, ops)
}

// runModelModes runs the model in each mode, the ops operations shared
// among them.
func runModelModes(t *testing.T, ops int) {
	const modes = 4
	for _, during := range []bool{false, true} {
		for _, hooks := range []bool{false, true} {
			name := fmt.Sprintf("jumps=between/hooks=%v", hooks)
			if during {
				name = fmt.Sprintf("jumps=during/hooks=%v", hooks)
			}
			t.Run(name, func(t *testing.T) {
				rep := runModel(t, modelConfig{seed: testutil.Seed(t), ops: ops / modes, docs: 64, hooks: hooks, during: during})
				t.Log(rep.stats)
				if err := rep.err(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestModelCatchesLateCutoff breaks the cutoff by one nanosecond (a
// document is deleted when its threshold is 1ns ahead of the clock) and
// requires the model's checker to see it, both at the deletion and in the
// final comparison.
func TestModelCatchesLateCutoff(t *testing.T) {
	for _, hooks := range []bool{false, true} {
		t.Run(fmt.Sprintf("hooks=%v", hooks), func(t *testing.T) {
			ttlCutoffSkew = time.Nanosecond
			defer func() { ttlCutoffSkew = 0 }()
			rep := runModel(t, modelConfig{seed: testutil.Seed(t), ops: 2500, docs: 16, hooks: hooks})
			err := rep.err()
			require.Error(t, err, "a cutoff 1ns late went unnoticed")
			t.Logf("as required: %v", err)
			assert.Positive(t, rep.counts["early"], "no deletion was reported early")
			assert.Positive(t, rep.counts["extra"], "the final comparison found no extra deletion")
		})
	}
}

// modelEdges is how many edge documents the final phase writes per TTL
// index: thresholds T-1ns, T, T+1ns, then a backlog larger than any batch
// or per-index cap, half of it expired.
const modelEdges = 3 + 64

// newModel returns a model of documents none of which is stored yet, on a
// clock at t0 with the indexes' ExpireAfterSeconds eas.
func newModel(cfg modelConfig, eas []int64) *model {
	m := &model{
		cfg:     cfg,
		clk:     newModelClock(t0, eas),
		rng:     rand.New(rand.NewPCG(cfg.seed, 200)),
		offered: map[string]int64{},
		counts:  map[string]int{},
	}
	for ci, c := range modelColls {
		docs := map[string]*modelDoc{}
		add := func(id string) {
			docs[id] = &modelDoc{coll: ci, id: id, dates: make([]modelDate, len(c.idx))}
		}
		for i := range cfg.docs {
			add(fmt.Sprintf("%s%03d", c.prefix, i))
		}
		for _, ix := range c.idx {
			for k := range modelEdges {
				add(modelEdgeID(c, ix, k))
			}
		}
		m.docs = append(m.docs, docs)
	}
	return m
}

func modelEdgeID(c modelColl, ix, k int) string {
	return fmt.Sprintf("%s-edge-%d-%02d", c.prefix, ix, k)
}

// runModel runs one model scenario and reports the violations it saw. It
// fails t only when the scenario cannot be set up.
func runModel(t testing.TB, cfg modelConfig) *modelReport {
	rng := rand.New(rand.NewPCG(cfg.seed, 0))
	eas := make([]int64, len(modelIndexes))
	for i := range eas {
		eas[i] = modelEAS[rng.IntN(len(modelEAS))]
	}
	m := newModel(cfg, eas)

	mo := MonitorOptions{
		Interval:           time.Duration(1+rng.IntN(5)) * time.Second,
		BatchSize:          1 + rng.IntN(16),
		PerIndexMaxDeletes: []int{3, 20, 0}[rng.IntN(3)],
		DeadlineWake:       rng.IntN(2) == 0,
	}
	if rng.IntN(3) == 0 {
		mo.MaxTotalRemoves = 50
	}
	if rng.IntN(3) == 0 {
		mo.MaxCollectionRemoves = 30
	}
	writers := 4 + rng.IntN(5)
	opts := []Option{WithClock(m.clk), WithMonitor(mo), WithDeleteObserver(m.observe)}
	if cfg.hooks {
		opts = append(opts, WithOnExpire(m.hook))
	}
	m.clk.open(&m.batch, false)
	m.clk.open(&m.since, true)
	db, err := Open(opts...)
	require.NoError(t, err)
	m.db = db
	defer db.Close()
	for i, ix := range modelIndexes {
		_, err := db.Collection(ix.coll).CreateIndex(context.Background(), IndexModel{
			Keys: []IndexKey{Asc(ix.field)}, ExpireAfterSeconds: Seconds(int32(eas[i])), TTLValueForms: ix.forms,
		})
		require.NoError(t, err)
	}

	tick := make(chan struct{}, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		n := cfg.ops * modelWritesPerAction / (modelWritesPerAction + 1) / writers
		wrng := rand.New(rand.NewPCG(cfg.seed, uint64(w)+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.writer(wrng, n, tick)
		}()
	}
	crng := rand.New(rand.NewPCG(cfg.seed, 100))
	controls := make(chan int)
	go func() { controls <- m.control(crng, tick, stop) }()
	wg.Wait()
	close(stop)
	nControls := <-controls

	m.finalPass(mo.Interval)
	require.NoError(t, db.Close())
	if got := db.Metrics().TTL.DeletedDocuments; got != m.deleted.Load() {
		m.violation("metrics", "Metrics().TTL.DeletedDocuments = %d, DeleteEvents reported %d", got, m.deleted.Load())
	}
	m.repMu.Lock()
	defer m.repMu.Unlock()
	return &modelReport{
		seed:   cfg.seed,
		counts: m.counts,
		msgs:   m.msgs,
		stats: fmt.Sprintf("%d writers: %d writes; controller: %d actions (%d RunTTLPass, %d advances, %d jumps, %d CollMod); "+
			"%d background+run passes in all, %d deleted, %d offered to the hook (%d calls failed); options %+v",
			writers, m.writes.Load(), nControls, m.passes.Load(), m.advances.Load(), m.jumps.Load(), m.collMods.Load(),
			db.Metrics().TTL.Passes, m.deleted.Load(), m.offers.Load(), m.hookFails.Load(), mo),
	}
}

// modelWritesPerAction is how many writes a writer makes per action of the
// controller (which it waits for).
const modelWritesPerAction = 4

// writer makes n random writes, waiting for the controller to take a tick
// every modelWritesPerAction, so that passes, jumps and CollMods keep
// pace with the writes.
func (m *model) writer(rng *rand.Rand, n int, tick chan<- struct{}) {
	var win clockWindow
	for i := range n {
		ci := rng.IntN(len(modelColls))
		d := m.docs[ci][fmt.Sprintf("%s%03d", modelColls[ci].prefix, rng.IntN(m.cfg.docs))]
		d.mu.Lock()
		m.write(rng, d, &win)
		d.mu.Unlock()
		m.writes.Add(1)
		if i%modelWritesPerAction == 0 {
			tick <- struct{}{}
		}
	}
}

// write makes one random write to d, whose lock the caller holds, and
// records it in the model.
func (m *model) write(rng *rand.Rand, d *modelDoc, win *clockWindow) {
	mc := modelColls[d.coll]
	c := m.db.Collection(mc.name)
	filter := Document{"_id": d.id}
	v := m.version.Add(1)
	if !d.exists {
		doc, dates := m.newDoc(rng, d, v)
		if _, err := c.InsertOne(context.Background(), doc); err != nil {
			m.violation("model", "%s/%s: insert of a document the model has deleted: %v", mc.name, d.id, err)
			return
		}
		d.exists, d.doc, d.v, d.dates = true, doc, v, dates
		return
	}
	pos := rng.IntN(len(mc.idx))
	field := modelIndexes[mc.idx[pos]].field
	switch r := rng.IntN(100); {
	case r < 35: // $set a TTL field to a date, an Arango form or a non-date, or $unset it
		val, has := m.ttlValue(rng, mc.idx[pos])
		upd := Document{"$set": Document{"v": v}}
		if has {
			upd["$set"].(Document)[field] = val
		} else {
			upd["$unset"] = Document{field: ""}
		}
		res, err := c.UpdateOne(context.Background(), filter, upd)
		if !m.matched(d, "update", matchedOf(res), err) {
			return
		}
		doc := maps.Clone(d.doc)
		if has {
			doc[field] = val
		} else {
			delete(doc, field)
		}
		doc["v"] = v
		d.doc, d.v = doc, v
		d.dates[pos] = modelDateOf(val, has, modelIndexes[mc.idx[pos]].forms)
	case r < 55: // $currentDate: the DB's clock writes the date, read back
		m.clk.open(win, false)
		res, err := c.UpdateOne(context.Background(), filter, Document{"$currentDate": Document{field: true}, "$set": Document{"v": v}})
		m.clk.close(win)
		if !m.matched(d, "$currentDate", matchedOf(res), err) {
			return
		}
		got, err := c.FindOne(context.Background(), filter).Document()
		if errors.Is(err, ErrNotFound) {
			// The monitor deleted it in between: the date is one the clock
			// showed during the write; its DeleteEvent will be checked
			// against the lowest.
			d.doc, d.v = nil, v
			d.dates[pos] = modelDate{true, win.lo, win.hi}
			return
		}
		if err != nil {
			m.violation("model", "%s/%s: FindOne after $currentDate: %v", mc.name, d.id, err)
			return
		}
		at, ok := got[field].(time.Time)
		switch {
		case !ok || got["v"] != v:
			m.violation("model", "%s/%s: after $currentDate (version %d) read %v", mc.name, d.id, v, got)
			return
		case at.Before(win.lo) || at.After(win.hi):
			m.violation("clock", "%s/%s: $currentDate wrote %v, not a time the clock showed during the write [%v, %v]", mc.name, d.id, at, win.lo, win.hi)
		}
		doc := maps.Clone(d.doc)
		doc[field], doc["v"] = at, v
		d.doc, d.v = doc, v
		d.dates[pos] = exactDate(at)
	case r < 70: // replace: new TTL fields, new payload
		doc, dates := m.newDoc(rng, d, v)
		repl := maps.Clone(doc)
		delete(repl, "_id")
		res, err := c.ReplaceOne(context.Background(), filter, repl)
		if !m.matched(d, "replace", matchedOf(res), err) {
			return
		}
		d.doc, d.v, d.dates = doc, v, dates
	case r < 80: // delete
		n, err := c.DeleteOne(context.Background(), filter)
		if !m.matched(d, "delete", deletedOf(n), err) {
			return
		}
		d.exists, d.doc = false, nil
	default: // a change the TTL indexes do not see: a new version all the same
		p := modelPayload(rng)
		res, err := c.UpdateOne(context.Background(), filter, Document{"$set": Document{"p": p, "v": v}})
		if !m.matched(d, "update", matchedOf(res), err) {
			return
		}
		doc := maps.Clone(d.doc)
		doc["p"], doc["v"] = p, v
		d.doc, d.v = doc, v
	}
}

// matched reports whether a write to a document the model has stored
// found it. One that did not met a deletion by the monitor, which its
// DeleteEvent will bring to the model.
func (m *model) matched(d *modelDoc, what string, n int, err error) bool {
	switch {
	case err != nil:
		m.violation("model", "%s/%s: %s: %v", modelColls[d.coll].name, d.id, what, err)
		return false
	case n == 0:
		return false
	case d.doc == nil:
		m.violation("model", "%s/%s: %s found the document, which had read back as deleted", modelColls[d.coll].name, d.id, what)
		return false
	}
	return true
}

// newDoc returns a new version of d's document and what its TTL indexes
// read in it.
func (m *model) newDoc(rng *rand.Rand, d *modelDoc, v int64) (Document, []modelDate) {
	mc := modelColls[d.coll]
	doc := Document{"_id": d.id, "v": v, "p": modelPayload(rng)}
	dates := make([]modelDate, len(mc.idx))
	for pos, ix := range mc.idx {
		val, has := m.ttlValue(rng, ix)
		if has {
			doc[modelIndexes[ix].field] = val
		}
		dates[pos] = modelDateOf(val, has, modelIndexes[ix].forms)
	}
	return doc, dates
}

func modelPayload(rng *rand.Rand) string {
	return strings.Repeat("x", rng.IntN(40))
}

// ttlValue returns a value for TTL index ix's field (has=false: leave it
// out): mostly a date near the one that expires at the clock's time now
// (exactly it, 1ns either side, seconds, hours or a day away), in every
// form the index may read.
func (m *model) ttlValue(rng *rand.Rand, ix int) (val any, has bool) {
	base := m.clk.peek().Add(-m.clk.expireAfter(ix))
	var delta time.Duration
	switch r := rng.IntN(100); {
	case r < 25:
		delta = time.Duration(rng.IntN(3) - 1)
	case r < 55:
		delta = time.Duration(rng.Int64N(int64(4*time.Second))) - 2*time.Second
	case r < 75:
		delta = time.Duration(rng.Int64N(int64(4*time.Hour))) - 2*time.Hour
	case r < 88:
		delta = modelJumps[rng.IntN(3)] + time.Duration(rng.IntN(3)-1)
	case r < 94:
		delta = 10 * 365 * 24 * time.Hour
	default:
		delta = -10 * 365 * 24 * time.Hour
	}
	d := base.Add(delta).UTC()
	switch r := rng.IntN(100); {
	case r < 60:
		return d, true
	case r < 70:
		return []any{d.Add(time.Duration(rng.Int64N(int64(time.Hour)))), d}, true
	case r < 78:
		return d.Unix(), true
	case r < 86:
		return d.Format(modelISO8601Fmt), true
	case r < 92:
		return "never", true
	}
	return nil, false
}

// modelDateOf is the model's own reading of a TTL field's value (only the
// kinds ttlValue makes).
func modelDateOf(val any, has bool, forms TTLValueForms) modelDate {
	if !has {
		return modelDate{}
	}
	arango := forms == TTLValuesDatesAndArango
	switch x := val.(type) {
	case time.Time:
		return exactDate(x)
	case []any:
		return exactDate(minTime(x[0].(time.Time), x[1].(time.Time)))
	case int64:
		if arango && x >= 0 {
			return exactDate(time.Unix(x, 0).UTC())
		}
	case string:
		if d, err := time.Parse(modelISO8601Fmt, x); err == nil && arango {
			return exactDate(d)
		}
	}
	return modelDate{}
}

// control drives the clock, RunTTLPass and CollMod, one action per tick
// from the writers, until stop. It returns how many actions it took.
func (m *model) control(rng *rand.Rand, tick <-chan struct{}, stop <-chan struct{}) int {
	n := 0
	for {
		select {
		case <-stop:
			return n
		case <-tick:
		}
		n++
		switch r := rng.IntN(100); {
		case r < 40:
			m.advance(rng)
		case r < 52:
			// jumps=between moves the clock back only while no pass runs:
			// the background monitor asleep, and RunTTLPass is ours.
			m.jump(rng, !m.cfg.during)
		case r < 80:
			m.passes.Add(1)
			if _, err := m.db.RunTTLPass(context.Background()); err != nil {
				m.violation("pass", "RunTTLPass: %v", err)
			}
		case r < 90:
			m.collMod(rng)
		}
	}
}

func (m *model) advance(rng *rand.Rand) {
	var d time.Duration
	switch r := rng.IntN(10); {
	case r < 3:
		d = time.Duration(1 + rng.IntN(1000))
	case r < 8:
		d = time.Duration(rng.Int64N(int64(2 * time.Second)))
	default:
		d = time.Duration(rng.Int64N(int64(2 * time.Hour)))
	}
	m.advances.Add(1)
	m.clk.Advance(d)
}

func (m *model) jump(rng *rand.Rand, waitAsleep bool) {
	m.jumps.Add(1)
	if !m.clk.jump(modelJumps[rng.IntN(len(modelJumps))], waitAsleep) {
		m.violation("pass", "the background monitor did not go back to sleep within a minute")
	}
}

func (m *model) collMod(rng *rand.Rand) {
	i := rng.IntN(len(modelIndexes))
	ix := modelIndexes[i]
	n := modelEAS[rng.IntN(len(modelEAS))]
	old := int64(m.clk.expireAfter(i) / time.Second)
	m.collMods.Add(1)
	m.clk.collModStart(i, n)
	res, err := m.db.CollMod(context.Background(), ix.coll, CollModIndex{Name: ix.field + "_1", ExpireAfterSeconds: Seconds(int32(n))})
	if err != nil {
		m.violation("model", "CollMod %s %s: %v", ix.coll, ix.field, err)
		m.clk.collModEnd(i, old)
		return
	}
	if res.ExpireAfterSecondsOld == nil || int64(*res.ExpireAfterSecondsOld) != old {
		m.violation("model", "CollMod %s %s: old value %v, the model had %d", ix.coll, ix.field, res.ExpireAfterSecondsOld, old)
	}
	m.clk.collModEnd(i, n)
}

// inside is what the hook and the observer do to the clock in
// jumps=during: now and then a jump or an advance, in the middle of a pass.
func (m *model) inside() {
	if !m.cfg.during || m.final.Load() {
		return
	}
	m.rngMu.Lock()
	r, j := m.rng.IntN(100), m.rng.IntN(len(modelJumps))
	d := time.Duration(m.rng.Int64N(int64(2 * time.Second)))
	m.rngMu.Unlock()
	switch {
	case r < 5:
		m.jumps.Add(1)
		m.clk.jump(modelJumps[j], false)
	case r < 10:
		m.advances.Add(1)
		m.clk.Advance(d)
	}
}

// hook is the expire hook of hooks=true: it notes the versions offered,
// fails one call in 20 (not in the final phase), and starts the window of
// the batch that follows it.
func (m *model) hook(ctx context.Context, b ExpiredBatch) error {
	m.offMu.Lock()
	for _, doc := range b.Docs {
		key := b.Collection + "/" + doc["_id"].(string)
		if v := doc["v"].(int64); v > m.offered[key] {
			m.offered[key] = v
		}
	}
	m.offMu.Unlock()
	m.offers.Add(int64(len(b.Docs)))
	m.inside()
	var err error
	m.rngMu.Lock()
	if m.rng.IntN(20) == 0 && !m.final.Load() {
		err = errModelHook
		m.hookFails.Add(1)
	}
	m.rngMu.Unlock()
	m.batchMu.Lock()
	m.clk.close(&m.batch)
	m.clk.open(&m.batch, false)
	m.batchMu.Unlock()
	return err
}

// observe checks a DeleteEvent against the model and the clock's window of
// its batch, then opens the window of the next batch.
func (m *model) observe(ev DeleteEvent) {
	m.batchMu.Lock()
	defer m.batchMu.Unlock()
	m.clk.close(&m.batch)
	m.clk.close(&m.since)
	defer func() {
		m.clk.open(&m.batch, false)
		m.clk.open(&m.since, true)
	}()
	w := &m.batch
	i := slices.IndexFunc(modelIndexes, func(x modelIndex) bool {
		return x.coll == ev.Collection && x.field+"_1" == ev.Index
	})
	if i < 0 {
		m.violation("model", "DeleteEvent for an unknown index %s.%s", ev.Collection, ev.Index)
		return
	}
	ci := slices.IndexFunc(modelColls, func(c modelColl) bool { return c.name == ev.Collection })
	pos := slices.Index(modelColls[ci].idx, i)
	bn := batchNow(ev)
	switch {
	case bn.After(ev.PassNow):
		m.violation("batchnow", "%s.%s: batch now %v after the pass's now %v", ev.Collection, ev.Index, bn, ev.PassNow)
	case !bn.Equal(ev.PassNow) && !hasNow(&m.since, bn):
		m.violation("batchnow", "%s.%s: batch now %v is neither the pass's now nor a value the clock returned during the batch", ev.Collection, ev.Index, bn)
	case bn.After(w.hi):
		m.violation("batchnow", "%s.%s: batch now %v (pass now %v) after the clock's every state during the batch (highest %v)", ev.Collection, ev.Index, bn, ev.PassNow, w.hi)
	}
	eas := time.Duration(w.easMin[i]) * time.Second
	for _, rawID := range ev.IDs {
		id, _ := rawID.(string)
		d := m.docs[ci][id]
		if d == nil {
			m.violation("model", "%s: deleted a document the model never wrote: %v", ev.Collection, rawID)
			continue
		}
		m.deleted.Add(1)
		d.mu.Lock()
		m.checkDeleted(ev, d, pos, eas, w, bn)
		d.exists, d.doc = false, nil
		d.mu.Unlock()
	}
	m.inside()
}

// checkDeleted checks one document of a DeleteEvent; the caller holds its
// lock.
func (m *model) checkDeleted(ev DeleteEvent, d *modelDoc, pos int, eas time.Duration, w *clockWindow, bn time.Time) {
	where := fmt.Sprintf("%s/%s (version %d) deleted through %s", ev.Collection, d.id, d.v, ev.Index)
	if !d.exists {
		m.violation("model", "%s: the model has it deleted already", where)
		return
	}
	date := d.dates[pos]
	if !date.ok {
		m.violation("early", "%s: its field holds no date", where)
		return
	}
	th := date.lo.Add(eas)
	if th.After(w.hi) {
		m.violation("early", "%s: threshold %v (ExpireAfterSeconds %v) after the clock's every state during its batch (highest %v)", where, th, eas, w.hi)
	} else if th.After(bn) {
		m.violation("early", "%s: threshold %v after the batch's now %v", where, th, bn)
	}
	if m.cfg.hooks {
		key := ev.Collection + "/" + d.id
		m.offMu.Lock()
		offered, ok := m.offered[key]
		delete(m.offered, key)
		m.offMu.Unlock()
		if !ok || offered != d.v {
			m.violation("hook", "%s: never offered to the hook in this version (last offered: %d)", where, offered)
		}
	}
}

func hasNow(w *clockWindow, t time.Time) bool {
	_, ok := w.nows[t.UnixNano()]
	return ok
}

// settle runs passes an Interval of clock time apart until one is
// complete, at most 64.
func (m *model) settle(interval time.Duration) bool {
	for range 64 {
		res, err := m.db.RunTTLPass(context.Background())
		if err != nil {
			m.violation("pass", "RunTTLPass: %v", err)
			return true
		}
		if res.Complete && res.Errors == 0 {
			return true
		}
		m.clk.Advance(interval)
	}
	return false
}

// finalPass ends the run: no more jumps nor hook failures, passes until
// failed deliveries are retried, edge documents
// under each index (thresholds T-1ns, T, T+1ns, and a backlog within two
// hours of T either side), passes at T until one is complete, then the DB
// must hold exactly what the model says.
func (m *model) finalPass(interval time.Duration) {
	m.final.Store(true)
	// A background pass may be running, and its observer jumping the clock
	// (jumps=during): after this pass, the clock moves only here.
	if _, err := m.db.RunTTLPass(context.Background()); err != nil {
		m.violation("pass", "RunTTLPass: %v", err)
	}
	// Deliveries the hook failed wait for their retry, at most Interval
	// after the failure (ExpireHook): passes an Interval apart must soon
	// leave none.
	if !m.settle(interval) {
		m.violation("missed", "64 passes an Interval (%v) apart, none complete; failed deliveries: %+v", interval, m.db.Metrics().TTL.FailedDeliveries)
	}
	T := m.clk.peek()
	// Every batch from here on runs at T: its window needs nothing older.
	m.batchMu.Lock()
	m.clk.close(&m.batch)
	m.clk.open(&m.batch, false)
	m.batchMu.Unlock()
	for ci, mc := range modelColls {
		for pos, ix := range mc.idx {
			for k := range modelEdges {
				delta := time.Duration(k - 1) // -1ns, 0, +1ns
				if k >= 3 {
					m.rngMu.Lock()
					delta = time.Duration(m.rng.Int64N(int64(4*time.Hour))) - 2*time.Hour
					m.rngMu.Unlock()
				}
				d := m.docs[ci][modelEdgeID(mc, ix, k)]
				v := m.version.Add(1)
				date := T.Add(-m.clk.expireAfter(ix) + delta)
				doc := Document{"_id": d.id, "v": v, modelIndexes[ix].field: date}
				d.mu.Lock()
				if _, err := m.db.Collection(mc.name).InsertOne(context.Background(), doc); err != nil {
					m.violation("model", "insert of edge document %s: %v", d.id, err)
				} else {
					d.exists, d.doc, d.v = true, doc, v
					d.dates[pos] = exactDate(date)
					d.edge, d.edgeTh = doc, T.Add(delta)
				}
				d.mu.Unlock()
			}
		}
	}
	for k := 0; ; k++ {
		res, err := m.db.RunTTLPass(context.Background())
		if err != nil {
			m.violation("pass", "final RunTTLPass: %v", err)
			return
		}
		if res.Complete && res.Errors == 0 {
			break
		}
		if k == 1000 {
			m.violation("missed", "1000 final passes and none complete: last %+v", res)
			break
		}
	}
	for ci, mc := range modelColls {
		stored, err := findDocs(m.db.Collection(mc.name), nil)
		if err != nil {
			m.violation("model", "Find in %s: %v", mc.name, err)
			continue
		}
		byID := map[string]Document{}
		for _, doc := range stored {
			byID[doc["_id"].(string)] = doc
		}
		for _, id := range slices.Sorted(maps.Keys(m.docs[ci])) {
			d := m.docs[ci][id]
			d.mu.Lock()
			m.compare(mc.name, d, byID[id], T)
			d.mu.Unlock()
			delete(byID, id)
		}
		for id := range byID {
			m.violation("extra", "%s/%s: stored, the model never wrote it", mc.name, id)
		}
	}
}

// compare checks one document after the final pass at T; the caller holds
// its lock.
func (m *model) compare(coll string, d *modelDoc, got Document, T time.Time) {
	where := fmt.Sprintf("%s/%s (version %d)", coll, d.id, d.v)
	if d.edge != nil {
		switch {
		case d.edgeTh.After(T) && got == nil:
			m.violation("extra", "%s: edge document gone, yet its threshold %v is after now %v", where, d.edgeTh, T)
		case !d.edgeTh.After(T) && got != nil:
			m.violation("missed", "%s: edge document stored after a complete pass, its threshold %v <= now %v", where, d.edgeTh, T)
		case got != nil && !sameValue(got, d.edge):
			m.violation("content", "%s: stored %v, inserted %v", where, got, d.edge)
		}
		return
	}
	if !d.exists {
		if got != nil {
			m.violation("extra", "%s: stored, the model has it deleted: %v", where, got)
		}
		return
	}
	if d.doc == nil {
		m.violation("model", "%s: read back as deleted after a $currentDate, yet no DeleteEvent came", where)
		return
	}
	var th time.Time
	expires := false
	for pos, date := range d.dates {
		if !date.ok {
			continue
		}
		t := date.lo.Add(m.clk.expireAfter(modelColls[d.coll].idx[pos]))
		if !expires || t.Before(th) {
			th, expires = t, true
		}
	}
	switch {
	case expires && !th.After(T) && got != nil:
		m.violation("missed", "%s: threshold %v <= now %v, still stored after a complete pass", where, th, T)
	case expires && !th.After(T):
		m.violation("extra", "%s: gone with no DeleteEvent", where)
	case got == nil:
		m.violation("extra", "%s: gone, yet its threshold %v is after now %v (expires: %v)", where, th, T, expires)
	case !sameValue(got, d.doc):
		m.violation("content", "%s: stored %v, the model has %v", where, got, d.doc)
	}
}

// sameValue compares a document read back with the model's: times by
// instant, the rest exactly.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, sameValue)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// TestModelCheckerFlagsStaleNow feeds the checker the DeleteEvent of issue
// 9 item 8's early deletion (the clock a day fast when the pass began, set
// back before the batch, a document 30 minutes from its threshold deleted
// against the pass's now) and requires it to report the deletion as early
// and the batch's now as above the clock; and the same deletion without
// the correction, which it must accept.
func TestModelCheckerFlagsStaleNow(t *testing.T) {
	for _, corrected := range []bool{true, false} {
		t.Run(fmt.Sprintf("corrected=%v", corrected), func(t *testing.T) {
			m := newModel(modelConfig{docs: 1}, []int64{60, 60, 60})
			m.clk.jump(24*time.Hour, false)
			passNow := m.clk.Now()
			date := t0.Add(30*time.Minute - time.Minute) // threshold: 30 minutes after true time
			if corrected {
				m.clk.jump(0, false) // the wall clock is corrected
			}
			m.clk.open(&m.batch, false) // then a batch begins (the previous one's observer returns)
			m.clk.open(&m.since, true)
			d := m.docs[0]["s000"]
			d.exists, d.doc, d.v, d.dates[0] = true, Document{"_id": "s000", "at": date, "v": int64(1)}, 1, exactDate(date)

			// What a batch that ignores the clock would report.
			ev := DeleteEvent{Collection: "sessions", Index: "at_1", IDs: []any{"s000"}, PassNow: passNow, BatchNow: passNow}
			m.observe(ev)
			want := 0
			if corrected {
				want = 1
			}
			assert.Equal(t, want, m.counts["early"], "%v", m.msgs)
			assert.Equal(t, want, m.counts["batchnow"], "%v", m.msgs)
			assert.Len(t, m.counts, 2*want, "%v", m.msgs)
			assert.False(t, d.exists, "the model takes the deletion in")
		})
	}
}

// TestFailedDeliveryRetriedAfterClockStepsBack: a delivery the hook failed
// is retried at most Interval after the failure (ExpireHook), also when the
// wall clock is corrected back in between. Found by the model test: today
// the retry waits until the clock reaches the failure time + backoff
// again, a day after a one-day correction, and Metrics' OldestAge reads 0.
func TestFailedDeliveryRetriedAfterClockStepsBack(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	db, clk := openMon(t, quiet(MonitorOptions{Interval: time.Minute}), WithOnExpire(func(ctx context.Context, b ExpiredBatch) error {
		if fail.Load() {
			return errModelHook
		}
		return nil
	}))
	c := ttlColl(t, db, "sessions", 0)
	_, err := c.InsertOne(context.Background(), Document{"_id": 1, "lastModifiedDate": t0})
	require.NoError(t, err)
	clk.Set(t0.Add(24 * time.Hour)) // a day fast
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, res.Errors, "the hook failed")
	fail.Store(false)
	clk.Set(t0) // corrected
	for range 2 {
		clk.Advance(time.Minute) // an Interval
		_, err = db.RunTTLPass(context.Background())
		require.NoError(t, err)
	}
	assert.Zero(t, count(t, c), "the failed delivery was retried within two Intervals")
	assert.Empty(t, db.Metrics().TTL.FailedDeliveries)
}

// matchedOf is an update's MatchedCount (0 for a failed update's nil
// result).
func matchedOf(r *UpdateResult) int {
	if r == nil {
		return 0
	}
	return int(r.MatchedCount)
}

// deletedOf is a delete's DeletedCount (0 for a failed delete's nil
// result).
func deletedOf(r *DeleteResult) int {
	if r == nil {
		return 0
	}
	return int(r.DeletedCount)
}
