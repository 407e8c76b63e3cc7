package replica

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unmaintained are modules this module must neither link nor require:
// archived storage code, or modules that exist only to bring it in.
var unmaintained = []string{
	"github.com/boltdb/bolt",           // archived; superseded by go.etcd.io/bbolt
	"github.com/hashicorp/raft-boltdb", // links github.com/boltdb/bolt (v2 too, for its v1 migration)
	"github.com/coreos/etcd",           // the pre-module etcd path (hashicorp/raft-wal links it)
}

// minimums are the oldest versions of the storage code this module links
// that it accepts: go.etcd.io/bbolt's maintained line, and golang.org/x/sys
// (bbolt's mmap and flock) no older than the newest release for the Go
// version the go directive names.
var minimums = map[string]string{
	"go.etcd.io/bbolt": "v1.4.3",
	"golang.org/x/sys": "v0.41.0",
}

// goList runs the go command in this module.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(gocmd, append([]string{"list"}, args...)...).CombinedOutput()
	require.NoError(t, err, "go list %s: %s", strings.Join(args, " "), out)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestDependencies: nothing unmaintained is linked into this package (its
// tests included) or required anywhere in the module graph, and the
// storage code it links is no older than the minimums.
func TestDependencies(t *testing.T) {
	linked := map[string]string{}
	for _, line := range goList(t, "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", ".") {
		if path, version, ok := strings.Cut(line, " "); ok {
			linked[path] = version
		}
	}
	graph := map[string]bool{}
	for _, line := range goList(t, "-m", "all") {
		path, _, _ := strings.Cut(line, " ")
		graph[path] = true
	}
	require.Contains(t, linked, "github.com/hashicorp/raft", "go list -deps found the package's imports")
	for _, bad := range unmaintained {
		for path := range linked {
			assert.False(t, path == bad || strings.HasPrefix(path, bad+"/"), "links %s", path)
		}
		for path := range graph {
			assert.False(t, path == bad || strings.HasPrefix(path, bad+"/"), "the module graph holds %s", path)
		}
	}
	for path, least := range minimums {
		got, ok := linked[path]
		if assert.True(t, ok, "%s is not linked", path) {
			assert.False(t, semverLess(t, got, least), "%s %s is older than %s", path, got, least)
		}
	}
}

// semverLess compares two release versions vMAJOR.MINOR.PATCH.
func semverLess(t *testing.T, a, b string) bool {
	t.Helper()
	parse := func(v string) [3]int {
		var out [3]int
		parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
		require.Len(t, parts, 3, "version %s", v)
		for i, p := range parts {
			p, _, _ = strings.Cut(p, "-") // a pre-release counts as its release
			n, err := strconv.Atoi(p)
			require.NoError(t, err, "version %s", v)
			out[i] = n
		}
		return out
	}
	x, y := parse(a), parse(b)
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}
