package engine

import (
	"context"
	"fmt"
	"reflect"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// documentArg reads a filter, an update or another argument a method takes
// as any, as the driver does: nil (an empty filter), a Document or
// map[string]any (used as it is: no copy, no allocation), a bson.D, bson.M
// or bson.Raw (their content), or a struct (or pointer to one), read as the
// document it encodes to. Anything else is an error wrapping sentinel
// (ErrInvalidFilter for a filter) that names what and the Go type. The
// driver's containers inside the document are read by the query compiler
// (codec.ExprDocument).
func documentArg(what string, v any, sentinel error) (Document, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return x, nil
	}
	out, err := codec.ExprValue(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", sentinel, what, err)
	}
	if m, ok := out.(map[string]any); ok {
		return m, nil
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Kind() == reflect.Struct || rv.Kind() == reflect.Map {
		// A struct (a filter by example) or another map type: the
		// document it encodes to.
		enc, _, err := codec.EncodeValue(v, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", sentinel, what, err)
		}
		return codec.Decode(enc), nil
	}
	return nil, fmt.Errorf("%w: %s must be a document (Document, bson.D, bson.M, bson.Raw or a struct), not %T", sentinel, what, v)
}

// filterArg is documentArg for a filter.
func filterArg(v any) (Document, error) { return documentArg("filter", v, errs.ErrInvalidFilter) }

// updateArg is documentArg for an update document.
func updateArg(v any) (Document, error) { return documentArg("update", v, errs.ErrInvalidUpdate) }

// started checks a call's context before the call changes or reads
// anything: a cancelled ctx is its error, wrapped with the collection's
// name (errors.Is matches context.Canceled / DeadlineExceeded). A nil ctx
// is a programming error the driver panics on; ttldb reads it as
// context.Background.
func (c *Collection) started(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return ctxError(c.name, err)
	}
	return nil
}

// ctxErr is a DB-level call's check of its context before it reads or
// changes anything: ctx's error, or nil (also for a nil ctx).
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ttldb: %w", err)
	}
	return nil
}
