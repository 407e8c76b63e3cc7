package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
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
		if strings.HasPrefix(errs[0], "skipped") {
			return "skipped"
		}
		return "fail"
	}
	return "-"
}

// ran reports whether any trial of the workload was run or attempted.
func (r *reporter) ran(workload string) bool {
	for sp := range r.res.outs {
		if sp.workload == workload {
			return true
		}
	}
	for sp := range r.res.errs {
		if sp.workload == workload {
			return true
		}
	}
	return false
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
	var notes []string
	for sp, errs := range res.errs {
		notes = append(notes, fmt.Sprintf("%s: %s", sp, strings.Join(slices.Compact(errs), "; ")))
	}
	for _, outs := range res.outs {
		for _, o := range outs {
			notes = append(notes, o.Notes...)
		}
	}
	slices.Sort(notes)
	for _, n := range slices.Compact(notes) {
		fmt.Println("note:", n)
	}

	has := func(w string) bool { return slices.Contains(cfg.workloads, w) }
	var extra []result
	if has("mass") {
		r.insertTable()
		r.massTables()
	}
	if has(sessionWorkload) {
		r.sessionTable()
	}
	if has("latency") {
		r.latencyTable()
	}
	if has("mass") || has("compact") {
		r.memoryTables()
	}
	if has("mass") {
		extra = r.scalingTable()
	}
	if has("lag") {
		r.lagTable()
	}
	if has("host") {
		r.hostTable()
	}
	if r.ranAny("mass", "latency", "compact", "lag", "host") {
		r.targets()
	}
	if r.ranAny("latency", "lag", "host") {
		r.drainTargets()
	}
	if r.ranAny("mass", sessionWorkload) {
		r.costTargets()
	}
	if r.ranAny(durableWorkloads...) {
		r.durableTables()
		r.durableTargets()
	}
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

// insertTable prints workload 1.
func (r *reporter) insertTable() {
	fmt.Println("\n== Workload 1: insert throughput (docs/s; ttldb InsertMany and buntdb transactions of 1000, the caches one Set per doc, the floor 1000 per lock hold)")
	r.perSizeTable(r.cfg, "mass100", "insert")
}

// massTables prints workload 2 (one table per k/N).
func (r *reporter) massTables() {
	for _, v := range []struct{ wl, pre, label string }{
		{"mass100", "expire_all", "all N expired"},
		{"mass10", "expire_10pct", "k/N = 10% expired"},
		{"mass1", "expire_1pct", "k/N = 1% expired"},
	} {
		if v.wl != "mass100" && !r.ran(v.wl) {
			continue // -quick: all expired only
		}
		fmt.Printf("\n== Workload 2: mass expiry, %s: removal rate (expired docs/s over the removal window), window, and time from the threshold until all were gone\n", v.label)
		w := newTab()
		hdr := "store\t"
		for _, n := range r.cfg.sizes {
			hdr += fmt.Sprintf("N=%s rate\tttldb/peer\twindow ms\tclear ms\t", fmtN(n))
		}
		fmt.Fprintln(w, hdr)
		for _, st := range r.stores() {
			if st == "golang-lru" {
				continue
			}
			line := st + "\t"
			for _, n := range r.cfg.sizes {
				line += r.cell(v.wl, st, n, v.pre+"_rate") + "\t" + r.ratio(v.wl, n, v.pre+"_rate", st) + "\t" +
					r.cell(v.wl, st, n, v.pre+"_window") + "\t" + r.cell(v.wl, st, n, v.pre+"_clear_after_threshold") + "\t"
			}
			fmt.Fprintln(w, line)
		}
		w.Flush()
	}
	fmt.Println("(golang-lru: one TTL per cache, removal paced by its 100-bucket schedule: not in workload 2; see workload 3)")
	fmt.Printf("(k/N = 10%% and 1%%: in the full run only, at N < %s)\n", fmtN(r.cfg.big))
}

// latencyTable prints workload 3, at each reader rate.
func (r *reporter) latencyTable() {
	r.latencyTableOf("latency", r.cfg.readEvery)
	r.latencyTableOf(slowReaderWorkload, slowReadEvery)
}

func (r *reporter) latencyTableOf(workload string, every time.Duration) {
	ln := r.cfg.latencyN
	w := newTab()
	fmt.Printf("\n== Workload 3: read latency by key, open loop every %s, while %s documents expire at once (%d live docs read); µs, corrected for coordinated omission\n", every, fmtN(ln), r.cfg.live)
	fmt.Fprintln(w, "store\tp50\tp99\tp99.9\tmax\t>1ms\treads\t|idle p50\tidle p99\tidle p99.9\tidle max\tidle >1ms\t|expiry ms\tttldb/peer p99\tttldb/peer max\t")
	for _, st := range r.stores() {
		c := func(m string) string { return r.cell(workload, st, ln, m) }
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t|%s\t%s\t%s\t%s\t%s\t|%s\t%s\t%s\t\n", st,
			c("read_p50_expiry"), c("read_p99_expiry"), c("read_p999_expiry"), c("read_max_expiry"), c("reads_over_1ms_expiry"), c("reads_expiry"),
			c("read_p50_idle"), c("read_p99_idle"), c("read_p999_idle"), c("read_max_idle"), c("reads_over_1ms_idle"),
			c("expiry_phase"), r.ratio(workload, ln, "read_p99_expiry", st), r.ratio(workload, ln, "read_max_expiry", st))
	}
	w.Flush()
	if f, ok := r.med(workload, "floor", ln, "read_p99_idle"); ok && f > busyP99 {
		fmt.Printf("   WARNING: the floor's idle read p99 was %s µs: the machine was busy, and these figures are not about the stores\n", fmtNum(f))
	}
}

// memoryTables prints workload 4: heap and objects per document, GC cycles, and ttldb's heap around Compact.
func (r *reporter) memoryTables() {
	fmt.Println("\n== Workload 4: memory: live heap bytes per stored document after GC")
	if slices.Contains(r.cfg.workloads, "mass") {
		r.perSizeTable(r.cfg, "mass100", "heap_per_doc")
		fmt.Println("\n   live heap objects per stored document after GC (runtime/metrics /gc/heap/objects:objects, less the empty process's, / N),")
		fmt.Println("   and GC cycles completed (/gc/cycles/total:gc-cycles) during the inserts and during the removal of all N")
		r.perSizeColumns(r.cfg, "mass100", column{"heap_objects_per_doc", " objects/doc", false},
			column{"gc_cycles_insert", " GCs insert", false}, column{"gc_cycles_expiry", " GCs expiry", false})
	}
	if !slices.Contains(r.cfg.workloads, "compact") {
		return
	}
	fmt.Println("\n   ttldb: heap (MiB) with N docs, after expiring 90% (RunTTLPass), after Compact, and a fresh store with the remaining 10%")
	w := newTab()
	fmt.Fprintln(w, "N\tfull\tafter expire 90%\tafter Compact\tfresh 10%\texpired/fresh\tcompacted/fresh\t")
	for _, n := range r.cfg.sizes {
		c := func(m string) string { return r.cell("compact", "ttldb", n, m) }
		if _, ok := r.med("compact", "ttldb", n, "heap_full"); !ok {
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", fmtN(n), c("heap_full"), c("heap_after_expire90"), c("heap_after_compact"),
			c("heap_fresh10"), c("after_expire90_vs_fresh10"), c("after_compact_vs_fresh10"))
	}
	w.Flush()
}

// scalingTable prints workload 5 and returns its growth figures for results.json.
func (r *reporter) scalingTable() []result {
	var extra []result
	fmt.Println("\n== Workload 5: scaling: per-document cost (ns/doc) of insert and of expiry (all expired), and its growth from the smallest to the largest N")
	w := newTab()
	hdr := "store\t"
	for _, n := range r.cfg.sizes {
		hdr += fmt.Sprintf("insert %s\t", fmtN(n))
	}
	hdr += "growth\t|"
	for _, n := range r.cfg.sizes {
		hdr += fmt.Sprintf("expiry %s\t", fmtN(n))
	}
	hdr += "growth\t"
	fmt.Fprintln(w, hdr)
	for _, st := range r.stores() {
		line := st + "\t"
		var g [2]float64
		for i, m := range []string{"insert_cost", "expire_all_cost"} {
			var first, last float64
			var lastN, firstN int
			for _, n := range r.cfg.sizes {
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
		fmt.Fprintln(w, line)
	}
	w.Flush()
	return extra
}

// lagTable prints workload 6.
func (r *reporter) lagTable() {
	fmt.Printf("\n== Workload 6: expiry lag with the deadline wake: ms from each document's threshold to its removal (%d docs spread over %s)\n", r.cfg.lagN, r.cfg.spread)
	w := newTab()
	fmt.Fprintln(w, "store\tp50\tp99\tmax\tttldb/peer p99\t")
	for _, st := range []string{"ttldb", "ttlcache", "floor"} {
		if !slices.Contains(r.cfg.stores, st) {
			continue
		}
		c := func(m string) string { return r.cell("lag", st, r.cfg.lagN, m) }
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t\n", st, c("lag_p50"), c("lag_p99"), c("lag_max"), r.ratio("lag", r.cfg.lagN, "lag_p99", st))
	}
	w.Flush()
}

// hostTable prints workload 7: the service's request latency with each
// store in its process, idle and during the mass expiry, against "none".
func (r *reporter) hostTable() {
	fmt.Printf("\n== Workload 7: host impact: a service goroutine in the store's process builds a %d KB response every %s (open loop); its request latency in µs, corrected for coordinated omission,\n", hostRespBytes>>10, r.cfg.hostEvery)
	fmt.Println("   while the store holds N documents (idle) and while all N expire at once; none = the same service in a process with no store; GCs = GC cycles in the phase")
	for _, n := range r.cfg.hostN {
		fmt.Printf("\n   N=%s\n", fmtN(n))
		w := newTab()
		fmt.Fprintln(w, "store\tidle p50\tp99\tp99.9\tmax\t>1ms\tGCs\tphase ms\t|expiry p50\tp99\tp99.9\tmax\t>1ms\tGCs\tphase ms\t|p99/none idle\tp99/none expiry\t")
		for _, st := range append([]string{hostNone}, r.stores()...) {
			sn := n
			if st == hostNone {
				sn = 0
			}
			c := func(m string) string { return r.cell("host", st, sn, m) }
			vsNone := func(ph string) string {
				if st == hostNone {
					return ""
				}
				t, ok1 := r.med("host", st, sn, "request_p99_"+ph)
				b, ok2 := r.med("host", hostNone, 0, "request_p99_"+ph)
				if !ok1 || !ok2 || b == 0 {
					return "-"
				}
				return fmt.Sprintf("%.2fx", t/b)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t|%s\t%s\t%s\t%s\t%s\t%s\t%s\t|%s\t%s\t\n", st,
				c("request_p50_idle"), c("request_p99_idle"), c("request_p999_idle"), c("request_max_idle"), c("requests_over_1ms_idle"), c("host_gc_cycles_idle"), c("host_idle_phase"),
				c("request_p50_expiry"), c("request_p99_expiry"), c("request_p999_expiry"), c("request_max_expiry"), c("requests_over_1ms_expiry"), c("host_gc_cycles_expiry"), c("host_expiry_phase"),
				vsNone("idle"), vsNone("expiry"))
		}
		w.Flush()
	}
	if b, ok := r.med("host", hostNone, 0, "request_p99_idle"); ok && b > busyP99 {
		fmt.Printf("   WARNING: the service alone (none) had an idle p99 of %s µs: the machine was busy, and these figures are not about the stores\n", fmtNum(b))
	}
}

// busyP99 (µs): an idle p99 above this, for the floor's reader or for the
// service with no store, means something else had the processors.
const busyP99 = 1000

// peers are the stores ttldb is compared with (the floor is a yardstick,
// not a peer).
var peers = []string{"buntdb", "ttlcache", "go-cache", "golang-lru"}

// hostTargetN is the host workload's size the targets are stated at (1M),
// or the nearest run.
func (r *reporter) hostTargetN() int {
	best := 0
	for _, n := range r.cfg.hostN {
		if n <= 1_000_000 && n > best {
			best = n
		}
	}
	if best == 0 && len(r.cfg.hostN) > 0 {
		best = r.cfg.hostN[0]
	}
	return best
}

// bestPeer returns the peer with the lowest median of metric, and it.
func (r *reporter) bestPeer(workload string, n int, metric string) (string, float64, bool) {
	best, bestSt := math.Inf(1), ""
	for _, st := range peers {
		if v, ok := r.med(workload, st, n, metric); ok && v < best {
			best, bestSt = v, st
		}
	}
	return bestSt, best, bestSt != ""
}

// targets prints issue 8's targets, each MET, MISSED or not measured.
func (r *reporter) targets() {
	tn, hn, ln := r.targetN(), r.hostTargetN(), r.cfg.latencyN
	fmt.Printf("\n== Targets (issue 8; medians of this run's repetitions; N = 1M unless said: workloads 1, 2, 4 at N=%s, latency at %s, host at %s)\n",
		fmtN(tn), fmtN(ln), fmtN(hn))
	w := tabwriter.NewWriter(os.Stdout, 2, 0, 2, ' ', 0)
	fmt.Fprintln(w, "target\tmeasured\trequired\tstatus")
	type cmp int
	const (
		le cmp = iota // measured <= limit
		ge            // measured >= limit
		lt            // measured < limit
	)
	row := func(name string, v float64, ok bool, unit string, c cmp, limit float64, why string) {
		req := map[cmp]string{le: "<= ", ge: ">= ", lt: "< "}[c] + fmt.Sprintf("%g%s", limit, unit)
		if !ok {
			if why == "" {
				why = "not run"
			}
			fmt.Fprintf(w, "%s\t-\t%s\tnot measured (%s)\n", name, req, why)
			return
		}
		pass := map[cmp]bool{le: v <= limit, ge: v >= limit, lt: v < limit}[c]
		st := "MET"
		if !pass {
			st = "MISSED"
		}
		fmt.Fprintf(w, "%s\t%.3g%s\t%s\t%s\n", name, v, unit, req, st)
	}
	rat := func(wl string, n int, m, peer string) (float64, bool) {
		t, ok1 := r.med(wl, "ttldb", n, m)
		p, ok2 := r.med(wl, peer, n, m)
		if !ok1 || !ok2 || p == 0 {
			return 0, false
		}
		return t / p, true
	}
	// vsBest returns ttldb's metric over the best peer's, and " (peer)".
	vsBest := func(wl string, n int, m string) (float64, string, bool) {
		t, ok := r.med(wl, "ttldb", n, m)
		st, p, okP := r.bestPeer(wl, n, m)
		if !ok || !okP || p == 0 {
			return 0, "", false
		}
		return t / p, " (" + st + ")", true
	}

	// Read latency by _id (workload 3).
	v, st, ok := vsBest("latency", ln, "read_p99_expiry")
	row("read p99 during expiry vs best peer's"+st, v, ok, "x", le, 0.1, "")
	v, ok = rat("latency", ln, "read_p99_expiry", "floor")
	row("read p99 during expiry vs floor's", v, ok, "x", le, 2, "")
	v, st, ok = vsBest("latency", ln, "read_p99_idle")
	row("idle read p99 vs best peer's idle p99"+st, v, ok, "x", le, 5, "")

	// Host impact (workload 7).
	for _, ph := range []string{"idle", "expiry"} {
		m := "request_p99_" + ph
		t, okT := r.med("host", "ttldb", hn, m)
		base, okB := r.med("host", hostNone, 0, m)
		label := map[string]string{"idle": "idle", "expiry": "during expiry"}[ph]
		row("host service p99 "+label+" vs no store", t/base, okT && okB && base > 0, "x", le, 1.5, "")
	}
	for _, ph := range []string{"idle", "expiry"} {
		v, st, ok := vsBest("host", hn, "request_p99_"+ph)
		label := map[string]string{"idle": "idle", "expiry": "during expiry"}[ph]
		row("host service p99 "+label+" vs best peer's"+st, v, ok, "x", lt, 1, "")
	}

	// Mass expiry (workloads 2 and 5).
	v, ok = rat("mass100", tn, "expire_all_rate", "floor")
	row("mass expiry rate vs floor", v, ok, "x", ge, 0.5, "")
	v, ok = rat("mass100", tn, "expire_all_rate", "ttlcache")
	row("mass expiry rate vs ttlcache", v, ok, "x", ge, 4, "")
	g, rng, ok, why := r.growthVsFloor("expire_all_cost")
	row("per-doc expiry cost growth "+rng+", ttldb's / floor's", g, ok, "x", le, 1, why)

	// Insert (workload 1).
	v, ok = rat("mass100", tn, "insert", "ttlcache")
	row("insert rate vs ttlcache", v, ok, "x", ge, 1, "")
	v, ok = rat("mass100", tn, "insert", "floor")
	row("insert rate vs floor", v, ok, "x", ge, 0.5, "")

	// Memory (workload 4).
	v, ok = rat("mass100", tn, "heap_per_doc", "buntdb")
	row("heap per doc vs buntdb's", v, ok, "x", le, 1, "")
	v, ok = rat("mass100", tn, "heap_per_doc", "floor")
	row("heap per doc vs floor's (goal)", v, ok, "x", le, 1.2, "")
	v, ok = r.med("mass100", "ttldb", tn, "heap_objects_per_doc")
	row("heap objects per doc", v, ok, "", le, 0.2, "")
	v, ok = r.med("compact", "ttldb", tn, "after_compact_vs_fresh10")
	row("heap after 90% expired + Compact vs fresh 10%", v, ok, "x", le, 1.3, "")
	v, ok = r.med("mass100", "ttldb", tn, "accounting_error")
	row("memory budget's accounted bytes vs heap, |ratio-1|", v, ok, "", le, 0.1, "")

	// Expiry lag (workload 6).
	v, ok = rat("lag", r.cfg.lagN, "lag_p99", "ttlcache")
	row("expiry lag p99 vs ttlcache's", v, ok, "x", le, 1, "")
	w.Flush()
}

// growthVsFloor returns ttldb's growth of a per-document cost from 100k to
// 10M divided by the floor's, over the sizes both were measured at; ok is
// false unless that range is 100k -> 10M.
func (r *reporter) growthVsFloor(metric string) (g float64, rng string, ok bool, why string) {
	var both []int
	for _, n := range r.cfg.sizes {
		_, ok1 := r.med("mass100", "ttldb", n, metric)
		_, ok2 := r.med("mass100", "floor", n, metric)
		if ok1 && ok2 {
			both = append(both, n)
		}
	}
	rng = "100k→10M"
	if len(both) < 2 {
		return 0, rng, false, "needs two sizes"
	}
	lo, hi := both[0], both[len(both)-1]
	t0, _ := r.med("mass100", "ttldb", lo, metric)
	t1, _ := r.med("mass100", "ttldb", hi, metric)
	f0, _ := r.med("mass100", "floor", lo, metric)
	f1, _ := r.med("mass100", "floor", hi, metric)
	g = (t1 / t0) / (f1 / f0)
	if lo > 100_000 || hi < 10_000_000 {
		return g, rng, false, fmt.Sprintf("%.3gx over %s→%s only", g, fmtN(lo), fmtN(hi))
	}
	return g, rng, true, ""
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
	r.perSizeColumns(cfg, workload, column{metric, "", true})
}

// column is one metric in a per-size table; ratio adds ttldb/peer after it.
type column struct {
	metric, label string
	ratio         bool
}

// perSizeColumns prints one row per store and, for each size, the columns'
// medians (and ratios ttldb/store where asked).
func (r *reporter) perSizeColumns(cfg config, workload string, cols ...column) {
	w := newTab()
	hdr := "store\t"
	for i, n := range cfg.sizes {
		if i > 0 && len(cols) > 1 {
			hdr += "|"
		}
		for _, c := range cols {
			hdr += fmt.Sprintf("N=%s%s\t", fmtN(n), c.label)
			if c.ratio {
				hdr += "ttldb/peer\t"
			}
		}
	}
	fmt.Fprintln(w, hdr)
	for _, st := range r.stores() {
		line := st + "\t"
		for i, n := range cfg.sizes {
			if i > 0 && len(cols) > 1 {
				line += "|"
			}
			for _, c := range cols {
				line += r.cell(workload, st, n, c.metric) + "\t"
				if c.ratio {
					line += r.ratio(workload, n, c.metric, st) + "\t"
				}
			}
		}
		fmt.Fprintln(w, line)
	}
	w.Flush()
}
