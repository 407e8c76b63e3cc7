package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/internal/testutil"
)

// TestBatchIDsAgreesWithModel: batchIDs reports a document as a duplicate
// exactly when an earlier document of the batch has its key, as a map of
// the keys seen says, with well-spread hashes, with hashes that all
// collide (every key then probes past the others) and with hashes that
// differ only in their low bits (which the table does not place by). The
// table is reused across batches of different sizes, as the pooled
// scratch reuses it.
func TestBatchIDsAgreesWithModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	hashings := map[string]func(k []byte) uint64{
		"spread": func(k []byte) uint64 {
			h := uint64(14695981039346656037)
			for _, c := range k {
				h = (h ^ uint64(c)) * 1099511628211
			}
			return h
		},
		"colliding": func([]byte) uint64 { return 42 },
		"low bits":  func(k []byte) uint64 { return uint64(len(k)) & 7 },
	}
	var b batchIDs
	for name, hash := range hashings {
		for round, n := range []int{2, 5, 1000, 3, 700} {
			b.reset(n)
			keys := make([][]byte, n)
			model := map[string]bool{}
			for i := range n {
				keys[i] = fmt.Appendf(nil, "k%d", rng.IntN(n))
				want := model[string(keys[i])]
				got := b.add(keys[i], hash(keys[i]), i, func(j int) []byte { return keys[j] })
				require.Equal(t, want, got, "%s, round %d, document %d (%s)", name, round, i, keys[i])
				if !want {
					model[string(keys[i])] = true
				} else {
					// The insert stops at a duplicate: a batch goes on
					// only to test that the table is unchanged by it.
					keys[i] = []byte("stopped")
					keys[i] = append(keys[i], fmt.Sprint(i)...)
					model[string(keys[i])] = true
					require.False(t, b.add(keys[i], hash(keys[i]), i, func(j int) []byte { return keys[j] }))
				}
			}
		}
	}
	var none *batchIDs
	require.False(t, none.add([]byte("k"), 1, 0, nil), "a batch of one has no table and no duplicates")
}
