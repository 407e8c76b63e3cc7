package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/wal"
)

// logSink is the data directory's log as the committer's sink. A write's
// ops reach the disk in three steps:
//
//  1. appendOps, under the committer's lock (and the collection's write
//     lock), encodes them onto pending: no system call, no allocation but
//     the buffer's growth.
//  2. pending is handed to the log as one record (one write(2)): under
//     SyncAlways by the writer itself once it released its collection's
//     locks (the first writer to get there writes what every writer
//     appended meanwhile, so concurrent writers share the system call);
//     under the other policies by the sink's writer goroutine, at most
//     flushDelay after the first op appended to an empty pending, or as
//     soon as flushBytes are pending. A record is the unit a torn tail
//     loses: a write's ops are in one record, never split.
//  3. Under SyncAlways the writer then waits for an fsync covering the
//     record, shared with the writers waiting together (the log's group
//     commit). Under SyncEverySecond the log's flusher fsyncs once a
//     second; under SyncNever the operating system writes back when it
//     chooses.
//
// So under SyncAlways a write returns once its ops are on the disk; under
// the others it returns at once, and a crash of the process loses the
// acknowledged writes of about the last flushDelay (a little more when the
// writer goroutine waits for a processor), a power cut at most the last
// second or so (SyncEverySecond). Handing every write to the operating
// system before it returns would cost a system call per write, as much as
// the write itself in memory: the sync policy is the user's choice of that
// trade-off, and SyncAlways is the one that waits.
type logSink struct {
	log      *wal.Log
	always   bool           // SyncAlways
	versions *atomic.Uint64 // the DB's record-version counter (DB.writes)
	clock    Clock

	// The writer goroutine (not under SyncAlways): kick wakes it, stop
	// ends it, done is closed when it has returned.
	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	pending []byte // ops appended, not yet written
	spare   []byte // the buffer pending had before the last write
	encErr  error  // an op that did not encode (cannot happen)

	pendingSeq atomic.Uint64 // the last op appended
	written    atomic.Uint64 // every op up to this one is written
	// durable is the log's durable mark: every op up to it is as durable
	// as the sync policy promises (written under SyncEverySecond and
	// SyncNever, fsynced under SyncAlways). The change-stream buffer
	// publishes no op past it (its gate), and onDurable tells it when
	// the mark moves.
	durable   atomic.Uint64
	onDurable func()
	// urgent asks the writer goroutine to write pending at once rather
	// than flushDelay after the first op (hurry).
	urgent    atomic.Bool
	failedCh  chan struct{} // closed by the first failure
	writeMu   sync.Mutex    // serializes writes to the log, in sequence order
	bytes     atomic.Int64  // bytes written to the log since the last snapshot
	failed    atomic.Pointer[error]
	closed    atomic.Bool       // set by Close before its last flush
	syncCalls atomic.Int64      // calls of sync (tests: a write waits once)
	onWrite   func(bytes int64) // after each write (the auto snapshot's check); may be nil
}

// copiesOps: appendOps encodes the ops onto pending (opCopier).
func (k *logSink) copiesOps() {}

func (k *logSink) appendOps(ops []Op) {
	k.mu.Lock()
	defer k.mu.Unlock()
	wasEmpty := len(k.pending) == 0
	if wasEmpty {
		// Room for the record's version counter, written by flush.
		k.pending = append(k.pending, make([]byte, binary.MaxVarintLen64)...)
	}
	for _, op := range ops {
		at := len(k.pending)
		k.pending = append(k.pending, 0, 0, 0, 0)
		b, err := op.AppendBinary(k.pending)
		if err != nil {
			k.pending = k.pending[:at]
			if k.encErr == nil {
				k.encErr = fmt.Errorf("op %d: %w", op.Seq, err)
			}
			continue
		}
		binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
		k.pending = b
	}
	k.pendingSeq.Store(ops[len(ops)-1].Seq)
	if k.kick != nil && (wasEmpty || len(k.pending) >= flushBytes) {
		select {
		case k.kick <- struct{}{}:
		default:
		}
	}
}

// The writer goroutine's bounds: it hands pending to the log at most
// flushDelay after the first op appended to an empty pending, or once
// flushBytes are pending.
const (
	flushDelay = 10 * time.Millisecond
	flushBytes = 256 << 10
)

// startWriter starts the writer goroutine (policies other than
// SyncAlways).
func (k *logSink) startWriter() {
	k.kick = make(chan struct{}, 1)
	k.stop = make(chan struct{})
	k.done = make(chan struct{})
	go k.writer()
}

func (k *logSink) writer() {
	defer close(k.done)
	for {
		select {
		case <-k.stop:
			return
		case <-k.kick:
		}
		k.mu.Lock()
		full := len(k.pending) >= flushBytes
		k.mu.Unlock()
		if !full && !k.urgent.Load() {
			t := k.clock.NewTimer(flushDelay)
			select {
			case <-k.stop:
				t.Stop()
				return
			case <-t.C():
			case <-k.kick: // flushBytes reached, or hurry
				t.Stop()
			}
		}
		_ = k.flush(k.pendingSeq.Load()) // a failure fails the sink: writes see it
	}
}

// hurry has the writer goroutine write what is pending now rather than
// flushDelay after its first op: a change stream waits for those ops,
// which it may deliver only once written. It never blocks; a no-op
// under SyncAlways, where each writer writes its own ops.
func (k *logSink) hurry() {
	if k.kick == nil || k.written.Load() >= k.pendingSeq.Load() || k.urgent.Swap(true) {
		return
	}
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// markDurable raises the durable mark to seq and tells the change-stream
// buffer.
func (k *logSink) markDurable(seq uint64) {
	raiseTo(&k.durable, seq)
	if k.onDurable != nil {
		k.onDurable()
	}
}

// stopWriter ends the writer goroutine, if any; the caller flushes.
func (k *logSink) stopWriter() {
	if k.stop != nil {
		close(k.stop)
		<-k.done
	}
}

// err returns the sink's failure, nil while it works.
func (k *logSink) err() error {
	if e := k.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// fail records the first failure and returns the one recorded.
func (k *logSink) fail(err error) error {
	if !errors.Is(err, errs.ErrLogFailed) {
		err = fmt.Errorf("%w: %w", errs.ErrLogFailed, err)
	}
	if k.failed.CompareAndSwap(nil, &err) && k.failedCh != nil {
		close(k.failedCh)
	}
	return k.err()
}

// flush writes every op appended so far (at least up to seq) to the log.
func (k *logSink) flush(seq uint64) error {
	if k.written.Load() >= seq {
		return k.err()
	}
	k.writeMu.Lock()
	defer k.writeMu.Unlock()
	if k.written.Load() >= seq {
		return k.err()
	}
	if err := k.err(); err != nil {
		return err
	}
	k.urgent.Store(false) // what a hurry asked for is taken now
	k.mu.Lock()
	buf, last, encErr := k.pending, k.pendingSeq.Load(), k.encErr
	k.pending, k.spare = k.spare[:0], nil
	k.mu.Unlock()
	if encErr != nil {
		return k.fail(encErr)
	}
	if len(buf) > 0 {
		// Read after the ops were appended: at least every version they
		// carry. It goes, right-aligned, in the room appendOps left.
		var v [binary.MaxVarintLen64]byte
		n := binary.PutUvarint(v[:], k.versions.Load())
		off := binary.MaxVarintLen64 - n
		copy(buf[off:], v[:n])
		if err := k.log.Write(last, buf[off:]); err != nil {
			return k.fail(err)
		}
		k.bytes.Add(int64(len(buf)))
		if k.onWrite != nil {
			k.onWrite(k.bytes.Load())
		}
	}
	k.written.Store(last)
	if !k.always {
		// Written is what these policies promise before a crash of the
		// process: streams may deliver these ops.
		k.markDurable(last)
	}
	if cap(buf) <= 1<<20 {
		k.mu.Lock()
		k.spare = buf[:0]
		k.mu.Unlock()
	}
	return nil
}

// sync makes every op appended so far as durable as the policy promises
// before a write returns: under SyncAlways written to the log and fsynced;
// under the others nothing (the writer goroutine writes it within
// flushDelay). It returns the sink's failure. Call it after a write,
// holding no DB lock.
func (k *logSink) sync() error {
	k.syncCalls.Add(1)
	if k.closed.Load() && k.written.Load() < k.pendingSeq.Load() {
		// Committed in memory while Close ran (a write that raced
		// with it): it may not be in the log.
		return ErrClosed
	}
	if !k.always {
		return k.err() // the writer goroutine hands it on
	}
	seq := k.pendingSeq.Load()
	if err := k.flush(seq); err != nil {
		return err
	}
	if seq > 0 {
		if err := k.log.Wait(seq); err != nil {
			return k.fail(err)
		}
		k.markDurable(seq)
	}
	return nil
}

// recordFirstSeq returns the seq of the first op of a log record's
// payload (a record holds the ops of a run of seqs, ending at its own).
func recordFirstSeq(payload []byte) (uint64, bool) {
	_, n := binary.Uvarint(payload) // the version counter
	if n <= 0 || len(payload) < n+4+1 {
		return 0, false
	}
	op := payload[n+4:]
	if op[0] != OpVersion {
		return 0, false
	}
	seq, m := binary.Uvarint(op[1:])
	return seq, m > 0
}

// decodeRecord calls fn with each op of a log record's payload, after
// giving the record's version counter to ver.
func decodeRecord(payload []byte, ver func(uint64), fn func(Op) error) error {
	v, n := binary.Uvarint(payload)
	if n <= 0 {
		return corrupt("log record: malformed version counter")
	}
	ver(v)
	payload = payload[n:]
	for len(payload) > 0 {
		if len(payload) < 4 {
			return corrupt("log record: truncated op length")
		}
		n := binary.LittleEndian.Uint32(payload)
		payload = payload[4:]
		if uint64(n) > uint64(len(payload)) {
			return corrupt("log record: op of %d bytes, %d left", n, len(payload))
		}
		var op Op
		if err := op.UnmarshalBinary(payload[:n]); err != nil {
			if errors.Is(err, ErrOpVersion) {
				return fmt.Errorf("%w: log record: %w", errs.ErrFormatVersion, err)
			}
			return corrupt("log record: %v", err)
		}
		payload = payload[n:]
		if err := fn(op); err != nil {
			return err
		}
	}
	return nil
}
