package vfs

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
)

func TestOSFilesAndPerms(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX permission bits")
	}
	dir := filepath.Join(t.TempDir(), "db", "wal")
	var fsys FS = Default
	require.NoError(t, fsys.MkdirAll(dir, DirPerm))
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, DirPerm, fi.Mode().Perm())

	name := filepath.Join(dir, "a")
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, FilePerm)
	require.NoError(t, err)
	_, err = f.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Truncate(4))
	size, err := f.Size()
	require.NoError(t, err)
	require.Equal(t, int64(4), size)
	buf := make([]byte, 4)
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "hell", string(buf))
	require.NoError(t, f.Close())
	fi, err = os.Stat(name)
	require.NoError(t, err)
	require.Equal(t, FilePerm, fi.Mode().Perm())

	// Wider permissions asked for are narrowed: nothing is created
	// readable by others.
	wide := filepath.Join(dir, "wide")
	f, err = fsys.OpenFile(wide, os.O_WRONLY|os.O_CREATE, 0o666)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	fi, err = os.Stat(wide)
	require.NoError(t, err)
	require.Equal(t, FilePerm, fi.Mode().Perm())
	require.NoError(t, fsys.Remove(wide))
	wideDir := filepath.Join(dir, "d1", "d2")
	require.NoError(t, fsys.MkdirAll(wideDir, 0o777))
	for _, d := range []string{wideDir, filepath.Dir(wideDir)} {
		fi, err = os.Stat(d)
		require.NoError(t, err)
		require.Equal(t, DirPerm, fi.Mode().Perm(), d)
	}
	require.NoError(t, fsys.Remove(wideDir))
	require.NoError(t, fsys.Remove(filepath.Dir(wideDir)))

	require.NoError(t, fsys.Rename(name, filepath.Join(dir, "b")))
	require.NoError(t, fsys.SyncDir(dir))
	names, err := fsys.ReadDir(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, names)
	require.NoError(t, fsys.Remove(filepath.Join(dir, "b")))
	_, err = fsys.OpenFile(name, os.O_RDONLY, 0)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestOSLockInProcess(t *testing.T) {
	name := filepath.Join(t.TempDir(), "LOCK")
	l, err := Default.Lock(name)
	require.NoError(t, err)
	_, err = Default.Lock(name)
	require.ErrorIs(t, err, errs.ErrLocked)
	// Another spelling of the same file is the same lock.
	_, err = Default.Lock(filepath.Join(filepath.Dir(name), ".", "LOCK"))
	require.ErrorIs(t, err, errs.ErrLocked)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	l, err = Default.Lock(name)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(name)
		require.NoError(t, err)
		require.Equal(t, FilePerm, fi.Mode().Perm())
	}
}

// TestOSLockSymlink: a directory reached through a symbolic link is the
// same directory.
func TestOSLockSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.Mkdir(real, DirPerm))
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	l, err := Default.Lock(filepath.Join(real, "LOCK"))
	require.NoError(t, err)
	defer l.Close()
	_, err = Default.Lock(filepath.Join(dir, "link", "LOCK"))
	require.ErrorIs(t, err, errs.ErrLocked)
}

// The child process: with TTLDB_VFS_LOCK_CHILD=hold:<file> it takes the
// lock, prints "locked" and holds it until its standard input closes;
// with try:<file> it prints "locked" or "refused" and exits.
const lockChildEnv = "TTLDB_VFS_LOCK_CHILD"

func lockChild() bool {
	v := os.Getenv(lockChildEnv)
	if v == "" {
		return false
	}
	mode, name, _ := strings.Cut(v, ":")
	l, err := Default.Lock(name)
	switch {
	case errors.Is(err, errs.ErrLocked):
		os.Stdout.WriteString("refused\n")
		return true
	case err != nil:
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(2)
	}
	os.Stdout.WriteString("locked\n")
	if mode == "hold" {
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	l.Close()
	return true
}

func lockChildCmd(t *testing.T, mode, name string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+mode+":"+name)
	return cmd
}

func TestOSLockAcrossProcesses(t *testing.T) {
	if !flockSupported {
		t.Skip("no flock on " + runtime.GOOS + ": a lock excludes this process only")
	}
	name := filepath.Join(t.TempDir(), "LOCK")

	// This process holds it: a child is refused.
	l, err := Default.Lock(name)
	require.NoError(t, err)
	out, err := lockChildCmd(t, "try", name).Output()
	require.NoError(t, err)
	require.Equal(t, "refused\n", string(out))
	require.NoError(t, l.Close())
	out, err = lockChildCmd(t, "try", name).Output()
	require.NoError(t, err)
	require.Equal(t, "locked\n", string(out))

	// A child holds it: this process is refused, until the child is
	// killed (SIGKILL leaves no chance to unlock: the kernel does it).
	cmd := lockChildCmd(t, "hold", name)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
	_, err = Default.Lock(name)
	require.ErrorIs(t, err, errs.ErrLocked)
	require.Contains(t, err.Error(), "another process")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	l, err = Default.Lock(name)
	require.NoError(t, err)
	require.NoError(t, l.Close())
}

// TestFlockExcludesSecondDescriptor: flock alone, without the in-process
// registry, refuses a second open file description of this process.
func TestFlockExcludesSecondDescriptor(t *testing.T) {
	if !flockSupported {
		t.Skip("no flock on " + runtime.GOOS)
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	a, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, FilePerm)
	require.NoError(t, err)
	defer a.Close()
	b, err := os.OpenFile(name, os.O_RDWR, 0)
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, tryLockFile(a))
	require.Equal(t, errWouldBlock, tryLockFile(b))
	require.NoError(t, unlockFile(a))
	require.NoError(t, tryLockFile(b))
}
