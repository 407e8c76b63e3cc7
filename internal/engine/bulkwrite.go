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

// UpdateOneModel is UpdateOne(Filter, Update, UpdateOptions{Upsert}).
type UpdateOneModel struct {
	Filter Document
	Update Document
	Upsert bool
}

// UpdateManyModel is UpdateMany(Filter, Update, UpdateOptions{Upsert}).
type UpdateManyModel struct {
	Filter Document
	Update Document
	Upsert bool
}

// ReplaceOneModel is ReplaceOne(Filter, Replacement,
// UpdateOptions{Upsert}).
type ReplaceOneModel struct {
	Filter      Document
	Replacement any
	Upsert      bool
}

// DeleteOneModel is DeleteOne(Filter).
type DeleteOneModel struct {
	Filter Document
}

// DeleteManyModel is DeleteMany(Filter).
type DeleteManyModel struct {
	Filter Document
}

func (InsertOneModel) writeModel()  {}
func (UpdateOneModel) writeModel()  {}
func (UpdateManyModel) writeModel() {}
func (ReplaceOneModel) writeModel() {}
func (DeleteOneModel) writeModel()  {}
func (DeleteManyModel) writeModel() {}

// BulkWriteOptions adjusts BulkWrite. The zero value is ordered, as the
// driver's default.
type BulkWriteOptions struct {
	// Unordered attempts every model, whatever fails, and reports every
	// error. By default (ordered) BulkWrite stops at the first error.
	Unordered bool
}

// BulkWriteResult counts what a BulkWrite did, as the driver's
// BulkWriteResult: the sums over the models that succeeded.
type BulkWriteResult struct {
	InsertedCount int // documents inserted by InsertOneModel
	MatchedCount  int // documents the update and replace filters matched
	ModifiedCount int // documents updates and replacements changed
	DeletedCount  int // documents deleted
	UpsertedCount int // documents inserted by upserts
	// UpsertedIDs maps a model's index to the _id its upsert inserted.
	UpsertedIDs map[int]any
	// InsertedIDs maps an InsertOneModel's index to its document's _id.
	InsertedIDs map[int]any
}

// WriteError is the error of one model of a BulkWrite: its index in the
// models and what went wrong (as the matching single call reports it).
type WriteError struct {
	Index int
	Err   error
}

// Error names the model's index and the error.
func (e WriteError) Error() string { return fmt.Sprintf("model %d: %v", e.Index, e.Err) }

// Unwrap returns the model's error.
func (e WriteError) Unwrap() error { return e.Err }

// BulkWriteError reports the models of a BulkWrite that failed, in index
// order: the first only when ordered, every one when unordered. Match it
// with errors.As; errors.Is matches any of the models' errors (say
// ErrDuplicateKey).
type BulkWriteError struct {
	WriteErrors []WriteError
}

// Error lists the failed models.
func (e *BulkWriteError) Error() string {
	parts := make([]string, len(e.WriteErrors))
	for i, we := range e.WriteErrors {
		parts[i] = we.Error()
	}
	return "ttldb: bulk write: " + strings.Join(parts, "; ")
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
	res := BulkWriteResult{UpsertedIDs: map[int]any{}, InsertedIDs: map[int]any{}}
	if err := c.usable(); err != nil {
		return res, err
	}
	if len(models) == 0 {
		return res, fmt.Errorf("%w: collection %q: BulkWrite needs at least one model", ErrInvalidOptions, c.name)
	}
	unordered := false
	for _, o := range opts {
		unordered = unordered || o.Unordered
	}
	var errs []WriteError
	for i, m := range models {
		if err := ctx.Err(); err != nil {
			errs = append(errs, WriteError{Index: i, Err: err})
			break
		}
		if err := c.bulkOne(ctx, m, i, &res); err != nil {
			errs = append(errs, WriteError{Index: i, Err: err})
			if !unordered {
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
	upd := func(r UpdateResult, err error) error {
		if err != nil {
			return err
		}
		res.MatchedCount += r.MatchedCount
		res.ModifiedCount += r.ModifiedCount
		if r.UpsertedID != nil {
			res.UpsertedCount++
			res.UpsertedIDs[i] = r.UpsertedID
		}
		return nil
	}
	del := func(n int, err error) error {
		res.DeletedCount += n
		return err
	}
	switch m := m.(type) {
	case InsertOneModel:
		return c.bulkInsert(m, i, res)
	case *InsertOneModel:
		if m != nil {
			return c.bulkInsert(*m, i, res)
		}
	case UpdateOneModel:
		return upd(c.UpdateOne(m.Filter, m.Update, UpdateOptions{Upsert: m.Upsert}))
	case *UpdateOneModel:
		if m != nil {
			return upd(c.UpdateOne(m.Filter, m.Update, UpdateOptions{Upsert: m.Upsert}))
		}
	case UpdateManyModel:
		return upd(c.updateMatching(ctx, m.Filter, m.Update, 0, []UpdateOptions{{Upsert: m.Upsert}}))
	case *UpdateManyModel:
		if m != nil {
			return upd(c.updateMatching(ctx, m.Filter, m.Update, 0, []UpdateOptions{{Upsert: m.Upsert}}))
		}
	case ReplaceOneModel:
		return upd(c.ReplaceOne(m.Filter, m.Replacement, UpdateOptions{Upsert: m.Upsert}))
	case *ReplaceOneModel:
		if m != nil {
			return upd(c.ReplaceOne(m.Filter, m.Replacement, UpdateOptions{Upsert: m.Upsert}))
		}
	case DeleteOneModel:
		return del(c.DeleteOne(m.Filter))
	case *DeleteOneModel:
		if m != nil {
			return del(c.DeleteOne(m.Filter))
		}
	case DeleteManyModel:
		return del(c.deleteMatching(ctx, m.Filter, 0))
	case *DeleteManyModel:
		if m != nil {
			return del(c.deleteMatching(ctx, m.Filter, 0))
		}
	}
	return fmt.Errorf("%w: collection %q: nil write model", ErrInvalidOptions, c.name)
}

func (c *Collection) bulkInsert(m InsertOneModel, i int, res *BulkWriteResult) error {
	if m.Document == nil {
		return fmt.Errorf("%w: collection %q: InsertOneModel without a document", ErrInvalidDocument, c.name)
	}
	id, err := c.InsertOne(m.Document)
	if err != nil {
		return err
	}
	res.InsertedCount++
	res.InsertedIDs[i] = id
	return nil
}
