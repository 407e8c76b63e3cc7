package wal

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/vfs"
)

// coveredSegments writes records 1..60 in segments of about 1 KiB and
// returns the segments' bases.
func coveredSegments(t *testing.T, m *vfs.FaultFS) []uint64 {
	t.Helper()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 1024})
	appendN(t, l, 1, 60)
	require.NoError(t, l.Close())
	bases, err := Segments(m, testDir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(bases), 4)
	return bases
}

// TestReplayPassesOverCoveredDamage: with Options.Covered, a damaged
// record at or below it is passed over and noted, in the segment that
// holds the first record wanted (records after it are read) and in a
// segment all of whose records are covered (damage that leaves no valid
// record after it in the segment); damage above Covered is still a
// *CorruptError. RepairCovered leaves covered damage and cuts the rest.
func TestReplayPassesOverCoveredDamage(t *testing.T) {
	m := vfs.NewFaultFS()
	bases := coveredSegments(t, m)
	data, err := m.ReadFile(segPath(bases[1]))
	require.NoError(t, err)
	offs := recordOffsets(t, data)
	require.GreaterOrEqual(t, len(offs), 3)
	// The second segment: damage its first record, and replay from its
	// third, covered up to the second.
	first := bases[1]
	flip(t, m, segPath(first), offs[0]+recHeaderSize-1)
	// The first segment: damage its last record (nothing valid after it in
	// the segment).
	d0, err := m.ReadFile(segPath(bases[0]))
	require.NoError(t, err)
	o0 := recordOffsets(t, d0)
	flip(t, m, segPath(bases[0]), o0[len(o0)-1]+recHeaderSize+1)

	l, err := Open(m, testDir, Options{Sync: SyncAlways, SegmentSize: 1024})
	require.NoError(t, err)
	_, err = replayErr(l, first+2)
	require.Error(t, err, "without Covered the damage is an error")
	require.NoError(t, l.Close())

	l, err = Open(m, testDir, Options{Sync: SyncAlways, SegmentSize: 1024, Covered: first + 1})
	require.NoError(t, err)
	require.Equal(t, span(first+2, 60), replay(t, l, first+2), "every record wanted")
	require.Len(t, l.Recovery().Skips, 1)
	require.Equal(t, segmentName(first), l.Recovery().Skips[0].Segment)
	// From the second segment's base: its damaged first record is
	// covered, the others are given.
	require.Equal(t, span(first+1, 60), replay(t, l, first))
	// From the start: the first segment's damaged last record is covered
	// by the second segment's base.
	require.Equal(t, append(span(1, first-2), span(first+1, 60)...), replay(t, l, 1))
	require.Len(t, l.Recovery().Skips, 2)
	require.NoError(t, l.Close())

	l, err = Open(m, testDir, Options{Sync: SyncAlways, SegmentSize: 1024, Covered: first - 1})
	require.NoError(t, err)
	_, err = replayErr(l, first)
	require.ErrorIs(t, err, errs.ErrCorrupt, "damage above Covered")
	require.NoError(t, l.Close())

	res, err := RepairCovered(m, testDir, Options{Covered: first + 1})
	require.NoError(t, err)
	require.Empty(t, res.Segment, "covered damage is not cut")
	require.Len(t, res.Skips, 2)
	res, err = RepairCovered(m, testDir, Options{Covered: first - 1})
	require.NoError(t, err)
	require.Equal(t, segmentName(first), res.Segment, "the second segment's damage is cut; the first's, covered by the second's base, is not")
	require.Equal(t, first-2, res.LastSeq, "the last valid record before the cut (the first segment lost its last one)")
	require.Len(t, res.Skips, 1)
}
