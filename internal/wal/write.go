package wal

import (
	"errors"
	"fmt"
)

// Write appends the record (seq, payload) and hands it to the operating
// system, or with Options.BufferSize to the buffer: it survives a crash
// of the process once Write returns nil (unbuffered) or once the buffer
// is written, and a power cut once it is synced (see Wait). seq must be
// above every seq written before; payload at most MaxRecordSize bytes
// (it is copied).
//
// Write holds the log's lock for one write(2) (or a copy into the
// buffer), never across an fsync but when it starts a new segment: then
// it fsyncs the old one and the new one's header and directory entry.
// Records are on disk in the order their Writes took that lock: a caller
// that needs seq order calls Write under its own ordering lock, and Wait
// after releasing it.
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
	if l.full() {
		// Roll over: take syncMu first (the lock order), then check again.
		l.mu.Unlock()
		l.syncMu.Lock()
		defer l.syncMu.Unlock()
		l.mu.Lock()
		if err := l.writable(seq); err != nil {
			l.mu.Unlock()
			return err
		}
		if l.full() {
			if err := l.roll(); err != nil {
				if l.err() != nil {
					l.mu.Unlock()
					return err
				}
				// No new segment: the record goes to the active one,
				// which grows past its size until a roll succeeds.
				l.rollRetry = l.segs[len(l.segs)-1].size + l.opts.SegmentSize
			}
		}
	}
	defer l.mu.Unlock()
	size := int64(recHeaderSize + len(payload))
	if l.opts.BufferSize > 0 {
		l.pending = appendRecord(l.pending, seq, payload)
		l.segs[len(l.segs)-1].size += size
		if len(l.pending) >= l.opts.BufferSize {
			if err := l.writePending(); err != nil {
				return err
			}
		}
	} else {
		l.buf = appendRecord(l.buf[:0], seq, payload)
		n, err := l.f.Write(l.buf)
		l.segs[len(l.segs)-1].size += int64(n)
		if cap(l.buf) > 1<<20 {
			l.buf = nil // do not keep a large record's buffer
		}
		if err != nil {
			return l.fail(err)
		}
	}
	l.lastSeq = seq
	l.written.Store(seq)
	l.appends++
	l.bytes += size
	return nil
}

// full reports whether the active segment has reached its size and holds
// a record. Call it holding mu.
func (l *Log) full() bool {
	act := l.segs[len(l.segs)-1]
	return act.size >= max(l.opts.SegmentSize, l.rollRetry) && act.size > act.hdr
}

// writePending hands the buffered records to the operating system. Call it
// holding mu. An error fails the log.
func (l *Log) writePending() error {
	if len(l.pending) == 0 {
		return nil
	}
	if err := l.err(); err != nil {
		return err // nothing goes to a failed log's files
	}
	_, err := l.f.Write(l.pending)
	if cap(l.pending) > 4*l.opts.BufferSize {
		l.pending = nil // a large record passed through: do not keep it
	} else {
		l.pending = l.pending[:0]
	}
	if err != nil {
		return l.fail(err)
	}
	return nil
}

// writableState returns ErrClosed or the failure. Call it holding mu.
func (l *Log) writableState() error {
	if l.closed {
		return ErrClosed
	}
	return l.err()
}

// writable checks that a record seq may be written now. Call it holding mu.
func (l *Log) writable(seq uint64) error {
	if err := l.writableState(); err != nil {
		return err
	}
	if seq <= l.lastSeq {
		return fmt.Errorf("%w: seq %d after seq %d", ErrOutOfOrder, seq, l.lastSeq)
	}
	return nil
}

// roll writes the buffer, fsyncs the active segment, starts a new one
// whose base follows the last seq written, then seals the old one (a
// version 2 segment) and closes it. Call it holding syncMu and mu. An
// error fails the log, but for a new segment that could not be created
// or given its header (a directory not writable, a full disk): the old
// segment, synced and
// unsealed, then stays the active one and takes the next writes, and the
// error is returned as it is.
//
// The seal comes after the new segment is durable, so that a sealed
// segment always has its successor on disk: a crash in between leaves an
// unsealed segment (readers accept that), or a torn seal before an empty
// last segment (Open cuts it, see cutTornSeal).
func (l *Log) roll() error {
	if err := l.writePending(); err != nil {
		return err
	}
	old, oldSeg := l.f, l.segs[len(l.segs)-1]
	_, err := l.fsync(old)
	if err != nil {
		return l.fail(err)
	}
	l.durable.Store(l.lastSeq)
	next := l.lastSeq + 1
	if err := l.newActive(next); err != nil {
		var ns *noSegmentError
		if errors.As(err, &ns) {
			return fmt.Errorf("wal: starting segment %s: %w", segmentName(next), ns.err)
		}
		old.Close()
		return l.fail(err)
	}
	if oldSeg.v >= 2 {
		if _, err := old.Write(appendSeal(nil, next)); err != nil {
			old.Close()
			return l.fail(err)
		}
		l.segs[len(l.segs)-2].size += sealSize
		_, err := l.fsync(old)
		if err != nil {
			old.Close()
			return l.fail(err)
		}
	}
	if err := old.Close(); err != nil {
		return l.fail(err)
	}
	return nil
}
