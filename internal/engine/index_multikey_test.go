package engine

import (
	"math/bits"
	"testing"
)

// Multikey expansion finds distinct elements by sorting their keys: for n
// elements it makes O(n log n) key comparisons, not the n²/2 of comparing
// every pair (64k elements: about 1M comparisons instead of 2 billion).
func TestMultikeyExpansionComparisons(t *testing.T) {
	n := MaxIndexKeysPerDocument
	distinct := make([]any, n)
	for i := range distinct {
		distinct[i] = (i * 7919) % n // every value once, out of order
	}
	same := make([]any, n)
	for i := range same {
		same[i] = "x"
	}
	for name, elems := range map[string][]any{"distinct": distinct, "all equal": same} {
		var compares int
		testCountKeyComparisons = &compares
		keys, vals, multikey, err := expandKeys([]any{elems}, false)
		testCountKeyComparisons = nil
		if err != nil {
			t.Fatal(err)
		}
		bound := 2 * n * bits.Len(uint(n))
		if compares > bound {
			t.Errorf("%s: %d comparisons for %d elements, more than 2·n·log2(n) = %d", name, compares, n, bound)
		}
		want := n
		if name == "all equal" {
			want = 1
		}
		if len(keys) != want || len(vals) != want || !multikey {
			t.Errorf("%s: %d keys, %d values, multikey %v; want %d", name, len(keys), len(vals), multikey, want)
		}
		for i := 1; i < len(keys); i++ {
			if keys[i-1] >= keys[i] {
				t.Fatalf("%s: keys not sorted and distinct at %d", name, i)
			}
		}
	}
}
