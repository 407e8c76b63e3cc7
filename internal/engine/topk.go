package engine

import (
	"cmp"
	"slices"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// topKOff makes run sort every match in full, decoding whole documents, as
// before the bounded heap existed (tests and benchmarks compare the two).
var topKOff bool

// topK gathers the matches of a query sorted in memory. Bounded (a Sort
// with a Limit), it keeps only the k = Skip+Limit best so far in a heap
// whose root is the worst of them: a match that does not beat the root is
// dropped at once, so memory is O(k) and time O(n log k). Matches are
// compared by their sort fields alone, decoded from the stored encoding
// (the rest of a document is never decoded unless the filter needed it);
// ties keep the order in which the walk met them, as a stable sort would.
type topK struct {
	sort    []query.Key
	bounded bool
	k       int
	n       int
	items   []topItem
	scratch []any
}

type topItem struct {
	ref  *docRef
	keys []any // the document's sort key for each sort field (query.SortKey)
	n    int   // arrival order, the tie-break
}

func (t *topK) init(q *findQuery, bounded bool, k int) {
	t.sort, t.bounded, t.k = q.sort, bounded, k
	t.scratch = make([]any, len(q.sort))
}

// compare orders two items: by the sort, then by arrival.
func (t *topK) compare(a, b *topItem) int {
	if topKOff {
		// As before the heap: whole documents, sort keys computed anew
		// at each comparison.
		if c := query.CompareForSort(a.ref.get(), b.ref.get(), t.sort); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	}
	for i, k := range t.sort {
		if c := query.Compare(a.keys[i], b.keys[i]); c != 0 {
			return c * k.Order
		}
	}
	return cmp.Compare(a.n, b.n)
}

// sortKeys computes r's sort key for each sort field into dst, decoding
// only the top-level field each path starts in (the whole document is
// used if the filter decoded it already).
func (t *topK) sortKeys(r *docRef, dst []any) {
	for i, k := range t.sort {
		if r.doc != nil {
			dst[i] = query.SortKey(r.doc, k)
			continue
		}
		head, _, dotted := cutPath(k.Field)
		v, ok := codec.EncodedField(r.rec.enc, head)
		switch {
		case !ok:
			dst[i] = nil // a missing field sorts as null
		case !dotted && !codec.IsArray(v):
			dst[i] = v
		default:
			dst[i] = query.SortKey(Document{head: v}, k)
		}
	}
}

// cutPath splits a dotted path at its first dot.
func cutPath(p string) (first, rest string, ok bool) {
	for i := 0; i < len(p); i++ {
		if p[i] == '.' {
			return p[:i], p[i+1:], true
		}
	}
	return p, "", false
}

func (t *topK) add(r *docRef) {
	it := topItem{ref: r, n: t.n}
	t.n++
	if topKOff {
		t.items = append(t.items, it)
		return
	}
	if !t.bounded {
		it.keys = make([]any, len(t.sort))
		t.sortKeys(r, it.keys)
		t.items = append(t.items, it)
		return
	}
	if t.k == 0 {
		return
	}
	if len(t.items) == t.k {
		// Full: compare in scratch first, so that a document that does
		// not beat the worst kept costs no allocation of its own.
		it.keys = t.scratch
		t.sortKeys(r, it.keys)
		if t.compare(&it, &t.items[0]) >= 0 {
			return
		}
		it.keys = slices.Clone(it.keys)
		t.items[0] = it
		t.down(0)
		return
	}
	it.keys = make([]any, len(t.sort))
	t.sortKeys(r, it.keys)
	t.items = append(t.items, it)
	t.up(len(t.items) - 1)
}

// The heap is ordered with the worst item (the greatest) at the root.
func (t *topK) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if t.compare(&t.items[i], &t.items[parent]) <= 0 {
			return
		}
		t.items[i], t.items[parent] = t.items[parent], t.items[i]
		i = parent
	}
}

func (t *topK) down(i int) {
	n := len(t.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		big := l
		if r := l + 1; r < n && t.compare(&t.items[r], &t.items[l]) > 0 {
			big = r
		}
		if t.compare(&t.items[big], &t.items[i]) <= 0 {
			return
		}
		t.items[i], t.items[big] = t.items[big], t.items[i]
		i = big
	}
}

// sorted returns the kept matches, best first.
func (t *topK) sorted() []*docRef {
	if topKOff {
		slices.SortStableFunc(t.items, func(a, b topItem) int { return query.CompareForSort(a.ref.get(), b.ref.get(), t.sort) })
	} else {
		slices.SortFunc(t.items, func(a, b topItem) int { return t.compare(&a, &b) })
	}
	if topKOff && t.bounded {
		t.items = t.items[:min(len(t.items), t.k)]
	}
	out := make([]*docRef, len(t.items))
	for i := range t.items {
		out[i] = t.items[i].ref
	}
	return out
}
