package vfs

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if lockChild() {
		return
	}
	goleak.VerifyTestMain(m)
}
