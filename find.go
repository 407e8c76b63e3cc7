package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// Distinct returns the distinct values of field (a dotted path) among the
// documents matching filter (nil or empty: all), as MongoDB's distinct
// command does: a document whose field holds an array contributes each of
// its elements (an element that is itself an array stays whole); a path
// through an array of documents reaches the field in each; a document
// without the field contributes nothing, one whose field is null
// contributes null. Values are distinct by BSON equality, so 1, int64(1)
// and 1.0 are one value (the first met is returned), and the result is in
// BSON order (numbers before strings before documents …), as the server
// returns it (it gathers values in a set ordered by BSON comparison).
//
// It examines every matching document under one hold of the read lock,
// decoding only the field's top-level part of each; ctx stops it (looked
// at every 256 documents examined) with an error matching ctx.Err().
// Errors: ErrInvalidOptions (an invalid path), ErrInvalidFilter,
// ErrClosed, ctx's error.
func (c *Collection) Distinct(ctx context.Context, field string, filter any) ([]any, error) {
	return (*engine.Collection)(c).Distinct(ctx, field, filter)
}

// EstimatedDocumentCount returns how many documents the collection holds,
// from a count kept up to date by every write: O(1), whatever the size,
// holding the read lock only to read it. It counts every stored document,
// including expired ones that HideExpired hides from reads but the
// monitor has not deleted yet (as MongoDB's count from metadata counts
// what is stored); CountDocuments(ctx, nil) counts what reads see. On a
// time-series collection it counts measurements. A missing collection
// holds 0.
func (c *Collection) EstimatedDocumentCount(ctx context.Context) (int64, error) {
	return (*engine.Collection)(c).EstimatedDocumentCount(ctx)
}

// FindOptions adjusts Find, FindOne and Explain. The zero value returns
// every matching document, whole, in natural (insertion) order.
type FindOptions = engine.FindOptions

// Find returns a cursor over the documents matching filter (nil or empty:
// all), sorted, skipped, limited and projected as opts say. The cursor
// streams: it reads the results in batches of at most 256 (see Cursor for
// what it sees of concurrent writes), so Find(ctx, nil) over a million
// documents holds 256 of them at a time, not a million. Read it with Next
// and Decode, with All, or with a range loop over Documents or Decoded.
//
// ctx stops Find and every batch the cursor reads afterwards is stopped by
// the ctx given to Next: done, they return an error matching ctx.Err(),
// looked at every 256 documents examined. A sort no index gives is done in
// memory when Find is called (O(Skip+Limit) memory with a Limit, all
// matches without one), under one hold of the read lock. Errors:
// ErrInvalidFilter, ErrInvalidOptions, ErrClosed, ctx's error.
func (c *Collection) Find(ctx context.Context, filter any, opts ...FindOptions) (*Cursor, error) {
	cursor, err := (*engine.Collection)(c).Find(ctx, filter, opts...)
	return (*Cursor)(cursor), err
}

// FindOne finds the first document Find would return. Its result holds
// the document, read with Decode (into a struct, a map, a bson.D, a
// Document…) or Document, or the error (ErrNoDocuments, the same sentinel
// as ErrNotFound, when nothing matches), read with Err or by either of
// those: c.FindOne(ctx, f).Decode(&v), as with the driver. filter is a
// document as the driver takes it (Document, bson.D, bson.M, bson.Raw; nil:
// all). FindOne by _id ({_id: v}, a Document) reads the _id
// table without planning and allocates nothing beyond what decoding needs.
func (c *Collection) FindOne(ctx context.Context, filter any, opts ...FindOptions) SingleResult {
	return SingleResult((*engine.Collection)(c).FindOne(ctx, filter, opts...))
}

// Collation is the driver's options.Collation. ttldb compares strings by
// their UTF-8 bytes (MongoDB's "simple" collation): an option's Collation
// must be nil or &Collation{Locale: "simple"}; any other is refused with
// ErrInvalidOptions, and the call reads and changes nothing.
type Collation = engine.Collation

// CountOptions adjusts CountDocuments: Skip, Limit and Hint, as the
// driver's options.
type CountOptions = engine.CountOptions

// CountDocuments returns how many documents match filter (nil or empty:
// all, hidden expired documents left out), less Skip and at most Limit
// (CountOptions, as MongoDB counts them). It examines every matching
// document (or, with an empty filter, every document; with a Limit, no
// more than Skip+Limit) under one hold of the read lock; ctx stops it
// (looked at every 256 documents examined), and it then returns an error
// matching ctx.Err(). For the size of a collection in O(1), see
// EstimatedDocumentCount.
func (c *Collection) CountDocuments(ctx context.Context, filter any, opts ...CountOptions) (int64, error) {
	return (*engine.Collection)(c).CountDocuments(ctx, filter, opts...)
}

// Explanation describes how Find would run a query, with counts from
// actually running it (MongoDB's explain "executionStats", in brief).
type Explanation = engine.Explanation

// Explain runs the query as Find would and reports the plan and its counts.
func (c *Collection) Explain(ctx context.Context, filter any, opts ...FindOptions) (Explanation, error) {
	return (*engine.Collection)(c).Explain(ctx, filter, opts...)
}
