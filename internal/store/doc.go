// Package store owns the memory of a collection's documents: where each
// stored record lives, how it is found by its _id key, and how much memory
// the whole takes.
//
// Records (an _id key, an encoded document and the caller's extra bytes,
// such as index keys) live in large pointer-free byte chunks, addressed by
// integer slots. A slot table, in fixed-size pages that never move, holds
// each slot's location, insertion sequence and version. The _id lookup
// structure is a hash table in 64 shards, each an open-addressing table of
// plain integers (a tag of the key's 64-bit hash and the slot; idtable.go),
// collisions resolved against the stored key. So a million stored
// documents are a few hundred heap objects, none of which the garbage
// collector has to look inside: the host program's collections never scan
// them. A batch of deletions (DeleteMany, the TTL monitor's) takes each
// shard's lock once.
//
// Bytes once written to a chunk are never written again, and a chunk's
// memory is never reused: freeing a record only marks its bytes dead;
// chunks that are mostly dead have their live records moved to the chunk
// being filled and are then dropped for the garbage collector to take. So a
// Record's byte slices, once read, stay valid and unchanged for as long as
// the reader keeps them, whatever writers do meanwhile, and readers by key
// need only the key's shard lock, never the collection's.
//
// Concurrency: one writer at a time (the collection's write lock serializes
// Insert, Update, Delete and everything else that changes a Store), any
// number of readers. Lookup and Get are safe concurrently with the writer.
// Record, Len, Ascend and the accounting methods read writer state: call
// them holding a lock that excludes the writer (the collection's read lock),
// or from the writer itself.
package store
