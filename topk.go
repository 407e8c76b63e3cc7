package ttldb

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
	fields  []string // the top-level fields the sort reads
	bounded bool
	k       int
	n       int
	items   []topItem
}

type topItem struct {
	ref *docRef
	key Document // the sort fields (or the whole document, if decoded)
	n   int      // arrival order, the tie-break
}

func (t *topK) init(q *findQuery, bounded bool, k int) {
	t.sort, t.bounded, t.k = q.sort, bounded, k
	for _, sk := range q.sort {
		f, _, _ := cutPath(sk.Field)
		if !slices.Contains(t.fields, f) {
			t.fields = append(t.fields, f)
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

// compare orders two items: by the sort, then by arrival.
func (t *topK) compare(a, b *topItem) int {
	if c := query.CompareForSort(a.key, b.key, t.sort); c != 0 {
		return c
	}
	return cmp.Compare(a.n, b.n)
}

// sortKey returns what the sort reads of r: the decoded document if there
// is one, else only the sort's fields, decoded from the encoding.
func (t *topK) sortKey(r *docRef) Document {
	if r.doc != nil || topKOff {
		return r.get()
	}
	key := make(Document, len(t.fields))
	for _, f := range t.fields {
		if v, ok := codec.EncodedField(r.rec.enc, f); ok {
			key[f] = v
		}
	}
	return key
}

func (t *topK) add(r *docRef) {
	it := topItem{ref: r, n: t.n}
	t.n++
	if !t.bounded {
		it.key = t.sortKey(r)
		t.items = append(t.items, it)
		return
	}
	if t.k == 0 {
		return
	}
	it.key = t.sortKey(r)
	if len(t.items) < t.k {
		t.items = append(t.items, it)
		t.up(len(t.items) - 1)
		return
	}
	if t.compare(&it, &t.items[0]) >= 0 {
		return // no better than the worst kept
	}
	t.items[0] = it
	t.down(0)
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
	slices.SortFunc(t.items, func(a, b topItem) int { return t.compare(&a, &b) })
	out := make([]*docRef, len(t.items))
	for i := range t.items {
		out[i] = t.items[i].ref
	}
	return out
}
