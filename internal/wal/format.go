package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
)

// Version is the segment format version this build writes. It reads
// versions MinVersion to Version; Open refuses a segment of another
// version with a *VersionError.
const Version = 2

// MinVersion is the oldest segment format version this build reads.
// Version 1 segments carry no directory identity and no seal.
const MinVersion = 1

// ID identifies a data directory: every segment of version 2 carries its
// directory's, so that a segment of another directory is refused. The
// zero ID is no identity (version 1 segments).
type ID [16]byte

// IsZero reports whether id is the zero ID.
func (id ID) IsZero() bool { return id == ID{} }

// String is the ID in hexadecimal.
func (id ID) String() string { return fmt.Sprintf("%x", id[:]) }

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
//	segment header (44 bytes; 24 in version 1):
//	  0  [8]byte magic "ttldbwal"
//	  8  uint32  format version (Version)
//	 12  uint64  base: every record in the file has seq >= base, and every
//	             record in earlier segments has seq < base
//	 20  uint32  CRC-32C of bytes 0..19
//	 24  [16]byte the data directory's ID (version 2)
//	 40  uint32  CRC-32C of bytes 0..39 (version 2)
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
//
// Bytes 0..23 keep this layout in every version, so that a reader tells a
// version it does not know (the checksum of bytes 0..19 holds) from a
// damaged header (it fails, whatever the version field says).
//
// A version 2 segment that the log left for a new one ends with a seal:
// a record of seq 0 whose 8-byte payload is the base of the segment that
// follows it (uint64). A reader that finds a sealed segment without that
// successor knows the segment was removed.
const (
	segMagic        = "ttldbwal"
	segHeaderSize   = 44 // version 2
	segHeaderSizeV1 = 24
	recHeaderSize   = 20
	segSuffix       = ".wal"
	sealPayload     = 8
	sealSize        = recHeaderSize + sealPayload
)

// headerSize is the size of a segment header of version v.
func headerSize(v uint32) int64 {
	if v == 1 {
		return segHeaderSizeV1
	}
	return segHeaderSize
}

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

// appendSegmentHeader appends the header of a version 2 segment with base
// base of the directory id.
func appendSegmentHeader(dst []byte, base uint64, id ID) []byte {
	start := len(dst)
	dst = appendHeaderV1(dst, Version, base)
	dst = append(dst, id[:]...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// appendHeaderV1 appends bytes 0..23 of a header of version v: the
// layout every version keeps.
func appendHeaderV1(dst []byte, v uint32, base uint64) []byte {
	start := len(dst)
	dst = append(dst, segMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, v)
	dst = binary.LittleEndian.AppendUint64(dst, base)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// segHeader is a segment header that passed its checks.
type segHeader struct {
	version uint32
	size    int64 // bytes: where the records start
	id      ID    // zero in version 1
}

// parseSegmentHeader checks a segment header (h holds up to
// segHeaderSize bytes of the file's start) and returns it, or says what
// is wrong as an error: a *VersionError for a version this build does not
// read whose bytes 0..19 pass their checksum, a plain reason otherwise. A
// header whose checksum fails is damage whatever its version field says:
// bytes 0..23 keep their layout in every version.
func parseSegmentHeader(h []byte, wantBase uint64, name string) (segHeader, error) {
	if len(h) < segHeaderSizeV1 {
		return segHeader{}, fmt.Errorf("short segment header (%d of %d bytes)", len(h), segHeaderSizeV1)
	}
	v := binary.LittleEndian.Uint32(h[8:])
	if crc32.Checksum(h[:20], castagnoli) != binary.LittleEndian.Uint32(h[20:]) {
		if string(h[:8]) != segMagic {
			return segHeader{}, fmt.Errorf("not a log segment (bad magic %q, header checksum mismatch)", h[:8])
		}
		return segHeader{}, fmt.Errorf("segment header checksum mismatch (its version field reads %d)", v)
	}
	if string(h[:8]) != segMagic {
		return segHeader{}, fmt.Errorf("not a log segment (bad magic %q)", h[:8])
	}
	if v < MinVersion || v > Version {
		return segHeader{}, &VersionError{File: name, Got: v}
	}
	if base := binary.LittleEndian.Uint64(h[12:]); base != wantBase {
		return segHeader{}, fmt.Errorf("segment header says base %d, its name %d", base, wantBase)
	}
	sh := segHeader{version: v, size: headerSize(v)}
	if v == 1 {
		return sh, nil
	}
	if len(h) < segHeaderSize {
		return segHeader{}, fmt.Errorf("short segment header (%d of %d bytes)", len(h), segHeaderSize)
	}
	if crc32.Checksum(h[:40], castagnoli) != binary.LittleEndian.Uint32(h[40:]) {
		return segHeader{}, fmt.Errorf("segment header checksum mismatch (bytes 24 to 43)")
	}
	copy(sh.id[:], h[24:40])
	return sh, nil
}

// mendHeader returns the header a damaged one was, when one region of it
// is damaged and the rest says which: bytes 0..19 rebuilt from the magic,
// a version this build reads and the base in the file's name, checked
// against the stored checksum (or, if only the checksum is damaged, equal
// to the stored bytes), and for version 2 the ID (the stored one, or one
// of ids, the other segments') checked against its own checksum (or, if
// only that checksum is damaged, the stored ID being one of ids). ok is
// false when no such header fits.
func mendHeader(h []byte, base uint64, ids []ID) (fixed []byte, sh segHeader, ok bool) {
	if len(h) < segHeaderSizeV1 {
		return nil, segHeader{}, false
	}
	for v := uint32(MinVersion); v <= Version; v++ {
		head := appendHeaderV1(nil, v, base)
		crcOK := binary.LittleEndian.Uint32(head[20:]) == binary.LittleEndian.Uint32(h[20:24])
		if !crcOK && string(head[:20]) != string(h[:20]) {
			continue
		}
		if v == 1 {
			return head, segHeader{version: 1, size: segHeaderSizeV1}, true
		}
		if len(h) < segHeaderSize {
			continue
		}
		stored := ID(h[24:40])
		for _, id := range append([]ID{stored}, ids...) {
			full := append(head[:24:24], id[:]...)
			c := crc32.Checksum(full, castagnoli)
			if c != binary.LittleEndian.Uint32(h[40:44]) && !(id == stored && slices.Contains(ids, id)) {
				continue
			}
			full = binary.LittleEndian.AppendUint32(full, c)
			return full, segHeader{version: v, size: segHeaderSize, id: id}, true
		}
	}
	return nil, segHeader{}, false
}

// appendSeal appends the seal of a segment whose successor has base next.
func appendSeal(dst []byte, next uint64) []byte {
	return appendRecord(dst, 0, binary.LittleEndian.AppendUint64(nil, next))
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
