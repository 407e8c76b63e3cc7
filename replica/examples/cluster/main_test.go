package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOnce runs the example's -once round: the leader is killed, another
// node's monitor deletes the 100 sessions, the third applies the same
// deletions, and the killed node restarts and catches up.
func TestOnce(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), options{out: &out, rounds: 1, fake: true, dir: t.TempDir()}))
	t.Log("\n" + out.String())
	s := out.String()
	killed := regexp.MustCompile(`killing the leader (n\d)`).FindStringSubmatch(s)
	require.NotNil(t, killed)
	took := regexp.MustCompile(`(n\d) took over expiry \((\d+) sessions by its monitor`).FindStringSubmatch(s)
	require.NotNil(t, took)
	assert.NotEqual(t, killed[1], took[1], "another node took over")
	assert.Equal(t, "100", took[2])
	assert.Regexp(t, `(n\d) applied the leader's deletions \(0 sessions by its monitor, 100 applied`, s)
	assert.Regexp(t, killed[1]+` restarted from its directory and caught up`, s)
}
