package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
)

// create makes dir/name with data, syncing nothing.
func create(t *testing.T, m *FaultFS, name, data string) File {
	t.Helper()
	f, err := m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, FilePerm)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	return f
}

func content(t *testing.T, m *FaultFS, name string) string {
	t.Helper()
	b, err := m.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

func exists(t *testing.T, m *FaultFS, dir, name string) bool {
	t.Helper()
	names, err := m.ReadDir(dir)
	require.NoError(t, err)
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func TestFaultFSFileDataDurableOnlyAfterSync(t *testing.T) {
	m := NewFaultFS()
	f := create(t, m, "a", "abc")
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("/"))
	_, err := f.Write([]byte("def"))
	require.NoError(t, err)
	require.Equal(t, "abcdef", content(t, m, "a"))

	m.PowerCut()
	require.Equal(t, "abc", content(t, m, "a"), "unsynced bytes survive a power cut")

	// A truncation is undone too until synced.
	f, err = m.OpenFile("a", os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1))
	m.PowerCut()
	require.Equal(t, "abc", content(t, m, "a"))
}

func TestFaultFSCreateNeedsDirSync(t *testing.T) {
	m := NewFaultFS()
	require.NoError(t, m.MkdirAll("d", DirPerm))
	require.NoError(t, m.SyncDir("/"))
	f := create(t, m, "d/a", "x")
	require.NoError(t, f.Sync()) // the data is synced, the entry is not
	m.PowerCut()
	require.False(t, exists(t, m, "d", "a"), "a file whose directory was never synced survives a power cut")

	f = create(t, m, "d/a", "x")
	require.NoError(t, m.SyncDir("d"))
	m.PowerCut()
	require.True(t, exists(t, m, "d", "a"))
	require.Equal(t, "", content(t, m, "d/a"), "the entry is durable, its never-synced data is not")
	_ = f
}

func TestFaultFSMkdirNeedsParentSync(t *testing.T) {
	m := NewFaultFS()
	require.NoError(t, m.MkdirAll("a/b", DirPerm))
	require.NoError(t, m.SyncDir("a"))
	m.PowerCut()
	require.False(t, exists(t, m, "/", "a"))

	require.NoError(t, m.MkdirAll("a/b", DirPerm))
	require.NoError(t, m.SyncDir("/"))
	m.PowerCut()
	require.True(t, exists(t, m, "/", "a"))
	require.False(t, exists(t, m, "a", "b"), "a/b was created after a's last sync")
}

func TestFaultFSRenameAndRemoveNeedDirSync(t *testing.T) {
	m := NewFaultFS()
	f := create(t, m, "old", "data")
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("/"))

	require.NoError(t, m.Rename("old", "new"))
	m.PowerCut()
	require.True(t, exists(t, m, "/", "old"))
	require.False(t, exists(t, m, "/", "new"))

	require.NoError(t, m.Rename("old", "new"))
	require.NoError(t, m.SyncDir("/"))
	m.PowerCut()
	require.False(t, exists(t, m, "/", "old"))
	require.Equal(t, "data", content(t, m, "new"))

	require.NoError(t, m.Remove("new"))
	m.PowerCut()
	require.Equal(t, "data", content(t, m, "new"), "an unsynced remove is undone")
	require.NoError(t, m.Remove("new"))
	require.NoError(t, m.SyncDir("/"))
	m.PowerCut()
	require.False(t, exists(t, m, "/", "new"))
}

func TestFaultFSRenameReplacesAtomically(t *testing.T) {
	m := NewFaultFS()
	for _, n := range []string{"cur", "tmp"} {
		f := create(t, m, n, n)
		require.NoError(t, f.Sync())
	}
	require.NoError(t, m.SyncDir("/"))
	require.NoError(t, m.Rename("tmp", "cur"))
	require.Equal(t, "tmp", content(t, m, "cur"))
	require.NoError(t, m.SyncDir("/"))
	m.PowerCut()
	require.Equal(t, "tmp", content(t, m, "cur"))
	require.False(t, exists(t, m, "/", "tmp"))
}

func TestFaultFSHandlesDieAtPowerCut(t *testing.T) {
	m := NewFaultFS()
	f := create(t, m, "a", "x")
	require.NoError(t, m.SyncDir("/"))
	m.PowerCut()
	_, err := f.Write([]byte("y"))
	require.ErrorIs(t, err, fs.ErrClosed)
	require.ErrorIs(t, f.Sync(), fs.ErrClosed)
	_, err = f.ReadAt(make([]byte, 1), 0)
	require.ErrorIs(t, err, fs.ErrClosed)
	require.Equal(t, "", content(t, m, "a"), "a dead handle wrote to the disk after the power cut")
}

func TestFaultFSFailingWrite(t *testing.T) {
	m := NewFaultFS()
	m.Inject(Fault{Op: FaultWrite, After: 5, Match: func(n string) bool { return strings.HasSuffix(n, ".log") }})
	other := create(t, m, "x.dat", "0123456789") // not matched
	_ = other
	f, err := m.OpenFile("a.log", os.O_WRONLY|os.O_CREATE, FilePerm)
	require.NoError(t, err)
	n, err := f.Write([]byte("abc"))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = f.Write([]byte("defg"))
	require.ErrorIs(t, err, syscall.EIO)
	var pe *fs.PathError
	require.True(t, errors.As(err, &pe))
	require.Equal(t, "/a.log", pe.Path)
	require.Equal(t, 2, n, "a write cut short stores the bytes up to the limit")
	require.Equal(t, "abcde", content(t, m, "a.log"))
	n, err = f.Write([]byte("h"))
	require.ErrorIs(t, err, syscall.EIO, "the fault is sticky")
	require.Equal(t, 0, n)
	require.Equal(t, int64(2), m.Stats().Faults)

	m.ClearFaults()
	_, err = f.Write([]byte("h"))
	require.NoError(t, err)
}

func TestFaultFSFaultOnceAndCustomError(t *testing.T) {
	m := NewFaultFS()
	boom := errors.New("boom")
	m.Inject(Fault{Op: FaultSync, After: 1, Err: boom, Once: true})
	f := create(t, m, "a", "1")
	require.NoError(t, f.Sync())
	_, err := f.Write([]byte("2"))
	require.NoError(t, err)
	require.ErrorIs(t, f.Sync(), boom)
	require.NoError(t, m.SyncDir("/"))
	m.PowerCut()
	require.Equal(t, "1", content(t, m, "a"), "a failed fsync made data durable")

	f, err = m.OpenFile("a", os.O_RDWR|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("2"))
	require.NoError(t, err)
	require.NoError(t, f.Sync(), "a Once fault fired twice")
	m.PowerCut()
	require.Equal(t, "12", content(t, m, "a"))
}

func TestFaultFSFailingSyncDir(t *testing.T) {
	m := NewFaultFS()
	m.Inject(Fault{Op: FaultSyncDir})
	create(t, m, "a", "")
	require.ErrorIs(t, m.SyncDir("/"), syscall.EIO)
	m.PowerCut()
	require.False(t, exists(t, m, "/", "a"))
}

func TestFaultFSDiskFull(t *testing.T) {
	m := NewFaultFS()
	m.SetDiskSize(10)
	a := create(t, m, "a", "123456")
	b, err := m.OpenFile("b", os.O_WRONLY|os.O_CREATE, FilePerm)
	require.NoError(t, err)
	n, err := b.Write([]byte("abcdef"))
	require.ErrorIs(t, err, ErrNoSpace)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, 4, n, "a write to a nearly full disk stores what fits")
	require.Equal(t, "abcd", content(t, m, "b"))
	_, err = a.Write([]byte("7"))
	require.ErrorIs(t, err, ErrNoSpace)

	// Overwriting in place needs no space; removing a file frees it.
	require.NoError(t, m.Remove("a"))
	_, err = b.Write([]byte("ef"))
	require.NoError(t, err)
	require.Equal(t, "abcdef", content(t, m, "b"))
}

func TestFaultFSLock(t *testing.T) {
	m := NewFaultFS()
	require.NoError(t, m.MkdirAll("db", DirPerm))
	require.NoError(t, m.SyncDir("/"))
	l, err := m.Lock("db/LOCK")
	require.NoError(t, err)
	_, err = m.Lock("/db/./LOCK")
	require.ErrorIs(t, err, errs.ErrLocked)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close is idempotent")
	l2, err := m.Lock("db/LOCK")
	require.NoError(t, err)
	m.PowerCut() // the process holding l2 died
	l3, err := m.Lock("db/LOCK")
	require.NoError(t, err)
	require.NoError(t, l2.Close(), "closing a lock from before the power cut releases nothing")
	_, err = m.Lock("db/LOCK")
	require.ErrorIs(t, err, errs.ErrLocked)
	require.NoError(t, l3.Close())
}

func TestFaultFSSyncHookAndStats(t *testing.T) {
	m := NewFaultFS()
	var mu sync.Mutex
	var synced []string
	m.SetSyncHook(func(name string) {
		mu.Lock()
		synced = append(synced, name)
		mu.Unlock()
	})
	f := create(t, m, "a", "xy")
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("/"))
	require.NoError(t, m.Rename("a", "b"))
	require.NoError(t, m.Remove("b"))
	require.Equal(t, []string{"/a"}, synced)
	require.Equal(t, FaultStats{Writes: 1, BytesWritten: 2, Syncs: 1, DirSyncs: 1, Creates: 1, Renames: 1, Removes: 1}, m.Stats())
}

func TestFaultFSFilesAndErrors(t *testing.T) {
	m := NewFaultFS()
	_, err := m.OpenFile("missing", os.O_RDONLY, 0)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = m.OpenFile("nodir/a", os.O_RDWR|os.O_CREATE, FilePerm)
	require.ErrorIs(t, err, fs.ErrNotExist)
	create(t, m, "a", "hello")
	_, err = m.OpenFile("a", os.O_RDWR|os.O_CREATE|os.O_EXCL, FilePerm)
	require.ErrorIs(t, err, fs.ErrExist)
	mode, err := m.Mode("a")
	require.NoError(t, err)
	require.Equal(t, FilePerm, mode)

	r, err := m.OpenFile("a", os.O_RDONLY, 0)
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
	buf := make([]byte, 3)
	n, err := r.ReadAt(buf, 3)
	require.Equal(t, 2, n)
	require.ErrorIs(t, err, io.EOF)
	_, err = r.Write([]byte("x"))
	require.Error(t, err, "a read-only handle wrote")
	size, err := r.Size()
	require.NoError(t, err)
	require.Equal(t, int64(5), size)
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Close(), fs.ErrClosed)

	w, err := m.OpenFile("a", os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	require.Equal(t, "", content(t, m, "a"))
	_, err = w.Write([]byte("hi"))
	require.NoError(t, err)
	require.NoError(t, w.Truncate(4))
	require.Equal(t, "hi\x00\x00", content(t, m, "a"))

	require.NoError(t, m.MkdirAll("d/e", DirPerm))
	require.ErrorIs(t, m.Remove("d"), syscall.ENOTEMPTY)
	names, err := m.ReadDir("/")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "d"}, names)
	require.NoError(t, m.WriteFile("d/f", []byte("durable")))
	m.PowerCut()
	require.Equal(t, "durable", content(t, m, "d/f"), "WriteFile lays out durable data")
}

func TestFaultFSCrashKeepsWrittenData(t *testing.T) {
	m := NewFaultFS()
	f := create(t, m, "a", "abc") // neither the data nor the entry synced
	l, err := m.Lock("LOCK")
	require.NoError(t, err)
	m.Crash()
	require.Equal(t, "abc", content(t, m, "a"), "a crash of the process lost what the OS had")
	_, err = f.Write([]byte("d"))
	require.ErrorIs(t, err, fs.ErrClosed, "a dead process wrote")
	l2, err := m.Lock("LOCK")
	require.NoError(t, err, "the dead process's lock was kept")
	require.NoError(t, l.Close())
	require.NoError(t, l2.Close())
	m.PowerCut()
	require.False(t, exists(t, m, "/", "a"), "Crash made something durable")
}
