// Command bench runs ttldb side by side with the Go libraries people would
// use instead (buntdb, ttlcache, go-cache, golang-lru/expirable) and a
// floor store, on the workloads of issues 5 and 8, each trial in a fresh
// process, and prints the medians, the ratios ttldb/peer and the targets.
//
//	cd bench && go run .          # full: N = 100k, 1M, 10M where it fits
//	cd bench && go run . -quick   # N = 100k, latency at 1M, host at 100k; about 4 minutes
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	quick     bool
	sizes     []int
	latencyN  int
	live      int
	lagN      int
	spread    time.Duration
	reps      int
	stores    []string
	ttldbRead string
	readEvery time.Duration
	idle      time.Duration
	outDir    string
	hostN     []int
	hostEvery time.Duration
	hostIdle  time.Duration
	workloads []string
	maxMem    float64 // bytes the big trials may use; 0: what the machine has available
	big       int     // sizes >= big run only if the memory estimate fits

	// The durability workloads (durable.go).
	durableN     int           // documents of dinsert, restart, dsnap
	dataDir      string        // where the run's temporary data directories go
	tmp          string        // the run's temporary directory under dataDir
	groupWriters int           // dgroup: concurrent writers
	groupDur     time.Duration // dgroup: how long they commit
	snapWriters  int           // dsnap: writers
	snapPause    time.Duration // dsnap: pause between a writer's calls
	snapPhase    time.Duration // dsnap: each phase's length
	snapCycles   int           // dsnap: cycles of a phase with snapshots, then one without
}

func main() {
	var (
		trial     = flag.String("trial", "", "internal: run one trial workload/store/n and print JSON")
		quick     = flag.Bool("quick", false, "N = 100k, latency workload at 1M, host workload at 100k, lag 10k docs over 1 s, idle phases 0.3 s (host 0.5 s); workload 2 with all N expired only (k/N in the full run); buntdb only in workloads 1, 2 and 4 (about 4 minutes)")
		sizes     = flag.String("sizes", "", "comma-separated N for workloads 1, 2, 4, 5 (default: 100000 quick; 100000,1000000,10000000 full; sizes from 5M on: all-expired trials only, where the memory estimate fits)")
		hostN     = flag.String("host-n", "", "comma-separated N for the host workload (default: 100000 quick; 1000000,10000000 full; 10M where the memory estimate fits)")
		hostEvery = flag.Duration("host-every", 50*time.Microsecond, "host workload: the service's open-loop request interval (one 10 KB response each)")
		hostIdle  = flag.Duration("host-idle", 2*time.Second, "host workload: shortest idle phase (longer where the store's heap makes GC cycles rarer; 0.5 s with -quick)")
		latencyN  = flag.Int("latency-n", 1000000, "documents expiring at once in the latency workload")
		live      = flag.Int("live", 10000, "live documents read during the latency workload")
		lagN      = flag.Int("lag-n", 100000, "documents in the expiry-lag workload")
		spread    = flag.Duration("spread", 0, "lag workload: thresholds spread over this (default 10s; 2s with -quick)")
		reps      = flag.Int("reps", 3, "repetitions per trial (median reported; at least 3)")
		stores    = flag.String("stores", strings.Join(storeNames, ","), "stores to run")
		ttldbRead = flag.String("ttldb-read", "auto", "how ttldb reads by key in the latency workload: auto (FindOne if it is a point lookup, else ExpiresAt), findone, expiresat")
		readEvery = flag.Duration("read-every", 10*time.Microsecond, "latency workload: open-loop read interval")
		idle      = flag.Duration("idle", time.Second, "latency workload: idle read phase before the threshold")
		outDir    = flag.String("out", ".", "directory for results.json and the SVGs")
		cpuprof   = flag.String("cpuprofile", "", "with -trial: write a CPU profile of the timed phase to this file: the expiry (mass, latency), the inserts (dinsert), the commits (dgroup), Open (restart), the snapshots (dsnap)")
		traceOut  = flag.String("trace", "", "with -trial: write an execution trace of the same phase to this file (go tool trace)")
		maxMem    = flag.Float64("max-mem-gib", 0, "memory the big trials may use, GiB (default: MemAvailable, or the cgroup's limit)")
		workloads = flag.String("workloads", "mass,session,latency,compact,lag,host,durable", "which trial kinds to run (host: workload 7; durable: dinsert,dinsert1,dgroup,restart,dsnap, the durability workloads D1-D4)")
		durableN  = flag.Int("durable-n", 0, "documents of the durability workloads dinsert, restart, dsnap (default 1000000; 100000 with -quick)")
		dataDir   = flag.String("dir", os.TempDir(), "durability workloads: the directory their data directories and files are made in (removed after); put it on the disk to measure")
		tmpDir    = flag.String("tmp", "", "internal: with -trial, the directory the trial makes its data directory in")
		groupW    = flag.Int("group-writers", 8, "dgroup: concurrent writers committing one document each under SyncAlways")
		groupDur  = flag.Duration("group-dur", 0, "dgroup: how long the writers commit (default 3s; 1s with -quick)")
		snapW     = flag.Int("snap-writers", 4, "dsnap: writers running while the snapshot runs")
		snapPause = flag.Duration("snap-pause", 200*time.Microsecond, "dsnap: each writer's pause between calls (the runtime rounds short sleeps up to about 1 ms)")
		snapPhase = flag.Duration("snap-phase", 500*time.Millisecond, "dsnap: length of each phase, with snapshots back to back and without")
		snapCyc   = flag.Int("snap-cycles", 0, "dsnap: cycles of a phase with snapshots then one without (default 8; 4 with -quick)")
		durable   = flag.Bool("durable", false, "run the durability workloads alone: the same as -workloads durable")
	)
	flag.Parse()
	if *trial != "" {
		parts := strings.Split(*trial, "/")
		if len(parts) != 3 {
			fatalf("-trial wants workload/store/n")
		}
		n, err := strconv.Atoi(parts[2])
		if err != nil {
			fatalf("-trial: bad n: %v", err)
		}
		cpuProfile = *cpuprof
		traceFile = *traceOut
		sp := *spread
		if sp == 0 {
			sp = 10 * time.Second
		}
		tmp := *tmpDir
		if tmp == "" {
			tmp = *dataDir
		}
		if err := runTrial(trialParams{workload: parts[0], store: parts[1], n: n, live: *live, spread: sp,
			ttldbRead: *ttldbRead, readEvery: *readEvery, idle: *idle, hostEvery: *hostEvery, hostIdle: *hostIdle,
			tmp: tmp, groupDur: orDefault(*groupDur, 3*time.Second), snapWriters: *snapW, snapPause: *snapPause,
			snapPhase: orDefault(*snapPhase, 500*time.Millisecond), snapCycles: cmp.Or(max(*snapCyc, 0), 8)}); err != nil {
			fatalf("trial %s: %v", *trial, err)
		}
		return
	}
	cfg := config{quick: *quick, latencyN: *latencyN, live: *live, lagN: *lagN, spread: *spread, reps: max(*reps, 3),
		stores: strings.Split(*stores, ","), ttldbRead: *ttldbRead, readEvery: *readEvery, idle: *idle, outDir: *outDir,
		hostEvery: *hostEvery, hostIdle: *hostIdle, maxMem: *maxMem * (1 << 30), big: 5_000_000,
		durableN: *durableN, dataDir: *dataDir, groupWriters: max(*groupW, 1), groupDur: *groupDur,
		snapWriters: max(*snapW, 1), snapPause: *snapPause, snapPhase: orDefault(*snapPhase, 500*time.Millisecond), snapCycles: max(*snapCyc, 0)}
	if err := os.MkdirAll(cfg.outDir, 0o755); err != nil {
		fatalf("-out: %v", err)
	}
	if cfg.quick && !flagSet("idle") {
		cfg.idle = 300 * time.Millisecond
	}
	if cfg.quick && !flagSet("host-idle") {
		cfg.hostIdle = 500 * time.Millisecond
	}
	if *reps < 3 {
		fmt.Fprintln(os.Stderr, "-reps below 3 raised to 3")
	}
	switch {
	case *sizes != "":
		cfg.sizes = parseSizes("-sizes", *sizes)
	case cfg.quick:
		cfg.sizes = []int{100_000}
	default:
		cfg.sizes = []int{100_000, 1_000_000, 10_000_000}
	}
	switch {
	case *hostN != "":
		cfg.hostN = parseSizes("-host-n", *hostN)
	case cfg.quick:
		cfg.hostN = []int{100_000}
	default:
		cfg.hostN = []int{1_000_000, 10_000_000}
	}
	if cfg.spread == 0 {
		cfg.spread = 10 * time.Second
		if cfg.quick {
			cfg.spread = time.Second
		}
	}
	if cfg.quick && !flagSet("lag-n") {
		cfg.lagN = cfg.lagN / 10 // 10k over 1 s: the arrival rate (100k over 10 s)
	}
	if cfg.durableN <= 0 {
		cfg.durableN = 1_000_000
		if cfg.quick {
			cfg.durableN = 100_000
		}
	}
	if cfg.groupDur <= 0 {
		cfg.groupDur = 3 * time.Second
		if cfg.quick {
			cfg.groupDur = time.Second
		}
	}
	if cfg.snapCycles == 0 {
		cfg.snapCycles = 8
		if cfg.quick {
			cfg.snapCycles = 4
		}
	}
	if *durable {
		*workloads = "durable"
	}
	for _, w := range strings.Split(*workloads, ",") {
		if w == "durable" {
			cfg.workloads = append(cfg.workloads, durableWorkloads...)
		} else {
			cfg.workloads = append(cfg.workloads, w)
		}
	}
	if slices.ContainsFunc(cfg.workloads, func(w string) bool { return slices.Contains(durableWorkloads, w) }) {
		tmp, err := os.MkdirTemp(cfg.dataDir, "ttldb-bench-*")
		if err != nil {
			fatalf("-dir: %v", err)
		}
		cfg.tmp = tmp
		defer os.RemoveAll(tmp)
		// An interrupted run removes its data too (a trial's process
		// gets the same signal and stops).
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		go func() {
			<-sig
			time.Sleep(100 * time.Millisecond)
			_ = os.RemoveAll(tmp)
			os.Exit(130)
		}()
	}
	run(cfg, cfg.workloads)
}

// orDefault returns d, or def if d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func parseSizes(flagName, list string) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fatalf("%s: bad %q", flagName, s)
		}
		out = append(out, n)
	}
	return out
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
	os.Exit(1)
}

// spec is one trial to run reps times.
type spec struct {
	workload, store string
	n               int
}

func (s spec) String() string { return fmt.Sprintf("%s/%s/%d", s.workload, s.store, s.n) }

// run holds every trial's outputs, keyed by spec.
type runResult struct {
	outs map[spec][]trialOut
	errs map[spec][]string
}

func run(cfg config, kinds []string) {
	has := func(k string) bool { return slices.Contains(kinds, k) }
	hasStore := func(s string) bool { return slices.Contains(cfg.stores, s) }
	var small, big []spec
	for _, n := range cfg.sizes {
		if !has("mass") {
			break
		}
		for _, st := range storeNames {
			if !hasStore(st) {
				continue
			}
			add := func(w string) {
				sp := spec{w, st, n}
				if n >= cfg.big {
					big = append(big, sp)
				} else {
					small = append(small, sp)
				}
			}
			add("mass100")
			if cfg.quick || n >= cfg.big {
				continue // the k/N trials (10%, 1%): full run only, and only up to 1M
			}
			if st != "golang-lru" {
				add("mass10")
				add("mass1")
			}
		}
	}
	if has(sessionWorkload) {
		for _, n := range cfg.sizes {
			for _, st := range storeNames {
				if hasStore(st) && n < cfg.big {
					small = append(small, spec{sessionWorkload, st, n})
				}
			}
		}
	}
	if has("latency") {
		for _, st := range storeNames {
			if cfg.quick && st == "buntdb" {
				fmt.Fprintln(os.Stderr, "quick: buntdb left out of the latency workload (its JSON index makes 1M inserts and their removal take over a minute per trial); the full run has it")
				continue
			}
			if hasStore(st) {
				small = append(small, spec{"latency", st, cfg.latencyN}, spec{slowReaderWorkload, st, cfg.latencyN})
			}
		}
	}
	if has("host") {
		small = append(small, spec{"host", hostNone, 0})
		for _, n := range cfg.hostN {
			for _, st := range storeNames {
				if !hasStore(st) {
					continue
				}
				if cfg.quick && st == "buntdb" {
					continue // as in the latency workload
				}
				if n >= cfg.big {
					big = append(big, spec{"host", st, n})
				} else {
					small = append(small, spec{"host", st, n})
				}
			}
		}
	}
	if has("compact") && hasStore("ttldb") {
		for _, n := range cfg.sizes {
			if n < cfg.big {
				small = append(small, spec{"compact", "ttldb", n})
			}
		}
	}
	if has("lag") {
		for _, st := range []string{"ttldb", "ttlcache", "floor"} {
			if hasStore(st) {
				small = append(small, spec{"lag", st, cfg.lagN})
			}
		}
	}
	small = append(small, durableSpecs(cfg, has, hasStore)...)
	res := &runResult{outs: map[spec][]trialOut{}, errs: map[spec][]string{}}
	start := time.Now()
	runPhase(cfg, res, small, start)
	if len(big) > 0 {
		var fit []spec
		for _, sp := range big {
			if ok, why := fits(res, sp, cfg.maxMem); ok {
				fit = append(fit, sp)
			} else {
				fmt.Fprintf(os.Stderr, "skipping %s: %s\n", sp, why)
				res.errs[sp] = append(res.errs[sp], "skipped: "+why)
			}
		}
		runPhase(cfg, res, fit, start)
	}
	fmt.Fprintf(os.Stderr, "all trials done in %s\n", time.Since(start).Round(time.Second))
	report(cfg, res)
}

// fits estimates, before the trial starts, whether a big trial fits in
// memory: the heap per document measured (workload 4) at the largest
// smaller size, times N, times 3 (the GC's headroom at GOGC=100, and the
// trial's own buffers), against the memory available now.
func fits(res *runResult, sp spec, maxMem float64) (bool, string) {
	best, bestN := 0.0, 0
	for k, outs := range res.outs {
		if k.store != sp.store || k.workload != "mass100" || k.n >= sp.n || k.n < bestN {
			continue
		}
		if v, ok := medianOf(outs, "heap_per_doc"); ok {
			best, bestN = v, k.n
		}
	}
	if bestN == 0 {
		return false, "no smaller all-expired (mass) run to estimate its memory from"
	}
	need := best * float64(sp.n) * 3
	avail, total := memAvailable()
	if maxMem > 0 {
		avail, total = min(avail, maxMem), min(total, maxMem)
	}
	if need > avail {
		return false, fmt.Sprintf("does not fit this machine's memory: needs about %.1f GiB (%.0f B/doc at %s x %s x 3), %.1f GiB available of %.1f GiB",
			need/(1<<30), best, fmtN(bestN), fmtN(sp.n), avail/(1<<30), total/(1<<30))
	}
	return true, ""
}

// memAvailable returns the memory available to a new process and the
// machine's (or the cgroup's) total, in bytes.
func memAvailable() (avail, total float64) {
	avail, total = 8<<30, 8<<30
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "MemAvailable:":
				avail = kb * 1024
			case "MemTotal:":
				total = kb * 1024
			}
		}
	}
	// A cgroup v2 limit, where one is set, bounds both.
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if lim, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil {
			used := 0.0
			if c, err := os.ReadFile("/sys/fs/cgroup/memory.current"); err == nil {
				used, _ = strconv.ParseFloat(strings.TrimSpace(string(c)), 64)
			}
			avail, total = min(avail, lim-used), min(total, lim)
		}
	}
	return avail, total
}

// runPhase runs every spec reps times, repetition-major, so that slow drift
// of the machine spreads over all stores.
func runPhase(cfg config, res *runResult, specs []spec, start time.Time) {
	total := len(specs) * cfg.reps
	done := 0
	for rep := 1; rep <= cfg.reps; rep++ {
		for _, sp := range specs {
			done++
			fmt.Fprintf(os.Stderr, "[%3d/%d %6s] %-28s rep %d/%d ", done, total, time.Since(start).Round(time.Second), sp, rep, cfg.reps)
			t := time.Now()
			out, err := runOne(cfg, sp)
			if err != nil {
				fmt.Fprintf(os.Stderr, "FAILED: %v\n", err)
				res.errs[sp] = append(res.errs[sp], err.Error())
				continue
			}
			fmt.Fprintf(os.Stderr, "%5.1fs  %s\n", time.Since(t).Seconds(), headline(sp, out))
			res.outs[sp] = append(res.outs[sp], out)
		}
	}
}

func headline(sp spec, out trialOut) string {
	var parts []string
	for _, m := range out.Metrics {
		switch m.Metric {
		case "insert", "expire_all_rate", "expire_10pct_rate", "expire_1pct_rate", "heap_objects_per_doc", "read_p99_expiry", "read_max_expiry",
			"after_compact_vs_fresh10", "lag_p99", "request_p99_idle", "request_p99_expiry",
			"dinsert", "group_commits_per_s", "commits_per_fsync", "fsync_p50", "open", "disk_vs_encoding", "write_p99_nosnap", "write_p99_snap", "snapshot_time":
			parts = append(parts, fmt.Sprintf("%s=%s%s", m.Metric, fmtNum(m.Value), m.Unit))
		}
	}
	return strings.Join(parts, " ")
}

// runOne re-executes this binary for one trial in a fresh process.
func runOne(cfg config, sp spec) (trialOut, error) {
	args := []string{"-trial", sp.String(), "-live", strconv.Itoa(cfg.live), "-spread", cfg.spread.String(),
		"-ttldb-read", cfg.ttldbRead, "-read-every", cfg.readEvery.String(), "-idle", cfg.idle.String(),
		"-host-every", cfg.hostEvery.String(), "-host-idle", cfg.hostIdle.String(),
		"-tmp", cfg.tmp, "-group-dur", cfg.groupDur.String(), "-snap-writers", strconv.Itoa(cfg.snapWriters),
		"-snap-pause", cfg.snapPause.String(), "-snap-phase", cfg.snapPhase.String(), "-snap-cycles", strconv.Itoa(cfg.snapCycles)}

	cmd := exec.Command(os.Args[0], args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stderr.Len() > 0 {
		sc := bufio.NewScanner(&stderr)
		for sc.Scan() {
			fmt.Fprintf(os.Stderr, "\n    | %s", sc.Text())
		}
		fmt.Fprint(os.Stderr, "\n    ")
	}
	if err != nil {
		return trialOut{}, fmt.Errorf("%v", err)
	}
	var out trialOut
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return trialOut{}, fmt.Errorf("bad trial output: %v", err)
	}
	return out, nil
}

func medianOf(outs []trialOut, metric string) (float64, bool) {
	var vs []float64
	for _, o := range outs {
		for _, m := range o.Metrics {
			if m.Metric == metric {
				vs = append(vs, m.Value)
			}
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

// result is one line of results.json.
type result struct {
	Workload string    `json:"workload"`
	Store    string    `json:"store"`
	N        int       `json:"n"`
	Metric   string    `json:"metric"`
	Unit     string    `json:"unit"`
	Median   float64   `json:"median"`
	Runs     []float64 `json:"runs"`
}

// workloadOf names the workload a metric belongs to.
func workloadOf(trialWorkload, metric string) string {
	switch trialWorkload {
	case "dinsert", "dgroup":
		return "D1-durable-insert"
	case "dinsert1":
		return "D1-durable-insert-one"
	case "restart":
		if strings.HasPrefix(metric, "disk_") || strings.HasSuffix(metric, "_bytes_per_doc") {
			return "D4-disk-bytes"
		}
		return "D2-restart"
	case "dsnap":
		return "D3-snapshot-writers"
	}
	if trialWorkload == sessionWorkload {
		return "S-session"
	}
	switch {
	case strings.HasPrefix(metric, "insert"):
		return "1-insert"
	case strings.HasPrefix(metric, "expire_"):
		return "2-mass-expiry"
	case trialWorkload == "latency", trialWorkload == slowReaderWorkload:
		return "3-read-latency"
	case strings.HasPrefix(metric, "heap"), strings.HasPrefix(metric, "gc_"), trialWorkload == "compact":
		return "4-memory"
	case trialWorkload == "lag":
		return "6-expiry-lag"
	case trialWorkload == "host":
		return "7-host-impact"
	}
	return trialWorkload
}

func writeResults(cfg config, res *runResult, extra []result) {
	var out []result
	keys := make([]spec, 0, len(res.outs))
	for k := range res.outs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b spec) int {
		return strings.Compare(fmt.Sprintf("%s/%s/%012d", a.workload, a.store, a.n), fmt.Sprintf("%s/%s/%012d", b.workload, b.store, b.n))
	})
	for _, k := range keys {
		outs := res.outs[k]
		seen := map[string]bool{}
		for _, o := range outs {
			for _, m := range o.Metrics {
				if seen[m.Metric] {
					continue
				}
				seen[m.Metric] = true
				med, _ := medianOf(outs, m.Metric)
				var runs []float64
				for _, o2 := range outs {
					for _, m2 := range o2.Metrics {
						if m2.Metric == m.Metric {
							runs = append(runs, m2.Value)
						}
					}
				}
				out = append(out, result{workloadOf(k.workload, m.Metric), k.store, k.n, m.Metric, m.Unit, med, runs})
			}
		}
	}
	out = append(out, extra...)
	b, _ := json.MarshalIndent(out, "", "  ")
	path := filepath.Join(cfg.outDir, "results.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "writing %s: %v\n", path, err)
		return
	}
	fmt.Printf("wrote %s (%d results)\n", path, len(out))
}
