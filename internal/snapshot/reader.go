package snapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Block is one block as read, its checksum verified.
type Block struct {
	Kind Kind
	// Payload is the block's payload, the caller's to keep.
	Payload []byte
	// Offset is where the block starts in the file, for error messages.
	Offset int64
	// Version is the file's format version: how to read the payload.
	Version uint32
}

// Reader reads a snapshot front to back, verifying every block's checksum
// and, at the trailer, the whole file's.
type Reader struct {
	br       *bufio.Reader
	crc      uint32 // of every byte read so far (blocks that passed)
	off      int64
	blocks   uint64
	version  uint32
	header   Header
	headerOK bool
	trailer  *Trailer
	salvage  bool
	data     []byte // in salvage mode: the whole file, read at once
	skipped  int64  // bytes skipped in salvage mode
	bad      int    // blocks skipped in salvage mode
	notes    []string
	buf      bytes.Buffer
}

// NewReader reads the file header and the header block from r. It fails
// with a *VersionError for a file of a format version it does not read
// (whose header is intact) and with an error wrapping ErrCorrupt for
// anything else that is not a snapshot's beginning, a damaged file header
// included: an unknown version whose file checksum fails is damage.
func NewReader(r io.Reader) (*Reader, error) {
	return newReader(r, nil)
}

// NewSalvageReader is NewReader for recovering what can be recovered from
// a damaged file: its Reader skips blocks that fail their checksum (and the
// bytes up to the next block that passes) instead of failing, and accepts
// a file whose trailer is missing or fails. A damaged file header (magic
// or version) is read as the version the file checksum says, or, when
// that fails too, as the version the header block's layout says; a
// damaged header block is skipped (Header then reports it lost). Skipped
// and Notes report what was lost. It reads the whole file into memory
// first. A file whose intact header names a version it does not read is
// still a *VersionError: it is never read as another version.
func NewSalvageReader(r io.Reader) (*Reader, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return newReader(bytes.NewReader(data), data)
}

// newReader is NewReader, or NewSalvageReader when data (the whole file)
// is not nil.
func newReader(r io.Reader, data []byte) (*Reader, error) {
	salvage := data != nil
	sr := &Reader{br: bufio.NewReaderSize(r, 1<<20), salvage: salvage, data: data}
	var fh [len(Magic) + 4]byte
	if _, err := io.ReadFull(sr.br, fh[:]); err != nil {
		return nil, readError(err, "file header")
	}
	v := binary.LittleEndian.Uint32(fh[len(Magic):])
	if string(fh[:len(Magic)]) != Magic || v < MinVersion || v > Version {
		if !salvage {
			rest, err := io.ReadAll(sr.br)
			if err != nil {
				return nil, err
			}
			data = append(fh[:], rest...)
		}
		var err error
		v, err = fileVersion(data)
		if !salvage || v == 0 {
			return nil, err
		}
		sr.notes = append(sr.notes, err.Error())
		// Read on as version v, with the file header it had.
		copy(fh[:], Magic)
		binary.LittleEndian.PutUint32(fh[len(Magic):], v)
	}
	sr.version = v
	sr.crc = crc32.Update(0, castagnoli, fh[:])
	sr.off = fileHeaderLen
	b, err := sr.next()
	if err == nil && b.Kind != KindHeader {
		err = fmt.Errorf("%w: first block is %s, not header", ErrCorrupt, b.Kind)
	}
	if err == nil {
		sr.header, err = ParseHeader(b.Payload, v)
	}
	if err != nil {
		if !salvage || !errors.Is(err, ErrCorrupt) {
			return nil, err
		}
		// Without its header block the file still holds blocks that pass
		// their checksums; what the header said (the sequence number the
		// walk started after) is lost.
		sr.notes = append(sr.notes, "header block lost: "+err.Error())
		sr.header = Header{}
		sr.resync(fileHeaderLen)
		return sr, nil
	}
	sr.headerOK = true
	return sr, nil
}

// fileVersion tells what a file whose header (magic or version) this
// reader does not accept is. It returns the error to report and, when
// the file is damaged rather than of another version, the version it is
// to be read as in salvage mode (0: none; never for a *VersionError).
//
// The version field is covered only by the trailer's file checksum. So:
// when the trailer (found from the end of the file, as this version
// frames it) holds and its checksum matches the bytes as they are, the
// header is what its writer wrote: another version (a *VersionError), or
// not a snapshot (bad magic). When it does not match but does with the
// magic and a version this reader knows put back, the file header alone
// was damaged: ErrCorrupt, and that version. Otherwise the file is
// damaged elsewhere too (ErrCorrupt), or, with an intact magic and no
// trailer to be found, of a layout this reader cannot frame (a
// *VersionError).
func fileVersion(data []byte) (uint32, error) {
	magicOK := len(data) >= len(Magic) && string(data[:len(Magic)]) == Magic
	v := binary.LittleEndian.Uint32(data[len(Magic):])
	at, t, found := findTrailer(data)
	if !found {
		if magicOK {
			return 0, &VersionError{Found: v, Supported: Version}
		}
		return 0, fmt.Errorf("%w: not a ttldb snapshot (bad magic %q)", ErrCorrupt, data[:len(Magic)])
	}
	if crc32.Checksum(data[:at], castagnoli) == t.FileCRC {
		if magicOK {
			return 0, &VersionError{Found: v, Supported: Version}
		}
		return 0, fmt.Errorf("%w: not a ttldb snapshot (bad magic %q)", ErrCorrupt, data[:len(Magic)])
	}
	for cand := uint32(MinVersion); cand <= Version; cand++ {
		var fh [len(Magic) + 4]byte
		copy(fh[:], Magic)
		binary.LittleEndian.PutUint32(fh[len(Magic):], cand)
		c := crc32.Update(0, castagnoli, fh[:])
		if crc32.Update(c, castagnoli, data[fileHeaderLen:at]) == t.FileCRC {
			return cand, fmt.Errorf("%w: the file header is damaged (magic %q, version field %d): the file checksum says version %d",
				ErrCorrupt, data[:len(Magic)], v, cand)
		}
	}
	guess := uint32(Version)
	if hv := headerBlockVersion(data); hv != 0 {
		guess = hv
	}
	return guess, fmt.Errorf("%w: the file header (magic %q, version field %d) and the file checksum disagree: the file is damaged",
		ErrCorrupt, data[:len(Magic)], v)
}

// findTrailer looks for the trailer block at the end of data: a block of
// kind trailer that ends the file and passes its own checksum. It returns
// the block's offset and its payload parsed.
func findTrailer(data []byte) (int64, Trailer, bool) {
	// A trailer's payload is six uvarints and a uint32: at most 64 bytes.
	const most = blockHeaderLen + 6*binary.MaxVarintLen64 + 4 + blockCRCLen
	for at := max(int64(len(data))-most, fileHeaderLen); at+blockHeaderLen+blockCRCLen <= int64(len(data)); at++ {
		if Kind(data[at]) != KindTrailer {
			continue
		}
		n := int64(binary.LittleEndian.Uint32(data[at+1:]))
		if at+blockHeaderLen+n+blockCRCLen != int64(len(data)) {
			continue
		}
		end := int64(len(data)) - blockCRCLen
		if crc32.Checksum(data[at:end], castagnoli) != binary.LittleEndian.Uint32(data[end:]) {
			continue
		}
		t, err := ParseTrailer(data[at+blockHeaderLen : end])
		if err == nil {
			return at, t, true
		}
	}
	return 0, Trailer{}, false
}

// headerBlockVersion returns the version whose header block layout the
// file's first block fits (0: it fits none, or fails its checksum).
func headerBlockVersion(data []byte) uint32 {
	if int64(len(data)) < fileHeaderLen+blockHeaderLen+blockCRCLen || Kind(data[fileHeaderLen]) != KindHeader {
		return 0
	}
	n := int64(binary.LittleEndian.Uint32(data[fileHeaderLen+1:]))
	end := fileHeaderLen + blockHeaderLen + n
	if end+blockCRCLen > int64(len(data)) || crc32.Checksum(data[fileHeaderLen:end], castagnoli) != binary.LittleEndian.Uint32(data[end:]) {
		return 0
	}
	for v := uint32(Version); v >= MinVersion; v-- {
		if _, err := ParseHeader(data[fileHeaderLen+blockHeaderLen:end], v); err == nil {
			return v
		}
	}
	return 0
}

// Version returns the file's format version (in salvage mode, the one it
// is read as).
func (r *Reader) Version() uint32 { return r.version }

// Notes returns what salvage mode found wrong with the file's header (its
// magic, version or header block), one line each.
func (r *Reader) Notes() []string { return r.notes }

// Skipped returns the blocks and bytes salvage mode skipped.
func (r *Reader) Skipped() (blocks int, bytes int64) { return r.bad, r.skipped }

// Header returns the header block; ok is false in salvage mode when it
// was lost (the zero Header is returned).
func (r *Reader) Header() (h Header, ok bool) { return r.header, r.headerOK }

// Trailer returns the trailer once Next has returned io.EOF after reading
// it; ok is false before that, and in salvage mode when the file had no
// valid trailer.
func (r *Reader) Trailer() (t Trailer, ok bool) {
	if r.trailer == nil {
		return Trailer{}, false
	}
	return *r.trailer, true
}

// readError is the error for a read of what that failed: a file that
// ends too soon is damage (ErrCorrupt); any other error is the reader's
// own (a directory, an I/O error), which salvage cannot mend, and is
// returned as it is.
func readError(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s: %w", ErrCorrupt, what, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("reading the %s: %w", what, err)
}

// Next returns the next block other than the header and the trailer. At
// the trailer it checks the whole file's checksum and that nothing
// follows, and returns io.EOF. A block that fails its checksum, a file that
// ends without a trailer or a malformed trailer is an error wrapping
// ErrCorrupt (in salvage mode, skipped).
func (r *Reader) Next() (Block, error) {
	for {
		before, at := r.crc, r.off
		b, err := r.next()
		if err != nil {
			if r.salvage && errors.Is(err, ErrCorrupt) {
				if r.resync(at) {
					continue
				}
				return Block{}, io.EOF
			}
			return Block{}, err
		}
		switch b.Kind {
		case KindHeader:
			err = fmt.Errorf("%w: second header block at offset %d", ErrCorrupt, b.Offset)
		case KindTrailer:
			err = r.finish(b, before)
			if err == nil {
				return Block{}, io.EOF
			}
		default:
			return b, nil
		}
		if r.salvage {
			if b.Kind == KindTrailer {
				return Block{}, io.EOF // what came before is all there is
			}
			continue
		}
		return Block{}, err
	}
}

// finish checks the trailer block b (before: the file checksum before it).
func (r *Reader) finish(b Block, before uint32) error {
	t, err := ParseTrailer(b.Payload)
	if err != nil {
		return err
	}
	if t.FileCRC != before {
		return fmt.Errorf("%w: whole-file checksum mismatch (trailer says %08x, file gives %08x)", ErrCorrupt, t.FileCRC, before)
	}
	if t.Blocks != r.blocks-1 {
		return fmt.Errorf("%w: trailer counts %d blocks, file holds %d", ErrCorrupt, t.Blocks, r.blocks-1)
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		if err != nil {
			return readError(err, "end of the file")
		}
		return fmt.Errorf("%w: bytes after the trailer", ErrCorrupt)
	}
	r.trailer = &t
	return nil
}

// next reads one framed block and checks its checksum.
func (r *Reader) next() (Block, error) {
	off := r.off
	var h [blockHeaderLen]byte
	if _, err := io.ReadFull(r.br, h[:]); err != nil {
		if err == io.EOF {
			return Block{}, fmt.Errorf("%w: file ends at offset %d without a trailer", ErrCorrupt, off)
		}
		return Block{}, readError(err, fmt.Sprintf("block at offset %d", off))
	}
	k := Kind(h[0])
	n := binary.LittleEndian.Uint32(h[1:])
	if !knownKind(k) || n > MaxBlock {
		return Block{}, fmt.Errorf("%w: block at offset %d: unknown kind %d or bad length %d", ErrCorrupt, off, h[0], n)
	}
	// Read through a buffer that grows only as bytes arrive: a corrupt
	// length cannot make the reader allocate more than the file holds.
	r.buf.Reset()
	if _, err := r.buf.ReadFrom(io.LimitReader(r.br, int64(n)+blockCRCLen)); err != nil {
		return Block{}, readError(err, fmt.Sprintf("block at offset %d", off))
	}
	if r.buf.Len() != int(n)+blockCRCLen {
		return Block{}, fmt.Errorf("%w: %s block at offset %d is truncated", ErrCorrupt, k, off)
	}
	all := r.buf.Bytes()
	payload, tail := all[:n], all[n:]
	c := crc32.Update(0, castagnoli, h[:])
	c = crc32.Update(c, castagnoli, payload)
	if want := binary.LittleEndian.Uint32(tail); c != want {
		return Block{}, fmt.Errorf("%w: %s block at offset %d fails its checksum (stored %08x, computed %08x)", ErrCorrupt, k, off, want, c)
	}
	r.crc = crc32.Update(r.crc, castagnoli, h[:])
	r.crc = crc32.Update(r.crc, castagnoli, all)
	r.off += blockHeaderLen + int64(n) + blockCRCLen
	r.blocks++
	// The payload is copied out of the shared buffer: callers keep
	// documents of a block until they are stored.
	return Block{Kind: k, Payload: bytes.Clone(payload), Offset: off, Version: r.version}, nil
}

// resync, in salvage mode, finds the next block that passes its checksum
// after a bad one, trying every offset from the bad block's start + 1.
func (r *Reader) resync(bad int64) bool {
	data := r.data
	for i := bad + 1; i+blockHeaderLen+blockCRCLen <= int64(len(data)); i++ {
		k := Kind(data[i])
		if !knownKind(k) || k == KindHeader {
			continue
		}
		n := int64(binary.LittleEndian.Uint32(data[i+1:]))
		end := i + blockHeaderLen + n + blockCRCLen
		if n > MaxBlock || end > int64(len(data)) {
			continue
		}
		c := crc32.Update(0, castagnoli, data[i:i+blockHeaderLen+n])
		if c == binary.LittleEndian.Uint32(data[end-blockCRCLen:end]) {
			r.bad++
			r.skipped += i - bad
			r.off = i
			r.br = bufio.NewReader(bytes.NewReader(data[i:]))
			return true
		}
	}
	r.bad++
	r.skipped += int64(len(data)) - bad
	r.off = int64(len(data))
	r.br = bufio.NewReader(bytes.NewReader(nil))
	return false
}
