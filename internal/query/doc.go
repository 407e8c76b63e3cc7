// Package query owns the MongoDB query language over documents: value
// comparison in BSON order (Compare), filters (CompileFilter), updates
// (CompileUpdate), projections and sort orders. It knows nothing of
// collections, indexes or locks: the planner that chooses an index lives
// with the collection.
package query
