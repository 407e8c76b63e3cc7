package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// AggregateOptions adjusts Aggregate and ExplainAggregate, with the
// driver's option names where they exist: Let (variables read as $$name),
// Hint (the index the leading $match is answered with), MaxMemoryBytes
// (each blocking stage's memory limit; 0: 100 MiB), Collation (nil or
// the simple collation). The zero value runs the pipeline with no
// variables, the planner's choice of index and the default limits.
type AggregateOptions = engine.AggregateOptions

// AggregateExplanation describes how Aggregate runs a pipeline (see
// ExplainAggregate). Its fields:
//
//   - Read (an Explanation): the plan of the pipeline's head, with counts
//     from running it: the Find its leading $match amounts to, with the
//     $sort, $skip and $limit after it when an index walk gives their
//     order; on a time-series collection, the buckets examined and those
//     unpacked. Stage "EOF" for a missing collection.
//   - Pushed ([]string): the stages the read answers, in order.
//   - Stages ([]string): the stages run on the read's output, in order; a
//     $group whose input arrives ordered by its key (an index walk) is
//     "$group (streaming)": it holds one group at a time.
type AggregateExplanation = engine.AggregateExplanation

// Aggregate runs an aggregation pipeline over the collection's documents
// and returns a cursor over its results, as the driver's Aggregate does.
// pipeline is a slice of stage documents as the driver takes it
// (mongo.Pipeline, []bson.D, bson.A, []Document); a stage's fields keep
// their order where it matters ($sort: give it as a bson.D). The README's
// Aggregation section lists the stages, accumulators and expression
// operators ttldb runs, each with MongoDB's semantics.
//
// Planning: the leading $match stages are answered as Find answers a
// filter (an index, the TTL date tree, the _id index; a time-series
// collection's buckets the filter rules out are not unpacked); a $sort
// right after them reads in index order when an index gives that order
// (then a $skip and $limit after it stop the walk early), else it sorts in
// memory, keeping only the first $limit documents when a $limit follows;
// a $group on a field an index orders reads in that order and holds one
// group at a time. ExplainAggregate shows the plan.
//
// Reads: the whole pipeline reads with one instant, taken from the DB's
// clock when Aggregate is called: it is $$NOW, and the expiry cutoff of a
// collection with HideExpired, for the collection and every collection
// $lookup and $unionWith read. A pipeline runs in the transaction its
// ctx carries (reading the transaction's snapshot and writes), except
// $out and $merge, which are refused in a transaction
// (ErrNotInTransaction). Aggregate runs the pipeline up to its first 256
// results before it returns (all of it when the pipeline ends with $out
// or $merge, whose writes are then done; the cursor is empty); the cursor
// runs the rest as it is read, so most errors come from Aggregate itself
// and the rest from Cursor.Err.
//
// Bounds: at most 1000 stages; each blocking stage ($group, $sort,
// $bucket, $sortByCount, $sample) holds at most MaxMemoryBytes (100 MiB
// by default), counted in the DB's memory budget (WithMemoryLimit) too,
// and fails with ErrMemoryLimit beyond it: ttldb keeps no spill files.
// ctx stops the pipeline between documents.
//
// Errors name the stage (its index and name) and the field or operator:
// ErrInvalidOptions (an unknown or malformed stage, operator or option),
// ErrInvalidFilter (a $match's filter), ErrExpression (an expression that
// fails on a document: a type mismatch, a division by zero), ErrMemoryLimit,
// ErrNotInTransaction, the write errors of $out and $merge, ErrClosed,
// ctx's error.
func (c *Collection) Aggregate(ctx context.Context, pipeline any, opts ...AggregateOptions) (*Cursor, error) {
	cursor, err := (*engine.Collection)(c).Aggregate(ctx, pipeline, opts...)
	return (*Cursor)(cursor), err
}

// ExplainAggregate describes how Aggregate would run pipeline: the plan
// of its head's read of the collection (Read: an Explanation, with counts
// from running that read), the stages the read answers (Pushed) and those
// run on its output (Stages, a $group that streams marked so). It runs
// the head's read, not the stages after it: nothing is written, even for
// a pipeline ending with $out or $merge. It reads outside any
// transaction. Errors: those of Aggregate's compilation and read.
func (c *Collection) ExplainAggregate(ctx context.Context, pipeline any, opts ...AggregateOptions) (AggregateExplanation, error) {
	return (*engine.Collection)(c).ExplainAggregate(ctx, pipeline, opts...)
}
