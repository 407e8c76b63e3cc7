//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package vfs

import (
	"errors"
	"os"
)

// errWouldBlock is never returned here: without flock, only the in-process
// registry excludes a second opener.
var errWouldBlock = errors.New("vfs: lock held")

// flockSupported: Lock excludes other processes.
const flockSupported = false

// tryLockFile does nothing on systems without flock(2): the lock excludes
// a second Lock in this process only.
func tryLockFile(*os.File) error { return nil }

func unlockFile(*os.File) error { return nil }
