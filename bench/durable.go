package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/buntdb"
	"github.com/ttldb/ttldb"
)

// The durability workloads (issue 13): ttldb with a data directory
// (WithDir) under each sync policy, side by side with buntdb's append-only
// file under the same policies.
//
//   - dinsert, dinsert1: insert throughput of n documents (1000 or one per
//     call), in memory and under each sync policy;
//   - dgroup: commits of one document each from several writers under
//     SyncAlways (ttldb's group commit; buntdb fsyncs each commit), with
//     the commits per fsync and the fsync latency measured on the same
//     file system;
//   - restart: Open of n documents with a TTL index, from a snapshot and
//     from the log alone, against the time to insert them in memory (same
//     process) and against buntdb's load of its file; and the disk bytes
//     per document right after the snapshot against the documents' own
//     encoding;
//   - dsnap: the latency of writers with and without a snapshot running.
//
// Trial stores are the store name and a configuration, "ttldb-always".

// durableWorkloads are the trial kinds above, in the order they run.
var durableWorkloads = []string{"dinsert", "dinsert1", "dgroup", "restart", "dsnap"}

// Store configurations of each durability workload, table order.
var (
	dinsertStores = []string{"ttldb-memory", "ttldb-never", "ttldb-everysecond", "ttldb-always",
		"buntdb-memory", "buntdb-never", "buntdb-everysecond", "buntdb-always", "buntdb-everysecond-jsonindex"}
	dinsert1Stores = []string{"ttldb-memory", "ttldb-never", "ttldb-everysecond",
		"buntdb-memory", "buntdb-never", "buntdb-everysecond"}
	dgroupStores  = []string{"ttldb-always", "buntdb-always"}
	restartStores = []string{"ttldb-snapshot", "ttldb-log", "buntdb-aof", "buntdb-aof-jsonindex"}
	dsnapStores   = []string{"ttldb", "buntdb"}
)

// baseStore is the -stores name a trial store belongs to ("ttldb-always":
// "ttldb").
func baseStore(st string) string {
	b, _, _ := strings.Cut(st, "-")
	return b
}

// farFuture is every durability workload's document threshold: nothing
// expires during a trial.
func farFuture() time.Time { return time.Now().Add(24 * time.Hour) }

// trialDir makes the trial's own data directory under p.tmp; the trial
// removes it when it returns (the parent removes p.tmp after the run).
func trialDir(p trialParams) (string, func(), error) {
	dir, err := os.MkdirTemp(p.tmp, "trial-*")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// dirBytes returns the bytes of every file under dir. A file removed while
// it walks (buntdb's shrink removes its temporary file in the background,
// after Close returned) counts for nothing.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}

// freeHeap returns the memory of what earlier phases dropped to the OS, so
// that a timed phase starts from the same heap whatever ran before it.
func freeHeap() {
	runtime.GC()
	debug.FreeOSMemory()
}

// syncPolicy maps a configuration name to ttldb's and buntdb's policies.
func syncPolicy(cfg string) (ttldb.SyncPolicy, buntdb.SyncPolicy, error) {
	switch cfg {
	case "always":
		return ttldb.SyncAlways, buntdb.Always, nil
	case "everysecond":
		return ttldb.SyncEverySecond, buntdb.EverySecond, nil
	case "never":
		return ttldb.SyncNever, buntdb.Never, nil
	}
	return 0, 0, fmt.Errorf("unknown sync policy %q", cfg)
}

// openTTLDBDir opens ttldb on dir (or in memory if dir is ""), with the
// bench's collection and TTL index, the monitor as in every other
// workload, and extra options.
func openTTLDBDir(dir string, extra ...ttldb.Option) (*ttldbStore, error) {
	var opts []ttldb.Option
	if dir != "" {
		opts = append(opts, ttldb.WithDir(dir))
	}
	return newTTLDBStore(storeOpts{ttldbOpts: append(opts, extra...)})
}

// openBuntFile opens buntdb on the file path with its default
// configuration, then the sync policy given; shrink false turns its
// automatic rewrite of the file off. Without jsonIndex (its fastest fair
// configuration) its TTL is its own expiry tree, which its file keeps;
// jsonIndex adds IndexJSON("lastModifiedDate"), the configuration of the
// other workloads (see the README's caveats).
func openBuntFile(path string, pol buntdb.SyncPolicy, shrink, jsonIndex bool) (*buntStore, error) {
	db, err := buntdb.Open(path)
	if err != nil {
		return nil, err
	}
	var c buntdb.Config
	if err := db.ReadConfig(&c); err != nil {
		db.Close()
		return nil, err
	}
	c.SyncPolicy = pol
	c.AutoShrinkDisabled = !shrink
	if err := db.SetConfig(c); err != nil {
		db.Close()
		return nil, err
	}
	if jsonIndex {
		if err := db.CreateIndex("lastModifiedDate", "*", buntdb.IndexJSON("lastModifiedDate")); err != nil {
			db.Close()
			return nil, err
		}
	}
	return &buntStore{db: db}, nil
}

// ttldbDoc converts a benchmark document to ttldb's input.
func ttldbDoc(d Doc) ttldb.Document {
	if docShape == shapeSession {
		return ttldb.Document{"_id": d.ID, "user": d.User, "payload": d.Payload, "lastModifiedDate": d.LastModifiedDate}
	}
	return ttldb.Document{"_id": d.ID, "user": d.User, "kind": d.Kind, "bytes": d.Bytes, "lastModifiedDate": d.LastModifiedDate}
}

// ---- dinsert ----

// trialDInsert: n documents inserted in batches of 1000 (dinsert: ttldb
// InsertMany, buntdb one transaction) or one per call (dinsert1: ttldb
// InsertOne, buntdb a transaction of one Set), in memory or into a data
// directory / file under one sync policy, each store at its defaults
// otherwise (ttldb's automatic snapshots, buntdb's automatic shrink).
// Timed: the insert calls; then Close (which writes and fsyncs what is
// left) separately.
func trialDInsert(p trialParams, out *trialOut) error {
	name, cfg, _ := strings.Cut(p.store, "-")
	dir, cleanup, err := trialDir(p)
	if err != nil {
		return err
	}
	defer cleanup()
	var s store
	var closeErr func() error
	switch name {
	case "ttldb":
		var ts *ttldbStore
		if cfg == "memory" {
			ts, err = openTTLDBDir("")
		} else {
			pol, _, perr := syncPolicy(cfg)
			if perr != nil {
				return perr
			}
			ts, err = openTTLDBDir(dir, ttldb.WithSync(pol))
		}
		if err != nil {
			return err
		}
		s, closeErr = ts, ts.db.Close
	case "buntdb":
		var bs *buntStore
		if cfg == "memory" {
			bs, err = openBuntFile(":memory:", buntdb.EverySecond, true, false)
		} else {
			pcfg, index := strings.CutSuffix(cfg, "-jsonindex")
			_, pol, perr := syncPolicy(pcfg)
			if perr != nil {
				return perr
			}
			bs, err = openBuntFile(filepath.Join(dir, "data.db"), pol, true, index)
		}
		if err != nil {
			return err
		}
		s, closeErr = bs, bs.db.Close
	default:
		return fmt.Errorf("dinsert: unknown store %q", p.store)
	}
	if p.workload == "dinsert1" {
		s = oneByOne{s}
	}
	far := farFuture()
	freeHeap()
	gc0 := gcCycles()
	stop := startProfile()
	ins, err := fill(s, 0, p.n, func(int) time.Time { return far }, nil)
	stop()
	if err != nil {
		closeErr()
		return err
	}
	out.add("dinsert", "docs/s", float64(p.n)/ins.Seconds())
	out.add("dinsert_cost", "ns/doc", float64(ins.Nanoseconds())/float64(p.n))
	out.add("dinsert_gc_cycles", "cycles", float64(gcCycles()-gc0))
	if ts, ok := unwrap(s).(*ttldbStore); ok && cfg != "memory" {
		d := ts.db.Metrics().Durability
		out.add("dinsert_log_bytes_per_doc", "bytes", float64(d.LogBytes)/float64(p.n))
		out.add("dinsert_fsyncs", "fsyncs", float64(d.LogSyncs))
		out.add("dinsert_snapshots", "snapshots", float64(d.Snapshots))
	}
	t := time.Now()
	if err := closeErr(); err != nil {
		return err
	}
	out.add("dinsert_close", "ms", float64(time.Since(t))/1e6)
	if cfg != "memory" {
		b, err := dirBytes(dir)
		if err != nil {
			return err
		}
		out.add("dinsert_disk_bytes_per_doc", "bytes", float64(b)/float64(p.n))
	}
	return nil
}

// oneByOne inserts each prepared batch one document per call.
type oneByOne struct{ store }

func (o oneByOne) insert(b any) error {
	switch s := o.store.(type) {
	case *ttldbStore:
		docs := b.([]ttldb.Document)
		for _, d := range docs {
			if _, err := s.coll.InsertOne(context.Background(), d); err != nil {
				return err
			}
		}
		s.inserted.Add(int64(len(docs)))
		return nil
	case *buntStore:
		for _, it := range b.([]buntItem) {
			if err := s.insert([]buntItem{it}); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("oneByOne: %T", o.store)
}

// unwrap returns the store under a oneByOne.
func unwrap(s store) store {
	if o, ok := s.(oneByOne); ok {
		return o.store
	}
	return s
}

// ---- dgroup ----

// fsyncProbe measures the file system's fsync under dir: count appends of
// 128 bytes to one file, each followed by an fsync; it returns the p50 and
// p99 of one append-and-fsync.
func fsyncProbe(dir string, count int) (p50, p99 time.Duration, err error) {
	f, err := os.CreateTemp(dir, "fsync-probe-*")
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	buf := make([]byte, 128)
	lats := make([]time.Duration, 0, count)
	for range count {
		t := time.Now()
		if _, err := f.Write(buf); err != nil {
			return 0, 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, 0, err
		}
		lats = append(lats, time.Since(t))
	}
	slices.Sort(lats)
	return lats[len(lats)/2], lats[min(len(lats)-1, len(lats)*99/100)], nil
}

// trialDGroup: p.n goroutines (writers) commit one document per call (ttldb
// InsertOne, buntdb a transaction of one Set) under SyncAlways for
// p.groupDur. Reported: commits/s, each commit's latency, and for ttldb
// the commits per fsync (write calls over the log's fsyncs in the window,
// Metrics().Durability.LogSyncs);
// beside them, the fsync latency of the same file system, measured in the
// same process just before.
func trialDGroup(p trialParams, out *trialOut) error {
	name, cfg, _ := strings.Cut(p.store, "-")
	if cfg != "always" {
		return fmt.Errorf("dgroup: %q: SyncAlways only", p.store)
	}
	dir, cleanup, err := trialDir(p)
	if err != nil {
		return err
	}
	defer cleanup()
	p50, p99, err := fsyncProbe(dir, 300)
	if err != nil {
		return err
	}
	out.add("fsync_p50", "µs", float64(p50)/1e3)
	out.add("fsync_p99", "µs", float64(p99)/1e3)

	var commit func(d Doc) error
	var logSyncs func() int64
	var closeErr func() error
	switch name {
	case "ttldb":
		ts, err := openTTLDBDir(dir, ttldb.WithSync(ttldb.SyncAlways))
		if err != nil {
			return err
		}
		commit = func(d Doc) error { _, err := ts.coll.InsertOne(context.Background(), ttldbDoc(d)); return err }
		logSyncs = func() int64 { return ts.db.Metrics().Durability.LogSyncs }
		closeErr = ts.db.Close
	case "buntdb":
		bs, err := openBuntFile(filepath.Join(dir, "data.db"), buntdb.Always, true, false)
		if err != nil {
			return err
		}
		commit = func(d Doc) error { return bs.insert(bs.prepare([]Doc{d})) }
		closeErr = bs.db.Close
	default:
		return fmt.Errorf("dgroup: unknown store %q", p.store)
	}
	defer func() { _ = closeErr() }()

	far := farFuture()
	var (
		wg      sync.WaitGroup
		stopAt  = time.Now().Add(p.groupDur)
		mu      sync.Mutex
		all     []time.Duration
		firstEr error
	)
	var syncs0 int64
	if logSyncs != nil {
		syncs0 = logSyncs()
	}
	stop := startProfile()
	start := time.Now()
	for w := range p.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lats := make([]time.Duration, 0, 1<<12)
			for i := 0; time.Now().Before(stopAt); i++ {
				d := genDoc(w*10_000_000+i, far)
				t := time.Now()
				if err := commit(d); err != nil {
					mu.Lock()
					firstEr = cmpOr(firstEr, err)
					mu.Unlock()
					return
				}
				lats = append(lats, time.Since(t))
			}
			mu.Lock()
			all = append(all, lats...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	if firstEr != nil {
		return firstEr
	}
	commits := len(all)
	out.add("group_commits", "commits", float64(commits))
	out.add("group_commits_per_s", "commits/s", float64(commits)/elapsed.Seconds())
	latStats(out, "commit", "group", all)
	if logSyncs != nil {
		fsyncs := logSyncs() - syncs0
		out.add("group_fsyncs", "fsyncs", float64(fsyncs))
		if fsyncs > 0 {
			out.add("commits_per_fsync", "commits", float64(commits)/float64(fsyncs))
		}
	}
	return nil
}

// cmpOr returns a if it is not nil, else b.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// ---- restart ----

// trialRestart: for ttldb, first the time to insert the n documents in
// memory (as dinsert's ttldb-memory, in this process); then a data
// directory gets the same documents (SyncNever, automatic snapshots off),
// and either a snapshot (ttldb-snapshot: its time and the directory's
// bytes per document right after it, against the documents' encoding) or
// nothing more (ttldb-log: every document is in the log); Close; then the
// timed Open, checked to hold the n documents and the TTL index. For
// buntdb-aof: its file with the n documents, rewritten by Shrink, and the
// timed Open that loads it (-jsonindex: and the CreateIndex after it).
func trialRestart(p trialParams, out *trialOut) error {
	dir, cleanup, err := trialDir(p)
	if err != nil {
		return err
	}
	defer cleanup()
	far := farFuture()
	expOf := func(int) time.Time { return far }
	switch p.store {
	case "ttldb-snapshot", "ttldb-log":
		mem, err := openTTLDBDir("")
		if err != nil {
			return err
		}
		freeHeap()
		ins, err := fill(mem, 0, p.n, expOf, nil)
		if err != nil {
			return err
		}
		accounted := mem.db.Metrics().Storage.Bytes
		mem.db.Close()
		mem = nil
		out.add("insert_memory", "ms", float64(ins)/1e6)

		s, err := openTTLDBDir(dir, ttldb.WithSync(ttldb.SyncNever), ttldb.WithAutoSnapshot(ttldb.AutoSnapshot{Disabled: true}))
		if err != nil {
			return err
		}
		if _, err := fill(s, 0, p.n, expOf, nil); err != nil {
			s.db.Close()
			return err
		}
		if p.store == "ttldb-snapshot" {
			t := time.Now()
			if err := s.db.Snapshot(context.Background()); err != nil {
				s.db.Close()
				return err
			}
			out.add("snapshot_time", "ms", float64(time.Since(t))/1e6)
			disk, err := dirBytes(dir)
			if err != nil {
				s.db.Close()
				return err
			}
			m := s.db.Metrics()
			enc := m.DocumentBytes["events"]
			// Nothing was written since the snapshot began, so it covers
			// the whole log, which stays for change streams to resume
			// from (WithLogRetention: up to the newest 256 MiB by
			// default, the active segment included): a window in bytes,
			// not a cost per document. The target counts the rest.
			retained := m.Durability.LogSize
			out.add("disk_bytes_per_doc", "bytes", float64(disk)/float64(p.n))
			out.add("retained_log_bytes_per_doc", "bytes", float64(retained)/float64(p.n))
			out.add("encoding_bytes_per_doc", "bytes", float64(enc)/float64(p.n))
			out.add("accounted_bytes_per_doc", "bytes", float64(accounted)/float64(p.n))
			out.add("disk_vs_encoding", "x", float64(disk-retained)/float64(enc))
		}
		if err := s.db.Close(); err != nil {
			return err
		}
		s = nil
		disk, err := dirBytes(dir)
		if err != nil {
			return err
		}
		out.add("files_bytes_per_doc", "bytes", float64(disk)/float64(p.n))
		freeHeap()

		stop := startProfile()
		t := time.Now()
		db, err := ttldb.Open(ttldb.WithDir(dir), ttldb.WithMonitor(ttldb.MonitorOptions{DeadlineWake: true}))
		open := time.Since(t)
		stop()
		if err != nil {
			return err
		}
		defer db.Close()
		if err := checkLoaded(db, p.n); err != nil {
			return err
		}
		rec := db.Recovery()
		out.add("open", "ms", float64(open)/1e6)
		out.add("open_vs_insert_memory", "x", float64(open)/float64(ins))
		out.add("open_snapshot_docs", "docs", float64(rec.SnapshotDocuments))
		out.add("open_log_ops", "ops", float64(rec.LogOps))
		return nil
	case "buntdb-aof", "buntdb-aof-jsonindex":
		path := filepath.Join(dir, "data.db")
		index := p.store == "buntdb-aof-jsonindex"
		// Its automatic shrink off, an explicit Shrink (the rewrite of its
		// file, as ttldb's snapshot is): the file holds one set per
		// document, as after the inserts alone.
		s, err := openBuntFile(path, buntdb.EverySecond, false, index)
		if err != nil {
			return err
		}
		if _, err := fill(s, 0, p.n, expOf, nil); err != nil {
			s.db.Close()
			return err
		}
		if err := s.db.Shrink(); err != nil {
			s.db.Close()
			return err
		}
		if err := s.db.Close(); err != nil {
			return err
		}
		s = nil
		disk, err := dirBytes(dir)
		if err != nil {
			return err
		}
		out.add("files_bytes_per_doc", "bytes", float64(disk)/float64(p.n))
		freeHeap()
		stop := startProfile()
		t := time.Now()
		db, err := buntdb.Open(path)
		if err == nil && index {
			// An index is not in buntdb's file: the application creates it
			// again after Open, which fills it from the loaded items.
			err = db.CreateIndex("lastModifiedDate", "*", buntdb.IndexJSON("lastModifiedDate"))
		}
		open := time.Since(t)
		stop()
		if err != nil {
			return err
		}
		defer db.Close()
		got := 0
		_ = db.View(func(tx *buntdb.Tx) error { got, _ = tx.Len(); return nil })
		if got != p.n {
			return fmt.Errorf("buntdb loaded %d documents, want %d", got, p.n)
		}
		out.add("open", "ms", float64(open)/1e6)
		return nil
	}
	return fmt.Errorf("restart: unknown store %q", p.store)
}

// checkLoaded makes sure a reopened DB holds the n documents, its TTL index
// and a document by _id with its date.
func checkLoaded(db *ttldb.DB, n int) error {
	c := db.Collection("events")
	got, err := c.EstimatedDocumentCount(context.Background())
	if err != nil {
		return err
	}
	if got != int64(n) {
		return fmt.Errorf("reopened DB holds %d documents, want %d", got, n)
	}
	specs, err := c.Indexes(context.Background())
	if err != nil {
		return err
	}
	ttl := false
	for _, s := range specs {
		ttl = ttl || s.ExpireAfterSeconds != nil
	}
	if !ttl {
		return errors.New("reopened DB has no TTL index")
	}
	key := docKey(n / 2)
	at, expires, err := c.ExpiresAt(context.Background(), key)
	if err != nil || !expires || at.IsZero() {
		return fmt.Errorf("reopened DB: %s: expires %v at %v, err %v", key, expires, at, err)
	}
	return nil
}

// ---- dsnap ----

// trialDSnap: a DB of n documents in a data directory (SyncEverySecond,
// automatic snapshots off) with p.snapWriters writers, each alternating an
// update by _id of a random stored document ($set of its date and a
// field: a session refresh) and an insert of a new document, pausing
// p.snapPause between calls. Each call's latency (its own duration) is
// recorded with the phase it started in: while DB.Snapshot runs (back to
// back for p.snapPhase) or without a snapshot (the next p.snapPhase), the
// two alternating p.snapCycles times. buntdb runs the same with Shrink,
// its rewrite of the file.
func trialDSnap(p trialParams, out *trialOut) error {
	dir, cleanup, err := trialDir(p)
	if err != nil {
		return err
	}
	defer cleanup()
	far := farFuture()
	expOf := func(int) time.Time { return far }
	var (
		update, insert func(d Doc) error
		snapshot       func() error
		closeErr       func() error
	)
	switch p.store {
	case "ttldb":
		s, err := openTTLDBDir(dir, ttldb.WithAutoSnapshot(ttldb.AutoSnapshot{Disabled: true}))
		if err != nil {
			return err
		}
		closeErr = s.db.Close
		if _, err := fill(s, 0, p.n, expOf, nil); err != nil {
			s.db.Close()
			return err
		}
		update = func(d Doc) error {
			_, err := s.coll.UpdateOne(context.Background(), ttldb.Document{"_id": d.ID},
				ttldb.Document{"$set": ttldb.Document{"lastModifiedDate": d.LastModifiedDate, "bytes": d.Bytes}})

			return err
		}
		insert = func(d Doc) error { _, err := s.coll.InsertOne(context.Background(), ttldbDoc(d)); return err }
		snapshot = func() error { return s.db.Snapshot(context.Background()) }
	case "buntdb":
		s, err := openBuntFile(filepath.Join(dir, "data.db"), buntdb.EverySecond, false, false)
		if err != nil {
			return err
		}
		closeErr = s.db.Close
		if _, err := fill(s, 0, p.n, expOf, nil); err != nil {
			s.db.Close()
			return err
		}
		write := func(d Doc) error { return s.insert(s.prepare([]Doc{d})) }
		update, insert, snapshot = write, write, s.db.Shrink
	default:
		return fmt.Errorf("dsnap: unknown store %q", p.store)
	}
	defer func() { _ = closeErr() }()
	// A first snapshot (shrink), untimed: every measured one then starts
	// from the same state, the log holding only the writers' changes.
	if err := snapshot(); err != nil {
		return err
	}
	freeHeap()

	const (
		phaseWarm = iota // not recorded
		phaseNoSnap
		phaseSnap
		phaseDone
	)
	var phase atomic.Int32
	type sample struct {
		lat   time.Duration
		phase int32
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		samples []sample
		firstEr error
	)
	for w := range p.snapWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 13))
			local := make([]sample, 0, 1<<14)
			for i := 0; ; i++ {
				ph := phase.Load()
				if ph == phaseDone {
					break
				}
				var d Doc
				var op func(Doc) error
				if i%2 == 0 {
					d, op = genDoc(rng.IntN(p.n), far.Add(time.Duration(i)*time.Millisecond)), update
				} else {
					d, op = genDoc(p.n+(w+1)*10_000_000+i, far), insert
				}
				t := time.Now()
				if err := op(d); err != nil {
					mu.Lock()
					firstEr = cmpOr(firstEr, err)
					mu.Unlock()
					return
				}
				if ph != phaseWarm {
					local = append(local, sample{time.Since(t), ph})
				}
				time.Sleep(p.snapPause)
			}
			mu.Lock()
			samples = append(samples, local...)
			mu.Unlock()
		}()
	}
	// The phases alternate, p.snapCycles times: snapshots back to back for
	// p.snapPhase (at least one), then none for p.snapPhase. Drift and
	// noise of the machine land on both alike.
	time.Sleep(200 * time.Millisecond)
	var (
		snapTimes        []time.Duration
		inSnap, inNoSnap time.Duration
		serr             error
	)
	stop := startProfile()
	for range p.snapCycles {
		phase.Store(phaseSnap)
		start := time.Now()
		for serr == nil && (len(snapTimes) == 0 || time.Since(start) < p.snapPhase) {
			t := time.Now()
			serr = snapshot()
			snapTimes = append(snapTimes, time.Since(t))
			if time.Since(start) >= p.snapPhase {
				break
			}
		}
		inSnap += time.Since(start)
		phase.Store(phaseNoSnap)
		if serr != nil {
			break
		}
		start = time.Now()
		time.Sleep(p.snapPhase)
		inNoSnap += time.Since(start)
	}
	stop()
	phase.Store(phaseDone)
	wg.Wait()
	if serr != nil {
		return serr
	}
	if firstEr != nil {
		return firstEr
	}
	var no, during []time.Duration
	for _, s := range samples {
		if s.phase == phaseSnap {
			during = append(during, s.lat)
		} else {
			no = append(no, s.lat)
		}
	}
	if len(no) == 0 || len(during) == 0 {
		return fmt.Errorf("dsnap: %d writes without a snapshot, %d during: too few", len(no), len(during))
	}
	latStats(out, "write", "nosnap", no)
	latStats(out, "write", "snap", during)
	over := func(lats []time.Duration) float64 {
		k := 0
		for _, l := range lats {
			if l > 10*time.Millisecond {
				k++
			}
		}
		return float64(k)
	}
	out.add("writes_over_10ms_nosnap", "writes", over(no))
	out.add("writes_over_10ms_snap", "writes", over(during))
	out.add("write_rate_nosnap", "writes/s", float64(len(no))/inNoSnap.Seconds())
	out.add("write_rate_snap", "writes/s", float64(len(during))/inSnap.Seconds())
	out.add("snapshots", "snapshots", float64(len(snapTimes)))
	slices.Sort(snapTimes)
	out.add("snapshot_time", "ms", float64(snapTimes[len(snapTimes)/2])/1e6)
	if v, ok := metricOf(out, "write_p99_snap"); ok {
		if b, ok := metricOf(out, "write_p99_nosnap"); ok && b > 0 {
			out.add("write_p99_snap_vs_nosnap", "x", v/b)
		}
	}
	return nil
}

// metricOf returns a metric the trial already added.
func metricOf(out *trialOut, name string) (float64, bool) {
	for _, m := range out.Metrics {
		if m.Metric == name {
			return m.Value, true
		}
	}
	return 0, false
}

// durableSpecs lists the durability workloads' trials.
func durableSpecs(cfg config, has func(string) bool, hasStore func(string) bool) []spec {
	var out []spec
	add := func(w string, stores []string, n int) {
		if !has(w) {
			return
		}
		for _, st := range stores {
			if hasStore(baseStore(st)) {
				out = append(out, spec{w, st, n})
			}
		}
	}
	add("dinsert", dinsertStores, cfg.durableN)
	add("dinsert1", dinsert1Stores, cfg.durableN)
	add("dgroup", dgroupStores, cfg.groupWriters)
	add("restart", restartStores, cfg.durableN)
	add("dsnap", dsnapStores, cfg.durableN)
	return out
}
