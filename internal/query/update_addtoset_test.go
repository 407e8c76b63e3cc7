package query

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/testutil"
)

// countSetCompares applies update to doc and returns the comparisons
// $addToSet made.
func countSetCompares(t *testing.T, doc, update D) int {
	t.Helper()
	u, err := CompileUpdate(update)
	require.NoError(t, err)
	n := 0
	setCompare = func(a, b any) int { n++; return Compare(a, b) }
	defer func() { setCompare = Compare }()
	_, _, err = u.Apply(doc, testNow)
	require.NoError(t, err)
	return n
}

// TestAddToSetEachComparisons bounds the work of $addToSet with $each: a
// call adding n values to an array of n elements makes O(n log n)
// comparisons, so that it cannot hold the collection's write lock for a
// time quadratic in its size.
func TestAddToSetEachComparisons(t *testing.T) {
	counts := map[int]int{}
	for _, n := range []int{1000, 4000} {
		// Half the values are new, half already present, a quarter
		// repeated within $each; existing elements are distinct.
		existing := make([]any, n)
		each := make([]any, n)
		for i := range n {
			existing[i] = int64(2 * i)
			each[i] = float64(i) // every even one is present
			if i%4 == 3 {
				each[i] = float64(i - 1)
			}
		}
		c := countSetCompares(t, D{"a": existing}, D{"$addToSet": D{"a": D{"$each": each}}})
		bound := 4 * 2 * n * int(math.Ceil(math.Log2(float64(2*n))))
		t.Logf("n=%d: %d comparisons (bound %d)", n, c, bound)
		assert.LessOrEqual(t, c, bound, "n=%d: more than O(n log n) comparisons", n)
		counts[n] = c
	}
	// Four times the input: n log n grows about 4.8 times, n² 16 times.
	assert.Less(t, float64(counts[4000])/float64(counts[1000]), 7.0, "comparisons grow faster than n log n")
}

// TestAddToSetEachModel checks $addToSet with $each against its definition
// (append, in order of first appearance, each value that no element of the
// array and no earlier value equals) on random arrays of values that are
// often equal across Go kinds and field orders.
func TestAddToSetEachModel(t *testing.T) {
	seed := testutil.Seed(t)
	r := rand.New(rand.NewPCG(seed, seed))
	val := func() any {
		k := r.IntN(6)
		switch r.IntN(8) {
		case 0:
			return int32(k)
		case 1:
			return float64(k)
		case 2:
			return float64(k) + 0.5
		case 3:
			return fmt.Sprint(k)
		case 4:
			return D{"x": k, "y": k % 2}
		case 5:
			return D{"y": float64(k % 2), "x": int64(k)}
		case 6:
			return []any{k, nil}
		}
		return math.NaN()
	}
	for range 300 {
		existing := make([]any, r.IntN(12))
		for i := range existing {
			existing[i] = val()
		}
		each := make([]any, r.IntN(24))
		for i := range each {
			each[i] = val()
		}
		want := append([]any(nil), existing...)
		added := false
		for _, v := range each {
			present := false
			for _, e := range want {
				if Equal(e, v) {
					present = true
					break
				}
			}
			if !present {
				want = append(want, v)
				added = true
			}
		}
		u, err := CompileUpdate(D{"$addToSet": D{"a": D{"$each": each}}})
		require.NoError(t, err)
		out, changed, err := u.Apply(D{"a": existing}, testNow)
		require.NoError(t, err)
		require.Equal(t, added, changed, "existing %v each %v", existing, each)
		got, _ := codec.ArrayElements(out["a"])
		require.Equal(t, len(want), len(got), "existing %v each %v: got %v", existing, each, got)
		for i := range want {
			require.Zero(t, Compare(want[i], got[i]), "existing %v each %v: element %d is %v, want %v", existing, each, i, got[i], want[i])
		}
	}
}

// BenchmarkAddToSetEach is one $addToSet with $each of n distinct values
// onto an empty array (the whole work an update does under the
// collection's write lock).
func BenchmarkAddToSetEach(b *testing.B) {
	for _, n := range []int{20_000, 40_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			each := make([]any, n)
			for i := range each {
				each[i] = int64(i)
			}
			u, err := CompileUpdate(D{"$addToSet": D{"a": D{"$each": each}}})
			require.NoError(b, err)
			doc := D{"a": []any{}}
			b.ResetTimer()
			for range b.N {
				if _, _, err := u.Apply(doc, testNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
