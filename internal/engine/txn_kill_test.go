package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
)

// The transaction kill test: a child process (this test binary,
// re-executed with killTxnEnv set) runs transactions on a few goroutines,
// each moving an amount between two accounts of the collections "A" and
// "B" (kept as $inc updates or as replacements), sometimes moving a token
// document from one of them to the other (a delete and an insert), and
// inserting a marker document into "markers" that says what it did; some
// transactions are aborted on purpose after staging all that. The child
// says each transaction before it starts ("b id"), after its commit
// returned ("a id"), and before an abort ("x id"). The parent SIGKILLs it
// at a random moment, reopens the directory and checks that every
// transaction is there whole or not at all: each account's balance is its
// opening balance plus the amounts of the markers present (so the total
// never moves), each token is in one collection with the version of its
// last marker present, and the markers present of each token are its
// moves 1..v, none missing.

const killTxnEnv = "TTLDB_KILL_TXN_CHILD"

// The child's data: txnKillAccounts accounts in each of "A" and "B" (_id
// 0..n-1, opening balance txnKillOpening), txnKillTokens tokens
// ("tok-k", starting in "A" at version 0).
const (
	txnKillAccounts = 8
	txnKillOpening  = 1000
	txnKillTokens   = 4
	txnKillWorkers  = 3
)

type killTxnSpec struct {
	Dir    string
	Policy SyncPolicy
	Seed   uint64
	Cycle  int
}

// errAbortOnPurpose is what a child's transaction returns to be aborted.
var errAbortOnPurpose = errors.New("aborted on purpose")

// TestKillTxnChild is the child's body; it does nothing unless killTxnEnv
// is set. It never returns: the parent kills it.
func TestKillTxnChild(t *testing.T) {
	spec, say := killChildStart[killTxnSpec](t, killTxnEnv, "TestSoakKillTxn")
	db, err := Open(WithDir(spec.Dir), WithSync(spec.Policy), WithMonitor(MonitorOptions{Disabled: true}),
		WithAutoSnapshot(AutoSnapshot{MinLogBytes: 64 << 10, LogRatio: 0.5}))
	if err != nil {
		say("openerr %v", err)
		os.Exit(2)
	}
	ctx := context.Background()
	a, b, markers := db.Collection("A"), db.Collection("B"), db.Collection("markers")
	if n, err := a.CountDocuments(ctx, nil); err != nil {
		say("err count %v", err)
		os.Exit(2)
	} else if n == 0 {
		// The opening state, in one transaction: all of it or none.
		for _, c := range []*Collection{a, b} {
			if _, err := c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("bal")}}); err != nil {
				say("err index %v", err)
				os.Exit(2)
			}
		}
		if _, err := markers.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("tok"), Asc("tv")}}); err != nil {
			say("err index %v", err)
			os.Exit(2)
		}
		s, err := db.StartSession()
		if err != nil {
			say("err session %v", err)
			os.Exit(2)
		}
		_, err = s.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			for _, c := range []*Collection{a, b} {
				docs := make([]Document, txnKillAccounts)
				for i := range docs {
					docs[i] = Document{"_id": i, "bal": int64(txnKillOpening)}
				}
				if _, err := c.InsertMany(ctx, docs); err != nil {
					return nil, err
				}
			}
			for k := range txnKillTokens {
				if _, err := a.InsertOne(ctx, Document{"_id": fmt.Sprintf("tok-%d", k), "v": int64(0)}); err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
		if err != nil {
			say("err setup %v", err)
			os.Exit(2)
		}
	}
	say("ready")
	go func() {
		rng := rand.New(rand.NewPCG(spec.Seed, 0x5a9))
		for {
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			say("snap-begin")
			if err := db.Snapshot(context.Background()); err != nil {
				say("err snapshot %v", err)
			}
			say("snap-end")
		}
	}()
	for w := range txnKillWorkers {
		go func() {
			rng := rand.New(rand.NewPCG(spec.Seed, uint64(w)))
			s, err := db.StartSession()
			if err != nil {
				say("err session %v", err)
				os.Exit(2)
			}
			for n := 0; ; n++ {
				mv := randomTxnMove(rng, fmt.Sprintf("c%d-w%d-%d", spec.Cycle, w, n))
				if mv.abort {
					say("x %s", mv.id)
				} else {
					say("b %s", mv.id)
				}
				_, err := s.WithTransaction(ctx, func(ctx context.Context) (any, error) {
					return nil, mv.run(ctx, db)
				})
				switch {
				case mv.abort && errors.Is(err, errAbortOnPurpose):
				case err != nil:
					say("err %s %v", mv.id, err)
					os.Exit(2)
				case mv.abort:
					say("err %s: the transaction to abort committed", mv.id)
					os.Exit(2)
				default:
					say("a %s", mv.id)
				}
			}
		}()
	}
	select {}
}

// txnMove is one transaction of the child: amt from account fi of
// collection fa to account ti of ta, the token tok (-1: none) to the
// other collection, the marker id.
type txnMove struct {
	id             string
	fa, ta         string
	fi, ti         int
	amt            int64
	replace        bool
	tok            int
	abort          bool
	insertMarkerAt int // the marker is inserted before the step of this number (0..2)
}

func randomTxnMove(rng *rand.Rand, id string) txnMove {
	colls := []string{"A", "B"}
	mv := txnMove{id: id, fa: colls[rng.IntN(2)], ta: colls[rng.IntN(2)], fi: rng.IntN(txnKillAccounts), ti: rng.IntN(txnKillAccounts),
		amt: 1 + rng.Int64N(50), replace: rng.IntN(3) == 0, tok: -1, abort: rng.IntN(8) == 0, insertMarkerAt: rng.IntN(3)}
	for mv.fa == mv.ta && mv.fi == mv.ti {
		mv.ti = rng.IntN(txnKillAccounts)
	}
	if rng.IntN(3) == 0 {
		mv.tok = rng.IntN(txnKillTokens)
	}
	return mv
}

// run stages the move in the transaction ctx carries.
func (mv txnMove) run(ctx context.Context, db *DB) error {
	coll := func(name string) *Collection { return db.Collection(name) }
	marker := Document{"_id": mv.id, "fa": mv.fa, "fi": mv.fi, "ta": mv.ta, "ti": mv.ti, "amt": mv.amt}
	steps := []func() error{
		func() error { // the debit
			from := coll(mv.fa)
			if !mv.replace {
				_, err := from.UpdateOne(ctx, Document{"_id": mv.fi}, Document{"$inc": Document{"bal": -mv.amt}})
				return err
			}
			var d Document
			if err := from.FindOne(ctx, Document{"_id": mv.fi}).Decode(&d); err != nil {
				return err
			}
			_, err := from.ReplaceOne(ctx, Document{"_id": mv.fi}, Document{"bal": asInt64(d["bal"]) - mv.amt})
			return err
		},
		func() error { // the credit
			_, err := coll(mv.ta).UpdateOne(ctx, Document{"_id": mv.ti}, Document{"$inc": Document{"bal": mv.amt}})
			return err
		},
		func() error { // the token
			if mv.tok < 0 {
				return nil
			}
			id := fmt.Sprintf("tok-%d", mv.tok)
			where, to := "A", "B"
			var d Document
			err := coll(where).FindOne(ctx, Document{"_id": id}).Decode(&d)
			if errors.Is(err, ErrNotFound) {
				where, to = "B", "A"
				err = coll(where).FindOne(ctx, Document{"_id": id}).Decode(&d)
			}
			if err != nil {
				return err
			}
			v := asInt64(d["v"]) + 1
			if _, err := coll(where).DeleteOne(ctx, Document{"_id": id}); err != nil {
				return err
			}
			if _, err := coll(to).InsertOne(ctx, Document{"_id": id, "v": v}); err != nil {
				return err
			}
			marker["tok"], marker["tv"], marker["tto"] = id, v, to
			return nil
		},
	}
	for i, step := range steps {
		if i == mv.insertMarkerAt && mv.tok < 0 {
			if _, err := coll("markers").InsertOne(ctx, marker); err != nil {
				return err
			}
		}
		if err := step(); err != nil {
			return err
		}
	}
	if mv.tok >= 0 { // after the token step, which fills the marker in
		if _, err := coll("markers").InsertOne(ctx, marker); err != nil {
			return err
		}
	}
	if mv.abort {
		return errAbortOnPurpose
	}
	return nil
}

func asInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	}
	panic(fmt.Sprintf("not an integer: %T %v", v, v))
}

// killTxnCycles is how many kills TestSoakKillTxn runs: 6 by default,
// 36 with TTLDB_SOAK=short (CI), 240 with TTLDB_SOAK=1.
func killTxnCycles() int {
	switch os.Getenv("TTLDB_SOAK") {
	case "":
		return 6
	case "short":
		return 36
	}
	return 240
}

// txnKillDir is what the parent knows of one policy's directory: the
// markers found at the last check (none lost since, none added but by
// the child after it).
type txnKillDir struct {
	markers map[string]bool
}

// TestSoakKillTxn kills the transaction child at random moments (cycles
// round-robin over the sync policies, each policy's directory reopened
// after every kill) and checks after each kill:
//   - the directory opens; its indexes equal a rebuild;
//   - the opening transaction is there whole or not at all;
//   - all-or-nothing: each account's balance is its opening balance plus
//     the amounts of the markers present, and the total is the opening
//     total; each token is in exactly one collection, with the version of
//     its last marker present, in the collection that marker moved it to,
//     and its markers present are its moves 1..v, each once;
//   - no marker of a transaction aborted on purpose is there;
//   - the markers found after the previous kill are all there, and the
//     new ones are of transactions the last child started;
//   - each goroutine's transactions present are a prefix of those it
//     committed (a crash cuts the log's tail);
//   - SyncAlways: every transaction whose commit returned is there;
//     SyncEverySecond, SyncNever: one may be missing only if its commit
//     returned within killLossWindow of the kill.
//
// TTLDB_SEED=n replays a seed's random choices.
func TestSoakKillTxn(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0x7c3))
	base := t.TempDir()
	pols := []SyncPolicy{SyncAlways, SyncEverySecond, SyncNever}
	dirs := make([]txnKillDir, len(pols))
	for i := range dirs {
		dirs[i] = txnKillDir{markers: map[string]bool{}}
	}
	var committed, aborted, present, lost, midSnapshot int
	lossWindow := map[SyncPolicy]time.Duration{} // the largest measured, per policy
	cycles := killTxnCycles()
	for cycle := range cycles {
		pi := cycle % len(pols)
		pol := pols[pi]
		dir := filepath.Join(base, pol.String())
		spec := killTxnSpec{Dir: dir, Policy: pol, Seed: rng.Uint64(), Cycle: cycle}
		events, killed := runChildUntilKilled(t, "TestKillTxnChild", killTxnEnv, spec, time.Duration(20+rng.IntN(300))*time.Millisecond)
		what := fmt.Sprintf("seed %d, cycle %d (%v)", seed, cycle, pol)

		// The child's story.
		begun := map[string]bool{}
		isAborted := map[string]bool{}
		ackedAt := map[string]time.Time{}
		order := map[int][]string{} // by goroutine: its transactions to commit, in order
		inSnapshot := false
		for _, ev := range events {
			f := strings.Fields(ev.line)
			switch f[0] {
			case "snap-begin":
				inSnapshot = true
			case "snap-end":
				inSnapshot = false
			case "b":
				begun[f[1]] = true
				w := txnMarkerWorker(t, f[1])
				order[w] = append(order[w], f[1])
			case "x":
				begun[f[1]] = true
				isAborted[f[1]] = true
			case "a":
				ackedAt[f[1]] = ev.at
			}
		}
		if inSnapshot {
			midSnapshot++
		}
		committed += len(ackedAt)
		aborted += len(isAborted)

		db, err := Open(WithDir(dir), WithMonitor(MonitorOptions{Disabled: true}))
		require.NoError(t, err, "%s: the directory opens", what)
		requireIndexesRebuilt(t, db)
		found := checkTxnKillState(t, db, what)
		require.NoError(t, db.Close())

		// The markers: the earlier ones all kept, the new ones begun by
		// this child, none of an aborted transaction.
		for id := range dirs[pi].markers {
			require.True(t, found[id], "%s: marker %s, found after an earlier kill, is gone", what, id)
		}
		for id := range found {
			if dirs[pi].markers[id] {
				continue
			}
			require.True(t, begun[id], "%s: marker %s is of no transaction the child started", what, id)
			require.False(t, isAborted[id], "%s: marker %s is of a transaction aborted on purpose", what, id)
			present++
		}
		// Each goroutine's transactions: a prefix of them is there.
		for w, ids := range order {
			n := 0
			for n < len(ids) && found[ids[n]] {
				n++
			}
			for _, id := range ids[n:] {
				require.False(t, found[id], "%s: goroutine %d: transaction %s is there, and its earlier %s is not", what, w, id, ids[n])
			}
		}
		// Acknowledged commits.
		for id, at := range ackedAt {
			if found[id] {
				continue
			}
			lost++
			require.NotEqual(t, SyncAlways, pol, "%s: transaction %s, whose commit returned, is gone", what, id)
			require.LessOrEqual(t, killed.Sub(at), killLossWindow, "%s: transaction %s, committed %v before the kill, is gone", what, id, killed.Sub(at))
			lossWindow[pol] = max(lossWindow[pol], killed.Sub(at))
		}
		dirs[pi].markers = found
	}
	t.Logf("%d kills (%d during a snapshot): %d transactions committed, %d aborted on purpose, %d found after the kills, %d acknowledged lost (SyncEverySecond, SyncNever, within %v of the kill)",
		cycles, midSnapshot, committed, aborted, present, lost, killLossWindow)
	for _, pol := range pols[1:] {
		t.Logf("%v: the oldest acknowledged commit lost was acknowledged %v before its kill", pol, lossWindow[pol])
	}
	require.Positive(t, committed, "the children committed no transaction")
}

// txnMarkerWorker returns the goroutine of a marker id (c<cycle>-w<w>-<n>).
func txnMarkerWorker(t testing.TB, id string) int {
	t.Helper()
	f := strings.Split(id, "-")
	require.Len(t, f, 3, "marker id %q", id)
	w, err := strconv.Atoi(strings.TrimPrefix(f[1], "w"))
	require.NoError(t, err, "marker id %q", id)
	return w
}

// checkTxnKillState checks the all-or-nothing rules of TestSoakKillTxn on
// db and returns the markers it holds.
func checkTxnKillState(t testing.TB, db *DB, what string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	all := func(name string) []Document {
		cur, err := db.Collection(name).Find(ctx, nil)
		require.NoError(t, err)
		var docs []Document
		require.NoError(t, cur.All(ctx, &docs))
		return docs
	}
	type acct struct {
		coll string
		i    int
	}
	bal := map[acct]int64{}
	type tokAt struct {
		coll string
		v    int64
	}
	toks := map[string][]tokAt{}
	for _, name := range []string{"A", "B"} {
		for _, d := range all(name) {
			switch id := d["_id"].(type) {
			case string:
				toks[id] = append(toks[id], tokAt{name, asInt64(d["v"])})
			default:
				bal[acct{name, int(asInt64(id))}] = asInt64(d["bal"])
			}
		}
	}
	markers := all("markers")
	found := map[string]bool{}
	if len(bal) == 0 {
		// The opening transaction is not there: nothing is.
		require.Empty(t, toks, "%s: tokens without accounts: the opening transaction is there in part", what)
		require.Empty(t, markers, "%s: markers without accounts", what)
		return found
	}
	require.Len(t, bal, 2*txnKillAccounts, "%s: the opening transaction is there in part", what)
	require.Len(t, toks, txnKillTokens, "%s: the opening transaction is there in part", what)

	want := map[acct]int64{}
	for a := range bal {
		want[a] = txnKillOpening
	}
	tokMoves := map[string][]int64{}
	lastTo := map[string]string{}
	lastV := map[string]int64{}
	for _, m := range markers {
		id := m["_id"].(string)
		found[id] = true
		amt := asInt64(m["amt"])
		want[acct{m["fa"].(string), int(asInt64(m["fi"]))}] -= amt
		want[acct{m["ta"].(string), int(asInt64(m["ti"]))}] += amt
		if tok, ok := m["tok"].(string); ok {
			v := asInt64(m["tv"])
			tokMoves[tok] = append(tokMoves[tok], v)
			if v > lastV[tok] {
				lastV[tok], lastTo[tok] = v, m["tto"].(string)
			}
		}
	}
	var total int64
	for a, b := range bal {
		total += b
		require.Equal(t, want[a], b, "%s: account %s/%d's balance is not its opening balance plus the amounts of the markers there: a transaction is there in part", what, a.coll, a.i)
	}
	require.EqualValues(t, 2*txnKillAccounts*txnKillOpening, total, "%s: the total moved", what)
	for tok, at := range toks {
		require.Len(t, at, 1, "%s: token %s is in %d collections", what, tok, len(at))
		moves := tokMoves[tok]
		slices.Sort(moves)
		for i, v := range moves {
			require.EqualValues(t, i+1, v, "%s: token %s's moves there are %v: not 1..n, each once", what, tok, moves)
		}
		require.Equal(t, lastV[tok], at[0].v, "%s: token %s is at version %d, its last marker there says %d", what, tok, at[0].v, lastV[tok])
		wantColl := "A"
		if lastV[tok] > 0 {
			wantColl = lastTo[tok]
		}
		require.Equal(t, wantColl, at[0].coll, "%s: token %s is in the wrong collection", what, tok)
	}
	return found
}
