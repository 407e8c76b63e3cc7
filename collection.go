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
func (c *Collection) Compact() error {
	return (*engine.Collection)(c).Compact()
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

// InsertOne stores a copy of doc and returns its _id, generating an
// ObjectID if doc has none (doc itself is not changed). doc is a Document
// (map[string]any), another map with string keys, a struct or a non-nil
// pointer to one (see Document for how a struct is stored; a struct's
// _id field left out by omitempty, nil, or missing counts as none, and the
// generated _id is not written back into the struct). It fails, storing
// nothing, with ErrInvalidDocument, ErrValidation or ErrDuplicateKey.
func (c *Collection) InsertOne(doc any) (any, error) {
	return (*engine.Collection)(c).InsertOne(doc)
}

// InsertMany stores copies of docs and returns their _id values in order.
// docs is a slice of documents of any form InsertOne takes: []Document,
// []any, []User, []*User… (nil: none). It is atomic: if any document is
// invalid, fails validation or would duplicate a key (in the collection
// or within docs), nothing is stored and the error names the document's
// position.
func (c *Collection) InsertMany(docs any) ([]any, error) {
	return (*engine.Collection)(c).InsertMany(docs)
}

// UpdateOptions adjusts UpdateOne, UpdateMany and ReplaceOne.
type UpdateOptions = engine.UpdateOptions

// UpdateResult says what an update did.
type UpdateResult = engine.UpdateResult

// UpdateOne applies update ($set, $unset, $inc, $mul, $min, $max, $rename,
// $currentDate, $setOnInsert, $push, $addToSet, $pull, $pop, with MongoDB's
// semantics; $setOnInsert only when an upsert inserts) to the first
// document matching filter (in the order Find would return without sort).
// $currentDate writes the DB clock's time: it is how an application keeps a
// document alive under a TTL index. Errors (ErrInvalidFilter,
// ErrInvalidUpdate, ErrImmutableID, ErrValidation, ErrDuplicateKey) change
// nothing.
func (c *Collection) UpdateOne(filter Document, update Document, opts ...UpdateOptions) (UpdateResult, error) {
	return (*engine.Collection)(c).UpdateOne(filter, update, opts...)
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
func (c *Collection) UpdateMany(ctx context.Context, filter Document, update Document, opts ...UpdateOptions) (UpdateResult, error) {
	return (*engine.Collection)(c).UpdateMany(ctx, filter, update, opts...)
}

// ReplaceOne replaces the first document matching filter with a copy of
// replacement, keeping its _id (a replacement that names another _id fails
// with ErrImmutableID). replacement is a document of any form InsertOne
// takes (a struct's _id left out by omitempty, or nil, keeps the stored
// one). With Upsert and no match, it inserts the replacement.
func (c *Collection) ReplaceOne(filterDoc Document, replacementDoc any, opts ...UpdateOptions) (UpdateResult, error) {
	return (*engine.Collection)(c).ReplaceOne(filterDoc, replacementDoc, opts...)
}

// DeleteOne deletes the first document matching filter and reports how many
// it deleted (0 or 1).
func (c *Collection) DeleteOne(filter Document) (int, error) {
	return (*engine.Collection)(c).DeleteOne(filter)
}

// DeleteMany deletes every document matching filter and reports how many.
// It is atomic: ctx stops it while it finds the documents (it looks every
// 256 documents examined, and once more just before deleting); cancelled
// or past its deadline, it deletes nothing and returns an error matching
// ctx.Err(). The deletion itself, under the write lock, does not stop.
func (c *Collection) DeleteMany(ctx context.Context, filter Document) (int, error) {
	return (*engine.Collection)(c).DeleteMany(ctx, filter)
}
