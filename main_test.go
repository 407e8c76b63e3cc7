package ttldb_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// monitor must have exited by the time its DB's Close returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
