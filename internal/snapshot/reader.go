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
}

// Reader reads a snapshot front to back, verifying every block's checksum
// and, at the trailer, the whole file's.
type Reader struct {
	br      *bufio.Reader
	crc     uint32 // of every byte read so far (blocks that passed)
	off     int64
	blocks  uint64
	header  Header
	trailer *Trailer
	salvage bool
	data    []byte // in salvage mode: the whole file, read at once
	skipped int64  // bytes skipped in salvage mode
	bad     int    // blocks skipped in salvage mode
	buf     bytes.Buffer
}

// NewReader reads the file header and the header block from r. It fails
// with a *VersionError for a file of another format version and with an
// error wrapping ErrCorrupt for anything else that is not a snapshot's
// beginning.
func NewReader(r io.Reader) (*Reader, error) {
	sr := &Reader{br: bufio.NewReaderSize(r, 1<<20)}
	var fh [len(Magic) + 4]byte
	if _, err := io.ReadFull(sr.br, fh[:]); err != nil {
		return nil, fmt.Errorf("%w: file header: %w", ErrCorrupt, noEOF(err))
	}
	if string(fh[:len(Magic)]) != Magic {
		return nil, fmt.Errorf("%w: not a ttldb snapshot (bad magic %q)", ErrCorrupt, fh[:len(Magic)])
	}
	if v := binary.LittleEndian.Uint32(fh[len(Magic):]); v != Version {
		return nil, &VersionError{Found: v, Supported: Version}
	}
	sr.crc = crc32.Update(0, castagnoli, fh[:])
	sr.off = fileHeaderLen
	b, err := sr.next()
	if err != nil {
		return nil, err
	}
	if b.Kind != KindHeader {
		return nil, fmt.Errorf("%w: first block is %s, not header", ErrCorrupt, b.Kind)
	}
	if sr.header, err = ParseHeader(b.Payload); err != nil {
		return nil, err
	}
	return sr, nil
}

// NewSalvageReader is NewReader for recovering what can be recovered from
// a damaged file: its Reader skips blocks that fail their checksum (and the
// bytes up to the next block that passes) instead of failing, and accepts
// a file whose trailer is missing or fails. Skipped reports what was lost.
// It reads the whole file into memory first. The file header must be
// intact: without it nothing says what the bytes are.
func NewSalvageReader(r io.Reader) (*Reader, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	sr, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	sr.salvage, sr.data = true, data
	return sr, nil
}

// Skipped returns the blocks and bytes salvage mode skipped.
func (r *Reader) Skipped() (blocks int, bytes int64) { return r.bad, r.skipped }

// Header returns the header block.
func (r *Reader) Header() Header { return r.header }

// Trailer returns the trailer once Next has returned io.EOF after reading
// it; ok is false before that, and in salvage mode when the file had no
// valid trailer.
func (r *Reader) Trailer() (t Trailer, ok bool) {
	if r.trailer == nil {
		return Trailer{}, false
	}
	return *r.trailer, true
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
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
		if err == nil {
			err = errors.New("bytes after the trailer")
		}
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
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
		return Block{}, fmt.Errorf("%w: block at offset %d: %w", ErrCorrupt, off, noEOF(err))
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
		return Block{}, fmt.Errorf("%w: block at offset %d: %w", ErrCorrupt, off, err)
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
	return Block{Kind: k, Payload: bytes.Clone(payload), Offset: off}, nil
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
