package ttldb_test

import (
	"context"

	"github.com/ttldb/ttldb"
)

// findDocs runs Find and reads the cursor to the end: the results as the
// slice Find used to return.
func findDocs(c *ttldb.Collection, filter ttldb.Document, opts ...ttldb.FindOptions) ([]ttldb.Document, error) {
	cur, err := c.Find(context.Background(), filter, opts...)
	if err != nil {
		return nil, err
	}
	var docs []ttldb.Document
	err = cur.All(context.Background(), &docs)
	return docs, err
}
