//go:build unix

package testutil

import "syscall"

// ProcessCPU returns the CPU time the process has used, user and system,
// in nanoseconds (0 where unknown). Benchmarks on a shared machine report
// it beside wall time: other processes' load stretches wall time, far
// less the CPU time a run uses.
func ProcessCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
