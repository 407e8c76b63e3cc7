package engine

import (
	"context"
	"fmt"
	"reflect"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// documentArg reads a filter, an update or another argument a method takes
// as any, as the driver does: nil (an empty filter), a Document or
// map[string]any (used as it is: no copy, no allocation), or a bson.D,
// bson.M or bson.Raw (their content). Anything else is an error wrapping
// sentinel (ErrInvalidFilter for a filter) that names what and the Go
// type. The driver's containers inside the document are read by the query
// compiler (codec.ExprDocument).
//
// Each form has its own case, and nothing here hands v itself to code
// that may keep it (fmt, reflect, the struct encoder): Go's escape
// analysis then lets a caller's Document literal stay on its stack, as it
// did when filters were Documents. A struct "filter by example" is refused
// for that reason (a struct value inside a Document works).
func documentArg(what string, v any, sentinel error) (Document, error) {
	var out any
	var err error
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return x, nil
	case bson.D:
		out, err = codec.ExprValue(x)
	case bson.M:
		m := make(map[string]any, len(x)) // a copy: x itself goes nowhere (see above)
		for k, e := range x {
			m[k] = e
		}
		out, err = codec.ExprDocument(m)
	case bson.Raw:
		out, err = codec.ExprValue(x)
	default:
		return nil, fmt.Errorf("%w: %s must be a document (Document, bson.D, bson.M or bson.Raw), not %s", sentinel, what, reflect.TypeOf(v))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", sentinel, what, err)
	}
	m, _ := out.(map[string]any)
	if m == nil {
		m = Document{}
	}
	return m, nil
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
