package engine

import (
	"context"
	"math"
	"runtime"
	"runtime/metrics"
	"time"
)

// Pacing of the TTL monitor. On a machine of few cores, a monitor that
// deletes batch after batch keeps its processor for the whole mass expiry:
// goroutines queued on that processor (a reader woken by a shard lock the
// monitor released, a preempted request handler) wait until the runtime
// preempts the monitor, about 10 ms later, and the others share what is
// left with the garbage collector. So between two batches the monitor
// yields its processor (runtime.Gosched, which runs what is queued on it),
// and, when goroutines of the program have been waiting for a processor,
// it also parks for BatchPause on the DB's clock, so that its processor
// takes work queued elsewhere, and makes its next batch shorter. Whether
// goroutines waited is what the runtime measures itself: the count of
// scheduling latencies of at least paceThreshold in
// /sched/latencies:seconds since the previous batch.

// While goroutines wait, batches are a quarter of BatchSize: a goroutine
// queued on the monitor's processor waits for the batch under way, so
// shorter batches bound that wait (about 50 µs instead of 200 µs on 2
// cores), at the cost of a lock hold and a pause per quarter batch.
const contendedBatchDivisor = 4

// paceThreshold is the scheduling latency that counts as a goroutine
// kept waiting by the monitor: a few times what a free processor takes.
const paceThreshold = 100 * time.Microsecond

// pacer decides whether the monitor pauses between two batches. It is the
// monitor's (passes are serialized).
type pacer struct {
	// adaptive: pause only when goroutines waited (the system clock);
	// otherwise after every batch (a fake clock drives the pause).
	adaptive bool
	sample   []metrics.Sample
	seen     uint64 // latencies of at least paceThreshold counted so far
	// waited, if not nil, replaces the runtime's count (tests).
	waited func() uint64
	pauses int // pauses taken, ever (tests)
	// short: goroutines waited before the coming batch, which is then a
	// quarter of BatchSize (adaptive pacing only).
	short bool
}

// batchSize returns the size of the coming batch.
func (p *pacer) batchSize(full int) int {
	if p.short {
		return max(1, full/contendedBatchDivisor)
	}
	return full
}

// slowSchedules returns how many times, since the program started, a
// goroutine waited at least paceThreshold for a processor, or false if the
// runtime does not say.
func (p *pacer) slowSchedules() (uint64, bool) {
	if p.waited != nil {
		return p.waited(), true
	}
	if p.sample == nil {
		p.sample = []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	}
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, false
	}
	h := p.sample[0].Value.Float64Histogram()
	var n uint64
	for i, c := range h.Counts {
		if h.Buckets[i] >= paceThreshold.Seconds() {
			n += c
		}
	}
	return n, true
}

// begin starts a visit: only waits from now on count, and its first batch
// is whole.
func (p *pacer) begin() {
	p.short = false
	if p.adaptive {
		p.seen, _ = p.slowSchedules()
	}
}

// contended reports whether goroutines waited since the last look.
func (p *pacer) contended() bool {
	n, ok := p.slowSchedules()
	if !ok {
		return true // the runtime does not say: pause
	}
	waited := n != p.seen
	p.seen = n
	return waited
}

// betweenBatches runs between two batches of a visit: it yields the
// processor, and pauses BatchPause if set and (with the system clock) if
// goroutines waited, then also shortening the next batch.
func (m *monitor) betweenBatches(ctx context.Context, o *MonitorOptions) error {
	runtime.Gosched()
	if o.BatchPause <= 0 {
		return nil
	}
	if m.pace.adaptive {
		m.pace.short = m.pace.contended()
		if !m.pace.short {
			return nil
		}
	}
	m.pace.pauses++
	return m.pause(ctx, o.BatchPause)
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
