package aggregate

import (
	"context"
	"fmt"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

func init() {
	registerStages(map[string]stageCompiler{"$group": compileGroup})
}

// groupSpec is a compiled $group: the _id expression and the output
// fields' accumulators.
type groupSpec struct {
	id *query.Expr
	// idOnlyField is the field's name when _id is a document of one
	// field ({_id: {f: "$x"}}).
	idOnlyField string
	fields      []string
	accs        []*accumulator
	// bucket, if set, maps the _id expression's value to the group's key
	// ($bucket's lower boundary).
	bucket func(v any) (any, error)
}

// compileGroup compiles {$group: {_id: expr, field: {$acc: expr}...}}.
func compileGroup(c *compiler, st *Stage, arg any) error {
	g, err := compileGroupSpec(c, arg)
	if err != nil {
		return err
	}
	if p, ok := g.id.FieldPath(); ok {
		st.GroupKey = p
	}
	st.run = func(_ context.Context, r *runner, in Stream) Stream {
		if st.SortedInput {
			return g.streaming(r, in)
		}
		return g.hashing(r, in)
	}
	return nil
}

func compileGroupSpec(c *compiler, arg any) (*groupSpec, error) {
	fields, ok := OrderedFields(arg)
	if !ok {
		return nil, fmt.Errorf("the argument must be a document, not %T", arg)
	}
	g := &groupSpec{}
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.Key] {
			return nil, fmt.Errorf("field %q appears twice", f.Key)
		}
		seen[f.Key] = true
		if f.Key == "_id" {
			e, err := query.CompileExprWith(f.Value, c.exprs)
			if err != nil {
				return nil, fmt.Errorf("field \"_id\": %w", err)
			}
			g.id = e
			if m, isDoc := codec.AsDocument(mustExprValue(f.Value)); isDoc && len(m) == 1 {
				for k := range m {
					if !strings.HasPrefix(k, "$") {
						g.idOnlyField = k
					}
				}
			}
			continue
		}
		if f.Key == "" || strings.Contains(f.Key, ".") || strings.HasPrefix(f.Key, "$") {
			return nil, fmt.Errorf("field %q: an output field's name may not be empty, contain '.' or start with '$'", f.Key)
		}
		a, err := compileAccumulator(c, f.Value)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Key, err)
		}
		g.fields = append(g.fields, f.Key)
		g.accs = append(g.accs, a)
	}
	if g.id == nil {
		return nil, fmt.Errorf("a group specification must include an _id")
	}
	return g, nil
}

// group is one group's key and states.
type group struct {
	key    any
	states []accState
}

// groupRun is one run of a $group.
type groupRun struct {
	g   *groupSpec
	mem *memory
	env query.Env
}

// key evaluates doc's group key (missing: null).
func (gr *groupRun) key(doc Document) (any, error) {
	gr.env.Reset(doc)
	k, err := gr.g.id.Evaluate(&gr.env)
	if err != nil {
		return nil, fmt.Errorf("field \"_id\": %w", err)
	}
	if query.IsMissing(k) {
		k = nil
	}
	if f := gr.g.idOnlyField; f != "" {
		// MongoDB evaluates an _id document of one field as that field's
		// expression, a missing value as null: {f: null}, the group of
		// an explicit null (with several fields, a missing one is left
		// out).
		if m, ok := k.(Document); ok && len(m) == 0 {
			k = Document{f: nil}
		}
	}
	if gr.g.bucket != nil {
		return gr.g.bucket(k)
	}
	return k, nil
}

// newGroup makes key's group, counting its memory.
func (gr *groupRun) newGroup(key any) (*group, error) {
	grp := &group{key: key, states: make([]accState, len(gr.g.accs))}
	for i, a := range gr.g.accs {
		s, err := a.newState(key)
		if err != nil {
			return nil, fmt.Errorf("field %q: %s: %w", gr.g.fields[i], a.op, err)
		}
		grp.states[i] = s
	}
	return grp, gr.mem.grow(sizeOf(key) + int64(len(grp.states))*2*valueOverhead + 64)
}

// add adds the document the env holds to grp (env already reset).
func (gr *groupRun) add(grp *group) error {
	for i, a := range gr.g.accs {
		v, err := a.input(&gr.env)
		if err == nil {
			var grew int64
			grew, err = grp.states[i].add(v)
			if err == nil {
				err = gr.mem.grow(grew)
			}
		}
		if err != nil {
			return fmt.Errorf("field %q: %s: %w", gr.g.fields[i], a.op, err)
		}
	}
	return nil
}

// output is grp's result document.
func (gr *groupRun) output(grp *group) (Document, error) {
	out := make(Document, len(grp.states)+1)
	out["_id"] = grp.key
	for i, s := range grp.states {
		v, err := s.result()
		if err != nil {
			return nil, fmt.Errorf("field %q: %s: %w", gr.g.fields[i], gr.g.accs[i].op, err)
		}
		out[gr.g.fields[i]] = v
	}
	return out, nil
}

// hashing groups the whole input by key, then streams the groups (in
// the order of their first documents; MongoDB leaves it unspecified).
func (g *groupSpec) hashing(r *runner, in Stream) Stream {
	gr := &groupRun{g: g, mem: r.newMemory()}
	var groups []*group
	next := -1
	return streamFunc(func(ctx context.Context) (Document, error) {
		if next < 0 {
			byKey := map[string]*group{}
			for i := 1; ; i++ {
				if err := checkCtx(ctx, i); err != nil {
					gr.mem.release()
					return nil, err
				}
				d, err := in.Next(ctx)
				if err != nil {
					gr.mem.release()
					return nil, err
				}
				if d == nil {
					break
				}
				k, err := gr.key(d)
				if err != nil {
					gr.mem.release()
					return nil, err
				}
				ks := valueKey(k)
				grp := byKey[ks]
				if grp == nil {
					if grp, err = gr.newGroup(k); err != nil {
						gr.mem.release()
						return nil, err
					}
					byKey[ks] = grp
					groups = append(groups, grp)
					if err := gr.mem.grow(int64(len(ks)) + fieldOverhead); err != nil {
						gr.mem.release()
						return nil, err
					}
				}
				if err := gr.add(grp); err != nil {
					gr.mem.release()
					return nil, err
				}
			}
			next = 0
		}
		if err := ctx.Err(); err != nil {
			gr.mem.release()
			return nil, err
		}
		if next >= len(groups) {
			gr.mem.release()
			groups = nil
			return nil, nil
		}
		grp := groups[next]
		groups[next] = nil
		next++
		return gr.output(grp)
	})
}

// streaming groups an input ordered by the group key: a group is output
// once the key changes, so only one group is held. (The planner feeds it
// so only for a key that is not an array: an array's documents would
// not be adjacent.)
func (g *groupSpec) streaming(r *runner, in Stream) Stream {
	gr := &groupRun{g: g, mem: r.newMemory()}
	var cur *group
	done := false
	return streamFunc(func(ctx context.Context) (Document, error) {
		for !done {
			if err := ctx.Err(); err != nil {
				gr.mem.release()
				return nil, err
			}
			d, err := in.Next(ctx)
			if err != nil {
				gr.mem.release()
				return nil, err
			}
			if d == nil {
				done = true
				break
			}
			k, err := gr.key(d)
			if err != nil {
				gr.mem.release()
				return nil, err
			}
			var out Document
			if cur != nil && !query.Equal(cur.key, k) {
				if out, err = gr.output(cur); err != nil {
					gr.mem.release()
					return nil, err
				}
				gr.mem.reset()
				cur = nil
			}
			if cur == nil {
				if cur, err = gr.newGroup(k); err != nil {
					gr.mem.release()
					return nil, err
				}
			}
			if err := gr.add(cur); err != nil {
				gr.mem.release()
				return nil, err
			}
			if out != nil {
				return out, nil
			}
		}
		if cur != nil {
			last := cur
			cur = nil
			gr.mem.release()
			return gr.output(last)
		}
		return nil, nil
	})
}

// mustExprValue is codec.ExprValue of a value the expression compiler
// accepted already (so it converts).
func mustExprValue(v any) any {
	out, err := codec.ExprValue(v)
	if err != nil {
		return nil
	}
	return out
}
