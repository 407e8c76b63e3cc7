package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ttldb/ttldb/internal/aggregate"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// The write stages, $out and $merge, write through the collection's own
// methods: their documents are validated, indexed, logged and replicated
// as any write's, and trigger the target's change events.

// Out implements aggregate.Host ($out): the documents of in replace those
// of collection coll, all or nothing, in one transaction (so the output is
// bounded by the DB's TransactionLimits). The target keeps its indexes
// and options; a missing target is created.
func (r *aggRun) Out(ctx context.Context, coll string, in aggregate.Stream) error {
	target := r.db.Collection(coll)
	if err := target.usable(); err != nil {
		return err
	}
	if target.timeSeries() != nil {
		return fmt.Errorf("%w: $out into time-series collection %q is not supported", ErrInvalidOptions, coll)
	}
	docs, err := aggregate.Collect(ctx, in)
	if err != nil {
		return err
	}
	sess, err := r.db.StartSession()
	if err != nil {
		return err
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		if _, err := target.DeleteMany(ctx, Document{}); err != nil {
			return nil, err
		}
		if len(docs) == 0 {
			return nil, nil
		}
		return target.InsertMany(ctx, docs)
	})
	if err != nil {
		return fmt.Errorf("$out into %q: %w", coll, err)
	}
	return nil
}

// Merge implements aggregate.Host ($merge): each document of in is
// matched on spec.On in collection spec.Into and merged as spec says.
// As MongoDB's, $merge is not atomic: a document that fails stops the
// stage, the writes of the documents before it stay.
func (r *aggRun) Merge(ctx context.Context, spec *aggregate.MergeSpec, in aggregate.Stream) error {
	target := r.db.Collection(spec.Into)
	if err := target.usable(); err != nil {
		return err
	}
	if target.timeSeries() != nil {
		return fmt.Errorf("%w: $merge into time-series collection %q is not supported", ErrInvalidOptions, spec.Into)
	}
	on := spec.On
	if len(on) == 0 {
		on = []string{"_id"}
	}
	byID := len(on) == 1 && on[0] == "_id"
	if !byID {
		if err := r.checkMergeIndex(ctx, target, on); err != nil {
			return err
		}
	}
	for {
		doc, err := in.Next(ctx)
		if err != nil {
			return err
		}
		if doc == nil {
			return nil
		}
		if err := checkCtx(ctx); err != nil {
			return ctxError(spec.Into, err)
		}
		if err := r.mergeOne(ctx, target, spec, on, doc); err != nil {
			return fmt.Errorf("$merge into %q: %w", spec.Into, err)
		}
	}
}

// checkMergeIndex enforces MongoDB's rule: the fields $merge matches on
// (other than _id alone) must be the keys of a unique index of the
// target, so that a document matches at most one.
func (r *aggRun) checkMergeIndex(ctx context.Context, target *Collection, on []string) error {
	specs, err := target.Indexes(ctx)
	if err != nil {
		return err
	}
	want := slices.Clone(on)
	slices.Sort(want)
	for _, ix := range specs {
		if !ix.Unique || len(ix.Keys) != len(on) {
			continue
		}
		var got []string
		for _, k := range ix.Keys {
			got = append(got, k.Field)
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("%w: $merge on [%s]: collection %q has no unique index on exactly those fields", ErrInvalidOptions, strings.Join(on, ", "), target.name)
}

// mergeOne merges one document.
func (r *aggRun) mergeOne(ctx context.Context, target *Collection, spec *aggregate.MergeSpec, on []string, doc Document) error {
	filter := Document{}
	for _, f := range on {
		v, ok := codec.GetPath(doc, f)
		if !ok && f == "_id" {
			filter = nil // a document without _id matches nothing: it gets one
			break
		}
		if !ok || v == nil || codec.IsArray(v) {
			return fmt.Errorf("%w: $merge: the document's %q is missing, null or an array (each output document needs a value for every 'on' field)", ErrInvalidOptions, f)
		}
		filter[f] = Document{"$eq": v}
	}
	var existing Document
	if filter != nil {
		res := target.FindOne(ctx, filter)
		d, err := res.Document()
		switch {
		case err == nil:
			existing = d
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	if existing == nil {
		switch spec.WhenNotMatched {
		case "discard":
			return nil
		case "fail":
			return fmt.Errorf("%w: $merge whenNotMatched \"fail\": no document matches %v", ErrNotFound, filter)
		}
		_, err := target.InsertOne(ctx, doc)
		return err
	}
	idFilter := Document{"_id": Document{"$eq": existing["_id"]}}
	switch spec.WhenMatched {
	case "keepExisting":
		return nil
	case "fail":
		return fmt.Errorf("%w: $merge whenMatched \"fail\": a document matches %v", ErrDuplicateKey, filter)
	case "replace":
		repl := codec.CopyDocument(doc)
		if _, ok := repl["_id"]; !ok {
			repl["_id"] = existing["_id"]
		}
		_, err := target.ReplaceOne(ctx, idFilter, repl)
		return err
	}
	set := Document{}
	for _, k := range query.SortedKeys(doc) {
		if k != "_id" {
			set[k] = doc[k]
		}
	}
	if id, ok := doc["_id"]; ok && !query.Equal(id, existing["_id"]) {
		return fmt.Errorf("%w: $merge: the document's _id %v differs from the matched document's %v", ErrImmutableID, id, existing["_id"])
	}
	if len(set) == 0 {
		return nil
	}
	_, err := target.UpdateOne(ctx, idFilter, Document{"$set": set})
	return err
}
