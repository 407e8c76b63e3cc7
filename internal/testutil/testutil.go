// Package testutil holds the helpers that the tests of the root package,
// the engine, the other internal packages and the replica module share:
// the seed of randomized tests, whether the race detector is on, the live
// heap of memory tests, and the process's CPU time for benchmarks on a
// shared machine. It is imported by tests only.
package testutil

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// Seed returns the seed of a randomized test: TTLDB_SEED if set, else a
// fresh one. It logs it, so that a failing run can be replayed with
// TTLDB_SEED=n (the same random choices; the interleaving of goroutines
// still varies).
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TTLDB_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("TTLDB_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (TTLDB_SEED=%d to replay the same random choices)", seed, seed)
	return seed
}
