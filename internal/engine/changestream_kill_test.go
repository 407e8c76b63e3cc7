package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/testutil"
)

// The watch kill test: a child process (this test binary, re-executed
// with killWatchEnv set) resumes a change stream from the token the
// parent gives it, writes on another goroutine (inserts and deletes), and
// reports every event it is delivered on a pipe; the parent SIGKILLs it
// at a random moment, reopens the directory, checks that every delivered
// change is in it, and starts the next child from the last token
// delivered. At the end, the events delivered across every run must be
// the DB's history exactly: none twice, none missing, in order.

const killWatchEnv = "TTLDB_KILL_WATCH_CHILD"

type killWatchSpec struct {
	Dir    string
	Policy SyncPolicy
	Seed   uint64
	Cycle  int
	Token  string // resume after it
}

// TestKillWatchChild is the child's body; it does nothing unless
// killWatchEnv is set. It never returns: the parent kills it.
func TestKillWatchChild(t *testing.T) {
	spec, say := killChildStart[killWatchSpec](t, killWatchEnv, "TestSoakKillWatch")
	db, err := Open(WithDir(spec.Dir), WithSync(spec.Policy), WithMonitor(MonitorOptions{Disabled: true}),
		WithAutoSnapshot(AutoSnapshot{MinLogBytes: 64 << 10, LogRatio: 0.5}))
	if err != nil {
		say("err open %v", err)
		os.Exit(2)
	}
	token, err := ParseResumeToken(spec.Token)
	if err != nil {
		say("err token %v", err)
		os.Exit(2)
	}
	ctx := context.Background()
	cs, err := db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: &token})
	if err != nil {
		say("err watch %v", err)
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 0x3a7c))
	say("ready")
	go func() {
		c := db.Collection("w")
		for i := 0; ; i++ {
			id := spec.Cycle*1_000_000 + i
			var err error
			switch r := rng.IntN(10); {
			case r < 6:
				_, err = c.InsertOne(ctx, Document{"_id": id})
			case r < 8:
				_, err = c.InsertMany(ctx, []Document{{"_id": id}, {"_id": id + 500_000}})
			default:
				_, err = c.DeleteOne(ctx, Document{"_id": id - 1 - rng.IntN(5)})
			}
			if err != nil {
				say("err write %v", err)
				os.Exit(2)
			}
		}
	}()
	for cs.Next(ctx) {
		ev := cs.Event()
		say("e %s %s %d", ev.ID, ev.OperationType, idOfKey(ev.DocumentKey))
	}
	say("err stream %v", cs.Err())
	os.Exit(2)
}

// idOfKey is idOf without a test: the child reports an unreadable key as
// -1, which the parent refuses (its _ids are not negative).
func idOfKey(key RawDocument) int {
	id, ok := intID(key)
	if !ok {
		return -1
	}
	return id
}

// watchEvent is one event the children reported.
type watchEvent struct {
	token ResumeToken
	kind  OperationType
	id    int
}

// TestSoakKillWatch is the watch kill test: a few cycles per policy by
// default, 12 with TTLDB_SOAK=short (CI), 60 with TTLDB_SOAK=1. TTLDB_SEED=n replays a seed.
func TestSoakKillWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0x3a7d))
	cycles := 6
	switch os.Getenv("TTLDB_SOAK") {
	case "":
	case "short":
		cycles = 12
	default:
		cycles = 60
	}
	dir := filepath.Join(t.TempDir(), "db")
	var delivered []watchEvent
	token := ResumeToken{}
	pols := []SyncPolicy{SyncAlways, SyncEverySecond, SyncNever}
	for cycle := range cycles {
		pol := pols[cycle%len(pols)]
		if cycle%2 == 0 {
			pol = SyncAlways // the policy the rule is about, most often
		}
		spec := killWatchSpec{Dir: dir, Policy: pol, Seed: rng.Uint64(), Cycle: cycle + 1, Token: token.String()}
		lines := runKillWatchChild(t, spec, time.Duration(30+rng.IntN(300))*time.Millisecond)
		var mine []watchEvent
		for _, line := range lines {
			f := strings.Fields(line)
			if f[0] != "e" {
				continue
			}
			tok, err := ParseResumeToken(f[1])
			require.NoError(t, err)
			id, err := strconv.Atoi(f[3])
			require.NoError(t, err)
			require.GreaterOrEqual(t, id, 0, "cycle %d: an event without an integer _id: %s", cycle, line)
			ev := watchEvent{token: tok, kind: OperationType(f[2]), id: id}
			if n := len(delivered); n > 0 {
				require.True(t, delivered[n-1].token.less(tok), "cycle %d (%v): event %s delivered after %s: twice, or out of order", cycle, pol, tok, delivered[n-1].token)
			}
			delivered = append(delivered, ev)
			mine = append(mine, ev)
		}
		// Every change delivered is in the reopened DB, unless a later
		// change the log holds (committed, not yet delivered when the
		// child died) undid it.
		db, err := Open(WithDir(dir), WithMonitor(MonitorOptions{Disabled: true}))
		require.NoError(t, err, "cycle %d: the directory opens", cycle)
		state := map[int]bool{}
		for _, ev := range delivered {
			state[ev.id] = ev.kind == OperationInsert
		}
		last := token
		if len(mine) > 0 {
			last = mine[len(mine)-1].token
		}
		backlog, err := db.Watch(context.Background(), nil, ChangeStreamOptions{ResumeAfter: &last})
		require.NoError(t, err, "cycle %d: resuming after the last event delivered", cycle)
		later := map[int]bool{}
		for backlog.TryNext(context.Background()) {
			ev := backlog.Event()
			later[idOfKey(ev.DocumentKey)] = true
		}
		require.NoError(t, backlog.Err())
		for id, present := range state {
			if later[id] {
				continue
			}
			err := db.Collection("w").FindOne(context.Background(), Document{"_id": id}).Err()
			if present {
				require.NoError(t, err, "cycle %d (%v): document %d's insert was delivered, and the crash took it back", cycle, pol, id)
			} else {
				require.ErrorIs(t, err, ErrNotFound, "cycle %d (%v): document %d's delete was delivered, and the crash took it back", cycle, pol, id)
			}
		}
		require.LessOrEqual(t, delivered[len(delivered)-1].token.Seq, db.ops.lastSeq()+1)
		require.NoError(t, db.Close())
		if len(mine) > 0 {
			token = mine[len(mine)-1].token
		}
		t.Logf("cycle %d (%v): %d events delivered", cycle, pol, len(mine))
	}
	// The events delivered, then those the last child did not get to,
	// are the DB's whole history, as a stream from its start reads it.
	db, err := Open(WithDir(dir), WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	cs, err := db.Watch(ctx, nil, ChangeStreamOptions{ResumeAfter: &ResumeToken{}})
	require.NoError(t, err)
	var history []watchEvent
	for cs.TryNext(ctx) {
		ev := cs.Event()
		history = append(history, watchEvent{token: ev.ID, kind: ev.OperationType, id: idOfKey(ev.DocumentKey)})
	}
	require.NoError(t, cs.Err())
	require.GreaterOrEqual(t, len(history), len(delivered))
	require.Equal(t, history[:len(delivered)], delivered, "the events delivered across the kills are the history's first ones, each once (seed %d)", seed)
}

// runKillWatchChild runs a child with spec, SIGKILLs it d after it is
// ready, and returns the lines it said.
func runKillWatchChild(t *testing.T, spec killWatchSpec, d time.Duration) []string {
	t.Helper()
	events, _ := runChildUntilKilled(t, "TestKillWatchChild", killWatchEnv, spec, d)
	lines := make([]string, len(events))
	for i, ev := range events {
		lines[i] = ev.line
	}
	return lines
}
