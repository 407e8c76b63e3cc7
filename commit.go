package ttldb

import (
	"sync"
	"sync/atomic"
)

// opSink receives committed ops in sequence order: the change-stream
// buffer (Watch), the durability log. appendOps runs holding the
// committer's lock (and the committing collection's write lock): it must
// not block nor call back into the DB. It may keep the ops it is given,
// by pointer (&ops[i]) with every slice they hold: a committed op is
// immutable, and commit's caller never changes nor reuses ops, their
// slices or the documents in them after commit.
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
	// preImages counts the sinks and change streams that asked for
	// pre-images (Op.Before): while it is above zero, writes keep them.
	preImages atomic.Int64
}

// opsWanted reports whether a write must build its ops. While it is false
// writes build and commit none, and the sequence does not move: it counts
// the ops some sink received.
func (c *committer) opsWanted() bool { return c.wanted.Load() }

// preImagesWanted reports whether a write building ops must also set
// Op.Before (the documents as they were before the change): some sink or
// change stream asked for them (wantPreImages).
func (c *committer) preImagesWanted() bool { return c.preImages.Load() > 0 }

// wantPreImages adds delta (+1 to ask, -1 to stop asking) to the count of
// those that want pre-images. A write that checked preImagesWanted before
// the count went above zero may still commit ops without them: a change
// stream that needs them from a known op on waits for the writes under
// way (DB.preImageBarrier).
func (c *committer) wantPreImages(delta int64) { c.preImages.Add(delta) }

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

// attach adds a sink; from the next commit on it receives every op. It
// returns the sequence number of the last op committed before: the sink's
// first op is the one after it.
func (c *committer) attach(s opSink) (last uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var list []opSink
	if old := c.sinks.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, s)
	c.sinks.Store(&list)
	c.wanted.Store(true)
	return c.seq
}
