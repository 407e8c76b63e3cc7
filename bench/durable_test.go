package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDurableTrials runs every durability trial small: each reports its
// metrics, the reopened DB holds what was written (the restart trial checks
// it), and no trial leaves a file behind in its directory.
func TestDurableTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and fsyncs files")
	}
	tmp := t.TempDir()
	p := trialParams{tmp: tmp, groupDur: 100 * time.Millisecond, snapWriters: 2, snapPause: 100 * time.Microsecond,
		snapPhase: 100 * time.Millisecond, snapCycles: 2}
	want := map[string][]string{
		"dinsert":  {"dinsert", "dinsert_close"},
		"dinsert1": {"dinsert", "dinsert_close"},
		"dgroup":   {"group_commits_per_s", "commit_p99_group", "fsync_p50"},
		"restart":  {"open"},
		"dsnap":    {"write_p99_nosnap", "write_p99_snap", "snapshot_time", "snapshots"},
	}
	cases := []struct {
		workload string
		stores   []string
		n        int
	}{
		{"dinsert", dinsertStores, 3000},
		{"dinsert1", dinsert1Stores, 3000},
		{"dgroup", dgroupStores, 4},
		{"restart", restartStores, 3000},
		{"dsnap", dsnapStores, 3000},
	}
	for _, c := range cases {
		for _, st := range c.stores {
			t.Run(c.workload+"/"+st, func(t *testing.T) {
				q := p
				q.workload, q.store, q.n = c.workload, st, c.n
				var out trialOut
				var err error
				switch c.workload {
				case "dinsert", "dinsert1":
					err = trialDInsert(q, &out)
				case "dgroup":
					err = trialDGroup(q, &out)
				case "restart":
					err = trialRestart(q, &out)
				case "dsnap":
					err = trialDSnap(q, &out)
				}
				if err != nil {
					t.Fatal(err)
				}
				names := want[c.workload]
				switch st {
				case "ttldb-always":
					if c.workload == "dgroup" {
						names = append(names, "commits_per_fsync")
					}
				case "ttldb-snapshot":
					names = append(names, "disk_vs_encoding", "insert_memory")
				}
				for _, m := range names {
					if v, ok := metricOf(&out, m); !ok || v <= 0 {
						t.Errorf("metric %s: %v, %v", m, v, ok)
					}
				}
				left, err := os.ReadDir(tmp)
				if err != nil {
					t.Fatal(err)
				}
				if len(left) != 0 {
					t.Errorf("left behind in the trial directory: %v", left)
				}
			})
		}
	}
}

// TestDurableTargets: the targets table computes each ratio from the
// medians of the right trials and says MET or MISSED against each limit,
// and "not measured" for a trial that did not run.
func TestDurableTargets(t *testing.T) {
	const n = 1000
	cfg := config{durableN: n, groupWriters: 8, snapWriters: 4, stores: []string{"ttldb", "buntdb"},
		workloads: []string{"dinsert", "dgroup", "restart", "dsnap"}}
	res := &runResult{outs: map[spec][]trialOut{}, errs: map[spec][]string{}}
	put := func(w, st string, n int, kv ...any) {
		var o trialOut
		for i := 0; i < len(kv); i += 2 {
			o.add(kv[i].(string), "", kv[i+1].(float64))
		}
		// Three repetitions: the median is the middle one.
		lo, hi := o, o
		lo.Metrics, hi.Metrics = nil, nil
		for _, m := range o.Metrics {
			lo.add(m.Metric, "", m.Value/2)
			hi.add(m.Metric, "", m.Value*2)
		}
		res.outs[spec{w, st, n}] = []trialOut{hi, o, lo}
	}
	put("dinsert", "ttldb-memory", n, "dinsert", 500.0)
	put("dinsert", "ttldb-everysecond", n, "dinsert", 400.0)  // 0.8x memory: MET
	put("dinsert", "buntdb-everysecond", n, "dinsert", 200.0) // 2x buntdb: MISSED
	put("dgroup", "ttldb-always", 8, "commits_per_fsync", 4.5, "fsync_p50", 150.0)
	put("restart", "ttldb-snapshot", n, "open", 40.0, "insert_memory", 100.0, "disk_vs_encoding", 1.1)
	put("restart", "ttldb-log", n, "open", 120.0, "insert_memory", 100.0)
	put("restart", "buntdb-aof", n, "open", 100.0)
	put("dsnap", "ttldb", n, "write_p99_snap", 400.0, "write_p99_nosnap", 100.0)
	r := &reporter{cfg, res}
	// Compared with runs of spaces folded: the columns' widths vary.
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	got := captureStdout(t, r.durableTargets)
	for _, want := range []string{
		"insert rate (1000 per call), SyncEverySecond vs ttldb in memory                    0.8x      >= 0.7x   MET",
		"insert rate (1000 per call), SyncEverySecond vs buntdb's default (EverySecond)     2x        >= 3x     MISSED",
		"insert rate (one per call), SyncEverySecond vs ttldb in memory                     -         >= 0.7x   not measured",
		"commits per fsync, SyncAlways, 8 writers (fsync p50 here 150 µs)                   4.5       >= 4      MET",
		"Open after a snapshot vs buntdb's load                                             0.4x      <= 0.5x   MET",
		"Open after a snapshot vs inserting the documents in memory                         0.4x      <= 1x     MET",
		"Open from the log only vs buntdb's load                                            1.2x      <= 0.5x   MISSED",
		"Open from the log only vs inserting the documents in memory                        1.2x      <= 1x     MISSED",
		"writers' p99 during a snapshot vs without (4 writers)                              4x        <= 3x     MISSED",
		"disk bytes per document after a snapshot (less the log kept for streams) vs the encoding 1.1x <= 1.2x MET",
	} {
		if !strings.Contains(fold(got), fold(want)) {
			t.Errorf("targets table lacks %q:\n%s", want, got)
		}
	}
}

// captureStdout returns what fn prints on os.Stdout.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	fn()
	os.Stdout = old
	w.Close()
	return string(<-done)
}
