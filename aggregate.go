package ttldb

import (
	"context"

	"github.com/ttldb/ttldb/internal/engine"
)

// AggregateOptions adjusts Aggregate and ExplainAggregate.
type AggregateOptions = engine.AggregateOptions

// Aggregate runs an aggregation pipeline over the collection's documents
// and returns a cursor over its results, as the driver's Aggregate does:
// pipeline is a slice of stage documents (mongo.Pipeline, []bson.D,
// bson.A, []Document).
func (c *Collection) Aggregate(ctx context.Context, pipeline any, opts ...AggregateOptions) (*Cursor, error) {
	cursor, err := (*engine.Collection)(c).Aggregate(ctx, pipeline, opts...)
	return (*Cursor)(cursor), err
}
