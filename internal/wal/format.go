package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// Version is the segment format version this build writes and reads.
// Open refuses a segment of another version with a *VersionError.
const Version = 1

// MaxRecordSize bounds a record's payload, in bytes. Write refuses a
// larger one with ErrTooLarge, and a reader takes a length field above it
// for damage.
const MaxRecordSize = 256 << 20

// DefaultSegmentSize is the size at which the log starts a new segment
// file unless Options.SegmentSize says otherwise.
const DefaultSegmentSize = 64 << 20

// The segment file layout (docs/FORMAT.md describes it for readers
// outside Go). Integers are little-endian.
//
//	segment header (24 bytes):
//	  0  [8]byte magic "ttldbwal"
//	  8  uint32  format version (Version)
//	 12  uint64  base: every record in the file has seq >= base, and every
//	             record in earlier segments has seq < base
//	 20  uint32  CRC-32C of bytes 0..19
//	records, one after the other (20-byte header, then the payload):
//	  0  uint32  payload length n (<= MaxRecordSize)
//	  4  uint64  seq, strictly increasing across the log
//	 12  uint32  CRC-32C of the payload
//	 16  uint32  CRC-32C of bytes 0..15 (the header's own check)
//	 20  [n]byte payload
//
// The header has its own checksum so that a damaged length is never
// trusted, and so that telling a torn tail from damage followed by valid
// records (which means looking for a valid record at every byte after
// the bad one) costs one 16-byte checksum per byte, not one payload's.
const (
	segMagic      = "ttldbwal"
	segHeaderSize = 24
	recHeaderSize = 20
	segSuffix     = ".wal"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxRecord is MaxRecordSize, lowered by tests that need a record above
// the bound without allocating one.
var maxRecord uint32 = MaxRecordSize

// segmentName is the file name of the segment with base seq base: twenty
// decimal digits, so that names sort in base order.
func segmentName(base uint64) string {
	return fmt.Sprintf("%020d%s", base, segSuffix)
}

// parseSegmentName returns the base of a segment file name; ok is false
// for any other name.
func parseSegmentName(name string) (base uint64, ok bool) {
	digits, found := strings.CutSuffix(name, segSuffix)
	if !found || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	return base, err == nil
}

// appendSegmentHeader appends the header of a segment with base base.
func appendSegmentHeader(dst []byte, base uint64) []byte {
	start := len(dst)
	dst = append(dst, segMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, Version)
	dst = binary.LittleEndian.AppendUint64(dst, base)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// headerProblem says what is wrong with a segment header, as an error:
// a *VersionError for another format version, a plain reason otherwise.
// It checks the magic, then the version, then the checksum, so that a
// future layout of the rest of the header is reported as a version.
func headerProblem(h []byte, wantBase uint64, name string) error {
	if len(h) < segHeaderSize {
		return fmt.Errorf("short segment header (%d of %d bytes)", len(h), segHeaderSize)
	}
	if string(h[:8]) != segMagic {
		return fmt.Errorf("not a log segment (bad magic %q)", h[:8])
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != Version {
		return &VersionError{File: name, Got: v}
	}
	if crc32.Checksum(h[:20], castagnoli) != binary.LittleEndian.Uint32(h[20:]) {
		return fmt.Errorf("segment header checksum mismatch")
	}
	if base := binary.LittleEndian.Uint64(h[12:]); base != wantBase {
		return fmt.Errorf("segment header says base %d, its name %d", base, wantBase)
	}
	return nil
}

// appendRecord appends the encoding of one record.
func appendRecord(dst []byte, seq uint64, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:start+16], castagnoli))
	return append(dst, payload...)
}

// header is a record header whose own checksum holds.
type header struct {
	n          uint32 // payload length
	seq        uint64
	payloadCRC uint32
}

// parseHeader decodes a record header; ok is false when its checksum
// fails.
func parseHeader(h []byte) (hd header, ok bool) {
	if crc32.Checksum(h[:16], castagnoli) != binary.LittleEndian.Uint32(h[16:]) {
		return header{}, false
	}
	return header{
		n:          binary.LittleEndian.Uint32(h[0:]),
		seq:        binary.LittleEndian.Uint64(h[4:]),
		payloadCRC: binary.LittleEndian.Uint32(h[12:]),
	}, true
}

// validRecordAt reports whether b[p:] starts with a whole, checksummed
// record whose seq is above after. It checks the seq before any
// checksum, and the header's checksum before the payload's.
func validRecordAt(b []byte, p int, after uint64) bool {
	if len(b)-p < recHeaderSize || binary.LittleEndian.Uint64(b[p+4:]) <= after {
		return false
	}
	h, ok := parseHeader(b[p : p+recHeaderSize])
	if !ok || h.n > maxRecord || uint64(len(b)-p-recHeaderSize) < uint64(h.n) {
		return false
	}
	return crc32.Checksum(b[p+recHeaderSize:p+recHeaderSize+int(h.n)], castagnoli) == h.payloadCRC
}
