package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/internal/testutil"
)

// The model of isolation: accounts whose balances transactions move
// between them (the total never changes), audited by read-only
// transactions that read the accounts one by one (their sum must be the
// total, a second read of one must repeat the first), while writes outside
// any transaction bump a counter of their own on the same documents (none
// may be lost) and the TTL monitor deletes the audit records the
// transactions insert already expired, and never an account (each
// transaction refreshes the accounts it moves). readLiveForTest breaks
// the isolation: the model must then find an anomaly.

const (
	modelAccounts = 8
	modelBalance  = int64(100)
)

type modelResult struct {
	anomalies []string
	commits   int64
}

func runTxnModel(t *testing.T, seed uint64, rounds int) modelResult {
	t.Helper()
	bg := context.Background()
	var deletedAccounts atomic.Int64
	obs := WithDeleteObserver(func(e DeleteEvent) {
		if e.Collection == "acct" {
			deletedAccounts.Add(int64(len(e.IDs)))
		}
	})
	db, clk := openMon(t, quiet(MonitorOptions{}), obs, WithTransactionLimits(TransactionLimits{Lifetime: 24 * time.Hour}))
	acct := ttlColl(t, db, "acct", 600)
	audit := ttlColl(t, db, "audit", 60)
	for i := range modelAccounts {
		_, err := acct.InsertOne(bg, Document{"_id": i, "bal": modelBalance, "touch": int64(0), "lastModifiedDate": clk.Now()})
		require.NoError(t, err)
	}
	var (
		mu        sync.Mutex
		res       modelResult
		plainOK   atomic.Int64
		auditsIn  atomic.Int64
		wg        sync.WaitGroup
		stopPass  = make(chan struct{})
		passesRan atomic.Int64
	)
	anomaly := func(format string, args ...any) {
		mu.Lock()
		res.anomalies = append(res.anomalies, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	balance := func(ctx context.Context, id int) (int64, error) {
		var d Document
		if err := acct.FindOne(ctx, Document{"_id": id}).Decode(&d); err != nil {
			return 0, err
		}
		return d["bal"].(int64), nil
	}
	// Transfers.
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			s, err := db.StartSession()
			if err != nil {
				anomaly("session: %v", err)
				return
			}
			defer s.EndSession(bg)
			for range rounds {
				from, to := r.IntN(modelAccounts), r.IntN(modelAccounts)
				amount := int64(r.IntN(5) + 1)
				_, err := s.WithTransaction(bg, func(ctx context.Context) (any, error) {
					b, err := balance(ctx, from)
					if err != nil {
						return nil, err
					}
					if b < amount || from == to {
						return nil, nil
					}
					now := clk.Now()
					if _, err := acct.UpdateOne(ctx, Document{"_id": from}, Document{"$inc": Document{"bal": -amount}, "$set": Document{"lastModifiedDate": now}}); err != nil {
						return nil, err
					}
					if _, err := acct.UpdateOne(ctx, Document{"_id": to}, Document{"$inc": Document{"bal": amount}, "$set": Document{"lastModifiedDate": now}}); err != nil {
						return nil, err
					}
					_, err = audit.InsertOne(ctx, Document{"from": from, "to": to, "lastModifiedDate": now.Add(-time.Hour)})
					return nil, err
				})
				if err != nil {
					anomaly("transfer: %v", err)
					return
				}
				mu.Lock()
				res.commits++
				mu.Unlock()
				auditsIn.Add(1)
			}
		}()
	}
	// Audits.
	wg.Add(1)
	go func() {
		defer wg.Done()
		s, err := db.StartSession()
		if err != nil {
			anomaly("session: %v", err)
			return
		}
		defer s.EndSession(bg)
		for range rounds {
			_, err := s.WithTransaction(bg, func(ctx context.Context) (any, error) {
				var sum, first int64
				for i := range modelAccounts {
					b, err := balance(ctx, i)
					if err != nil {
						return nil, err
					}
					if i == 0 {
						first = b
					}
					sum += b
				}
				again, err := balance(ctx, 0)
				if err != nil {
					return nil, err
				}
				if sum != modelAccounts*modelBalance {
					anomaly("an audit read a total of %d", sum)
				}
				if again != first {
					anomaly("a second read of account 0 gave %d after %d", again, first)
				}
				return nil, nil
			})
			if err != nil {
				anomaly("audit: %v", err)
				return
			}
		}
	}()
	// Writes outside transactions: they wait for the transactions holding
	// their documents, and none is lost.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(seed, 99))
		for range rounds {
			if _, err := acct.UpdateOne(bg, Document{"_id": r.IntN(modelAccounts)}, Document{"$inc": Document{"touch": int64(1)}}); err != nil {
				anomaly("plain write: %v", err)
				return
			}
			plainOK.Add(1)
		}
	}()
	// The TTL monitor, 10 ms of the fake clock per pass (WithTransaction
	// gives up retrying after 120 s of it).
	passDone := make(chan struct{})
	go func() {
		defer close(passDone)
		for {
			select {
			case <-stopPass:
				return
			default:
			}
			clk.Advance(10 * time.Millisecond)
			if _, err := db.RunTTLPass(bg); err != nil {
				anomaly("pass: %v", err)
				return
			}
			passesRan.Add(1)
		}
	}()
	wg.Wait()
	close(stopPass)
	<-passDone

	var sum, touches int64
	cur, err := acct.Find(bg, nil)
	require.NoError(t, err)
	var docs []Document
	require.NoError(t, cur.All(bg, &docs))
	for _, d := range docs {
		sum += d["bal"].(int64)
		touches += d["touch"].(int64)
	}
	if len(docs) != modelAccounts || deletedAccounts.Load() != 0 {
		anomaly("%d accounts left, %d deleted by the monitor", len(docs), deletedAccounts.Load())
	}
	if sum != modelAccounts*modelBalance {
		anomaly("the balances total %d", sum)
	}
	if touches != plainOK.Load() {
		anomaly("%d of %d writes outside transactions kept", touches, plainOK.Load())
	}
	// Every audit record committed is deleted by a pass, once.
	_, err = db.RunTTLPass(bg)
	require.NoError(t, err)
	if n, _ := audit.CountDocuments(bg, nil); n != 0 {
		anomaly("%d expired audit records left after a pass", n)
	}
	t.Logf("seed %d: %d commits, %d passes, %d plain writes", seed, res.commits, passesRan.Load(), plainOK.Load())
	return res
}

// Rule: concurrent transactions, writes outside them and TTL passes show
// no anomaly snapshot isolation forbids.
func TestTxnModel(t *testing.T) {
	seed := testutil.Seed(t)
	rounds := 150
	if os.Getenv("TTLDB_SOAK") == "1" {
		rounds = 3000
	}
	res := runTxnModel(t, seed, rounds)
	require.Empty(t, res.anomalies)
	require.Positive(t, res.commits)
}

// Rule: the model catches a broken isolation: with transactions reading
// the live documents, an audit that reads account 0, sees a transfer
// from account 0 commit, then reads account 0 again, sees it change.
func TestTxnModelCatchesLiveReads(t *testing.T) {
	bg := context.Background()
	check := func(broken bool) error {
		readLiveForTest = broken
		defer func() { readLiveForTest = false }()
		db, _ := openMon(t, quiet(MonitorOptions{}))
		acct := db.Collection("acct")
		for i := range 2 {
			_, err := acct.InsertOne(bg, Document{"_id": i, "bal": modelBalance})
			require.NoError(t, err)
		}
		s, ctx := inTxn(t, db)
		defer s.EndSession(bg)
		var d Document
		require.NoError(t, acct.FindOne(ctx, Document{"_id": 0}).Decode(&d))
		first := d["bal"]
		w, wctx := inTxn(t, db)
		_, err := acct.UpdateOne(wctx, Document{"_id": 0}, Document{"$inc": Document{"bal": int64(-1)}})
		require.NoError(t, err)
		_, err = acct.UpdateOne(wctx, Document{"_id": 1}, Document{"$inc": Document{"bal": int64(1)}})
		require.NoError(t, err)
		require.NoError(t, w.CommitTransaction(bg))
		require.NoError(t, acct.FindOne(ctx, Document{"_id": 0}).Decode(&d))
		again := d["bal"]
		require.NoError(t, acct.FindOne(ctx, Document{"_id": 1}).Decode(&d))
		if sum := again.(int64) + d["bal"].(int64); again != first || sum != 2*modelBalance {
			return errors.New("non-repeatable read")
		}
		return nil
	}
	require.NoError(t, check(false))
	require.Error(t, check(true), "reading the live documents must be caught")
}
