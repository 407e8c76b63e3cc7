package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

var sampleID = [IDLen]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6}

type doc struct {
	coll uint32
	ver  uint64
	enc  []byte
}

// sample writes a snapshot of two collections, docs spanning several
// blocks, a bucket and ops, and returns its bytes and what it holds.
func sample(t testing.TB, ndocs int) ([]byte, []doc) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{StartSeq: 7, Created: 1234567890, ID: sampleID})
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
			_, err = ParseDocs(b, func(coll uint32, ver uint64, enc []byte) error {
				docs = append(docs, doc{coll, ver, enc})
				return nil
			})
		case KindBuckets:
			_, err = ParseBuckets(b, func(_ uint32, bk []byte) error {
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
	h, ok := r.Header()
	require.True(t, ok)
	require.Equal(t, Header{StartSeq: 7, Created: 1234567890, ID: sampleID}, h)
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
// every flip is refused as corrupt (a flip in the version field too: the
// file checksum then fails), never read as valid data nor as another
// version.
func TestEveryByteFlipDetected(t *testing.T) {
	data, _ := sample(t, 20)
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x40
		r, err := NewReader(bytes.NewReader(bad))
		if err == nil {
			_, _, _, _, err = readAll(r)
		}
		require.ErrorIs(t, err, ErrCorrupt, "flip at byte %d", i)
		var ve *VersionError
		require.False(t, errors.As(err, &ve), "flip at byte %d: %v", i, err)
	}
}

// TestSalvageDamagedFileHeader: a file whose magic or version field is
// damaged, or whose header block fails its checksum, is read by the
// salvage reader: every other block, and the trailer when the file
// checksum tells the header that was damaged.
func TestSalvageDamagedFileHeader(t *testing.T) {
	data, want := sample(t, 50)
	for _, tc := range []struct {
		name     string
		at       int
		trailer  bool // the trailer is read (the damage was mended)
		headerOK bool
	}{
		{"magic", 2, true, true},
		{"version", 8, true, true},
		{"version high byte", 11, true, true},
		{"header block", int(fileHeaderLen) + blockHeaderLen + 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(data)
			bad[tc.at] ^= 0x40
			_, err := NewReader(bytes.NewReader(bad))
			require.ErrorIs(t, err, ErrCorrupt)
			r, err := NewSalvageReader(bytes.NewReader(bad))
			require.NoError(t, err)
			colls, docs, buckets, ops, err := readAll(r)
			require.NoError(t, err)
			require.Len(t, colls, 2)
			require.Equal(t, want, docs)
			require.Equal(t, []string{"bucket"}, buckets)
			require.Equal(t, []string{"op1", "op2"}, ops)
			require.NotEmpty(t, r.Notes())
			_, ok := r.Trailer()
			require.Equal(t, tc.trailer, ok)
			_, ok = r.Header()
			require.Equal(t, tc.headerOK, ok)
		})
	}
}

// withVersion returns data with its version field set to v and its file
// checksum made to match: a file some other version wrote.
func withVersion(t testing.TB, data []byte, v uint32) []byte {
	t.Helper()
	out := bytes.Clone(data)
	binary.LittleEndian.PutUint32(out[len(Magic):], v)
	at, tr, ok := findTrailer(out)
	require.True(t, ok)
	tr.FileCRC = crc32.Checksum(out[:at], castagnoli)
	payload := tr.append(nil)
	end := at + blockHeaderLen + int64(len(payload))
	require.Equal(t, int64(len(out))-blockCRCLen, end)
	copy(out[at+blockHeaderLen:], payload)
	binary.LittleEndian.PutUint32(out[end:], crc32.Checksum(out[at:end], castagnoli))
	return out
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

// TestVersionMismatch: a file of a version this reader does not read,
// intact (its file checksum holds), is a *VersionError, in salvage mode
// too.
func TestVersionMismatch(t *testing.T) {
	data, _ := sample(t, 3)
	for _, v := range []uint32{Version + 1, 0} {
		bad := withVersion(t, data, v)
		_, err := NewReader(bytes.NewReader(bad))
		var ve *VersionError
		require.ErrorAs(t, err, &ve)
		_, serr := NewSalvageReader(bytes.NewReader(bad))
		require.ErrorAs(t, serr, &ve)
		require.Equal(t, VersionError{Found: v, Supported: Version}, *ve)
		require.Contains(t, err.Error(), fmt.Sprintf("version %d", v))
		require.Contains(t, err.Error(), fmt.Sprintf("versions %d to %d", MinVersion, Version))
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

// A version 5 header carries the DB's state document; one of version 2 to
// 4 has none (nothing may follow the identity), and an empty state is
// read as none.
func TestHeaderState(t *testing.T) {
	h := Header{StartSeq: 3, Created: 9, ID: sampleID, State: []byte{5, 0, 0, 0, 0}}
	b := h.append(nil)
	got, err := ParseHeader(b, Version)
	require.NoError(t, err)
	require.Equal(t, h, got)

	v4 := Header{StartSeq: 3, Created: 9, ID: sampleID}
	b4 := v4.append(nil)
	b4 = b4[:len(b4)-1] // version 4 wrote no state length
	got, err = ParseHeader(b4, 4)
	require.NoError(t, err)
	require.Equal(t, v4, got)
	_, err = ParseHeader(b, 4)
	require.Error(t, err, "a state where version 4 has none")

	got, err = ParseHeader(v4.append(nil), Version)
	require.NoError(t, err)
	require.Nil(t, got.State)
}
