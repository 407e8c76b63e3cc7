package ttldb

import (
	"sync"
	"sync/atomic"
)

// opSink receives committed ops in sequence order: the change-stream
// buffer (Watch), the durability log. appendOps runs holding the
// committer's lock (and the committing collection's write lock): it must
// not block, call back into the DB or keep ops' slices beyond their
// documented lifetime; it copies what it keeps.
type opSink interface {
	appendOps(ops []Op)
}

// committer gives ops their sequence numbers and hands them to the sinks,
// so that sequence order is commit order across collections: a write
// commits its ops while it holds its collection's write lock, and the
// committer's lock orders collections among themselves. It is held for
// the hand-off only.
type committer struct {
	mu    sync.Mutex
	seq   uint64 // the last sequence number given; guarded by mu
	sinks atomic.Pointer[[]opSink]
	// wanted is set while some sink is attached: writes build ops only
	// then, so an in-memory DB with no watcher pays nothing for them.
	wanted atomic.Bool
}

// opsWanted reports whether a write must build its ops. While it is false
// writes build and commit none, and the sequence does not move: it counts
// the ops some sink received.
func (c *committer) opsWanted() bool { return c.wanted.Load() }

// commit numbers ops (setting each Seq) and hands them to the sinks. Call
// it holding the write lock of the collection the ops change, after the
// change is applied in memory and before the lock is released.
func (c *committer) commit(ops []Op) {
	if len(ops) == 0 {
		return
	}
	c.mu.Lock()
	for i := range ops {
		c.seq++
		ops[i].Seq = c.seq
	}
	if s := c.sinks.Load(); s != nil {
		for _, sink := range *s {
			sink.appendOps(ops)
		}
	}
	c.mu.Unlock()
}

// lastSeq returns the sequence number of the last op committed.
func (c *committer) lastSeq() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// attach adds a sink; from the next commit on it receives every op.
func (c *committer) attach(s opSink) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var list []opSink
	if old := c.sinks.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, s)
	c.sinks.Store(&list)
	c.wanted.Store(true)
}
