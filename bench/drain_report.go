package main

import (
	"fmt"
	"math"
	"os"
	"text/tabwriter"
)

// runs returns a trial's values of metric, one per repetition in the
// order they ran (repetition-major: run i of two specs ran side by side).
func (r *reporter) runs(workload, store string, n int, metric string) []float64 {
	var vs []float64
	for _, o := range r.res.outs[spec{workload, store, n}] {
		for _, m := range o.Metrics {
			if m.Metric == metric {
				vs = append(vs, m.Value)
			}
		}
	}
	return vs
}

// worst returns the largest of a trial's values of metric.
func (r *reporter) worst(workload, store string, n int, metric string) (float64, bool) {
	vs := r.runs(workload, store, n, metric)
	if len(vs) == 0 {
		return 0, false
	}
	w := math.Inf(-1)
	for _, v := range vs {
		w = max(w, v)
	}
	return w, true
}

// worstRatio returns the largest, over the repetitions both trials ran, of
// store's value of metric over base's in the same repetition.
func (r *reporter) worstRatio(workload string, n int, metric, store string, baseWorkload, base string, baseN int) (float64, bool) {
	a, b := r.runs(workload, store, n, metric), r.runs(baseWorkload, base, baseN, metric)
	w, ok := math.Inf(-1), false
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			w, ok = max(w, a[i]/b[i]), true
		}
	}
	return w, ok
}

// drainTargets prints issue 24's targets (the adaptive drain), each MET,
// MISSED or not measured, from this run alone.
func (r *reporter) drainTargets() {
	ln, hn := r.cfg.latencyN, r.hostTargetN()
	fmt.Printf("\n== Targets (issue 24, the adaptive drain; latency at %s, host at %s; \"worst\" is the worst repetition of %d)\n", fmtN(ln), fmtN(hn), r.cfg.reps)
	w := tabwriter.NewWriter(os.Stdout, 2, 0, 2, ' ', 0)
	fmt.Fprintln(w, "target\tmeasured\trequired\tstatus")
	row := func(name string, v float64, ok bool, unit, op string, limit float64) {
		req := fmt.Sprintf("%s %g%s", op, limit, unit)
		if !ok {
			fmt.Fprintf(w, "%s\t-\t%s\tnot measured (not run)\n", name, req)
			return
		}
		pass := v <= limit
		if op == ">=" {
			pass = v >= limit
		}
		st := "MET"
		if !pass {
			st = "MISSED"
		}
		fmt.Fprintf(w, "%s\t%.3g%s\t%s\t%s\n", name, v, unit, req, st)
	}
	for _, rate := range []struct {
		workload, label string
	}{{"latency", r.cfg.readEvery.String()}, {slowReaderWorkload, slowReadEvery.String()}} {
		wl := rate.workload
		v, ok := r.worst(wl, "ttldb", ln, "read_p99_expiry")
		row("read p99 during expiry, one read per "+rate.label+", worst", v, ok, " µs", "<=", 1000)
		v, ok = r.worst(wl, "ttldb", ln, "read_p999_expiry")
		row("read p99.9 during expiry, one read per "+rate.label+", worst", v, ok, " µs", "<=", 2000)
		t, okT := r.med(wl, "ttldb", ln, "read_p99_expiry")
		f, okF := r.med(wl, "floor", ln, "read_p99_expiry")
		row("read p99 during expiry vs floor's, per "+rate.label, t/f, okT && okF && f > 0, "x", "<=", 2)
		st, p, okP := r.bestPeer(wl, ln, "read_p99_expiry")
		row("read p99 during expiry vs best peer's ("+st+"), per "+rate.label, t/p, okT && okP && p > 0, "x", "<=", 0.1)
		t, okT = r.med(wl, "ttldb", ln, "removal_rate_reading")
		f, okF = r.med(wl, "floor", ln, "removal_rate_reading")
		row("removal rate with the reader running vs floor's, per "+rate.label, t/f, okT && okF && f > 0, "x", ">=", 1)
	}
	v, ok := r.worstRatio("host", hn, "request_p99_expiry", "ttldb", "host", hostNone, 0)
	row("host service p99 during expiry vs no store, worst", v, ok, "x", "<=", 1.5)
	fmt.Fprintf(w, "mass expiry with no reader vs the 3c54963 build\t-\tp > 0.05 or <= 3%% slower\tnot measured here: benchstat of BenchmarkMassExpiryBackground, old and new builds interleaved (README, Adaptive drain)\n")
	t, okT := r.med("lag", "ttldb", r.cfg.lagN, "lag_p99")
	c, okC := r.med("lag", "ttlcache", r.cfg.lagN, "lag_p99")
	row("expiry lag p99 vs ttlcache's", t/c, okT && okC && c > 0, "x", "<=", 1)
	h, okH := r.med("lag", "ttldb", r.cfg.lagN, "lag_hist_p99")
	row("lag histogram's p99 vs the measured p99, |ratio-1|", math.Abs(h/t-1), okT && okH && t > 0, "", "<=", 0.1)
	w.Flush()
}
