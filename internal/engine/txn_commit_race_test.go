package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
)

// Rule: a transaction whose snapshot is taken while another transaction's
// commit applies sees that commit whole or not at all, also when no other
// snapshot was open as the commit began (the commit then keeps no
// versions; a snapshot opening during it must not see the changes applied
// before it opened without those after). Transactions move tokens
// between two collections (a delete and an insert) on a few goroutines;
// each reads, at its snapshot, where its token is: it must be in exactly
// one of them.
func TestTxnSnapshotDuringCommitSeesItWhole(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	bg := context.Background()
	a, b := db.Collection("A"), db.Collection("B")
	const tokens, movers = 4, 3
	moves := 6000
	if testing.Short() || testutil.RaceEnabled {
		moves = 1500
	}
	for k := range tokens {
		_, err := a.InsertOne(bg, Document{"_id": fmt.Sprintf("tok-%d", k), "v": int64(0)})
		require.NoError(t, err)
	}
	_, err := b.InsertOne(bg, Document{"_id": "other"}) // B exists
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, movers)
	for w := range movers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := db.StartSession()
			if err != nil {
				errs <- err
				return
			}
			for n := range moves {
				tok := fmt.Sprintf("tok-%d", (n*7+w)%tokens)
				_, err := s.WithTransaction(bg, func(ctx context.Context) (any, error) {
					// The first operation takes the snapshot.
					var d Document
					where, to := a, b
					inA := a.FindOne(ctx, Document{"_id": tok}).Decode(&d)
					if inA != nil && !errors.Is(inA, ErrNotFound) {
						return nil, inA
					}
					var dB Document
					inB := b.FindOne(ctx, Document{"_id": tok}).Decode(&dB)
					if inB != nil && !errors.Is(inB, ErrNotFound) {
						return nil, inB
					}
					switch {
					case inA == nil && inB == nil:
						return nil, fmt.Errorf("%s is in both collections at the snapshot (versions %v, %v)", tok, d["v"], dB["v"])
					case inA != nil && inB != nil:
						return nil, fmt.Errorf("%s is in neither collection at the snapshot", tok)
					case inA != nil:
						where, to, d = b, a, dB
					}
					if _, err := where.DeleteOne(ctx, Document{"_id": tok}); err != nil {
						return nil, err
					}
					_, err := to.InsertOne(ctx, Document{"_id": tok, "v": asInt64(d["v"]) + 1})
					return nil, err
				})
				if err != nil {
					errs <- fmt.Errorf("goroutine %d, move %d: %w", w, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Each token once, at the version its moves left.
	total := int64(0)
	for k := range tokens {
		tok := fmt.Sprintf("tok-%d", k)
		na, err := a.CountDocuments(bg, Document{"_id": tok})
		require.NoError(t, err)
		nb, err := b.CountDocuments(bg, Document{"_id": tok})
		require.NoError(t, err)
		require.EqualValues(t, 1, na+nb, "%s", tok)
		var d Document
		c := a
		if nb == 1 {
			c = b
		}
		require.NoError(t, c.FindOne(bg, Document{"_id": tok}).Decode(&d))
		total += asInt64(d["v"])
	}
	require.EqualValues(t, movers*moves, total, "every move moved its token once")
}
