package seqlog

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/store"
	"github.com/ttldb/ttldb/internal/testutil"
)

// check compares the log with a model (live sequences -> slot) and
// verifies the page index.
func check(t *testing.T, l *Log, model map[uint64]uint32) {
	t.Helper()
	require.Equal(t, len(model), l.Len())
	want := make([]Item, 0, len(model))
	for s, sl := range model {
		want = append(want, Item{s, sl})
	}
	slices.SortFunc(want, func(a, b Item) int { return int(a.Seq - b.Seq) })
	var got []Item
	l.Ascend(func(it Item) bool { got = append(got, it); return true })
	if len(want) == 0 {
		require.Empty(t, got)
	} else {
		require.Equal(t, want, got)
	}
	m, ok := l.Min()
	require.Equal(t, len(want) > 0, ok)
	if ok {
		require.Equal(t, want[0], m)
	}
	checkPages(t, l)
	// AscendFrom starts at the first live sequence at or after its argument.
	for range 20 {
		if len(want) == 0 {
			break
		}
		k := rand.IntN(len(want))
		from := want[k].Seq
		if k > 0 && want[k-1].Seq+1 < from {
			from-- // a sequence no pair has
		}
		var first Item
		l.AscendFrom(from, func(it Item) bool { first = it; return false })
		require.Equal(t, want[k], first, "from %d", from)
	}
}

// checkPages verifies every page: its pairs in order within reach of its
// base, the dead marks, the live counts and the page index.
func checkPages(t *testing.T, l *Log) {
	t.Helper()
	total := 0
	for i, p := range l.pages {
		require.True(t, 0 <= p.first && p.first <= p.n && p.n <= PageCap, "page %d: first %d, n %d", i, p.first, p.n)
		if p.n > 0 {
			// Every pair's delta is below 2^32 by its type; the page opens at its first pair.
			require.Zero(t, p.delta[0], "page %d: the base is pair 0's sequence", i)
		}
		live := int32(0)
		for j := int32(0); j < p.n; j++ { // plain checks: a page is many pairs
			if j > 0 && p.delta[j] <= p.delta[j-1] {
				t.Fatalf("page %d: delta %d at %d after %d", i, p.delta[j], j, p.delta[j-1])
			}
			if j >= p.first && p.seq(j) < l.firsts[i] {
				t.Fatalf("page %d: sequence %d below the index's %d", i, p.seq(j), l.firsts[i])
			}
			if p.slot[j] != dead {
				live++
				if j < p.first {
					t.Fatalf("page %d: pair %d live before first %d", i, j, p.first)
				}
			}
		}
		require.Equal(t, live, p.live, "page %d", i)
		total += int(live)
		if p.first < p.n {
			require.NotEqual(t, uint32(dead), p.slot[p.first], "page %d: first is live", i)
			require.Equal(t, p.seq(p.first), l.firsts[i], "page %d: index", i)
		} else {
			require.Equal(t, len(l.pages)-1, i, "only the last page stays empty")
			require.Less(t, p.n, int32(PageCap), "an empty full page goes")
		}
		if i > 0 {
			require.Greater(t, l.firsts[i], l.firsts[i-1])
			if q := l.pages[i-1]; q.n > 0 && p.n > 0 {
				require.Less(t, q.seq(q.n-1), p.seq(0), "pages %d and %d in order", i-1, i)
			}
		}
	}
	require.Equal(t, total, l.Len())
	require.Len(t, l.firsts, len(l.pages))
}

// Random pushes and deletions (in order, at random, in runs) agree with a
// model, and the log keeps few pages.
func TestAgreesWithModel(t *testing.T) {
	seed := testutil.Seed(t)
	agreesWithModel(t, seed)
}

// TestAgreesWithModelSparsePages replays a seed under which pages that
// had shrunk one after the other stayed apart: 5 pages for 478 live
// pairs, where any two neighbours must hold more than half a page.
func TestAgreesWithModelSparsePages(t *testing.T) {
	agreesWithModel(t, 8009489286452295418)
}

// TestNeighboursShrinkingInTurn empties pages from the front, one after
// the other, each to a few pairs: every page is squeezed while its next
// neighbour is still full, so squeezing alone never merged them.
func TestNeighboursShrinkingInTurn(t *testing.T) {
	var l Log
	const pages = 40
	for s := uint64(1); s <= pages*PageCap; s++ {
		l.Push(s, uint32(s))
	}
	live := 0
	for p := 1; p < pages; p++ {
		base := uint64(p * PageCap)
		for j := uint64(11); j <= PageCap; j++ { // keep 10 pairs of page p
			require.True(t, l.Delete(base+j))
		}
		live += 10
	}
	live += PageCap // page 0, untouched
	require.Equal(t, live, l.Len())
	assert.Less(t, l.Pages(), 4*live/PageCap+1+1, "%d pages for %d live pairs", l.Pages(), live)
	n := 0
	l.AscendFrom(0, func(it Item) bool { n++; return true })
	require.Equal(t, live, n)
}

// agreesWithModel runs seeded pushes and deletions (oldest first, at
// random, runs in the middle) against a map, checking contents and that
// the pages follow what is live.
func agreesWithModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var l Log
	model := map[uint64]uint32{}
	var live []uint64
	seq := uint64(0)
	for round := range 60 {
		for range rng.IntN(5000) {
			seq += 1 + uint64(rng.IntN(3))
			l.Push(seq, uint32(seq*7))
			model[seq] = uint32(seq * 7)
			live = append(live, seq)
		}
		del := rng.IntN(len(live) + 1)
		switch round % 3 {
		case 0: // oldest first, as TTL and capped collections delete
			for _, s := range live[:del] {
				require.True(t, l.Delete(s))
				delete(model, s)
			}
			live = live[del:]
		case 1: // at random
			rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
			for _, s := range live[:del] {
				require.True(t, l.Delete(s))
				delete(model, s)
			}
			live = live[del:]
			slices.Sort(live)
		case 2: // a run in the middle
			from := rng.IntN(len(live) - del + 1)
			for _, s := range live[from : from+del] {
				require.True(t, l.Delete(s))
				delete(model, s)
			}
			live = slices.Delete(live, from, from+del)
		}
		assert.False(t, l.Delete(seq+1), "never pushed")
		check(t, &l, model)
		// Any two neighbouring pages hold more than half a page
		// (mergeSparse), so memory follows what is live.
		assert.LessOrEqual(t, l.Pages(), 4*len(live)/PageCap+1, "round %d: %d pages for %d live", round, l.Pages(), len(live))
	}
	for _, s := range live {
		require.True(t, l.Delete(s))
		require.False(t, l.Delete(s), "deleted twice")
	}
	check(t, &l, map[uint64]uint32{})
	assert.LessOrEqual(t, l.Pages(), 1)
}

// Pushing out of order is a programming error.
func TestPushOutOfOrderPanics(t *testing.T) {
	var l Log
	l.Push(5, 1)
	assert.Panics(t, func() { l.Push(5, 2) })
	assert.Panics(t, func() { l.Push(4, 2) })
}

// A page holds no Go pointer: the garbage collector never scans the log's
// contents.
func TestPageHasNoPointers(t *testing.T) {
	assert.False(t, store.HasPointers(reflect.TypeFor[page]()))
	assert.LessOrEqual(t, PageBytes, int64(12288), "fits Go's 12 KiB size class")
	assert.Greater(t, PageBytes+8, int64(12288), "one more pair would not fit")
}

// Deleting a million pairs oldest first costs no search: the hint finds
// the page.
func BenchmarkDeleteInOrder(b *testing.B) {
	const n = 1_000_000
	b.StopTimer()
	for range b.N {
		var l Log
		for i := range n {
			l.Push(uint64(i+1), uint32(i))
		}
		b.StartTimer()
		for i := range n {
			l.Delete(uint64(i + 1))
		}
		b.StopTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delete")
}

// GrowthFor tells exactly what pushes add to Bytes.
func TestGrowthFor(t *testing.T) {
	var l Log
	seq := uint64(0)
	for _, k := range []int{1, 5, PageCap - 6, 1, 3 * PageCap, 7, 20 * PageCap, 1} {
		want := l.GrowthFor(seq+1, k)
		before := l.Bytes()
		for range k {
			seq++
			l.Push(seq, 1)
		}
		assert.Equal(t, want, l.Bytes()-before, "%d pushes", k)
	}
	// Deleting oldest first shrinks the page index's capacity too.
	for s := uint64(1); s <= seq/2; s++ {
		l.Delete(s)
	}
	want := l.GrowthFor(seq+1, 5*PageCap)
	before := l.Bytes()
	for range 5 * PageCap {
		seq++
		l.Push(seq, 1)
	}
	assert.Equal(t, want, l.Bytes()-before)
}

// modelLog is the reference: the live pairs in sequence order.
type modelLog []Item

func (m modelLog) find(seq uint64) (int, bool) {
	return slices.BinarySearchFunc(m, seq, func(it Item, s uint64) int { return cmp.Compare(it.Seq, s) })
}

// farStep returns the distance to the next sequence: mostly 1 to 3,
// sometimes a jump at the edge of a page's reach (2^32 give or take a
// few), sometimes far beyond it.
func farStep(rng *rand.Rand) uint64 {
	switch r := rng.IntN(10000); {
	case r < 3:
		return 1<<32 - 3 + rng.Uint64N(7)
	case r < 5:
		return 1<<32 + rng.Uint64N(1<<36)
	case r < 25:
		return 1 + rng.Uint64N(1<<31) // within reach, far from the base
	default:
		return 1 + rng.Uint64N(3)
	}
}

// TestAgreesWithModelFarSequences pushes sequences that sometimes jump by
// 2^32 or more (a page cannot hold two pairs that far apart), from a
// random start up to MaxSeq, deletes at random, oldest first and in runs,
// and after every step compares Len, Min, Delete and AscendFrom with a
// sorted slice and checks every page. TTLDB_SEED replays a run.
func TestAgreesWithModelFarSequences(t *testing.T) {
	seed := testutil.Seed(t)
	for run := range 6 {
		agreesWithModelFar(t, seed+uint64(run))
	}
}

func agreesWithModelFar(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 2))
	var l Log
	var m modelLog
	seq := rng.Uint64N(1 << 47)
	if seed%2 == 1 {
		seq = store.MaxSeq - 1<<42 // reach the top
	}
	pushed := false
	for step := range 1500 {
		// The log grows for 100 steps, then shrinks for 100.
		pushes := 3 + 4*(step/100%2)
		for range rng.IntN(40) {
			switch op := rng.IntN(10); {
			case op < pushes || len(m) == 0: // a burst of pushes
				for range 1 + rng.IntN(100) {
					d := farStep(rng)
					if !pushed {
						d = 0
					}
					if seq > store.MaxSeq-d {
						d = store.MaxSeq - seq // the last sequence there is
						if d == 0 {
							break
						}
					}
					seq += d
					pushed = true
					slot := uint32(rng.IntN(dead))
					l.Push(seq, slot)
					m = append(m, Item{seq, slot})
				}
			case op < pushes+1: // at random
				k := rng.IntN(len(m))
				require.True(t, l.Delete(m[k].Seq), "step %d: delete %d", step, m[k].Seq)
				m = slices.Delete(m, k, k+1)
			case op < pushes+2: // oldest first
				for range 1 + rng.IntN(min(len(m), 200)) {
					require.True(t, l.Delete(m[0].Seq))
					m = m[1:]
				}
			case op < pushes+3: // a run
				k := rng.IntN(len(m))
				e := min(len(m), k+1+rng.IntN(PageCap/2))
				for _, it := range m[k:e] {
					require.True(t, l.Delete(it.Seq))
				}
				m = slices.Delete(m, k, e)
			default: // a sequence not held: never pushed, or deleted
				s := rng.Uint64N(seq + 1)
				switch r := rng.IntN(3); {
				case r == 0 && len(m) > 0:
					s = m[rng.IntN(len(m))].Seq + 1
				case r == 1 && len(m) > 0: // the same delta from a base 2^32 or 2^33 lower
					s = m[rng.IntN(len(m))].Seq + 1<<(32+rng.IntN(2))
				}
				if _, held := m.find(s); !held {
					require.False(t, l.Delete(s), "%d is not held", s)
				}
			}
		}
		checkFar(t, rng, &l, m, seq)
		if t.Failed() {
			t.Fatalf("seed %d, step %d", seed, step)
		}
	}
}

// checkFar compares the log with the model and checks its pages and
// their count.
func checkFar(t *testing.T, rng *rand.Rand, l *Log, m modelLog, last uint64) {
	t.Helper()
	checkPages(t, l)
	require.Equal(t, len(m), l.Len())
	all := make([]Item, 0, len(m))
	l.Ascend(func(it Item) bool { all = append(all, it); return true })
	if !slices.Equal(all, m) {
		require.Equal(t, []Item(m), all)
	}
	got, ok := l.Min()
	require.Equal(t, len(m) > 0, ok)
	if ok {
		require.Equal(t, m[0], got)
	}
	// AscendFrom from held sequences, gaps, before all and after all,
	// stopping after a few pairs or going to the end.
	for range 8 {
		var from uint64
		switch r := rng.IntN(4); {
		case r == 0 && len(m) > 0:
			from = m[rng.IntN(len(m))].Seq
		case r == 1 && len(m) > 0:
			from = m[rng.IntN(len(m))].Seq + 1
		case r == 2:
			from = rng.Uint64N(last + 2)
		default:
			from = last - rng.Uint64N(1<<33)
		}
		k, _ := m.find(from)
		stop := rng.IntN(5)
		if rng.IntN(4) == 0 {
			stop = len(m) // to the end
		}
		var got []Item
		l.AscendFrom(from, func(it Item) bool {
			got = append(got, it)
			return len(got) < stop+1
		})
		want := m[k:min(len(m), k+stop+1)]
		if len(want) == 0 {
			require.Empty(t, got, "from %d", from)
		} else {
			require.Equal(t, []Item(want), got, "from %d", from)
		}
	}
	// Neighbours hold more than half a page between them or cannot share
	// a base (the last two may be below while the last fills), so the
	// pages follow what is live and how far apart it is.
	far := 0
	for i := 0; i+1 < len(l.pages); i++ {
		p, q := l.pages[i], l.pages[i+1]
		if !l.oneBase(i) {
			far++
			continue
		}
		if i+2 == len(l.pages) && q.n < PageCap {
			continue
		}
		require.Greater(t, p.live+q.live, int32(PageCap/2), "pages %d and %d of %d", i, i+1, len(l.pages))
	}
	if len(m) > 0 {
		span := last - m[0].Seq
		require.LessOrEqual(t, far, int(2*(span>>32)), "far pairs for a span of %d", span)
		require.LessOrEqual(t, l.Pages(), 4*len(m)/PageCap+2+far, "%d pages for %d live", l.Pages(), len(m))
	}
}

// A page holds sequences up to 2^32-1 past its base; one 2^32 past opens
// a page, unless the page's first live pair is near enough (the page is
// rebased) or the page is sparse beside its predecessor (its pairs join
// the predecessor's, and it starts afresh).
func TestFarSequencesEdges(t *testing.T) {
	items := func(l *Log) []Item {
		var got []Item
		l.Ascend(func(it Item) bool { got = append(got, it); return true })
		return got
	}
	var l Log
	l.Push(1, 10)
	l.Push(1<<32, 11) // 2^32-1 past the base
	require.Equal(t, 1, l.Pages())
	l.Push(1<<32+1, 12) // 2^32 past it
	require.Equal(t, 2, l.Pages())
	checkPages(t, &l)
	require.False(t, l.Delete(1+1<<32+1), "the same delta past the next page's base")
	// The first pair goes: the two pages share a base at 2^32 now.
	require.True(t, l.Delete(1))
	require.Equal(t, 1, l.Pages())
	require.Equal(t, []Item{{1 << 32, 11}, {1<<32 + 1, 12}}, items(&l))
	checkPages(t, &l)

	// A jump past the base, not past the first live pair: rebased.
	var r Log
	for s := uint64(1); s <= 10; s++ {
		r.Push(s, uint32(s))
	}
	for s := uint64(1); s <= 5; s++ {
		require.True(t, r.Delete(s))
	}
	require.Zero(t, r.GrowthFor(6+maxDelta, 1))
	require.Equal(t, PageBytes, r.GrowthFor(6+maxDelta, PageCap-4), "5 live, and PageCap-4 more")
	r.Push(6+maxDelta, 99)
	require.Equal(t, 1, r.Pages(), "rebased at 6")
	require.Equal(t, uint64(6), r.pages[0].base)
	require.Equal(t, PageBytes, r.GrowthFor(7+maxDelta, 1))
	r.Push(7+maxDelta, 100) // past the first live pair too: a page opens
	require.Equal(t, 2, r.Pages())
	checkPages(t, &r)

	// A jump leaves the last page sparse beside its predecessor: the two
	// merge and the page starts afresh at the jump.
	var m Log
	for s := uint64(1); s <= PageCap; s++ {
		m.Push(s, uint32(s))
	}
	for s := uint64(11); s <= PageCap; s++ { // 10 live in the full page
		require.True(t, m.Delete(s))
	}
	for s := uint64(PageCap + 1); s <= PageCap+10; s++ { // 10 in a page it opens
		m.Push(s, uint32(s))
	}
	require.Equal(t, 2, m.Pages(), "20 live pairs, in two pages: the last fills")
	require.Zero(t, m.GrowthFor(1<<33, PageCap))
	require.Equal(t, PageBytes, m.GrowthFor(1<<33, PageCap+1))
	m.Push(1<<33, 7)
	require.Equal(t, 2, m.Pages())
	require.Equal(t, int32(20), m.pages[0].live)
	require.Equal(t, uint64(1<<33), m.pages[1].base)
	checkPages(t, &m)

	// The last sequences there are.
	var top Log
	top.Push(0, 1)
	top.Push(store.MaxSeq-1, 2)
	top.Push(store.MaxSeq, 3)
	require.Equal(t, 2, top.Pages())
	require.Equal(t, []Item{{0, 1}, {store.MaxSeq - 1, 2}, {store.MaxSeq, 3}}, items(&top))
	var from []Item
	top.AscendFrom(1<<40, func(it Item) bool { from = append(from, it); return true })
	require.Equal(t, []Item{{store.MaxSeq - 1, 2}, {store.MaxSeq, 3}}, from)
	require.True(t, top.Delete(store.MaxSeq-1))
	require.False(t, top.Delete(store.MaxSeq-1))
	m0, _ := top.Min()
	require.Equal(t, Item{0, 1}, m0)
	checkPages(t, &top)
}

// GrowthFor tells exactly what pushes add to Bytes when the first of them
// is far from the last page's base or its first live pair, or reaches
// past them mid-batch, whatever was deleted. TTLDB_SEED replays a run.
func TestGrowthForFarSequences(t *testing.T) {
	rng := rand.New(rand.NewPCG(testutil.Seed(t), 3))
	var l Log
	var live []uint64
	last := uint64(0)
	for round := range 2000 {
		k := 1 + rng.IntN(3*PageCap)
		if rng.IntN(2) == 0 {
			k = 1 + rng.IntN(20)
		}
		seq := last + 1
		if len(l.pages) > 0 {
			p := l.pages[len(l.pages)-1]
			from := p.base // near the end of the reach of the base or the first live pair
			if p.first < p.n && rng.IntN(2) == 0 {
				from = p.seq(p.first)
			}
			switch rng.IntN(4) {
			case 0:
				seq = from + maxDelta - uint64(rng.IntN(k+2))
			case 1:
				seq = from + maxDelta + uint64(rng.IntN(3))
			case 2:
				seq = last + 1 + rng.Uint64N(1<<33)
			}
			seq = max(seq, last+1)
			if rng.IntN(4) == 0 && p.n < PageCap {
				k = PageCap - int(p.n) // fill it: the next pushes open a page
				if p.live == 0 {
					k = PageCap
				}
			}
		}
		want := l.GrowthFor(seq, k)
		before := l.Bytes()
		for j := range uint64(k) {
			l.Push(seq+j, 1)
			live = append(live, seq+j)
		}
		last = seq + uint64(k) - 1
		require.Equal(t, want, l.Bytes()-before, "round %d: %d pushes from %d", round, k, seq)
		// Deletions: none, oldest first, at random, a run, the last
		// page's but a few (it goes sparse or empty while it is the last).
		del := rng.IntN(len(live) + 1)
		switch rng.IntN(5) {
		case 3:
			p := l.pages[len(l.pages)-1]
			var in []uint64
			for j := p.first; j < p.n; j++ {
				if p.slot[j] != dead {
					in = append(in, p.seq(j))
				}
			}
			keep := min(len(in), rng.IntN(12))
			if rng.IntN(2) == 0 {
				rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
			}
			for _, s := range in[:len(in)-keep] {
				require.True(t, l.Delete(s))
				k, _ := slices.BinarySearch(live, s)
				live = slices.Delete(live, k, k+1)
			}
		case 0:
			for _, s := range live[:del] {
				require.True(t, l.Delete(s))
			}
			live = live[del:]
		case 1:
			rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
			for _, s := range live[:del] {
				require.True(t, l.Delete(s))
			}
			live = live[del:]
			slices.Sort(live)
		case 2:
			from := rng.IntN(len(live) - del + 1)
			for _, s := range live[from : from+del] {
				require.True(t, l.Delete(s))
			}
			live = slices.Delete(live, from, from+del)
		}
	}
	checkPages(t, &l)
}

// A million pairs pushed one after the other cost at most 8.1 bytes each,
// and Bytes is the heap they hold: the pages, each in its size class
// exactly, and the page index at its capacity.
func TestBytesPerPair(t *testing.T) {
	const n = 1_000_000
	l := new(Log)
	for i := range uint64(n) {
		l.Push(i+1, uint32(i))
	}
	// The heap the log holds: what collecting it frees.
	heap := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	with := heap()
	b := l.Bytes()
	t.Logf("%d pairs: %d bytes, %.3f a pair, %d pages", n, b, float64(b)/n, l.Pages())
	assert.LessOrEqual(t, float64(b)/n, 8.1)
	assert.Equal(t, int64(l.Pages())*int64(unsafe.Sizeof(page{}))+int64(cap(l.pages))*8+int64(cap(l.firsts))*8, b)
	assert.Equal(t, int64(12288), int64(unsafe.Sizeof(page{})), "a size class exactly: the heap holds no more")
	runtime.KeepAlive(l)
	l = nil
	held := with - heap()
	t.Logf("the heap: %d bytes", held)
	assert.InDelta(t, b, held, 1<<10, "the heap the log holds")
}
