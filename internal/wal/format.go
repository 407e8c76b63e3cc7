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
//	records, one after the other (16-byte header, then the payload):
//	  0  uint32  payload length n (<= MaxRecordSize)
//	  4  uint32  CRC-32C of bytes 0..3, 8..15 and the payload
//	  8  uint64  seq, strictly increasing across the log
//	 16  [n]byte payload
const (
	segMagic      = "ttldbwal"
	segHeaderSize = 24
	recHeaderSize = 16
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
	dst = append(dst, 0, 0, 0, 0) // the CRC, set below
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	dst = append(dst, payload...)
	binary.LittleEndian.PutUint32(dst[start+4:], recordCRC(dst[start:start+recHeaderSize], payload))
	return dst
}

// recordCRC is the checksum of a record: its length and seq fields, then
// its payload. Covering the length means a damaged length cannot pass
// for another framing.
func recordCRC(hdr, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, hdr[0:4])
	c = crc32.Update(c, castagnoli, hdr[8:16])
	return crc32.Update(c, castagnoli, payload)
}

// validRecordAt reports whether b[p:] starts with a whole, checksummed
// record whose seq is above after.
func validRecordAt(b []byte, p int, after uint64) bool {
	if len(b)-p < recHeaderSize {
		return false
	}
	n := binary.LittleEndian.Uint32(b[p:])
	if n > maxRecord || uint64(len(b)-p-recHeaderSize) < uint64(n) {
		return false
	}
	if binary.LittleEndian.Uint64(b[p+8:]) <= after {
		return false
	}
	hdr := b[p : p+recHeaderSize]
	return recordCRC(hdr, b[p+recHeaderSize:p+recHeaderSize+int(n)]) == binary.LittleEndian.Uint32(hdr[4:])
}
