package wal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/vfs"
)

// written makes a log of records 1..n in one segment and returns the
// segment's bytes.
func written(t *testing.T, n uint64) []byte {
	t.Helper()
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways})
	appendN(t, l, 1, n)
	require.NoError(t, l.Close())
	data, err := m.ReadFile(segPath(1))
	require.NoError(t, err)
	return data
}

// withSegment returns a FaultFS whose log is one segment holding data.
func withSegment(t *testing.T, data []byte) *vfs.FaultFS {
	t.Helper()
	m := vfs.NewFaultFS()
	require.NoError(t, m.WriteFile(segPath(1), data))
	return m
}

// TestTornTailEveryOffset cuts the last record at every byte: Open keeps
// the records before it, truncates the rest, reports it, and the log
// takes new records after them (which a later Open finds: nothing of the
// torn record is left to swallow them).
func TestTornTailEveryOffset(t *testing.T) {
	data := written(t, 20)
	offs := recordOffsets(t, data)
	start := offs[len(offs)-1]
	for cut := start; cut < len(data); cut++ {
		m := withSegment(t, data[:cut])
		l := open(t, m, Options{Sync: SyncAlways})
		rec := l.Recovery()
		if cut == start {
			require.Empty(t, rec.Cuts, "a clean end is not a torn tail")
		} else {
			require.Len(t, rec.Cuts, 1, "cut at %d", cut)
			require.Equal(t, Cut{Segment: segmentName(1), Offset: int64(start), Bytes: int64(cut - start), Reason: rec.Cuts[0].Reason}, rec.Cuts[0])
			require.Equal(t, int64(cut-start), rec.Bytes())
			require.Contains(t, rec.String(), "truncated the torn tail of log segment 00000000000000000001.wal at offset")
		}
		require.Equal(t, uint64(19), l.LastSeq())
		require.Equal(t, span(1, 19), replay(t, l, 1))
		appendN(t, l, 20, 21)
		require.NoError(t, l.Close())
		l = open(t, m, Options{})
		require.Empty(t, l.Recovery().Cuts)
		require.Equal(t, span(1, 21), replay(t, l, 1), "cut at %d", cut)
		require.NoError(t, l.Close())
	}
}

// TestTornTailZeros: a file system that extended the file but never wrote
// the data leaves zeros; they are a torn tail too.
func TestTornTailZeros(t *testing.T) {
	data := written(t, 10)
	offs := recordOffsets(t, data)
	for _, tail := range [][]byte{
		make([]byte, 4096), // zeros after the last record
		append(data[offs[9]:len(data)-5:len(data)-5], make([]byte, 100)...), // a torn record, then zeros
	} {
		base := data[:offs[9]]
		if len(tail) == 4096 {
			base = data
		}
		m := withSegment(t, append(append([]byte{}, base...), tail...))
		l := open(t, m, Options{})
		require.Len(t, l.Recovery().Cuts, 1)
		want := uint64(10)
		if len(tail) != 4096 {
			want = 9
		}
		require.Equal(t, span(1, want), replay(t, l, 1))
		require.NoError(t, l.Close())
	}
}

// TestBitFlipInLastRecord flips every bit of the last record: the record
// fails its checks and, with nothing valid after it, is cut as a damaged
// tail.
func TestBitFlipInLastRecord(t *testing.T) {
	data := written(t, 12)
	offs := recordOffsets(t, data)
	start := offs[len(offs)-1]
	for i := start; i < len(data); i++ {
		for bit := range 8 {
			d := append([]byte{}, data...)
			d[i] ^= 1 << bit
			m := withSegment(t, d)
			l := open(t, m, Options{})
			require.Len(t, l.Recovery().Cuts, 1, "byte %d bit %d", i, bit)
			require.Equal(t, int64(start), l.Recovery().Cuts[0].Offset)
			require.Equal(t, span(1, 11), replay(t, l, 1))
			require.NoError(t, l.Close())
		}
	}
}

// TestCorruptionBeforeTail damages a record that valid ones follow, in
// each of its fields: Open refuses with a *CorruptError naming the segment
// and offset, changes nothing, and Repair keeps the records before it.
func TestCorruptionBeforeTail(t *testing.T) {
	data := written(t, 30)
	offs := recordOffsets(t, data)
	k := 17 // the record of seq 18
	for _, tc := range []struct {
		name string
		at   int
		xor  byte
	}{
		{"payload", offs[k] + recHeaderSize + 2, 0x10},
		{"payload crc", offs[k] + 13, 0x01},
		{"header crc", offs[k] + 17, 0x80},
		{"seq", offs[k] + 5, 0x02},
		{"length shorter", offs[k], 0x01},
		{"length past the end", offs[k] + 3, 0x40}, // claims ~1 GiB: above the bound
		{"length within bounds past the end", offs[k] + 2, 0x01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := append([]byte{}, data...)
			d[tc.at] ^= tc.xor
			m := withSegment(t, d)
			_, err := Open(m, testDir, Options{})
			require.ErrorIs(t, err, errs.ErrCorrupt)
			var ce *CorruptError
			require.True(t, errors.As(err, &ce))
			require.Equal(t, segmentName(1), ce.Segment)
			require.Equal(t, int64(offs[k]), ce.Offset)
			require.Equal(t, uint64(17), ce.LastSeq)
			require.Contains(t, err.Error(), "00000000000000000001.wal at offset")
			after, rerr := m.ReadFile(segPath(1))
			require.NoError(t, rerr)
			require.Equal(t, d, after, "a refused Open changed the file")

			res, err := Repair(m, testDir)
			require.NoError(t, err)
			require.Equal(t, segmentName(1), res.Segment)
			require.Equal(t, int64(offs[k]), res.Offset)
			require.Equal(t, uint64(17), res.LastSeq)
			require.Equal(t, int64(len(d)-offs[k]), res.DroppedBytes)
			require.Zero(t, res.DroppedSegments)
			l := open(t, m, Options{})
			require.Empty(t, l.Recovery().Cuts)
			require.Equal(t, span(1, 17), replay(t, l, 1))
			require.NoError(t, l.Close())
		})
	}
}

// segments makes a log of records 1..n in segments of 512 bytes and
// returns the FaultFS and the segments' bases.
func segments(t *testing.T, n uint64) (*vfs.FaultFS, []uint64) {
	t.Helper()
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	appendN(t, l, 1, n)
	require.NoError(t, l.Close())
	names, err := m.ReadDir(testDir)
	require.NoError(t, err)
	bases := make([]uint64, len(names))
	for i, nm := range names {
		bases[i], _ = parseSegmentName(nm)
	}
	return m, bases
}

func flip(t *testing.T, m *vfs.FaultFS, name string, at int) {
	t.Helper()
	d, err := m.ReadFile(name)
	require.NoError(t, err)
	d[at] ^= 0x20
	require.NoError(t, m.WriteFile(name, d))
}

// TestCorruptionInMiddleSegment: damage in a segment that is not the last
// is found by Replay (Open reads only the last segment whole), as a
// *CorruptError, and no record after it is delivered. Repair cuts there and
// drops every later segment.
func TestCorruptionInMiddleSegment(t *testing.T) {
	for _, where := range []string{"last record", "first record", "torn end"} {
		t.Run(where, func(t *testing.T) {
			m, bases := segments(t, 200)
			require.Greater(t, len(bases), 5)
			victim := segPath(bases[2])
			d, err := m.ReadFile(victim)
			require.NoError(t, err)
			offs := recordOffsets(t, d)
			var off int
			switch where {
			case "last record":
				off = offs[len(offs)-1]
				flip(t, m, victim, len(d)-sealSize-1)
			case "first record":
				off = offs[0]
				flip(t, m, victim, off+recHeaderSize)
			case "torn end":
				off = offs[len(offs)-1]
				require.NoError(t, m.WriteFile(victim, d[:len(d)-sealSize-1]))
			}
			l := open(t, m, Options{})
			var seen []uint64
			err = l.Replay(1, func(seq uint64, _ []byte) error {
				seen = append(seen, seq)
				return nil
			})
			require.ErrorIs(t, err, errs.ErrCorrupt)
			var ce *CorruptError
			require.True(t, errors.As(err, &ce))
			require.Equal(t, segmentName(bases[2]), ce.Segment)
			require.Equal(t, int64(off), ce.Offset)
			require.Equal(t, span(1, ce.LastSeq), seen, "records after the damage were delivered")
			require.NoError(t, l.Close())

			res, err := Repair(m, testDir)
			require.NoError(t, err)
			require.Equal(t, ce.LastSeq, res.LastSeq)
			require.Equal(t, len(bases)-3, res.DroppedSegments)
			names, err := m.ReadDir(testDir)
			require.NoError(t, err)
			require.Len(t, names, 3)
			l = open(t, m, Options{})
			require.Equal(t, span(1, res.LastSeq), replay(t, l, 1))
			require.NoError(t, l.Close())
		})
	}
}

// TestSegmentsOutOfOrder: a segment whose records do not follow the ones
// before it (a file copied in from elsewhere) is damage.
func TestSegmentsOutOfOrder(t *testing.T) {
	m, bases := segments(t, 100)
	d, err := m.ReadFile(segPath(bases[1]))
	require.NoError(t, err)
	// Rename segment 1 so that it claims a base below segment 0's seqs.
	require.NoError(t, m.Remove(segPath(bases[1])))
	require.NoError(t, m.SyncDir(testDir))
	h := appendSegmentHeader(nil, 2, ID(d[24:40]))
	require.NoError(t, m.WriteFile(segPath(2), append(h, d[segHeaderSize:]...)))
	l := open(t, m, Options{})
	_, err = replayErr(l, 1)
	require.ErrorIs(t, err, errs.ErrCorrupt)
	require.NoError(t, l.Close())
}

func setVersion(t *testing.T, m *vfs.FaultFS, name string, v uint32) {
	t.Helper()
	d, err := m.ReadFile(name)
	require.NoError(t, err)
	binary.LittleEndian.PutUint32(d[8:], v)
	binary.LittleEndian.PutUint32(d[20:], crc32.Checksum(d[:20], castagnoli))
	require.NoError(t, m.WriteFile(name, d))
}

func TestFormatVersion(t *testing.T) {
	for _, tc := range []struct {
		v      uint32
		advice string
	}{{3, "a newer ttldb wrote it"}, {0, "no upgrade path"}} {
		for _, which := range []int{0, -1} { // a middle segment, the last
			m, bases := segments(t, 100)
			b := bases[len(bases)-1]
			if which == 0 {
				b = bases[0]
			}
			setVersion(t, m, segPath(b), tc.v)
			before, err := m.ReadFile(segPath(b))
			require.NoError(t, err)
			_, err = Open(m, testDir, Options{})
			require.ErrorIs(t, err, errs.ErrFormatVersion)
			var ve *VersionError
			require.True(t, errors.As(err, &ve))
			require.Equal(t, tc.v, ve.Got)
			require.Contains(t, err.Error(), "format version "+string(rune('0'+tc.v))+", this build reads versions 1 to 2")
			require.Contains(t, err.Error(), tc.advice)
			require.Contains(t, err.Error(), segmentName(b))

			_, err = Repair(m, testDir)
			require.ErrorIs(t, err, errs.ErrFormatVersion, "Repair cut a segment of another version")
			after, rerr := m.ReadFile(segPath(b))
			require.NoError(t, rerr)
			require.Equal(t, before, after)
			names, rerr := m.ReadDir(testDir)
			require.NoError(t, rerr)
			require.Len(t, names, len(bases))
		}
	}
}

func TestBadHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(d []byte) []byte
	}{
		{"magic", func(d []byte) []byte { d[0] ^= 1; return d }},
		{"checksum", func(d []byte) []byte { d[13] ^= 1; return d }},
		{"base differs from the name", func(d []byte) []byte {
			binary.LittleEndian.PutUint64(d[12:], 7)
			binary.LittleEndian.PutUint32(d[20:], crc32.Checksum(d[:20], castagnoli))
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, bases := segments(t, 100)
			for _, b := range []uint64{bases[1], bases[len(bases)-1]} {
				name := segPath(b)
				orig, err := m.ReadFile(name)
				require.NoError(t, err)
				require.NoError(t, m.WriteFile(name, tc.mod(append([]byte{}, orig...))))
				_, err = Open(m, testDir, Options{})
				require.ErrorIs(t, err, errs.ErrCorrupt, "segment %d", b)
				var ce *CorruptError
				require.True(t, errors.As(err, &ce))
				require.Equal(t, segmentName(b), ce.Segment)
				require.NoError(t, m.WriteFile(name, orig))
			}
		})
	}
}

// TestTornSegmentHeader: a crash while a new segment was being created
// leaves a last segment with a torn header and no record; Open removes it.
func TestTornSegmentHeader(t *testing.T) {
	for _, size := range []int{0, 10, segHeaderSize - 1, segHeaderSize, 100} {
		m, bases := segments(t, 100)
		next := uint64(101)
		torn := make([]byte, size) // zeros: never written
		copy(torn, appendSegmentHeader(nil, next, testID)[:min(size, 10)])
		if size > segHeaderSize {
			torn = make([]byte, size) // all zeros past a header's length
		}
		require.NoError(t, m.WriteFile(segPath(next), torn))
		l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
		rec := l.Recovery()
		require.Len(t, rec.Cuts, 1, "size %d", size)
		require.True(t, rec.Cuts[0].Removed)
		require.Equal(t, segmentName(next), rec.Cuts[0].Segment)
		require.Equal(t, int64(size), rec.Bytes())
		require.Contains(t, rec.String(), "removed log segment")
		require.Equal(t, uint64(100), l.LastSeq())
		require.Equal(t, len(bases), l.Stats().Segments)
		appendN(t, l, 101, 110)
		require.Equal(t, span(1, 110), replay(t, l, 1))
		require.NoError(t, l.Close())
	}

	// The only segment torn: it is made again, same base.
	m := vfs.NewFaultFS()
	require.NoError(t, m.WriteFile(segPath(42), []byte("ttld")))
	l := open(t, m, Options{})
	require.Len(t, l.Recovery().Cuts, 1)
	require.Equal(t, uint64(41), l.LastSeq())
	require.NoError(t, l.Append(42, payload(42)))
	require.NoError(t, l.Close())
	l = open(t, m, Options{})
	require.Equal(t, []uint64{42}, replay(t, l, 42))
	require.NoError(t, l.Close())

	// A last segment with a bad header and data after it is damage.
	m, bases := segments(t, 100)
	last := segPath(bases[len(bases)-1])
	flip(t, m, last, 3)
	_, err := Open(m, testDir, Options{})
	require.ErrorIs(t, err, errs.ErrCorrupt)
}

func TestRepairCleanLogChangesNothing(t *testing.T) {
	m, bases := segments(t, 100)
	before := m.Stats()
	res, err := Repair(m, testDir)
	require.NoError(t, err)
	require.Equal(t, RepairResult{LastSeq: 100}, res)
	after := m.Stats()
	require.Equal(t, before.BytesWritten, after.BytesWritten)
	require.Equal(t, before.Removes, after.Removes)
	names, err := m.ReadDir(testDir)
	require.NoError(t, err)
	require.Len(t, names, len(bases))

	// Repair also cuts a torn tail, as Open would.
	d, err := m.ReadFile(segPath(bases[len(bases)-1]))
	require.NoError(t, err)
	require.NoError(t, m.WriteFile(segPath(bases[len(bases)-1]), d[:len(d)-2]))
	res, err = Repair(m, testDir)
	require.NoError(t, err)
	require.Equal(t, uint64(99), res.LastSeq)
	l := open(t, m, Options{})
	require.Empty(t, l.Recovery().Cuts)
	require.Equal(t, span(1, 99), replay(t, l, 1))
	require.NoError(t, l.Close())

	// A directory with no log: nothing to do.
	res, err = Repair(m, filepath.Join("db", "none"))
	require.Error(t, err)
	require.Equal(t, RepairResult{}, res)
}
