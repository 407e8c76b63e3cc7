package main

import (
	"fmt"
	"os"
	"text/tabwriter"
)

// sessionTable prints the session workload: workloads 1, 2 and 4 with
// session documents, every store side by side.
func (r *reporter) sessionTable() {
	fmt.Printf("\n== Session documents ({_id, user, %d-byte payload, lastModifiedDate} with a TTL): insert, heap and objects per document, removal of all N\n", sessionPayload)
	for _, n := range r.cfg.sizes {
		if n >= r.cfg.big {
			continue
		}
		fmt.Printf("   N=%s\n", fmtN(n))
		w := newTab()
		fmt.Fprintln(w, "store\tinsert docs/s\theap B/doc\tobjects/doc\texpire all docs/s\tttldb/peer heap\t")
		for _, st := range r.stores() {
			c := func(m string) string { return r.cell(sessionWorkload, st, n, m) }
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t\n", st, c("insert"), c("heap_per_doc"), c("heap_objects_per_doc"),
				c("expire_all_rate"), r.ratio(sessionWorkload, n, "heap_per_doc", st))
		}
		w.Flush()
	}
	fmt.Println("   (Redis 7.0 keeps the same session as a string key in 385 bytes, measured apart on a machine of this kind; golang-lru: insert and heap only)")
}

// costTargets prints issue 25's memory targets (its durability targets are
// in issue 13's table), each MET, MISSED or not measured.
func (r *reporter) costTargets() {
	n := r.targetN()
	fmt.Printf("\n== Targets (issue 25, bytes per document; medians of this run's repetitions; N=%s)\n", fmtN(n))
	w := tabwriter.NewWriter(os.Stdout, 2, 0, 2, ' ', 0)
	fmt.Fprintln(w, "target\tmeasured\trequired\tstatus")
	row := func(name string, v float64, ok bool, unit string, limit float64) {
		if !ok {
			fmt.Fprintf(w, "%s\t-\t<= %g%s\tnot measured (not run)\n", name, limit, unit)
			return
		}
		st := "MET"
		if v > limit {
			st = "MISSED"
		}
		fmt.Fprintf(w, "%s\t%.4g%s\t<= %g%s\t%s\n", name, v, unit, limit, unit, st)
	}
	v, ok := r.med(sessionWorkload, "ttldb", n, "heap_per_doc")
	row("session document, heap bytes (Redis 7.0: 385)", v, ok, " B", 360)
	v, ok = r.med(sessionWorkload, "ttldb", n, "heap_objects_per_doc")
	row("session document, heap objects", v, ok, "", 0.05)
	v, ok = r.med("mass100", "ttldb", n, "heap_per_doc")
	row("the bench's own document, heap bytes (no worse than before)", v, ok, " B", 214)
	w.Flush()
}
