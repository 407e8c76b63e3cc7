// Package seqlog keeps a collection's documents in insertion order: a log
// of (sequence, slot) pairs, appended in increasing sequence order, in
// fixed pages of plain integers that the garbage collector never looks
// inside. A deletion marks its pair dead; a page mostly dead is squeezed
// and merged with the next one, two neighbouring pages holding half a
// page between them become one, an empty page goes. So appending costs
// O(1), deleting O(log pages), and a million documents are about a
// thousand heap objects of 12 bytes per document.
//
// Concurrency: none of its own. The collection changes a Log under its
// write lock and reads it under its read lock.
package seqlog

import (
	"math"
	"slices"
	"sort"
	"unsafe"
)

// Item is one document's place in the log: its insertion sequence and its
// slot in the store.
type Item struct {
	Seq  uint64
	Slot uint32
}

// dead marks a deleted pair. No record has this slot: a store holds at
// most 2^32-1 records, in slots 0 to 2^32-2.
const dead = math.MaxUint32

// PageCap is the number of pairs a page holds. A page is then 12,248
// bytes, just under Go's 12 KiB size class.
const PageCap = 1020

// page is a run of pairs in sequence order. Pairs [first, n) may be live;
// those before first are dead.
type page struct {
	seq   [PageCap]uint64
	slot  [PageCap]uint32
	n     int32 // pairs written
	first int32 // the first pair that may be live
	live  int32
}

// PageBytes is the heap size of a page.
const PageBytes = int64(unsafe.Sizeof(page{}))

// Log is the insertion order. The zero value is an empty log.
type Log struct {
	pages  []*page
	firsts []uint64 // firsts[i] = pages[i].seq[first]: the page index, searched by sequence
	n      int      // live pairs
	last   uint64   // the last sequence pushed
	pushed bool     // last is set
	hint   int      // the page of the last deletion: deletions in order search nothing
}

// Len returns the number of live pairs.
func (l *Log) Len() int { return l.n }

// Push appends a pair. seq must be greater than every sequence pushed
// before (Push panics otherwise: the log would be out of order).
func (l *Log) Push(seq uint64, slot uint32) {
	if l.pushed && seq <= l.last {
		panic("seqlog: sequence out of order")
	}
	l.last, l.pushed = seq, true
	var p *page
	if k := len(l.pages); k > 0 && l.pages[k-1].n < PageCap {
		p = l.pages[k-1]
	} else {
		p = new(page)
		if len(l.pages) == cap(l.pages) {
			// Grown by hand, so that GrowthFor knows the new capacity.
			c := indexCap(cap(l.pages))
			l.pages = append(make([]*page, 0, c), l.pages...)
			l.firsts = append(make([]uint64, 0, c), l.firsts...)
		}
		l.pages = append(l.pages, p)
		l.firsts = append(l.firsts, seq)
	}
	p.seq[p.n], p.slot[p.n] = seq, slot
	p.n++
	p.live++
	l.n++
}

// find returns the page that holds seq if any pair does, or -1.
func (l *Log) find(seq uint64) int {
	if h := l.hint; h < len(l.pages) && l.firsts[h] <= seq && (h+1 == len(l.pages) || seq < l.firsts[h+1]) {
		return h
	}
	// The last page whose first sequence is at most seq.
	i := sort.Search(len(l.firsts), func(i int) bool { return l.firsts[i] > seq }) - 1
	if i >= 0 {
		l.hint = i
	}
	return i
}

// at returns the position of seq in page p, or -1.
func (p *page) at(seq uint64) int {
	if p.first < p.n && p.seq[p.first] == seq {
		return int(p.first) // deletions in order
	}
	s := p.seq[p.first:p.n]
	j, found := slices.BinarySearch(s, seq)
	if !found {
		return -1
	}
	return int(p.first) + j
}

// Delete removes the pair with this sequence and reports whether the log
// held it.
func (l *Log) Delete(seq uint64) bool {
	i := l.find(seq)
	if i < 0 {
		return false
	}
	p := l.pages[i]
	j := p.at(seq)
	if j < 0 || p.slot[j] == dead {
		return false
	}
	p.slot[j] = dead
	p.live--
	l.n--
	if int32(j) == p.first {
		for p.first < p.n && p.slot[p.first] == dead {
			p.first++
		}
		if p.first < p.n {
			l.firsts[i] = p.seq[p.first]
		}
	}
	switch {
	case p.live == 0 && (i < len(l.pages)-1 || p.n == PageCap):
		l.dropPage(i)
		if i > 0 {
			l.mergeSparse(i - 1) // pages i-1 and i+1 are neighbours now
		}
		return true
	case i > 0 && p.live*4 < p.n-p.first:
		// Mostly dead (the first page is left alone: deletions in order
		// empty it from the front): squeeze it, and merge the next page
		// into it if both fit.
		l.squeeze(i)
		if i+1 < len(l.pages) && p.n+l.pages[i+1].live <= PageCap {
			l.merge(i)
		}
	}
	l.mergeSparse(i)
	return true
}

// mergeSparse merges page i with a neighbour, and the result with the
// next, while two neighbours hold at most half a page of live pairs
// between them. So, after every deletion, any two neighbouring pages hold
// more than PageCap/2 live pairs (a merge only adds to a pair's sum, and a
// push only adds, except that one opening a page leaves the last two
// below it until the last fills), and a log of n live pairs has fewer than
// 4n/PageCap + 1 pages, whatever the order of deletions.
// (Squeezing alone let pages that had shrunk one after the other stay
// apart, a few live pairs each.) A merge copies at most PageCap/2 pairs,
// and there are no more merges than pages ever opened: O(1) per push.
func (l *Log) mergeSparse(i int) {
	for {
		switch {
		case i+1 < len(l.pages) && l.pages[i].live+l.pages[i+1].live <= PageCap/2:
			l.squeeze(i)
			l.merge(i)
		case i > 0 && i < len(l.pages) && l.pages[i-1].live+l.pages[i].live <= PageCap/2:
			i--
			l.squeeze(i)
			l.merge(i)
		default:
			return
		}
	}
}

// squeeze moves page i's live pairs to its front.
func (l *Log) squeeze(i int) {
	p := l.pages[i]
	w := int32(0)
	for r := p.first; r < p.n; r++ {
		if p.slot[r] != dead {
			p.seq[w], p.slot[w] = p.seq[r], p.slot[r]
			w++
		}
	}
	p.n, p.first = w, 0
	if w > 0 {
		l.firsts[i] = p.seq[0]
	}
}

// merge appends page i+1's live pairs to page i and drops page i+1.
func (l *Log) merge(i int) {
	p, q := l.pages[i], l.pages[i+1]
	for r := q.first; r < q.n; r++ {
		if q.slot[r] != dead {
			p.seq[p.n], p.slot[p.n] = q.seq[r], q.slot[r]
			p.n++
		}
	}
	p.live += q.live
	if p.first < p.n {
		l.firsts[i] = p.seq[p.first]
	}
	l.pages = slices.Delete(l.pages, i+1, i+2)
	l.firsts = slices.Delete(l.firsts, i+1, i+2)
}

// dropPage removes page i, which holds no live pair.
func (l *Log) dropPage(i int) {
	if i == 0 {
		// Deletions in order drop the first page: no copy.
		l.pages[0] = nil
		l.pages, l.firsts = l.pages[1:], l.firsts[1:]
	} else {
		l.pages = slices.Delete(l.pages, i, i+1)
		l.firsts = slices.Delete(l.firsts, i, i+1)
	}
	l.hint = 0
}

// Min returns the live pair with the smallest sequence.
func (l *Log) Min() (Item, bool) {
	for _, p := range l.pages {
		for j := p.first; j < p.n; j++ {
			if p.slot[j] != dead {
				return Item{p.seq[j], p.slot[j]}, true
			}
		}
	}
	return Item{}, false
}

// AscendFrom calls fn for each live pair whose sequence is at least seq,
// in sequence order, until fn returns false. fn must not change the log.
func (l *Log) AscendFrom(seq uint64, fn func(Item) bool) {
	i := max(sort.Search(len(l.firsts), func(i int) bool { return l.firsts[i] > seq })-1, 0)
	for ; i < len(l.pages); i++ {
		p := l.pages[i]
		j := int(p.first)
		if p.n > p.first && p.seq[p.first] < seq {
			j, _ = slices.BinarySearch(p.seq[p.first:p.n], seq)
			j += int(p.first)
		}
		for ; j < int(p.n); j++ {
			if p.slot[j] != dead && !fn(Item{p.seq[j], p.slot[j]}) {
				return
			}
		}
	}
}

// Ascend calls fn for each live pair in sequence order until fn returns
// false.
func (l *Log) Ascend(fn func(Item) bool) { l.AscendFrom(0, fn) }

// Bytes returns the heap the log holds: its pages and its page index.
func (l *Log) Bytes() int64 {
	return int64(len(l.pages))*PageBytes + int64(cap(l.pages))*8 + int64(cap(l.firsts))*8
}

// indexCap is the capacity the page index grows to from c.
func indexCap(c int) int { return max(8, 2*c) }

// GrowthFor returns what k more pushes add to Bytes: the pages they open
// and the growth of the page index.
func (l *Log) GrowthFor(k int) int64 {
	free := 0
	if n := len(l.pages); n > 0 {
		free = int(PageCap - l.pages[n-1].n)
	}
	if k <= free {
		return 0
	}
	pages := (k - free + PageCap - 1) / PageCap
	grown := int64(pages) * PageBytes
	for c, n := cap(l.pages), len(l.pages)+pages; n > c; {
		nc := indexCap(c)
		grown += int64(nc-c) * 16
		c = nc
	}
	return grown
}

// Pages returns the number of pages, for tests.
func (l *Log) Pages() int { return len(l.pages) }
