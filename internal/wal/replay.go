package wal

import (
	"errors"
	"fmt"
	"io"
)

// Replay calls fn for every record with a seq of from or more, in order,
// and returns fn's first error, or the first problem it finds: a
// *CorruptError (errs.ErrCorrupt) for a record that fails its checks or is
// out of order anywhere in the log, or records from from on that are no
// longer in the log (TruncateFront dropped them). Damage in records at or
// below Options.Covered is passed over and noted in Recovery.Skips. The
// payload is valid until fn returns.
//
// Replay reads the records written before it started (Writes may go on
// meanwhile); it runs segment by segment from the one that holds from,
// checking every record it reads. It waits for a TruncateFront in
// progress, and TruncateFront for it.
func (l *Log) Replay(from uint64, fn func(seq uint64, payload []byte) error) error {
	l.frontMu.Lock()
	defer l.frontMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.err() == nil {
		// What Replay reads must be in the file. (A failed log's buffer
		// stays out of its files: Replay reads what they hold.)
		if err := l.writePending(); err != nil {
			l.mu.Unlock()
			return err
		}
	}
	segs := append([]segment(nil), l.segs...)
	l.mu.Unlock()

	if from < segs[0].base && segs[0].base > 1 {
		return &CorruptError{Segment: segmentName(segs[0].base), Reason: fmt.Sprintf(
			"replay from seq %d, but the log starts at seq %d: the records in between were dropped", from, segs[0].base)}
	}
	first := 0
	for i, s := range segs {
		if s.base <= from {
			first = i
		}
	}
	var prev uint64
	var buf []byte
	for i := first; i < len(segs); i++ {
		s := segs[i]
		sf, err := openSegment(l.fsys, l.dir, s.base)
		if err != nil {
			return l.headerError(err, s.base)
		}
		end := sf.size
		if i == len(segs)-1 {
			end = s.size // what was written when Replay started
		}
		if i > first && s.base <= prev {
			sf.f.Close()
			return &CorruptError{Segment: segmentName(s.base), Reason: fmt.Sprintf("base %d is not above seq %d, the last of the segment before", s.base, prev), LastSeq: prev}
		}
		rr := newRecordReader(sf.f, sf.hdr, end, s.base, prev, buf)
		var bad *badRecord
		rest := false // the rest of the segment, damaged, is covered
		for {
			err = replaySegment(rr, from, fn)
			if !errors.As(err, &bad) {
				break
			}
			skip, ok, serr := rr.skipCovered(sf.f, bad, l.opts.Covered, l.opts.FirstSeq)
			if serr != nil {
				err = serr
				break
			}
			if !ok && i+1 < len(segs) && l.opts.Covered > 0 && segs[i+1].base <= l.opts.Covered+1 {
				// Every record of this segment is below the next
				// one's base, hence covered.
				skip, ok, rest = end-bad.off, true, true
			}
			if !ok {
				break
			}
			l.noteSkip(Cut{Segment: segmentName(s.base), Offset: bad.off, Bytes: skip, Reason: bad.reason})
			if rest {
				err = nil
				break
			}
		}
		sf.f.Close()
		buf, prev = rr.buf, rr.prev
		if errors.As(err, &bad) {
			return &CorruptError{Segment: segmentName(s.base), Offset: bad.off, Reason: bad.reason, LastSeq: prev}
		}
		if err != nil {
			return err
		}
		if rest {
			continue
		}
		if rr.sealed && (i+1 == len(segs) || segs[i+1].base != rr.succ) {
			return &CorruptError{Segment: segmentName(rr.succ), Reason: fmt.Sprintf(
				"the segment is missing: %s ends with a seal naming it as its successor", segmentName(s.base)), LastSeq: prev}
		}
	}
	return nil
}

func replaySegment(rr *recordReader, from uint64, fn func(uint64, []byte) error) error {
	for {
		seq, payload, err := rr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if seq >= from {
			if err := fn(seq, payload); err != nil {
				return err
			}
		}
	}
}
