// Package aggregate owns the aggregation pipeline's stages and
// accumulators: a pipeline compiled from the stages as the driver gives
// them (Compile), run over a stream of documents (Pipeline.Run). It knows
// nothing of collections: what a stage needs of the database (another
// collection's documents for $lookup and $unionWith, the writes of $out
// and $merge, the memory budget) it asks of a Host, which the engine
// implements. The engine also plans the pipeline's head (a leading
// $match, $sort, $skip, $limit) onto its indexes and feeds the rest of
// the stages from that plan (Pipeline.Run's from).
//
// Documents flow as codec.Document values. A stage never changes a
// document it received, nor a value inside one: it builds a new document
// (sharing the unchanged values) when it reshapes one, because values
// are shared between documents ($unwind's copies, $lookup's matches, the
// accumulators' results).
//
// The stages follow MongoDB's (missing fields and nulls included). Each
// stage file registers its stages (registerStages); the accumulators
// ($sum, $push, $topN...) are in accumulators.go, each a factory of
// per-group states (accState: add a value, give the result), so that a
// window stage can reuse them.
//
// Memory: a blocking stage ($group, $sort, $bucket, $sortByCount,
// $sample) counts what it holds, an estimate (sizeOf: field names and
// values, recursively, plus a fixed overhead per value), against
// Options.MaxMemoryBytes and, by chunks, against the DB's budget
// (Host.Grow); past either it fails with an error wrapping
// errs.ErrMemoryLimit. $sort followed by $limit holds only the limit's
// documents. $group with SortedInput holds one group. The streaming
// stages ($match, $project, $unwind...) hold nothing. Bounds on what a
// caller controls: MaxAccumulatorN for the n of $topN and its kin,
// MaxBucketBoundaries for $bucket; $push and $addToSet grow until the
// memory limit.
//
// Errors: a stage that cannot compile fails Compile with an error
// wrapping errs.ErrInvalidOptions that names the stage (index and name)
// and the field; a stage that fails while running (an expression's
// error, a value of the wrong type) fails the stream with a *StageError
// whose cause wraps errs.ErrExpression (or the host's error, or the
// context's).
package aggregate
