package main

// The durability suite (-durable): ttldb with a data directory under each
// sync policy side by side with buntdb's append-only file, which has the
// same three choices. Each trial runs in a fresh process
// (-dtrial name), in a fresh directory under -durable-dir, prints JSON,
// and the parent keeps the median of -reps repetitions.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/buntdb"
	"github.com/ttldb/ttldb"
)

// durableConfig configures the suite.
type durableConfig struct {
	n       int           // documents for insert, open, snapshot, disk
	nAlways int           // documents for the SyncAlways trials (each waits for an fsync)
	writers int           // SyncAlways concurrent writers
	rate    time.Duration // snapshot trial: each writer's open-loop interval
	reps    int
	dir     string // parent of the trials' directories
}

// durableTrials lists the trials in report order.
var durableTrials = []string{
	"insert1/ttldb-memory", "insert1/ttldb-SyncNever", "insert1/ttldb-SyncEverySecond",
	"insert1/buntdb-Never", "insert1/buntdb-EverySecond",
	"insert1000/ttldb-memory", "insert1000/ttldb-SyncNever", "insert1000/ttldb-SyncEverySecond",
	"insert1000/buntdb-Never", "insert1000/buntdb-EverySecond",
	"always/ttldb", "always/buntdb", "fsync/raw",
	"open/ttldb", "open/buntdb",
	"snapshot/ttldb",
	"disk/ttldb", "disk/buntdb",
}

// runDurable runs every trial -reps times and prints the table.
func runDurable(cfg durableConfig) {
	if cfg.dir == "" {
		d, err := os.MkdirTemp("", "ttldb-durable-bench-")
		if err != nil {
			fatalf("%v", err)
		}
		defer os.RemoveAll(d)
		cfg.dir = d
	}
	outs := map[string][]map[string]float64{}
	for rep := range cfg.reps {
		for _, name := range durableTrials {
			fmt.Fprintf(os.Stderr, "rep %d/%d %s ... ", rep+1, cfg.reps, name)
			dir := filepath.Join(cfg.dir, fmt.Sprintf("%s-%d", strings.ReplaceAll(name, "/", "_"), rep))
			out, err := runDurableOne(cfg, name, dir)
			_ = os.RemoveAll(dir)
			if err != nil {
				fmt.Fprintf(os.Stderr, "FAILED: %v\n", err)
				continue
			}
			fmt.Fprintf(os.Stderr, "done\n")
			outs[name] = append(outs[name], out)
		}
	}
	med := func(trial, metric string) float64 {
		var vs []float64
		for _, o := range outs[trial] {
			if v, ok := o[metric]; ok {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			return 0
		}
		sort.Float64s(vs)
		return vs[len(vs)/2]
	}
	fmt.Printf("\n## Durability (N = %d; SyncAlways: %d documents, %d writers; medians of %d runs)\n\n", cfg.n, cfg.nAlways, cfg.writers, cfg.reps)
	fmt.Println("| trial | store | figure |")
	fmt.Println("|---|---|---:|")
	for _, name := range durableTrials {
		var keys []string
		if len(outs[name]) > 0 {
			for k := range outs[name][0] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		parts := strings.SplitN(name, "/", 2)
		for _, k := range keys {
			fmt.Printf("| %s | %s | %s %s |\n", parts[0], parts[1], strconv.FormatFloat(med(name, k), 'g', 4, 64), k)
		}
	}

	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	type row struct {
		target, measured string
		ok               bool
	}
	var rows []row
	for _, mode := range []string{"insert1", "insert1000"} {
		mem := med(mode+"/ttldb-memory", "docs/s")
		es := med(mode+"/ttldb-SyncEverySecond", "docs/s")
		bunt := med(mode+"/buntdb-EverySecond", "docs/s")
		r1, r2 := ratio(es, mem), ratio(es, bunt)
		rows = append(rows,
			row{fmt.Sprintf("%s: SyncEverySecond >= 0.7x in memory", mode), fmt.Sprintf("%.0f vs %.0f docs/s: %.2fx", es, mem, r1), r1 >= 0.7},
			row{fmt.Sprintf("%s: SyncEverySecond >= 3x buntdb (EverySecond, its default)", mode), fmt.Sprintf("%.0f vs %.0f docs/s: %.2fx", es, bunt, r2), r2 >= 3})
	}
	cpf := med("always/ttldb", "commits/fsync")
	rows = append(rows, row{fmt.Sprintf("SyncAlways, %d writers: >= 4 commits per fsync", cfg.writers),
		fmt.Sprintf("%.1f commits/fsync, %.0f docs/s, %.2f ms per fsync (raw: p50 %.2f ms, p99 %.2f ms)", cpf, med("always/ttldb", "docs/s"),
			med("always/ttldb", "fsync-ms-mean"), med("fsync/raw", "fsync-ms-p50"), med("fsync/raw", "fsync-ms-p99")), cpf >= 4})
	open, bopen, ins := med("open/ttldb", "open-s"), med("open/buntdb", "open-s"), med("open/ttldb", "memory-insert-s")
	rows = append(rows,
		row{"Open of N with a TTL index <= 0.5x buntdb's load", fmt.Sprintf("%.2f s vs %.2f s: %.2fx", open, bopen, ratio(open, bopen)), ratio(open, bopen) <= 0.5},
		row{"Open of N <= 1x inserting them in memory", fmt.Sprintf("%.2f s vs %.2f s: %.2fx", open, ins, ratio(open, ins)), ratio(open, ins) <= 1})
	p99, p99s := med("snapshot/ttldb", "p99-ms-idle"), med("snapshot/ttldb", "p99-ms-snapshot")
	rows = append(rows, row{"snapshot of N, 4 writers: p99 <= 3x without", fmt.Sprintf("%.3f ms vs %.3f ms: %.2fx (snapshot took %.2f s)", p99s, p99, ratio(p99s, p99), med("snapshot/ttldb", "snapshot-s")), ratio(p99s, p99) <= 3})
	disk, enc := med("disk/ttldb", "disk-bytes/doc"), med("disk/ttldb", "encoding-bytes/doc")
	rows = append(rows, row{"disk bytes per document after a snapshot <= 1.2x the encoding", fmt.Sprintf("%.1f vs %.1f bytes: %.3fx (buntdb after Shrink: %.1f)", disk, enc, ratio(disk, enc), med("disk/buntdb", "disk-bytes/doc")), ratio(disk, enc) <= 1.2})
	fmt.Printf("\n## Durability targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, r := range rows {
		mark := "no"
		if r.ok {
			mark = "yes"
		}
		fmt.Printf("| %s | %s | %s |\n", r.target, r.measured, mark)
	}
}

func runDurableOne(cfg durableConfig, name, dir string) (map[string]float64, error) {
	args := []string{"-dtrial", name, "-durable-dir", dir, "-durable-n", strconv.Itoa(cfg.n),
		"-durable-always-n", strconv.Itoa(cfg.nAlways), "-durable-writers", strconv.Itoa(cfg.writers), "-durable-rate", cfg.rate.String()}
	cmd := exec.Command(os.Args[0], args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var out map[string]float64
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("bad trial output: %v", err)
	}
	return out, nil
}

// runDurableTrial runs one trial in this process and prints its figures.
func runDurableTrial(cfg durableConfig, name string) error {
	if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
		return err
	}
	out := map[string]float64{}
	var err error
	mode, store, _ := strings.Cut(name, "/")
	switch mode {
	case "insert1", "insert1000":
		batch := 1
		if mode == "insert1000" {
			batch = 1000
		}
		err = trialDurableInsert(cfg, store, batch, out)
	case "always":
		err = trialAlways(cfg, store, out)
	case "fsync":
		err = trialFsync(cfg, out)
	case "open":
		err = trialOpen(cfg, store, out)
	case "snapshot":
		err = trialSnapshot(cfg, out)
	case "disk":
		err = trialDisk(cfg, store, out)
	default:
		err = fmt.Errorf("unknown trial %q", name)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// benchDocs returns documents from..to (exclusive), each expiring in a day.
func benchDocs(from, to int) []Doc {
	exp := time.Now().Add(24 * time.Hour)
	out := make([]Doc, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, genDoc(i, exp))
	}
	return out
}

func ttldbDoc(d Doc) ttldb.Document {
	return ttldb.Document{"_id": d.ID, "user": d.User, "kind": d.Kind, "bytes": d.Bytes, "lastModifiedDate": d.LastModifiedDate}
}

// openTTLDB opens ttldb for a trial: in memory (policy "memory") or in dir
// with a sync policy, with the collection's TTL index.
func openTTLDB(dir, policy string, opts ...ttldb.Option) (*ttldb.DB, *ttldb.Collection, error) {
	opts = append(opts, ttldb.WithMonitor(ttldb.MonitorOptions{DeadlineWake: true}))
	switch policy {
	case "memory":
	case "SyncNever":
		opts = append(opts, ttldb.WithDir(dir), ttldb.WithSync(ttldb.SyncNever))
	case "SyncEverySecond":
		opts = append(opts, ttldb.WithDir(dir), ttldb.WithSync(ttldb.SyncEverySecond))
	case "SyncAlways":
		opts = append(opts, ttldb.WithDir(dir), ttldb.WithSync(ttldb.SyncAlways))
	default:
		return nil, nil, fmt.Errorf("unknown policy %q", policy)
	}
	db, err := ttldb.Open(opts...)
	if err != nil {
		return nil, nil, err
	}
	c := db.Collection("events")
	if _, err := c.CreateIndex(context.Background(), ttldb.IndexModel{
		Keys: []ttldb.IndexKey{ttldb.Asc("lastModifiedDate")}, ExpireAfterSeconds: ttldb.Seconds(ttlSeconds),
	}); err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, c, nil
}

// openBunt opens buntdb on its append-only file in dir with a sync
// policy. Documents are stored as JSON with buntdb's own TTL (SetOptions):
// what a buntdb user does for expiry; no JSON index.
func openBunt(dir string, pol buntdb.SyncPolicy) (*buntdb.DB, error) {
	db, err := buntdb.Open(filepath.Join(dir, "bunt.db"))
	if err != nil {
		return nil, err
	}
	var c buntdb.Config
	if err := db.ReadConfig(&c); err != nil {
		return nil, err
	}
	c.SyncPolicy = pol
	return db, db.SetConfig(c)
}

func buntSet(tx *buntdb.Tx, d Doc) error {
	v, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, _, err = tx.Set(d.ID, string(v), &buntdb.SetOptions{Expires: true, TTL: time.Until(threshold(d))})
	return err
}

// trialDurableInsert inserts cfg.n documents, batch per call, with one
// goroutine. The documents are made outside the timed region, in chunks.
func trialDurableInsert(cfg durableConfig, store string, batch int, out map[string]float64) error {
	const chunk = 100_000
	var elapsed time.Duration
	kind, policy, _ := strings.Cut(store, "-")
	switch kind {
	case "ttldb":
		db, c, err := openTTLDB(cfg.dir, policy)
		if err != nil {
			return err
		}
		for from := 0; from < cfg.n; from += chunk {
			docs := benchDocs(from, min(from+chunk, cfg.n))
			in := make([]ttldb.Document, len(docs))
			for i, d := range docs {
				in[i] = ttldbDoc(d)
			}
			runtime.GC()
			start := time.Now()
			for i := 0; i < len(in); i += batch {
				var err error
				if batch == 1 {
					_, err = c.InsertOne(in[i])
				} else {
					_, err = c.InsertMany(in[i:min(i+batch, len(in))])
				}
				if err != nil {
					return err
				}
			}
			elapsed += time.Since(start)
		}
		start := time.Now()
		if err := db.Close(); err != nil { // flushes and syncs: counted
			return err
		}
		elapsed += time.Since(start)
	case "buntdb":
		pol := map[string]buntdb.SyncPolicy{"Never": buntdb.Never, "EverySecond": buntdb.EverySecond, "Always": buntdb.Always}[policy]
		db, err := openBunt(cfg.dir, pol)
		if err != nil {
			return err
		}
		for from := 0; from < cfg.n; from += chunk {
			docs := benchDocs(from, min(from+chunk, cfg.n))
			runtime.GC()
			start := time.Now()
			for i := 0; i < len(docs); i += batch {
				err := db.Update(func(tx *buntdb.Tx) error {
					for _, d := range docs[i:min(i+batch, len(docs))] {
						if err := buntSet(tx, d); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			elapsed += time.Since(start)
		}
		start := time.Now()
		if err := db.Close(); err != nil {
			return err
		}
		elapsed += time.Since(start)
	default:
		return fmt.Errorf("unknown store %q", store)
	}
	out["docs/s"] = float64(cfg.n) / elapsed.Seconds()
	return nil
}

// trialAlways inserts cfg.nAlways documents one per call from cfg.writers
// goroutines under SyncAlways (buntdb: Always), and reports the commits
// per fsync and the fsync latency seen (ttldb: the log's fsyncs divided
// into the time, as Metrics counts them).
func trialAlways(cfg durableConfig, store string, out map[string]float64) error {
	docs := benchDocs(0, cfg.nAlways)
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, cfg.writers)
	var insert func(Doc) error
	var finish func() error
	var before ttldb.Metrics
	var db *ttldb.DB
	switch store {
	case "ttldb":
		var c *ttldb.Collection
		var err error
		db, c, err = openTTLDB(cfg.dir, "SyncAlways")
		if err != nil {
			return err
		}
		before = db.Metrics()
		insert = func(d Doc) error { _, err := c.InsertOne(ttldbDoc(d)); return err }
		finish = db.Close
	case "buntdb":
		b, err := openBunt(cfg.dir, buntdb.Always)
		if err != nil {
			return err
		}
		insert = func(d Doc) error { return b.Update(func(tx *buntdb.Tx) error { return buntSet(tx, d) }) }
		finish = b.Close
	default:
		return fmt.Errorf("unknown store %q", store)
	}
	start := time.Now()
	for range cfg.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(docs)) {
					return
				}
				if err := insert(docs[i]); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	out["docs/s"] = float64(len(docs)) / elapsed.Seconds()
	if db != nil {
		d := db.Metrics().Sub(before).Durability
		out["commits/fsync"] = float64(len(docs)) / float64(d.LogSyncs)
		out["records/fsync"] = float64(d.LogRecords) / float64(d.LogSyncs)
		// The fsyncs run one after the other: the time per fsync the
		// writers saw is the elapsed time over their number.
		out["fsync-ms-mean"] = elapsed.Seconds() * 1000 / float64(d.LogSyncs)
	}
	return finish()
}

// trialFsync measures this machine's fsync: 200 appends of 100 bytes,
// each fsynced.
func trialFsync(cfg durableConfig, out map[string]float64) error {
	f, err := os.OpenFile(filepath.Join(cfg.dir, "fsync"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	lat := make([]float64, 0, 200)
	buf := make([]byte, 100)
	for range 200 {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
	}
	sort.Float64s(lat)
	out["fsync-ms-p50"] = lat[len(lat)/2]
	out["fsync-ms-p99"] = lat[len(lat)*99/100]
	return nil
}

// trialOpen: ttldb: the time to insert cfg.n documents in memory
// (InsertMany of 1000), then, in a directory written with the same
// documents and a snapshot, the time Open takes to load them (snapshot
// read, TTL index built, ready to serve); buntdb: the time Open takes to
// load its append-only file of the same documents.
func trialOpen(cfg durableConfig, store string, out map[string]float64) error {
	const chunk = 100_000
	switch store {
	case "ttldb":
		mem, c, err := openTTLDB("", "memory")
		if err != nil {
			return err
		}
		var ins time.Duration
		for from := 0; from < cfg.n; from += chunk {
			docs := benchDocs(from, min(from+chunk, cfg.n))
			in := make([]ttldb.Document, len(docs))
			for i, d := range docs {
				in[i] = ttldbDoc(d)
			}
			start := time.Now()
			for i := 0; i < len(in); i += 1000 {
				if _, err := c.InsertMany(in[i:min(i+1000, len(in))]); err != nil {
					return err
				}
			}
			ins += time.Since(start)
		}
		out["memory-insert-s"] = ins.Seconds()
		var buf bytes.Buffer
		if err := mem.Backup(&buf); err != nil {
			return err
		}
		mem.Close()
		// The directory: restored from the backup (a snapshot, no log).
		db, err := ttldb.Open(ttldb.WithDir(cfg.dir), ttldb.WithRestore(&buf))
		if err != nil {
			return err
		}
		if err := db.Close(); err != nil {
			return err
		}
		buf = bytes.Buffer{}
		runtime.GC()
		start := time.Now()
		db, err = ttldb.Open(ttldb.WithDir(cfg.dir), ttldb.WithMonitor(ttldb.MonitorOptions{DeadlineWake: true}))
		if err != nil {
			return err
		}
		out["open-s"] = time.Since(start).Seconds()
		if n, _ := db.Collection("events").EstimatedDocumentCount(); n != cfg.n {
			return fmt.Errorf("opened %d documents, want %d", n, cfg.n)
		}
		return db.Close()
	case "buntdb":
		b, err := openBunt(cfg.dir, buntdb.EverySecond)
		if err != nil {
			return err
		}
		for from := 0; from < cfg.n; from += chunk {
			docs := benchDocs(from, min(from+chunk, cfg.n))
			for i := 0; i < len(docs); i += 1000 {
				if err := b.Update(func(tx *buntdb.Tx) error {
					for _, d := range docs[i:min(i+1000, len(docs))] {
						if err := buntSet(tx, d); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					return err
				}
			}
		}
		if err := b.Close(); err != nil {
			return err
		}
		runtime.GC()
		start := time.Now()
		b, err = buntdb.Open(filepath.Join(cfg.dir, "bunt.db"))
		if err != nil {
			return err
		}
		out["open-s"] = time.Since(start).Seconds()
		return b.Close()
	}
	return fmt.Errorf("unknown store %q", store)
}

// trialSnapshot: ttldb under SyncEverySecond with cfg.n documents; 4
// writers each insert or update on an open-loop schedule (one write per
// cfg.rate, latency from the due time, so that a writer held up counts
// against every write it should have made meanwhile); the writers'
// latencies while snapshots run, and while none does, interleaved.
func trialSnapshot(cfg durableConfig, out map[string]float64) error {
	db, c, err := openTTLDB(cfg.dir, "SyncEverySecond", ttldb.WithAutoSnapshot(ttldb.AutoSnapshot{Disabled: true}))
	if err != nil {
		return err
	}
	defer db.Close()
	const chunk = 100_000
	for from := 0; from < cfg.n; from += chunk {
		docs := benchDocs(from, min(from+chunk, cfg.n))
		in := make([]ttldb.Document, len(docs))
		for i, d := range docs {
			in[i] = ttldbDoc(d)
		}
		for i := 0; i < len(in); i += 1000 {
			if _, err := c.InsertMany(in[i:min(i+1000, len(in))]); err != nil {
				return err
			}
		}
	}
	if err := db.Snapshot(); err != nil { // a first one: the log is empty
		return err
	}
	runtime.GC()
	// Four writers run throughout; the controller alternates 0.5 s of
	// snapshots back to back with 0.5 s without, eight times, and each
	// write's latency goes to the phase its due time fell in: noise from
	// the machine lands on both alike.
	var newID atomic.Int64
	newID.Store(int64(cfg.n))
	var snapping, stop atomic.Bool
	var mu sync.Mutex
	var snapLats, idleLats []float64
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var snap, idle []float64
			start := time.Now()
			for i := 0; !stop.Load(); i++ {
				due := start.Add(time.Duration(i) * cfg.rate)
				if d := time.Until(due); d > 0 {
					time.Sleep(d) // four spinning writers would take both cores
				}
				during := snapping.Load()
				var err error
				if i%2 == 0 {
					id := int(newID.Add(1))
					_, err = c.InsertOne(ttldbDoc(genDoc(id, time.Now().Add(24*time.Hour))))
				} else {
					k := (w*1_000_003 + i*7919) % cfg.n
					_, err = c.UpdateOne(ttldb.Document{"_id": docKey(k)}, ttldb.Document{"$inc": ttldb.Document{"bytes": 1}})
				}
				if err != nil {
					errc <- err
					return
				}
				lat := float64(time.Since(due).Microseconds()) / 1000
				if during {
					snap = append(snap, lat)
				} else {
					idle = append(idle, lat)
				}
			}
			mu.Lock()
			snapLats, idleLats = append(snapLats, snap...), append(idleLats, idle...)
			mu.Unlock()
		}()
	}
	var snapTook time.Duration
	snaps := 0
	var serr error
	for range 8 {
		snapping.Store(true)
		for start := time.Now(); time.Since(start) < 500*time.Millisecond && serr == nil; snaps++ {
			t0 := time.Now()
			if os.Getenv("BENCH_BACKUP_DISCARD") != "" {
				serr = db.Backup(io.Discard) // the walk without the file
			} else if os.Getenv("BENCH_NO_SNAPSHOT") != "" {
				time.Sleep(100 * time.Millisecond) // the machine's noise alone
			} else {
				serr = db.Snapshot()
			}
			snapTook += time.Since(t0)
		}
		snapping.Store(false)
		time.Sleep(500 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	close(errc)
	if serr != nil {
		return serr
	}
	if err := <-errc; err != nil {
		return err
	}
	slices.Sort(snapLats)
	slices.Sort(idleLats)
	p := func(l []float64, q float64) float64 {
		if len(l) == 0 {
			return 0
		}
		return l[min(int(float64(len(l))*q), len(l)-1)]
	}
	out["p99-ms-idle"] = p(idleLats, 0.99)
	out["p99-ms-snapshot"] = p(snapLats, 0.99)
	out["p50-ms-idle"] = p(idleLats, 0.5)
	out["p50-ms-snapshot"] = p(snapLats, 0.5)
	out["max-ms-snapshot"] = p(snapLats, 1)
	out["snapshot-s"] = snapTook.Seconds() / float64(snaps)
	out["snapshots"] = float64(snaps)
	out["writes-snapshot"] = float64(len(snapLats))
	return nil
}

// trialDisk: the bytes on disk per document right after a snapshot
// (ttldb: snapshot and log; the documents' encoding beside it), and
// buntdb's append-only file after its Shrink.
func trialDisk(cfg durableConfig, store string, out map[string]float64) error {
	const chunk = 100_000
	switch store {
	case "ttldb":
		db, c, err := openTTLDB(cfg.dir, "SyncEverySecond")
		if err != nil {
			return err
		}
		for from := 0; from < cfg.n; from += chunk {
			docs := benchDocs(from, min(from+chunk, cfg.n))
			in := make([]ttldb.Document, len(docs))
			for i, d := range docs {
				in[i] = ttldbDoc(d)
			}
			for i := 0; i < len(in); i += 1000 {
				if _, err := c.InsertMany(in[i:min(i+1000, len(in))]); err != nil {
					return err
				}
			}
		}
		if err := db.Snapshot(); err != nil {
			return err
		}
		enc := db.Metrics().DocumentBytes["events"]
		if err := db.Close(); err != nil {
			return err
		}
		size, err := dirSize(cfg.dir)
		if err != nil {
			return err
		}
		out["disk-bytes/doc"] = float64(size) / float64(cfg.n)
		out["encoding-bytes/doc"] = float64(enc) / float64(cfg.n)
	case "buntdb":
		b, err := openBunt(cfg.dir, buntdb.EverySecond)
		if err != nil {
			return err
		}
		for from := 0; from < cfg.n; from += chunk {
			docs := benchDocs(from, min(from+chunk, cfg.n))
			for i := 0; i < len(docs); i += 1000 {
				if err := b.Update(func(tx *buntdb.Tx) error {
					for _, d := range docs[i:min(i+1000, len(docs))] {
						if err := buntSet(tx, d); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					return err
				}
			}
		}
		// buntdb may be shrinking in the background (its AutoShrink):
		// wait for it, then shrink.
		for {
			err := b.Shrink()
			if err == nil {
				break
			}
			if err != buntdb.ErrShrinkInProcess {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := b.Close(); err != nil {
			return err
		}
		size, err := dirSize(cfg.dir)
		if err != nil {
			return err
		}
		out["disk-bytes/doc"] = float64(size) / float64(cfg.n)
	default:
		return fmt.Errorf("unknown store %q", store)
	}
	return nil
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	return n, err
}
