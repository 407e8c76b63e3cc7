package testutil

import (
	"testing"
)

// TTLDB_SEED replays a seed; a bad one fails the test rather than being
// read as another seed.
func TestSeedFromEnv(t *testing.T) {
	t.Setenv("TTLDB_SEED", "42")
	if got := Seed(t); got != 42 {
		t.Fatalf("Seed = %d with TTLDB_SEED=42", got)
	}
}

// ProcessCPU grows while the process computes (where it is known at all).
func TestProcessCPU(t *testing.T) {
	before := ProcessCPU()
	x := uint64(1)
	for i := range 50_000_000 {
		x = x*6364136223846793005 + uint64(i)
	}
	after := ProcessCPU()
	if before == 0 && after == 0 {
		t.Skip("CPU time is unknown on this system")
	}
	if after <= before {
		t.Fatalf("ProcessCPU went from %d to %d over a busy loop (%d)", before, after, x)
	}
}
