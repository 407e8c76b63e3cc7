package engine

import (
	"context"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	snapfile "github.com/ttldb/ttldb/internal/snapshot"
)

// How a snapshot is taken while readers and writers go on (the format and
// the argument for its consistency are in docs/FORMAT.md):
//
// A sink (opCapture) is attached to the committer and the last sequence
// number read in one step: every op after it is captured. Each collection
// is then copied in natural order, snapshotChunk documents per hold of its
// read lock; the records' bytes never change once stored, so they are
// written to the file with no lock held. The copy of a collection stops at
// the newest document it held when the walk reached it: later inserts are
// in the captured ops. Writers thus wait at most for one chunk's copy of
// record references (microseconds), never for the file.
//
// The copied documents mix states between the first and the last captured
// op; loading applies the captured ops to them idempotently (restore.go),
// which converges because every op carries full results. A copy-on-write
// freeze of the store and trees would give an exact state without replay,
// but writers would pay for it on every change during a snapshot, and
// every structure (chunks, slot table, B-trees) would need versions.

// snapshotChunk is how many documents the walk copies per hold of a
// collection's read lock: about 50 µs of work. A variable for tests.
var snapshotChunk = 1024

// snapshotPause is the walk's pause between two chunks. A walk that never
// leaves its core takes a writer's core from it on 2 cores: measured in
// bench/ (-durable, the snapshot trial) on a 2-core machine with other
// load, writers' p99 went from 1-4 ms to 20-40 ms during a walk with no
// pause, and stayed within 1-2.5x of it with this one, the walk of 1M
// documents then taking about 0.6 s instead of 0.1 s. It is a real pause,
// not the DB clock's: it paces the use of the processor and measures
// nothing, so a fake clock must not stop it.
var snapshotPause = 20 * time.Microsecond

// snapshotChunkHook, a test hook (nil outside tests), runs after each
// chunk of the walk, with no lock held.
var snapshotChunkHook func()

// opCapture is the sink that keeps the ops committed while a snapshot is
// taken, in their binary form (copied as the sink contract asks; encoding
// is about as cheap as copying).
type opCapture struct {
	mu sync.Mutex
	// ops are the captured ops' binary forms, in order, each a slice of
	// a block: blocks are sized for what goes in them and never grow, so
	// that capturing copies each op once (one growing buffer copied the
	// whole capture again at every doubling: a tenth of a mass insert's
	// time while a snapshot ran, in its profile).
	ops   [][]byte
	block []byte // the block being filled
	err   error
	// natFrom is, by collection name, the lowest insertion sequence a
	// captured write may have given a document: the walk copies only
	// the documents below it (walkEnd). A document both copied and
	// inserted by a captured op would be deleted and appended again by
	// the replay of the ops before it, out of its place in natural order.
	natFrom map[string]uint64
}

// noteWriteStart records where the inserts of the write whose ops follow
// begin in its collection's natural order (committer.handOn).
func (c *opCapture) noteWriteStart(collection string, nextSeq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lowerNatFrom(collection, nextSeq)
}

// lowerNatFrom lowers natFrom[collection] to seq. Call holding mu.
func (c *opCapture) lowerNatFrom(collection string, seq uint64) {
	if c.natFrom == nil {
		c.natFrom = map[string]uint64{}
	}
	if cur, ok := c.natFrom[collection]; !ok || seq < cur {
		c.natFrom[collection] = seq
	}
}

// walkEnd returns the last insertion sequence the walk copies from s, of
// which next is the nextSeq: every document a captured write inserted
// comes from the ops, never from the walk. Call holding s.writeMu, so
// that no write of s is between its change and its commit.
func (c *opCapture) walkEnd(name string, next uint64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if from, ok := c.natFrom[name]; ok && from < next {
		next = from
	}
	return next - 1
}

// captureBlock is the size of an opCapture block (an op larger than it
// gets a block of its own).
const captureBlock = 1 << 20

// copiesOps: appendOps encodes the ops into its blocks (opCopier).
func (c *opCapture) copiesOps() {}

func (c *opCapture) appendOps(ops []Op) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, op := range ops {
		if need := op.binarySize(); cap(c.block)-len(c.block) < need {
			c.block = make([]byte, 0, max(captureBlock, need))
		}
		at := len(c.block)
		b, err := op.AppendBinary(c.block) // within cap: binarySize bounds it
		if err != nil {
			if c.err == nil {
				c.err = fmt.Errorf("op %d: %w", op.Seq, err)
			}
			continue
		}
		c.block = b
		c.ops = append(c.ops, b[at:len(b):len(b)])
		if op.Kind == OpCreateCollection {
			// A collection created meanwhile: its documents all come
			// from the ops.
			c.lowerNatFrom(op.Collection, 1)
		}
	}
}

// snapshotInfo describes a snapshot written.
type snapshotInfo struct {
	startSeq, endSeq uint64
	ops              uint64
	bytes            int64
}

// writeSnapshot writes a snapshot of the DB to w (see the comment at the
// top). It holds no DB lock while it writes to w.
func (db *DB) writeSnapshot(w io.Writer) (snapshotInfo, error) {
	return db.writeSnapshotAbortable(w, nil)
}

// writeSnapshotAbortable is writeSnapshot giving up, with
// errSnapshotClosing, once abort is closed (nil: never).
func (db *DB) writeSnapshotAbortable(w io.Writer, abort <-chan struct{}) (snapshotInfo, error) {
	capture := &opCapture{}
	start := db.ops.attach(capture)
	detached := false
	defer func() {
		if !detached {
			db.ops.detach(capture)
		}
	}()
	// Writes that began before the capture was attached, when no sink was
	// (an in-memory DB), record no op: wait for them to end, so that every
	// change after start is either captured or already visible to the walk.
	// Each decides under its collection's writeMu (beginOps) or db.mu
	// (collection creation).
	db.mu.Lock()
	//lint:ignore SA2001 an empty critical section: waiting is the point
	db.mu.Unlock()
	colls := db.snapshotCollections()
	for _, s := range colls {
		s.writeMu.Lock()
		//lint:ignore SA2001 as above
		s.writeMu.Unlock()
	}

	// The DB-wide state is read after start: as of start or later, and
	// the captured ops set it again from there (ttlpause.go).
	h := snapfile.Header{StartSeq: start, Created: db.clock.Now().UnixNano(), State: dbState(db.ttlPaused.Load())}
	if p := db.persist; p != nil {
		h.ID = p.id // a Backup carries it too: WithRestore gives the copy a new one
	}
	sw, err := snapfile.NewWriter(w, h)
	if err != nil {
		return snapshotInfo{}, err
	}
	for i, s := range colls {
		if err := s.writeTo(sw, uint32(i), capture, abort); err != nil {
			return snapshotInfo{}, err
		}
	}
	end := db.ops.detach(capture)
	detached = true
	maxVer := db.writes.Load()
	if capture.err != nil {
		return snapshotInfo{}, capture.err
	}
	for _, op := range capture.ops {
		if err := sw.Op(op); err != nil {
			return snapshotInfo{}, err
		}
	}
	if err := sw.Close(snapfile.Trailer{EndSeq: end, MaxVersion: maxVer}); err != nil {
		return snapshotInfo{}, err
	}
	info := snapshotInfo{startSeq: start, endSeq: end, ops: uint64(len(capture.ops)), bytes: sw.Size()}
	return info, nil
}

// snapDoc is a document the walk copied: its version and its stored
// bytes (immutable).
type snapDoc struct {
	ver uint64
	enc []byte
}

// writeTo writes the collection's definition and documents to sw as
// collection id.
func (s *collState) writeTo(sw *snapfile.Writer, id uint32, capture *opCapture, abort <-chan struct{}) error {
	if s.ts != nil {
		return s.tsWriteTo(sw, id) // tssnapshot.go
	}
	s.writeMu.Lock()
	s.mu.RLock()
	if s.dropped {
		s.mu.RUnlock()
		s.writeMu.Unlock()
		return nil // its drop is among the captured ops
	}
	c := snapfile.Collection{ID: id, Name: s.name, Spec: collectionSpec(s.opts)}
	var multikey []any
	for _, ix := range s.indexes {
		c.Indexes = append(c.Indexes, indexSpecDoc(ix.model()))
		if ix.multikey {
			multikey = append(multikey, ix.name)
		}
	}
	c.State = collectionState(multikey, nil, s.ttlPaused.Load())
	// The newest document's insertion sequence that no captured write
	// gave: what a captured write inserted comes from its op alone.
	last := capture.walkEnd(s.name, s.nextSeq)
	c.Docs = uint64(s.natural.Len())
	s.mu.RUnlock()
	s.writeMu.Unlock()
	if err := sw.Collection(c); err != nil {
		return err
	}
	batch := make([]snapDoc, 0, snapshotChunk)
	from := uint64(1)
	for {
		batch = batch[:0]
		s.mu.RLock()
		if !s.dropped {
			s.natural.AscendGreaterOrEqual(natItem{seq: from}, func(it natItem) bool {
				if it.seq > last || len(batch) == snapshotChunk {
					return false
				}
				r := s.rec(it.slot)
				batch = append(batch, snapDoc{ver: r.ver, enc: r.enc})
				from = it.seq + 1
				return true
			})
		}
		s.mu.RUnlock()
		if snapshotChunkHook != nil {
			snapshotChunkHook()
		}
		// Leave the processor between chunks (see snapshotPause).
		time.Sleep(snapshotPause)
		for _, d := range batch {
			if err := sw.Doc(id, d.ver, d.enc); err != nil {
				return err
			}
		}
		if len(batch) < snapshotChunk {
			return nil
		}
		select {
		case <-abort:
			return errSnapshotClosing
		default:
		}
	}
}

// Backup implements ttldb.DB.Backup, whose documentation is the contract.
func (db *DB) Backup(ctx context.Context, w io.Writer) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if w == nil {
		return fmt.Errorf("%w: Backup: nil writer", ErrInvalidOptions)
	}
	_, err := db.writeSnapshot(w)
	return err
}

// collectionState encodes a collection block's state document: the names
// of the multikey indexes, a time-series collection's current expiry (-1:
// off; nil: not a time-series collection), and whether its TTL deletion
// is paused (written only when it is).
func collectionState(multikey []any, tsExpire *int64, ttlPaused bool) []byte {
	d := Document{}
	if len(multikey) > 0 {
		d["multikey"] = multikey
	}
	if ttlPaused {
		d["ttlPaused"] = true
	}
	if tsExpire != nil {
		d["expireAfterSeconds"] = *tsExpire
	}
	if len(d) == 0 {
		return nil
	}
	enc, err := codec.Encode(d, nil)
	if err != nil {
		panic("ttldb: internal error: collection state does not encode: " + err.Error())
	}
	return enc
}

// parseCollectionState reads collectionState's document.
func parseCollectionState(b []byte) (multikey map[string]bool, tsExpire *int64, ttlPaused bool, err error) {
	if len(b) == 0 {
		return nil, nil, false, nil
	}
	if err := codec.Validate(b); err != nil {
		return nil, nil, false, err
	}
	d := codec.Decode(b)
	for k, v := range d {
		switch k {
		case "multikey":
			names, ok := v.([]any)
			if !ok {
				return nil, nil, false, fmt.Errorf("state field multikey: a %T", v)
			}
			multikey = map[string]bool{}
			for _, n := range names {
				name, ok := n.(string)
				if !ok {
					return nil, nil, false, fmt.Errorf("state field multikey: an element is a %T", n)
				}
				multikey[name] = true
			}
		case "expireAfterSeconds":
			e, ok := v.(int64)
			if !ok || e < -1 || e > math.MaxInt32 {
				return nil, nil, false, fmt.Errorf("state field expireAfterSeconds: %v", v)
			}
			tsExpire = &e
		case "ttlPaused":
			p, ok := v.(bool)
			if !ok {
				return nil, nil, false, fmt.Errorf("state field ttlPaused: a %T", v)
			}
			ttlPaused = p
		default:
			return nil, nil, false, fmt.Errorf("unknown state field %q", k)
		}
	}
	return multikey, tsExpire, ttlPaused, nil
}
