// Package engine is ttldb's database engine: the DB (its collections, its
// clock and configuration, its memory budget), each collection's records,
// indexes, TTL trees and time-series buckets, the writes and the one
// interpreter of ops they commit through, query plans and cursors, the TTL
// monitor with its hooks and observers, change streams, replication's
// DB.Apply, and durability (the log sink, snapshots and recovery).
//
// The root package ttldb is its public face: ttldb.DB, Collection, Cursor,
// ChangeStream and SingleResult are defined over this package's types and
// call into them; every other public type is an alias of one defined here
// or in a package below. The engine's exported names exist for that and for
// its own tests: the documentation of the behaviour a user relies on is on
// ttldb's names. docs/ARCHITECTURE.md maps the files and the flows.
//
// The engine builds on the leaf packages below it, which import nothing of
// it: codec (documents), query (the query language), keys (index keys),
// store (document memory), ordtree and seqlog (TTL trees, natural order),
// schema (validators), ttlvalue (TTL dates), wal and snapshot (files), vfs
// (the file system) and errs (sentinel errors).
package engine
