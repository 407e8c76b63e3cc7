package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// Collection is a handle on a named collection of a DB. It is cheap to make
// (DB.Collection) and safe for concurrent use. See DB.Collection for how it
// relates to the collection's existence.
type Collection engine.Collection

// Name returns the collection's name.
func (c *Collection) Name() string {
	return (*engine.Collection)(c).Name()
}

// CollectionOptions configures CreateCollection. The zero value is an
// ordinary collection.
type CollectionOptions = engine.CollectionOptions

// Compact rebuilds the collection's storage and indexes from the documents
// it holds. The store reclaims mostly-dead memory as new documents come, but
// a deletion alone (a TTL mass expiry) leaves chunks partly dead, Go maps
// keep their memory after deletes and B-trees keep half-empty nodes:
// Compact copies the live documents into fresh memory, densely, and lets
// the rest go back to the garbage collector, as MongoDB's compact returns
// disk space. It needs memory for a second copy while it runs. Writers
// wait during the rebuild; readers do not (they see the old copy until the
// new one is published).
func (c *Collection) Compact(ctx context.Context) error {
	return (*engine.Collection)(c).Compact(ctx)
}

// SingleResult is the outcome of FindOne: one document, or the error that
// kept it (ErrNotFound when nothing matched). Read it with Decode or
// Document; each returns the error if there is one. It is a small value
// made for one read, safe to copy; it holds the document, not a lock.
type SingleResult engine.SingleResult

// Err returns the error FindOne met (nil if it found a document).
func (r SingleResult) Err() error {
	return engine.SingleResult(r).Err()
}

// Decode decodes the document into v, a non-nil pointer to a struct, a
// map with string keys or an interface (see Document for how a struct's
// fields are named). A map[string]any (or Document) v points to is
// cleared and refilled (the caller's map is reused); a struct is set to
// its zero value and filled from the document's fields; fields the
// destination does not name are ignored. Numbers convert between kinds
// when the value fits exactly (int64(5) into an int8; 5.5 into an int is
// an error); dates come back in UTC; null sets the zero value (nil for a
// pointer, slice or map).
//
// It returns FindOne's error if there is one, else a *DecodeError
// (wrapping ErrDecode, naming the field) for a value that does not fit
// its destination, and then v is unchanged. It allocates only what v
// needs: nothing for a struct's numbers, bools, dates and ObjectIDs, one
// allocation per string, and a new array, map or value for each slice,
// map or pointer (never reusing what v's old value pointed to, which the
// caller may still hold).
func (r SingleResult) Decode(v any) error {
	return engine.SingleResult(r).Decode(v)
}

// Document returns the document (a copy the caller owns), or FindOne's
// error. Calling it twice on one result may return the same map.
func (r SingleResult) Document() (Document, error) {
	return engine.SingleResult(r).Document()
}

// DecodeError reports a stored value that does not fit the destination
// given to Decode, with the dotted path to it (Path) and why (Reason). It
// wraps ErrDecode.
type DecodeError = engine.DecodeError

// DuplicateKeyError reports a write refused because of a unique index. It
// wraps ErrDuplicateKey.
type DuplicateKeyError = engine.DuplicateKeyError

// InsertOneResult is what InsertOne did, as the driver's: InsertedID is
// the document's _id (its own, or the ObjectID generated for it).
type InsertOneResult = engine.InsertOneResult

// InsertManyResult is what InsertMany did, as the driver's: InsertedIDs
// are the _ids of the documents inserted, in order.
type InsertManyResult = engine.InsertManyResult

// InsertManyOptions adjusts InsertMany: Ordered (nil: true) as the
// driver's option.
type InsertManyOptions = engine.InsertManyOptions

// InsertOne stores a copy of doc and returns its _id in the result,
// generating an ObjectID if doc has none (doc itself is not changed). doc
// is a Document (map[string]any), another map with string keys, a struct,
// a bson.D, a bson.Raw, a bson.Marshaler or a non-nil pointer to one (see
// Document for how a struct is stored; a struct's _id field left out by
// omitempty, nil, or missing counts as none, and the generated _id is not
// written back into the struct). It fails, storing nothing, with
// ErrInvalidDocument, ErrValidation or ErrDuplicateKey; a ctx already done
// is its error (context.Canceled, context.DeadlineExceeded), and nothing
// is stored.
func (c *Collection) InsertOne(ctx context.Context, doc any) (*InsertOneResult, error) {
	return (*engine.Collection)(c).InsertOne(ctx, doc)
}

// InsertMany stores copies of docs and returns their _id values in order.
// docs is a slice of documents of any form InsertOne takes: []Document,
// []any, []bson.D, []User, []*User… (nil: none).
//
// Ordered (the default, InsertManyOptions.Ordered nil or true) is atomic:
// if any document is invalid, fails validation or would duplicate a key
// (in the collection or within docs), nothing is stored and the error is
// a *BulkWriteError naming that document's index (the first invalid
// document if any is, else the first that fails validation or a key). (The driver's ordered
// insert keeps the documents before the failing one; ttldb's keeps none,
// so that a failed call changes nothing.) Unordered (Ordered false)
// inserts every document that can be inserted and reports each one that
// cannot, with its index, in a *BulkWriteError; the result lists the _ids
// inserted. errors.Is matches the documents' errors (ErrDuplicateKey,
// ErrInvalidDocument…). A ctx already done is its error, and nothing is
// stored.
func (c *Collection) InsertMany(ctx context.Context, docs any, opts ...InsertManyOptions) (*InsertManyResult, error) {
	return (*engine.Collection)(c).InsertMany(ctx, docs, opts...)
}

// UpdateOptions adjusts UpdateOne, UpdateMany and ReplaceOne, with the
// driver's option names: Upsert, Hint (an index's name or keys: see
// FindOptions.Hint) and Sort (UpdateOne and ReplaceOne: the first match in
// that order is the one written).
type UpdateOptions = engine.UpdateOptions

// UpdateResult says what an update did, as the driver's: MatchedCount,
// ModifiedCount, UpsertedCount (0 or 1) and UpsertedID.
type UpdateResult = engine.UpdateResult

// DeleteOptions adjusts DeleteOne and DeleteMany: Hint, as
// FindOptions.Hint.
type DeleteOptions = engine.DeleteOptions

// DeleteResult says what a delete did, as the driver's: DeletedCount.
type DeleteResult = engine.DeleteResult

// UpdateOne applies update ($set, $unset, $inc, $mul, $min, $max, $rename,
// $currentDate, $setOnInsert, $push, $addToSet, $pull, $pop, with MongoDB's
// semantics; $setOnInsert only when an upsert inserts; paths through
// "$[]" and "$[id]" with UpdateOptions.ArrayFilters) to the first
// document matching filter (in the order Find would return without sort).
// $currentDate writes the DB clock's time: it is how an application keeps a
// document alive under a TTL index. filter and update are documents as the
// driver takes them: Document, bson.D, bson.M or bson.Raw (struct values
// go inside one). Errors (ErrInvalidFilter, ErrInvalidUpdate, ErrInvalidOptions,
// ErrImmutableID, ErrValidation, ErrDuplicateKey, a done ctx's) change
// nothing.
func (c *Collection) UpdateOne(ctx context.Context, filter, update any, opts ...UpdateOptions) (*UpdateResult, error) {
	return (*engine.Collection)(c).UpdateOne(ctx, filter, update, opts...)
}

// UpdateMany is UpdateOne for every matching document. It is atomic: if any
// document cannot be updated, none is. ctx stops it while it finds and
// prepares the documents (it looks every 256 documents): cancelled or past
// its deadline, UpdateMany changes nothing and returns an error matching
// ctx.Err() (context.Canceled, context.DeadlineExceeded). Once the prepared
// changes are being applied (under the collection's write lock, a step
// that does no matching, encoding nor validation) it no longer stops. The
// collection's writers wait for it from start to end; readers only while
// the changes are applied.
func (c *Collection) UpdateMany(ctx context.Context, filter, update any, opts ...UpdateOptions) (*UpdateResult, error) {
	return (*engine.Collection)(c).UpdateMany(ctx, filter, update, opts...)
}

// ReplaceOne replaces the first document matching filter with a copy of
// replacement, keeping its _id (a replacement that names another _id fails
// with ErrImmutableID). replacement is a document of any form InsertOne
// takes (a struct's _id left out by omitempty, or nil, keeps the stored
// one). With Upsert and no match, it inserts the replacement. A
// replacement with a top-level field that starts with '$' reads as an
// update and is refused (ErrInvalidUpdate), as the driver refuses one.
func (c *Collection) ReplaceOne(ctx context.Context, filter any, replacement any, opts ...UpdateOptions) (*UpdateResult, error) {
	return (*engine.Collection)(c).ReplaceOne(ctx, filter, replacement, opts...)
}

// DeleteOne deletes the first document matching filter and reports how many
// it deleted (0 or 1). A ctx already done is its error, and nothing is
// deleted.
func (c *Collection) DeleteOne(ctx context.Context, filter any, opts ...DeleteOptions) (*DeleteResult, error) {
	return (*engine.Collection)(c).DeleteOne(ctx, filter, opts...)
}

// DeleteMany deletes every document matching filter and reports how many.
// It is atomic: ctx stops it while it finds the documents (it looks every
// 256 documents examined, and once more just before deleting); cancelled
// or past its deadline, it deletes nothing and returns an error matching
// ctx.Err(). The deletion itself, under the write lock, does not stop.
func (c *Collection) DeleteMany(ctx context.Context, filter any, opts ...DeleteOptions) (*DeleteResult, error) {
	return (*engine.Collection)(c).DeleteMany(ctx, filter, opts...)
}
