package ttldb

import (
	"context"
	"iter"

	"github.com/ttldb/ttldb/internal/engine"
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
type Cursor engine.Cursor

// Next moves to the next result, reading the next batch when needed, and
// reports whether there is one. It returns false at the end, on an error
// (see Err) and once ctx is done (Err then matches ctx.Err()); a nil ctx
// never stops it.
func (cur *Cursor) Next(ctx context.Context) bool {
	return (*engine.Cursor)(cur).Next(ctx)
}

// Decode decodes the current result (the one Next moved to) into v, with
// SingleResult.Decode's rules: a struct, a map (cleared and refilled) or
// an interface; ErrDecode (a *DecodeError naming the field) if a value
// does not fit, leaving v unchanged. Decoding into a struct or a reused
// map allocates only what v needs (its strings, slices, maps, pointers),
// nothing per result otherwise.
func (cur *Cursor) Decode(v any) error {
	return (*engine.Cursor)(cur).Decode(v)
}

// Document returns the current result as a new Document the caller owns.
func (cur *Cursor) Document() (Document, error) {
	return (*engine.Cursor)(cur).Document()
}

// Err returns the error that ended the iteration, if any: a context's
// error (matching context.Canceled or context.DeadlineExceeded), or
// ErrNotFound if the index the cursor walked was dropped.
func (cur *Cursor) Err() error {
	return (*engine.Cursor)(cur).Err()
}

// Close ends the iteration and releases the cursor's current batch. It is
// safe to call more than once, and returns Err().
func (cur *Cursor) Close(ctx context.Context) error {
	return (*engine.Cursor)(cur).Close(ctx)
}

// All decodes every remaining result into the slice results points to,
// then closes the cursor. results is a pointer to a slice of structs,
// pointers to structs, maps or Documents (for example *[]User or
// *[]ttldb.Document); the slice is truncated to length 0 and appended to,
// so its array is reused when large enough. On an error (ctx done, a value
// that does not fit) it returns the error and the slice holds the results
// decoded before it.
func (cur *Cursor) All(ctx context.Context, results any) error {
	return (*engine.Cursor)(cur).All(ctx, results)
}

// Documents returns the remaining results as an iterator of (Document,
// error) pairs for a range loop; the cursor is closed when the loop ends,
// whether by the end of the results, a break or an error. An error (ctx
// done) comes as the last pair, with a nil Document.
//
//	for doc, err := range cur.Documents(ctx) { … }
func (cur *Cursor) Documents(ctx context.Context) iter.Seq2[Document, error] {
	return (*engine.Cursor)(cur).Documents(ctx)
}

// Decoded returns the remaining results of cur decoded into values of
// type T (a struct, a map or a Document), as an iterator of (T, error)
// pairs for a range loop; the cursor is closed when the loop ends. A
// value that does not fit T yields its *DecodeError and ends the loop.
//
//	for u, err := range ttldb.Decoded[User](ctx, cur) { … }
func Decoded[T any](ctx context.Context, cur *Cursor) iter.Seq2[T, error] {
	return engine.Decoded[T](ctx, (*engine.Cursor)(cur))
}
