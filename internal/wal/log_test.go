package wal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/vfs"
)

// bufferSizes are the Options.BufferSize values the tests run with:
// write-through, and a buffer that fills every few dozen records.
var bufferSizes = []int{0, 4096}

func TestRoundTrip(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncAlways, SyncEverySecond, SyncNever} {
		for _, bs := range bufferSizes {
			t.Run(fmt.Sprintf("%s/buffer=%d", pol, bs), func(t *testing.T) { testRoundTrip(t, pol, bs) })
		}
	}
}

func testRoundTrip(t *testing.T, pol SyncPolicy, bs int) {
	{
		{
			m := vfs.NewFaultFS()
			l := open(t, m, Options{Sync: pol, BufferSize: bs})
			require.Equal(t, uint64(0), l.LastSeq())
			require.Empty(t, replay(t, l, 1))
			// Seqs with gaps, as commits of several ops make them.
			var want []uint64
			seq := uint64(0)
			for range 500 {
				seq += 1 + seq%3
				require.NoError(t, l.Append(seq, payload(seq)))
				want = append(want, seq)
			}
			require.Equal(t, want, replay(t, l, 0), "replay of the open log")
			require.NoError(t, l.Close())

			l = open(t, m, Options{Sync: pol})
			defer l.Close()
			require.Empty(t, l.Recovery().Cuts)
			require.Equal(t, "", l.Recovery().String())
			require.Equal(t, seq, l.LastSeq())
			require.Equal(t, want, replay(t, l, 1))
			require.Equal(t, want[250:], replay(t, l, want[250]))
			require.Equal(t, want[251:], replay(t, l, want[250]+1))
			require.Empty(t, replay(t, l, seq+1))
			st := l.Stats()
			require.Equal(t, 1, st.Segments)
			require.Zero(t, st.Appends, "counts restart at Open")
		}
	}
}

func TestLargeAndEmptyRecords(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 1 << 10})
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i * 31)
	}
	require.NoError(t, l.Append(1, nil))
	require.NoError(t, l.Append(2, big))
	require.NoError(t, l.Append(3, []byte{}))
	require.NoError(t, l.Close())
	l = open(t, m, Options{})
	defer l.Close()
	var got [][]byte
	require.NoError(t, l.Replay(1, func(_ uint64, p []byte) error {
		got = append(got, append([]byte{}, p...))
		return nil
	}))
	require.Equal(t, [][]byte{{}, big, {}}, got)
	require.Equal(t, 2, l.Stats().Segments, "a record larger than a segment goes whole into one")
}

func TestWriteRefusesAndChangesNothing(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways})
	defer l.Close()
	appendN(t, l, 1, 5)
	before, err := m.ReadFile(segPath(1))
	require.NoError(t, err)

	for _, seq := range []uint64{5, 3, 0} {
		err := l.Append(seq, payload(seq))
		require.ErrorIs(t, err, ErrOutOfOrder, "seq %d", seq)
	}
	defer func(old uint32) { maxRecord = old }(maxRecord)
	maxRecord = 100
	require.ErrorIs(t, l.Append(6, make([]byte, 101)), ErrTooLarge)
	require.NoError(t, l.Append(6, make([]byte, 100)), "the bound itself is allowed")
	maxRecord = MaxRecordSize

	after, err := m.ReadFile(segPath(1))
	require.NoError(t, err)
	require.Equal(t, before, after[:len(before)], "a refused record left bytes behind")
	require.Len(t, after, len(before)+recHeaderSize+100)
	require.NoError(t, l.Err())
}

func TestOpenOptions(t *testing.T) {
	m := vfs.NewFaultFS()
	for _, o := range []Options{{Sync: SyncNever + 1}, {SegmentSize: -1}, {FlushInterval: -1}} {
		_, err := Open(m, testDir, o)
		require.ErrorIs(t, err, errs.ErrInvalidOptions)
	}
	names, err := m.ReadDir("/")
	require.NoError(t, err)
	require.Empty(t, names, "a refused Open created files")
}

func TestOpenCreatesDurableDirAndFiles(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways})
	appendN(t, l, 1, 3)
	mode, err := m.Mode(testDir)
	require.NoError(t, err)
	require.Equal(t, vfs.DirPerm, mode)
	mode, err = m.Mode(segPath(1))
	require.NoError(t, err)
	require.Equal(t, vfs.FilePerm, mode)
	m.PowerCut() // the directory "db" itself was made by the test's Open
	l = open(t, m, Options{})
	defer l.Close()
	require.Equal(t, span(1, 3), replay(t, l, 1), "records synced into a directory whose entry was not")
}

func TestOSFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db", "wal")
	l, err := Open(vfs.Default, dir, Options{Sync: SyncAlways, SegmentSize: 4 << 10})
	require.NoError(t, err)
	appendN(t, l, 1, 200)
	require.NoError(t, l.Close())
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, vfs.DirPerm, fi.Mode().Perm())
		names, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Greater(t, len(names), 1)
		for _, n := range names {
			fi, err := os.Stat(filepath.Join(dir, n.Name()))
			require.NoError(t, err)
			require.Equal(t, vfs.FilePerm, fi.Mode().Perm(), n.Name())
		}
	}
	// A torn tail on a real file.
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	last := filepath.Join(dir, names[len(names)-1].Name())
	fi, err := os.Stat(last)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(last, fi.Size()-3))
	l, err = Open(vfs.Default, dir, Options{})
	require.NoError(t, err)
	defer l.Close()
	require.Len(t, l.Recovery().Cuts, 1)
	require.Equal(t, span(1, 199), replay(t, l, 1))
}

func TestSegmentRollover(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	appendN(t, l, 1, 300)
	st := l.Stats()
	require.Greater(t, st.Segments, 10)
	names, err := m.ReadDir(testDir)
	require.NoError(t, err)
	require.Len(t, names, st.Segments)
	var size int64
	prevLast := uint64(0)
	for i, n := range names {
		base, ok := parseSegmentName(n)
		require.True(t, ok, n)
		data, err := m.ReadFile(filepath.Join(testDir, n))
		require.NoError(t, err)
		size += int64(len(data))
		sh, err := parseSegmentHeader(data, base, n)
		require.NoError(t, err)
		require.Equal(t, uint32(Version), sh.version)
		offs := recordOffsets(t, data)
		require.NotEmpty(t, offs, n)
		first := leUint64(data[offs[0]+4:])
		last := leUint64(data[offs[len(offs)-1]+4:])
		require.Equal(t, prevLast+1, base, "segment %d's base follows the last seq before it", i)
		require.Equal(t, base, first)
		if i < len(names)-1 {
			// Rolled when it reached the bound, not before.
			require.GreaterOrEqual(t, len(data), 512)
			require.Less(t, len(data)-sealSize-(recHeaderSize+len(payload(last))), 512)
		}
		prevLast = last
	}
	require.Equal(t, st.Size, size)
	require.NoError(t, l.Close())

	l = open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	defer l.Close()
	appendN(t, l, 301, 400)
	require.Equal(t, span(1, 400), replay(t, l, 1))
	require.Equal(t, span(123, 400), replay(t, l, 123))
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func TestTruncateFront(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	appendN(t, l, 1, 200)
	before := l.Stats()
	names, err := m.ReadDir(testDir)
	require.NoError(t, err)
	bases := make([]uint64, len(names))
	for i, n := range names {
		bases[i], _ = parseSegmentName(n)
	}

	// A seq inside segment 3 drops segments 0..2 (all below it) only.
	cut := bases[3] + 1
	require.NoError(t, l.TruncateFront(cut))
	require.Equal(t, bases[3], l.FirstSeq())
	after := l.Stats()
	require.Equal(t, before.Segments-3, after.Segments)
	require.Less(t, after.Size, before.Size)
	require.Equal(t, span(bases[3], 200), replay(t, l, bases[3]))
	require.Equal(t, span(cut, 200), replay(t, l, cut))
	_, err = replayErr(l, 1)
	require.ErrorIs(t, err, errs.ErrCorrupt, "records before the front were asked for")
	require.Contains(t, err.Error(), "were dropped")

	// Truncating at a segment's base drops the segment before it, not it.
	require.NoError(t, l.TruncateFront(bases[5]))
	require.Equal(t, bases[5], l.FirstSeq())

	// Everything is in a snapshot: the log rolls and keeps one empty
	// segment, which remembers where the seqs were.
	require.NoError(t, l.TruncateFront(201))
	require.Equal(t, 1, l.Stats().Segments)
	require.Equal(t, int64(segHeaderSize), l.Stats().Size)
	require.Equal(t, uint64(201), l.FirstSeq())
	require.Empty(t, replay(t, l, 201))
	require.NoError(t, l.Close())

	m.PowerCut() // removals were synced
	names, err = m.ReadDir(testDir)
	require.NoError(t, err)
	require.Equal(t, []string{segmentName(201)}, names)
	l = open(t, m, Options{Sync: SyncAlways, SegmentSize: 512})
	defer l.Close()
	require.Equal(t, uint64(200), l.LastSeq())
	require.ErrorIs(t, l.Append(200, nil), ErrOutOfOrder)
	appendN(t, l, 201, 210)
	require.Equal(t, span(201, 210), replay(t, l, 201))
}

func TestTruncateFrontKeepsActiveWithNewerRecords(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways})
	defer l.Close()
	appendN(t, l, 1, 10)
	require.NoError(t, l.TruncateFront(5))
	require.Equal(t, 1, l.Stats().Segments)
	require.Equal(t, uint64(1), l.FirstSeq())
	require.Equal(t, span(5, 10), replay(t, l, 5))
}

func TestClosed(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{Sync: SyncAlways})
	appendN(t, l, 1, 3)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close is idempotent")
	require.ErrorIs(t, l.Append(4, nil), ErrClosed)
	require.ErrorIs(t, l.Write(4, nil), ErrClosed)
	require.ErrorIs(t, l.Sync(), ErrClosed)
	require.ErrorIs(t, l.TruncateFront(2), ErrClosed)
	require.ErrorIs(t, l.Replay(1, func(uint64, []byte) error { return nil }), ErrClosed)
	require.NoError(t, l.Wait(3), "a record synced before Close is durable")
}

func TestReplayStopsAtCallbackError(t *testing.T) {
	m := vfs.NewFaultFS()
	l := open(t, m, Options{SegmentSize: 256})
	defer l.Close()
	appendN(t, l, 1, 50)
	stop := errors.New("stop")
	var seen []uint64
	err := l.Replay(1, func(seq uint64, _ []byte) error {
		seen = append(seen, seq)
		if seq == 20 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, span(1, 20), seen)
}

// TestConcurrentUse runs writers, replays, front truncations and stats at
// once (for the race detector), then checks the log holds every record.
func TestConcurrentUse(t *testing.T) {
	m := vfs.NewFaultFS()
	for i, pol := range []SyncPolicy{SyncAlways, SyncEverySecond, SyncAlways, SyncEverySecond} {
		timers := newFakeTimers()
		l := open(t, m, Options{Sync: pol, SegmentSize: 1 << 10, NewTimer: timers.NewTimer, BufferSize: bufferSizes[i/2]})
		base := l.LastSeq()
		var order sync.Mutex
		next := base
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					order.Lock()
					next++
					seq := next
					err := l.Write(seq, payload(seq))
					order.Unlock()
					if err == nil {
						err = l.Wait(seq)
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < 30; i++ {
				if _, err := replayErr(l, l.FirstSeq()); err != nil {
					t.Error(err)
					return
				}
				_ = l.Stats()
				if i%5 == 0 {
					last := l.LastSeq()
					if err := l.TruncateFront(last - rng.Uint64N(50)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
		if pol == SyncEverySecond {
			for range 5 {
				timers.flush(t)
			}
		}
		wg.Wait()
		<-done
		first := l.FirstSeq()
		require.Equal(t, span(first, base+800), replay(t, l, first))
		require.NoError(t, l.Close())
	}
}
