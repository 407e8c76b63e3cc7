package engine

import (
	"context"
	"fmt"
	"strings"
)

// WriteModel is one write of a BulkWrite: InsertOneModel, UpdateOneModel,
// UpdateManyModel, ReplaceOneModel, DeleteOneModel or DeleteManyModel (a
// value or a pointer to one).
type WriteModel interface {
	writeModel()
}

// InsertOneModel inserts Document (any form InsertOne takes).
type InsertOneModel struct {
	Document any
}

// UpdateOneModel is UpdateOne(ctx, Filter, Update, UpdateOptions{Upsert,
// Hint, Sort, ArrayFilters}). Filter and Update take what UpdateOne takes.
type UpdateOneModel struct {
	Filter       any
	Update       any
	Upsert       bool
	Hint         any
	Sort         []IndexKey
	ArrayFilters []any
}

// UpdateManyModel is UpdateMany(ctx, Filter, Update,
// UpdateOptions{Upsert, Hint, ArrayFilters}).
type UpdateManyModel struct {
	Filter       any
	Update       any
	Upsert       bool
	Hint         any
	ArrayFilters []any
}

// ReplaceOneModel is ReplaceOne(ctx, Filter, Replacement,
// UpdateOptions{Upsert, Hint, Sort}).
type ReplaceOneModel struct {
	Filter      any
	Replacement any
	Upsert      bool
	Hint        any
	Sort        []IndexKey
}

// DeleteOneModel is DeleteOne(ctx, Filter, DeleteOptions{Hint}).
type DeleteOneModel struct {
	Filter any
	Hint   any
}

// DeleteManyModel is DeleteMany(ctx, Filter, DeleteOptions{Hint}).
type DeleteManyModel struct {
	Filter any
	Hint   any
}

func (InsertOneModel) writeModel()  {}
func (UpdateOneModel) writeModel()  {}
func (UpdateManyModel) writeModel() {}
func (ReplaceOneModel) writeModel() {}
func (DeleteOneModel) writeModel()  {}
func (DeleteManyModel) writeModel() {}

// BulkWriteOptions adjusts BulkWrite, with the driver's option names.
type BulkWriteOptions struct {
	// Ordered (nil: true, the driver's default) stops at the first model
	// that fails (the models before it stay applied); false attempts every
	// model, whatever fails, and reports every error.
	Ordered *bool
}

// BulkWriteResult counts what a BulkWrite did, as the driver's
// BulkWriteResult: the sums over the models that succeeded.
type BulkWriteResult struct {
	InsertedCount int64 // documents inserted by InsertOneModel
	MatchedCount  int64 // documents the update and replace filters matched
	ModifiedCount int64 // documents updates and replacements changed
	DeletedCount  int64 // documents deleted
	UpsertedCount int64 // documents inserted by upserts
	// UpsertedIDs maps a model's index to the _id its upsert inserted.
	UpsertedIDs map[int64]any
	// InsertedIDs maps an InsertOneModel's index to its document's _id.
	InsertedIDs map[int64]any
}

// WriteError is the error of one model of a BulkWrite (or one document of
// an InsertMany): its index and what went wrong (as the matching single
// call reports it).
type WriteError struct {
	Index int
	Err   error
}

// Error names the index (of the model, or of InsertMany's document) and
// the error.
func (e WriteError) Error() string { return fmt.Sprintf("index %d: %v", e.Index, e.Err) }

// Unwrap returns the model's error.
func (e WriteError) Unwrap() error { return e.Err }

// BulkWriteError reports the models of a BulkWrite (or the documents of an
// InsertMany) that failed, in index order: the first only when ordered,
// every one when unordered. Match it with errors.As; errors.Is matches any
// of the models' errors (say ErrDuplicateKey).
type BulkWriteError struct {
	WriteErrors []WriteError
}

// Error lists the failed models.
func (e *BulkWriteError) Error() string {
	parts := make([]string, len(e.WriteErrors))
	for i, we := range e.WriteErrors {
		parts[i] = we.Error()
	}
	return "ttldb: write errors: " + strings.Join(parts, "; ")
}

// Unwrap returns the models' errors, for errors.Is and errors.As.
func (e *BulkWriteError) Unwrap() []error {
	out := make([]error, len(e.WriteErrors))
	for i, we := range e.WriteErrors {
		out[i] = we
	}
	return out
}

// BulkWrite implements ttldb.Collection.BulkWrite, whose documentation is the contract.
func (c *Collection) BulkWrite(ctx context.Context, models []WriteModel, opts ...BulkWriteOptions) (BulkWriteResult, error) {
	res := BulkWriteResult{UpsertedIDs: map[int64]any{}, InsertedIDs: map[int64]any{}}
	if err := c.usable(); err != nil {
		return res, err
	}
	if err := c.started(ctx); err != nil {
		return res, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if len(models) == 0 {
		return res, fmt.Errorf("%w: collection %q: BulkWrite needs at least one model", ErrInvalidOptions, c.name)
	}
	ordered := true
	for _, o := range opts {
		if o.Ordered != nil {
			ordered = *o.Ordered
		}
	}
	var errs []WriteError
	for i, m := range models {
		if err := ctx.Err(); err != nil {
			errs = append(errs, WriteError{Index: i, Err: err})
			break
		}
		if err := c.bulkOne(ctx, m, i, &res); err != nil {
			errs = append(errs, WriteError{Index: i, Err: err})
			if ordered {
				break
			}
		}
	}
	if len(errs) > 0 {
		return res, &BulkWriteError{WriteErrors: errs}
	}
	return res, nil
}

// bulkOne runs model i and adds its counts to res.
func (c *Collection) bulkOne(ctx context.Context, m WriteModel, i int, res *BulkWriteResult) error {
	upd := func(r *UpdateResult, err error) error {
		if err != nil {
			return err
		}
		res.MatchedCount += r.MatchedCount
		res.ModifiedCount += r.ModifiedCount
		if r.UpsertedID != nil {
			res.UpsertedCount++
			res.UpsertedIDs[int64(i)] = r.UpsertedID
		}
		return nil
	}
	del := func(r *DeleteResult, err error) error {
		if err != nil {
			return err
		}
		res.DeletedCount += r.DeletedCount
		return nil
	}
	switch m := m.(type) {
	case InsertOneModel:
		return c.bulkInsert(ctx, m, i, res)
	case *InsertOneModel:
		if m != nil {
			return c.bulkInsert(ctx, *m, i, res)
		}
	case UpdateOneModel:
		return upd(c.UpdateOne(ctx, m.Filter, m.Update, UpdateOptions{Upsert: m.Upsert, Hint: m.Hint, Sort: m.Sort, ArrayFilters: m.ArrayFilters}))
	case *UpdateOneModel:
		if m != nil {
			return upd(c.UpdateOne(ctx, m.Filter, m.Update, UpdateOptions{Upsert: m.Upsert, Hint: m.Hint, Sort: m.Sort, ArrayFilters: m.ArrayFilters}))
		}
	case UpdateManyModel:
		return upd(c.UpdateMany(ctx, m.Filter, m.Update, UpdateOptions{Upsert: m.Upsert, Hint: m.Hint, ArrayFilters: m.ArrayFilters}))
	case *UpdateManyModel:
		if m != nil {
			return upd(c.UpdateMany(ctx, m.Filter, m.Update, UpdateOptions{Upsert: m.Upsert, Hint: m.Hint, ArrayFilters: m.ArrayFilters}))
		}
	case ReplaceOneModel:
		return upd(c.ReplaceOne(ctx, m.Filter, m.Replacement, UpdateOptions{Upsert: m.Upsert, Hint: m.Hint, Sort: m.Sort}))
	case *ReplaceOneModel:
		if m != nil {
			return upd(c.ReplaceOne(ctx, m.Filter, m.Replacement, UpdateOptions{Upsert: m.Upsert, Hint: m.Hint, Sort: m.Sort}))
		}
	case DeleteOneModel:
		return del(c.DeleteOne(ctx, m.Filter, DeleteOptions{Hint: m.Hint}))
	case *DeleteOneModel:
		if m != nil {
			return del(c.DeleteOne(ctx, m.Filter, DeleteOptions{Hint: m.Hint}))
		}
	case DeleteManyModel:
		return del(c.DeleteMany(ctx, m.Filter, DeleteOptions{Hint: m.Hint}))
	case *DeleteManyModel:
		if m != nil {
			return del(c.DeleteMany(ctx, m.Filter, DeleteOptions{Hint: m.Hint}))
		}
	}
	return fmt.Errorf("%w: collection %q: nil write model", ErrInvalidOptions, c.name)
}

func (c *Collection) bulkInsert(ctx context.Context, m InsertOneModel, i int, res *BulkWriteResult) error {
	if m.Document == nil {
		return fmt.Errorf("%w: collection %q: InsertOneModel without a document", ErrInvalidDocument, c.name)
	}
	r, err := c.InsertOne(ctx, m.Document)
	if err != nil {
		return err
	}
	res.InsertedCount++
	res.InsertedIDs[int64(i)] = r.InsertedID
	return nil
}
