package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// IndexModel specifies an index for CreateIndex.
type IndexModel = engine.IndexModel

// Seconds returns a pointer to n, for IndexModel.ExpireAfterSeconds and
// CollModIndex.ExpireAfterSeconds.
func Seconds(n int32) *int32 {
	return engine.Seconds(n)
}

// IndexSpec describes an existing index, as Indexes returns it.
type IndexSpec = engine.IndexSpec

// MaxIndexKeysPerDocument is the most keys one document may have in one
// index: the distinct elements of the array in a multikey field. A write
// of a document over it fails with ErrInvalidDocument naming the field and
// changes nothing, and CreateIndex over a stored one fails. It bounds the
// time one write holds the collection's write lock (under 100 ms at the
// limit on 2 cores: BenchmarkInsertMultikey inserts and deletes such a
// document in 85–210 ms) and the entries one document adds to an index
// tree.
const (
	MaxIndexKeysPerDocument = engine.MaxIndexKeysPerDocument
)

// CreateIndex builds an index and returns its name. Creating an index that
// exists with the same specification is a no-op that returns its name; the
// same keys (or name) with other options is ErrIndexOptionsConflict, and
// CreateIndex never changes an existing index (use CollMod to change
// ExpireAfterSeconds). A bad specification is ErrInvalidIndex or
// ErrInvalidTTL. If the documents already stored violate a unique index, or
// one cannot be indexed, nothing is created.
//
// The build runs in the background of the call, as MongoDB's hybrid index
// build does: it scans the documents holding no lock, while
// readers and writers go on, then applies the writes made meanwhile, and
// holds off writers only for a short final catch-up (at most
// finalCatchUpMax changes) before it publishes the index. Queries see the
// index once it is complete. A unique index fails with ErrDuplicateKey if
// two documents share a key when the build ends, including through writes
// made during the build; a failed build leaves nothing behind. While an
// index is being built, CreateIndex of the same keys or name waits for it,
// and DropIndex and CollMod do not see it yet (ErrNotFound).
//
// ctx stops the build (looked at every 256 documents scanned, and before
// each catch-up round) and a wait for another build of the same index:
// cancelled or past its deadline, CreateIndex returns an error matching
// ctx.Err() and leaves nothing of the index behind. The final catch-up
// and the index's publication, under the write lock, do not stop.
func (c *Collection) CreateIndex(ctx context.Context, m IndexModel) (string, error) {
	return (*engine.Collection)(c).CreateIndex(ctx, m)
}

// DropIndex removes the named index. The _id index cannot be dropped
// (ErrInvalidIndex); a missing index is ErrNotFound.
func (c *Collection) DropIndex(ctx context.Context, name string) error {
	return (*engine.Collection)(c).DropIndex(ctx, name)
}

// Indexes describes the collection's indexes, the implicit "_id_" first,
// then the others in creation order. A missing collection has none.
func (c *Collection) Indexes(ctx context.Context) ([]IndexSpec, error) {
	return (*engine.Collection)(c).Indexes(ctx)
}

// IndexKey is one field of an index key or a sort specification: a dotted
// field path and a direction, 1 for ascending or -1 for descending.
type IndexKey = engine.IndexKey

// Asc returns the ascending key on field.
func Asc(field string) IndexKey {
	return engine.Asc(field)
}

// Desc returns the descending key on field.
func Desc(field string) IndexKey {
	return engine.Desc(field)
}
