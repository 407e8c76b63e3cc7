package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttldb/ttldb"
)

// trialOut is what one trial process prints on stdout.
type trialOut struct {
	Metrics []metricVal `json:"metrics"`
	Series  []point     `json:"series,omitempty"` // documents remaining over time since the threshold
	Notes   []string    `json:"notes,omitempty"`
}

type metricVal struct {
	Metric string  `json:"metric"`
	Unit   string  `json:"unit"`
	Value  float64 `json:"value"`
}

type point struct {
	Ms        float64 `json:"ms"`
	Remaining int     `json:"remaining"`
}

func (o *trialOut) add(metric, unit string, v float64) {
	o.Metrics = append(o.Metrics, metricVal{metric, unit, v})
}

// trialParams are the knobs the parent passes to a trial.
type trialParams struct {
	workload, store string
	n               int
	live            int           // latency: live documents read
	spread          time.Duration // lag: thresholds spread over this
	ttldbRead       string        // auto, findone, expiresat
	readEvery       time.Duration // latency: open-loop read interval
	idle            time.Duration // latency: idle read phase
	hostEvery       time.Duration // host: the service's request interval
	hostIdle        time.Duration // host: shortest idle phase
	tmp             string        // durability workloads: the directory trial directories go in
	groupDur        time.Duration // dgroup: how long the writers commit
	snapWriters     int           // dsnap: writers
	snapPause       time.Duration // dsnap: each writer's pause between calls
	snapPhase       time.Duration // dsnap: each phase's length
	snapCycles      int           // dsnap: cycles of a phase with snapshots, then one without
}

func runTrial(p trialParams) (err error) {
	var out trialOut
	switch {
	case p.workload == sessionWorkload:
		docShape = shapeSession
		err = trialMass(p, 100, &out)
	case strings.HasPrefix(p.workload, "mass"):
		pct, _ := strconv.Atoi(strings.TrimPrefix(p.workload, "mass"))
		err = trialMass(p, pct, &out)
	case p.workload == "latency":
		err = trialLatency(p, &out)
	case p.workload == slowReaderWorkload:
		p.readEvery = slowReadEvery
		err = trialLatency(p, &out)
	case p.workload == "compact":
		err = trialCompact(p, &out)
	case p.workload == "lag":
		err = trialLag(p, &out)
	case p.workload == "host":
		err = trialHost(p, &out)
	case p.workload == "dinsert", p.workload == "dinsert1":
		err = trialDInsert(p, &out)
	case p.workload == "dgroup":
		err = trialDGroup(p, &out)
	case p.workload == "restart":
		err = trialRestart(p, &out)
	case p.workload == "dsnap":
		err = trialDSnap(p, &out)
	default:
		err = fmt.Errorf("unknown workload %q", p.workload)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

const chunk = 1000 // documents per InsertMany / buntdb transaction / floor lock hold

// fill inserts docs [from, to) into s, document i expiring at expOf(i).
// Only the insert calls are timed; generating and preparing the input
// chunk by chunk keeps no input alive.
func fill(s store, from, to int, expOf func(i int) time.Time, order []int) (time.Duration, error) {
	var total time.Duration
	docs := make([]Doc, 0, chunk)
	for start := from; start < to; start += chunk {
		docs = docs[:0]
		for i := start; i < min(start+chunk, to); i++ {
			j := i
			if order != nil {
				j = order[i]
			}
			docs = append(docs, genDoc(j, expOf(j)))
		}
		b := s.prepare(docs)
		t := time.Now()
		if err := s.insert(b); err != nil {
			return 0, err
		}
		total += time.Since(t)
	}
	return total, nil
}

// heap returns the live heap after a full GC.
func heap() uint64 {
	h, _ := heapAndObjects()
	return h
}

// heapAndObjects returns the live heap (bytes) and the number of live heap
// objects after a full GC. runtime.GC returns after sweeping, so
// /gc/heap/objects:objects ("live or unswept") counts live objects only.
func heapAndObjects() (bytes, objects uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := []metrics.Sample{{Name: "/gc/heap/objects:objects"}}
	metrics.Read(s)
	return ms.HeapAlloc, s[0].Value.Uint64()
}

// gcCycles returns the number of GC cycles completed so far.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// calibrate estimates the store's insert time for n documents by filling a
// scratch instance with up to 5000, so that a trial can set its thresholds
// after its inserts end.
func calibrate(name string, n int) (time.Duration, error) {
	m := min(n, 5000)
	s, err := newStore(name, storeOpts{})
	if err != nil {
		return 0, err
	}
	far := time.Now().Add(24 * time.Hour)
	t := time.Now()
	_, err = fill(s, 0, m, func(int) time.Time { return far }, nil)
	d := time.Since(t) // wall time: input generation counts toward when inserts end
	s.close()
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(d) * float64(n) / float64(m)), nil
}

// heapPerDocEstimate fills a scratch instance with 20000 documents and
// returns its live heap per document (bytes), for a trial that must size
// a phase by the heap before it fills the store.
func heapPerDocEstimate(name string) (float64, error) {
	const m = 20000
	base := heap()
	s, err := newStore(name, storeOpts{})
	if err != nil {
		return 0, err
	}
	far := time.Now().Add(24 * time.Hour)
	if _, err := fill(s, 0, m, func(int) time.Time { return far }, nil); err != nil {
		s.close()
		return 0, err
	}
	h := heap()
	s.close()
	return max(0, float64(int64(h)-int64(base))/m), nil
}

// sampler polls remaining() every period and keeps (start, end, count) of
// each call, so that a removal window can be bounded from both sides even
// for stores whose count blocks during removal.
type sample struct {
	start, end time.Time
	n          int
}

func sampleUntil(s store, period time.Duration, target int, timeout time.Duration) ([]sample, bool) {
	var out []sample
	deadline := time.Now().Add(timeout)
	for {
		t := time.Now()
		n := s.remaining()
		out = append(out, sample{t, time.Now(), n})
		if n <= target {
			return out, true
		}
		if t.After(deadline) {
			return out, false
		}
		// Spin (yielding) rather than sleep: time.Sleep has ~1 ms
		// granularity here, too coarse for 100k-document windows.
		for time.Since(t) < period {
			runtime.Gosched()
		}
	}
}

// window returns the removal window: from the start of the last count that
// still saw all n to the end of the first count that saw target or fewer.
func window(ss []sample, n, target int) (from, to time.Time) {
	for _, s := range ss {
		if s.n >= n {
			from = s.start
		}
		if s.n <= target {
			to = s.end
			break
		}
	}
	return from, to
}

func seriesOf(ss []sample, t0 time.Time) []point {
	out := make([]point, 0, len(ss))
	last := -1
	for i, s := range ss {
		if s.n == last && i != len(ss)-1 {
			continue
		}
		out = append(out, point{float64(s.end.Sub(t0)) / 1e6, s.n})
		last = s.n
	}
	return out
}

// trialMass: insert n documents (timed: workload 1), measure the heap
// (workload 4), then let pct% of them reach their threshold at once and
// time the store's own mechanism removing them (workload 2).
func trialMass(p trialParams, pct int, out *trialOut) error {
	if p.store == "golang-lru" {
		if pct != 100 {
			return fmt.Errorf("golang-lru has one TTL per cache: no k/N expiry")
		}
		return trialLRUInsert(p, out)
	}
	est, err := calibrate(p.store, p.n)
	if err != nil {
		return err
	}
	every := 100 / pct
	k := (p.n + every - 1) / every
	for factor := 2.0; factor < 20; factor *= 2 {
		base, baseObj := heapAndObjects()
		s, err := newStore(p.store, storeOpts{})
		if err != nil {
			return err
		}
		tExp := time.Now().Add(time.Duration(factor*float64(est)) + 300*time.Millisecond + time.Duration(p.n)*2*time.Microsecond)
		far := tExp.Add(24 * time.Hour)
		gc0 := gcCycles()
		ins, err := fill(s, 0, p.n, func(i int) time.Time {
			if i%every == 0 {
				return tExp
			}
			return far
		}, nil)
		if err != nil {
			return err
		}
		gcInsert := gcCycles() - gc0
		h, hObj := heapAndObjects()
		if time.Until(tExp) < 50*time.Millisecond {
			s.close()
			fmt.Fprintf(os.Stderr, "  (inserts ran past the threshold: estimated %s, took %s, heap measure ended %s late; retrying with more margin)\n",
				est.Round(time.Millisecond), ins.Round(time.Millisecond), -time.Until(tExp).Round(time.Millisecond))
			continue
		}
		if pct == 100 {
			out.add("insert", "docs/s", float64(p.n)/ins.Seconds())
			out.add("insert_cost", "ns/doc", float64(ins.Nanoseconds())/float64(p.n))
			out.add("heap_per_doc", "bytes", float64(int64(h)-int64(base))/float64(p.n))
			out.add("heap_objects_per_doc", "objects", float64(int64(hObj)-int64(baseObj))/float64(p.n))
			out.add("gc_cycles_insert", "cycles", float64(gcInsert))
			if a, ok := s.(accounter); ok && h > base {
				// The memory budget's accounting against the measured heap:
				// |accounted / heap growth - 1|.
				out.add("accounting_error", "fraction", math.Abs(float64(a.accountedBytes())/float64(h-base)-1))
			}
		}
		time.Sleep(time.Until(tExp) - 20*time.Millisecond)
		stopProf := startProfile()
		gc0 = gcCycles()
		ss, ok := sampleUntil(s, 50*time.Microsecond, p.n-k, 20*time.Minute)
		gcExpiry := gcCycles() - gc0
		stopProf()
		if !ok {
			return fmt.Errorf("removal did not finish: %d left", ss[len(ss)-1].n)
		}
		from, to := window(ss, p.n, p.n-k)
		if from.IsZero() {
			// The sampler started late (a loaded machine) and never saw all
			// n: bound the window by the threshold instead.
			from = tExp
			out.Notes = append(out.Notes, fmt.Sprintf("%s/%s/%d: sampler started after removal began; window measured from the threshold", p.workload, p.store, p.n))
		}
		w := to.Sub(from)
		pre := fmt.Sprintf("expire_%dpct", pct)
		if pct == 100 {
			pre = "expire_all"
		}
		out.add(pre+"_rate", "docs/s", float64(k)/w.Seconds())
		out.add(pre+"_cost", "ns/doc", float64(w.Nanoseconds())/float64(k))
		out.add(pre+"_window", "ms", float64(w)/1e6)
		out.add(pre+"_clear_after_threshold", "ms", float64(to.Sub(tExp))/1e6)
		if pct == 100 {
			out.add("gc_cycles_expiry", "cycles", float64(gcExpiry))
		}
		out.Series = seriesOf(ss, tExp)
		s.close()
		return nil
	}
	return fmt.Errorf("inserts kept running past the threshold")
}

// trialLRUInsert: golang-lru in the insert and memory workloads only.
func trialLRUInsert(p trialParams, out *trialOut) error {
	base, baseObj := heapAndObjects()
	s, err := newStore(p.store, storeOpts{lruTTL: time.Hour})
	if err != nil {
		return err
	}
	far := time.Now().Add(time.Hour)
	gc0 := gcCycles()
	ins, err := fill(s, 0, p.n, func(int) time.Time { return far }, nil)
	if err != nil {
		return err
	}
	gcInsert := gcCycles() - gc0
	h, hObj := heapAndObjects()
	out.add("insert", "docs/s", float64(p.n)/ins.Seconds())
	out.add("insert_cost", "ns/doc", float64(ins.Nanoseconds())/float64(p.n))
	out.add("heap_per_doc", "bytes", float64(int64(h)-int64(base))/float64(p.n))
	out.add("heap_objects_per_doc", "objects", float64(int64(hObj)-int64(baseObj))/float64(p.n))
	out.add("gc_cycles_insert", "cycles", float64(gcInsert))
	runtime.KeepAlive(s)
	return nil
}

// reader reads keys on an open-loop schedule (see openLoop).
type reader struct {
	s     store
	keys  []string
	every time.Duration
}

func (r *reader) run(start time.Time, stop *atomic.Int64) []time.Duration {
	n := len(r.keys)
	return openLoop(start, r.every, stop, func(i int) { r.s.get(r.keys[(i*7919)%n]) })
}

// openLoop calls op(i) on an open-loop schedule until stop (Unix ns): call
// i is due at start + i*every, waits (spinning, yielding the processor)
// until due, and its latency runs from when it was due, so a stall counts
// against every call that should have started during it (no coordinated
// omission).
func openLoop(start time.Time, every time.Duration, stop *atomic.Int64, op func(i int)) []time.Duration {
	lats := make([]time.Duration, 0, 1<<16)
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * every)
		if due.UnixNano() >= stop.Load() {
			return lats
		}
		for time.Now().Before(due) {
			runtime.Gosched()
		}
		op(i)
		lats = append(lats, time.Since(due))
	}
}

// latStats adds p50, p99, p99.9, max (µs), the count over 1 ms and the
// count of calls, as prefix_p50_phase and so on.
func latStats(out *trialOut, prefix, phase string, lats []time.Duration) {
	if len(lats) == 0 {
		return
	}
	s := slices.Clone(lats)
	slices.Sort(s)
	q := func(f float64) float64 { return float64(s[min(len(s)-1, int(f*float64(len(s))))]) / 1e3 }
	over := 0
	for _, l := range s {
		if l > time.Millisecond {
			over++
		}
	}
	out.add(prefix+"_p50_"+phase, "µs", q(0.50))
	out.add(prefix+"_p99_"+phase, "µs", q(0.99))
	out.add(prefix+"_p999_"+phase, "µs", q(0.999))
	out.add(prefix+"_max_"+phase, "µs", float64(s[len(s)-1])/1e3)
	out.add(prefix+"s_over_1ms_"+phase, prefix+"s", float64(over))
	out.add(prefix+"s_"+phase, prefix+"s", float64(len(s)))
}

// sessionWorkload is workloads 1, 2 and 4 (insert, mass expiry of all N,
// memory) with session documents (docShape) instead of the bench's own.
const sessionWorkload = "session"

// slowReaderWorkload is the latency workload with one read every
// slowReadEvery instead of -read-every (issue 24's second reader rate).
const (
	slowReaderWorkload = "latency100"
	slowReadEvery      = 100 * time.Microsecond
)

// trialLatency: n documents reach their threshold at once while one
// goroutine reads p.live other documents by key every p.readEvery.
func trialLatency(p trialParams, out *trialOut) error {
	est, err := calibrate(p.store, p.n+p.live)
	if err != nil {
		return err
	}
	// The lead leaves room to fill the store (est, with a margin) and run
	// the idle phase; an overrun retries with a longer lead.
	for factor := 2.0; factor < 20; factor *= 2 {
		lead := time.Duration(factor*float64(est)) + p.idle + 300*time.Millisecond + time.Duration(p.n)*time.Microsecond/4
		tExp := time.Now().Add(lead)
		o := storeOpts{lruTTL: lead, ttldbRead: p.ttldbRead}
		if o.ttldbRead == "auto" {
			o.ttldbRead = "findone"
		}
		s, err := newStore(p.store, o)
		if err != nil {
			return err
		}
		far := tExp.Add(24 * time.Hour)
		// Documents 0..n-1 expire; n..n+live-1 are the live ones read.
		if _, err := fill(s, 0, p.n+p.live, func(i int) time.Time {
			if i < p.n {
				return tExp
			}
			return far
		}, nil); err != nil {
			return err
		}
		keys := make([]string, p.live)
		for i := range keys {
			keys[i] = docKey(p.n + i)
		}
		if ts, ok := s.(*ttldbStore); ok && p.ttldbRead == "auto" {
			if ok, why := ts.probeFindOne(keys[len(keys)/2]); !ok {
				ts.read = "expiresat"
				note := "ttldb reads use ExpiresAt(id) (a by-_id map lookup under the read lock), not FindOne: " + why
				out.Notes = append(out.Notes, note)
				fmt.Fprintln(os.Stderr, "  NOTE: "+note)
			}
		}
		runtime.GC()
		idleStart := time.Now()
		if time.Until(tExp) < p.idle/2+50*time.Millisecond {
			s.close()
			fmt.Fprintf(os.Stderr, "  (inserts ran past the threshold; retrying with more margin)\n")
			continue
		}
		r := &reader{s: s, keys: keys, every: p.readEvery}
		var stop atomic.Int64
		stop.Store(tExp.Add(-10 * time.Millisecond).UnixNano())
		idle := r.run(idleStart, &stop)
		latStats(out, "read", "idle", idle)
		out.add("idle_phase", "ms", float64(time.Since(idleStart))/1e6)

		// Expiry phase: from the threshold until the expiring documents are
		// gone, plus 50 ms.
		stop.Store(1<<63 - 1)
		var lats []time.Duration
		var wg sync.WaitGroup
		wg.Add(1)
		time.Sleep(time.Until(tExp))
		go func() {
			defer wg.Done()
			lats = r.run(tExp, &stop)
		}()
		stopProf := startProfile()
		ss, ok := sampleUntil(s, time.Millisecond, p.live, 10*time.Minute)
		stopProf()
		_, to := window(ss, p.n+p.live, p.live)
		stop.Store(time.Now().Add(50 * time.Millisecond).UnixNano())
		wg.Wait()
		if !ok {
			return fmt.Errorf("removal did not finish: %d left", ss[len(ss)-1].n)
		}
		latStats(out, "read", "expiry", lats)
		out.add("expiry_phase", "ms", float64(to.Sub(tExp))/1e6)
		out.add("removal_rate_reading", "docs/s", float64(p.n)/to.Sub(tExp).Seconds())
		out.Series = seriesOf(ss, tExp)
		s.close()
		return nil
	}
	return fmt.Errorf("inserts kept running past the threshold")
}

// trialCompact (ttldb only): heap with n documents, after the 90% that are
// expired are deleted (RunTTLPass: the monitor's own pass), after Compact,
// and of a fresh store holding only the remaining 10%.
func trialCompact(p trialParams, out *trialOut) error {
	live := func(i int) bool { return i%10 == 0 }
	now := time.Now()
	past, far := now.Add(-time.Minute), now.Add(24*time.Hour)
	expOf := func(i int) time.Time {
		if live(i) {
			return far
		}
		return past
	}
	open := func() (*ttldb.DB, *ttldb.Collection, error) {
		db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
		if err != nil {
			return nil, nil, err
		}
		c := db.Collection("events")
		_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")}, ExpireAfterSeconds: ttldb.Seconds(ttlSeconds)})
		return db, c, err
	}
	insert := func(c *ttldb.Collection, keep func(int) bool) error {
		docs := make([]ttldb.Document, 0, chunk)
		for start := 0; start < p.n; start += chunk {
			docs = docs[:0]
			for i := start; i < min(start+chunk, p.n); i++ {
				if keep(i) {
					d := genDoc(i, expOf(i))
					docs = append(docs, ttldb.Document{"_id": d.ID, "user": d.User, "kind": d.Kind, "bytes": d.Bytes, "lastModifiedDate": d.LastModifiedDate})
				}
			}
			if len(docs) > 0 {
				if _, err := c.InsertMany(context.Background(), docs); err != nil {
					return err
				}
			}
		}
		return nil
	}
	base := heap()
	db, c, err := open()
	if err != nil {
		return err
	}
	if err := insert(c, func(int) bool { return true }); err != nil {
		return err
	}
	full := int64(heap()) - int64(base)
	res, err := db.RunTTLPass(context.Background())
	if err != nil {
		return err
	}
	if want := p.n - (p.n+9)/10; res.Deleted != want {
		return fmt.Errorf("pass deleted %d, want %d", res.Deleted, want)
	}
	afterExpire := int64(heap()) - int64(base)
	if err := c.Compact(context.Background()); err != nil {
		return err
	}
	afterCompact := int64(heap()) - int64(base)
	db.Close()
	db, c = nil, nil
	base2 := heap()
	db2, c2, err := open()
	if err != nil {
		return err
	}
	if err := insert(c2, live); err != nil {
		return err
	}
	fresh := int64(heap()) - int64(base2)
	runtime.KeepAlive(c2)
	db2.Close()
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	out.add("heap_full", "MiB", mb(full))
	out.add("heap_after_expire90", "MiB", mb(afterExpire))
	out.add("heap_after_compact", "MiB", mb(afterCompact))
	out.add("heap_fresh10", "MiB", mb(fresh))
	out.add("after_expire90_vs_fresh10", "x", float64(afterExpire)/float64(fresh))
	out.add("after_compact_vs_fresh10", "x", float64(afterCompact)/float64(fresh))
	return nil
}

// trialLag: n documents with thresholds spread evenly over p.spread
// (inserted in shuffled order, all before the first threshold); for each,
// the time from its threshold to the store reporting its removal.
func trialLag(p trialParams, out *trialOut) error {
	th := make([]time.Time, p.n)
	lags := make([]time.Duration, 0, p.n)
	var mu sync.Mutex
	var removed atomic.Int64
	onRemoved := func(ids []string, at time.Time) {
		mu.Lock()
		for _, id := range ids {
			lags = append(lags, at.Sub(th[keyIndex(id)]))
		}
		mu.Unlock()
		removed.Add(int64(len(ids)))
	}
	est, err := calibrate(p.store, p.n)
	if err != nil {
		return err
	}
	var histP99 float64 // ttldb: its own lag histogram's p99 (ms)
	for factor := 2.0; ; factor *= 2 {
		if factor > 16 {
			return fmt.Errorf("inserts kept running past the first threshold")
		}
		mu.Lock()
		lags = lags[:0]
		mu.Unlock()
		removed.Store(0)
		var retry bool
		retry, histP99, err = lagOnce(p, th, order0(p.n), est, factor, onRemoved, &removed)
		if err != nil {
			return err
		}
		if !retry {
			break
		}
		fmt.Fprintf(os.Stderr, "  (inserts ran past the first threshold; retrying with more margin)\n")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lags) < p.n {
		return fmt.Errorf("only %d of %d removals reported", len(lags), p.n)
	}
	slices.Sort(lags)
	q := func(f float64) float64 { return float64(lags[min(len(lags)-1, int(f*float64(len(lags))))]) / 1e6 }
	out.add("lag_p50", "ms", q(0.5))
	out.add("lag_p99", "ms", q(0.99))
	out.add("lag_max", "ms", float64(lags[len(lags)-1])/1e6)
	if histP99 > 0 {
		out.add("lag_hist_p99", "ms", histP99)
	}
	return nil
}

// order0 is a fixed shuffled insertion order of n documents.
func order0(n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = (i * 7919) % n // a permutation when gcd(7919, n) == 1
	}
	if n%7919 == 0 {
		for i := range order {
			order[i] = i
		}
	}
	return order
}

// lagOnce runs one attempt of the lag trial; retry reports that the
// inserts overran the first threshold.
//
// For ttldb it also returns the p99 of the store's own lag histogram
// (Metrics().TTL.ExpiryByIndex), in ms, read once every removal was seen.
func lagOnce(p trialParams, th []time.Time, order []int, est time.Duration, factor float64, onRemoved func([]string, time.Time), removed *atomic.Int64) (retry bool, histP99 float64, err error) {
	t0 := time.Now().Add(time.Duration(factor*float64(est)) + 300*time.Millisecond)
	for i := range th {
		th[i] = t0.Add(time.Duration(int64(p.spread) * int64(i) / int64(p.n)))
	}
	s, err := newStore(p.store, storeOpts{onRemoved: onRemoved, ttldbRead: "findone"})
	if err != nil {
		return false, 0, err
	}
	defer s.close()
	if _, err := fill(s, 0, p.n, func(i int) time.Time { return th[i] }, order); err != nil {
		return false, 0, err
	}
	if time.Now().After(t0) {
		return true, 0, nil
	}
	deadline := th[p.n-1].Add(30 * time.Second)
	for removed.Load() < int64(p.n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if ts, ok := s.(*ttldbStore); ok {
		for _, x := range ts.db.Metrics().TTL.ExpiryByIndex {
			histP99 = float64(x.Lag.Quantile(0.99)) / 1e6
		}
	}
	return false, histP99, nil
}

// cpuProfile, if set, names the file the trial writes a CPU profile of its
// expiry phase to (mass and latency workloads).
var cpuProfile string

// traceFile, if set, names the file the trial writes an execution trace
// of its expiry phase to (mass and latency workloads).
var traceFile string

func startProfile() func() {
	stopTrace := startTrace()
	stopCPU := startCPUProfile()
	return func() { stopCPU(); stopTrace() }
}

func startTrace() func() {
	if traceFile == "" {
		return func() {}
	}
	f, err := os.Create(traceFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "trace:", err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintln(os.Stderr, "trace:", err)
		f.Close()
		return func() {}
	}
	return func() {
		trace.Stop()
		f.Close()
	}
}

func startCPUProfile() func() {
	if cpuProfile == "" {
		return func() {}
	}
	f, err := os.Create(cpuProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cpuprofile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "cpuprofile:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
