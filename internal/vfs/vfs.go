// Package vfs is the small file-system interface the durability layer (the
// log, snapshots) writes through, with two implementations: OS, the real
// one, and FaultFS, an in-memory one for tests that simulates a power cut
// (everything not yet fsynced is lost) and injects failing writes, failing
// fsyncs and a full disk.
//
// The interface holds only what a write-ahead log and a snapshot writer
// need: open or create, write, read, fsync, truncate, close; rename,
// remove, list and fsync a directory; lock a directory against a second
// opener.
//
// Durability rules, which FaultFS enforces and OS inherits from POSIX:
// file data is durable once File.Sync has returned nil; a directory entry
// (a create, a rename, a remove) is durable once SyncDir of its directory
// has returned nil after it. A caller that creates a file and needs it to
// survive a power cut syncs the file and then its directory.
package vfs

import (
	"io"
	"io/fs"
	"syscall"
)

// The permissions the durability layer uses: its files hold user data
// (sessions, tokens), so only the owner may read them.
const (
	FilePerm fs.FileMode = 0o600 // every file created
	DirPerm  fs.FileMode = 0o700 // every directory created
)

// ErrNoSpace is the error of a write to a full disk: syscall.ENOSPC, which
// OS's writes return wrapped in an *fs.PathError, and which FaultFS returns
// the same way when its disk size is reached. Match it with errors.Is.
var ErrNoSpace error = syscall.ENOSPC

// FS is a file system. Names are paths in the host's syntax (OS) or
// slash-separated (FaultFS); relative names are relative to the process's
// working directory (OS) or to FaultFS's root. Errors wrap fs.ErrNotExist,
// fs.ErrExist and the like as package os's do, so errors.Is matches them.
//
// Implementations are safe for concurrent use.
type FS interface {
	// OpenFile opens name with os.OpenFile's flags (os.O_RDONLY,
	// os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.O_APPEND, os.O_TRUNC...).
	// perm is the mode of a file it creates (FilePerm).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// MkdirAll creates name and any missing parents with mode perm
	// (DirPerm). The new entries are durable once each parent has been
	// synced with SyncDir.
	MkdirAll(name string, perm fs.FileMode) error
	// Rename renames oldname to newname, replacing newname if it exists.
	// Durable once the directories of both have been synced.
	Rename(oldname, newname string) error
	// Remove removes the file or empty directory name. Durable once its
	// directory has been synced.
	Remove(name string) error
	// ReadDir returns the names of the entries of directory name, sorted.
	ReadDir(name string) ([]string, error)
	// SyncDir makes the entries of directory name durable (fsync of the
	// directory).
	SyncDir(name string) error
	// Lock takes an exclusive advisory lock on the file name (created if
	// missing), held until the returned Closer is closed or the process
	// exits. While it is held, a second Lock of the same name, by this
	// process or another, fails at once with an error wrapping
	// errs.ErrLocked.
	Lock(name string) (io.Closer, error)
}

// File is an open file of an FS. A File is not safe for concurrent use,
// except that ReadAt may run concurrently with anything but Close.
type File interface {
	io.Reader
	io.ReaderAt
	// Write writes at the file's offset, or at its end when opened with
	// os.O_APPEND. A failed write may have written a prefix of p.
	io.Writer
	// Sync makes the file's data durable (fsync).
	Sync() error
	// Truncate changes the file's size; it does not move the offset.
	Truncate(size int64) error
	// Size returns the file's current size in bytes.
	Size() (int64, error)
	// Close closes the file. It does not sync it.
	Close() error
}
