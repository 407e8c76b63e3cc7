//go:build unix

package ttldb_test

import "syscall"

// processCPU is the internal tests' processCPU (cputime_unix_test.go) for
// this package's benchmarks: the CPU time the process has used, user and
// system, in nanoseconds (0 where unknown).
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
