package wal

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/vfs"
)

// FuzzWALReplay feeds arbitrary bytes as the records of a log's last
// segment. Open either refuses them as corrupt, or loads a prefix: then
// Replay yields records whose encoding is exactly the bytes kept, and
// what was cut is what Recovery reports. Repair always makes the log
// loadable. Nothing panics.
func FuzzWALReplay(f *testing.F) {
	var valid []byte
	for s := uint64(1); s <= 5; s++ {
		valid = appendRecord(valid, s*3, payload(s))
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	flipped := append([]byte{}, valid...)
	flipped[20] ^= 4
	f.Add(flipped)
	f.Add(append(append([]byte{}, valid...), make([]byte, 64)...))
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	f.Add(appendRecord(nil, 0, []byte("seq zero")))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("longer inputs test nothing more and slow the fuzzer down")
		}
		file := append(appendSegmentHeader(nil, 1, testID), data...)
		m := vfs.NewFaultFS()
		require.NoError(t, m.WriteFile(segPath(1), file))
		l, err := Open(m, testDir, Options{Sync: SyncNever})
		if err != nil {
			require.ErrorIs(t, err, errs.ErrCorrupt)
			res, err := Repair(m, testDir)
			require.NoError(t, err)
			require.NotEmpty(t, res.Segment)
			l, err = Open(m, testDir, Options{Sync: SyncNever})
			require.NoError(t, err, "Repair left a log Open refuses")
			require.Empty(t, l.Recovery().Cuts, "Repair left a torn tail")
			file = file[:res.Offset]
		} else {
			file = file[:int64(len(file))-l.Recovery().Bytes()]
		}
		enc := appendSegmentHeader(nil, 1, testID)
		err = l.Replay(0, func(seq uint64, p []byte) error {
			enc = appendRecord(enc, seq, p)
			return nil
		})
		require.NoError(t, err)
		require.True(t, bytes.Equal(file, enc), "the records replayed are not the bytes kept")
		require.NoError(t, l.Close())
	})
}
