package wal

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testDir is where the tests keep the log in a FaultFS.
const testDir = "db/wal"

// payload is the deterministic payload of record seq: its lengths vary
// from 0 to a few hundred bytes.
func payload(seq uint64) []byte {
	n := int(seq*7919) % 300
	if seq%50 == 0 {
		n = 0
	}
	b := bytes.Repeat([]byte{byte(seq)}, n)
	return append(fmt.Appendf(nil, "r%d:", seq), b...)
}

func open(t testing.TB, fsys vfs.FS, opts Options) *Log {
	t.Helper()
	l, err := Open(fsys, testDir, opts)
	require.NoError(t, err)
	return l
}

// appendN appends records from..to (inclusive) with Append.
func appendN(t testing.TB, l *Log, from, to uint64) {
	t.Helper()
	for s := from; s <= to; s++ {
		require.NoError(t, l.Append(s, payload(s)))
	}
}

// replay returns the seqs Replay(from) yields, checking every payload.
func replay(t testing.TB, l *Log, from uint64) []uint64 {
	t.Helper()
	seqs, err := replayErr(l, from)
	require.NoError(t, err)
	return seqs
}

func replayErr(l *Log, from uint64) ([]uint64, error) {
	var seqs []uint64
	err := l.Replay(from, func(seq uint64, p []byte) error {
		if !bytes.Equal(p, payload(seq)) {
			return fmt.Errorf("record %d: payload %q, want %q", seq, p, payload(seq))
		}
		seqs = append(seqs, seq)
		return nil
	})
	return seqs, err
}

// span returns from..to.
func span(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// segPath is the path of the segment with base base in a FaultFS.
func segPath(base uint64) string { return filepath.Join(testDir, segmentName(base)) }

// testID is the identity the tests' hand-made segments carry.
var testID = ID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// recordOffsets returns the offset of every record in a segment's bytes.
func recordOffsets(t testing.TB, data []byte) []int {
	t.Helper()
	var offs []int
	for p := segHeaderSize; p < len(data); {
		if p+sealSize == len(data) && leUint64(data[p+4:]) == 0 {
			break // the seal
		}
		require.True(t, validRecordAt(data, p, 0), "no valid record at %d", p)
		offs = append(offs, p)
		n := int(uint32(data[p]) | uint32(data[p+1])<<8 | uint32(data[p+2])<<16 | uint32(data[p+3])<<24)
		p += recHeaderSize + n
	}
	return offs
}

// fakeTimers makes timers a test fires by hand; the flusher's timers
// arrive on made in the order it creates them.
type fakeTimers struct{ made chan *fakeTimer }

func newFakeTimers() *fakeTimers { return &fakeTimers{made: make(chan *fakeTimer, 1000)} }

type fakeTimer struct {
	d  time.Duration
	c  chan time.Time
	mu sync.Mutex
	// stopped is set by Stop.
	stopped bool
}

func (f *fakeTimers) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{d: d, c: make(chan time.Time, 1)}
	f.made <- t
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// flush fires the flusher's pending timer and returns once that flush is
// done: the flusher makes its next timer only after it.
func (f *fakeTimers) flush(t testing.TB) {
	t.Helper()
	select {
	case tm := <-f.made:
		tm.c <- time.Time{}
	case <-time.After(10 * time.Second):
		t.Fatal("the flusher made no timer")
	}
	select {
	case tm := <-f.made:
		// Put it back for the next flush: made is a queue of one.
		f.made <- tm
	case <-time.After(10 * time.Second):
		t.Fatal("the flush did not finish")
	}
}
