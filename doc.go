// Package ttldb is an embeddable, in-memory document store with
// MongoDB-style TTL (time-to-live) indexes.
//
// A DB holds named collections of JSON-like documents (Document, a
// map[string]any whose dates are time.Time). Collections answer the
// MongoDB query language subset services need (Find, FindOne,
// CountDocuments, UpdateOne, …) through B-tree secondary indexes. A TTL
// index (an index with ExpireAfterSeconds) makes documents expire a fixed
// time after the date in their indexed field, and one background goroutine
// per DB, the TTL monitor, deletes what has expired, in passes and
// sub-passes with MongoDB's budgets, batch by batch so that readers and
// writers never stall.
//
//	db, err := ttldb.Open()
//	if err != nil { … }
//	defer db.Close()
//	events := db.Collection("eventlog")
//	_, err = events.CreateIndex(ctx, ttldb.IndexModel{
//		Keys:               []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")},
//		ExpireAfterSeconds: ttldb.Seconds(3600),
//	})
//	_, err = events.InsertOne(ctx, ttldb.Document{"lastModifiedDate": time.Now(), "msg": "hello"})
//
// The package's Example runs the same on a fake clock, through expiry.
//
// # Time
//
// Nothing in ttldb reads the wall clock directly: every "now" comes from the
// DB's Clock (WithClock; the system clock by default). Tests pass a
// *ttltest.Clock and advance it by hand, so an hour of expiry takes
// microseconds.
//
// # Concurrency
//
// A DB, its collections and every method are safe for concurrent use.
// Readers never block each other; a writer blocks readers only while it
// applies a change it has already prepared. Documents are copied on the way
// in and out: what a caller holds is never shared with the store.
//
// # Errors
//
// Every error wraps one of the exported sentinels (ErrNotFound,
// ErrDuplicateKey, ErrInvalidFilter, ErrInvalidTTL, …) and can be matched
// with errors.Is; some are also typed (*DuplicateKeyError,
// *ValidationError, *DocumentError) for errors.As. A failed write changes
// nothing. Any call that takes a filter fails with ErrExpression when a
// $expr in it fails on a document it examines (a type mismatch, a
// division by zero), as MongoDB's query does.
//
// # Code written for MongoDB's Go driver
//
// Methods have the names and shapes of the driver v2's: every one that
// reads or writes takes a context.Context first; filters and updates are
// Documents, bson.D, bson.M or bson.Raw; results are
// *InsertOneResult, *UpdateResult, *DeleteResult…; ErrNoDocuments is the
// driver's sentinel. The driver's bson types (go.mongodb.org/mongo-driver/v2/bson)
// mean in ttldb what they mean to the driver, in documents, filters,
// updates, sorts, indexes and decoding: a bson.DateTime is a date (a TTL
// index expires it), a bson.D keeps its field order, ObjectID is
// bson.ObjectID, and a type ttldb cannot keep is refused with the path and
// the type. The README lists the differences.
package ttldb
