package aggregate

import (
	"context"
	"math"
	"math/rand/v2"
)

func init() {
	registerStages(map[string]stageCompiler{"$sample": compileSample})
}

// compileSample compiles {$sample: {size: n}}: n documents chosen at
// random among the input's (all of them, in a random order, when there
// are fewer), by reservoir sampling: the stage holds n documents at
// most. The choice is a function of Options.Seed (0: a random seed).
func compileSample(c *compiler, st *Stage, arg any) error {
	args, err := namedArgs(arg, []string{"size"}, nil)
	if err != nil {
		return err
	}
	size, err := wholeNumber("size", args["size"], 0, math.MaxInt64)
	if err != nil {
		return err
	}
	seed := c.opts.Seed
	st.run = func(_ context.Context, r *runner, in Stream) Stream {
		s := seed
		if s == 0 {
			s = rand.Uint64()
		}
		rng := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
		mem := r.newMemory()
		var (
			items []Document
			sizes []int64
			next  = -1
		)
		fail := func(err error) (Document, error) {
			mem.release()
			items = nil
			return nil, err
		}
		return streamFunc(func(ctx context.Context) (Document, error) {
			if next < 0 {
				for i := int64(0); ; i++ {
					if err := checkCtx(ctx, int(i+1)); err != nil {
						return fail(err)
					}
					d, err := in.Next(ctx)
					if err != nil {
						return fail(err)
					}
					if d == nil {
						break
					}
					if size == 0 {
						continue
					}
					n := docSize(d)
					if i < size {
						items, sizes = append(items, d), append(sizes, n)
					} else if j := rng.Int64N(i + 1); j < size {
						old := sizes[j]
						items[j], sizes[j] = d, n
						n -= old
					} else {
						continue
					}
					if err := mem.grow(n); err != nil {
						return fail(err)
					}
				}
				rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
				next = 0
			}
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			if next >= len(items) {
				return fail(nil)
			}
			d := items[next]
			items[next] = nil
			next++
			return d, nil
		})
	}
	return nil
}
