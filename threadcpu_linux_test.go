//go:build linux

package ttldb

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time the calling OS thread has used, or false
// where that cannot be read. Benchmarks lock their goroutine to its thread
// (runtime.LockOSThread) and report the difference: the CPU a writer
// spends per operation, which other processes on a shared machine do not
// inflate as they inflate wall time.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
