package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

type doc struct {
	coll uint32
	ver  uint64
	enc  []byte
}

// sample writes a snapshot of two collections, docs spanning several
// blocks, a bucket and ops, and returns its bytes and what it holds.
func sample(t testing.TB, ndocs int) ([]byte, []doc) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{StartSeq: 7, Created: 1234567890})
	require.NoError(t, err)
	require.NoError(t, w.Collection(Collection{ID: 0, Name: "a", Spec: []byte{1, 2}, Indexes: [][]byte{{3}, {4, 5}}}))
	var docs []doc
	for i := range ndocs {
		d := doc{0, uint64(i + 1), bytes.Repeat([]byte{byte(i)}, 100+i%50)}
		docs = append(docs, d)
		require.NoError(t, w.Doc(d.coll, d.ver, d.enc))
	}
	require.NoError(t, w.Collection(Collection{ID: 1, Name: "b"}))
	require.NoError(t, w.Bucket(1, []byte("bucket")))
	d := doc{1, 99999, []byte("last")}
	docs = append(docs, d)
	require.NoError(t, w.Doc(d.coll, d.ver, d.enc))
	require.NoError(t, w.Op([]byte("op1")))
	require.NoError(t, w.Op([]byte("op2")))
	require.NoError(t, w.Close(Trailer{EndSeq: 9, MaxVersion: 99999}))
	require.Equal(t, int64(buf.Len()), w.Size())
	return buf.Bytes(), docs
}

// readAll reads a snapshot and returns everything it holds.
func readAll(r *Reader) (colls []Collection, docs []doc, buckets, ops []string, err error) {
	for {
		b, err := r.Next()
		if err == io.EOF {
			return colls, docs, buckets, ops, nil
		}
		if err != nil {
			return nil, nil, nil, nil, err
		}
		switch b.Kind {
		case KindCollection:
			c, err := ParseCollection(b.Payload)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			colls = append(colls, c)
		case KindDocs:
			_, err = ParseDocs(b.Payload, func(coll uint32, ver uint64, enc []byte) error {
				docs = append(docs, doc{coll, ver, enc})
				return nil
			})
		case KindBuckets:
			_, err = ParseBuckets(b.Payload, func(_ uint32, bk []byte) error {
				buckets = append(buckets, string(bk))
				return nil
			})
		case KindOps:
			_, err = ParseOps(b.Payload, func(op []byte) error {
				ops = append(ops, string(op))
				return nil
			})
		}
		if err != nil {
			return nil, nil, nil, nil, err
		}
	}
}

func TestRoundTrip(t *testing.T) {
	data, want := sample(t, 5000) // ~600 KB: several docs blocks
	r, err := NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, Header{StartSeq: 7, Created: 1234567890}, r.Header())
	colls, docs, buckets, ops, err := readAll(r)
	require.NoError(t, err)
	require.Len(t, colls, 2)
	require.Equal(t, "a", colls[0].Name)
	require.Equal(t, [][]byte{{3}, {4, 5}}, colls[0].Indexes)
	require.Equal(t, []byte{1, 2}, colls[0].Spec)
	require.Equal(t, want, docs)
	require.Equal(t, []string{"bucket"}, buckets)
	require.Equal(t, []string{"op1", "op2"}, ops)
	tr, ok := r.Trailer()
	require.True(t, ok)
	require.Equal(t, uint64(9), tr.EndSeq)
	require.Equal(t, uint64(99999), tr.MaxVersion)
	require.Equal(t, uint64(5001), tr.Docs)
	require.Equal(t, uint64(2), tr.Ops)
	require.Equal(t, uint64(2), tr.Collections)
	require.Greater(t, tr.Blocks, uint64(4))
}

// TestEveryByteFlipDetected flips each byte of a small snapshot in turn:
// every flip is refused (as corrupt, or as another version for a flip in
// the version field), never read as valid data.
func TestEveryByteFlipDetected(t *testing.T) {
	data, _ := sample(t, 20)
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x40
		r, err := NewReader(bytes.NewReader(bad))
		if err == nil {
			_, _, _, _, err = readAll(r)
		}
		require.Error(t, err, "flip at byte %d", i)
		var ve *VersionError
		require.True(t, errors.Is(err, ErrCorrupt) || errors.As(err, &ve), "flip at byte %d: %v", i, err)
	}
}

// TestEveryTruncationDetected cuts the file at every length: a snapshot
// without its trailer is never taken as complete.
func TestEveryTruncationDetected(t *testing.T) {
	data, _ := sample(t, 20)
	for n := range len(data) {
		r, err := NewReader(bytes.NewReader(data[:n]))
		if err == nil {
			_, _, _, _, err = readAll(r)
		}
		require.ErrorIs(t, err, ErrCorrupt, "cut at %d", n)
	}
}

func TestTrailingBytesRefused(t *testing.T) {
	data, _ := sample(t, 3)
	r, err := NewReader(bytes.NewReader(append(bytes.Clone(data), 0)))
	require.NoError(t, err)
	_, _, _, _, err = readAll(r)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestVersionMismatch(t *testing.T) {
	data, _ := sample(t, 3)
	for _, v := range []uint32{Version + 1, 0} {
		bad := bytes.Clone(data)
		binary.LittleEndian.PutUint32(bad[len(Magic):], v)
		_, err := NewReader(bytes.NewReader(bad))
		var ve *VersionError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, VersionError{Found: v, Supported: Version}, *ve)
		require.Contains(t, err.Error(), fmt.Sprintf("version %d", v))
		require.Contains(t, err.Error(), fmt.Sprintf("version %d", Version))
	}
}

func TestNotASnapshot(t *testing.T) {
	_, err := NewReader(bytes.NewReader([]byte("hello, world, this is not it")))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = NewReader(bytes.NewReader(nil))
	require.ErrorIs(t, err, ErrCorrupt)
}

// TestSalvageSkipsBadBlock damages one docs block in the middle: the
// normal reader refuses the file, the salvage reader returns every other
// block and says what it skipped.
func TestSalvageSkipsBadBlock(t *testing.T) {
	data, want := sample(t, 5000)
	// Damage a byte in the middle of the file: inside some docs block.
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 0xff
	r, err := NewReader(bytes.NewReader(bad))
	require.NoError(t, err)
	_, _, _, _, err = readAll(r)
	require.ErrorIs(t, err, ErrCorrupt)

	r, err = NewSalvageReader(bytes.NewReader(bad))
	require.NoError(t, err)
	colls, docs, buckets, ops, err := readAll(r)
	require.NoError(t, err)
	require.Len(t, colls, 2)
	require.Equal(t, []string{"bucket"}, buckets)
	require.Equal(t, []string{"op1", "op2"}, ops)
	nb, nbytes := r.Skipped()
	require.Equal(t, 1, nb)
	require.Greater(t, nbytes, int64(BlockTarget/2))
	require.Less(t, len(docs), len(want))
	require.Greater(t, len(docs), len(want)/2)
	// What survived is what was written, in order.
	j := 0
	for _, d := range docs {
		for j < len(want) && want[j].ver != d.ver {
			j++
		}
		require.Less(t, j, len(want))
		require.Equal(t, want[j], d)
	}
	_, ok := r.Trailer()
	require.False(t, ok, "the whole-file checksum cannot pass with a block skipped")
}

func TestWriterRefusesVersionZero(t *testing.T) {
	w, err := NewWriter(io.Discard, Header{})
	require.NoError(t, err)
	require.Error(t, w.Doc(0, 0, []byte("x")))
}

// FuzzReader: no input makes the reader panic or accept bytes that are not
// a snapshot written by Writer.
func FuzzReader(f *testing.F) {
	data, _ := sample(f, 3)
	f.Add(data)
	f.Add(data[:len(data)-3])
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, salvage := range []bool{false, true} {
			var r *Reader
			var err error
			if salvage {
				r, err = NewSalvageReader(bytes.NewReader(b))
			} else {
				r, err = NewReader(bytes.NewReader(b))
			}
			if err != nil {
				continue
			}
			_, _, _, _, _ = readAll(r)
		}
	})
}
