package ttldb

import (
	"fmt"

	snapfile "github.com/ttldb/ttldb/internal/snapshot"
)

// writeTo writes a time-series collection to a snapshot.
func (ts *tsColl) writeTo(sw *snapfile.Writer, id uint32) error {
	return fmt.Errorf("collection %q: time-series collections are not in snapshots yet", ts.name)
}

// loadBucket stores a bucket a snapshot holds and returns its version.
func (ts *tsColl) loadBucket(raw []byte) (uint64, error) {
	return 0, corrupt("collection %q: time-series buckets are not read yet", ts.name)
}

// loadApply applies an op of a time-series collection.
func (ts *tsColl) loadApply(op Op) error {
	return corrupt("collection %q: time-series ops are not read yet", ts.name)
}
