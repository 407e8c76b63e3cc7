package wal

import (
	"path/filepath"
)

// TruncateFront drops the segments that hold only records below seq: call
// it once a snapshot holds everything before seq. When every record in
// the active segment is below seq, the log first starts a new segment
// (fsyncing the old one), so that after a snapshot of everything the log
// shrinks to an empty segment. Records at or above seq are kept; records
// below it may stay, in a segment that also holds later ones.
//
// Segments are removed oldest first, then the directory is synced: a
// crash midway leaves a shorter prefix dropped, never a hole. Writes go on
// meanwhile but for the roll; Replay waits for it.
func (l *Log) TruncateFront(seq uint64) error {
	l.frontMu.Lock()
	defer l.frontMu.Unlock()
	l.syncMu.Lock()
	l.mu.Lock()
	err := l.writableState()
	if err == nil && l.lastSeq < seq && l.segs[len(l.segs)-1].size > l.segs[len(l.segs)-1].hdr {
		err = l.roll()
	}
	var drop []uint64
	if err == nil {
		for i := 0; i+1 < len(l.segs) && l.segs[i+1].base <= seq; i++ {
			drop = append(drop, l.segs[i].base)
		}
	}
	l.mu.Unlock()
	l.syncMu.Unlock()
	if err != nil {
		return err
	}
	removed := 0
	for _, b := range drop {
		if err = l.fsys.Remove(filepath.Join(l.dir, segmentName(b))); err != nil {
			break
		}
		removed++
	}
	if removed > 0 {
		// Only TruncateFront removes from the front, and frontMu is held.
		l.mu.Lock()
		l.segs = append(l.segs[:0:0], l.segs[removed:]...)
		l.mu.Unlock()
		if serr := l.fsys.SyncDir(l.dir); err == nil {
			err = serr
		}
	}
	return err
}
