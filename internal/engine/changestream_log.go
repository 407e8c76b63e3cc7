package engine

import (
	"errors"
	"fmt"

	"github.com/ttldb/ttldb/internal/wal"
)

// A change stream reads its ops from the change-stream buffer while the
// buffer holds them, and from the log of a DB opened WithDir when it does
// not: a stream resumed from a token older than the buffer's first op (a
// token saved before a restart), or one the ring overtook. The log holds
// every op the stream may deliver (the buffer publishes none the log does
// not hold: durable before delivered), back to what the retention kept
// (retention.go). Ops read from the log are the ops the writes committed,
// byte for byte: their events are those a live stream gave, FullDocument
// and pre-images included (a pre-image is there when a stream, or
// ChangeStreamBufferOptions.PreImages, asked for pre-images when the op
// was committed).

// tailRecords is how many log records a stream reads at a time: under
// SyncAlways a record is one write's ops, under the other policies the
// ops of up to 10 ms of writes.
const tailRecords = 64

// streamTail is a stream's place in the log.
type streamTail struct {
	r    *wal.Reader
	next uint64 // the op the reader goes on with
	ops  []Op   // ops read, from ops[i] on not yet delivered
	i    int
}

// fromLog returns op cs.next, read from the log, or nil if the DB has no
// log or the log does not hold it. The caller has seen the buffer's head
// at or past cs.next.
func (cs *ChangeStream) fromLog() (*Op, error) {
	p := cs.db.persist
	if p == nil {
		return nil, nil
	}
	t := &cs.tail
	for {
		for t.i < len(t.ops) && t.ops[t.i].Seq < cs.next {
			t.i++
		}
		if t.i < len(t.ops) {
			op := &t.ops[t.i]
			if op.Seq != cs.next {
				return nil, nil // a gap: the caller reports the history lost
			}
			t.i++
			return op, nil
		}
		if t.r == nil || t.next != cs.next {
			t.r, t.next = p.log.NewReader(cs.next), cs.next
		}
		// cs.op is nil here (the stream finished its op): the ops may be
		// reused. Their documents are copies, which events keep.
		t.ops, t.i = t.ops[:0], 0
		n, err := t.r.Read(tailRecords, func(_ uint64, payload []byte) error {
			return decodeRecord(payload, func(uint64) {}, func(op Op) error {
				if op.Seq >= cs.next {
					t.ops = append(t.ops, op)
				}
				return nil
			})
		})
		if len(t.ops) > 0 {
			t.next = t.ops[len(t.ops)-1].Seq + 1
		}
		if err != nil {
			t.r = nil
			if errors.Is(err, wal.ErrTruncated) {
				return nil, fmt.Errorf("%w: change stream at %s: %w", ErrChangeStreamHistoryLost, cs.ResumeToken(), p.retentionLoss(cs.next))
			}
			return nil, fmt.Errorf("change stream at %s: reading the log: %w", cs.ResumeToken(), err)
		}
		if n == 0 {
			return nil, nil
		}
	}
}

// retentionLoss explains why op seq is no longer in the log.
func (p *persistence) retentionLoss(seq uint64) error {
	first, _ := p.retained()
	return fmt.Errorf("the DB retains its history from op %d on, and op %d left the log under its retention (WithLogRetention), not because of a restart", first, seq)
}

// checkResume checks that a stream can start at token t (normalized:
// Seq >= 1), given buffer b and its head: ErrInvalidOptions for a token
// ahead of the history, ErrChangeStreamHistoryLost for one that neither
// the buffer nor the log holds, saying why.
func (db *DB) checkResume(b *changeBuffer, t ResumeToken, head uint64) error {
	if t.Seq > head+1 || t.Seq == head+1 && t.Index > 0 {
		return fmt.Errorf("%w: resume token %s is ahead of the DB's history (last op %d)", ErrInvalidOptions, t, head)
	}
	oldest := b.oldest(head)
	if t.Seq >= oldest {
		return nil
	}
	if p := db.persist; p != nil {
		// What the sink holds goes to the log first: the log's first op
		// is then known even before its writer goroutine wrote anything.
		if err := p.sink.flush(p.sink.pendingSeq.Load()); err != nil {
			return err
		}
		first, _ := p.retained()
		if t.Seq >= first {
			return nil
		}
		return fmt.Errorf("%w: resume token %s: the DB retains its history from op %d on: older ops left the log under its retention (WithLogRetention; a restart loses nothing), or predate the data directory (WithRestore starts a new history)", ErrChangeStreamHistoryLost, t, first)
	}
	if oldest > head {
		return fmt.Errorf("%w: resume token %s: the change-stream buffer holds no op before %d (an in-memory DB keeps only its buffer's window)", ErrChangeStreamHistoryLost, t, head+1)
	}
	return fmt.Errorf("%w: resume token %s: the change-stream buffer holds ops %d to %d (an in-memory DB keeps only its buffer's window)", ErrChangeStreamHistoryLost, t, oldest, head)
}

// noLagLimit is a stream's MaxLag on a DB with a log, unless set: the
// stream reads from the log what the buffer no longer holds, and ends
// only when the log's retention dropped its next op.
const noLagLimit = ^uint64(0)

// retains reports whether op seq is still in the buffer or the log.
func (cs *ChangeStream) retains(seq uint64) bool {
	if cs.buf.load(seq) != nil {
		return true
	}
	if p := cs.db.persist; p != nil {
		first, _ := p.retained()
		return seq >= first
	}
	return false
}
