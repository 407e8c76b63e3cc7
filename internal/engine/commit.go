package engine

import (
	"fmt"
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
	mu sync.Mutex
	// seq is the last sequence number given: changed holding mu, read
	// without it (lastSeq), so that reading it never waits for a commit
	// in progress (a TTL batch's proposal holds mu for a round trip of
	// the replicated log: proposeBatch).
	seq   atomic.Uint64
	sinks atomic.Pointer[[]opSink]
	// wanted is set while some sink is attached: writes build ops only
	// then, so an in-memory DB with no watcher pays nothing for them.
	wanted atomic.Bool
	// preImages counts the requests for pre-images (Op.Before): writes
	// fill Before only while it is above 0.
	preImages atomic.Int32
	// packable is set while the only sinks are change-stream buffers: a
	// TTL batch may then keep its keys packed (Op.packed), which streams
	// read, unless there is a replicator. Stored under mu.
	packable atomic.Bool
	// copying is set while every sink copies the ops it is given
	// (opCopier): a committed op is then kept by no sink. Guarded by mu.
	copying bool
	// replicator, set at Open (WithReplicator), receives the ops of
	// local commits, not those DB.Apply applied.
	replicator Replicator
	// committed is, with a replicator, the Seq up to which every op is
	// known committed by it (DB.MarkCommitted; ops DB.Apply applied are
	// committed on arrival): change streams deliver no op past it. Raised
	// without mu (markCommitted), so that the replicator may mark while a
	// TTL batch's proposal holds mu.
	committed atomic.Uint64
}

// opCopier is a sink that copies what it needs of the ops it is given
// (the log's and the snapshot capture's encode them) and keeps no
// reference to them: while every sink is one, and there is no replicator,
// a write may reuse its ops' memory once they are committed
// (commitWrite's result).
type opCopier interface {
	opSink
	copiesOps()
}

// gatedSink is a sink that publishes only the ops its gate let through
// (the change-stream buffer of a replicated DB, or of a DB with a data
// directory): gateRaised tells it that the gate (the committed mark, the
// log's durable mark) moved. It runs with or without the committer's lock
// and must not block.
type gatedSink interface {
	opSink
	gateRaised()
}

// raiseTo makes a at least v.
func raiseTo(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if cur >= v || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// markCommitted raises the committed mark to seq and tells the sinks that
// publish only committed ops. It takes no lock.
func (c *committer) markCommitted(seq uint64) {
	raiseTo(&c.committed, seq)
	c.gateRaised()
}

// gateRaised tells the gated sinks that their gate moved. It takes no
// lock.
func (c *committer) gateRaised() {
	if s := c.sinks.Load(); s != nil {
		for _, sink := range *s {
			if gs, ok := sink.(gatedSink); ok {
				gs.gateRaised()
			}
		}
	}
}

// preImageSink is a sink that wants Op.Before filled from the moment it
// is attached (a change stream asking for fullDocumentBeforeChange).
type preImageSink interface {
	opSink
	wantsPreImages() bool
}

// preImagesWanted reports whether writes must fill Op.Before with the
// documents as they were before an update, a replacement or a deletion.
// It implies nothing about opsWanted; check that first.
func (c *committer) preImagesWanted() bool { return c.preImages.Load() > 0 }

// requestPreImages adds (on) or withdraws (!on) a request for pre-images,
// for a sink that starts or stops needing them while attached. Requests
// are counted: Before is filled while any is standing.
func (c *committer) requestPreImages(on bool) {
	if on {
		c.preImages.Add(1)
	} else {
		c.preImages.Add(-1)
	}
}

// keysPackable reports whether a TTL batch may commit its keys packed
// (Op.packed) rather than in Keys. commit fills Keys if a sink that reads
// them was attached meanwhile.
func (c *committer) keysPackable() bool { return c.replicator == nil && c.packable.Load() }

// setPackable updates packable and copying from the sinks. Call holding
// mu.
func (c *committer) setPackable(sinks []opSink) {
	ok, copying := len(sinks) > 0, true
	for _, s := range sinks {
		if _, isBuf := s.(*changeBuffer); !isBuf {
			ok = false
		}
		if _, copies := s.(opCopier); !copies {
			copying = false
		}
	}
	c.packable.Store(ok)
	c.copying = copying
}

// unpackKeys fills the Keys of ops whose keys are packed, for sinks that
// read Keys. Call holding mu.
func unpackKeys(ops []Op) {
	for i := range ops {
		if p := ops[i].packed; p != nil {
			ops[i].Keys, ops[i].packed = p.unpack(), nil
		}
	}
}

// opsWanted reports whether a write must build its ops. While it is false
// writes build and commit none, and the sequence does not move: it counts
// the ops some sink received.
func (c *committer) opsWanted() bool { return c.wanted.Load() }

// natSink is a sink that must know where in a collection's natural order
// the documents a write inserts begin (the snapshot's op capture): before
// the write's ops, it is told the collection's next insertion sequence
// (collState.nextSeq) as it was when the write began. It runs as
// appendOps does.
type natSink interface {
	opSink
	noteWriteStart(collection string, nextSeq uint64)
}

// commit numbers ops (setting each Seq) and hands them to the sinks. Call
// it holding the write lock of the collection the ops change, after the
// change is applied in memory and before the lock is released.
func (c *committer) commit(ops []Op) { c.commitWrite(ops, 0) }

// commitWrite is commit for a write of one collection that may have
// inserted documents: natFrom is the collection's next insertion sequence
// when the write began (0: unknown, for a write that inserts nothing). It
// reports whether a sink or the replicator may keep the ops: if not, the
// caller may reuse their memory.
func (c *committer) commitWrite(ops []Op, natFrom uint64) (kept bool) {
	if len(ops) == 0 {
		return false
	}
	c.mu.Lock()
	c.number(ops)
	if !c.keysPackable() {
		unpackKeys(ops)
	}
	handOn(c.sinks.Load(), ops, natFrom)
	kept = !c.copying || c.replicator != nil
	if c.replicator != nil {
		// Local commits only: ops applied with DB.Apply came from the
		// replicated log.
		c.replicator.Commit(ops)
	}
	c.mu.Unlock()
	return kept
}

// commitApplied hands on ops that DB.Apply applied, keeping their
// sequence numbers: the first must follow the last op committed, and each
// the one before it (else ErrOpSequence, and nothing is handed on). With a
// replicator they are committed on arrival (they come from its log): the
// committed mark moves up to the last of them. Call it as commit is
// called, holding the collection's write lock after the change.
func (c *committer) commitApplied(ops []Op) error { return c.commitAppliedFrom(ops, 0) }

// commitAppliedFrom is commitApplied for an applied write that may have
// inserted documents, natFrom as commitWrite takes it.
func (c *committer) commitAppliedFrom(ops []Op, natFrom uint64) error {
	if len(ops) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commitAppliedLocked(ops, natFrom)
}

// commitAppliedLocked is commitAppliedFrom; call holding c.mu.
func (c *committer) commitAppliedLocked(ops []Op, natFrom uint64) error {
	if err := c.takeApplied(ops); err != nil {
		return err
	}
	handOn(c.sinks.Load(), ops, natFrom)
	return nil
}

// number gives ops the next sequence numbers. Call holding c.mu.
func (c *committer) number(ops []Op) {
	seq := c.seq.Load()
	for i := range ops {
		seq++
		ops[i].Seq = seq
	}
	c.seq.Store(seq)
}

// takeApplied checks that applied ops follow the last op committed, each
// the one before it (else ErrOpSequence, and nothing is taken), and takes
// their sequence numbers. Call holding c.mu.
func (c *committer) takeApplied(ops []Op) error {
	seq := c.seq.Load()
	for i := range ops {
		if want := seq + 1 + uint64(i); ops[i].Seq != want {
			return fmt.Errorf("%w: op %d has sequence number %d, the DB expects %d", ErrOpSequence, i, ops[i].Seq, want)
		}
	}
	c.seq.Store(seq + uint64(len(ops)))
	if c.replicator != nil {
		// Applied ops come from the replicated log: committed, and so is
		// every op before them.
		raiseTo(&c.committed, seq+uint64(len(ops)))
	}
	return nil
}

// commitGroup numbers and hands on the ops of a transaction's commit,
// which change the collections of natFrom (their next insertion
// sequences before the change): every sink receives them in one call, so
// that the log writes them in one record. It returns the last op's Seq.
// Call holding the write locks of those collections, after the change.
func (c *committer) commitGroup(ops []Op, natFrom map[string]uint64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.number(ops)
	handOnGroup(c.sinks.Load(), ops, natFrom)
	if c.replicator != nil {
		c.replicator.Commit(ops)
	}
	return ops[len(ops)-1].Seq
}

// commitAppliedGroup is commitGroup for a transaction's ops DB.Apply
// applied, keeping their Seqs (checked as commitApplied checks them).
func (c *committer) commitAppliedGroup(ops []Op, natFrom map[string]uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.takeApplied(ops); err != nil {
		return err
	}
	handOnGroup(c.sinks.Load(), ops, natFrom)
	return nil
}

// handOnGroup is handOn for ops that change several collections.
func handOnGroup(sinks *[]opSink, ops []Op, natFrom map[string]uint64) {
	if sinks == nil {
		return
	}
	for _, sink := range *sinks {
		if ns, ok := sink.(natSink); ok {
			for coll, from := range natFrom {
				ns.noteWriteStart(coll, from)
			}
		}
		sink.appendOps(ops)
	}
}

// handOn gives committed ops to the sinks, telling those that ask where
// the write's inserts begin (natFrom > 0). Call holding c.mu.
func handOn(sinks *[]opSink, ops []Op, natFrom uint64) {
	if sinks == nil {
		return
	}
	for _, sink := range *sinks {
		if ns, ok := sink.(natSink); ok && natFrom > 0 {
			ns.noteWriteStart(ops[0].Collection, natFrom)
		}
		sink.appendOps(ops)
	}
}

// lastSeq returns the sequence number of the last op committed. It does
// not wait for a commit under way.
func (c *committer) lastSeq() uint64 { return c.seq.Load() }

// attach adds a sink; from the next commit on it receives every op. It
// returns the sequence number of the last op committed before: the sink's
// first op is the one after it.
func (c *committer) attach(s opSink) (last uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attachLocked(s)
	return c.seq.Load()
}

// attachLocked is attach; call holding c.mu.
func (c *committer) attachLocked(s opSink) {
	var list []opSink
	if old := c.sinks.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, s)
	b, isBuf := s.(*changeBuffer)
	if isBuf {
		b.start(c.seq.Load())
	}
	c.sinks.Store(&list)
	if isBuf && b.gate != nil {
		// A gate raised while the buffer was not yet in the list reached
		// the gate's word, not the buffer: publish up to it now.
		b.gateRaised()
	}
	c.wanted.Store(true)
	c.setPackable(list)
	if p, ok := s.(preImageSink); ok && p.wantsPreImages() {
		c.preImages.Add(1)
	}
}

// detach removes a sink and returns the sequence number of the last op it
// received (or would have: the last op committed). Writes stop building ops
// when no sink is left.
func (c *committer) detach(s opSink) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var list []opSink
	if old := c.sinks.Load(); old != nil {
		for _, x := range *old {
			if x != s {
				list = append(list, x)
			}
		}
	}
	c.sinks.Store(&list)
	c.wanted.Store(len(list) > 0 || c.replicator != nil)
	c.setPackable(list)
	if p, ok := s.(preImageSink); ok && p.wantsPreImages() {
		c.preImages.Add(-1)
	}
	return c.seq.Load()
}
