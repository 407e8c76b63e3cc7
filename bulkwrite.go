package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// WriteModel is one write of a BulkWrite: InsertOneModel, UpdateOneModel,
// UpdateManyModel, ReplaceOneModel, DeleteOneModel or DeleteManyModel (a
// value or a pointer to one).
type WriteModel = engine.WriteModel

// InsertOneModel inserts Document (any form InsertOne takes).
type InsertOneModel = engine.InsertOneModel

// UpdateOneModel is UpdateOne(Filter, Update, UpdateOptions{Upsert}).
type UpdateOneModel = engine.UpdateOneModel

// UpdateManyModel is UpdateMany(Filter, Update, UpdateOptions{Upsert}).
type UpdateManyModel = engine.UpdateManyModel

// ReplaceOneModel is ReplaceOne(Filter, Replacement,
// UpdateOptions{Upsert}).
type ReplaceOneModel = engine.ReplaceOneModel

// DeleteOneModel is DeleteOne(Filter).
type DeleteOneModel = engine.DeleteOneModel

// DeleteManyModel is DeleteMany(Filter).
type DeleteManyModel = engine.DeleteManyModel

// BulkWriteOptions adjusts BulkWrite. The zero value is ordered, as the
// driver's default.
type BulkWriteOptions = engine.BulkWriteOptions

// BulkWriteResult counts what a BulkWrite did, as the driver's
// BulkWriteResult: the sums over the models that succeeded.
type BulkWriteResult = engine.BulkWriteResult

// WriteError is the error of one model of a BulkWrite: its index in the
// models and what went wrong (as the matching single call reports it).
type WriteError = engine.WriteError

// BulkWriteError reports the models of a BulkWrite that failed, in index
// order: the first only when ordered, every one when unordered. Match it
// with errors.As; errors.Is matches any of the models' errors (say
// ErrDuplicateKey).
type BulkWriteError = engine.BulkWriteError

// BulkWrite runs models in order, each as the matching single call
// (InsertOne, UpdateOne, UpdateMany, ReplaceOne, DeleteOne, DeleteMany)
// would, and returns the counts of those that succeeded. Each model is
// atomic on its own; the bulk is not a transaction (as MongoDB's is not):
// readers and other writers may see the models before it ends, and a
// failed model does not undo the ones before it.
//
// Ordered (the default), it stops at the first model that fails;
// Unordered attempts them all. Either way the error is a *BulkWriteError
// listing each failed model's index and error, returned with the result
// of the models that succeeded. ctx is checked before each model: once it
// is done, BulkWrite stops and reports ctx's error at the index of the
// first model not attempted. UpdateManyModel and DeleteManyModel run with
// ctx as UpdateMany and DeleteMany do: cancelled while they run, they
// change nothing and their error (matching ctx.Err()) is reported at their
// index. No models (or a nil model, reported at its
// index) is ErrInvalidOptions. Closed DB: ErrClosed, nothing done.
func (c *Collection) BulkWrite(ctx context.Context, models []WriteModel, opts ...BulkWriteOptions) (BulkWriteResult, error) {
	return (*engine.Collection)(c).BulkWrite(ctx, models, opts...)
}
