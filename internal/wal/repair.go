package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	// Mended lists the segments whose damaged header Repair rewrote:
	// one region of it was damaged and the rest said what it held
	// (their records are kept).
	Mended []string
	// Skips lists the damage RepairCovered passed over: it is left in
	// the files.
	Skips []Cut
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
	return RepairCovered(fsys, dir, Options{})
}

// RepairCovered is Repair passing over, as Open and Replay do, damage in
// records at or below opts.Covered (see Options.Covered and FirstSeq):
// such damage is neither cut nor a reason to cut what follows it; it is
// listed in RepairResult.Skips. The other fields of opts are unused.
func RepairCovered(fsys vfs.FS, dir string, opts Options) (RepairResult, error) {
	bases, err := listSegments(fsys, dir, false)
	if err != nil {
		return RepairResult{}, err
	}
	var res RepairResult
	var prev uint64
	ids := segmentIDs(fsys, dir, bases)
	for i, b := range bases {
		var succ uint64 // 0: b is the last
		if i+1 < len(bases) {
			succ = bases[i+1]
		}
		off, reason, err := checkSegment(fsys, dir, b, succ, ids, &prev, &res, opts)
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

// checkSegment reads segment b (followed by segment succ, 0 if none)
// whole. It returns the offset and reason of its first damage ("" if
// none) and advances *prev to its last valid seq. It mends a header that
// mendHeader can rebuild, and refuses one whose version it cannot read.
func checkSegment(fsys vfs.FS, dir string, b, succ uint64, ids []ID, prev *uint64, res *RepairResult, opts Options) (int64, string, error) {
	sf, err := openSegment(fsys, dir, b)
	if errors.Is(err, errBadHeader) {
		reason := strings.TrimPrefix(err.Error(), errBadHeader.Error()+": ")
		mended, merr := mendSegmentHeader(fsys, dir, b, ids, reason)
		if merr != nil || !mended {
			return 0, reason, merr
		}
		res.Mended = append(res.Mended, segmentName(b))
		sf, err = openSegment(fsys, dir, b)
	}
	if err != nil {
		return 0, "", err
	}
	defer sf.f.Close()
	if b <= *prev {
		return 0, fmt.Sprintf("base %d is not above seq %d, the last of the segment before", b, *prev), nil
	}
	rr := newRecordReader(sf.f, sf.hdr, sf.size, b, *prev, nil)
	for {
		_, _, err := rr.next()
		*prev = rr.prev
		var bad *badRecord
		switch {
		case err == io.EOF && rr.sealed && rr.succ != succ:
			return rr.sealAt, fmt.Sprintf("segment %s, which its seal names, is missing", segmentName(rr.succ)), nil
		case err == io.EOF:
			return 0, "", nil
		case errors.As(err, &bad) && rr.sealed:
			// Cut the seal too: the segment becomes the last.
			return rr.sealAt, bad.reason, nil
		case errors.As(err, &bad) && sf.hdr.version >= 2 && succ > rr.prev && damagedSeal(sf.f, sf.size, bad.off, succ):
			// A damaged seal, its successor present: rewrite it, and
			// lose nothing.
			if err := rewriteSeal(fsys, filepath.Join(dir, segmentName(b)), bad.off, succ); err != nil {
				return 0, "", err
			}
			res.Mended = append(res.Mended, segmentName(b))
			return 0, "", nil
		case errors.As(err, &bad):
			skip, ok, serr := rr.skipCovered(sf.f, bad, opts.Covered, opts.FirstSeq)
			if serr != nil {
				return 0, "", serr
			}
			if !ok && succ != 0 && opts.Covered > 0 && succ <= opts.Covered+1 {
				// Every record of the segment is below its successor's
				// base, hence covered.
				res.Skips = append(res.Skips, Cut{Segment: segmentName(b), Offset: bad.off, Bytes: sf.size - bad.off, Reason: bad.reason})
				return 0, "", nil
			}
			if !ok {
				return bad.off, bad.reason, nil
			}
			res.Skips = append(res.Skips, Cut{Segment: segmentName(b), Offset: bad.off, Bytes: skip, Reason: bad.reason})
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

// mendSegmentHeader rewrites the damaged header of segment b when
// mendHeader can rebuild it. It returns false when the header is damaged
// but its version can be read (the caller cuts it, as any damage), and
// a *CorruptError when its version cannot: such a segment is never cut.
func mendSegmentHeader(fsys vfs.FS, dir string, b uint64, ids []ID, reason string) (bool, error) {
	path := filepath.Join(dir, segmentName(b))
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := make([]byte, segHeaderSize)
	n, err := f.ReadAt(h, 0)
	if err != nil && err != io.EOF {
		return false, err
	}
	h = h[:n]
	fixed, _, ok := mendHeader(h, b, ids)
	if !ok {
		if len(h) >= segHeaderSizeV1 && crc32.Checksum(h[:20], castagnoli) != binary.LittleEndian.Uint32(h[20:24]) && !allZeroBytes(h) {
			return false, &CorruptError{Segment: segmentName(b), Reason: reason +
				"; its format version cannot be read, so it is not cut (it may be a newer version's): move it away to salvage the rest"}
		}
		return false, nil
	}
	if _, err := f.Write(fixed); err != nil {
		return false, err
	}
	return true, f.Sync()
}

func allZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// segmentIDs returns the identities the segments' intact version 2
// headers carry: what a header whose identity is damaged may be mended
// with.
func segmentIDs(fsys vfs.FS, dir string, bases []uint64) []ID {
	var ids []ID
	for _, b := range bases {
		sf, err := openSegment(fsys, dir, b)
		if err != nil {
			continue
		}
		sf.f.Close()
		if sf.hdr.version >= 2 && !slices.Contains(ids, sf.hdr.id) {
			ids = append(ids, sf.hdr.id)
		}
	}
	return ids
}

// rewriteSeal cuts the segment at path at off, where its damaged seal
// starts, and writes the seal naming succ there.
func rewriteSeal(fsys vfs.FS, path string, off int64, succ uint64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(off)
	if err == nil {
		_, err = f.Write(appendSeal(nil, succ))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// damagedSeal reports whether the bytes of f from off to its end (size)
// are the seal naming succ with a few bytes damaged (at most 8 differ: a
// record of the same size but another seq, checksums and payload differs
// in more).
func damagedSeal(f io.ReaderAt, size, off int64, succ uint64) bool {
	if size-off != sealSize {
		return false
	}
	b := make([]byte, sealSize)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return false
	}
	diff := 0
	for i, c := range appendSeal(nil, succ) {
		if b[i] != c {
			diff++
		}
	}
	return diff <= 8
}
