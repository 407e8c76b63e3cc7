package replica

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// logStoreUnderTest is the store Config.Dir keeps raft's log in.
type logStoreUnderTest interface {
	raft.LogStore
	Close() error
}

// openLogStoreForBench opens the store Config.Dir uses, at path.
func openLogStoreForBench(b *testing.B, path string) logStoreUnderTest {
	s, err := openBoltStore(path)
	require.NoError(b, err)
	return s
}

// BenchmarkLogStore: raft's use of the store Config.Dir keeps its log in,
// on this machine's disk: append, a batch of 64 entries of 256 bytes per
// op (one commit: what raft hands over per AppendEntries at most, by
// default); get, one entry read back; compact, a batch appended, then the
// log cut to its last 1024 entries (raft after a snapshot, TrailingLogs),
// so the file's free pages are reused rather than grown.
func BenchmarkLogStore(b *testing.B) {
	batch := func(next uint64) []*raft.Log {
		logs := make([]*raft.Log, 64)
		for i := range logs {
			logs[i] = &raft.Log{Index: next + uint64(i), Term: 1, Type: raft.LogCommand, Data: make([]byte, 256)}
		}
		return logs
	}
	b.Run("append", func(b *testing.B) {
		s := openLogStoreForBench(b, filepath.Join(b.TempDir(), "raft.db"))
		defer s.Close()
		next := uint64(1)
		b.ResetTimer()
		for range b.N {
			require.NoError(b, s.StoreLogs(batch(next)))
			next += 64
		}
	})
	b.Run("get", func(b *testing.B) {
		s := openLogStoreForBench(b, filepath.Join(b.TempDir(), "raft.db"))
		defer s.Close()
		for next := uint64(1); next < 4096; next += 64 {
			require.NoError(b, s.StoreLogs(batch(next)))
		}
		var l raft.Log
		b.ResetTimer()
		for i := range b.N {
			require.NoError(b, s.GetLog(1+uint64(i)%4096, &l))
		}
	})
	b.Run("compact", func(b *testing.B) {
		s := openLogStoreForBench(b, filepath.Join(b.TempDir(), "raft.db"))
		defer s.Close()
		next := uint64(1)
		b.ResetTimer()
		for range b.N {
			require.NoError(b, s.StoreLogs(batch(next)))
			next += 64
			if next > 1024 {
				require.NoError(b, s.DeleteRange(0, next-1024-1))
			}
		}
	})
}
