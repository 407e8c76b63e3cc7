// Package snapshot owns the snapshot file format: a versioned sequence of
// blocks, each checksummed with CRC-32C (Castagnoli), ending with a trailer
// that checksums the whole file. It knows blocks and their fields, not what
// a collection or a document means: the root package fills and reads them.
// docs/FORMAT.md describes the format byte by byte.
//
// A snapshot is written once, front to back (Writer), and read once, front
// to back (Reader); neither seeks, so a Backup can stream one anywhere.
package snapshot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/ttldb/ttldb/internal/errs"
)

// Magic opens every snapshot file.
const Magic = "TTLDBSNP"

// Version is the format version this package writes. It grows when a
// block kind is added or a field changes meaning. A reader reads versions
// MinVersion to Version and refuses a file of any other with a
// *VersionError.
//
// Version 2 added the data directory's identity to the header block, and
// the collection's name to every docs and buckets block (a block is then
// attributable when its collection block is lost). Version 3 has version
// 2's layout; its documents may hold what ttldb 0.x with the driver's bson
// types stores (docs/FORMAT.md: the tags of timestamps, binary subtypes,
// regular expressions, Decimal128, MinKey and MaxKey, and '$'-prefixed and
// dotted field names), which a reader of version 2 would refuse as
// malformed: the version makes it refuse the file as newer instead.
// Version 4 has version 3's layout; a collection block's state document
// may hold ttlPaused (CollMod's TTLPaused), which a reader of version 3
// refuses as an unknown state field. Version 5 adds a state document to
// the header block (the DB-wide TTL pause, DB.SetTTLPaused).
const Version = 5

// MinVersion is the oldest format version this package reads.
const MinVersion = 1

// IDLen is the length of a data directory's identity in a header block.
const IDLen = 16

// Kind says what a block holds. The numbers are part of the format.
type Kind uint8

// The block kinds of version 1.
const (
	// KindHeader is the first block: the sequence number the snapshot's
	// walk started after, and the time it was taken.
	KindHeader Kind = 1
	// KindCollection defines a collection: its number in the file, its
	// name, its options and its indexes (each an encoded document).
	KindCollection Kind = 2
	// KindDocs holds documents of one collection, in its natural order,
	// each with its record version.
	KindDocs Kind = 3
	// KindBuckets holds buckets of one time-series collection.
	KindBuckets Kind = 4
	// KindOps holds ops committed while the walk ran, in sequence order.
	KindOps Kind = 5
	// KindTrailer is the last block: the sequence number the snapshot is
	// consistent as of, counts, and the CRC-32C of every byte before it.
	KindTrailer Kind = 255
)

// String names the kind ("docs"), or "kind n" for an unknown one.
func (k Kind) String() string {
	switch k {
	case KindHeader:
		return "header"
	case KindCollection:
		return "collection"
	case KindDocs:
		return "docs"
	case KindBuckets:
		return "buckets"
	case KindOps:
		return "ops"
	case KindTrailer:
		return "trailer"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

func knownKind(k Kind) bool {
	switch k {
	case KindHeader, KindCollection, KindDocs, KindBuckets, KindOps, KindTrailer:
		return true
	}
	return false
}

// Framing sizes.
const (
	fileHeaderLen  = int64(len(Magic) + 4) // magic, version (uint32 LE)
	blockHeaderLen = 1 + 4                 // kind, payload length (uint32 LE)
	blockCRCLen    = 4
	// MaxBlock bounds a block's payload: a writer never writes a larger
	// one and a reader refuses it as corrupt. A document larger than a
	// block's target size gets a block of its own, so MaxBlock is also
	// the largest document a snapshot holds (the store's own bound,
	// store.MaxRecord, is the same 2 GiB).
	MaxBlock = 1<<31 - 1
	// BlockTarget is the payload size at which a writer closes a block of
	// documents or ops: large enough that framing costs nothing per
	// document, small enough that salvage loses little around a bad one.
	BlockTarget = 256 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error about bytes that are not a valid
// snapshot: a checksum mismatch, a truncated file, a malformed field. It
// is the storage layer's sentinel (ttldb.ErrCorrupt).
var ErrCorrupt = errs.ErrCorrupt

// VersionError reports a snapshot of a format version this package does
// not read. Supported is Version. It wraps errs.ErrFormatVersion
// (ttldb.ErrFormatVersion).
type VersionError struct {
	Found, Supported uint32
}

// Unwrap lets errors.Is(err, ttldb.ErrFormatVersion) match.
func (e *VersionError) Unwrap() error { return errs.ErrFormatVersion }

// Error names both versions and what to do.
func (e *VersionError) Error() string {
	if e.Found > e.Supported {
		return fmt.Sprintf("snapshot format version %d is newer than this ttldb reads (versions %d to %d): open it with the newer ttldb that wrote it", e.Found, MinVersion, e.Supported)
	}
	return fmt.Sprintf("snapshot format version %d is older than this ttldb reads (versions %d to %d); version %d is the first format, so no ttldb wrote this file", e.Found, MinVersion, e.Supported, MinVersion)
}

// Header is the payload of the first block.
type Header struct {
	// StartSeq is the sequence number of the last op committed when the
	// walk began: every op after it that the walk may have missed is in
	// the file's ops blocks.
	StartSeq uint64
	// Created is when the snapshot was taken, Unix nanoseconds of the
	// DB's clock.
	Created int64
	// ID is the identity of the data directory whose DB wrote the file
	// (zeros: none, a DB without a directory, or version 1).
	ID [IDLen]byte
	// State is what the DB's history set that belongs to no collection,
	// as an encoded document (empty: nothing), as of StartSeq or later
	// (the file's ops set it again from there). Version 5.
	State []byte
}

// Trailer is the payload of the last block.
type Trailer struct {
	// EndSeq is the sequence number the snapshot is consistent as of: its
	// documents, with its ops applied, are the DB's state after op EndSeq.
	EndSeq uint64
	// MaxVersion is the greatest record version the DB had given when the
	// walk ended: a DB loaded from the file gives only greater ones.
	MaxVersion uint64
	// Collections, Docs, Ops and Blocks count what the file holds (Blocks
	// counts every block before the trailer).
	Collections, Docs, Ops, Blocks uint64
	// FileCRC is the CRC-32C of every byte before the trailer block.
	FileCRC uint32
}

// Collection is the payload of a collection block.
type Collection struct {
	// ID numbers the collection within the file; docs and buckets blocks
	// name it by this number.
	ID uint32
	// Name is the collection's name.
	Name string
	// Spec is the collection's options, an encoded document.
	Spec []byte
	// Indexes are the index definitions, each an encoded document, in
	// creation order.
	Indexes [][]byte
	// AsOf, when not 0, says the collection's blocks are its exact state
	// after op AsOf (a time-series collection, copied in one hold of its
	// lock): ops of the collection numbered AsOf or less are in it
	// already. At 0 its documents were copied while writes went on, and
	// every op after the header's StartSeq applies to them.
	AsOf uint64
	// Next is, for a time-series collection, the creation number its next
	// bucket gets (ops name buckets by it); 0 for an ordinary collection.
	Next uint64
	// State is what the collection's definition does not say but its
	// history set, as an encoded document (empty: nothing): which indexes
	// are multikey, a time-series collection's current expiry.
	State []byte
	// Docs is about how many documents follow (the collection's count
	// when the walk reached it): a size hint for the reader, never
	// trusted as a count.
	Docs uint64
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func (h Header) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.StartSeq)
	dst = binary.AppendVarint(dst, h.Created)
	dst = append(dst, h.ID[:]...)
	return appendBytes(dst, h.State)
}

func (t Trailer) append(dst []byte) []byte {
	for _, v := range []uint64{t.EndSeq, t.MaxVersion, t.Collections, t.Docs, t.Ops, t.Blocks} {
		dst = binary.AppendUvarint(dst, v)
	}
	return binary.LittleEndian.AppendUint32(dst, t.FileCRC)
}

func (c Collection) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(c.ID))
	dst = appendBytes(dst, []byte(c.Name))
	dst = appendBytes(dst, c.Spec)
	dst = binary.AppendUvarint(dst, uint64(len(c.Indexes)))
	for _, ix := range c.Indexes {
		dst = appendBytes(dst, ix)
	}
	dst = binary.AppendUvarint(dst, c.AsOf)
	dst = binary.AppendUvarint(dst, c.Next)
	dst = appendBytes(dst, c.State)
	return binary.AppendUvarint(dst, c.Docs)
}

// parser reads the fields of a block's payload; the first malformed field
// sets err and every later read returns zero values.
type parser struct {
	b   []byte
	err error
}

func (p *parser) fail(what string) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: malformed %s", ErrCorrupt, what)
	}
	p.b = nil
}

func (p *parser) uvarint(what string) uint64 {
	v, n := binary.Uvarint(p.b)
	if n <= 0 {
		p.fail(what)
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *parser) varint(what string) int64 {
	v, n := binary.Varint(p.b)
	if n <= 0 {
		p.fail(what)
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *parser) bytes(what string) []byte {
	n := p.uvarint(what)
	if p.err != nil || n > uint64(len(p.b)) {
		p.fail(what)
		return nil
	}
	b := p.b[:n:n]
	p.b = p.b[n:]
	return b
}

func (p *parser) uint32(what string) uint32 {
	if len(p.b) < 4 {
		p.fail(what)
		return 0
	}
	v := binary.LittleEndian.Uint32(p.b)
	p.b = p.b[4:]
	return v
}

// end fails unless the payload was read to its last byte.
func (p *parser) end(what string) error {
	if p.err == nil && len(p.b) != 0 {
		p.fail(what + " (trailing bytes)")
	}
	return p.err
}

// ParseHeader reads a header block's payload, of format version v.
func ParseHeader(b []byte, v uint32) (Header, error) {
	p := parser{b: b}
	h := Header{StartSeq: p.uvarint("header"), Created: p.varint("header")}
	if v >= 2 {
		if len(p.b) < IDLen {
			p.fail("header identity")
		} else {
			copy(h.ID[:], p.b)
			p.b = p.b[IDLen:]
		}
	}
	if v >= 5 {
		if st := p.bytes("header state"); len(st) > 0 {
			h.State = append([]byte(nil), st...)
		}
	}
	return h, p.end("header")
}

// ParseTrailer reads a trailer block's payload.
func ParseTrailer(b []byte) (Trailer, error) {
	p := parser{b: b}
	var t Trailer
	for _, v := range []*uint64{&t.EndSeq, &t.MaxVersion, &t.Collections, &t.Docs, &t.Ops, &t.Blocks} {
		*v = p.uvarint("trailer")
	}
	t.FileCRC = p.uint32("trailer")
	return t, p.end("trailer")
}

// ParseCollection reads a collection block's payload. Its slices alias b.
func ParseCollection(b []byte) (Collection, error) {
	p := parser{b: b}
	var c Collection
	id := p.uvarint("collection id")
	if id > 1<<32-1 {
		p.fail("collection id")
	}
	c.ID = uint32(id)
	c.Name = string(p.bytes("collection name"))
	c.Spec = p.bytes("collection spec")
	n := p.uvarint("index count")
	if n > uint64(len(p.b)) { // each index takes a byte at least
		p.fail("index count")
	}
	for i := uint64(0); i < n && p.err == nil; i++ {
		c.Indexes = append(c.Indexes, p.bytes("index spec"))
	}
	c.AsOf = p.uvarint("collection as-of sequence")
	c.Next = p.uvarint("collection next bucket")
	c.State = p.bytes("collection state")
	c.Docs = p.uvarint("collection size hint")
	return c, p.end("collection")
}

// collectionPrefix reads the start of a docs or buckets block of format
// version v: the collection's number, and (version 2) its name.
func (p *parser) collectionPrefix(what string, v uint32) (uint32, string) {
	id := p.uvarint(what + " collection id")
	if id > 1<<32-1 {
		p.fail(what + " collection id")
	}
	var name string
	if v >= 2 {
		name = string(p.bytes(what + " collection name"))
	}
	return uint32(id), name
}

// BlockCollection returns the collection a docs or buckets block b is of:
// its number in the file and, from format version 2 on, its name ("" in
// version 1), which attributes the block when the collection's own block
// is lost.
func BlockCollection(b Block) (id uint32, name string, err error) {
	if b.Kind != KindDocs && b.Kind != KindBuckets {
		return 0, "", fmt.Errorf("snapshot: a %s block names no collection", b.Kind)
	}
	p := parser{b: b.Payload}
	id, name = p.collectionPrefix(b.Kind.String(), b.Version)
	return id, name, p.err
}

// ParseDocs reads a docs block, calling fn for each document in order
// with its record version and encoding (aliasing the payload) until fn
// returns an error, which ParseDocs returns.
func ParseDocs(b Block, fn func(coll uint32, ver uint64, enc []byte) error) (n int, err error) {
	p := parser{b: b.Payload}
	id, _ := p.collectionPrefix("docs", b.Version)
	count := p.uvarint("docs count")
	if count > uint64(len(p.b)) {
		p.fail("docs count")
	}
	for i := uint64(0); i < count && p.err == nil; i++ {
		ver := p.uvarint("document version")
		enc := p.bytes("document")
		if p.err != nil {
			break
		}
		if ver == 0 {
			p.fail("document version (0)")
			break
		}
		if err := fn(id, ver, enc); err != nil {
			return n, err
		}
		n++
	}
	return n, p.end("docs")
}

// ParseOps reads an ops block's payload, calling fn with each op's bytes
// (aliasing b) in order until fn returns an error, which ParseOps returns.
func ParseOps(b []byte, fn func(op []byte) error) (n int, err error) {
	p := parser{b: b}
	count := p.uvarint("ops count")
	if count > uint64(len(p.b)) {
		p.fail("ops count")
	}
	for i := uint64(0); i < count && p.err == nil; i++ {
		op := p.bytes("op")
		if p.err != nil {
			break
		}
		if err := fn(op); err != nil {
			return n, err
		}
		n++
	}
	return n, p.end("ops")
}

// ParseBuckets reads a buckets block, calling fn with each bucket's
// encoding (aliasing the payload; the root package defines it) in order
// until fn returns an error, which ParseBuckets returns.
func ParseBuckets(b Block, fn func(coll uint32, bucket []byte) error) (n int, err error) {
	p := parser{b: b.Payload}
	id, _ := p.collectionPrefix("buckets", b.Version)
	count := p.uvarint("buckets count")
	if count > uint64(len(p.b)) {
		p.fail("buckets count")
	}
	for i := uint64(0); i < count && p.err == nil; i++ {
		bk := p.bytes("bucket")
		if p.err != nil {
			break
		}
		if err := fn(id, bk); err != nil {
			return n, err
		}
		n++
	}
	return n, p.end("buckets")
}
