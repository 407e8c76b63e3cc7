package wal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
)

// TestHeaderVersionDamage: a flipped byte in a segment header's version
// field, whose checksum then fails, is damage (ErrCorrupt), not a version
// (ErrFormatVersion), in a middle segment or the last; Repair rewrites the
// header, which the rest of it and its checksum tell, and keeps every
// record.
func TestHeaderVersionDamage(t *testing.T) {
	for _, at := range []int{8, 9, 10, 11} {
		for _, which := range []int{0, -1} {
			m, bases := segments(t, 100)
			b := bases[len(bases)-1]
			if which == 0 {
				b = bases[0]
			}
			flip(t, m, segPath(b), at)
			_, err := Open(m, testDir, Options{})
			require.ErrorIs(t, err, errs.ErrCorrupt, "byte %d", at)
			require.NotErrorIs(t, err, errs.ErrFormatVersion)
			require.Contains(t, err.Error(), segmentName(b))

			res, err := Repair(m, testDir)
			require.NoError(t, err)
			require.Equal(t, []string{segmentName(b)}, res.Mended)
			require.Zero(t, res.DroppedBytes)
			l := open(t, m, Options{})
			require.Equal(t, span(1, 100), replay(t, l, 1))
			require.NoError(t, l.Close())
		}
	}
}

// TestHeaderVersionUnreadable: a header damaged so that its version
// cannot be read (the version field and the checksum both changed) is
// ErrCorrupt, and Repair refuses to cut it: it may be a newer version's.
func TestHeaderVersionUnreadable(t *testing.T) {
	m, bases := segments(t, 100)
	b := bases[1]
	flip(t, m, segPath(b), 9)
	flip(t, m, segPath(b), 21)
	before, err := m.ReadFile(segPath(b))
	require.NoError(t, err)
	_, err = Open(m, testDir, Options{})
	require.ErrorIs(t, err, errs.ErrCorrupt)
	require.NotErrorIs(t, err, errs.ErrFormatVersion)
	_, err = Repair(m, testDir)
	require.ErrorIs(t, err, errs.ErrCorrupt)
	require.Contains(t, err.Error(), "version cannot be read")
	after, err := m.ReadFile(segPath(b))
	require.NoError(t, err)
	require.Equal(t, before, after, "Repair changed a segment whose version it cannot read")
	names, err := m.ReadDir(testDir)
	require.NoError(t, err)
	require.Len(t, names, len(bases))
}

// TestMissingSegments: the log notices segments removed after the first:
// the newest ones (the last present ends with a seal naming the next) at
// Open, a middle one at Replay. Repair cuts at the seal.
func TestMissingSegments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(bases []uint64) []uint64
	}{
		{"newest", func(b []uint64) []uint64 { return b[len(b)-1:] }},
		{"two newest", func(b []uint64) []uint64 { return b[len(b)-2:] }},
		{"middle", func(b []uint64) []uint64 { return b[2:3] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, bases := segments(t, 100)
			gone := tc.remove(bases)
			for _, b := range gone {
				require.NoError(t, m.Remove(segPath(b)))
			}
			var err error
			l, err := Open(m, testDir, Options{})
			if err == nil {
				_, err = replayErr(l, 1)
				require.NoError(t, l.Close())
			}
			require.ErrorIs(t, err, errs.ErrCorrupt)
			var ce *CorruptError
			require.True(t, errors.As(err, &ce))
			require.Equal(t, segmentName(gone[0]), ce.Segment, "the error names the missing segment")
			require.Contains(t, err.Error(), "missing")

			res, err := Repair(m, testDir)
			require.NoError(t, err)
			require.Equal(t, gone[0]-1, res.LastSeq)
			l = open(t, m, Options{})
			require.Equal(t, span(1, gone[0]-1), replay(t, l, 1))
			appendN(t, l, gone[0], gone[0]+5)
			require.NoError(t, l.Close())
		})
	}
}

// TestTornSeal: a crash while the log sealed a segment, after its
// successor was created and before any record went in, leaves a torn
// seal before an empty last segment: Open cuts it and loses nothing.
func TestTornSeal(t *testing.T) {
	for _, keep := range []int{0, 1, 10, sealSize - 1} {
		m, bases := segments(t, 100)
		l := open(t, m, Options{SegmentSize: 512})
		last := l.LastSeq()
		require.NoError(t, l.Close())
		// Make the log end as a roll left it: the last segment sealed
		// (as segments() wrote the others) and a new, empty one after it.
		b := bases[len(bases)-1]
		d, err := m.ReadFile(segPath(b))
		require.NoError(t, err)
		d = appendSeal(d, last+1)
		d = d[:len(d)-sealSize+keep] // torn: only keep bytes of the seal
		require.NoError(t, m.WriteFile(segPath(b), d))
		require.NoError(t, m.WriteFile(segPath(last+1), appendSegmentHeader(nil, last+1, ID(d[24:40]))))

		l = open(t, m, Options{})
		if keep > 0 {
			require.Len(t, l.Recovery().Cuts, 1)
			require.Equal(t, int64(keep), l.Recovery().Cuts[0].Bytes)
		}
		require.Equal(t, span(1, last), replay(t, l, 1))
		require.NoError(t, l.Close())
	}
}

// TestForeignSegment: a segment of another directory (another identity)
// is refused, naming it; a log takes the identity its segments carry.
func TestForeignSegment(t *testing.T) {
	m, bases := segments(t, 100)
	d, err := m.ReadFile(segPath(bases[0]))
	require.NoError(t, err)
	id := ID(d[24:40])
	l := open(t, m, Options{})
	require.Equal(t, id, l.ID())
	require.NoError(t, l.Close())
	l = open(t, m, Options{ID: id})
	require.NoError(t, l.Close())

	other := id
	other[0] ^= 1
	_, err = Open(m, testDir, Options{ID: other})
	require.ErrorIs(t, err, errs.ErrCorrupt)
	require.Contains(t, err.Error(), segmentName(bases[0]))
	require.Contains(t, err.Error(), "another data directory")
}

// TestTornSealOnlySeal: damage at the end of the segment before an empty
// last one that is not a prefix of the seal is not taken for a torn seal:
// Replay reports it.
func TestTornSealOnlySeal(t *testing.T) {
	m, bases := segments(t, 100)
	l := open(t, m, Options{SegmentSize: 512})
	last := l.LastSeq()
	require.NoError(t, l.Close())
	b := bases[len(bases)-1]
	d, err := m.ReadFile(segPath(b))
	require.NoError(t, err)
	d = append(d, bytes.Repeat([]byte{0xab}, 10)...)
	require.NoError(t, m.WriteFile(segPath(b), d))
	require.NoError(t, m.WriteFile(segPath(last+1), appendSegmentHeader(nil, last+1, ID(d[24:40]))))
	l = open(t, m, Options{})
	require.Empty(t, l.Recovery().Cuts)
	_, err = replayErr(l, 1)
	require.ErrorIs(t, err, errs.ErrCorrupt)
	require.NoError(t, l.Close())
}

// TestRepairMendsSealAndIdentity: a flip of any byte of a middle
// segment's header or seal fails the log (ErrCorrupt, never
// ErrFormatVersion); Repair rewrites the header (the other segments give
// a damaged identity) or the seal (its successor is present), and every
// record is kept.
func TestRepairMendsSealAndIdentity(t *testing.T) {
	var where []int
	for i := range segHeaderSize {
		where = append(where, i)
	}
	for i := -sealSize; i < 0; i++ {
		where = append(where, i)
	}
	for _, at := range where {
		m, bases := segments(t, 100)
		b := bases[1]
		d, err := m.ReadFile(segPath(b))
		require.NoError(t, err)
		pos := at
		if at < 0 {
			pos = len(d) + at
		}
		flip(t, m, segPath(b), pos)
		l, err := Open(m, testDir, Options{})
		if err == nil {
			_, err = replayErr(l, 1)
			require.NoError(t, l.Close())
		}
		require.ErrorIs(t, err, errs.ErrCorrupt, "byte %d", at)
		require.NotErrorIs(t, err, errs.ErrFormatVersion, "byte %d", at)
		res, err := Repair(m, testDir)
		require.NoError(t, err)
		require.Equal(t, []string{segmentName(b)}, res.Mended, "byte %d", at)
		require.Zero(t, res.DroppedBytes)
		after, err := m.ReadFile(segPath(b))
		require.NoError(t, err)
		require.Equal(t, d, after, "byte %d: the segment as it was written", at)
		l = open(t, m, Options{})
		require.Equal(t, span(1, 100), replay(t, l, 1))
		require.NoError(t, l.Close())
	}
}
