//go:build !race

package engine

// raceEnabled is true when the tests run under the race detector, which
// makes large builds several times slower: size-heavy tests shrink.
const raceEnabled = false
