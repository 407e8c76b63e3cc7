package engine

import (
	"errors"
	"fmt"
	"time"
)

// LogRetention says how much of its log a DB opened WithDir keeps once a
// snapshot no longer needs it, so that change streams can resume from it
// across restarts (MongoDB's oplog window: oplogSizeMB and
// oplogMinRetentionHours). Recovery never needs these segments: they are
// kept for change streams only. The zero value means the defaults.
//
// The log keeps whole segments (64 MiB each), oldest dropped first, at
// each snapshot: a segment the snapshot covers stays while the log,
// counted from its newest segment back to this one, is at most Bytes, or
// while the segment after it began less than Age ago (by the DB's clock,
// from the first op of that next segment): the window is the larger of
// the two, as with MongoDB's minimum retention period. Retained
// segments count in Metrics().Durability.LogSize and RetainedLogBytes,
// not towards the AutoSnapshot trigger, which counts the bytes logged
// since the last snapshot.
type LogRetention struct {
	// Bytes is the log's size, in bytes, up to which segments the last
	// snapshot covers are kept; 0 means DefaultLogRetentionBytes.
	// Negative is ErrInvalidOptions.
	Bytes int64
	// Age keeps, beyond Bytes, every segment whose ops may be younger
	// than Age; 0 keeps none for their age. Negative is
	// ErrInvalidOptions.
	Age time.Duration
	// Disabled drops the log as soon as a snapshot covers it (streams
	// then resume only from ops after the last snapshot, or from the
	// change-stream buffer).
	Disabled bool
}

// DefaultLogRetentionBytes is LogRetention.Bytes' default: 256 MiB of
// log, some four segments.
const DefaultLogRetentionBytes = 256 << 20

// WithLogRetention implements ttldb.WithLogRetention, whose documentation is the contract.
func WithLogRetention(r LogRetention) Option {
	return func(cfg *config) error {
		if r.Bytes < 0 || r.Age < 0 {
			return fmt.Errorf("%w: WithLogRetention: negative Bytes or Age", ErrInvalidOptions)
		}
		if r.Bytes == 0 {
			r.Bytes = DefaultLogRetentionBytes
		}
		cfg.durable.retention = r
		cfg.needsDir = "WithLogRetention"
		return nil
	}
}

// retainFrom returns the seq from which the log is kept after a snapshot
// that holds every op before keep: keep itself, or an earlier segment's
// base that the retention keeps. Called under snapMu.
func (p *persistence) retainFrom(keep uint64) uint64 {
	r := p.cfg.retention
	if r.Disabled {
		return keep
	}
	if r.Bytes == 0 {
		r.Bytes = DefaultLogRetentionBytes
	}
	segs := p.log.SegmentInfos()
	lastSeq := p.log.LastSeq()
	from := keep
	var size int64
	now := p.db.clock.Now()
	for i := len(segs) - 1; i >= 0; i-- {
		size += segs[i].Size
		newest := i+1 == len(segs)
		switch {
		case newest && lastSeq < keep:
			// Every op is covered: TruncateFront(keep) would start a new
			// segment and drop this one. Kept, it stays active.
			if size > r.Bytes && r.Age == 0 {
				return keep
			}
		case newest || segs[i+1].Base > keep:
			continue // the snapshot does not cover it: kept anyway
		default:
			young := r.Age > 0 && now.Sub(p.segmentStart(segs[i+1].Base)) < r.Age
			if size > r.Bytes && !young {
				return p.forgetStarts(from)
			}
		}
		from = segs[i].Base
	}
	return p.forgetStarts(from)
}

// forgetStarts forgets the start times of the segments below from, about
// to go, and returns from.
func (p *persistence) forgetStarts(from uint64) uint64 {
	for base := range p.segStarts {
		if base < from {
			delete(p.segStarts, base)
		}
	}
	return from
}

// segmentStart returns the time of the first op of the segment whose base
// is base (the zero time when it cannot be read: the segment is then
// old), remembered once read. Called under snapMu.
func (p *persistence) segmentStart(base uint64) time.Time {
	if t, ok := p.segStarts[base]; ok {
		return t
	}
	op, ok := p.firstOpFrom(base)
	if !ok {
		return time.Time{}
	}
	t := op.Time
	if p.segStarts == nil {
		p.segStarts = map[uint64]time.Time{}
	}
	p.segStarts[base] = t
	return t
}

// retained returns the first op the log holds (a stream can resume from
// it) and the bytes of the segments kept for change streams only (those
// the last snapshot covers).
func (p *persistence) retained() (first uint64, bytes int64) {
	segs := p.log.SegmentInfos()
	first = p.firstLogged(segs[0].Base)
	covered := p.snapSeq.Load()
	for i := 0; i+1 < len(segs) && segs[i+1].Base <= covered+1; i++ {
		bytes += segs[i].Size
	}
	return first, bytes
}

// firstLogged returns the first op of the log, whose first segment's base
// is base: the first record's (a segment may begin with none: a restored
// DB's log starts empty after ops it never held). With no record yet, the
// op after the last committed. Remembered per base.
func (p *persistence) firstLogged(base uint64) uint64 {
	if c := p.firstOp.Load(); c != nil && c[0] == base {
		return c[1]
	}
	op, ok := p.firstOpFrom(base)
	if !ok {
		return p.db.ops.lastSeq() + 1
	}
	p.firstOp.Store(&[2]uint64{base, op.Seq})
	return op.Seq
}

// firstOpFrom returns the first op of the log's first record at or after
// seq base (the first op of the segment whose base it is), or false when
// there is none or it cannot be read.
func (p *persistence) firstOpFrom(base uint64) (Op, bool) {
	var first Op
	errFound := errors.New("found")
	_, err := p.log.NewReader(base).Read(1, func(_ uint64, payload []byte) error {
		return decodeRecord(payload, func(uint64) {}, func(op Op) error {
			first = op
			return errFound
		})
	})
	return first, errors.Is(err, errFound)
}
