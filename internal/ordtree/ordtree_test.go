package ordtree

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/store"
)

func less(a, b int) bool { return a < b }

// checkModel compares the tree with a sorted model and checks its
// invariants.
func checkModel(t *testing.T, tr *Tree[int], model []int) {
	t.Helper()
	require.Equal(t, "", tr.check())
	require.Equal(t, len(model), tr.Len())
	var got []int
	tr.Ascend(func(x int) bool { got = append(got, x); return true })
	if len(model) == 0 {
		require.Empty(t, got)
		_, ok := tr.Min()
		require.False(t, ok)
		return
	}
	require.Equal(t, model, got)
	got = got[:0]
	tr.Descend(func(x int) bool { got = append(got, x); return true })
	rev := slices.Clone(model)
	slices.Reverse(rev)
	require.Equal(t, rev, got)
	mn, _ := tr.Min()
	mx, _ := tr.Max()
	require.Equal(t, model[0], mn)
	require.Equal(t, model[len(model)-1], mx)
	for range 10 {
		pivot := model[rand.IntN(len(model))] + rand.IntN(3) - 1
		i, _ := slices.BinarySearch(model, pivot)
		var first []int
		tr.AscendGreaterOrEqual(pivot, func(x int) bool { first = append(first, x); return len(first) < 3 })
		require.Equal(t, len(model[i:min(i+3, len(model))]), len(first), "from %d", pivot)
		if len(first) > 0 {
			require.Equal(t, model[i:min(i+3, len(model))], first, "from %d", pivot)
		}
		j, found := slices.BinarySearch(model, pivot)
		if found {
			j++
		}
		var last []int
		tr.DescendLessOrEqual(pivot, func(x int) bool { last = append(last, x); return len(last) < 3 })
		var want []int
		for k := j - 1; k >= 0 && len(want) < 3; k-- {
			want = append(want, model[k])
		}
		require.Equal(t, len(want), len(last), "down from %d", pivot)
		if len(last) > 0 {
			require.Equal(t, want, last, "down from %d", pivot)
		}
	}
}

// Random inserts (in order, reversed, at random), deletions (smallest
// first, at random, in runs) and replacements agree with a sorted slice,
// and the tree keeps its invariants, through splits, merges and the root
// growing and shrinking.
func TestAgreesWithModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	tr := New(less)
	var model []int
	in := map[int]bool{}
	next := 0
	for round := range 120 {
		switch round % 4 {
		case 0: // in order, as dates of new documents arrive
			for range rng.IntN(3000) {
				next += 1 + rng.IntN(3)
				_, replaced := tr.ReplaceOrInsert(next)
				require.False(t, replaced)
				model = append(model, next)
				in[next] = true
			}
		case 1: // at random, some present already
			for range rng.IntN(3000) {
				x := rng.IntN(next + 1)
				_, replaced := tr.ReplaceOrInsert(x)
				require.Equal(t, in[x], replaced)
				if !in[x] {
					in[x] = true
					i, _ := slices.BinarySearch(model, x)
					model = slices.Insert(model, i, x)
				}
			}
		case 2: // the smallest first, as the TTL monitor deletes
			for range rng.IntN(len(model) + 1) {
				x, ok := tr.DeleteMin()
				require.True(t, ok)
				require.Equal(t, model[0], x)
				delete(in, x)
				model = model[1:]
			}
		case 3: // at random, and a run in the middle
			for range rng.IntN(len(model)/2 + 1) {
				x := rng.IntN(next + 100)
				_, ok := tr.Delete(x)
				require.Equal(t, in[x], ok)
				if in[x] {
					delete(in, x)
					i, _ := slices.BinarySearch(model, x)
					model = slices.Delete(model, i, i+1)
				}
			}
			if len(model) > 10 {
				from := rng.IntN(len(model) / 2)
				run := slices.Clone(model[from : from+rng.IntN(len(model)/2)])
				for _, x := range run {
					_, ok := tr.Delete(x)
					require.True(t, ok)
					delete(in, x)
				}
				model = slices.Delete(model, from, from+len(run))
			}
		}
		checkModel(t, tr, model)
	}
	for len(model) > 0 {
		_, ok := tr.DeleteMin()
		require.True(t, ok)
		model = model[1:]
	}
	checkModel(t, tr, model)
	assert.Equal(t, Stats{Leaves: 1}, tr.Stats())
}

// Items added in order fill leaves completely; after deleting most of
// them at random, leaves are merged so that memory follows what is left.
func TestFill(t *testing.T) {
	tr := New(less)
	const n = 100_000
	for i := range n {
		tr.ReplaceOrInsert(i)
	}
	st := tr.Stats()
	assert.Equal(t, (n+LeafItems-1)/LeafItems, st.Leaves, "full leaves")
	require.Equal(t, "", tr.check())
	rng := rand.New(rand.NewPCG(1, 2))
	for _, i := range rng.Perm(n)[:n*9/10] {
		_, ok := tr.Delete(i)
		require.True(t, ok)
	}
	require.Equal(t, "", tr.check())
	st = tr.Stats()
	t.Logf("%d items in %d leaves after deleting 90%% at random", st.Items, st.Leaves)
	assert.Less(t, st.Leaves, 4*st.Items/LeafItems+2, "at least a quarter full on average")
}

// Deleting the smallest moves nothing and searches nothing: a million
// DeleteMin calls after a million in-order inserts.
func BenchmarkInsertInOrderDeleteMin(b *testing.B) {
	const n = 1_000_000
	for range b.N {
		tr := New(less)
		for i := range n {
			tr.ReplaceOrInsert(i)
		}
		for range n {
			tr.DeleteMin()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*n*b.N), "ns/op-each")
}

type entry struct {
	sec  int64
	nsec int32
	slot uint32
	seq  uint64
}

func entryLess(a, b entry) bool {
	if a.sec != b.sec {
		return a.sec < b.sec
	}
	if a.nsec != b.nsec {
		return a.nsec < b.nsec
	}
	return a.seq < b.seq
}

// The date tree's items (24 bytes, ordered by date then sequence):
// inserting in order, and deleting the smallest, each timed apart.
func BenchmarkEntries(b *testing.B) {
	const n = 1_000_000
	for _, op := range []string{"insert", "deletemin"} {
		b.Run(op, func(b *testing.B) {
			b.StopTimer()
			for range b.N {
				tr := New(entryLess)
				if op == "insert" {
					b.StartTimer()
				}
				for i := range n {
					tr.ReplaceOrInsert(entry{sec: 1000, slot: uint32(i), seq: uint64(i)})
				}
				if op == "insert" {
					b.StopTimer()
				} else {
					b.StartTimer()
					for range n {
						tr.DeleteMin()
					}
					b.StopTimer()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/item")
		})
	}
}

// A leaf's pointers are its first two words: with items free of pointers
// the garbage collector scans 16 bytes of it.
func TestLeafPointersFirst(t *testing.T) {
	lt := reflect.TypeFor[leaf[entry]]()
	for i := range lt.NumField() {
		f := lt.Field(i)
		if store.HasPointers(f.Type) {
			assert.Less(t, f.Offset, uintptr(16), "field %s", f.Name)
		}
	}
	assert.False(t, store.HasPointers(reflect.TypeFor[[LeafItems]entry]()))
	assert.LessOrEqual(t, lt.Size(), uintptr(3072), "a leaf fits Go's 3 KiB size class")
}
