package replica

import "os"

// Soak levels of the failure tests, from TTLDB_SOAK:
//
//	unset        the default run: each failure test in a short form
//	short        CI's soak run: larger data, more rounds (a few minutes)
//	1 (or long)  the long run, as the issue states the scenarios (100k
//	             expired documents under a leader kill, hundreds of
//	             randomized steps)
const (
	soakDefault = iota
	soakShort
	soakLong
)

// soakLevel reads TTLDB_SOAK.
func soakLevel() int {
	switch os.Getenv("TTLDB_SOAK") {
	case "":
		return soakDefault
	case "short":
		return soakShort
	default:
		return soakLong
	}
}

// bySoak picks a size for the soak level.
func bySoak[T any](def, short, long T) T {
	switch soakLevel() {
	case soakShort:
		return short
	case soakLong:
		return long
	}
	return def
}
