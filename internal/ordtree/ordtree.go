// Package ordtree is an ordered set of plain values: a B+ tree whose
// leaves hold the items in arrays and are linked in order. It serves the
// TTL indexes' date trees, whose use is lopsided: items arrive mostly in
// order (dates of new documents) and leave from the front (the TTL
// monitor deletes the earliest). So:
//
//   - an item added at the end of the last leaf, when the leaf is full,
//     starts a new leaf instead of splitting the full one in two: trees
//     filled in order have full leaves (about 24 bytes per 24-byte item,
//     where google/btree's half-full nodes take 50);
//   - a leaf keeps its items in a window [start, end) of its array, so
//     deleting the first item moves nothing, and DeleteMin never searches;
//   - a leaf that falls below a quarter full is merged with its next
//     sibling when both fit in three quarters of a leaf, and an empty leaf
//     goes, so memory follows what is stored.
//
// The zero Tree is not usable: call New. A Tree is not safe for concurrent
// use; the collection changes it under its write lock and reads it under
// its read lock. Functions passed to the iterators must not change it.
package ordtree

import "slices"

const (
	// LeafItems is the capacity of a leaf.
	LeafItems = 126
	maxKids   = 64
)

// leaf is a run of items in order, in items[start:end]. Its links come
// first, so that for items without pointers the garbage collector scans
// two words of a leaf, not its 3 KiB.
type leaf[T any] struct {
	prev, next *leaf[T]
	start, end int32
	items      [LeafItems]T
}

func (l *leaf[T]) len() int { return int(l.end - l.start) }

// inner is an inner node: kids[i] holds the items below keys[i] (and at
// or above keys[i-1]). At the level above the leaves the children are in
// leaves, elsewhere in kids.
type inner[T any] struct {
	n      int // children
	keys   [maxKids - 1]T
	kids   [maxKids]*inner[T]
	leaves [maxKids]*leaf[T]
}

// Tree is an ordered set.
type Tree[T any] struct {
	less        func(a, b T) bool
	root        *inner[T] // nil while the tree is one leaf
	height      int       // levels of inner nodes
	rootLeaf    *leaf[T]  // the only leaf while root is nil
	first, last *leaf[T]
	n           int
	leaves      int
	inners      int
}

// New returns an empty tree ordered by less, a strict weak order under
// which two items are the same item when neither is less than the other.
func New[T any](less func(a, b T) bool) *Tree[T] {
	l := &leaf[T]{}
	return &Tree[T]{less: less, rootLeaf: l, first: l, last: l, leaves: 1}
}

// Len returns the number of items.
func (t *Tree[T]) Len() int { return t.n }

// pathStep is one inner node on the way to a leaf, with the child taken.
type pathStep[T any] struct {
	node *inner[T]
	i    int
}

// maxHeight bounds the levels of inner nodes: 64^10 leaves is more than
// any memory holds.
const maxHeight = 10

// descend returns the leaf where item belongs, and the path to it.
func (t *Tree[T]) descend(item T, path *[maxHeight]pathStep[T]) *leaf[T] {
	if t.root == nil {
		return t.rootLeaf
	}
	n := t.root
	for h := t.height; ; h-- {
		// The first separator greater than item: items equal to a
		// separator go right.
		i := upperBound(n.keys[:n.n-1], item, t.less)
		path[t.height-h] = pathStep[T]{n, i}
		if h == 1 {
			return n.leaves[i]
		}
		n = n.kids[i]
	}
}

// rightSpine sets path to the way to the last leaf.
func (t *Tree[T]) rightSpine(path *[maxHeight]pathStep[T]) {
	n := t.root
	for h := t.height; h >= 1; h-- {
		path[t.height-h] = pathStep[T]{n, n.n - 1}
		if h > 1 {
			n = n.kids[n.n-1]
		}
	}
}

// upperBound returns the number of keys not greater than item.
func upperBound[T any](keys []T, item T, less func(a, b T) bool) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if less(item, keys[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// search returns the position of the first item of l not less than item,
// and whether it is item.
func (t *Tree[T]) search(l *leaf[T], item T) (int, bool) {
	lo, hi := int(l.start), int(l.end)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.less(l.items[m], item) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < int(l.end) && !t.less(item, l.items[lo])
}

// Min returns the smallest item.
func (t *Tree[T]) Min() (T, bool) {
	if t.n == 0 {
		var zero T
		return zero, false
	}
	return t.first.items[t.first.start], true
}

// Max returns the largest item.
func (t *Tree[T]) Max() (T, bool) {
	if t.n == 0 {
		var zero T
		return zero, false
	}
	return t.last.items[t.last.end-1], true
}

// ReplaceOrInsert adds item, or replaces the item equal to it and returns
// that one.
func (t *Tree[T]) ReplaceOrInsert(item T) (old T, replaced bool) {
	var path [maxHeight]pathStep[T]
	var l *leaf[T]
	var p int
	if t.n > 0 && t.less(t.last.items[t.last.end-1], item) {
		// After every item (dates arriving in order): no search.
		l, p = t.last, int(t.last.end)
		t.rightSpine(&path)
	} else {
		l = t.descend(item, &path)
		var found bool
		if p, found = t.search(l, item); found {
			old, l.items[p] = l.items[p], item
			return old, true
		}
	}
	t.n++
	if l.end < LeafItems {
		copy(l.items[p+1:l.end+1], l.items[p:l.end])
		l.items[p] = item
		l.end++
		return old, false
	}
	if l.start > 0 {
		copy(l.items[l.start-1:p-1], l.items[l.start:p])
		l.start--
		l.items[p-1] = item
		return old, false
	}
	// Full: split. At the end of the last leaf (items arriving in order)
	// the new leaf starts with the item alone, leaving this one full.
	nl := &leaf[T]{}
	t.leaves++
	if l == t.last && p == LeafItems {
		nl.items[0] = item
		nl.end = 1
	} else {
		half := int32(LeafItems / 2)
		copy(nl.items[:], l.items[half:])
		nl.end = LeafItems - half
		clear(l.items[half:])
		l.end = half
		if p <= int(half) {
			copy(l.items[p+1:l.end+1], l.items[p:l.end])
			l.items[p] = item
			l.end++
		} else {
			q := p - int(half)
			copy(nl.items[q+1:nl.end+1], nl.items[q:nl.end])
			nl.items[q] = item
			nl.end++
		}
	}
	nl.prev, nl.next = l, l.next
	if l.next != nil {
		l.next.prev = nl
	} else {
		t.last = nl
	}
	l.next = nl
	t.addChild(&path, t.height, nl.items[nl.start], nil, nl)
	return old, false
}

// addChild inserts a new child (an inner node, or a leaf at the lowest
// level) right after the child taken at path level lvl-1 (the node above
// the split one), with separator key. lvl counts levels of inner nodes
// above the split node: t.height for a leaf.
func (t *Tree[T]) addChild(path *[maxHeight]pathStep[T], lvl int, key T, kid *inner[T], lf *leaf[T]) {
	if lvl == 0 {
		// The split node was the root: grow a level.
		r := &inner[T]{n: 2}
		t.inners++
		r.keys[0] = key
		if lf != nil {
			r.leaves[0], r.leaves[1] = t.rootLeaf, lf
			t.rootLeaf = nil
		} else {
			r.kids[0], r.kids[1] = t.root, kid
		}
		t.root = r
		t.height++
		return
	}
	st := path[lvl-1]
	n, i := st.node, st.i+1 // the new child's position
	if n.n < maxKids {
		insertAt(n, i, key, kid, lf)
		return
	}
	// Full: split, the new node taking the upper half (or, at the right
	// edge, only the new child).
	nn := &inner[T]{}
	t.inners++
	var up T
	if i == maxKids && t.isRightEdge(path, lvl-1) {
		up = key
		nn.n = 1
		nn.kids[0], nn.leaves[0] = kid, lf
	} else {
		half := maxKids / 2
		up = n.keys[half-1]
		nn.n = n.n - half
		copy(nn.keys[:], n.keys[half:n.n-1])
		copy(nn.kids[:], n.kids[half:n.n])
		copy(nn.leaves[:], n.leaves[half:n.n])
		clear(n.keys[half-1:])
		clear(n.kids[half:])
		clear(n.leaves[half:])
		n.n = half
		if i <= half {
			insertAt(n, i, key, kid, lf)
		} else {
			insertAt(nn, i-half, key, kid, lf)
		}
	}
	t.addChild(path, lvl-1, up, nn, nil)
}

// isRightEdge reports whether the path to level lvl always took the last
// child.
func (t *Tree[T]) isRightEdge(path *[maxHeight]pathStep[T], lvl int) bool {
	for j := 0; j <= lvl; j++ {
		if path[j].i != path[j].node.n-1 {
			return false
		}
	}
	return true
}

// insertAt puts a child at position i of n, with separator key before it
// (i >= 1).
func insertAt[T any](n *inner[T], i int, key T, kid *inner[T], lf *leaf[T]) {
	copy(n.keys[i:n.n], n.keys[i-1:n.n-1])
	n.keys[i-1] = key
	copy(n.kids[i+1:n.n+1], n.kids[i:n.n])
	copy(n.leaves[i+1:n.n+1], n.leaves[i:n.n])
	n.kids[i], n.leaves[i] = kid, lf
	n.n++
}

// Delete removes the item equal to item, and returns it.
func (t *Tree[T]) Delete(item T) (T, bool) {
	var path [maxHeight]pathStep[T]
	l := t.descend(item, &path)
	p, found := t.search(l, item)
	if !found {
		var zero T
		return zero, false
	}
	old := l.items[p]
	t.removeAt(l, p, &path)
	return old, true
}

// DeleteMin removes the smallest item, and returns it.
func (t *Tree[T]) DeleteMin() (T, bool) {
	if t.n == 0 {
		var zero T
		return zero, false
	}
	l := t.first
	old := l.items[l.start]
	var path [maxHeight]pathStep[T]
	if n := t.root; n != nil {
		for h := t.height; ; h-- {
			path[t.height-h] = pathStep[T]{n, 0}
			if h == 1 {
				break
			}
			n = n.kids[0]
		}
	}
	t.removeAt(l, int(l.start), &path)
	return old, true
}

// removeAt removes item p of leaf l, reached by path.
func (t *Tree[T]) removeAt(l *leaf[T], p int, path *[maxHeight]pathStep[T]) {
	t.n--
	var zero T
	if p == int(l.start) {
		l.items[p] = zero
		l.start++
	} else {
		copy(l.items[p:l.end-1], l.items[p+1:l.end])
		l.end--
		l.items[l.end] = zero
	}
	if l.start == l.end {
		l.start, l.end = 0, 0
	}
	if t.root == nil {
		return
	}
	switch {
	case l.len() == 0:
		t.unlink(l)
		t.removeChild(path, t.height)
	case l.len() < LeafItems/4:
		st := path[t.height-1]
		if st.i+1 < st.node.n {
			if nx := st.node.leaves[st.i+1]; l.len()+nx.len() <= LeafItems*3/4 {
				// Merge the next leaf into this one.
				oldEnd := l.end
				copy(l.items[:], l.items[l.start:l.end])
				l.end -= l.start
				l.start = 0
				copy(l.items[l.end:], nx.items[nx.start:nx.end])
				l.end += int32(nx.len())
				if l.end < oldEnd {
					clear(l.items[l.end:oldEnd])
				}
				t.unlink(nx)
				path[t.height-1].i++
				t.removeChild(path, t.height)
			}
		}
	}
}

// unlink takes an emptied (or merged) leaf out of the leaf list.
func (t *Tree[T]) unlink(l *leaf[T]) {
	if l.prev != nil {
		l.prev.next = l.next
	} else {
		t.first = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	} else {
		t.last = l.prev
	}
	l.prev, l.next = nil, nil
	t.leaves--
}

// removeChild removes the child taken at path level lvl-1 from its node,
// the node itself if that was its last child, and the root level while
// the root has one child.
func (t *Tree[T]) removeChild(path *[maxHeight]pathStep[T], lvl int) {
	st := path[lvl-1]
	n, i := st.node, st.i
	var zero T
	if i > 0 {
		copy(n.keys[i-1:n.n-2], n.keys[i:n.n-1])
	} else if n.n > 1 {
		copy(n.keys[0:n.n-2], n.keys[1:n.n-1])
	}
	if n.n >= 2 {
		n.keys[n.n-2] = zero
	}
	copy(n.kids[i:n.n-1], n.kids[i+1:n.n])
	copy(n.leaves[i:n.n-1], n.leaves[i+1:n.n])
	n.n--
	n.kids[n.n], n.leaves[n.n] = nil, nil
	if n.n == 0 && lvl > 1 {
		t.inners--
		t.removeChild(path, lvl-1)
		return
	}
	// Shrink the root while it has one child.
	for t.root != nil && t.root.n == 1 {
		t.inners--
		if t.height == 1 {
			t.rootLeaf = t.root.leaves[0]
			t.root = nil
		} else {
			t.root = t.root.kids[0]
		}
		t.height--
	}
	if t.root != nil && t.root.n == 0 {
		// Every leaf went: back to one empty leaf.
		t.inners--
		l := &leaf[T]{}
		t.root, t.height, t.rootLeaf, t.first, t.last, t.leaves = nil, 0, l, l, l, 1
	}
}

// Ascend calls fn for each item in order until fn returns false.
func (t *Tree[T]) Ascend(fn func(T) bool) {
	for l := t.first; l != nil; l = l.next {
		for _, it := range l.items[l.start:l.end] {
			if !fn(it) {
				return
			}
		}
	}
}

// AscendGreaterOrEqual calls fn for each item not less than pivot, in
// order, until fn returns false.
func (t *Tree[T]) AscendGreaterOrEqual(pivot T, fn func(T) bool) {
	var path [maxHeight]pathStep[T]
	l := t.descend(pivot, &path)
	p, _ := t.search(l, pivot)
	for ; l != nil; l, p = l.next, -1 {
		if p < 0 {
			p = int(l.start)
		}
		for _, it := range l.items[p:l.end] {
			if !fn(it) {
				return
			}
		}
	}
}

// Descend calls fn for each item in reverse order until fn returns false.
func (t *Tree[T]) Descend(fn func(T) bool) {
	for l := t.last; l != nil; l = l.prev {
		for j := l.end - 1; j >= l.start; j-- {
			if !fn(l.items[j]) {
				return
			}
		}
	}
}

// DescendLessOrEqual calls fn for each item not greater than pivot, in
// reverse order, until fn returns false.
func (t *Tree[T]) DescendLessOrEqual(pivot T, fn func(T) bool) {
	var path [maxHeight]pathStep[T]
	l := t.descend(pivot, &path)
	p, found := t.search(l, pivot)
	if found {
		p++ // pivot itself is included
	}
	// Items below p in l are less than pivot; earlier leaves all are.
	for j := p - 1; ; j-- {
		if j < int(l.start) {
			if l = l.prev; l == nil {
				return
			}
			j = int(l.end)
			continue
		}
		if !fn(l.items[j]) {
			return
		}
	}
}

// Stats describe a tree's nodes, for memory accounting and tests.
type Stats struct {
	Items, Leaves, Inners, Height int
}

// Stats returns the tree's figures.
func (t *Tree[T]) Stats() Stats {
	return Stats{Items: t.n, Leaves: t.leaves, Inners: t.inners, Height: t.height}
}

// check verifies the tree's invariants (for tests): the leaves in order
// through the links, the items sorted and within their separators, counts
// right. It returns an error message, or "".
func (t *Tree[T]) check() string {
	var items []T
	var leaves int
	for l := t.first; l != nil; l = l.next {
		leaves++
		if l.next != nil && l.next.prev != l {
			return "broken prev link"
		}
		if l.start > l.end || l.end > LeafItems {
			return "bad window"
		}
		if t.root != nil && l.len() == 0 {
			return "empty leaf in a tree of several"
		}
		items = append(items, l.items[l.start:l.end]...)
	}
	if leaves != t.leaves {
		return "leaf count"
	}
	if len(items) != t.n {
		return "item count"
	}
	for i := 1; i < len(items); i++ {
		if !t.less(items[i-1], items[i]) {
			return "items out of order"
		}
	}
	if t.root == nil {
		if t.height != 0 || t.first != t.rootLeaf || t.last != t.rootLeaf {
			return "single-leaf tree"
		}
		return ""
	}
	// Walk the inner nodes: every leaf at the same depth, reached in
	// order, its items within the separators.
	var order []*leaf[T]
	inners := 0
	var walk func(n *inner[T], h int, lo, hi *T) string
	walk = func(n *inner[T], h int, lo, hi *T) string {
		inners++
		if n.n < 1 {
			return "inner node without children"
		}
		for i := range n.n {
			clo, chi := lo, hi
			if i > 0 {
				clo = &n.keys[i-1]
			}
			if i < n.n-1 {
				chi = &n.keys[i]
			}
			if h == 1 {
				l := n.leaves[i]
				if l == nil || n.kids[i] != nil {
					return "bad leaf child"
				}
				for _, it := range l.items[l.start:l.end] {
					if clo != nil && t.less(it, *clo) || chi != nil && !t.less(it, *chi) {
						return "item outside its separators"
					}
				}
				order = append(order, l)
				continue
			}
			if n.kids[i] == nil || n.leaves[i] != nil {
				return "bad inner child"
			}
			if msg := walk(n.kids[i], h-1, clo, chi); msg != "" {
				return msg
			}
		}
		return ""
	}
	if msg := walk(t.root, t.height, nil, nil); msg != "" {
		return msg
	}
	if inners != t.inners {
		return "inner count"
	}
	i := 0
	for l := t.first; l != nil; l = l.next {
		if i >= len(order) || order[i] != l {
			return "leaf list and tree disagree"
		}
		i++
	}
	if slices.Contains(order, nil) {
		return "nil leaf"
	}
	return ""
}
