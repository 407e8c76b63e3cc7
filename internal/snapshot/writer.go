package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Writer writes a snapshot front to back. Its methods are not safe for
// concurrent use. The first error sticks: every later call returns it.
type Writer struct {
	bw     *bufio.Writer
	crc    uint32 // of every byte written so far
	size   int64
	blocks uint64
	counts Trailer // Collections, Docs, Ops
	err    error

	// The block being filled: docs or buckets of one collection, or ops.
	openKind Kind
	openColl uint32
	openN    uint64
	body     []byte
	head     []byte            // scratch for a block's prefix
	names    map[uint32]string // collection names by number, for docs and buckets blocks
}

// NewWriter starts a snapshot on w: it writes the file header and the
// header block. Writes to w are buffered; Close flushes them.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	sw := &Writer{bw: bufio.NewWriterSize(w, 1<<20), names: map[uint32]string{}}
	var fh [len(Magic) + 4]byte
	copy(fh[:], Magic)
	binary.LittleEndian.PutUint32(fh[len(Magic):], Version)
	sw.write(fh[:])
	sw.block(KindHeader, h.append(nil), nil)
	return sw, sw.err
}

// Size returns the bytes written so far (buffered included).
func (w *Writer) Size() int64 { return w.size }

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.bw.Write(b); err != nil {
		w.err = err
		return
	}
	w.crc = crc32.Update(w.crc, castagnoli, b)
	w.size += int64(len(b))
}

// block writes one block whose payload is prefix then body.
func (w *Writer) block(k Kind, prefix, body []byte) {
	n := len(prefix) + len(body)
	if n > MaxBlock {
		w.err = fmt.Errorf("snapshot: %s block of %d bytes exceeds the %d-byte bound", k, n, MaxBlock)
		return
	}
	var h [blockHeaderLen]byte
	h[0] = byte(k)
	binary.LittleEndian.PutUint32(h[1:], uint32(n))
	c := crc32.Update(0, castagnoli, h[:])
	c = crc32.Update(c, castagnoli, prefix)
	c = crc32.Update(c, castagnoli, body)
	var tail [blockCRCLen]byte
	binary.LittleEndian.PutUint32(tail[:], c)
	w.write(h[:])
	w.write(prefix)
	w.write(body)
	w.write(tail[:])
	w.blocks++
}

// flushOpen writes the block being filled, if any.
func (w *Writer) flushOpen() {
	if w.openKind == 0 {
		return
	}
	w.head = w.head[:0]
	if w.openKind != KindOps {
		w.head = binary.AppendUvarint(w.head, uint64(w.openColl))
		w.head = appendBytes(w.head, []byte(w.names[w.openColl]))
	}
	w.head = binary.AppendUvarint(w.head, w.openN)
	w.block(w.openKind, w.head, w.body)
	w.openKind, w.openN, w.body = 0, 0, w.body[:0]
}

// open makes the block being filled one of kind k (of collection coll),
// closing the one being filled first if it is of another kind or
// collection.
func (w *Writer) open(k Kind, coll uint32) {
	if w.openKind != k || w.openColl != coll {
		w.flushOpen()
		w.openKind, w.openColl = k, coll
	}
}

// added counts an element added to the block being filled and closes the
// block once it reaches BlockTarget.
func (w *Writer) added() error {
	w.openN++
	if len(w.body) >= BlockTarget {
		w.flushOpen()
	}
	return w.err
}

// Collection writes a collection block. Its documents' and buckets' blocks
// follow it.
func (w *Writer) Collection(c Collection) error {
	if w.err != nil {
		return w.err
	}
	w.flushOpen()
	w.names[c.ID] = c.Name
	w.block(KindCollection, c.append(nil), nil)
	w.counts.Collections++
	return w.err
}

// Doc adds a document of collection coll with its record version (not 0)
// and encoding. enc is copied.
func (w *Writer) Doc(coll uint32, ver uint64, enc []byte) error {
	if ver == 0 {
		return errors.New("snapshot: document version 0")
	}
	if w.err != nil {
		return w.err
	}
	w.counts.Docs++
	w.open(KindDocs, coll)
	w.body = appendBytes(binary.AppendUvarint(w.body, ver), enc)
	return w.added()
}

// Bucket adds a bucket (its encoding, defined by the caller) of
// time-series collection coll. b is copied.
func (w *Writer) Bucket(coll uint32, b []byte) error {
	if w.err != nil {
		return w.err
	}
	w.open(KindBuckets, coll)
	w.body = appendBytes(w.body, b)
	return w.added()
}

// Op adds an op's encoding. op is copied.
func (w *Writer) Op(op []byte) error {
	if w.err != nil {
		return w.err
	}
	w.counts.Ops++
	w.open(KindOps, 0)
	w.body = appendBytes(w.body, op)
	return w.added()
}

// Close writes the trailer (t's EndSeq and MaxVersion; the counts and the
// file checksum are the Writer's) and flushes. It does not close the
// underlying writer nor sync it.
func (w *Writer) Close(t Trailer) error {
	if w.err != nil {
		return w.err
	}
	w.flushOpen()
	t.Collections, t.Docs, t.Ops = w.counts.Collections, w.counts.Docs, w.counts.Ops
	t.Blocks = w.blocks
	t.FileCRC = w.crc
	w.block(KindTrailer, t.append(nil), nil)
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	if w.err == nil {
		w.err = errClosed
		return nil
	}
	return w.err
}

var errClosed = errors.New("snapshot: writer closed")
