package wal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrTruncated is returned by Reader.Read when the records it is to read
// next were dropped from the front of the log (TruncateFront).
var ErrTruncated = errors.New("wal: the records wanted were dropped from the front of the log")

// Reader reads a log's records from a seq on, a batch per Read call,
// holding no lock and no open file between calls: a change stream resumed
// from the log reads it at its own pace while writes go on. It remembers
// where it stopped (a segment and an offset), so a Read costs the records
// it returns, not a scan from the segment's start. A Reader is for one
// goroutine at a time.
type Reader struct {
	l    *Log
	from uint64 // the first seq wanted
	base uint64 // the segment being read; 0 before the first Read
	off  int64  // the offset of its next record
	prev uint64 // the seq of the last record read
	buf  []byte
	br   *bufio.Reader // kept from call to call
}

// NewReader returns a Reader of the records with a seq of from or more.
func (l *Log) NewReader(from uint64) *Reader { return &Reader{l: l, from: from} }

// SegmentInfo describes one segment of the log.
type SegmentInfo struct {
	Base uint64 // no record of the segment has a seq below it
	Size int64  // bytes, its header included
}

// SegmentInfos returns the log's segments, oldest first. It takes the
// log's lock briefly.
func (l *Log) SegmentInfos() []SegmentInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		out[i] = SegmentInfo{Base: s.base, Size: s.size}
	}
	return out
}

// Read calls fn for the next records, at most max of them, in order, and
// returns how many it passed to fn. It reads what was written when it
// began: 0 and nil means there is nothing more for now. fn's payload is
// valid until fn returns; fn's error ends Read and is returned (the
// record it was given counts as read). Errors: ErrTruncated when the next
// records were dropped from the front of the log, a *CorruptError for a
// damaged record (the Reader stays before it), ErrClosed, or the file
// system's. It waits for a TruncateFront in progress, and TruncateFront
// for it.
func (r *Reader) Read(max int, fn func(seq uint64, payload []byte) error) (int, error) {
	l := r.l
	l.frontMu.Lock()
	defer l.frontMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	if l.err() == nil {
		if err := l.writePending(); err != nil {
			l.mu.Unlock()
			return 0, err
		}
	}
	segs := append([]segment(nil), l.segs...)
	l.mu.Unlock()

	i := -1
	if r.base == 0 {
		if r.from < segs[0].base && segs[0].base > 1 {
			return 0, fmt.Errorf("%w: seq %d is before the log's first segment (%d)", ErrTruncated, r.from, segs[0].base)
		}
		i = 0
		for j, s := range segs {
			if s.base <= r.from {
				i = j
			}
		}
		r.base, r.off = segs[i].base, segs[i].hdr
	} else {
		for j, s := range segs {
			if s.base == r.base {
				i = j
			}
		}
		if i < 0 {
			return 0, fmt.Errorf("%w: segment %s is gone", ErrTruncated, segmentName(r.base))
		}
	}
	n := 0
	for n < max {
		s := segs[i]
		last := i == len(segs)-1
		if last && r.off >= s.size {
			return n, nil // what was written when Read began
		}
		sf, err := openSegment(l.fsys, l.dir, s.base)
		if err != nil {
			return n, l.headerError(err, s.base)
		}
		end := sf.size
		if last {
			end = s.size
		}
		if r.off < sf.hdr.size {
			r.off = sf.hdr.size
		}
		if r.br == nil {
			r.br = bufio.NewReaderSize(nil, 64<<10)
		}
		rr := newRecordReaderFrom(sf.f, sf.hdr, r.off, end, s.base, r.prev, r.buf, r.br)
		var ferr error
		for n < max && ferr == nil {
			seq, payload, err := rr.next()
			if err == io.EOF {
				break
			}
			var bad *badRecord
			if errors.As(err, &bad) {
				sf.f.Close()
				return n, &CorruptError{Segment: segmentName(s.base), Offset: bad.off, Reason: bad.reason, LastSeq: r.prev}
			}
			if err != nil {
				sf.f.Close()
				return n, err
			}
			r.off, r.prev = rr.off, seq
			if seq >= r.from {
				n++
				ferr = fn(seq, payload)
			}
		}
		r.off, r.buf = rr.off, rr.buf
		sf.f.Close()
		if ferr != nil {
			return n, ferr
		}
		if r.off >= end {
			if last {
				return n, nil
			}
			i++
			r.base, r.off = segs[i].base, segs[i].hdr
		}
	}
	return n, nil
}
