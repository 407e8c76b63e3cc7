package wal

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/vfs"
)

// SyncPolicy says when the log fsyncs what it wrote.
type SyncPolicy uint8

// The sync policies, as in Redis's append-only file. The zero value is
// SyncEverySecond.
const (
	// SyncEverySecond fsyncs from a background flusher about once per
	// Options.FlushInterval (1 s by default): a power cut loses at most the
	// records written since the last flush. Wait returns at once.
	SyncEverySecond SyncPolicy = iota
	// SyncAlways fsyncs before Wait (and Append) returns; concurrent
	// writers share fsyncs.
	SyncAlways
	// SyncNever leaves write-back to the operating system (typically
	// within 30 s on Linux). Wait returns at once.
	SyncNever
)

// String returns the policy's name, as its constant is spelled.
func (p SyncPolicy) String() string {
	switch p {
	case SyncEverySecond:
		return "SyncEverySecond"
	case SyncAlways:
		return "SyncAlways"
	case SyncNever:
		return "SyncNever"
	}
	return fmt.Sprintf("SyncPolicy(%d)", uint8(p))
}

// Timer is a one-shot timer, as ttldb's Clock makes them (the same
// interface, so a Clock's NewTimer fits Options.NewTimer).
type Timer = interface {
	C() <-chan time.Time
	Stop() bool
}

// Options configure a Log. The zero value is valid: SyncEverySecond,
// 64 MiB segments, a flush per second on the system's timers.
type Options struct {
	// Sync is the sync policy (default SyncEverySecond).
	Sync SyncPolicy
	// SegmentSize is the size in bytes past which the log starts a new
	// segment (default DefaultSegmentSize). A segment holds at least one
	// record, so one may grow past it by a record.
	SegmentSize int64
	// FlushInterval is the time between two flushes under
	// SyncEverySecond (default 1 s).
	FlushInterval time.Duration
	// NewTimer makes the flusher's timers (default: time.NewTimer's). A
	// test passes a fake clock's, to flush without waiting.
	NewTimer func(d time.Duration) Timer
	// BufferSize, when above 0, gathers records in memory and hands them
	// to the operating system (one write(2)) when the buffer holds
	// BufferSize bytes, at every flush (each FlushInterval, under
	// SyncNever too), and in Wait under SyncAlways (the group commit's
	// leader writes the group's records at once), Sync, TruncateFront,
	// Replay and Close. Writers then pay a system call per BufferSize
	// bytes instead of per record, and a crash of the process loses the
	// records still in the buffer: under SyncEverySecond and SyncNever at
	// most those written since the last flush (never more than
	// BufferSize bytes), under SyncAlways none that Wait acknowledged.
	// With 0, the default, each Write is one write(2).
	BufferSize int
	// Now reads the clock that times fsyncs for the commit delay (see
	// Wait); default time.Now. A clock that does not move (a test's fake
	// one) turns the delay off.
	Now func() time.Time
	// NoCommitDelay turns the group commit's delay off (see Wait).
	NoCommitDelay bool
	// ID is the data directory's identity, which every version 2
	// segment carries: Open refuses a segment with another (a
	// *CorruptError). The zero ID takes the identity the segments carry,
	// or a new random one if none does (Log.ID returns it).
	ID ID
	// Covered is the last seq the caller holds elsewhere (a snapshot it
	// loaded whole): damage in records that hold only seqs at or below
	// it is passed over, by Open and Replay, and reported
	// (Recovery.Skips), never an error nor a cut of the records after
	// it. 0: none.
	Covered uint64
	// FirstSeq returns the first seq a record's payload holds, when a
	// record holds a run of seqs ending at its own (nil: a record holds
	// its seq alone). It tells, from the valid record that follows a
	// damaged stretch, which seqs the stretch held.
	FirstSeq func(payload []byte) (uint64, bool)
}

func (o Options) withDefaults() (Options, error) {
	if o.Sync > SyncNever {
		return o, fmt.Errorf("%w: wal: unknown sync policy %d", errs.ErrInvalidOptions, o.Sync)
	}
	if o.SegmentSize < 0 || o.FlushInterval < 0 || o.BufferSize < 0 {
		return o, fmt.Errorf("%w: wal: negative SegmentSize, FlushInterval or BufferSize", errs.ErrInvalidOptions)
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewTimer == nil {
		o.NewTimer = func(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }
	}
	return o, nil
}

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }

// Log is an open write-ahead log. Its methods are safe for concurrent use.
//
// Locks, in the order they are taken: groupMu elects the group commit's
// leader (never held across I/O); syncMu serializes fsyncs, segment
// changes and Close; mu guards the active segment's writes and the fields
// below it. mu is never held across an fsync but in the rare segment roll,
// so writers go on writing while a group commit's fsync runs.
type Log struct {
	fsys vfs.FS
	dir  string
	opts Options

	syncMu  sync.Mutex
	frontMu sync.Mutex // serializes TruncateFront and Replay

	mu      sync.Mutex
	f       vfs.File  // the active (last) segment, opened for appending; nil once closed
	segs    []segment // every segment, oldest first; the last is active (its size counts pending)
	lastSeq uint64    // seq of the last record written (base-1 if none)
	closed  bool
	buf     []byte // scratch for encoding a record (unbuffered)
	pending []byte // records not yet handed to the OS (BufferSize > 0)
	appends int64
	bytes   int64
	// rollRetry, after a roll that could not create the new segment, is
	// the active segment's size at which Write tries again (0: none
	// failed): a segment size further, not at every write.
	rollRetry int64

	failed  atomic.Pointer[error] // the failure, once the log failed
	durable atomic.Uint64         // every record up to this seq is fsynced
	written atomic.Uint64         // lastSeq, for the group commit's leader
	syncs   atomic.Int64
	// syncDurs and syncDurSum time the fsyncs (Stats.SyncDurations).
	syncDurs   [len(SyncDurationBounds) + 1]atomic.Int64
	syncDurSum atomic.Int64

	// The group commit: one caller at a time (the leader) fsyncs, the
	// others wait on groupCond for its result.
	groupMu   sync.Mutex
	groupCond sync.Cond
	syncing   bool // a leader is gathering or fsyncing; guarded by groupMu

	// The commit delay (commitDelay), guarded by groupMu: the seqs the
	// callers in syncTo wait for, how many callers were there when the
	// last group commit's fsync ended, and that fsync's time.
	waitSeqs  []uint64
	lastGroup int
	lastSync  time.Duration

	recovery Recovery
	id       ID // the directory's identity

	stop chan struct{} // closed by Close to stop the flusher
	done chan struct{} // closed by the flusher when it returns
}

type segment struct {
	base uint64
	size int64
	hdr  int64  // header size: where its records start
	v    uint32 // format version
}

// err returns the failure, or nil.
func (l *Log) err() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail fails the log with cause (the first failure wins) and returns the
// failure.
func (l *Log) fail(cause error) error {
	e := failure(cause)
	if l.failed.CompareAndSwap(nil, &e) {
		return e
	}
	return l.err()
}

// Err returns the error that failed the log (matching errs.ErrLogFailed),
// or nil.
func (l *Log) Err() error { return l.err() }

// Close stops the flusher, writes the buffer, fsyncs what was written and
// closes the active segment. It returns the fsync's error, or the log's failure; a second
// Close returns nil.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	if l.stop != nil {
		close(l.stop)
		<-l.done
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.err()
	if err == nil {
		err = l.writePending()
	}
	if err == nil {
		if _, serr := l.fsync(l.f); serr != nil {
			err = l.fail(serr)
		} else {
			l.durable.Store(l.lastSeq)
		}
	}
	if cerr := l.f.Close(); cerr != nil && err == nil {
		err = cerr
	}
	l.f = nil // leadSync's sign that the file is gone
	return err
}

// LastSeq returns the seq of the last record written; before any, one
// less than the first segment's base (0 for a new log).
func (l *Log) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeq
}

// ID returns the data directory's identity, which the log's segments
// carry.
func (l *Log) ID() ID { return l.id }

// FirstSeq returns the base of the oldest segment: no record below it
// remains in the log.
func (l *Log) FirstSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.segs[0].base
}

// Stats are counts about a Log, a value snapshot.
type Stats struct {
	Appends  int64 // records written since Open
	Bytes    int64 // bytes written since Open, framing included
	Syncs    int64 // fsyncs of segment files since Open (group commits, flushes, rolls, Close)
	Segments int   // segment files now
	Size     int64 // bytes in all segment files now, the buffer's included
	// SyncDurations counts the fsyncs by duration (Options.Now): entry i
	// those at or below SyncDurationBounds[i] and above the bound before
	// (not cumulative), the last one those above every bound;
	// SyncDurationSum is their total.
	SyncDurations   [len(SyncDurationBounds) + 1]int64
	SyncDurationSum time.Duration
}

// SyncDurationBounds are the bounds of Stats.SyncDurations: an fsync
// takes tens of microseconds on a fast SSD, milliseconds on a disk, and
// longer when the device is busy.
var SyncDurationBounds = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second,
}

// fsync fsyncs f, counting it and its duration, and returns the duration.
func (l *Log) fsync(f interface{ Sync() error }) (time.Duration, error) {
	start := l.opts.Now()
	err := f.Sync()
	took := max(l.opts.Now().Sub(start), 0)
	l.syncs.Add(1)
	i, _ := slices.BinarySearch(SyncDurationBounds[:], took) // the first bound >= took
	l.syncDurs[i].Add(1)
	l.syncDurSum.Add(int64(took))
	return took, err
}

// Stats returns the log's counts. It takes the log's lock briefly.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Stats{Appends: l.appends, Bytes: l.bytes, Syncs: l.syncs.Load(), Segments: len(l.segs), SyncDurationSum: time.Duration(l.syncDurSum.Load())}
	for i := range s.SyncDurations {
		s.SyncDurations[i] = l.syncDurs[i].Load()
	}
	for _, g := range l.segs {
		s.Size += g.size
	}
	return s
}
