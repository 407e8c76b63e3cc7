package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// ReturnDocument says which version of the document FindOneAndUpdate and
// FindOneAndReplace return.
type ReturnDocument = engine.ReturnDocument

const (
	// Before returns the document as it was before the write (the
	// default, as in the MongoDB driver).
	Before = engine.Before
	// After returns the document as the write left it (the inserted one
	// for an upsert).
	After = engine.After
)

// FindOneAndUpdateOptions adjusts FindOneAndUpdate. The zero value updates
// the first match in natural order and returns it as it was before.
type FindOneAndUpdateOptions = engine.FindOneAndUpdateOptions

// FindOneAndReplaceOptions adjusts FindOneAndReplace: the fields of
// FindOneAndUpdateOptions, except that Upsert inserts the replacement
// (with the filter's _id if it names one and the replacement does not).
type FindOneAndReplaceOptions = engine.FindOneAndReplaceOptions

// FindOneAndDeleteOptions adjusts FindOneAndDelete: Sort picks which
// matching document is deleted, Projection shapes the one returned.
type FindOneAndDeleteOptions = engine.FindOneAndDeleteOptions

// FindOneAndUpdate applies update (the operators UpdateOne takes) to the
// first document matching filter (in opts.Sort's order, else natural
// order) and returns it, before or after the update as opts.ReturnDocument
// says, as a SingleResult (Decode into a struct or map, or Document).
//
// Finding and writing are one step: the collection's write path is held
// from the match to the commit, so no other writer and no TTL deletion
// comes in between. A session refreshed with $currentDate is either
// refreshed (and then not deleted for its old date) or already deleted
// (ErrNotFound): it is never brought back. With HideExpired, a document
// past its threshold is not matched, as for any read: refreshing an
// expired session fails with ErrNotFound, or with Upsert inserts a new
// document (the expired one is deleted first, as the monitor would, see
// CollectionOptions.HideExpired); it is never revived.
//
// The result's error is ErrNotFound when nothing matches (and no upsert
// inserted, or it did with ReturnDocument Before); ErrInvalidFilter,
// ErrInvalidUpdate, ErrInvalidOptions, ErrImmutableID, ErrValidation,
// ErrDuplicateKey, ErrMemoryLimit and ErrTimeSeries change nothing. Cost:
// one UpdateOne and, with an unindexed Sort, one read of every match.
func (c *Collection) FindOneAndUpdate(ctx context.Context, filter, update any, opts ...FindOneAndUpdateOptions) SingleResult {
	return SingleResult((*engine.Collection)(c).FindOneAndUpdate(ctx, filter, update, opts...))
}

// FindOneAndReplace replaces the first document matching filter (in
// opts.Sort's order, else natural order) with a copy of replacement,
// keeping its _id as ReplaceOne does, and returns it before or after as
// opts.ReturnDocument says. replacement is a document of any form
// InsertOne takes. Atomicity, HideExpired, upsert and errors are as for
// FindOneAndUpdate.
func (c *Collection) FindOneAndReplace(ctx context.Context, filter any, replacement any, opts ...FindOneAndReplaceOptions) SingleResult {
	return SingleResult((*engine.Collection)(c).FindOneAndReplace(ctx, filter, replacement, opts...))
}

// FindOneAndDelete deletes the first document matching filter (in
// opts.Sort's order, else natural order) and returns it as it was. It is
// one step with respect to other writers and the TTL monitor, as
// FindOneAndUpdate. The result's error is ErrNotFound when nothing matches
// (with HideExpired, an expired document does not match: the monitor
// deletes it, with its hooks); ErrInvalidFilter, ErrInvalidOptions and
// ErrTimeSeries change nothing.
func (c *Collection) FindOneAndDelete(ctx context.Context, filter any, opts ...FindOneAndDeleteOptions) SingleResult {
	return SingleResult((*engine.Collection)(c).FindOneAndDelete(ctx, filter, opts...))
}
