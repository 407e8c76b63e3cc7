//go:build !race

package testutil

// RaceEnabled is true when the tests run under the race detector, which
// makes large builds several times slower: size-heavy tests shrink.
const RaceEnabled = false
