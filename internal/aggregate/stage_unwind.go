package aggregate

import (
	"context"
	"fmt"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

func init() {
	registerStages(map[string]stageCompiler{"$unwind": compileUnwind})
}

// compileUnwind compiles {$unwind: "$path"} and {$unwind: {path,
// includeArrayIndex, preserveNullAndEmptyArrays}}: a document for each
// element of the array at path (a value that is not an array counts as
// one element; null, missing and an empty array give nothing unless
// preserved). The path follows documents only, as MongoDB's does.
func compileUnwind(_ *compiler, st *Stage, arg any) error {
	v, err := codec.ExprValue(arg)
	if err != nil {
		return err
	}
	var (
		path     any
		indexArg any
		preserve bool
	)
	switch x := v.(type) {
	case string:
		path = x
	case map[string]any:
		for k, f := range x {
			switch k {
			case "path":
				path = f
			case "includeArrayIndex":
				indexArg = f
			case "preserveNullAndEmptyArrays":
				b, ok := f.(bool)
				if !ok {
					return fmt.Errorf("preserveNullAndEmptyArrays must be a boolean, not %s", query.TypeName(f))
				}
				preserve = b
			default:
				return fmt.Errorf("unknown option %q", k)
			}
		}
		if path == nil {
			return fmt.Errorf("missing option \"path\"")
		}
	default:
		return fmt.Errorf("the argument must be a field path (\"$a\") or a document of options, not %s", query.TypeName(v))
	}
	ps, ok := path.(string)
	if !ok || !strings.HasPrefix(ps, "$") || strings.HasPrefix(ps, "$$") {
		return fmt.Errorf("path must be a field path starting with '$', not %v", path)
	}
	parts, err := fieldPath("path", ps[1:])
	if err != nil {
		return err
	}
	var index []string
	if indexArg != nil {
		is, ok := indexArg.(string)
		if !ok {
			return fmt.Errorf("includeArrayIndex must be a string, not %s", query.TypeName(indexArg))
		}
		if index, err = fieldPath("includeArrayIndex", is); err != nil {
			return err
		}
	}
	st.run = func(_ context.Context, _ *runner, in Stream) Stream {
		var (
			doc   Document
			elems []any
			i     int
		)
		return streamFunc(func(ctx context.Context) (Document, error) {
			for {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if i < len(elems) {
					out := withPath(doc, parts, elems[i])
					if index != nil {
						out = withPath(out, index, int64(i))
					}
					i++
					return out, nil
				}
				d, err := in.Next(ctx)
				if d == nil || err != nil {
					return nil, err
				}
				val, found := codec.GetPath(d, ps[1:])
				arr, isArr := codec.ArrayElements(val)
				switch {
				case isArr && len(arr) > 0:
					doc, elems, i = d, arr, 0
					continue
				case found && val != nil && !isArr:
					if index == nil {
						return d, nil
					}
					return withPath(d, index, nil), nil
				case !preserve:
					continue
				}
				out := d
				if isArr { // an empty array: the field goes
					out = withPath(d, parts, query.Missing)
				}
				if index != nil {
					out = withPath(out, index, nil)
				}
				return out, nil
			}
		})
	}
	return nil
}
