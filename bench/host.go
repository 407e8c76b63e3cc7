package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Workload 7, host impact: a store embedded in a Go service shares that
// service's garbage collector and processors. The service here is one
// goroutine that handles a request on an open-loop schedule, allocating
// as a request handler does, and records its own latency; the trial runs
// it while the store holds n documents (idle), and while they all expire
// at once. The store named "none" runs the same service in a process with
// no store: the baseline.

// hostNone is the baseline "store": the service alone in its process.
const hostNone = "none"

// hostRespBytes is the size of the response body the service builds per
// request.
const hostRespBytes = 10 << 10

// hostInflight is the number of recent responses the service keeps
// reachable, as a server keeps the responses it is still writing.
const hostInflight = 16

// hostIdleGCs is the number of GC periods the idle phase spans at least,
// estimated from the store's heap and the service's allocation rate: the
// service's idle tail is the collector marking the store's heap, so a
// phase shorter than a GC period may see no cycle at all.
const hostIdleGCs = 2.5

// hostIdleMax caps the idle phase.
const hostIdleMax = 60 * time.Second

// response is what one request builds: headers and a JSON body.
type response struct {
	header map[string]string
	body   []byte
}

// service handles requests and keeps the last hostInflight responses.
type service struct {
	inflight [hostInflight]response
}

// handle builds request i's response: a few small objects (a header map,
// a request id string) and a 10 KB JSON body grown by appending, as an
// encoder writing into a fresh buffer does.
func (sv *service) handle(i int) {
	h := make(map[string]string, 4)
	h["content-type"] = "application/json"
	h["x-request-id"] = strconv.Itoa(i)
	body := make([]byte, 0, hostRespBytes)
	body = append(body, `{"items":[`...)
	for j := 0; len(body) < hostRespBytes-48; j++ {
		body = append(body, `{"id":`...)
		body = strconv.AppendInt(body, int64(i)*1000+int64(j), 10)
		body = append(body, `,"name":"item","ok":true},`...)
	}
	body = append(body, `{}]}`...)
	sv.inflight[i%hostInflight] = response{h, body}
}

// hostAllocRate estimates the service's allocation rate in bytes/s.
func hostAllocRate(every time.Duration) float64 {
	return float64(hostRespBytes+256) / every.Seconds()
}

// trialHost: the service runs an idle phase while the store holds n
// documents, then an expiry phase from their common threshold until the
// store has removed them all, plus 50 ms. For "none", both phases run the
// service alone, each for the idle phase's length.
func trialHost(p trialParams, out *trialOut) error {
	sv := &service{}
	if p.store == hostNone {
		return hostPhases(p, sv, nil, time.Now().Add(p.hostIdle+50*time.Millisecond), 0, out)
	}
	est, err := calibrate(p.store, p.n)
	if err != nil {
		return err
	}
	perDoc, err := heapPerDocEstimate(p.store)
	if err != nil {
		return err
	}
	// The idle phase spans about hostIdleGCs GC periods: with GOGC=100 a
	// cycle starts after the service has allocated about the live heap.
	period := time.Duration(perDoc * float64(p.n) / hostAllocRate(p.hostEvery) * float64(time.Second))
	idle := min(max(p.hostIdle, time.Duration(hostIdleGCs*float64(period))), hostIdleMax)
	for factor := 2.0; factor < 20; factor *= 2 {
		lead := time.Duration(factor*float64(est)) + idle + 300*time.Millisecond + time.Duration(p.n)*time.Microsecond/4
		tExp := time.Now().Add(lead)
		s, err := newStore(p.store, storeOpts{lruTTL: lead})
		if err != nil {
			return err
		}
		if _, err := fill(s, 0, p.n, func(int) time.Time { return tExp }, nil); err != nil {
			return err
		}
		runtime.GC()
		if time.Until(tExp) < idle/2+50*time.Millisecond {
			s.close()
			fmt.Fprintf(os.Stderr, "  (inserts ran past the threshold; retrying with more margin)\n")
			continue
		}
		out.add("host_gc_period_estimate", "ms", float64(period)/1e6)
		err = hostPhases(p, sv, s, tExp, p.n, out)
		s.close()
		return err
	}
	return fmt.Errorf("inserts kept running past the threshold")
}

// hostPhases runs the service from now until 10 ms before tExp (idle),
// then from tExp until s holds no document (none: for as long as the idle
// phase ran) plus 50 ms (expiry).
func hostPhases(p trialParams, sv *service, s store, tExp time.Time, n int, out *trialOut) error {
	var stop atomic.Int64
	idleStart := time.Now()
	stop.Store(tExp.Add(-10 * time.Millisecond).UnixNano())
	gc0 := gcCycles()
	idle := openLoop(idleStart, p.hostEvery, &stop, sv.handle)
	idleLen := time.Since(idleStart)
	out.add("host_gc_cycles_idle", "cycles", float64(gcCycles()-gc0))
	latStats(out, "request", "idle", idle)
	out.add("host_idle_phase", "ms", float64(idleLen)/1e6)

	stop.Store(1<<63 - 1)
	var lats []time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	time.Sleep(time.Until(tExp))
	gc0 = gcCycles()
	go func() {
		defer wg.Done()
		lats = openLoop(tExp, p.hostEvery, &stop, sv.handle)
	}()
	var end time.Time
	if s == nil {
		time.Sleep(time.Until(tExp.Add(idleLen)))
		end = time.Now()
	} else {
		// Poll the count with a sleep, not a spin: the service must have
		// the processors the store's expiry does not use.
		deadline := tExp.Add(10 * time.Minute)
		for s.remaining() > 0 {
			if time.Now().After(deadline) {
				stop.Store(0)
				wg.Wait()
				return fmt.Errorf("removal did not finish: %d left", s.remaining())
			}
			time.Sleep(time.Millisecond)
		}
		end = time.Now()
	}
	stop.Store(end.Add(50 * time.Millisecond).UnixNano())
	wg.Wait()
	out.add("host_gc_cycles_expiry", "cycles", float64(gcCycles()-gc0))
	latStats(out, "request", "expiry", lats)
	out.add("host_expiry_phase", "ms", float64(end.Sub(tExp))/1e6)
	if n > 0 {
		out.add("host_docs", "docs", float64(n))
	}
	return nil
}
