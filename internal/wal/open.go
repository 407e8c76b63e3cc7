package wal

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ttldb/ttldb/internal/vfs"
)

// Recovery says what Open cut off the log's tail. It is empty after a
// clean shutdown, or a crash that tore nothing.
type Recovery struct {
	// Cuts lists what was removed, in the order it was: a last segment
	// whose header was torn (created when the crash came), then the torn
	// tail of the (new) last segment.
	Cuts []Cut
	// Skips lists the damaged stretches Open and Replay passed over
	// because they held only records at or below Options.Covered: the
	// files keep them (the next TruncateFront drops them).
	Skips []Cut
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

// SkipString describes a stretch of Recovery.Skips.
func (c Cut) SkipString() string {
	return fmt.Sprintf("wal: passed over damaged records of log segment %s at offset %d (%d bytes), which hold only records already held elsewhere (Options.Covered): %s",
		c.Segment, c.Offset, c.Bytes, c.Reason)
}

// String is the warning to log about the cuts: "" when nothing was cut.
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
	l.groupCond.L = &l.groupMu
	bases, err := listSegments(fsys, dir, true)
	if err != nil {
		return nil, err
	}
	if err := l.load(bases); err != nil {
		return nil, err
	}
	if opts.Sync == SyncEverySecond || opts.Sync == SyncNever && opts.BufferSize > 0 {
		l.stop = make(chan struct{})
		l.done = make(chan struct{})
		go l.flusher()
	}
	return l, nil
}

// Segments returns the bases of the segments in dir, in order: none when
// dir does not exist.
func Segments(fsys vfs.FS, dir string) ([]uint64, error) {
	bases, err := listSegments(fsys, dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return bases, err
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

// load checks the segments' headers and identities, truncates a torn
// tail and opens the last segment for appending.
func (l *Log) load(bases []uint64) error {
	l.id = l.opts.ID
	for _, b := range bases[:max(len(bases)-1, 0)] {
		sf, err := openSegment(l.fsys, l.dir, b)
		if err != nil {
			return l.headerError(err, b)
		}
		sf.f.Close()
		if err := l.checkID(b, sf.hdr); err != nil {
			return err
		}
		l.segs = append(l.segs, segment{base: b, size: sf.size, hdr: sf.hdr.size, v: sf.hdr.version})
	}
	if len(bases) == 0 {
		if err := l.ensureID(); err != nil {
			return err
		}
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
		if err := l.ensureID(); err != nil {
			return err
		}
		if len(l.segs) == 0 {
			return l.newActive(last)
		}
		// The segment before it becomes the last: scan it as such. A
		// seal it ends with names the segment just removed, which was
		// never written to: the seal goes too.
		prev := l.segs[len(l.segs)-1]
		l.segs = l.segs[:len(l.segs)-1]
		return l.loadLast(prev.base, true)
	}
	if err != nil {
		return l.headerError(err, last)
	}
	sf.f.Close()
	if err := l.checkID(last, sf.hdr); err != nil {
		return err
	}
	if err := l.ensureID(); err != nil {
		return err
	}
	if sf.size == sf.hdr.size && len(l.segs) > 0 && l.segs[len(l.segs)-1].v >= 2 {
		if err := l.cutTornSeal(last); err != nil {
			return err
		}
	}
	return l.loadLast(last, false)
}

// checkID checks that segment base, whose header is sh, belongs to the
// log's directory; with no identity known yet, the first version 2
// segment gives it.
func (l *Log) checkID(base uint64, sh segHeader) error {
	switch {
	case sh.version < 2:
		return nil
	case l.id.IsZero():
		l.id = sh.id
	case sh.id != l.id:
		return &CorruptError{Segment: segmentName(base), Reason: fmt.Sprintf(
			"the segment belongs to another data directory (identity %s, this directory's is %s)", sh.id, l.id)}
	}
	return nil
}

// ensureID gives the log a new random identity if it has none yet.
func (l *Log) ensureID() error {
	if !l.id.IsZero() {
		return nil
	}
	id, err := NewID()
	l.id = id
	return err
}

// NewID returns a new random directory identity.
func NewID() (ID, error) {
	var id ID
	if _, err := rand.Read(id[:]); err != nil {
		return ID{}, fmt.Errorf("wal: a new identity: %w", err)
	}
	return id, nil
}

// cutTornSeal handles a last segment, base last, that holds no record:
// the segment before it (l.segs' last) may end with its seal torn by a
// crash during the roll that created the last one (roll writes the seal
// after the new segment). Bytes after its last valid record that are a
// prefix of that seal, each byte as written or zero (never written), are
// such a tear: they are cut, as a torn tail is. Anything else is left for
// Replay to report.
func (l *Log) cutTornSeal(last uint64) error {
	prev := l.segs[len(l.segs)-1]
	sf, err := openSegment(l.fsys, l.dir, prev.base)
	if err != nil {
		return l.headerError(err, prev.base)
	}
	defer sf.f.Close()
	rr := newRecordReader(sf.f, sf.hdr, sf.size, prev.base, 0, nil)
	for {
		_, _, err := rr.next()
		if err == nil {
			continue
		}
		if err == io.EOF {
			return nil
		}
		var bad *badRecord
		if !errors.As(err, &bad) || rr.sealed || sf.size-bad.off > sealSize {
			return nil
		}
		tail := make([]byte, sf.size-bad.off)
		if _, err := sf.f.ReadAt(tail, bad.off); err != nil && err != io.EOF {
			return err
		}
		seal := appendSeal(nil, last)
		for i, c := range tail {
			if c != seal[i] && c != 0 {
				return nil
			}
		}
		name := segmentName(prev.base)
		if err := truncateFile(l.fsys, filepath.Join(l.dir, name), bad.off); err != nil {
			return err
		}
		l.recovery.Cuts = append(l.recovery.Cuts, Cut{Segment: name, Offset: bad.off, Bytes: sf.size - bad.off, Reason: "a torn seal: " + bad.reason})
		l.segs[len(l.segs)-1].size = bad.off
		return nil
	}
}

// truncateFile cuts the file at off and fsyncs it.
func truncateFile(fsys vfs.FS, path string, off int64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(off)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// loadLast scans the last segment, base, truncates its torn tail if any and
// opens it for appending. A seal at its end means the segments after it
// are missing (a *CorruptError), unless dropSeal: the segment it names was
// removed as torn, and the seal is cut.
func (l *Log) loadLast(base uint64, dropSeal bool) error {
	sf, err := openSegment(l.fsys, l.dir, base)
	if err != nil {
		return l.headerError(err, base)
	}
	defer sf.f.Close()
	name := segmentName(base)
	rr := newRecordReader(sf.f, sf.hdr, sf.size, base, 0, nil)
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
		if skip, ok, err := rr.skipCovered(sf.f, bad, l.opts.Covered, l.opts.FirstSeq); err != nil {
			return err
		} else if ok {
			l.recovery.Skips = append(l.recovery.Skips, Cut{Segment: name, Offset: bad.off, Bytes: skip, Reason: bad.reason})
			continue
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
	if rr.sealed {
		if !dropSeal {
			return &CorruptError{Segment: segmentName(rr.succ), Reason: fmt.Sprintf(
				"the segment is missing: %s, the last segment present, ends with a seal naming it as its successor", name), LastSeq: rr.prev}
		}
		l.recovery.Cuts = append(l.recovery.Cuts, Cut{Segment: name, Offset: rr.sealAt, Bytes: end - rr.sealAt, Reason: "the seal of a segment whose successor was removed as torn"})
		end = rr.sealAt
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
	l.segs = append(l.segs, segment{base: base, size: end, hdr: sf.hdr.size, v: sf.hdr.version})
	l.lastSeq = max(rr.prev, base-1)
	l.written.Store(l.lastSeq)
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

// noSegmentError is newActive's error when no segment file was left (it
// could not be created, or its header not written): the log may go on in
// its active segment.
type noSegmentError struct{ err error }

func (e *noSegmentError) Error() string { return e.err.Error() }
func (e *noSegmentError) Unwrap() error { return e.err }

// newActive creates segment base and makes it the active one: its header
// is written and synced, and its directory entry too, before any record
// goes in, so that a record synced in it is never lost with its file.
func (l *Log) newActive(base uint64) error {
	path := filepath.Join(l.dir, segmentName(base))
	f, err := l.fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, vfs.FilePerm)
	if err != nil {
		return &noSegmentError{err}
	}
	if _, err = f.Write(appendSegmentHeader(nil, base, l.id)); err != nil {
		// At most a torn header, which Open removes should the file
		// outlive its removal here: the log may go on in the segment
		// before.
		f.Close()
		if rerr := l.fsys.Remove(path); rerr == nil {
			_ = l.fsys.SyncDir(l.dir)
		}
		return &noSegmentError{err}
	}
	_, err = l.fsync(f)
	if err == nil {
		err = l.fsys.SyncDir(l.dir)
	}
	if err != nil {
		// A whole header may be on the disk: records written to the
		// segment before would then sit before a segment whose base is
		// not above theirs. The caller fails the log.
		f.Close()
		return err
	}
	l.f = f
	l.rollRetry = 0
	l.segs = append(l.segs, segment{base: base, size: segHeaderSize, hdr: segHeaderSize, v: Version})
	l.lastSeq = base - 1
	l.written.Store(l.lastSeq)
	l.durable.Store(l.lastSeq)
	return nil
}

// Recovery reports what Open cut off the tail of the log, and the
// damage Open and Replay passed over.
func (l *Log) Recovery() Recovery {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recovery
	r.Cuts = append([]Cut(nil), r.Cuts...)
	r.Skips = append([]Cut(nil), r.Skips...)
	return r
}

// noteSkip records a damaged stretch passed over, once (Replay may pass
// over what Open did).
func (l *Log) noteSkip(c Cut) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.recovery.Skips {
		if s.Segment == c.Segment && s.Offset == c.Offset {
			return
		}
	}
	l.recovery.Skips = append(l.recovery.Skips, c)
}
