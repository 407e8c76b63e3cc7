package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ttldb/ttldb/internal/vfs"
)

// RepairResult says what Repair found and dropped.
type RepairResult struct {
	// Segment, Offset and Reason locate the first damage: "" when the log
	// had none. Offset 0 is a bad header: the file was removed.
	Segment string
	Offset  int64
	Reason  string
	// LastSeq is the seq of the last record kept (0: none).
	LastSeq uint64
	// DroppedBytes counts the bytes removed: from the damage to the end
	// of the log.
	DroppedBytes int64
	// DroppedSegments counts the segment files removed whole.
	DroppedSegments int
}

// Repair makes the log in dir loadable again by keeping the longest valid
// prefix: it reads every segment in order, checking every record as
// Replay does, and at the first damage truncates that segment there (or
// removes it, for a bad header) and removes every later segment. A log
// without damage is left as it is. Segments of another format version
// are refused with a *VersionError, never cut.
//
// Repair is the way out of a *CorruptError: it loses every record after
// the damage, the valid ones too, so copy the directory first if they may
// matter. The caller holds the directory's lock and has no Log open on it.
func Repair(fsys vfs.FS, dir string) (RepairResult, error) {
	bases, err := listSegments(fsys, dir, false)
	if err != nil {
		return RepairResult{}, err
	}
	var res RepairResult
	var prev uint64
	for i, b := range bases {
		off, reason, err := checkSegment(fsys, dir, b, &prev)
		if err != nil {
			return res, err
		}
		if reason == "" {
			continue
		}
		res.Segment, res.Offset, res.Reason, res.LastSeq = segmentName(b), off, reason, prev
		if err := cutFrom(fsys, dir, bases[i:], off, &res); err != nil {
			return res, err
		}
		return res, fsys.SyncDir(dir)
	}
	res.LastSeq = prev
	return res, nil
}

// checkSegment reads segment b whole. It returns the offset and reason of
// its first damage ("" if none) and advances *prev to its last valid seq.
func checkSegment(fsys vfs.FS, dir string, b uint64, prev *uint64) (int64, string, error) {
	sf, err := openSegment(fsys, dir, b)
	if errors.Is(err, errBadHeader) {
		return 0, strings.TrimPrefix(err.Error(), errBadHeader.Error()+": "), nil
	}
	if err != nil {
		return 0, "", err
	}
	defer sf.f.Close()
	if b <= *prev {
		return 0, fmt.Sprintf("base %d is not above seq %d, the last of the segment before", b, *prev), nil
	}
	rr := newRecordReader(sf.f, sf.size, b, *prev, nil)
	for {
		_, _, err := rr.next()
		*prev = rr.prev
		var bad *badRecord
		switch {
		case err == io.EOF:
			return 0, "", nil
		case errors.As(err, &bad):
			return bad.off, bad.reason, nil
		case err != nil:
			return 0, "", err
		}
	}
}

// cutFrom truncates the first of segs at off (removes it if off is 0) and
// removes the others, newest first, counting into res.
func cutFrom(fsys vfs.FS, dir string, segs []uint64, off int64, res *RepairResult) error {
	for j := len(segs) - 1; j >= 0; j-- {
		path := filepath.Join(dir, segmentName(segs[j]))
		f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		size, err := f.Size()
		if err == nil && j == 0 && off > 0 {
			if err = f.Truncate(off); err == nil {
				err = f.Sync()
			}
			res.DroppedBytes += size - off
		}
		f.Close()
		if err != nil {
			return err
		}
		if j > 0 || off == 0 {
			if err := fsys.Remove(path); err != nil {
				return err
			}
			res.DroppedBytes += size
			res.DroppedSegments++
		}
	}
	return nil
}
