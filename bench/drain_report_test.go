package main

import (
	"strings"
	"testing"
)

// TestDrainTargets: issue 24's table takes the worst repetition where the
// target says "in every repetition", pairs repetitions for the host ratio,
// and computes each ratio from the medians otherwise.
func TestDrainTargets(t *testing.T) {
	const ln, hn, lagN = 1000, 500, 100
	cfg := config{latencyN: ln, hostN: []int{hn}, lagN: lagN, reps: 3, readEvery: 10e3,
		stores: []string{"ttldb", "floor", "ttlcache"}, workloads: []string{"latency", "host", "lag"}}
	res := &runResult{outs: map[spec][]trialOut{}, errs: map[spec][]string{}}
	// put stores three repetitions of each metric: the values given, in
	// order.
	put := func(w, st string, n int, metric string, vs ...float64) {
		outs := res.outs[spec{w, st, n}]
		if outs == nil {
			outs = make([]trialOut, len(vs))
		}
		for i, v := range vs {
			outs[i].add(metric, "", v)
		}
		res.outs[spec{w, st, n}] = outs
	}
	put("latency", "ttldb", ln, "read_p99_expiry", 100, 900, 1500) // worst 1500: MISSED
	put("latency", "ttldb", ln, "read_p999_expiry", 200, 300, 1900)
	put("latency", "floor", ln, "read_p99_expiry", 300, 500, 700) // median ratio 900/500
	put("latency", "ttlcache", ln, "read_p99_expiry", 9000, 10000, 11000)
	put("latency", "ttldb", ln, "removal_rate_reading", 3e6, 4e6, 5e6)
	put("latency", "floor", ln, "removal_rate_reading", 2e6, 2e6, 2e6)
	put(slowReaderWorkload, "ttldb", ln, "read_p99_expiry", 50, 60, 70)
	put("host", "ttldb", hn, "request_p99_expiry", 100, 150, 100)
	put("host", hostNone, 0, "request_p99_expiry", 100, 100, 50) // rep 3: 2x
	put("lag", "ttldb", lagN, "lag_p99", 1, 2, 3)
	put("lag", "ttldb", lagN, "lag_hist_p99", 2.1, 2.1, 2.1)
	put("lag", "ttlcache", lagN, "lag_p99", 4, 4, 4)
	r := &reporter{cfg, res}
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	got := fold(captureStdout(t, r.drainTargets))
	for _, want := range []string{
		"read p99 during expiry, one read per 10µs, worst 1.5e+03 µs <= 1000 µs MISSED",
		"read p99.9 during expiry, one read per 10µs, worst 1.9e+03 µs <= 2000 µs MET",
		"read p99 during expiry vs floor's, per 10µs 1.8x <= 2x MET",
		"read p99 during expiry vs best peer's (ttlcache), per 10µs 0.09x <= 0.1x MET",
		"removal rate with the reader running vs floor's, per 10µs 2x >= 1x MET",
		"read p99 during expiry, one read per 100µs, worst 70 µs <= 1000 µs MET",
		"read p99.9 during expiry, one read per 100µs, worst - <= 2000 µs not measured",
		"host service p99 during expiry vs no store, worst 2x <= 1.5x MISSED",
		"mass expiry with no reader vs the 3c54963 build - p > 0.05 or <= 3% slower not measured here",
		"expiry lag p99 vs ttlcache's 0.5x <= 1x MET",
		"lag histogram's p99 vs the measured p99, |ratio-1| 0.05 <= 0.1 MET",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("targets table lacks %q:\n%s", want, got)
		}
	}
}
