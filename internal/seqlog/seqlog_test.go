package seqlog

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

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
	for i, p := range l.pages {
		live := int32(0)
		for j := p.first; j < p.n; j++ {
			require.GreaterOrEqual(t, p.seq[j], l.firsts[i], "page %d", i)
			if j > p.first {
				require.Greater(t, p.seq[j], p.seq[j-1])
			}
			if p.slot[j] != dead {
				live++
			}
		}
		for j := int32(0); j < p.first; j++ {
			require.Equal(t, uint32(dead), p.slot[j], "before first")
		}
		require.Equal(t, live, p.live)
		if i > 0 {
			require.Greater(t, l.firsts[i], l.firsts[i-1])
		}
	}
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
		want := l.GrowthFor(k)
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
	want := l.GrowthFor(5 * PageCap)
	before := l.Bytes()
	for range 5 * PageCap {
		seq++
		l.Push(seq, 1)
	}
	assert.Equal(t, want, l.Bytes()-before)
}
