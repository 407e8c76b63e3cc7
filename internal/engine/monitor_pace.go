package engine

import (
	"context"
	"math"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// Pacing of the TTL monitor. On a machine of few cores, a monitor that
// deletes batch after batch keeps its processor for the whole mass expiry:
// goroutines queued on that processor (a reader woken by a shard lock the
// monitor released, a preempted request handler) wait until the runtime
// preempts the monitor, about 10 ms later, and the others share what is
// left with the garbage collector. So between two batches the monitor
// yields its processor (runtime.Gosched, which runs what is queued on it),
// and, when the program has foreground work, it also parks for BatchPause
// on the DB's clock, so that its processor takes work queued elsewhere,
// and makes its next batch shorter. An idle program's mass expiry runs at
// full speed.
//
// Foreground work is told by signals read since the previous batch
// (paceSignals), each a counter that only moves when the program was
// kept waiting:
//   - goroutines that waited at least paceThreshold for a processor: the
//     runtime's own count (/sched/latencies:seconds);
//   - reads and writes that found a collection's lock held by a writer (a
//     TTL batch among them) and waited for it (DB.foregroundWaits);
//   - (measured, not on by default: defaultPaceSignals) time goroutines
//     spent assisting the garbage collector
//     (/cpu/classes/gc/mark/assist:cpu-seconds): allocation of the program
//     slowed because the collector, sharing the processors with the
//     monitor, fell behind.
// A counter of reads and writes in flight was weighed and left out: it
// costs every call two atomic operations on one shared cache line, and
// work in flight that waits for nothing is not slowed by the monitor; the
// lock-wait count costs nothing on a call that does not wait.
// BenchmarkDrainTradeoff measures each set of signals (the removal rate
// against an open-loop reader's p99).

// While the program waits, batches are a quarter of BatchSize: a goroutine
// queued on the monitor's processor waits for the batch under way, so
// shorter batches bound that wait (about 50 µs instead of 200 µs on 2
// cores), at the cost of a lock hold and a pause per quarter batch.
const contendedBatchDivisor = 4

// paceThreshold is the scheduling latency that counts as a goroutine
// kept waiting by the monitor: a few times what a free processor takes.
const paceThreshold = 100 * time.Microsecond

// paceSignals is a set of the signals of foreground work the pacer reads.
type paceSignals uint8

const (
	signalSchedLatency    paceSignals = 1 << iota // goroutines waited for a processor
	signalForegroundWaits                         // reads or writes waited for a collection's lock
	signalGCAssist                                // goroutines assisted the garbage collector

	// defaultPaceSignals leaves GC assists out: the runtime counts the
	// monitor's own (a DeleteObserver's _id values are allocated on its
	// goroutine), so an allocating monitor paused for its own assists:
	// a 1M-document mass expiry with no reader ran 5% slower (p = 0.004,
	// BenchmarkMassExpiryBackground), while BenchmarkDrainTradeoff saw no
	// reader latency it removed. The signal stays for that benchmark.
	defaultPaceSignals = signalSchedLatency | signalForegroundWaits
	allPaceSignals     = defaultPaceSignals | signalGCAssist
)

// paceReading is the signals' counters at one instant; each only grows.
type paceReading struct {
	slowSchedules   uint64  // scheduling latencies of at least paceThreshold
	foregroundWaits uint64  // DB.foregroundWaits
	assistSeconds   float64 // CPU time spent in GC assists
	ok              bool    // the runtime gave its counters
}

// pacer decides whether the monitor pauses between two batches. It is the
// monitor's (passes are serialized).
type pacer struct {
	// adaptive: pause only when the program has foreground work (the
	// system clock); otherwise after every batch (a fake clock drives the
	// pause).
	adaptive bool
	signals  paceSignals
	// waits is the DB's foregroundWaits.
	waits  *atomic.Uint64
	sample []metrics.Sample
	seen   paceReading // at the last look
	// probe, if not nil, replaces the runtime's counters (tests).
	probe  func() paceReading
	pauses int // pauses taken, ever (tests)
	// short: the program had foreground work before the coming batch,
	// which is then a quarter of BatchSize (adaptive pacing only).
	short bool
	// pauseLen is the length of the next pause while the program waits
	// (nextPause); lastBatch is how long the last batch took.
	pauseLen, lastBatch time.Duration
}

// nextPause returns how long to pause before the coming batch (0: no
// pause), given whether the program had foreground work since the last
// batch: BatchPause (base) at the first sign of it, then twice the
// previous pause for each batch after which it still had, up to the last
// batch's own duration (so the monitor keeps at least half of its
// processor's time and drains at no less than about half its rate);
// halved for each batch after which it had none. A program that keeps
// waiting thus gets more of the processor back the longer it waits, and
// an idle one none of the monitor's time.
func (p *pacer) nextPause(contended bool, base time.Duration) time.Duration {
	if !contended {
		p.pauseLen /= 2
		return 0
	}
	p.pauseLen = max(base, min(2*p.pauseLen, p.lastBatch))
	return p.pauseLen
}

// batchSize returns the size of the coming batch.
func (p *pacer) batchSize(full int) int {
	if p.short {
		return max(1, full/contendedBatchDivisor)
	}
	return full
}

// read returns the signals' counters now.
func (p *pacer) read() paceReading {
	if p.probe != nil {
		return p.probe()
	}
	var r paceReading
	if p.waits != nil {
		r.foregroundWaits = p.waits.Load()
	}
	if p.sample == nil {
		p.sample = []metrics.Sample{
			{Name: "/sched/latencies:seconds"},
			{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"},
		}
	}
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return r
	}
	h := p.sample[0].Value.Float64Histogram()
	for i, c := range h.Counts {
		if h.Buckets[i] >= paceThreshold.Seconds() {
			r.slowSchedules += c
		}
	}
	if p.sample[1].Value.Kind() == metrics.KindFloat64 {
		r.assistSeconds = p.sample[1].Value.Float64()
	}
	r.ok = true
	return r
}

// begin starts a visit: only signals from now on count, and its first
// batch is whole.
func (p *pacer) begin() {
	p.short, p.pauseLen = false, 0
	if p.adaptive {
		p.seen = p.read()
	}
}

// contended reports whether any of the pacer's signals moved since the
// last look.
func (p *pacer) contended() bool {
	r := p.read()
	if !r.ok {
		p.seen = r
		return true // the runtime does not say: pause
	}
	moved := p.signals&signalSchedLatency != 0 && r.slowSchedules != p.seen.slowSchedules ||
		p.signals&signalForegroundWaits != 0 && r.foregroundWaits != p.seen.foregroundWaits ||
		p.signals&signalGCAssist != 0 && r.assistSeconds != p.seen.assistSeconds
	p.seen = r
	return moved
}

// betweenBatches runs between two batches of a visit: it yields the
// processor, and pauses BatchPause if set and (with the system clock) if
// the program had foreground work, then also shortening the next batch.
func (m *monitor) betweenBatches(ctx context.Context, o *MonitorOptions) error {
	runtime.Gosched()
	if o.BatchPause <= 0 {
		return nil
	}
	d := o.BatchPause
	if m.pace.adaptive {
		m.pace.short = m.pace.contended()
		if d = m.pace.nextPause(m.pace.short, o.BatchPause); d <= 0 {
			return nil
		}
	}
	m.pace.pauses++
	return m.pause(ctx, d)
}

// pause waits d on the DB's clock, or until ctx is done or the monitor
// stops.
func (m *monitor) pause(ctx context.Context, d time.Duration) error {
	t := m.db.clock.NewTimer(d)
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
	case <-m.ctx.Done():
	}
	t.Stop()
	return m.stopped(ctx)
}

// throttle enforces MonitorOptions.MaxDeletesPerSecond (a token bucket on
// the DB's clock) and MaxDutyCycle. It is the monitor's (passes are
// serialized).
type throttle struct {
	tokens float64       // deletions allowed now
	last   time.Time     // when tokens was last refilled (zero: never: full)
	busy   time.Duration // batches' time since the duty cycle's last wait
	waits  int           // waits taken, ever (tests)
}

// refill adds the tokens accrued since the last refill, up to burst (a
// first refill fills the bucket).
func (t *throttle) refill(now time.Time, rate, burst float64) {
	if t.last.IsZero() {
		t.tokens = burst
	} else if d := now.Sub(t.last); d > 0 {
		t.tokens = min(burst, t.tokens+rate*d.Seconds())
	}
	t.last = now
}

// ceilingWindow is the shortest wait a ceiling makes: rather than a wait
// after every batch (tens of microseconds each, every one a timer and a
// processor switch, which cost the program's readers more than the
// deletions they make room for: BenchmarkDrainTradeoff), the monitor runs
// batches until a ceiling is reached over about this much time, then
// waits once.
const ceilingWindow = 10 * time.Millisecond

// admit returns the size of the coming batch under the rate ceiling (want
// without one). When the bucket holds less than a batch, it first waits,
// on the DB's clock, until the bucket is full: a batch's tokens, or
// ceilingWindow's worth if more.
func (m *monitor) admit(ctx context.Context, o *MonitorOptions, want int) (int, error) {
	limit := m.rateCeiling(o)
	if limit <= 0 || want <= 0 {
		return want, nil
	}
	rate := float64(limit)
	want = min(want, o.BatchSize, limit)
	burst := max(float64(want), rate*ceilingWindow.Seconds())
	t := &m.throttle
	t.refill(m.db.clock.Now(), rate, burst)
	if t.tokens < float64(want) {
		t.waits++
		if err := m.pause(ctx, time.Duration(math.Ceil((burst-t.tokens)/rate*float64(time.Second)))); err != nil {
			return 0, err
		}
		t.refill(m.db.clock.Now(), rate, burst)
	}
	return max(1, min(want, int(t.tokens))), nil
}

// charge takes a batch's n deletions from the bucket and, under a duty
// cycle ceiling d, adds the batch's busy time to the window's: once that
// reaches d·ceilingWindow, the monitor waits what keeps its share of wall
// time at d (busy·(1-d)/d).
func (m *monitor) charge(ctx context.Context, o *MonitorOptions, n int, busy time.Duration) error {
	t := &m.throttle
	if m.rateCeiling(o) > 0 {
		t.tokens -= float64(n)
	}
	d := o.MaxDutyCycle
	if d <= 0 || d >= 1 || busy <= 0 {
		return nil
	}
	t.busy += busy
	if t.busy < time.Duration(d*float64(ceilingWindow)) {
		return nil
	}
	wait := time.Duration(float64(t.busy) * (1 - d) / d)
	t.busy = 0
	t.waits++
	return m.pause(ctx, wait)
}

// rateCeiling returns the deletions per second the monitor may make now
// (0: no ceiling): MaxDeletesPerSecond, and while the restore guard holds
// its rate, the lower of the two.
func (m *monitor) rateCeiling(o *MonitorOptions) int {
	limit := o.MaxDeletesPerSecond
	if g := o.RestoreGuard; g != nil && m.guard.Load() && (limit == 0 || g.MaxDeletesPerSecond < limit) {
		limit = g.MaxDeletesPerSecond
	}
	return limit
}
