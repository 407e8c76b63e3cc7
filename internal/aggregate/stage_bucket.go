package aggregate

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// The stages that count and bucket: $count, $sortByCount, $bucket.

func init() {
	registerStages(map[string]stageCompiler{
		"$count":       compileCount,
		"$sortByCount": compileSortByCount,
		"$bucket":      compileBucket,
	})
}

// compileCount compiles {$count: "name"}: one document {name: the number
// of input documents} (none for no input, as MongoDB's $group does).
func compileCount(_ *compiler, st *Stage, arg any) error {
	name, ok := arg.(string)
	if !ok || name == "" || strings.HasPrefix(name, "$") || strings.Contains(name, ".") || strings.ContainsRune(name, 0) {
		return fmt.Errorf("the argument must be a non-empty field name without '.' and not starting with '$', not %v", arg)
	}
	st.run = func(_ context.Context, _ *runner, in Stream) Stream {
		done := false
		return streamFunc(func(ctx context.Context) (Document, error) {
			if done {
				return nil, nil
			}
			done = true
			var n int64
			for i := 1; ; i++ {
				if err := checkCtx(ctx, i); err != nil {
					return nil, err
				}
				d, err := in.Next(ctx)
				if err != nil {
					return nil, err
				}
				if d == nil {
					break
				}
				n++
			}
			if n == 0 {
				return nil, nil
			}
			if n <= math.MaxInt32 {
				return Document{name: int32(n)}, nil
			}
			return Document{name: n}, nil
		})
	}
	return nil
}

// groupByExpr compiles a $sortByCount's or $bucket's grouping
// expression: a field path or an expression document, not a literal
// (for $sortByCount, operatorOnly: the document must be an operator's).
func groupByExpr(c *compiler, what string, arg any, operatorOnly bool) (*query.Expr, error) {
	v, err := codec.ExprValue(arg)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string:
		if !strings.HasPrefix(x, "$") {
			return nil, fmt.Errorf("%s must be a field path ($a) or an expression document, not the literal %q", what, x)
		}
	case map[string]any:
		if operatorOnly && (len(x) != 1 || !strings.HasPrefix(query.SortedKeys(x)[0], "$")) {
			return nil, fmt.Errorf("%s must be a field path ($a) or an operator expression ({$op: ...}), not a document of fields", what)
		}
	default:
		return nil, fmt.Errorf("%s must be a field path ($a) or an expression document, not %s", what, query.TypeName(v))
	}
	e, err := query.CompileExprWith(v, c.exprs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return e, nil
}

// sortedGroups runs g over in, then sorts its groups by keys.
func sortedGroups(r *runner, g *groupSpec, keys []query.Key, in Stream) Stream {
	return sortRun(r, &Stage{Sort: keys}, g.hashing(r, in))
}

// compileSortByCount compiles {$sortByCount: expr}: a $group by expr
// counting its documents ({_id, count}), sorted by count, descending.
func compileSortByCount(c *compiler, st *Stage, arg any) error {
	e, err := groupByExpr(c, "the expression", arg, true)
	if err != nil {
		return err
	}
	count, _ := compileCountAcc(c, "$count", Document{})
	g := &groupSpec{id: e, fields: []string{"count"}, accs: []*accumulator{count}}
	st.run = func(_ context.Context, r *runner, in Stream) Stream {
		return sortedGroups(r, g, []query.Key{{Field: "count", Order: -1}}, in)
	}
	return nil
}

// MaxBucketBoundaries bounds $bucket's boundaries.
const MaxBucketBoundaries = 10_000

// compileBucket compiles {$bucket: {groupBy, boundaries, default,
// output}}: documents grouped by the boundaries' interval (its lower
// boundary is the _id) their groupBy value falls in, those outside in
// the default bucket (an error without one); the buckets sorted by _id.
func compileBucket(c *compiler, st *Stage, arg any) error {
	args, err := namedArgs(arg, []string{"groupBy", "boundaries"}, []string{"default", "output"})
	if err != nil {
		return err
	}
	e, err := groupByExpr(c, "groupBy", args["groupBy"], false)
	if err != nil {
		return err
	}
	bv, err := codec.ExprValue(args["boundaries"])
	if err != nil {
		return err
	}
	bounds, ok := codec.ArrayElements(bv)
	if !ok || len(bounds) < 2 || len(bounds) > MaxBucketBoundaries {
		return fmt.Errorf("boundaries must be an array of 2 to %d values, not %v", MaxBucketBoundaries, bv)
	}
	for i, b := range bounds {
		if b == nil || query.IsMissing(b) {
			return fmt.Errorf("boundaries: a boundary may not be null")
		}
		if query.RankOf(b) != query.RankOf(bounds[0]) {
			return fmt.Errorf("boundaries must all be of one type: %s and %s", query.TypeName(bounds[0]), query.TypeName(b))
		}
		if i > 0 && query.Compare(bounds[i-1], b) >= 0 {
			return fmt.Errorf("boundaries must be sorted in ascending order, without repeats: %v then %v", bounds[i-1], b)
		}
	}
	def, hasDefault := args["default"]
	if hasDefault {
		if def, err = codec.ExprValue(def); err != nil {
			return err
		}
		if query.RankOf(def) == query.RankOf(bounds[0]) &&
			query.Compare(def, bounds[0]) >= 0 && query.Compare(def, bounds[len(bounds)-1]) < 0 {
			return fmt.Errorf("default %v must be less than the lowest boundary or greater than or equal to the highest", def)
		}
	}
	g := &groupSpec{id: e}
	if out, ok := args["output"]; ok {
		fields, ok := OrderedFields(out)
		if !ok {
			return fmt.Errorf("output must be a document, not %T", out)
		}
		for _, f := range fields {
			if f.Key == "" || f.Key == "_id" || strings.Contains(f.Key, ".") || strings.HasPrefix(f.Key, "$") {
				return fmt.Errorf("output field %q: a name may not be _id, empty, contain '.' or start with '$'", f.Key)
			}
			a, err := compileAccumulator(c, f.Value)
			if err != nil {
				return fmt.Errorf("output field %q: %w", f.Key, err)
			}
			g.fields, g.accs = append(g.fields, f.Key), append(g.accs, a)
		}
	} else {
		count, _ := compileCountAcc(c, "$count", Document{})
		g.fields, g.accs = []string{"count"}, []*accumulator{count}
	}
	g.bucket = func(v any) (any, error) {
		// The last boundary not above v, if v is below the highest.
		i := sort.Search(len(bounds), func(i int) bool { return query.Compare(bounds[i], v) > 0 })
		if i > 0 && i < len(bounds) && query.RankOf(v) == query.RankOf(bounds[0]) {
			return bounds[i-1], nil
		}
		if !hasDefault {
			return nil, runErr("groupBy: the value %v falls in no bucket, and no default bucket is specified", v)
		}
		return def, nil
	}
	st.run = func(_ context.Context, r *runner, in Stream) Stream {
		return sortedGroups(r, g, []query.Key{{Field: "_id", Order: 1}}, in)
	}
	return nil
}
