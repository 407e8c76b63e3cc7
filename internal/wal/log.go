package wal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
}

func (o Options) withDefaults() (Options, error) {
	if o.Sync > SyncNever {
		return o, fmt.Errorf("%w: wal: unknown sync policy %d", errs.ErrInvalidOptions, o.Sync)
	}
	if o.SegmentSize < 0 || o.FlushInterval < 0 {
		return o, fmt.Errorf("%w: wal: negative SegmentSize or FlushInterval", errs.ErrInvalidOptions)
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = time.Second
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
// Locks: syncMu serializes fsyncs, segment changes and Close; mu guards
// the active segment's writes and the fields below it. syncMu is taken
// before mu. mu is never held across an fsync but in the rare segment
// roll, so writers go on writing while a group commit's fsync runs.
type Log struct {
	fsys vfs.FS
	dir  string
	opts Options

	syncMu  sync.Mutex
	frontMu sync.Mutex // serializes TruncateFront and Replay

	mu      sync.Mutex
	f       vfs.File  // the active (last) segment, opened for appending
	segs    []segment // every segment, oldest first; the last is active
	lastSeq uint64    // seq of the last record written (base-1 if none)
	closed  bool
	buf     []byte // scratch for encoding a record
	appends int64
	bytes   int64

	failed  atomic.Pointer[error] // the failure, once the log failed
	durable atomic.Uint64         // every record up to this seq is fsynced
	syncs   atomic.Int64

	recovery Recovery

	stop chan struct{} // closed by Close to stop the flusher
	done chan struct{} // closed by the flusher when it returns
}

type segment struct {
	base uint64
	size int64
}

// Recovery says what Open cut off the log's tail. It is empty after a
// clean shutdown, or a crash that tore nothing.
type Recovery struct {
	// Cuts lists what was removed, in the order it was: a last segment
	// whose header was torn (created when the crash came), then the torn
	// tail of the (new) last segment.
	Cuts []Cut
}

// Cut is one stretch Open removed.
type Cut struct {
	Segment string // file name of the segment
	Offset  int64  // where the valid data ends: the file now ends there
	Bytes   int64  // how many bytes were removed
	Reason  string // what was wrong with the first of them
	Removed bool   // the whole file was removed (a torn header)
}

// Bytes is the number of bytes Open removed in all.
func (r Recovery) Bytes() int64 {
	var n int64
	for _, c := range r.Cuts {
		n += c.Bytes
	}
	return n
}

// String is the warning to log: "" when nothing was cut.
func (r Recovery) String() string {
	var b strings.Builder
	for i, c := range r.Cuts {
		if i > 0 {
			b.WriteString("; ")
		}
		if c.Removed {
			fmt.Fprintf(&b, "wal: removed log segment %s (%d bytes): %s", c.Segment, c.Bytes, c.Reason)
		} else {
			fmt.Fprintf(&b, "wal: truncated the torn tail of log segment %s at offset %d (%d bytes): %s", c.Segment, c.Offset, c.Bytes, c.Reason)
		}
	}
	return b.String()
}

// Open opens the log in dir (creating dir, mode 0700, and a first segment
// if there is none), truncates a torn tail (see Recovery) and, under
// SyncEverySecond, starts the flusher. It reads the last segment whole and
// the header of every other.
//
// Errors: a *CorruptError (errs.ErrCorrupt) or a *VersionError
// (errs.ErrFormatVersion) for files it will not load, errs.ErrInvalidOptions
// for bad options, or the file system's error.
func Open(fsys vfs.FS, dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Log{fsys: fsys, dir: dir, opts: opts}
	bases, err := listSegments(fsys, dir, true)
	if err != nil {
		return nil, err
	}
	if err := l.load(bases); err != nil {
		return nil, err
	}
	if opts.Sync == SyncEverySecond {
		l.stop = make(chan struct{})
		l.done = make(chan struct{})
		go l.flusher()
	}
	return l, nil
}

// listSegments returns the bases of dir's segments, in order. With
// create, a missing dir is created with its missing parents, and each new
// entry is synced into its parent.
func listSegments(fsys vfs.FS, dir string, create bool) ([]uint64, error) {
	names, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) && create {
		return nil, mkdirDurable(fsys, dir)
	}
	if err != nil {
		return nil, err
	}
	var bases []uint64
	for _, n := range names {
		if b, ok := parseSegmentName(n); ok {
			bases = append(bases, b)
		}
	}
	return bases, nil // ReadDir sorts; fixed-width names sort by base
}

// mkdirDurable creates dir and its missing parents (DirPerm) and syncs the
// parent of each directory it created, so that a power cut keeps them.
func mkdirDurable(fsys vfs.FS, dir string) error {
	var missing []string
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := fsys.ReadDir(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := fsys.MkdirAll(dir, vfs.DirPerm); err != nil {
		return err
	}
	for _, p := range missing {
		if err := fsys.SyncDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

// load checks the segments' headers, truncates a torn tail and opens the
// last segment for appending.
func (l *Log) load(bases []uint64) error {
	for _, b := range bases[:max(len(bases)-1, 0)] {
		sf, err := openSegment(l.fsys, l.dir, b)
		if err != nil {
			return l.headerError(err, b)
		}
		sf.f.Close()
		l.segs = append(l.segs, segment{base: b, size: sf.size})
	}
	if len(bases) == 0 {
		return l.newActive(1)
	}
	last := bases[len(bases)-1]
	sf, err := openSegment(l.fsys, l.dir, last)
	if errors.Is(err, errBadHeader) {
		// A crash while a segment was being created leaves it empty, cut
		// short or zero-filled: nothing was ever written to it past the
		// header, which it is synced before any record.
		cut, torn, terr := l.tornHeader(last, err)
		if terr != nil {
			return terr
		}
		if !torn {
			return l.headerError(err, last)
		}
		l.recovery.Cuts = append(l.recovery.Cuts, cut)
		if len(l.segs) == 0 {
			return l.newActive(last)
		}
		// The segment before it becomes the last: scan it as such.
		prev := l.segs[len(l.segs)-1]
		l.segs = l.segs[:len(l.segs)-1]
		return l.load2(prev.base)
	}
	if err != nil {
		return l.headerError(err, last)
	}
	sf.f.Close()
	return l.load2(last)
}

// load2 scans the last segment, base, truncates its torn tail if any and
// opens it for appending.
func (l *Log) load2(base uint64) error {
	sf, err := openSegment(l.fsys, l.dir, base)
	if err != nil {
		return l.headerError(err, base)
	}
	defer sf.f.Close()
	name := segmentName(base)
	rr := newRecordReader(sf.f, sf.size, base, 0, nil)
	end := sf.size
	for {
		_, _, err := rr.next()
		if err == nil {
			continue
		}
		if err == io.EOF {
			break
		}
		var bad *badRecord
		if !errors.As(err, &bad) {
			return err
		}
		more, err := validRecordAfter(sf.f, bad.off+1, sf.size, rr.prev)
		if err != nil {
			return err
		}
		if more {
			return &CorruptError{Segment: name, Offset: bad.off, Reason: bad.reason + ", and valid records follow it", LastSeq: rr.prev}
		}
		end = bad.off
		l.recovery.Cuts = append(l.recovery.Cuts, Cut{Segment: name, Offset: end, Bytes: sf.size - end, Reason: bad.reason})
		break
	}
	f, err := l.fsys.OpenFile(filepath.Join(l.dir, name), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if end < sf.size {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	l.f = f
	l.segs = append(l.segs, segment{base: base, size: end})
	l.lastSeq = max(rr.prev, base-1)
	l.durable.Store(l.lastSeq)
	return nil
}

// tornHeader decides whether the last segment's bad header is the trace of
// a crash during its creation (the file is no longer than a header, or all
// zeros) and if so removes the file.
func (l *Log) tornHeader(base uint64, why error) (Cut, bool, error) {
	name := segmentName(base)
	path := filepath.Join(l.dir, name)
	f, err := l.fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return Cut{}, false, err
	}
	size, err := f.Size()
	torn := err == nil && size <= segHeaderSize
	if err == nil && !torn {
		torn, err = allZero(f, 0, size)
	}
	f.Close()
	if err != nil || !torn {
		return Cut{}, false, err
	}
	if err := l.fsys.Remove(path); err != nil {
		return Cut{}, false, err
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return Cut{}, false, err
	}
	reason := strings.TrimPrefix(why.Error(), errBadHeader.Error()+": ")
	return Cut{Segment: name, Bytes: size, Reason: reason, Removed: true}, true, nil
}

// headerError turns a header problem of segment base into the error Open
// returns.
func (l *Log) headerError(err error, base uint64) error {
	if !errors.Is(err, errBadHeader) {
		return err
	}
	return &CorruptError{Segment: segmentName(base), Offset: 0,
		Reason: strings.TrimPrefix(err.Error(), errBadHeader.Error()+": ")}
}

// newActive creates segment base and makes it the active one: its header
// is written and synced, and its directory entry too, before any record
// goes in, so that a record synced in it is never lost with its file.
func (l *Log) newActive(base uint64) error {
	path := filepath.Join(l.dir, segmentName(base))
	f, err := l.fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, vfs.FilePerm)
	if err != nil {
		return err
	}
	_, err = f.Write(appendSegmentHeader(nil, base))
	if err == nil {
		err = f.Sync()
		l.syncs.Add(1)
	}
	if err == nil {
		err = l.fsys.SyncDir(l.dir)
	}
	if err != nil {
		f.Close()
		return err
	}
	l.f = f
	l.segs = append(l.segs, segment{base: base, size: segHeaderSize})
	l.lastSeq = base - 1
	l.durable.Store(l.lastSeq)
	return nil
}

// Recovery reports what Open cut off the tail of the log.
func (l *Log) Recovery() Recovery { return l.recovery }

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

// Write appends the record (seq, payload) and hands it to the operating
// system: it survives a crash of the process once Write returns nil, a
// power cut once it is synced (see Wait). seq must be above every seq
// written before; payload at most MaxRecordSize bytes (it is copied).
//
// Write holds the log's lock for one write(2), never across an fsync
// (but when it starts a new segment: then it fsyncs the old one and the
// new one's header and directory entry). Records are on disk in the order
// their Writes took that lock: a caller that needs seq order calls Write
// under its own ordering lock, and Wait after releasing it.
//
// Errors: ErrTooLarge or ErrOutOfOrder (the log is unchanged), ErrClosed,
// or the log's failure (errs.ErrLogFailed); a write that fails fails the
// log.
func (l *Log) Write(seq uint64, payload []byte) error {
	if uint64(len(payload)) > uint64(maxRecord) {
		return fmt.Errorf("%w: %d bytes, the bound is %d", ErrTooLarge, len(payload), maxRecord)
	}
	l.mu.Lock()
	if err := l.writable(seq); err != nil {
		l.mu.Unlock()
		return err
	}
	if act := l.segs[len(l.segs)-1]; act.size >= l.opts.SegmentSize && act.size > segHeaderSize {
		// Roll over: take syncMu first (the lock order), then check again.
		l.mu.Unlock()
		l.syncMu.Lock()
		defer l.syncMu.Unlock()
		l.mu.Lock()
		if err := l.writable(seq); err != nil {
			l.mu.Unlock()
			return err
		}
		if act := l.segs[len(l.segs)-1]; act.size >= l.opts.SegmentSize && act.size > segHeaderSize {
			if err := l.roll(); err != nil {
				l.mu.Unlock()
				return err
			}
		}
	}
	defer l.mu.Unlock()
	l.buf = appendRecord(l.buf[:0], seq, payload)
	n, err := l.f.Write(l.buf)
	l.segs[len(l.segs)-1].size += int64(n)
	if err != nil {
		return l.fail(err)
	}
	l.lastSeq = seq
	l.appends++
	l.bytes += int64(n)
	if cap(l.buf) > 1<<20 {
		l.buf = nil // do not keep a large record's buffer
	}
	return nil
}

// writable checks that a record seq may be written now. Call it holding mu.
func (l *Log) writable(seq uint64) error {
	if l.closed {
		return ErrClosed
	}
	if err := l.err(); err != nil {
		return err
	}
	if seq <= l.lastSeq {
		return fmt.Errorf("%w: seq %d after seq %d", ErrOutOfOrder, seq, l.lastSeq)
	}
	return nil
}

// roll fsyncs and closes the active segment and starts a new one whose base
// follows the last seq written. Call it holding syncMu and mu. An error
// fails the log.
func (l *Log) roll() error {
	err := l.f.Sync()
	l.syncs.Add(1)
	if err != nil {
		return l.fail(err)
	}
	l.durable.Store(l.lastSeq)
	if err := l.f.Close(); err != nil {
		return l.fail(err)
	}
	if err := l.newActive(l.lastSeq + 1); err != nil {
		return l.fail(err)
	}
	return nil
}

// Wait returns once the record seq (written by a Write that returned nil)
// is as durable as the policy promises: under SyncAlways, fsynced. Callers
// waiting together share fsyncs: one of them fsyncs everything written so
// far while the others wait for it (group commit). Under the other
// policies Wait returns at once. It returns the log's failure if the log
// failed before seq was known to be synced.
func (l *Log) Wait(seq uint64) error {
	if l.opts.Sync != SyncAlways {
		return l.err()
	}
	return l.syncTo(seq)
}

// Append is Write then Wait.
func (l *Log) Append(seq uint64, payload []byte) error {
	if err := l.Write(seq, payload); err != nil {
		return err
	}
	return l.Wait(seq)
}

// Sync fsyncs every record written so far, whatever the policy.
func (l *Log) Sync() error {
	l.mu.Lock()
	last := l.lastSeq
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return l.syncTo(last)
}

// syncTo returns once every record up to seq is fsynced, fsyncing the
// active segment if no one else did.
func (l *Log) syncTo(seq uint64) error {
	if l.durable.Load() >= seq {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.durable.Load() >= seq {
		return nil // the fsync of the caller before us covered seq
	}
	l.mu.Lock()
	if err := l.err(); err != nil {
		l.mu.Unlock()
		return err
	}
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if seq > l.lastSeq {
		l.mu.Unlock()
		return fmt.Errorf("wal: seq %d was not written (the last is %d)", seq, l.lastSeq)
	}
	f, target := l.f, l.lastSeq
	l.mu.Unlock()
	// The fsync runs without mu: writers go on appending meanwhile, and
	// the next fsync covers them. syncMu keeps f from being closed.
	err := f.Sync()
	l.syncs.Add(1)
	if err != nil {
		return l.fail(err)
	}
	l.durable.Store(target)
	return nil
}

// flusher fsyncs about once per FlushInterval under SyncEverySecond,
// until Close. A failed fsync fails the log, which the next Write reports.
func (l *Log) flusher() {
	defer close(l.done)
	for {
		t := l.opts.NewTimer(l.opts.FlushInterval)
		select {
		case <-l.stop:
			t.Stop()
			return
		case <-t.C():
		}
		l.mu.Lock()
		last := l.lastSeq
		l.mu.Unlock()
		_ = l.syncTo(last)
	}
}

// Close stops the flusher, fsyncs what was written and closes the active
// segment. It returns the fsync's error, or the log's failure; a second
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
		if serr := l.f.Sync(); serr != nil {
			err = l.fail(serr)
		} else {
			l.durable.Store(l.lastSeq)
		}
		l.syncs.Add(1)
	}
	if cerr := l.f.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// LastSeq returns the seq of the last record written; before any, one
// less than the first segment's base (0 for a new log).
func (l *Log) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeq
}

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
	Size     int64 // bytes in all segment files now
}

// Stats returns the log's counts. It takes the log's lock briefly.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Stats{Appends: l.appends, Bytes: l.bytes, Syncs: l.syncs.Load(), Segments: len(l.segs)}
	for _, g := range l.segs {
		s.Size += g.size
	}
	return s
}
