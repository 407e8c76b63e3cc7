//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package vfs

import (
	"os"
	"syscall"
)

// errWouldBlock is what tryLockFile returns when another open file
// description holds the lock.
var errWouldBlock error = syscall.EWOULDBLOCK

// flockSupported: Lock excludes other processes.
const flockSupported = true

// tryLockFile takes flock(2)'s exclusive lock without waiting. The lock
// belongs to the open file description: a second open of the same file,
// in this process or another, cannot take it, and the kernel releases it
// when the process dies (even by SIGKILL).
func tryLockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
