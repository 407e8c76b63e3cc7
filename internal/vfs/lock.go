package vfs

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ttldb/ttldb/internal/errs"
)

// held is the set of lock files this process holds, by absolute path with
// symbolic links resolved. It makes a second Lock in the same process fail
// on every system (flock alone would too, but not the fallback), and
// without a system call.
var held struct {
	sync.Mutex
	names map[string]bool
}

// osLock is a lock taken by OS.Lock.
type osLock struct {
	f    *os.File
	key  string
	once sync.Once
	err  error
}

// Close releases the lock. It is idempotent.
func (l *osLock) Close() error {
	l.once.Do(func() {
		l.err = unlockFile(l.f)
		if err := l.f.Close(); l.err == nil {
			l.err = err
		}
		held.Lock()
		delete(held.names, l.key)
		held.Unlock()
	})
	return l.err
}

// lockFile opens (creating) name and locks it for this process, then for
// the system.
func lockFile(name string) (*osLock, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, FilePerm)
	if err != nil {
		return nil, err
	}
	key, err := filepath.Abs(name)
	if err == nil {
		key, err = filepath.EvalSymlinks(key)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	held.Lock()
	if held.names[key] {
		held.Unlock()
		f.Close()
		return nil, fmt.Errorf("%w: %s is held by this process", errs.ErrLocked, name)
	}
	if held.names == nil {
		held.names = map[string]bool{}
	}
	held.names[key] = true
	held.Unlock()
	if err := tryLockFile(f); err != nil {
		held.Lock()
		delete(held.names, key)
		held.Unlock()
		f.Close()
		if err == errWouldBlock {
			return nil, fmt.Errorf("%w: %s is held by another process", errs.ErrLocked, name)
		}
		return nil, &os.PathError{Op: "lock", Path: name, Err: err}
	}
	return &osLock{f: f, key: key}, nil
}
