package aggregate

import (
	"container/heap"
	"context"
	"math"
	"slices"

	"github.com/ttldb/ttldb/internal/query"
)

func init() {
	registerStages(map[string]stageCompiler{
		"$sort":  compileSort,
		"$limit": compileLimit,
		"$skip":  compileSkip,
	})
}

// sorted is a document with its sort keys and its arrival (ties keep
// the input's order).
type sorted struct {
	doc  Document
	keys []any
	seq  int64
	size int64
}

// compileSort compiles {$sort: {a: 1, b: -1}} (a bson.D for several
// keys). Followed directly by a $limit, it holds only the limit's
// documents (Stage.limit: a top-k heap).
func compileSort(_ *compiler, st *Stage, arg any) error {
	keys, err := sortKeys(arg)
	if err != nil {
		return err
	}
	st.Sort = keys
	st.run = func(_ context.Context, r *runner, in Stream) Stream {
		return sortRun(r, st, in)
	}
	return nil
}

// sortHeap is a max-heap (the worst document on top) of the best k.
type sortHeap struct {
	items []*sorted
	keys  []query.Key
}

func (h *sortHeap) less(a, b *sorted) bool {
	if c := compareKeys(a.keys, b.keys, h.keys); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

func (h *sortHeap) Len() int           { return len(h.items) }
func (h *sortHeap) Less(i, j int) bool { return h.less(h.items[j], h.items[i]) }
func (h *sortHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *sortHeap) Push(x any)         { h.items = append(h.items, x.(*sorted)) }
func (h *sortHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

func sortRun(r *runner, st *Stage, in Stream) Stream {
	mem := r.newMemory()
	h := &sortHeap{keys: st.Sort}
	next := -1
	fail := func(err error) (Document, error) {
		mem.release()
		h.items = nil
		return nil, err
	}
	return streamFunc(func(ctx context.Context) (Document, error) {
		if next < 0 {
			for i := int64(1); ; i++ {
				if err := checkCtx(ctx, int(i)); err != nil {
					return fail(err)
				}
				d, err := in.Next(ctx)
				if err != nil {
					return fail(err)
				}
				if d == nil {
					break
				}
				it := &sorted{doc: d, keys: docSortKeys(d, st.Sort), seq: i}
				it.size = docSize(d) + int64(len(it.keys))*valueOverhead + 48
				switch {
				case st.limit == 0:
					h.items = append(h.items, it)
				case int64(len(h.items)) < st.limit:
					heap.Push(h, it)
				case h.less(it, h.items[0]):
					if err := mem.grow(-h.items[0].size); err != nil {
						return fail(err)
					}
					h.items[0] = it
					heap.Fix(h, 0)
				default:
					continue
				}
				if err := mem.grow(it.size); err != nil {
					return fail(err)
				}
			}
			slices.SortFunc(h.items, func(a, b *sorted) int {
				if h.less(a, b) {
					return -1
				}
				return 1
			})
			next = 0
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if next >= len(h.items) {
			return fail(nil)
		}
		d := h.items[next].doc
		h.items[next] = nil
		next++
		return d, nil
	})
}

// compileLimit compiles {$limit: n}, n a positive whole number.
func compileLimit(_ *compiler, st *Stage, arg any) error {
	n, err := wholeNumber("the limit", arg, 1, math.MaxInt64)
	if err != nil {
		return err
	}
	st.N = n
	st.run = func(_ context.Context, _ *runner, in Stream) Stream {
		left := n
		return streamFunc(func(ctx context.Context) (Document, error) {
			if left <= 0 {
				return nil, nil
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			d, err := in.Next(ctx)
			if d != nil {
				left--
			}
			return d, err
		})
	}
	return nil
}

// compileSkip compiles {$skip: n}, n a non-negative whole number.
func compileSkip(_ *compiler, st *Stage, arg any) error {
	n, err := wholeNumber("the skip", arg, 0, math.MaxInt64)
	if err != nil {
		return err
	}
	st.N = n
	st.run = func(_ context.Context, _ *runner, in Stream) Stream {
		left := n
		return streamFunc(func(ctx context.Context) (Document, error) {
			for {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				d, err := in.Next(ctx)
				if d == nil || err != nil || left == 0 {
					return d, err
				}
				left--
			}
		})
	}
	return nil
}
