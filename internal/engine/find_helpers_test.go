package engine

import "context"

// findDocs runs Find and reads the cursor to the end: the results as the
// slice Find used to return.
func findDocs(c *Collection, filter Document, opts ...FindOptions) ([]Document, error) {
	cur, err := c.Find(context.Background(), filter, opts...)
	if err != nil {
		return nil, err
	}
	var docs []Document
	err = cur.All(context.Background(), &docs)
	return docs, err
}
