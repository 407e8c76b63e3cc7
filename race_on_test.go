//go:build race

package ttldb_test

// raceEnabled lets heavy tests use smaller sizes under the race detector.
const raceEnabled = true
