// Package seqlog keeps a collection's documents in insertion order: a log
// of (sequence, slot) pairs, appended in increasing sequence order, in
// fixed pages of plain integers that the garbage collector never looks
// inside. A page stores one 64-bit base sequence and, per pair, two 32-bit
// integers: the sequence's distance from the base and the slot. A
// deletion marks its pair dead; a page mostly dead is squeezed and merged
// with the next one, two neighbouring pages holding half a page between
// them become one (when all their live pairs reach one base), an empty
// page goes. So appending costs O(1), deleting O(log pages), and a million
// documents are about 650 heap objects of 8.02 bytes per document (8.04
// with the page index).
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

// maxDelta is the farthest a sequence in a page may be from the page's
// base: a distance is stored in 32 bits. Sequences go up to 2^48-1, so
// two sequences 2^32 or more apart cannot share a page.
const maxDelta = math.MaxUint32

// sizeClass is the Go size class a page is allocated in (12 KiB).
const sizeClass = 12288

// PageCap is the number of pairs a page holds: as many 8-byte pairs as
// fit in sizeClass beside the page's 20 bytes of base and counts. A page
// is then 12,288 bytes, Go's 12 KiB size class exactly.
const PageCap = (sizeClass - 8 - 3*4) / 8

// page is a run of pairs in sequence order. Pairs [first, n) may be live;
// those before first are dead. Pair j's sequence is base + delta[j]:
// deltas increase along [first, n), and pair 0's delta is 0 (a page opens
// at its first pair, a squeeze rebases it at its first live pair).
type page struct {
	base  uint64
	delta [PageCap]uint32
	slot  [PageCap]uint32
	n     int32 // pairs written
	first int32 // the first pair that may be live
	live  int32
}

// PageBytes is the heap size of a page.
const PageBytes = int64(unsafe.Sizeof(page{}))

// A page must fit its size class (the constant overflows otherwise).
const _ = uint(sizeClass - PageBytes)

// seq returns pair j's sequence.
func (p *page) seq(j int32) uint64 { return p.base + uint64(p.delta[j]) }

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
	p := l.room(seq)
	if p == nil {
		p = &page{base: seq}
		if len(l.pages) == cap(l.pages) {
			// Grown by hand, so that GrowthFor knows the new capacity.
			c := indexCap(cap(l.pages))
			l.pages = append(make([]*page, 0, c), l.pages...)
			l.firsts = append(make([]uint64, 0, c), l.firsts...)
		}
		l.pages = append(l.pages, p)
		l.firsts = append(l.firsts, seq)
	}
	p.delta[p.n], p.slot[p.n] = uint32(seq-p.base), slot
	p.n++
	p.live++
	l.n++
}

// room returns the last page if seq, greater than every sequence pushed,
// can be appended to it, or nil: a page must be opened. An empty last
// page starts afresh at seq. One whose base is too far behind seq (a jump
// of the sequence) but whose first live pair is not is squeezed (rebased
// at that pair); if its first live pair is too far behind too, and it
// holds half a page with its predecessor, its live pairs join the
// predecessor's and it starts afresh at seq, as a deletion would have
// merged them (mergeSparse's bound: a page left behind by a jump is not
// left sparse, and a page opened by one is far from its predecessor).
// GrowthFor follows the same rule.
func (l *Log) room(seq uint64) *page {
	k := len(l.pages)
	if k == 0 {
		return nil
	}
	p := l.pages[k-1]
	switch {
	case p.live == 0: // only the last page stays empty, and never full
		p.base, p.n, p.first = seq, 0, 0
		l.firsts[k-1] = seq
		return p
	case p.n == PageCap:
		return nil
	case seq-p.base <= maxDelta:
		return p
	case seq-p.seq(p.first) <= maxDelta:
		l.squeeze(k - 1)
		return p
	case k > 1 && l.pages[k-2].live+p.live <= PageCap/2 && l.oneBase(k-2):
		l.squeeze(k - 2)
		l.moveInto(k - 2)
		p.base, p.n, p.first, p.live = seq, 0, 0, 0
		l.firsts[k-1] = seq
		return p
	}
	return nil
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
	if seq < p.base || seq-p.base > maxDelta {
		return -1
	}
	d := uint32(seq - p.base)
	if p.first < p.n && p.delta[p.first] == d {
		return int(p.first) // deletions in order
	}
	j, found := slices.BinarySearch(p.delta[p.first:p.n], d)
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
			l.firsts[i] = p.seq(p.first)
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
		// into it if both fit (in count and in one base).
		l.squeeze(i)
		if i+1 < len(l.pages) && p.n+l.pages[i+1].live <= PageCap && l.oneBase(i) {
			l.merge(i)
		}
	}
	l.mergeSparse(i)
	return true
}

// mergeSparse merges page i with a neighbour, and the result with the
// next, while two neighbours hold at most half a page of live pairs
// between them and can share a base (oneBase). So, after every deletion,
// any two neighbouring pages hold more than PageCap/2 live pairs or are
// far apart: from the first live sequence of the one to the last sequence
// written to the other is 2^32 or more. (A merge only adds to a pair's
// sum; a push only adds, and only takes pages farther apart; a deletion
// checks both pairs its page is in; a jump of the sequence does not leave
// the last page sparse beside its predecessor, nor open a page its
// predecessor could take (room); a push opening a page because the last
// is full leaves the last two below it until the last fills.) Every other
// far pair covers 2^32 sequences of its own, so a log of n live pairs,
// from its first live sequence to the last pushed spanning S, has at most
// F ≤ 2S/2^32 far pairs and fewer than 4n/PageCap + 2 + F pages, whatever
// the order of deletions. F is 0 while S < 2^32: for a collection, while
// its oldest document is less than 2^32 insertions old.
// (Squeezing alone let pages that had shrunk one after the other stay
// apart, a few live pairs each.) A merge copies at most PageCap/2 pairs,
// and there are no more merges than pages ever opened: O(1) per push.
func (l *Log) mergeSparse(i int) {
	for {
		switch {
		case i+1 < len(l.pages) && l.pages[i].live+l.pages[i+1].live <= PageCap/2 && l.oneBase(i):
			l.squeeze(i)
			l.merge(i)
		case i > 0 && i < len(l.pages) && l.pages[i-1].live+l.pages[i].live <= PageCap/2 && l.oneBase(i-1):
			i--
			l.squeeze(i)
			l.merge(i)
		default:
			return
		}
	}
}

// oneBase reports whether the live pairs of pages i and i+1 can share a
// base: from page i's first live sequence to the last sequence written in
// page i+1 (live or dead: a bound found without a scan) is less than
// 2^32. Page i is rebased at its first live pair by the squeeze before a
// merge.
func (l *Log) oneBase(i int) bool {
	p, q := l.pages[i], l.pages[i+1]
	if p.live == 0 || q.live == 0 {
		return true
	}
	return q.seq(q.n-1)-p.seq(p.first) <= maxDelta
}

// squeeze moves page i's live pairs to its front and rebases the page at
// its first live pair.
func (l *Log) squeeze(i int) {
	p := l.pages[i]
	w := int32(0)
	var d0 uint32 // the first live pair's delta: the new base's
	for r := p.first; r < p.n; r++ {
		if p.slot[r] != dead {
			if w == 0 {
				d0 = p.delta[r]
			}
			p.delta[w], p.slot[w] = p.delta[r]-d0, p.slot[r]
			w++
		}
	}
	p.base += uint64(d0)
	p.n, p.first = w, 0
	if w > 0 {
		l.firsts[i] = p.base
	}
}

// merge appends page i+1's live pairs to page i, squeezed and sharing a
// base with it (oneBase), and drops page i+1.
func (l *Log) merge(i int) {
	l.moveInto(i)
	l.pages = slices.Delete(l.pages, i+1, i+2)
	l.firsts = slices.Delete(l.firsts, i+1, i+2)
}

// moveInto appends page i+1's live pairs to page i, squeezed and sharing
// a base with it (oneBase), leaving page i+1's as they were.
func (l *Log) moveInto(i int) {
	p, q := l.pages[i], l.pages[i+1]
	if p.n == 0 && q.live > 0 {
		p.base = q.seq(q.first)
	}
	for r := q.first; r < q.n; r++ {
		if q.slot[r] != dead {
			p.delta[p.n], p.slot[p.n] = uint32(q.seq(r)-p.base), q.slot[r]
			p.n++
		}
	}
	p.live += q.live
	if p.first < p.n {
		l.firsts[i] = p.seq(p.first)
	}
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
				return Item{p.seq(j), p.slot[j]}, true
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
		j := p.first
		if p.n > p.first && p.seq(p.first) < seq {
			if seq-p.base > maxDelta {
				j = p.n // every pair of the page is before seq
			} else {
				k, _ := slices.BinarySearch(p.delta[p.first:p.n], uint32(seq-p.base))
				j += int32(k)
			}
		}
		// Locals and slices the length of the page: no reload of the base
		// and no bounds check per pair.
		base, slots := p.base, p.slot[j:p.n]
		deltas := p.delta[j:p.n]
		deltas = deltas[:len(slots)]
		for k, sl := range slots {
			if sl != dead && !fn(Item{base + uint64(deltas[k]), sl}) {
				return
			}
		}
	}
}

// Ascend calls fn for each live pair in sequence order until fn returns
// false.
func (l *Log) Ascend(fn func(Item) bool) { l.AscendFrom(0, fn) }

// Bytes returns the heap the log holds, in bytes: its pages (PageBytes
// each) and its page index (8 bytes a page pointer, 8 a first sequence,
// counted at capacity).
func (l *Log) Bytes() int64 {
	return int64(len(l.pages))*PageBytes + int64(cap(l.pages))*8 + int64(cap(l.firsts))*8
}

// indexCap is the capacity the page index grows to from c.
func indexCap(c int) int { return max(8, 2*c) }

// GrowthFor returns what pushing k consecutive sequences, seq to
// seq+k-1, adds to Bytes, in bytes: the pages they open and the growth of
// the page index. seq must be greater than every sequence pushed. (Where
// the pushes go depends on how far seq is from the last page's base.)
func (l *Log) GrowthFor(seq uint64, k int) int64 {
	free := 0
	if len(l.pages) > 0 {
		free = l.takes(seq, k)
	}
	if k <= free {
		return 0
	}
	// A page opened at s takes PageCap consecutive sequences from s on.
	pages := (k - free + PageCap - 1) / PageCap
	grown := int64(pages) * PageBytes
	for c, n := cap(l.pages), len(l.pages)+pages; n > c; {
		nc := indexCap(c)
		grown += int64(nc-c) * 16
		c = nc
	}
	return grown
}

// takes returns how many of k pushes of seq, seq+1, ... the last page
// takes, by Push's rule (room): all up to PageCap if it is empty (it
// starts afresh); else those within its room and reach of its base, then,
// if its base falls short, after a squeeze at its first live pair, those
// within that one's reach, and then, if that falls short too and the
// page is sparse with its predecessor, up to PageCap more once it starts
// afresh.
func (l *Log) takes(seq uint64, k int) int {
	p := l.pages[len(l.pages)-1]
	if p.live == 0 {
		return min(k, PageCap)
	}
	n, base, t := int(p.n), p.base, 0
	for t < k && n < PageCap {
		s := seq + uint64(t)
		if s-base > maxDelta {
			fl := p.seq(p.first)
			if s-fl > maxDelta {
				if i := len(l.pages) - 2; i >= 0 {
					last := p.seq(p.n - 1) // the last sequence written to p
					if t > 0 {
						last = s - 1
					}
					o := l.pages[i]
					if int(o.live+p.live)+t <= PageCap/2 && last-o.seq(o.first) <= maxDelta {
						t += min(k-t, PageCap) // p starts afresh at s
					}
				}
				break
			}
			// The squeeze keeps the live pairs, those pushed so far too.
			n, base = int(p.live)+t, fl
			continue
		}
		c := min(k-t, PageCap-n)
		if reach := maxDelta - (s - base) + 1; reach < uint64(c) {
			c = int(reach)
		}
		t, n = t+c, n+c
	}
	return t
}

// Pages returns the number of pages, for tests.
func (l *Log) Pages() int { return len(l.pages) }
