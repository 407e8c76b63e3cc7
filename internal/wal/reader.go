package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/ttldb/ttldb/internal/vfs"
)

// badRecord is a record that fails its checks, at offset off of its
// segment.
type badRecord struct {
	off    int64
	reason string
}

func (b *badRecord) Error() string { return fmt.Sprintf("offset %d: %s", b.off, b.reason) }

// recordReader reads the records of one segment in order, checking each:
// framing, checksum, and seq order (above the previous record's, the
// previous segment's included, and not below the segment's base).
type recordReader struct {
	f      io.ReaderAt
	r      *bufio.Reader
	off    int64 // offset of the next record
	end    int64 // where the segment's data ends
	base   uint64
	prev   uint64 // seq of the last record read
	sealed bool   // the segment ended with a seal (version 2)
	succ   uint64 // the base its seal names
	sealAt int64  // the seal's offset
	v      uint32 // the segment's version
	hdr    [recHeaderSize]byte
	buf    []byte
}

// newRecordReader reads the records of a segment whose header (of sh)
// passed its checks, from its header's end to end.
func newRecordReader(f io.ReaderAt, sh segHeader, end int64, base, prev uint64, buf []byte) *recordReader {
	return newRecordReaderFrom(f, sh, sh.size, end, base, prev, buf, nil)
}

// newRecordReaderFrom is newRecordReader starting at offset start, where
// a record begins (a Reader's place), reading through br (reset; nil:
// a new one).
func newRecordReaderFrom(f io.ReaderAt, sh segHeader, start, end int64, base, prev uint64, buf []byte, br *bufio.Reader) *recordReader {
	sr := io.NewSectionReader(f, start, end-start)
	if br != nil {
		br.Reset(sr)
	} else {
		size := min(max(end-start, 16), 256<<10) // a small segment needs no large buffer
		br = bufio.NewReaderSize(sr, int(size))
	}
	return &recordReader{f: f, r: br, off: start, end: end, base: base, prev: prev, buf: buf, v: sh.version}
}

// next returns the next record: its payload is valid until the next call.
// It returns io.EOF at the end of the segment (after its seal, if it has
// one: sealed is then set), a *badRecord for a record that fails a check
// (the reader is then done), or the read's error.
func (rr *recordReader) next() (uint64, []byte, error) {
	left := rr.end - rr.off
	if left == 0 {
		return 0, nil, io.EOF
	}
	if rr.sealed {
		return 0, nil, rr.bad("%d bytes follow the segment's seal", left)
	}
	if left < recHeaderSize {
		return 0, nil, rr.bad("a partial record header (%d bytes) ends the segment", left)
	}
	if _, err := io.ReadFull(rr.r, rr.hdr[:]); err != nil {
		return 0, nil, err
	}
	h, ok := parseHeader(rr.hdr[:])
	if !ok {
		return 0, nil, rr.bad("record header checksum mismatch")
	}
	n := h.n
	if n > maxRecord {
		return 0, nil, rr.bad("length %d above the bound of %d", n, maxRecord)
	}
	if int64(n) > left-recHeaderSize {
		return 0, nil, rr.bad("a record of %d bytes runs past the end of the segment (%d left)", n, left-recHeaderSize)
	}
	if cap(rr.buf) < int(n) {
		rr.buf = make([]byte, n)
	}
	payload := rr.buf[:n]
	if _, err := io.ReadFull(rr.r, payload); err != nil {
		return 0, nil, err
	}
	if crc32.Checksum(payload, castagnoli) != h.payloadCRC {
		return 0, nil, rr.bad("payload checksum mismatch")
	}
	seq := h.seq
	if seq == 0 && rr.v >= 2 {
		if n != sealPayload {
			return 0, nil, rr.bad("a seal of %d bytes", n)
		}
		rr.sealed, rr.succ, rr.sealAt = true, binary.LittleEndian.Uint64(payload), rr.off
		rr.off += recHeaderSize + int64(n)
		if rr.succ <= max(rr.prev, rr.base) {
			return 0, nil, &badRecord{off: rr.sealAt, reason: fmt.Sprintf("the seal names base %d, not above seq %d", rr.succ, max(rr.prev, rr.base))}
		}
		return rr.afterSeal()
	}
	if seq <= rr.prev {
		return 0, nil, rr.bad("seq %d does not follow seq %d", seq, rr.prev)
	}
	if seq < rr.base {
		return 0, nil, rr.bad("seq %d is below the segment's base %d", seq, rr.base)
	}
	rr.off += recHeaderSize + int64(n)
	rr.prev = seq
	return seq, payload, nil
}

// skipCovered decides whether the damage bad, which next reported, lies
// in records holding only seqs at or below covered: the first valid record
// after it (a seq above the last read) must begin with a seq at most
// covered+1 (first gives a record's first seq; nil: its own). If so the
// reader goes on from that record, and skipCovered returns the bytes
// passed over. Without such a record in the segment, the damage is not
// passed over here (see Replay for a segment whose successor shows it
// covered).
func (rr *recordReader) skipCovered(f io.ReaderAt, bad *badRecord, covered uint64, first func([]byte) (uint64, bool)) (int64, bool, error) {
	if covered == 0 || rr.prev >= covered+1 {
		return 0, false, nil
	}
	at, seq, payload, err := nextValidRecord(f, bad.off+1, rr.end, rr.prev)
	if err != nil || at < 0 {
		return 0, false, err
	}
	from := seq
	if first != nil {
		if s, ok := first(payload); ok && s <= seq {
			from = s
		}
	}
	if from > covered+1 {
		return 0, false, nil
	}
	rr.r = bufio.NewReaderSize(io.NewSectionReader(f, at, rr.end-at), rr.r.Size())
	rr.off = at
	return at - bad.off, true, nil
}

// nextValidRecord finds the first whole, checksummed record with a seq
// above after that starts in f between offsets from and end: its offset
// (-1 if none), seq and payload.
func nextValidRecord(f io.ReaderAt, from, end int64, after uint64) (int64, uint64, []byte, error) {
	if end-from < recHeaderSize {
		return -1, 0, nil, nil
	}
	b := make([]byte, end-from)
	if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
		return -1, 0, nil, err
	}
	for p := 0; p+recHeaderSize <= len(b); p++ {
		if validRecordAt(b, p, after) {
			h, _ := parseHeader(b[p : p+recHeaderSize])
			return from + int64(p), h.seq, b[p+recHeaderSize : p+recHeaderSize+int(h.n)], nil
		}
	}
	return -1, 0, nil, nil
}

// afterSeal is next after a seal: io.EOF if the segment ends there.
func (rr *recordReader) afterSeal() (uint64, []byte, error) {
	if rr.end == rr.off {
		return 0, nil, io.EOF
	}
	return 0, nil, rr.bad("%d bytes follow the segment's seal", rr.end-rr.off)
}

func (rr *recordReader) bad(format string, args ...any) error {
	return &badRecord{off: rr.off, reason: fmt.Sprintf(format, args...)}
}

// segFile is a segment opened for reading, its header checked.
type segFile struct {
	f    vfs.File
	size int64
	hdr  segHeader
}

// errBadHeader marks a header problem that is not a version mismatch.
var errBadHeader = errors.New("bad segment header")

// openSegment opens segment base of dir for reading and checks its header.
// A header of another version is a *VersionError; any other header
// problem wraps errBadHeader (the file is then closed).
func openSegment(fsys vfs.FS, dir string, base uint64) (*segFile, error) {
	name := segmentName(base)
	f, err := fsys.OpenFile(filepath.Join(dir, name), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	h := make([]byte, min(size, segHeaderSize))
	if _, err := f.ReadAt(h, 0); err != nil && err != io.EOF {
		f.Close()
		return nil, err
	}
	sh, err := parseSegmentHeader(h, base, name)
	if err != nil {
		f.Close()
		var ve *VersionError
		if errors.As(err, &ve) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errBadHeader, err)
	}
	return &segFile{f: f, size: size, hdr: sh}, nil
}

// validRecordAfter reports whether any whole, checksummed record with a seq
// above after starts in f between offsets from and end: the test that
// tells a torn tail (nothing valid follows the bad record) from damage in
// the middle (valid records follow it). It reads that stretch into memory
// (at most a segment, and only when a record failed) and costs about one
// 16-byte checksum per byte of it.
func validRecordAfter(f io.ReaderAt, from, end int64, after uint64) (bool, error) {
	if end-from < recHeaderSize {
		return false, nil
	}
	b := make([]byte, end-from)
	if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
		return false, err
	}
	for p := 0; p+recHeaderSize <= len(b); p++ {
		if validRecordAt(b, p, after) {
			return true, nil
		}
	}
	return false, nil
}

// allZero reports whether the stretch [from, end) of f holds only zero
// bytes: what a file system that extended a file without writing its
// data leaves after a crash.
func allZero(f io.ReaderAt, from, end int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for off := from; off < end; {
		n := min(int64(len(buf)), end-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil && err != io.EOF {
			return false, err
		}
		for _, c := range buf[:n] {
			if c != 0 {
				return false, nil
			}
		}
		off += n
	}
	return true, nil
}
