package aggregate

import (
	"context"
	"fmt"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// The stages that write: $out and $merge. Each must be the pipeline's
// last; it outputs nothing.

func init() {
	registerStages(map[string]stageCompiler{
		"$out":   compileOut,
		"$merge": compileMerge,
	})
}

// target reads a collection given as "coll" or {db, coll}: db, if
// given, must be this database's (Options.DB).
func target(c *compiler, what string, arg any, dbKey string) (string, error) {
	if s, ok := arg.(string); ok {
		if s == "" {
			return "", fmt.Errorf("%s: an empty collection name", what)
		}
		return s, nil
	}
	args, err := namedArgs(arg, []string{"coll"}, []string{dbKey})
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if db, ok := args[dbKey]; ok {
		s, isStr := db.(string)
		if !isStr || s != c.opts.DB || s == "" {
			return "", fmt.Errorf("%s: db %v: writing to another database is not supported", what, db)
		}
	}
	s, ok := args["coll"].(string)
	if !ok || s == "" {
		return "", fmt.Errorf("%s: coll must be a collection's name, not %v", what, args["coll"])
	}
	return s, nil
}

// writeStage runs write once over the whole input, then ends.
func writeStage(write func(ctx context.Context, r *runner, in Stream) error) func(context.Context, *runner, Stream) Stream {
	return func(_ context.Context, r *runner, in Stream) Stream {
		done := false
		return streamFunc(func(ctx context.Context) (Document, error) {
			if done {
				return nil, nil
			}
			done = true
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, write(ctx, r, in)
		})
	}
}

// compileOut compiles {$out: "coll"} and {$out: {db, coll}}: the input
// replaces coll's documents (Host.Out).
func compileOut(c *compiler, st *Stage, arg any) error {
	coll, err := target(c, "the target", arg, "db")
	if err != nil {
		return err
	}
	st.Writes = true
	st.run = writeStage(func(ctx context.Context, r *runner, in Stream) error {
		return r.host.Out(ctx, coll, in)
	})
	return nil
}

// compileMerge compiles {$merge: {into, on, whenMatched,
// whenNotMatched}} (into a name or {db, coll}; whenMatched's pipeline
// form and let come in a later version): Host.Merge.
func compileMerge(c *compiler, st *Stage, arg any) error {
	spec := &MergeSpec{On: []string{"_id"}, WhenMatched: "merge", WhenNotMatched: "insert"}
	if s, ok := arg.(string); ok {
		arg = Document{"into": s}
	}
	args, err := namedArgs(arg, []string{"into"}, []string{"on", "whenMatched", "whenNotMatched", "let"})
	if err != nil {
		return err
	}
	if spec.Into, err = target(c, "into", args["into"], "db"); err != nil {
		return err
	}
	if _, ok := args["let"]; ok {
		return fmt.Errorf("let is not supported: it comes in a later version (with whenMatched's pipeline form)")
	}
	if on, ok := args["on"]; ok {
		ov, err := codec.ExprValue(on)
		if err != nil {
			return err
		}
		list := []any{ov}
		if elems, isArr := codec.ArrayElements(ov); isArr {
			list = elems
		}
		if len(list) == 0 {
			return fmt.Errorf("on must name at least one field")
		}
		spec.On = nil
		seen := map[string]bool{}
		for _, f := range list {
			s, ok := f.(string)
			if !ok {
				return fmt.Errorf("on: a field must be a string, not %s", query.TypeName(f))
			}
			if _, err := fieldPath("on", s); err != nil {
				return err
			}
			if seen[s] {
				return fmt.Errorf("on: field %q appears twice", s)
			}
			seen[s] = true
			spec.On = append(spec.On, s)
		}
	}
	if wm, ok := args["whenMatched"]; ok {
		s, isStr := wm.(string)
		switch {
		case !isStr:
			if _, isArr := codec.ArrayElements(wm); isArr {
				return fmt.Errorf("whenMatched: the pipeline form is not supported: it comes in a later version")
			}
			return fmt.Errorf("whenMatched must be merge, replace, keepExisting or fail, not %v", wm)
		case s == "merge" || s == "replace" || s == "keepExisting" || s == "fail":
			spec.WhenMatched = s
		default:
			return fmt.Errorf("whenMatched must be merge, replace, keepExisting or fail, not %q", s)
		}
	}
	if wn, ok := args["whenNotMatched"]; ok {
		s, _ := wn.(string)
		if s != "insert" && s != "discard" && s != "fail" {
			return fmt.Errorf("whenNotMatched must be insert, discard or fail, not %v", wn)
		}
		spec.WhenNotMatched = s
	}
	st.Writes = true
	st.run = writeStage(func(ctx context.Context, r *runner, in Stream) error {
		return r.host.Merge(ctx, spec, in)
	})
	return nil
}
