package main

import (
	"os"
	"testing"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
)

// TestEncodedDocSize: the bench's size of a document's encoding, computed
// from docs/FORMAT.md, is the length ttldb's encoder gives, for documents
// with small and large ints, short and long ids, and dates with and
// without nanoseconds, before and after 1970.
func TestEncodedDocSize(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, i := range []int{0, 1, 63, 64, 4095, 99_999, 1_000_000, 41_000_123} {
		for _, at := range []time.Time{base, base.Add(123456789), time.Unix(-5, 7).UTC()} {
			d := genDoc(i, at)
			enc, err := codec.Encode(ttldbDoc(d), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodedDocSize(d); got != len(enc) {
				t.Fatalf("doc %d at %v: encodedDocSize %d, encoder %d bytes", i, at, got, len(enc))
			}
		}
	}
}

// TestDurableTrials runs every durability trial small: each reports its
// metrics, the reopened DB holds what was written (the restart trial checks
// it), and no trial leaves a file behind in its directory.
func TestDurableTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and fsyncs files")
	}
	tmp := t.TempDir()
	p := trialParams{tmp: tmp, groupDur: 100 * time.Millisecond, snapWriters: 2, snapPause: 100 * time.Microsecond,
		snapBase: 100 * time.Millisecond, snapCount: 1}
	want := map[string][]string{
		"dinsert": {"dinsert", "dinsert_close"},
		"dgroup":  {"group_commits_per_s", "commit_p99_group", "fsync_p50"},
		"restart": {"open"},
		"dsnap":   {"write_p99_nosnap", "write_p99_snap", "snapshot_time"},
	}
	cases := []struct {
		workload string
		stores   []string
		n        int
	}{
		{"dinsert", dinsertStores, 3000},
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
				case "dinsert":
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
