package aggregate

import (
	"context"
	"fmt"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// The stages that read other collections: $lookup and $unionWith.

func init() {
	registerStages(map[string]stageCompiler{
		"$lookup":    compileLookup,
		"$unionWith": compileUnionWith,
	})
}

// compileLookup compiles $lookup's equality form {from, localField,
// foreignField, as}: each document gets, in as, the array of the
// documents of from whose foreignField equals its localField (an array
// local value matches any of its elements; a missing one matches null
// and missing foreign fields). The pipeline form and let come in a
// later version.
func compileLookup(_ *compiler, st *Stage, arg any) error {
	args, err := namedArgs(arg, []string{"from", "as"}, []string{"localField", "foreignField", "pipeline", "let"})
	if err != nil {
		return err
	}
	if _, ok := args["pipeline"]; ok {
		return fmt.Errorf("the pipeline form of $lookup is not supported: it comes in a later version")
	}
	if _, ok := args["let"]; ok {
		return fmt.Errorf("let in $lookup is not supported: it comes in a later version (with the pipeline form)")
	}
	from, ok := args["from"].(string)
	if !ok || from == "" {
		return fmt.Errorf("from must be a collection's name, not %v (another database's collection is not supported)", args["from"])
	}
	names := map[string]string{}
	for _, k := range []string{"localField", "foreignField", "as"} {
		v, present := args[k]
		if !present {
			return fmt.Errorf("missing argument %q", k)
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s must be a string, not %v", k, v)
		}
		if _, err := fieldPath(k, s); err != nil {
			return err
		}
		names[k] = s
	}
	local, foreign := names["localField"], names["foreignField"]
	as, _ := fieldPath("as", names["as"])
	st.run = func(_ context.Context, r *runner, in Stream) Stream {
		return streamFunc(func(ctx context.Context) (Document, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			d, err := in.Next(ctx)
			if d == nil || err != nil {
				return nil, err
			}
			var value any
			vals, _ := codec.PathValues(d, local)
			switch len(vals) {
			case 0:
			case 1:
				value = vals[0]
			default: // the path crossed an array: any of the values matches
				var flat []any
				for _, v := range vals {
					if elems, ok := codec.ArrayElements(v); ok {
						flat = append(flat, elems...)
					} else {
						flat = append(flat, v)
					}
				}
				value = flat
			}
			matches, err := r.host.Lookup(ctx, from, foreign, value)
			if err != nil {
				return nil, fmt.Errorf("from %q: %w", from, err)
			}
			arr := make([]any, len(matches))
			for i, m := range matches {
				arr[i] = m
			}
			return withPath(d, as, arr), nil
		})
	}
	return nil
}

// compileUnionWith compiles {$unionWith: "coll"} and {$unionWith: {coll,
// pipeline}}: the input's documents, then those of coll run through
// pipeline.
func compileUnionWith(c *compiler, st *Stage, arg any) error {
	var coll any
	var pipeline []any
	if s, ok := arg.(string); ok {
		coll = s
	} else {
		args, err := namedArgs(arg, []string{"coll"}, []string{"pipeline"})
		if err != nil {
			return err
		}
		coll = args["coll"]
		if p, ok := args["pipeline"]; ok {
			pv, err := codec.ExprValue(p)
			if err != nil {
				return err
			}
			elems, ok := codec.ArrayElements(pv)
			if !ok {
				return fmt.Errorf("pipeline must be an array of stages, not %s", query.TypeName(pv))
			}
			// Check the sub-pipeline now (the host compiles it again to
			// plan it): its stages as given, not converted.
			raw, _ := codec.ArrayElements(p)
			if raw == nil {
				raw = elems
			}
			sub, err := Compile(raw, *c.opts)
			if err != nil {
				return fmt.Errorf("pipeline: %w", err)
			}
			for _, s := range sub.Stages {
				if s.Writes {
					return fmt.Errorf("pipeline: %s is not allowed in $unionWith's pipeline", s.Name)
				}
			}
			pipeline = raw
		}
	}
	name, ok := coll.(string)
	if !ok || name == "" {
		return fmt.Errorf("coll must be a collection's name, not %v", coll)
	}
	st.run = func(_ context.Context, r *runner, in Stream) Stream {
		var other Stream
		done := false
		return streamFunc(func(ctx context.Context) (Document, error) {
			if done {
				return nil, nil
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if other == nil {
				d, err := in.Next(ctx)
				if d != nil || err != nil {
					return d, err
				}
				if other, err = r.host.Read(ctx, name, pipeline); err != nil {
					return nil, fmt.Errorf("coll %q: %w", name, err)
				}
			}
			d, err := other.Next(ctx)
			if err != nil {
				return nil, fmt.Errorf("coll %q: %w", name, err)
			}
			done = d == nil
			return d, nil
		})
	}
	return nil
}
