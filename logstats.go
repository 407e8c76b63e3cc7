package ttldb

// LogStats are counts about the log of a DB opened WithDir, since Open: a
// plain value. Subtract two readings to get the counts of an interval.
type LogStats struct {
	// Records counts the records written to the log. A record holds the
	// ops of one write call, or of several concurrent ones that reached
	// the log together.
	Records int64
	// Bytes counts the bytes written to the log, framing included.
	Bytes int64
	// Syncs counts the fsyncs of the log's files: under SyncAlways one
	// per group commit (concurrent writers waiting together share one),
	// under SyncEverySecond about one a second; segment changes and Close
	// add theirs. Write calls divided by Syncs over an interval is how
	// many commits shared each fsync.
	Syncs int64
	// Size is the bytes the log's files hold now (the log before the
	// last snapshot is dropped a segment at a time).
	Size int64
}

// LogStats returns the counts of the DB's log; ok is false for a DB
// without a data directory (WithDir). It takes the log's lock for a few
// additions, never across I/O, and is safe for concurrent use, also after
// Close (the counts then stay as Close left them).
func (db *DB) LogStats() (s LogStats, ok bool) {
	p := db.persist
	if p == nil {
		return LogStats{}, false
	}
	ws := p.log.Stats()
	return LogStats{Records: ws.Appends, Bytes: ws.Bytes, Syncs: ws.Syncs, Size: ws.Size}, true
}
