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
package aggregate
