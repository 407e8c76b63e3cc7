package engine

import (
	"context"
	"fmt"
	"io"
	"iter"
	"reflect"
	"slices"
	"time"

	"github.com/ttldb/ttldb/internal/aggregate"
	"github.com/ttldb/ttldb/internal/codec"
)

// cursorBatch is how many documents a Cursor returns per hold of the
// collection's read lock, and cursorExamine how many it examines at most
// per hold (a filter that matches few documents must not hold the lock for
// a whole collection scan either).
const (
	cursorBatch   = 256
	cursorExamine = 4096
)

// Cursor streams the results of Find. It reads them in batches: each
// batch holds the collection's read lock while it examines at most 4,096
// documents and gathers at most 256 results, then releases it, so no lock
// is held while the caller handles a result, and writers (and the TTL
// monitor) go on between batches.
//
// What a cursor sees of writes made while it is open: each document is
// returned as it was when its batch was read (a later update of it does
// not change the copy returned). A document inserted, updated, deleted or
// expired during the iteration may or may not be returned, depending on
// whether the walk has passed its place; it is returned at most once, even
// if an update moves it along the index being walked (an in-place update
// keeps its identity; a document deleted and inserted again is a new
// document and may be returned again). With a sort that no index gives, or
// on a time-series collection, Find reads every result under one read-lock
// hold (with Sort and Limit, keeping only Skip+Limit of them) and the cursor
// returns that snapshot. If the collection is dropped, the iteration ends
// (Err is nil); if the index it walks is dropped, it ends with an error
// matching ErrNotFound.
//
// A Cursor is for one goroutine. Close releases what it holds (the
// documents of its current batch); a cursor read to the end, or whose
// All or Documents has returned, is closed already. An open cursor holds
// no lock and no goroutine: dropping it unclosed leaks nothing.
type Cursor struct {
	s    *collState // nil: every result is in batch
	q    *findQuery
	p    *plan
	from *scanPos
	// seen holds the insertion seq of every document returned by an
	// index walk that spans batches, so that a document an update moves
	// ahead of the walk is not returned twice.
	seen  map[uint64]struct{}
	skip  int // results still to skip
	left  int // results still to return (-1: no limit)
	batch []cursorDoc
	next  int
	cur   cursorDoc
	done  bool // no batch is left to read
	err   error
	opts  codec.DecodeOptions // the DB's WithBSONOptions
	// now, if not zero, is the expiry cutoff of every batch (an
	// aggregation's one instant); zero: the clock's time at each batch.
	now time.Time
	// src, if not nil, is an aggregation's output: batches are pulled
	// from it (pull), and srcRun's memory is given back when it ends.
	src     aggregate.Stream
	srcRun  *aggRun
	srcName string
}

// cursorDoc is one result: its stored encoding (which never changes) and,
// if a filter or projection already decoded it, the document.
type cursorDoc struct {
	enc []byte
	doc Document
	seq uint64
}

// Next implements ttldb.Cursor.Next, whose documentation is the contract.
func (cur *Cursor) Next(ctx context.Context) bool {
	for {
		if cur.err != nil {
			return false
		}
		if cur.next < len(cur.batch) {
			cur.cur = cur.batch[cur.next]
			cur.batch[cur.next] = cursorDoc{}
			cur.next++
			return true
		}
		if cur.src != nil {
			if cur.pull(ctx); cur.next < len(cur.batch) {
				continue
			}
			cur.close()
			return false
		}
		if cur.done || cur.s == nil {
			cur.close()
			return false
		}
		if err := checkCtx(ctx); err != nil {
			cur.err = ctxError(cur.s.name, err)
			cur.close()
			return false
		}
		cur.fetch(ctx)
	}
}

// fetch reads the next batch under one hold of the read lock.
func (cur *Cursor) fetch(ctx context.Context) {
	s, q := cur.s, cur.q
	cur.batch, cur.next = cur.batch[:0], 0
	s.rlock()
	if s.dropped {
		s.mu.RUnlock()
		cur.done = true
		return
	}
	if cur.p.ix != nil && !slices.Contains(s.indexes, cur.p.ix) {
		s.mu.RUnlock()
		cur.err = fmt.Errorf("%w: collection %q: index %q dropped while a cursor walked it", ErrNotFound, s.name, cur.p.ix.name)
		return
	}
	q.ctx, q.err, q.from, q.budget, q.paused = ctx, nil, cur.from, cursorExamine, false
	full := false
	now := cur.now
	if now.IsZero() {
		now = s.db.clock.Now()
	}
	s.execute(cur.p, q, now, func(r *docRef) bool {
		if cur.seen != nil {
			if _, dup := cur.seen[r.rec.seq]; dup {
				return true
			}
		}
		if cur.skip > 0 {
			cur.skip--
			cur.remember(r.rec.seq)
			return true
		}
		cur.batch = append(cur.batch, cursorDoc{enc: r.rec.enc, doc: r.doc, seq: r.rec.seq})
		if cur.left > 0 {
			if cur.left--; cur.left == 0 {
				return false // the walk is done: q.paused stays false
			}
		}
		if len(cur.batch) == cursorBatch {
			full = true
			return false
		}
		return true
	})
	s.mu.RUnlock()
	if q.err != nil {
		cur.err = ctxError(s.name, q.err)
		return
	}
	at := q.at
	cur.from = &at
	cur.done = !full && !q.paused
	if !cur.done && cur.p.ix != nil {
		// The walk goes on in a later batch: remember what it returned.
		if cur.seen == nil {
			cur.seen = map[uint64]struct{}{}
		}
		for _, d := range cur.batch {
			cur.seen[d.seq] = struct{}{}
		}
	}
	if proj := q.proj; proj != nil {
		for i := range cur.batch {
			d := &cur.batch[i]
			if d.doc == nil {
				d.doc = codec.Decode(d.enc)
			}
			d.doc, d.enc = proj.Apply(d.doc), nil
		}
	}
}

// pull reads the next batch of an aggregation's output (at most
// cursorBatch documents); at its end (or error) the source is let go.
func (cur *Cursor) pull(ctx context.Context) {
	cur.batch, cur.next = cur.batch[:0], 0
	for len(cur.batch) < cursorBatch {
		if err := checkCtx(ctx); err != nil {
			cur.err = ctxError(cur.srcName, err)
			break
		}
		d, err := cur.src.Next(ctx)
		if err != nil {
			cur.err = fmt.Errorf("collection %q: Aggregate: %w", cur.srcName, err)
			break
		}
		if d == nil {
			break
		}
		cur.batch = append(cur.batch, cursorDoc{doc: d})
	}
	if cur.err != nil || len(cur.batch) < cursorBatch {
		cur.src = nil
		cur.srcRun.release()
		cur.done = true
	}
}

// remember notes a skipped document of an index walk that may span
// batches, so that it is not counted again if an update moves it ahead.
func (cur *Cursor) remember(seq uint64) {
	if cur.p != nil && cur.p.ix != nil {
		if cur.seen == nil {
			cur.seen = map[uint64]struct{}{}
		}
		cur.seen[seq] = struct{}{}
	}
}

// Decode implements ttldb.Cursor.Decode, whose documentation is the contract.
func (cur *Cursor) Decode(v any) error {
	return cur.cur.decode(v, cur.opts)
}

func (d *cursorDoc) decode(v any, opts codec.DecodeOptions) error {
	if d.enc == nil && d.doc == nil {
		return fmt.Errorf("%w: the cursor has no current document (call Next first)", ErrInvalidOptions)
	}
	enc := d.enc
	if enc == nil {
		var err error
		if enc, err = codec.Encode(d.doc, nil); err != nil {
			return err
		}
	}
	return codec.DecodeIntoWith(enc, v, opts)
}

// Document implements ttldb.Cursor.Document, whose documentation is the contract.
func (cur *Cursor) Document() (Document, error) {
	d := cur.cur
	switch {
	case d.doc != nil:
		cur.cur.doc = nil // the caller owns it now: a second call decodes anew
		if d.enc == nil {
			cur.cur.enc, _ = codec.Encode(d.doc, nil)
		}
		return d.doc, nil
	case d.enc != nil:
		return codec.Decode(d.enc), nil
	}
	return nil, fmt.Errorf("%w: the cursor has no current document (call Next first)", ErrInvalidOptions)
}

// Err implements ttldb.Cursor.Err, whose documentation is the contract.
func (cur *Cursor) Err() error { return cur.err }

// Close implements ttldb.Cursor.Close, whose documentation is the contract.
func (cur *Cursor) Close(ctx context.Context) error {
	cur.close()
	return cur.err
}

func (cur *Cursor) close() {
	if c, ok := cur.src.(io.Closer); ok {
		_ = c.Close() // the stages give back what they hold
	}
	if cur.srcRun != nil {
		cur.srcRun.release()
	}
	cur.src = nil
	cur.done = true
	cur.batch, cur.next, cur.cur, cur.seen, cur.s = nil, 0, cursorDoc{}, nil, nil
}

// All implements ttldb.Cursor.All, whose documentation is the contract.
func (cur *Cursor) All(ctx context.Context, results any) error {
	defer cur.close()
	if docs, ok := results.(*[]Document); ok {
		*docs = (*docs)[:0]
		for cur.Next(ctx) {
			d, err := cur.Document()
			if err != nil {
				return err
			}
			*docs = append(*docs, d)
		}
		return cur.err
	}
	rv := reflect.ValueOf(results)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("%w: All needs a non-nil pointer to a slice, not %T", ErrDecode, results)
	}
	sl := rv.Elem()
	sl.SetLen(0)
	et := sl.Type().Elem()
	for i := 0; cur.Next(ctx); i++ {
		if i < sl.Cap() {
			sl.SetLen(i + 1)
		} else {
			sl.Set(reflect.Append(sl, reflect.Zero(et)))
		}
		el := sl.Index(i)
		dst := el.Addr()
		switch et.Kind() {
		case reflect.Pointer:
			el.Set(reflect.New(et.Elem())) // never the caller's old pointee
			dst = el
		case reflect.Map:
			el.Set(reflect.Zero(et)) // a new map, not the old element's
		}
		if err := cur.Decode(dst.Interface()); err != nil {
			sl.SetLen(i)
			return err
		}
	}
	return cur.err
}

// Documents implements ttldb.Cursor.Documents, whose documentation is the contract.
func (cur *Cursor) Documents(ctx context.Context) iter.Seq2[Document, error] {
	return func(yield func(Document, error) bool) {
		defer cur.close()
		for cur.Next(ctx) {
			d, err := cur.Document()
			if !yield(d, err) || err != nil {
				return
			}
		}
		if cur.err != nil {
			yield(nil, cur.err)
		}
	}
}

// Decoded implements ttldb.Decoded, whose documentation is the contract.
func Decoded[T any](ctx context.Context, cur *Cursor) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		defer cur.close()
		for cur.Next(ctx) {
			var v T
			err := cur.Decode(&v)
			if !yield(v, err) || err != nil {
				return
			}
		}
		if cur.err != nil {
			var zero T
			yield(zero, cur.err)
		}
	}
}

// docsCursor is a cursor over results already read.
func docsCursor(docs []Document) *Cursor {
	batch := make([]cursorDoc, len(docs))
	for i, d := range docs {
		batch[i] = cursorDoc{doc: d}
	}
	return &Cursor{batch: batch, done: true}
}
