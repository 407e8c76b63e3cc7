package engine

import "time"

// The backlog gauge of Metrics (documents expired but not yet deleted)
// must not cost a walk of the expired entries: with a million of them a
// walk took 141 ms per scrape. Each TTL index instead keeps counts of its
// entries by date, to the second, kept up to date wherever an entry is
// added to or removed from its expiry tree; how many entries are at or
// before a cutoff is then a sum of a few hundred counts at most, whatever
// the backlog. The counts need nothing of the tree but its entries' dates.

// Shape of expiryCounts: a 256-ary radix tree of counts over 64-bit keys,
// one map per level.
const (
	countBits   = 8
	countFan    = 1 << countBits
	countLevels = 64 / countBits
)

// expiryCounts counts entries by key, the entry's date in whole seconds
// rounded up (see countKey). Level l holds, for every bucket b = key >>
// (8*l) that has entries, how many it has; total is the number of entries.
// The zero value is not usable: call newExpiryCounts. Like the tree it
// shadows, it changes only under the collection's write lock and is read
// under its read lock.
type expiryCounts struct {
	levels [countLevels]map[uint64]int64
	total  int64

	// Between deferAdds and flush (one TTL batch, under the write lock),
	// consecutive changes of one key are summed in pendKey and pendDelta
	// and reach the levels when the key changes or at flush: a batch
	// deletes the head of the expiry tree, mostly of one second (one key),
	// and eight map updates per document were a tenth of its cost.
	deferring bool
	pendKey   uint64
	pendDelta int64
}

func newExpiryCounts() *expiryCounts {
	c := &expiryCounts{}
	for l := range c.levels {
		c.levels[l] = map[uint64]int64{}
	}
	return c
}

// countKey maps an entry's date to its key: the date rounded up to a whole
// second (an entry counts as expired once the whole second it ends in is
// past), shifted to an unsigned number of the same order.
func countKey(sec int64, nsec int32) uint64 {
	if nsec > 0 && sec < 1<<63-1 {
		sec++
	}
	return uint64(sec) ^ 1<<63
}

// cutoffKey maps a cutoff to the key of its whole second, rounded down.
func cutoffKey(cut time.Time) uint64 {
	return uint64(cut.Unix()) ^ 1<<63 // Unix rounds down, also before 1970
}

// add counts one more (delta 1) or one fewer (delta -1) entry with date
// (sec, nsec). Empty buckets are deleted so that the maps hold only
// occupied buckets.
func (c *expiryCounts) add(sec int64, nsec int32, delta int64) {
	k := countKey(sec, nsec)
	if c.deferring {
		if c.pendDelta != 0 && k != c.pendKey {
			c.apply(c.pendKey, c.pendDelta)
		}
		if k != c.pendKey {
			c.pendKey, c.pendDelta = k, 0
		}
		c.pendDelta += delta
		return
	}
	c.apply(k, delta)
}

// deferAdds starts summing changes per key (see the pend fields); flush
// applies them. Call both under the write lock, with no reader of the
// counts between them.
func (c *expiryCounts) deferAdds() { c.deferring = true }

// flush applies the changes summed since deferAdds and ends deferring.
func (c *expiryCounts) flush() {
	if c.pendDelta != 0 {
		c.apply(c.pendKey, c.pendDelta)
	}
	c.pendDelta, c.deferring = 0, false
}

// apply adds delta to key k's count at every level.
func (c *expiryCounts) apply(k uint64, delta int64) {
	c.total += delta
	for l := range c.levels {
		b := k >> (countBits * l)
		m := c.levels[l]
		if n := m[b] + delta; n != 0 {
			m[b] = n
		} else {
			delete(m, b)
		}
	}
}

// atOrBefore returns how many entries have a key at or before k, and how
// many counts it read to find out (at most countLevels*(countFan/2+1)+1,
// whatever the number of entries).
//
// An entry with key x < k is counted at the one level l where x's bucket
// and k's are siblings (same bucket at level l+1) and x's comes first. At
// each level it sums the siblings before k's bucket, or subtracts those
// from k's on from their parent's count, or, if the level's map is
// smaller than either, scans the map: whichever reads fewer counts.
func (c *expiryCounts) atOrBefore(k uint64) (n int64, probes int) {
	n = c.levels[0][k]
	probes = 1
	for l := range c.levels {
		shift := uint(countBits * l)
		b := k >> shift
		first := b &^ (countFan - 1)
		last := first | (countFan - 1)
		before := int(b - first)
		m := c.levels[l]
		switch {
		case len(m) <= min(before, countFan-before):
			for key, cnt := range m {
				if key >= first && key < b {
					n += cnt
				}
			}
			probes += len(m)
		case before <= countFan/2:
			for s := first; s < b; s++ {
				n += m[s]
			}
			probes += before
		default:
			parent := c.total
			if l+1 < countLevels {
				parent = c.levels[l+1][b>>countBits]
			}
			for s := b; ; s++ {
				parent -= m[s]
				if s == last {
					break
				}
			}
			n += parent
			probes += countFan - before + 1
		}
	}
	return n, probes
}

// clone returns a copy in freshly sized maps (Compact: Go maps keep their
// memory after deletes).
func (c *expiryCounts) clone() *expiryCounts {
	out := &expiryCounts{total: c.total}
	for l, m := range c.levels {
		out.levels[l] = make(map[uint64]int64, len(m))
		for k, v := range m {
			out.levels[l][k] = v
		}
	}
	return out
}

// addEntry puts e, the entry of a document whose TTL key is k, in the
// expiry tree and counts it. Every change of the tree goes through
// addEntry and removeEntry, so that the counts always agree with it.
func (t *ttlIndex) addEntry(e expiryEntry, k ttlKey) {
	if _, replaced := t.expiry.ReplaceOrInsert(e); !replaced {
		t.counts.add(e.sec, e.nsec, 1)
		t.count(k, 1)
	}
	t.walk.added(e, t.expiry.Len())
}

// removeEntry takes e out of the expiry tree and the counts.
func (t *ttlIndex) removeEntry(e expiryEntry, k ttlKey) {
	found := false
	if first, ok := t.expiry.Min(); ok && first == e {
		// A TTL batch deletes the head of the tree: no search.
		t.expiry.DeleteMin()
		found = true
	} else {
		_, found = t.expiry.Delete(e)
	}
	if found {
		t.counts.add(e.sec, e.nsec, -1)
		t.count(k, -1)
	}
}

// backlog returns how many of the index's entries are expired at now,
// counted to the second (see TTLMetrics.Backlog), and the threshold of the
// earliest entry if it is expired (exact). It reads counts, never walks
// entries; work is how many counts and entries it read. Call holding the
// collection's read lock.
func (t *ttlIndex) backlog(now time.Time) (n int64, oldest time.Time, expired bool, work int) {
	cut := t.cutoff(now)
	n, work = t.counts.atOrBefore(cutoffKey(cut))
	if e, ok := t.expiry.Min(); ok {
		work++
		if entryNotAfter(e, cut) {
			return n, t.threshold(e), true, work
		}
	}
	return n, time.Time{}, false, work
}
