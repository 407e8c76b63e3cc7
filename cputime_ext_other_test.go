//go:build !unix

package ttldb_test

// processCPU is unknown here: 0 (see cputime_ext_unix_test.go).
func processCPU() int64 { return 0 }
