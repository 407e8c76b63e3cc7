package engine

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// ChangeStreamMetrics describe a DB's change streams and their buffer
// (Metrics().ChangeStreams): gauges, but for each stream's Events.
type ChangeStreamMetrics struct {
	// Open counts the streams open: neither closed nor, for one never
	// closed, collected as garbage.
	Open int
	// BufferSize is the change-stream buffer's capacity, in ops (0 until
	// the first Watch attaches the buffer); BufferOps the ops it holds.
	BufferSize int
	BufferOps  int
	// MaxLagOps and MaxLag are the largest lag among the open streams,
	// named or not (see StreamMetrics): one figure however many streams
	// there are.
	MaxLagOps uint64
	MaxLag    time.Duration
	// Streams has the open streams ChangeStreamOptions.Name named, by
	// name: the user chooses the set of names, so a metrics system's
	// labels stay bounded. Streams sharing a name are reported as one:
	// the largest lag and buffer use, the sum of their events.
	Streams map[string]StreamMetrics
}

// StreamMetrics describe one change stream.
type StreamMetrics struct {
	// LagOps counts the ops published to streams (on a DB with a data
	// directory: durable; with a Replicator: committed) that the stream
	// has not read yet.
	LagOps uint64
	// Lag is how long ago, by the DB's clock, the oldest op the stream
	// has not read was committed (its WallTime); 0 when it is caught up.
	// For a stream so far behind that its next op has left the buffer
	// (it reads the log), at least the age of the buffer's oldest op.
	Lag time.Duration
	// BufferUse is LagOps as a fraction of the buffer's size: at 1 the
	// buffer is about to overwrite the stream's next op (an in-memory
	// DB's stream then ends with ErrChangeStreamLagged; a stream of a DB
	// with a log goes on reading the log).
	BufferUse float64
	// Events counts the events the stream delivered (Next or TryNext
	// returned true): a counter, published as the stream finishes each
	// op (at most one op's events behind).
	Events int64
}

// MaxStreamNameLen bounds ChangeStreamOptions.Name, in bytes.
const MaxStreamNameLen = 128

// streamStat is what a change stream publishes for Metrics: its place,
// stored at each Next, and its event count. The DB's registry holds it,
// not the stream, so that a stream never closed is still collected as
// garbage (a cleanup then unregisters its stat).
type streamStat struct {
	name   string
	next   atomic.Uint64
	events atomic.Int64
}

// streamRegistry is the DB's set of open streams' stats.
type streamRegistry struct {
	mu    sync.Mutex
	stats map[*streamStat]struct{}
}

func (r *streamRegistry) add(s *streamStat) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stats == nil {
		r.stats = map[*streamStat]struct{}{}
	}
	r.stats[s] = struct{}{}
}

func (r *streamRegistry) remove(s *streamStat) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.stats, s)
}

// checkStreamName checks ChangeStreamOptions.Name.
func checkStreamName(name string) error {
	if len(name) > MaxStreamNameLen || !utf8.ValidString(name) {
		return fmt.Errorf("%w: Watch: Name must be valid UTF-8 of at most %d bytes", ErrInvalidOptions, MaxStreamNameLen)
	}
	return nil
}

// register makes the stream's stat visible to Metrics until Close, or
// until the stream, never closed, is collected.
func (cs *ChangeStream) register(name string) {
	s := &streamStat{name: name}
	s.next.Store(cs.next)
	cs.stat, cs.pubNext = s, cs.next
	reg := &cs.db.streams
	reg.add(s)
	runtime.AddCleanup(cs, func(s *streamStat) { reg.remove(s) }, s)
}

// changeStreamMetrics reads the streams' figures at now.
func (db *DB) changeStreamMetrics(now time.Time) ChangeStreamMetrics {
	var m ChangeStreamMetrics
	db.changesMu.Lock()
	b := db.changeBuf
	db.changesMu.Unlock()
	r := &db.streams
	r.mu.Lock()
	stats := make([]*streamStat, 0, len(r.stats))
	for s := range r.stats {
		stats = append(stats, s)
	}
	r.mu.Unlock()
	m.Open = len(stats)
	if b == nil {
		return m
	}
	head := b.head.Load()
	oldest := b.oldest(head)
	m.BufferSize = int(b.size)
	if head >= oldest {
		m.BufferOps = int(head - oldest + 1)
	}
	for _, s := range stats {
		var sm StreamMetrics
		next := s.next.Load()
		if head+1 > next {
			sm.LagOps = head + 1 - next
			op := b.load(next)
			if op == nil {
				op = b.load(oldest)
			}
			if op != nil && now.After(op.Time) {
				sm.Lag = now.Sub(op.Time)
			}
		}
		sm.BufferUse = float64(sm.LagOps) / float64(b.size)
		sm.Events = s.events.Load()
		m.MaxLagOps = max(m.MaxLagOps, sm.LagOps)
		m.MaxLag = max(m.MaxLag, sm.Lag)
		if s.name == "" {
			continue
		}
		if m.Streams == nil {
			m.Streams = map[string]StreamMetrics{}
		}
		if prev, ok := m.Streams[s.name]; ok {
			sm.LagOps, sm.Lag, sm.BufferUse = max(sm.LagOps, prev.LagOps), max(sm.Lag, prev.Lag), max(sm.BufferUse, prev.BufferUse)
			sm.Events += prev.Events
		}
		m.Streams[s.name] = sm
	}
	return m
}
