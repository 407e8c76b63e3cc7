package engine

import (
	"context"
	"fmt"
)

// AggregateOptions adjusts Aggregate and ExplainAggregate, with the
// driver's option names where they exist. The zero value runs the
// pipeline with no variables, the planner's choice of index and the
// default memory limit of each blocking stage.
type AggregateOptions struct {
	// Let defines variables the pipeline's expressions read as $$name
	// (a Document, bson.D or bson.M of constant expressions, evaluated
	// once). Names start with a lowercase letter.
	Let any
	// Hint names the index the pipeline's leading $match is answered with
	// (see FindOptions.Hint).
	Hint any
	// MaxMemoryBytes bounds the bytes each blocking stage ($group, $sort,
	// $bucket, $sortByCount, $sample) holds, counted in the DB's memory
	// budget too; 0: 100 MiB (MongoDB's limit). ttldb keeps no spill
	// files: a stage over the limit fails with ErrMemoryLimit.
	MaxMemoryBytes int64
	// Collation must be nil or the simple collation (see Collation).
	Collation *Collation
}

// Aggregate implements ttldb.Collection.Aggregate, whose documentation is the contract.
func (c *Collection) Aggregate(ctx context.Context, pipeline any, opts ...AggregateOptions) (*Cursor, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: Aggregate: not built yet", ErrInvalidOptions)
}
