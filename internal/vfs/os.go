package vfs

import (
	"io"
	"io/fs"
	"os"
	"sort"
)

// OS is the operating system's file system.
type OS struct{}

// Default is the FS the durability layer uses unless a test gives another.
var Default FS = OS{}

// osFile adapts *os.File to File.
type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// OpenFile opens name with os.OpenFile. A file it creates gets perm
// limited to FilePerm (0600): never readable by others, whatever the
// caller passed.
func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm&FilePerm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// MkdirAll creates name and its missing parents with os.MkdirAll, with
// perm limited to DirPerm (0700). It leaves existing directories as they
// are.
func (OS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm&DirPerm) }

// Rename renames with os.Rename.
func (OS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Remove removes with os.Remove.
func (OS) Remove(name string) error { return os.Remove(name) }

// ReadDir lists directory name, sorted.
func (OS) ReadDir(name string) ([]string, error) {
	d, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// SyncDir fsyncs directory name (a no-op where directories cannot be
// synced: Windows).
func (OS) SyncDir(name string) error { return syncDir(name) }

// Lock takes an exclusive lock on the file name: flock(2) where the
// system has it, so that it excludes other processes too, and an
// in-process registry everywhere. The lock file is created with FilePerm
// and never removed (removing it would let two openers lock two different
// files of one name).
func (OS) Lock(name string) (io.Closer, error) { return lockFile(name) }
