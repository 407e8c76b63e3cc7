package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ttldb/ttldb/internal/vfs"
)

// benchPayload is the size of a small commit (one session document).
var benchPayload = make([]byte, 128)

// BenchmarkAppend commits records to a log on this machine's disk (the
// test's temporary directory) from 1 and from 8 goroutines, without and
// with a write buffer, the way a DB does: Write in seq order under an
// ordering lock, Wait after it. Under SyncAlways it reports how many
// commits shared each fsync.
func BenchmarkAppend(b *testing.B) {
	for _, pol := range []SyncPolicy{SyncAlways, SyncEverySecond, SyncNever} {
		for _, bs := range []int{0, 256 << 10} {
			for _, writers := range []int{1, 8} {
				benchAppend(b, pol, bs, writers)
			}
		}
	}
}

func benchAppend(b *testing.B, pol SyncPolicy, bs, writers int) {
	{
		{
			b.Run(fmt.Sprintf("%s/buffer=%d/writers=%d", pol, bs, writers), func(b *testing.B) {
				l, err := Open(vfs.Default, filepath.Join(b.TempDir(), "wal"), Options{Sync: pol, BufferSize: bs})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				var order sync.Mutex
				var seq uint64
				var left atomic.Int64
				left.Store(int64(b.N))
				before := l.Stats()
				b.SetBytes(int64(len(benchPayload) + recHeaderSize))
				b.ResetTimer()
				var wg sync.WaitGroup
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for left.Add(-1) >= 0 {
							order.Lock()
							seq++
							s := seq
							err := l.Write(s, benchPayload)
							order.Unlock()
							if err == nil {
								err = l.Wait(s)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				if pol == SyncAlways {
					st := l.Stats()
					b.ReportMetric(float64(st.Appends-before.Appends)/float64(st.Syncs-before.Syncs), "commits/fsync")
				}
			})
		}
	}
}

// BenchmarkFsync measures this machine's fsync: one 148-byte append (a
// record of benchPayload) then fsync, per op: the floor of a SyncAlways
// commit from one writer.
func BenchmarkFsync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "f"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, vfs.FilePerm)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rec := appendRecord(nil, 1, benchPayload)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(rec); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
