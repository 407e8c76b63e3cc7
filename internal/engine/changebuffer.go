package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultChangeStreamBufferSize is the number of ops a DB's change-stream
// buffer retains by default (ChangeStreamBufferOptions.Size). A TTL batch
// of up to 256 deletions is one op, so the default holds the batches of a
// mass expiry of two million documents: a change stream that started
// before it misses none of its deletions, however slowly it reads.
const DefaultChangeStreamBufferSize = 8192

// MaxChangeStreamBufferSize is the largest ChangeStreamBufferOptions.Size:
// the buffer's own memory is 8 bytes per op it can retain (allocated when
// the buffer is attached), on top of the ops it retains.
const MaxChangeStreamBufferSize = 1 << 22

// ChangeStreamBufferOptions configures a DB's change-stream buffer: the
// window of recent ops every change stream of the DB reads from, and
// from which a stream can resume (WithChangeStreamBuffer).
type ChangeStreamBufferOptions struct {
	// Size is how many ops the buffer retains: 1 to
	// MaxChangeStreamBufferSize; 0 means DefaultChangeStreamBufferSize.
	// An op is one write's change to one collection (an InsertMany of any
	// number of documents, one TTL batch of up to BatchSize deletions), so
	// the memory retained is that of the last Size ops and of the
	// documents they hold (for single inserts of 200-byte documents, about
	// 0.5 KB per op). A stream more than Size ops behind the newest has
	// lost its place (ErrChangeStreamHistoryLost).
	Size int
	// AttachAtOpen attaches the buffer when the DB opens rather than at
	// the first Watch, so that a stream can start from the DB's first
	// write (ResumeAfter with a zero ResumeToken) while it is retained.
	// Writes then build ops from the start (which costs what one
	// attached watcher costs them; see the README's benchmarks). A DB
	// opened WithDir needs no buffer to resume from before its first
	// Watch: its log holds those ops (what WithLogRetention keeps). On a
	// DB loaded by WithRestore alone, the buffer starts after the loaded
	// ops: a resume from before them is ErrChangeStreamHistoryLost. A
	// replica that applies its primary's ops (DB.Apply) from its first
	// holds them all, so that a stream can resume there after a failover.
	AttachAtOpen bool
	// PreImages keeps every update's, replacement's and deletion's
	// pre-image (ChangeEvent.FullDocumentBeforeChange) from the moment
	// the buffer is attached, as though a stream with
	// FullDocumentBeforeChange were always open: a stream resumed after a
	// restart then finds them. It costs writes the copy of each changed
	// document's previous version, retained with its op.
	PreImages bool
}

// WithChangeStreamBuffer implements ttldb.WithChangeStreamBuffer, whose documentation is the contract.
func WithChangeStreamBuffer(o ChangeStreamBufferOptions) Option {
	return func(cfg *config) error {
		if o.Size < 0 || o.Size > MaxChangeStreamBufferSize {
			return fmt.Errorf("%w: WithChangeStreamBuffer: Size %d is outside 0..%d", ErrInvalidOptions, o.Size, MaxChangeStreamBufferSize)
		}
		cfg.changes = o
		return nil
	}
}

// changeBuffer is the DB's change-stream buffer: a ring of the last size
// committed ops, attached to the committer as an opSink. The committer
// writes it under its lock; change streams read it without any lock, each
// at its own position, so that no reader ever delays a writer or the
// monitor and the cost of a commit does not grow with the number of
// streams.
//
// A slot holds a pointer to the committed op (commit's caller never
// changes nor reuses it), so appending copies no op and allocates
// nothing. A reader loads a slot and checks the op's Seq: a greater Seq
// means the ring overwrote the op it wanted.
type changeBuffer struct {
	slots []atomic.Pointer[Op]
	size  uint64
	// first is the Seq of the first op the buffer received (the
	// committer's last Seq at attach, plus one): earlier ops were never
	// in it.
	first uint64
	// head is the Seq of the newest op streams may read (first-1 before
	// any): the newest appended, or on a gated buffer the newest appended
	// that its gate let through. It is stored after the op's slot, so a reader that
	// sees head >= s finds op s (or a later one that overwrote it) in its
	// slot.
	head atomic.Uint64

	// gate, when set, is a mark the head may not pass: an op is appended
	// (its slot, appended) but published (head) only once the gate
	// reaches it. On a DB with a Replicator it is the committer's
	// committed mark (DB.MarkCommitted; ops DB.Apply applied are
	// committed on arrival), so that streams deliver no op that may be
	// rolled back; on a DB with a data directory it is the log's durable
	// mark (logSink.durable), so that streams deliver no op a crash may
	// take back. Set before the buffer is attached.
	gate     *atomic.Uint64
	appended atomic.Uint64 // gated: the Seq of the newest op appended
	// hurry, if set, asks the log to make the appended ops durable now
	// rather than at its next flush: called by a stream about to wait for
	// an op the gate holds back.
	hurry func()
	// failed, if set, is closed when the gate will never move again (the
	// log failed): waiting streams end with failure's error.
	failed  <-chan struct{}
	failure func() error

	// Waking: a stream with nothing to read sets waiting, lowers wakeAt
	// to the Seq it waits for and waits on wake (made by the first such
	// stream); the next append whose head reaches wakeAt closes wake and
	// resets both. All three are guarded by mu; waiting and wakeAt are
	// also read without it by appendOps, so that an append with nobody to
	// wake costs one or two atomic loads.
	mu      sync.Mutex
	waiting atomic.Bool
	wakeAt  atomic.Uint64
	wake    chan struct{}
	// closed is closed by DB.Close: every stream's Next returns false.
	closed chan struct{}
	// spinHook, if set, runs at each round of a stream's spin (tests).
	spinHook func(round int)
}

func newChangeBuffer(size int) *changeBuffer {
	if size == 0 {
		size = DefaultChangeStreamBufferSize
	}
	return &changeBuffer{slots: make([]atomic.Pointer[Op], size), size: uint64(size), closed: make(chan struct{})}
}

// appendOps stores ops (a write's, numbered and in order) in their slots,
// then publishes the newest Seq (on a gated buffer: as far as the gate
// allows) and wakes the waiting streams. It runs under the
// committer's lock: O(len(ops)) pointer stores, no allocation; with
// streams waiting, one lock and the close of one channel.
func (b *changeBuffer) appendOps(ops []Op) {
	for i := range ops {
		b.slots[ops[i].Seq%b.size].Store(&ops[i])
	}
	head := ops[len(ops)-1].Seq
	if b.gate != nil {
		// appended is stored before the gate is read, and whoever raises
		// the gate stores it before it reads appended (gateRaised): one
		// of the two sees both and publishes min(appended, gate).
		b.appended.Store(head)
		b.publish(min(head, b.gate.Load()))
		if b.hurry != nil && b.waiting.Load() && head >= b.wakeAt.Load() && b.head.Load() < head {
			// A stream sleeps waiting for these ops: the log writes
			// them now rather than at its next flush.
			b.hurry()
		}
		return
	}
	b.head.Store(head)
	if b.waiting.Load() && head >= b.wakeAt.Load() {
		b.wakeAll()
	}
}

// gateRaised publishes the ops appended up to the gate, which was just
// raised (gatedSink): a gated buffer's streams may read them. It takes no
// lock unless a stream waits for them.
func (b *changeBuffer) gateRaised() {
	if b.gate != nil {
		b.publish(min(b.gate.Load(), b.appended.Load()))
	}
}

// publish raises a gated buffer's head to h (never lowers it: appendOps
// and markCommitted race) and wakes the streams waiting for it.
func (b *changeBuffer) publish(h uint64) {
	for {
		cur := b.head.Load()
		if h <= cur {
			return // published already, by whoever raised it
		}
		if b.head.CompareAndSwap(cur, h) {
			break
		}
	}
	b.wakeFor(h)
}

// start sets where a buffer attached after op last begins: its first op
// is last+1. A gated buffer publishes nothing past its gate: its streams
// start after last all the same (the ops up to last were never in the
// buffer), and wait until the gate passes last, so that no stream starts
// after an op that may yet be rolled back or lost. Called by the
// committer under its lock, before the buffer is shared.
func (b *changeBuffer) start(last uint64) {
	b.first = last + 1
	b.appended.Store(last)
	if b.gate != nil {
		b.head.Store(min(last, b.gate.Load()))
	} else {
		b.head.Store(last)
	}
}

// wakeFor wakes the streams waiting for an op up to head, now published:
// two atomic loads when none waits for it.
func (b *changeBuffer) wakeFor(head uint64) {
	if b.waiting.Load() && head >= b.wakeAt.Load() {
		b.wakeAll()
	}
}

// wakeAll wakes every waiting stream (each re-checks head).
func (b *changeBuffer) wakeAll() {
	b.mu.Lock()
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
	b.waiting.Store(false)
	b.wakeAt.Store(noWake)
	b.mu.Unlock()
}

// noWake is wakeAt while no stream waits.
const noWake = ^uint64(0)

// oldest returns the Seq of the oldest op the buffer still holds, given
// its head: head+1 when it holds none.
func (b *changeBuffer) oldest(head uint64) uint64 {
	if head >= b.size && head-b.size+1 > b.first {
		return head - b.size + 1
	}
	return b.first
}

// load returns op seq, or nil if the ring overwrote it. The caller has
// seen head >= seq >= first.
func (b *changeBuffer) load(seq uint64) *Op {
	p := b.slots[seq%b.size].Load()
	if p == nil || p.Seq != seq {
		return nil
	}
	return p
}

// errStreamClosed ends a wait when the stream itself was closed.
var errStreamClosed = fmt.Errorf("%w: change stream closed", ErrClosed)

// spinRounds is how many times a stream that found nothing to read yields
// its processor (runtime.Gosched), looking for a new op after each, before
// it parks (waitSpin). Each round costs a few hundred nanoseconds when
// nothing else wants the processor, so the spin lasts some tens of
// microseconds: longer than a busy writer takes between two commits, so
// that a stream keeping up with it is never parked, and a writer never
// pays for waking it (a futex call, a few microseconds of its own).
const spinRounds = 64

// waitState is a stream's memory of its last waits, for waitFor.
type waitState struct {
	// noSpin: skip the spin, as the last one found nothing and the op that
	// ended the park after it was alone (the writer is not busy). A wake
	// that finds more than one op ready turns spinning back on.
	noSpin bool
	// spins and parks count the waits that ended in the spin and those that
	// parked (tests).
	spins, parks int
}

// waitFor blocks until op seq+batch-1 is appended (op seq, for a batch
// of 1), ctx is done, the DB closes (ErrClosed) or done is closed
// (errStreamClosed). With a batch above 1 it waits at most maxAwait (on
// clock) for the batch to fill, then for op seq alone.
//
// A wait for one op first spins (waitSpin) when that is worth it (see
// waitState), then parks: it sleeps on the wake channel, re-checking head
// after each wake (a wake for another stream's target is spurious for this
// one).
func (b *changeBuffer) waitFor(ctx context.Context, seq uint64, batch int, maxAwait time.Duration, clock Clock, done <-chan struct{}, ws *waitState) error {
	if batch <= 1 && !ws.noSpin {
		if b.waitSpin(seq) {
			ws.spins++
			return nil
		}
		ws.noSpin = true
	}
	target := seq
	var expired <-chan time.Time
	if batch > 1 {
		target = seq + uint64(batch) - 1
		t := clock.NewTimer(maxAwait)
		defer t.Stop()
		expired = t.C()
	}
	parked := false
	for b.head.Load() < target {
		b.mu.Lock()
		// waiting and wakeAt are set before head is read again: an
		// append either sees them (and closes wake) or stored its head
		// before that read.
		b.waiting.Store(true)
		if target < b.wakeAt.Load() {
			b.wakeAt.Store(target)
		}
		if b.head.Load() >= target {
			b.mu.Unlock()
			break
		}
		if b.wake == nil {
			b.wake = make(chan struct{})
		}
		w := b.wake
		b.mu.Unlock()
		if b.hurry != nil && b.appended.Load() >= seq {
			// Appended, held back by the log's durable mark: have the
			// log write it now rather than at its next flush. Not
			// during the spin: while a busy writer keeps a stream
			// spinning, the ops appended meanwhile share one write.
			b.hurry()
		}
		parked = true
		select {
		case <-w:
		case <-expired:
			// The batch did not fill in time: deliver what is there, or
			// the next op as soon as it comes.
			target, expired = seq, nil
		case <-ctx.Done():
			return ctx.Err()
		case <-b.closed:
			return ErrClosed
		case <-done:
			return errStreamClosed
		case <-b.failed:
			return b.failure()
		}
	}
	if parked {
		ws.parks++
		// More than one op ready at the wake: the writer committed again
		// while the stream was being woken, so it is busy enough for the
		// next wait to spin.
		if b.head.Load() > seq {
			ws.noSpin = false
		}
	}
	return nil
}

// waitSpin waits for op seq without parking: it yields the processor
// spinRounds times, and reports whether op seq was appended meanwhile. On
// a single processor (GOMAXPROCS 1) the writer cannot run while the
// stream spins: it reports false at once. Bounded (some tens of
// microseconds), it looks at neither ctx nor Close: the park that follows
// a spin that found nothing does.
func (b *changeBuffer) waitSpin(seq uint64) bool {
	if runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	for i := range spinRounds {
		if b.head.Load() >= seq {
			return true
		}
		if b.spinHook != nil {
			b.spinHook(i)
		}
		runtime.Gosched()
	}
	return b.head.Load() >= seq
}

// changes returns the DB's change-stream buffer, attaching it first if
// need be. It fails with ErrClosed once Close has begun. With resume set,
// a buffer not yet attached is attached only if it will hold start (the
// committer has numbered no op since start.Seq-1), so that a Watch
// refused for its token attaches nothing.
func (db *DB) changes(resume bool, start ResumeToken) (*changeBuffer, error) {
	db.changesMu.Lock()
	defer db.changesMu.Unlock()
	if db.closed.Load() {
		return nil, ErrClosed
	}
	if db.changeBuf == nil {
		if resume {
			last := db.ops.lastSeq()
			probe := changeBuffer{first: last + 1, size: 1}
			if err := db.checkResume(&probe, start, last); err != nil {
				return nil, fmt.Errorf("Watch: %w", err)
			}
		}
		db.attachChanges()
	}
	return db.changeBuf, nil
}

// attachChanges makes the change-stream buffer and attaches it to the
// committer. Call holding changesMu (or from Open, before the DB is
// shared).
func (db *DB) attachChanges() {
	b := newChangeBuffer(db.cfg.changes.Size)
	switch {
	case db.cfg.replicator != nil:
		b.gate = &db.ops.committed
	case db.persist != nil && !db.cfg.durable.ungated:
		k := db.persist.sink
		b.gate, b.hurry, b.failed, b.failure = &k.durable, k.hurry, k.failedCh, k.err
	}
	b.wakeAt.Store(noWake)
	if db.cfg.changes.PreImages {
		db.ops.requestPreImages(true)
	}
	db.ops.attach(b) // b.start, under the committer's lock
	db.changeBuf = b
}

// closeChanges ends every change stream: called by Close.
func (db *DB) closeChanges() {
	db.changesMu.Lock()
	defer db.changesMu.Unlock()
	if db.changeBuf != nil {
		close(db.changeBuf.closed)
	}
}

// preImageBarrier returns once every write that may have built its ops
// before the committer's pre-image count went up has committed them: it
// takes and releases each collection's write lock, under which writes
// decide whether to keep pre-images and commit their ops (and a
// time-series collection's lock, under which its writes do). Ops committed
// after it returns carry pre-images (while the count stays up). Call it
// after raising the count: a collection missing from the snapshot was
// added to the DB after that, so its writes see the count up. No lock is
// held while a write lock is awaited (DropCollection takes a write lock
// before DB.mu).
func (db *DB) preImageBarrier() {
	for _, st := range db.snapshotCollections() {
		st.writeMu.Lock()
		//lint:ignore SA2001 an empty critical section: waiting for the write under way is the point
		st.writeMu.Unlock()
		if st.ts != nil {
			st.ts.mu.Lock()
			//lint:ignore SA2001 as above, for a time-series write
			st.ts.mu.Unlock()
		}
	}
}
