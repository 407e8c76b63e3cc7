package engine

import (
	"context"
	"errors"
	"fmt"
	"go.mongodb.org/mongo-driver/v2/bson"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
)

// FullDocument says which documents a change stream's events carry
// (ChangeStreamOptions.FullDocument and FullDocumentBeforeChange), with
// the values of MongoDB's fullDocument and fullDocumentBeforeChange
// options.
type FullDocument string

// The FullDocument values.
const (
	// FullDocumentDefault (or ""): FullDocument for insert and replace
	// events only. Not valid for FullDocumentBeforeChange.
	FullDocumentDefault FullDocument = "default"
	// FullDocumentUpdateLookup: FullDocument for update events too. ttldb
	// gives the document as the update left it (MongoDB looks it up
	// later, and may return a later version, or none).
	FullDocumentUpdateLookup FullDocument = "updateLookup"
	// FullDocumentWhenAvailable: the document when the op has it. For
	// FullDocument, the same as FullDocumentUpdateLookup (post-images are
	// always available); for FullDocumentBeforeChange, the pre-image when
	// the op kept one.
	FullDocumentWhenAvailable FullDocument = "whenAvailable"
	// FullDocumentRequired: as FullDocumentWhenAvailable, but an update,
	// replace or delete without a pre-image ends the stream with
	// ErrNoPreImage (FullDocumentBeforeChange only; for FullDocument it
	// is FullDocumentUpdateLookup).
	FullDocumentRequired FullDocument = "required"
	// FullDocumentOff (or ""): no pre-images. FullDocumentBeforeChange
	// only.
	FullDocumentOff FullDocument = "off"
)

// ChangeStreamOptions configures Watch. The zero value watches every
// insert, update, replace, delete and drop from the next write on, with
// MongoDB's default documents. Given several, the later ones' set fields
// win.
type ChangeStreamOptions struct {
	// OperationTypes, if not empty, keeps only events of these types
	// (the others are skipped without being built). Naming an expanded
	// type (create, createIndexes, dropIndexes, modify) shows it. An
	// unknown type is ErrInvalidOptions.
	OperationTypes []OperationType
	// Collections, if not empty, keeps only events of these collections:
	// DB.Watch only (a Collection's stream watches its own;
	// ErrInvalidOptions there).
	Collections []string
	// ShowExpandedEvents shows the events of collection and index
	// creation, index drops and CollMod (MongoDB's showExpandedEvents).
	ShowExpandedEvents bool

	// FullDocument: FullDocumentDefault ("") or FullDocumentUpdateLookup
	// (also WhenAvailable, Required: the same) to have update events
	// carry the updated document.
	FullDocument FullDocument
	// FullDocumentBeforeChange: FullDocumentOff (""),
	// FullDocumentWhenAvailable or FullDocumentRequired. While a stream
	// asks for pre-images, every write keeps the previous version of
	// each document it changes or deletes in its op (a copy, retained
	// with the op in the buffer); ops committed before Watch returned have
	// none unless ChangeStreamBufferOptions.PreImages is set. Watch then
	// waits for the writes under way to commit (it takes each
	// collection's write lock once), so that every op after the stream's
	// start carries its pre-images.
	FullDocumentBeforeChange FullDocument

	// ResumeAfter starts the stream just after the event whose ID (or
	// the stream's ResumeToken) it is, and the zero token at the start of
	// the DB's history. The token's op must still be in the change-stream
	// buffer or, on a DB opened WithDir, in its log (which keeps what
	// WithLogRetention says, across restarts), else Watch fails with
	// ErrChangeStreamHistoryLost, whose message says why; a token ahead
	// of the DB's history (on a DB with a Replicator: of its committed
	// history, e.g. a replica that has not applied the token's op yet) is
	// ErrInvalidOptions. Nil: start with the next write.
	ResumeAfter *ResumeToken
	// StartAfter is ResumeAfter (MongoDB's startAfter differs only after
	// an invalidate event, which ttldb never sends). Setting both is
	// ErrInvalidOptions.
	StartAfter *ResumeToken

	// MaxLag is how many ops the stream may fall behind the newest op
	// before it ends with ErrChangeStreamLagged: 1 to the buffer's Size.
	// 0 means, on an in-memory DB, the buffer's Size, so that the stream
	// ends only when the buffer overwrote its next op (and
	// ErrChangeStreamHistoryLost matches too); on a DB opened WithDir, no
	// limit: a stream the buffer left behind reads its ops from the log,
	// and ends only if the log's retention dropped its next op. A smaller
	// MaxLag ends a slow stream while its next op is still retained:
	// resumed at once from the error's token, it misses nothing. A
	// resumed stream (ResumeAfter, StartAfter) counts its lag from the
	// newest op at Watch: the backlog it resumes into is not held against
	// it, only the ops committed after Watch that it has not read; and it
	// reads its first event whatever its lag. A resume from a lag error's
	// token with the same MaxLag thus always moves on, and with writers
	// at rest delivers the whole backlog.
	MaxLag int

	// BatchSize is how many ops a Next that has nothing to return lets
	// the writers commit before it wakes: 1 to the buffer's Size; 0 means
	// 1 (wake at the next commit, the lowest latency). Waking a sleeping
	// stream costs the writer that commits (a goroutine to make runnable);
	// with the default, a stream that keeps up with a busy writer spins
	// briefly instead of sleeping (see Next) and costs it nothing. A
	// BatchSize above 1 never spins: it sleeps until n ops are ready, at
	// the price of latency up to MaxAwaitTime, for writes too sparse to
	// keep a stream spinning. Ops, not events: one op may hold many
	// events.
	BatchSize int
	// Name, if set, names the stream in Metrics().ChangeStreams.Streams
	// (and the prom collector's per-stream series): at most
	// MaxStreamNameLen bytes of UTF-8. Unnamed streams count only in the
	// DB-wide figures, so that the set of series stays what the user
	// chose.
	Name string
	// MaxAwaitTime bounds, with BatchSize above 1, how long Next waits
	// for a batch to fill (by the DB's clock): then it returns what is
	// there, or the next op as soon as one comes. 0 means
	// DefaultMaxAwaitTime; negative is ErrInvalidOptions.
	MaxAwaitTime time.Duration
}

// DefaultMaxAwaitTime is ChangeStreamOptions.MaxAwaitTime's default.
const DefaultMaxAwaitTime = 10 * time.Millisecond

func mergeChangeStreamOptions(opts []ChangeStreamOptions) ChangeStreamOptions {
	var o ChangeStreamOptions
	for _, x := range opts {
		if x.OperationTypes != nil {
			o.OperationTypes = x.OperationTypes
		}
		if x.Collections != nil {
			o.Collections = x.Collections
		}
		if x.ShowExpandedEvents {
			o.ShowExpandedEvents = true
		}
		if x.FullDocument != "" {
			o.FullDocument = x.FullDocument
		}
		if x.FullDocumentBeforeChange != "" {
			o.FullDocumentBeforeChange = x.FullDocumentBeforeChange
		}
		if x.ResumeAfter != nil {
			o.ResumeAfter = x.ResumeAfter
		}
		if x.StartAfter != nil {
			o.StartAfter = x.StartAfter
		}
		if x.MaxLag != 0 {
			o.MaxLag = x.MaxLag
		}
		if x.BatchSize != 0 {
			o.BatchSize = x.BatchSize
		}
		if x.MaxAwaitTime != 0 {
			o.MaxAwaitTime = x.MaxAwaitTime
		}
		if x.Name != "" {
			o.Name = x.Name
		}
	}
	return o
}

// ChangeStream delivers a DB's or a collection's change events in commit
// order, as the MongoDB driver's change stream does: loop on Next, read
// each event with Event or Decode, check Err after the loop, Close when
// done.
//
// A stream reads the DB's change-stream buffer at its own place and never
// holds a lock a writer needs: a slow stream never delays writers or the
// TTL monitor. One that falls more than MaxLag ops behind ends with a
// *ChangeStreamLagError. A stream holds no goroutine and nothing to free
// but its pre-image request: an unclosed stream leaks nothing once
// unreachable, though it keeps writes copying pre-images if it asked for
// them.
//
// On a DB opened WithDir a stream delivers an op only once the log holds
// it as durably as the sync policy promises (fsynced under SyncAlways,
// written to the operating system under the others), so that a crash of
// the process never takes back an event a consumer saw (under SyncAlways,
// neither does a power cut); an op the buffer no longer holds, or never
// held (a token saved before a restart), is read from the log. On a DB
// with a Replicator a stream delivers only committed ops, as MongoDB's
// deliver only majority-committed changes: a local write's events wait
// until the replicator marks its ops committed (DB.MarkCommitted); ops
// applied with DB.Apply are delivered at once. A write that fails to
// replicate is never delivered, so a resume token names a place in the
// replicated history, the same op on every replica.
//
// A ChangeStream is for one goroutine at a time, except Close, which may
// be called from any goroutine, also while Next waits.
type ChangeStream struct {
	db  *DB
	buf *changeBuffer

	// The filters: a mask of operationTypes bits, the collections (nil:
	// all).
	types    uint16
	colls    []string
	fullDoc  bool
	expanded bool // ShowExpandedEvents: also DisambiguatedPaths
	before   FullDocument
	maxLag   uint64
	// batch and maxAwait: ChangeStreamOptions.BatchSize and MaxAwaitTime.
	batch    int
	maxAwait time.Duration
	wait     waitState // whether Next spins before it parks (changebuffer.go)

	// The place: op is the op being read (nil between ops), idx its next
	// event, n its event count; next is the Seq of the op after it.
	// skip is the first event to read of op next, from a ResumeAfter
	// token in the middle of an op.
	op   *Op
	idx  int
	n    int
	next uint64
	skip int
	// base is the head when a resumed stream started (0 otherwise): the
	// backlog up to it is the stream's to read at its own pace, and only
	// the ops committed after it count toward MaxLag. mustRead is set
	// until the resumed stream has reached an op it keeps, which it reads
	// whatever the lag: each resume from a lag error's token moves on.
	base     uint64
	mustRead bool

	// tail is the stream's place in the log, when it reads its ops there
	// (changestream_log.go).
	tail streamTail
	// pipe is the stream's pipeline (nil: none), cur the current event
	// as the pipeline left it (changepipeline.go).
	pipe *changePipeline
	cur  Document
	// stat is what the stream publishes for Metrics
	// (changestream_metrics.go): its place as of pubNext, and events,
	// the events it delivered.
	stat    *streamStat
	pubNext uint64
	events  int64

	ev   ChangeEvent
	has  bool   // ev holds the event Next returned
	keys []byte // where DocumentKeys are cut from (changeevent.go)
	err  error

	closed    atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	preImages bool // counted in the committer's pre-image requests
}

// ChangeStreamLagError ends a change stream that fell behind (it matches
// ErrChangeStreamLagged). Resume is the token to resume from
// (ChangeStreamOptions.ResumeAfter, with the same MaxLag or another): the
// place after the last event the stream returned or skipped. The resumed
// stream reads on from there (see MaxLag). When Lost is set, neither the
// buffer nor the log (on a DB opened WithDir) held the next op any more,
// and the error matches ErrChangeStreamHistoryLost too: resuming fails,
// events were lost.
type ChangeStreamLagError struct {
	Resume ResumeToken
	// Behind is how many ops had been committed after Resume when the
	// stream ended.
	Behind uint64
	Lost   bool
}

// Error says how far behind the stream was.
func (e *ChangeStreamLagError) Error() string {
	if e.Lost {
		return fmt.Sprintf("ttldb: change stream fell behind by %d ops: history lost after %s", e.Behind, e.Resume)
	}
	return fmt.Sprintf("ttldb: change stream fell behind by %d ops; resume after %s", e.Behind, e.Resume)
}

// Unwrap lets errors.Is match ErrChangeStreamLagged, and
// ErrChangeStreamHistoryLost when Lost.
func (e *ChangeStreamLagError) Unwrap() []error {
	if e.Lost {
		return []error{ErrChangeStreamLagged, ErrChangeStreamHistoryLost}
	}
	return []error{ErrChangeStreamLagged}
}

// Watch implements ttldb.DB.Watch, whose documentation is the contract.
func (db *DB) Watch(ctx context.Context, pipeline any, opts ...ChangeStreamOptions) (*ChangeStream, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	if err := db.refuseTxn(ctx, "Watch"); err != nil {
		return nil, err
	}
	return db.watch(ctx, pipeline, mergeChangeStreamOptions(opts))
}

// Watch implements ttldb.Collection.Watch, whose documentation is the contract.
func (c *Collection) Watch(ctx context.Context, pipeline any, opts ...ChangeStreamOptions) (*ChangeStream, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := c.db.refuseTxn(ctx, "Watch"); err != nil {
		return nil, err
	}
	o := mergeChangeStreamOptions(opts)
	if len(o.Collections) > 0 {
		return nil, fmt.Errorf("%w: Watch: Collections is for DB.Watch; collection %q watches its own", ErrInvalidOptions, c.name)
	}
	o.Collections = []string{c.name}
	return c.db.watch(ctx, pipeline, o)
}

func (db *DB) watch(ctx context.Context, pipeline any, o ChangeStreamOptions) (*ChangeStream, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	cs := &ChangeStream{db: db, done: make(chan struct{}), before: FullDocumentOff}
	if err := cs.setOptions(o); err != nil {
		return nil, err
	}
	if err := checkStreamName(o.Name); err != nil {
		return nil, err
	}
	pipe, err := compileChangePipeline(pipeline, db.clock.Now())
	if err != nil {
		return nil, err
	}
	cs.pipe = pipe
	size := uint64(db.cfg.changes.Size)
	if size == 0 {
		size = DefaultChangeStreamBufferSize
	}
	switch {
	case o.MaxLag < 0 || uint64(o.MaxLag) > size:
		return nil, fmt.Errorf("%w: Watch: MaxLag %d is outside 0..%d (the change-stream buffer's size)", ErrInvalidOptions, o.MaxLag, size)
	case o.MaxLag == 0 && db.persist != nil:
		cs.maxLag = noLagLimit // the log holds what the buffer lost
	case o.MaxLag == 0:
		cs.maxLag = size
	default:
		cs.maxLag = uint64(o.MaxLag)
	}
	switch {
	case o.BatchSize < 0 || uint64(o.BatchSize) > size:
		return nil, fmt.Errorf("%w: Watch: BatchSize %d is outside 0..%d (the change-stream buffer's size)", ErrInvalidOptions, o.BatchSize, size)
	case o.MaxAwaitTime < 0:
		return nil, fmt.Errorf("%w: Watch: negative MaxAwaitTime %v", ErrInvalidOptions, o.MaxAwaitTime)
	}
	cs.batch, cs.maxAwait = max(o.BatchSize, 1), o.MaxAwaitTime
	if cs.maxAwait == 0 {
		cs.maxAwait = DefaultMaxAwaitTime
	}
	resume := o.ResumeAfter
	if resume == nil {
		resume = o.StartAfter
	}
	var start ResumeToken
	if resume != nil {
		start = *resume
		if start.Seq == 0 {
			start = ResumeToken{Seq: 1}
		}
	}
	buf, err := db.changes(resume != nil, start)
	if err != nil {
		return nil, err
	}
	cs.buf = buf
	if cs.before != FullDocumentOff {
		db.ops.requestPreImages(true)
		cs.preImages = true
		db.preImageBarrier()
	}
	head := buf.head.Load()
	// A replicated DB's buffer attached now may start past its head: the
	// stream then waits until the ops before it are committed.
	cs.next = max(head+1, buf.first)
	if resume != nil {
		if err := db.checkResume(buf, start, head); err != nil {
			cs.Close(context.Background())
			return nil, fmt.Errorf("Watch: %w", err)
		}
		cs.next, cs.skip = start.Seq, int(start.Index)
		cs.base, cs.mustRead = head, true
	}
	cs.register(o.Name)
	return cs, nil
}

// setOptions checks o and sets the stream's filters from it.
func (cs *ChangeStream) setOptions(o ChangeStreamOptions) error {
	if o.ResumeAfter != nil && o.StartAfter != nil {
		return fmt.Errorf("%w: Watch: ResumeAfter and StartAfter both set", ErrInvalidOptions)
	}
	cs.types = 1<<len(operationTypes) - 1
	cs.expanded = o.ShowExpandedEvents
	if !o.ShowExpandedEvents {
		cs.types &^= expandedTypes
	}
	if len(o.OperationTypes) > 0 {
		cs.types = 0
		for _, t := range o.OperationTypes {
			bit := typeBit(t)
			if bit == 0 {
				return fmt.Errorf("%w: Watch: unknown operation type %q", ErrInvalidOptions, t)
			}
			cs.types |= bit
		}
	}
	for _, c := range o.Collections {
		if err := validateCollectionName(c); err != nil {
			return fmt.Errorf("Watch: %w", err)
		}
	}
	cs.colls = slices.Clone(o.Collections)
	switch o.FullDocument {
	case "", FullDocumentDefault:
	case FullDocumentUpdateLookup, FullDocumentWhenAvailable, FullDocumentRequired:
		cs.fullDoc = true
	default:
		return fmt.Errorf("%w: Watch: FullDocument %q", ErrInvalidOptions, o.FullDocument)
	}
	switch o.FullDocumentBeforeChange {
	case "", FullDocumentOff:
	case FullDocumentWhenAvailable, FullDocumentRequired:
		cs.before = o.FullDocumentBeforeChange
	default:
		return fmt.Errorf("%w: Watch: FullDocumentBeforeChange %q", ErrInvalidOptions, o.FullDocumentBeforeChange)
	}
	return nil
}

// wants reports whether the stream keeps op's events.
func (cs *ChangeStream) wants(op *Op) bool {
	if cs.types&typeBit(kindType(op.Kind)) == 0 {
		return false
	}
	return cs.colls == nil || slices.Contains(cs.colls, op.Collection)
}

// Next implements ttldb.ChangeStream.Next, whose documentation is the contract.
func (cs *ChangeStream) Next(ctx context.Context) bool { return cs.published(cs.advance(ctx, true)) }

// TryNext implements ttldb.ChangeStream.TryNext, whose documentation is the contract.
func (cs *ChangeStream) TryNext(ctx context.Context) bool {
	return cs.published(cs.advance(ctx, false))
}

// published stores the stream's place and event count for Metrics after
// a Next, and returns ok. It stores them when the place moved to another
// op only: a few nanoseconds per op, nothing per event (the count a
// Metrics call reads is at most one op's events behind).
func (cs *ChangeStream) published(ok bool) bool {
	if ok {
		cs.events++
	}
	next := cs.next
	if cs.op != nil && cs.idx < cs.n {
		next = cs.op.Seq // the op under way is not read yet
	}
	if next != cs.pubNext {
		cs.pubNext = next
		cs.stat.next.Store(next)
		cs.stat.events.Store(cs.events)
	}
	return ok
}

func (cs *ChangeStream) advance(ctx context.Context, wait bool) bool {
	if ctx == nil {
		ctx = context.Background()
	}
	cs.has = false
	if cs.err != nil {
		if !isContextError(cs.err) {
			return false
		}
		cs.err = nil
	}
	for {
		switch {
		case cs.closed.Load():
			return false
		case cs.db.closed.Load():
			cs.err = ErrClosed
			return false
		}
		if err := ctx.Err(); err != nil {
			cs.err = err
			return false
		}
		if cs.op != nil {
			if cs.idx < cs.n {
				i := cs.idx
				cs.idx++
				if err := cs.eventOf(&cs.ev, cs.op, i); err != nil {
					cs.idx--
					cs.err = err
					return false
				}
				if cs.pipe != nil {
					out, keep, err := cs.pipe.apply(cs.ev.document())
					if err != nil {
						cs.idx--
						cs.err = err
						return false
					}
					if !keep {
						continue
					}
					cs.cur = out
				}
				cs.has = true
				return true
			}
			cs.op = nil
		}
		head := cs.buf.head.Load()
		if head < cs.next {
			if !wait {
				if cs.buf.failed != nil {
					select {
					case <-cs.buf.failed: // the gate will not move again
						cs.err = cs.buf.failure()
						return false
					default:
					}
				}
				if cs.buf.hurry != nil && cs.buf.appended.Load() >= cs.next {
					cs.buf.hurry() // for the next TryNext
				}
				return false
			}
			if err := cs.buf.waitFor(ctx, cs.next, cs.batch, cs.maxAwait, cs.db.clock, cs.done, &cs.wait); err != nil {
				if !errors.Is(err, errStreamClosed) {
					cs.err = err
				}
				return false
			}
			continue
		}
		// The lag counts the ops committed after the later of the
		// stream's place and its resumption (base): a stream resumed
		// behind by more than MaxLag reads its backlog unless writers
		// add more than MaxLag ops meanwhile, and reads its first op in
		// any case.
		if behind := head - max(cs.next-1, cs.base); behind > cs.maxLag && !cs.mustRead {
			cs.err = &ChangeStreamLagError{Resume: cs.ResumeToken(), Behind: head - cs.next + 1, Lost: !cs.retains(cs.next)}
			return false
		}
		op := cs.buf.load(cs.next)
		if op == nil {
			var err error
			if op, err = cs.fromLog(); err != nil {
				cs.err = err
				return false
			}
		} else if cs.tail.r != nil {
			cs.tail = streamTail{} // back in the buffer
		}
		if op == nil {
			cs.err = &ChangeStreamLagError{Resume: cs.ResumeToken(), Behind: cs.buf.head.Load() - cs.next + 1, Lost: true}
			return false
		}
		cs.next++
		skip := cs.skip
		cs.skip = 0
		if !cs.wants(op) {
			continue
		}
		cs.op, cs.idx, cs.n = op, skip, eventCount(op)
		cs.mustRead = false
	}
}

// isContextError reports whether err is a context's: a stream keeps its
// place after one, and the next Next goes on.
func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Event implements ttldb.ChangeStream.Event, whose documentation is the contract.
func (cs *ChangeStream) Event() ChangeEvent {
	if !cs.has {
		return ChangeEvent{}
	}
	return cs.ev
}

// Decode implements ttldb.ChangeStream.Decode, whose documentation is the contract.
func (cs *ChangeStream) Decode(v any) error {
	if !cs.has {
		return fmt.Errorf("%w: Decode: no current change event", ErrNotFound)
	}
	doc := cs.cur
	if cs.pipe == nil {
		doc = cs.ev.document()
	}
	if p, ok := v.(*Document); ok && p != nil {
		*p = doc
		return nil
	}
	enc, err := codec.Encode(doc, nil)
	if err != nil {
		return err
	}
	return codec.DecodeIntoWith(enc, v, cs.db.cfg.bson)
}

// Current implements ttldb.ChangeStream.Current, whose documentation is the contract.
func (cs *ChangeStream) Current() RawDocument {
	if !cs.has {
		return nil
	}
	doc := cs.cur
	if cs.pipe == nil {
		doc = cs.ev.document()
	}
	enc, err := codec.Encode(doc, nil)
	if err != nil {
		return nil // an event's document always encodes
	}
	return RawDocument(enc)
}

// Err implements ttldb.ChangeStream.Err, whose documentation is the contract.
func (cs *ChangeStream) Err() error { return cs.err }

// ResumeToken implements ttldb.ChangeStream.ResumeToken, whose documentation is the contract.
func (cs *ChangeStream) ResumeToken() ResumeToken {
	if cs.op != nil {
		if cs.idx >= cs.n {
			return ResumeToken{Seq: cs.op.Seq + 1}
		}
		return ResumeToken{Seq: cs.op.Seq, Index: uint32(cs.idx)}
	}
	return ResumeToken{Seq: cs.next, Index: uint32(cs.skip)}
}

// Close implements ttldb.ChangeStream.Close, whose documentation is the contract.
func (cs *ChangeStream) Close(ctx context.Context) error {
	cs.closeOnce.Do(func() {
		cs.closed.Store(true)
		close(cs.done)
		if cs.preImages {
			cs.db.ops.requestPreImages(false)
		}
		cs.db.streams.remove(cs.stat)
	})
	return nil
}

// document returns the event as MongoDB's driver sees it, with Go values.
func (e *ChangeEvent) document() Document {
	d := Document{
		"_id":           Document{"_data": e.ID.String()},
		"operationType": string(e.OperationType),
		"clusterTime":   e.ClusterTime,
		"wallTime":      e.WallTime,
		"ns":            Document{"coll": e.Ns.Coll},
	}
	if !e.Txn.IsZero() {
		d["lsid"] = Document{"id": bson.Binary{Subtype: bson.TypeBinaryUUID, Data: e.Txn.LSID[:]}}
		d["txnNumber"] = e.Txn.Number
	}
	raw := func(name string, r RawDocument) {
		if r != nil {
			d[name] = r.Document()
		}
	}
	raw("documentKey", e.DocumentKey)
	raw("fullDocument", e.FullDocument)
	raw("fullDocumentBeforeChange", e.FullDocumentBeforeChange)
	raw("operationDescription", e.OperationDescription)
	if u := e.UpdateDescription; u != nil {
		removed := make([]any, len(u.RemovedFields))
		for i, f := range u.RemovedFields {
			removed[i] = f
		}
		truncated := make([]any, len(u.TruncatedArrays))
		for i, a := range u.TruncatedArrays {
			truncated[i] = Document{"field": a.Field, "newSize": a.NewSize}
		}
		ud := Document{"updatedFields": u.UpdatedFields, "removedFields": removed, "truncatedArrays": truncated}
		if u.DisambiguatedPaths != nil {
			ud["disambiguatedPaths"] = u.DisambiguatedPaths
		}
		d["updateDescription"] = ud
	}
	if e.Expired {
		d["expired"] = true
		d["cutoff"] = e.Cutoff
	}
	if e.Index != "" {
		d["index"] = e.Index
	}
	return d
}
