package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtN(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

type reporter struct {
	cfg config
	res *runResult
}

func (r *reporter) med(workload, store string, n int, metric string) (float64, bool) {
	outs := r.res.outs[spec{workload, store, n}]
	return medianOf(outs, metric)
}

func (r *reporter) cell(workload, store string, n int, metric string) string {
	if v, ok := r.med(workload, store, n, metric); ok {
		return fmtNum(v)
	}
	if errs := r.res.errs[spec{workload, store, n}]; len(errs) > 0 {
		return "fail"
	}
	return "-"
}

// ratio formats ttldb's value over the peer's.
func (r *reporter) ratio(workload string, n int, metric, store string) string {
	if store == "ttldb" {
		return ""
	}
	t, ok1 := r.med(workload, "ttldb", n, metric)
	p, ok2 := r.med(workload, store, n, metric)
	if !ok1 || !ok2 || p == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", t/p)
}

func (r *reporter) stores() []string {
	var out []string
	for _, s := range storeNames {
		if slices.Contains(r.cfg.stores, s) {
			out = append(out, s)
		}
	}
	return out
}

func newTab() *tabwriter.Writer {
	return tabwriter.NewWriter(os.Stdout, 2, 0, 2, ' ', tabwriter.AlignRight)
}

func report(cfg config, res *runResult) {
	r := &reporter{cfg, res}
	fmt.Println()
	for sp, errs := range res.errs {
		fmt.Printf("note: %s: %s\n", sp, strings.Join(errs, "; "))
	}
	notes := map[string]bool{}
	for _, outs := range res.outs {
		for _, o := range outs {
			for _, n := range o.Notes {
				notes[n] = true
			}
		}
	}
	for n := range notes {
		fmt.Println("note:", n)
	}

	// Workload 1.
	fmt.Println("\n== Workload 1: insert throughput (docs/s; ttldb InsertMany and buntdb transactions of 1000, the caches one Set per doc, the floor 1000 per lock hold)")
	r.perSizeTable(cfg, "mass100", "insert")

	// Workload 2.
	for _, v := range []struct{ wl, pre, label string }{
		{"mass100", "expire_all", "all N expired"},
		{"mass10", "expire_10pct", "k/N = 10% expired"},
		{"mass1", "expire_1pct", "k/N = 1% expired"},
	} {
		fmt.Printf("\n== Workload 2: mass expiry, %s: removal rate (expired docs/s over the removal window), window, and time from the threshold until all were gone\n", v.label)
		w := newTab()
		hdr := "store\t"
		for _, n := range cfg.sizes {
			hdr += fmt.Sprintf("N=%s rate\tttldb/peer\twindow ms\tclear ms\t", fmtN(n))
		}
		fmt.Fprintln(w, hdr)
		for _, st := range r.stores() {
			if st == "golang-lru" {
				continue
			}
			line := st + "\t"
			for _, n := range cfg.sizes {
				line += r.cell(v.wl, st, n, v.pre+"_rate") + "\t" + r.ratio(v.wl, n, v.pre+"_rate", st) + "\t" +
					r.cell(v.wl, st, n, v.pre+"_window") + "\t" + r.cell(v.wl, st, n, v.pre+"_clear_after_threshold") + "\t"
			}
			fmt.Fprintln(w, line)
		}
		w.Flush()
	}
	fmt.Println("(golang-lru: one TTL per cache, removal paced by its 100-bucket schedule: not in workload 2; see workload 3)")

	// Workload 3.
	ln := cfg.latencyN
	w := newTab()
	fmt.Printf("\n== Workload 3: read latency by key, open loop every %s, while %s documents expire at once (%d live docs read); µs, corrected for coordinated omission\n", cfg.readEvery, fmtN(ln), cfg.live)
	fmt.Fprintln(w, "store\tp50\tp99\tp99.9\tmax\t>1ms\treads\t|idle p50\tidle p99\tidle p99.9\tidle max\tidle >1ms\t|expiry ms\tttldb/peer p99\tttldb/peer max\t")
	for _, st := range r.stores() {
		c := func(m string) string { return r.cell("latency", st, ln, m) }
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t|%s\t%s\t%s\t%s\t%s\t|%s\t%s\t%s\t\n", st,
			c("read_p50_expiry"), c("read_p99_expiry"), c("read_p999_expiry"), c("read_max_expiry"), c("reads_over_1ms_expiry"), c("reads_expiry"),
			c("read_p50_idle"), c("read_p99_idle"), c("read_p999_idle"), c("read_max_idle"), c("reads_over_1ms_idle"),
			c("expiry_phase"), r.ratio("latency", ln, "read_p99_expiry", st), r.ratio("latency", ln, "read_max_expiry", st))
	}
	w.Flush()

	// Workload 4.
	fmt.Println("\n== Workload 4: memory: live heap bytes per stored document after GC")
	r.perSizeTable(cfg, "mass100", "heap_per_doc")
	fmt.Println("\n   ttldb: heap (MiB) with N docs, after expiring 90% (RunTTLPass), after Compact, and a fresh store with the remaining 10%")
	w = newTab()
	fmt.Fprintln(w, "N\tfull\tafter expire 90%\tafter Compact\tfresh 10%\texpired/fresh\tcompacted/fresh\t")
	for _, n := range cfg.sizes {
		c := func(m string) string { return r.cell("compact", "ttldb", n, m) }
		if _, ok := r.med("compact", "ttldb", n, "heap_full"); !ok {
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", fmtN(n), c("heap_full"), c("heap_after_expire90"), c("heap_after_compact"),
			c("heap_fresh10"), c("after_expire90_vs_fresh10"), c("after_compact_vs_fresh10"))
	}
	w.Flush()

	// Workload 5.
	var extra []result
	fmt.Println("\n== Workload 5: scaling: per-document cost (ns/doc) of insert and of expiry (all expired), and its growth from the smallest to the largest N")
	w = newTab()
	hdr := "store\t"
	for _, n := range cfg.sizes {
		hdr += fmt.Sprintf("insert %s\t", fmtN(n))
	}
	hdr += "growth\t|"
	for _, n := range cfg.sizes {
		hdr += fmt.Sprintf("expiry %s\t", fmtN(n))
	}
	hdr += "growth\t"
	fmt.Fprintln(w, hdr)
	growth := map[string][2]float64{}
	for _, st := range r.stores() {
		line := st + "\t"
		var g [2]float64
		for i, m := range []string{"insert_cost", "expire_all_cost"} {
			var first, last float64
			var lastN, firstN int
			for _, n := range cfg.sizes {
				line += r.cell("mass100", st, n, m) + "\t"
				if v, ok := r.med("mass100", st, n, m); ok {
					if firstN == 0 {
						first, firstN = v, n
					}
					last, lastN = v, n
				}
			}
			if firstN != 0 && lastN != firstN {
				g[i] = last / first
				line += fmt.Sprintf("%.2fx (%s→%s)\t", g[i], fmtN(firstN), fmtN(lastN))
				extra = append(extra, result{"5-scaling", st, lastN, strings.TrimSuffix(m, "_cost") + "_growth_from_" + fmtN(firstN), "x", g[i], nil})
			} else {
				line += "-\t"
			}
			if i == 0 {
				line += "|"
			}
		}
		growth[st] = g
		fmt.Fprintln(w, line)
	}
	w.Flush()

	// Workload 6.
	fmt.Printf("\n== Workload 6: expiry lag with the deadline wake: ms from each document's threshold to its removal (%d docs spread over %s)\n", cfg.lagN, cfg.spread)
	w = newTab()
	fmt.Fprintln(w, "store\tp50\tp99\tmax\tttldb/peer p99\t")
	for _, st := range []string{"ttldb", "ttlcache", "floor"} {
		if !slices.Contains(cfg.stores, st) {
			continue
		}
		c := func(m string) string { return r.cell("lag", st, cfg.lagN, m) }
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t\n", st, c("lag_p50"), c("lag_p99"), c("lag_max"), r.ratio("lag", cfg.lagN, "lag_p99", st))
	}
	w.Flush()

	r.targets(growth)
	writeResults(cfg, res, extra)
	r.svgs()
}

// targetN is the size the targets are stated at (1M), or the nearest run.
func (r *reporter) targetN() int {
	best := 0
	for _, n := range r.cfg.sizes {
		if n <= 1_000_000 && n > best {
			best = n
		}
	}
	if best == 0 {
		best = r.cfg.sizes[0]
	}
	return best
}

func (r *reporter) targets(growth map[string][2]float64) {
	tn := r.targetN()
	fmt.Printf("\n== Targets (issue 5; ratios ttldb/peer measured in this run; size-1M targets evaluated at N=%s)\n", fmtN(tn))
	w := newTab()
	fmt.Fprintln(w, "target\tmeasured\trequired\tstatus\t")
	row := func(name string, v float64, ok bool, req string, pass bool) {
		if !ok {
			fmt.Fprintf(w, "%s\t-\t%s\tn/a\t\n", name, req)
			return
		}
		st := "MET"
		if !pass {
			st = "MISSED"
		}
		fmt.Fprintf(w, "%s\t%.2fx\t%s\t%s\t\n", name, v, req, st)
	}
	rat := func(wl string, n int, m, peer string) (float64, bool) {
		t, ok1 := r.med(wl, "ttldb", n, m)
		p, ok2 := r.med(wl, peer, n, m)
		if !ok1 || !ok2 || p == 0 {
			return 0, false
		}
		return t / p, true
	}
	v, ok := rat("mass100", tn, "expire_all_rate", "buntdb")
	row("mass expiry rate vs buntdb", v, ok, ">= 5x", v >= 5)
	v, ok = rat("mass100", tn, "expire_all_rate", "ttlcache")
	row("mass expiry rate vs ttlcache", v, ok, ">= 5x", v >= 5)
	v, ok = rat("mass100", tn, "expire_all_rate", "floor")
	row("mass expiry rate vs floor", v, ok, ">= 0.6x", v >= 0.6)
	ln := r.cfg.latencyN
	v, ok = rat("latency", ln, "read_p99_expiry", "floor")
	row("read p99 during expiry vs floor", v, ok, "<= 2x", v <= 2)
	if t, okT := r.med("latency", "ttldb", ln, "read_p99_expiry"); okT {
		best, bestSt := math.Inf(1), ""
		for _, st := range []string{"buntdb", "ttlcache", "go-cache", "golang-lru"} {
			if p, ok := r.med("latency", st, ln, "read_p99_expiry"); ok && p < best {
				best, bestSt = p, st
			}
		}
		if bestSt != "" {
			row("best peer's read p99 / ttldb's ("+bestSt+")", best/t, true, ">= 50x lower", best/t >= 50)
		}
	}
	v, ok = rat("mass100", tn, "insert", "buntdb")
	row("insert rate vs buntdb", v, ok, ">= 2x", v >= 2)
	v, ok = rat("mass100", tn, "insert", "ttlcache")
	row("insert rate vs ttlcache", v, ok, ">= 0.5x", v >= 0.5)
	v, ok = rat("mass100", tn, "heap_per_doc", "buntdb")
	row("heap per doc vs buntdb", v, ok, "<= 1.5x (goal 1x)", v <= 1.5)
	v, ok = r.med("compact", "ttldb", tn, "after_compact_vs_fresh10")
	row("heap after 90% expired + Compact vs fresh 10%", v, ok, "<= 1.3x", v <= 1.3)
	tg, fg := growth["ttldb"], growth["floor"]
	row("insert cost growth, ttldb / floor's", tg[0]/fg[0], tg[0] > 0 && fg[0] > 0, "<= 1x", tg[0] <= fg[0])
	row("expiry cost growth, ttldb / floor's", tg[1]/fg[1], tg[1] > 0 && fg[1] > 0, "<= 1x", tg[1] <= fg[1])
	v, ok = rat("lag", r.cfg.lagN, "lag_p99", "ttlcache")
	row("expiry lag p99 vs ttlcache", v, ok, "<= 1x", v <= 1)
	w.Flush()
}

// svgs draws documents remaining over time during the mass expiry: one
// chart for the latency workload (every store, N expiring at once with
// readers running) and one for "all expired" at the largest N.
func (r *reporter) svgs() {
	type line struct {
		store string
		pts   []point
		floor int
		k     int
	}
	draw := func(file, title string, lines []line) {
		if len(lines) == 0 {
			return
		}
		path := filepath.Join(r.cfg.outDir, file)
		if err := os.WriteFile(path, []byte(svgChart(title, lines2chart(lines, func(l line) (string, []point, int, int) { return l.store, l.pts, l.floor, l.k }))), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "writing %s: %v\n", path, err)
			return
		}
		fmt.Printf("wrote %s\n", path)
	}
	var lat []line
	for _, st := range r.stores() {
		if o, ok := medianRep(r.res.outs[spec{"latency", st, r.cfg.latencyN}], "expiry_phase"); ok {
			lat = append(lat, line{st, o.Series, r.cfg.live, r.cfg.latencyN})
		}
	}
	draw("expiry_latency.svg", fmt.Sprintf("Documents remaining after %s reach their threshold at once (workload 3, readers running)", fmtN(r.cfg.latencyN)), lat)
	var mass []line
	bigN := 0
	for _, n := range r.cfg.sizes {
		for _, st := range r.stores() {
			if _, ok := r.res.outs[spec{"mass100", st, n}]; ok && st != "golang-lru" {
				bigN = max(bigN, n)
			}
		}
	}
	for _, st := range r.stores() {
		if o, ok := medianRep(r.res.outs[spec{"mass100", st, bigN}], "expire_all_window"); ok {
			mass = append(mass, line{st, o.Series, 0, bigN})
		}
	}
	draw("expiry_mass.svg", fmt.Sprintf("Documents remaining after all %s reach their threshold (workload 2)", fmtN(bigN)), mass)
}

// medianRep returns the repetition whose metric is the median.
func medianRep(outs []trialOut, metric string) (trialOut, bool) {
	type kv struct {
		v float64
		o trialOut
	}
	var vs []kv
	for _, o := range outs {
		for _, m := range o.Metrics {
			if m.Metric == metric && len(o.Series) > 0 {
				vs = append(vs, kv{m.Value, o})
			}
		}
	}
	if len(vs) == 0 {
		return trialOut{}, false
	}
	slices.SortFunc(vs, func(a, b kv) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	return vs[len(vs)/2].o, true
}

// perSizeTable prints one row per store: the metric's median at each size
// and the ratio ttldb/store.
func (r *reporter) perSizeTable(cfg config, workload, metric string) {
	w := newTab()
	hdr := "store\t"
	for _, n := range cfg.sizes {
		hdr += fmt.Sprintf("N=%s\tttldb/peer\t", fmtN(n))
	}
	fmt.Fprintln(w, hdr)
	for _, st := range r.stores() {
		line := st + "\t"
		for _, n := range cfg.sizes {
			line += r.cell(workload, st, n, metric) + "\t" + r.ratio(workload, n, metric, st) + "\t"
		}
		fmt.Fprintln(w, line)
	}
	w.Flush()
}
