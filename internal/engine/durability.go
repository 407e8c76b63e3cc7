package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttldb/ttldb/internal/errs"
	snapfile "github.com/ttldb/ttldb/internal/snapshot"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/internal/wal"
)

// SyncPolicy says when a DB opened WithDir writes and fsyncs its log, as
// the sync choices of Redis's append-only file do. Under SyncAlways a
// write returns once an fsync covered its changes: neither a crash of the
// process nor a power cut loses what a call acknowledged. Under
// SyncEverySecond and SyncNever a write returns at once, and its changes
// reach the operating system within about 10 ms (a writer goroutine
// batches them), later when that goroutine is held back (a log segment
// change, which every snapshot makes, fsyncs the old segment meanwhile; a
// loaded machine delays it): a crash of the process (SIGKILL, a panic, an
// OOM kill) loses the writes acknowledged in that window before it. The
// README quotes the windows TestSoakKill measured (about 11 ms in a
// default run, up to 227 ms on a loaded machine snapshotting every few
// milliseconds); the test fails past 1 s. The TTL monitor's deletions are
// writes like any other: under
// those two policies a crash may undo deletions of that window, which
// observers and hooks were already told of; the documents come back still
// expired (hidden under HideExpired) and the next pass deletes them again.
// The policies differ too on a power cut or a kernel crash.
type SyncPolicy = wal.SyncPolicy

// The sync policies. The zero value is SyncEverySecond, the default.
// SyncPolicy's String returns a policy's name as its constant is spelled.
const (
	// SyncEverySecond fsyncs the log about once a second, in the
	// background: a power cut loses at most the writes of the last second
	// or so. Writes never wait for the disk.
	SyncEverySecond = wal.SyncEverySecond
	// SyncAlways returns from a write only once an fsync covered it: a
	// power cut loses no acknowledged write. Concurrent writers share
	// fsyncs (group commit); each write waits about one fsync's time.
	SyncAlways = wal.SyncAlways
	// SyncNever leaves the write-back to the operating system (within
	// about 30 s on Linux): a power cut may lose that much.
	SyncNever = wal.SyncNever
)

// AutoSnapshot configures the snapshots a DB opened WithDir takes by
// itself: one starts when the log has grown past both MinLogBytes and
// LogRatio times the size of the last snapshot, after which the log before
// it is dropped. The zero value means the defaults.
type AutoSnapshot struct {
	// LogRatio is the log's size, as a multiple of the last snapshot's,
	// that triggers a snapshot (default 1: when rewriting the DB costs no
	// more than the log it replaces). Negative is ErrInvalidOptions.
	LogRatio float64
	// MinLogBytes is the smallest log, in bytes, that triggers a snapshot
	// (default 64 MiB). Negative is ErrInvalidOptions.
	MinLogBytes int64
	// Disabled turns automatic snapshots off: the log then grows until
	// DB.Snapshot is called.
	Disabled bool
}

// Defaults of AutoSnapshot.
const (
	DefaultSnapshotLogRatio    = 1.0
	DefaultSnapshotMinLogBytes = 64 << 20
)

// durableConfig is what the durability options set.
type durableConfig struct {
	dir     string
	sync    SyncPolicy
	auto    AutoSnapshot
	restore io.Reader
	salvage bool
	fs      vfs.FS // default vfs.Default; tests give a FaultFS
	segment int64  // log segment size; 0: the log's default
	// retention is what the log keeps once a snapshot covers it.
	retention LogRetention
	noDelay   bool // no group commit delay (tests, benchmarks)
	// ungated delivers ops to change streams at commit, before the log
	// has them (benchmarks: what durable-before-delivered costs).
	ungated bool
}

// defaults fills in the zero values.
func (c *durableConfig) defaults() {
	if c.auto.LogRatio == 0 {
		c.auto.LogRatio = DefaultSnapshotLogRatio
	}
	if c.auto.MinLogBytes == 0 {
		c.auto.MinLogBytes = DefaultSnapshotMinLogBytes
	}
}

// restore loads an in-memory DB from a backup (WithRestore without
// WithDir).
func (db *DB) restore(cfg durableConfig) error {
	start := db.clock.Now()
	p := &persistence{db: db, cfg: cfg}
	l := newLoader(db)
	l.salvage = cfg.salvage
	if err := p.loadSnapshot(l, cfg.restore, "backup"); err != nil {
		return err
	}
	if err := l.finishLoad(); err != nil {
		return fmt.Errorf("ttldb: backup: %w", err)
	}
	p.recovery.SnapshotSeq, p.recovery.SnapshotDocuments, p.recovery.LastSeq = l.lastSeq, l.docs, l.lastSeq
	p.recovery.Orphaned, p.recovery.SalvageNotes = l.orphans, l.notes
	p.recovery.Duration = db.clock.Now().Sub(start)
	db.restored = p.recovery
	return nil
}

// WithDir implements ttldb.WithDir, whose documentation is the contract.
func WithDir(path string) Option {
	return func(cfg *config) error {
		if path == "" {
			return fmt.Errorf("%w: WithDir: empty path", ErrInvalidOptions)
		}
		cfg.durable.dir = path
		return nil
	}
}

// WithSync implements ttldb.WithSync, whose documentation is the contract.
func WithSync(p SyncPolicy) Option {
	return func(cfg *config) error {
		if p > SyncNever {
			return fmt.Errorf("%w: WithSync: unknown policy %d", ErrInvalidOptions, p)
		}
		cfg.durable.sync = p
		cfg.needsDir = "WithSync"
		return nil
	}
}

// WithAutoSnapshot implements ttldb.WithAutoSnapshot, whose documentation is the contract.
func WithAutoSnapshot(a AutoSnapshot) Option {
	return func(cfg *config) error {
		if a.LogRatio < 0 || a.MinLogBytes < 0 {
			return fmt.Errorf("%w: WithAutoSnapshot: negative LogRatio or MinLogBytes", ErrInvalidOptions)
		}
		if a.LogRatio == 0 {
			a.LogRatio = DefaultSnapshotLogRatio
		}
		if a.MinLogBytes == 0 {
			a.MinLogBytes = DefaultSnapshotMinLogBytes
		}
		cfg.durable.auto = a
		cfg.needsDir = "WithAutoSnapshot"
		return nil
	}
}

// WithRestore implements ttldb.WithRestore, whose documentation is the contract.
func WithRestore(r io.Reader) Option {
	return func(cfg *config) error {
		if r == nil {
			return fmt.Errorf("%w: WithRestore: nil reader", ErrInvalidOptions)
		}
		cfg.durable.restore = r
		return nil
	}
}

// WithSalvage implements ttldb.WithSalvage, whose documentation is the contract.
func WithSalvage() Option {
	return func(cfg *config) error {
		cfg.durable.salvage = true
		return nil
	}
}

// withFS makes the DB's data directory live in fsys (tests: a FaultFS).
func withFS(fsys vfs.FS) Option {
	return func(cfg *config) error {
		cfg.durable.fs = fsys
		return nil
	}
}

// withUngatedStreams lets change streams deliver an op at commit, before
// the log holds it, as before durable-before-delivered (benchmarks measure
// what the rule costs; never for users).
func withUngatedStreams() Option {
	return func(cfg *config) error {
		cfg.durable.ungated = true
		return nil
	}
}

// withoutCommitDelay turns the log's group commit delay off (tests and
// benchmarks compare).
func withoutCommitDelay() Option {
	return func(cfg *config) error {
		cfg.durable.noDelay = true
		return nil
	}
}

// withLogSegmentSize sets the log's segment size (tests).
func withLogSegmentSize(n int64) Option {
	return func(cfg *config) error {
		cfg.durable.segment = n
		return nil
	}
}

// RecoveryInfo describes what Open loaded from a data directory or a
// backup (DB.Recovery).
type RecoveryInfo struct {
	// Snapshot is the file name of the snapshot loaded ("" if none).
	Snapshot string
	// SnapshotSeq is the op the snapshot is consistent as of.
	SnapshotSeq uint64
	// SnapshotDocuments counts the documents it held.
	SnapshotDocuments int
	// LogOps counts the ops applied from the log after the snapshot.
	LogOps int
	// LastSeq is the sequence number of the last op loaded.
	LastSeq uint64
	// TruncatedBytes counts the bytes of a torn log tail that Open cut
	// off, and Truncations describes each cut (also logged as a warning).
	// A torn tail is a last record that fails its checks with nothing
	// valid after it: a crash in the middle of an append leaves one, and
	// that write was never acknowledged under SyncAlways. But damage to
	// the last record on the disk (a flipped byte) looks the same and is
	// cut too, though that record was acknowledged, fsynced even: the cut
	// then drops the writes that record held (under SyncAlways those of
	// one group commit, under the other policies up to about 10 ms of
	// writes). Truncations names the segment and offset of each cut.
	TruncatedBytes int64
	Truncations    []string
	// SkippedLogBytes counts the bytes of damaged log records Open
	// passed over because the snapshot, loaded whole, holds every op in
	// them: nothing is lost, and the later records are loaded. Skips
	// describes each stretch (also logged as a warning). The files keep
	// them until the next snapshot drops that part of the log.
	SkippedLogBytes int64
	Skips           []string
	// SalvagedBlocks and SalvagedBytes count what WithSalvage skipped in
	// a damaged snapshot; SalvagedLogBytes what it cut from a damaged log.
	SalvagedBlocks   int
	SalvagedBytes    int64
	SalvagedLogBytes int64
	// Orphaned counts, per collection name, the documents (time-series
	// buckets, for such a collection) WithSalvage found in the snapshot
	// but did not load because the collection's definition (its indexes,
	// TTL, validator) was lost with its block: they would have been
	// loaded without their indexes, and documents of a TTL index would
	// never expire. Later writes of the collection in the log are not
	// loaded either (counted too). A collection of a version 1 snapshot
	// is named "collection number n". nil when none.
	Orphaned map[string]int
	// RebuiltFromLog is set when WithSalvage found the snapshot damaged
	// and the log holding every op from the first: the DB was then loaded
	// from the log alone, and lost nothing.
	RebuiltFromLog bool
	// SalvageNotes says what else WithSalvage found and did (a damaged
	// file header read as the version its checksum says, a header block
	// lost, a missing log or missing log segments), one line each.
	SalvageNotes []string
	// Duration is how long loading took, by the DB's clock.
	Duration time.Duration
}

// Recovery implements ttldb.DB.Recovery, whose documentation is the contract.
func (db *DB) Recovery() RecoveryInfo {
	if db.persist == nil {
		return db.restored
	}
	return db.persist.recovery
}

// persistence is a DB's data directory.
type persistence struct {
	db   *DB
	fs   vfs.FS
	dir  string
	cfg  durableConfig
	lock io.Closer
	log  *wal.Log
	sink *logSink
	id   wal.ID // the directory's identity, which its segments and snapshots carry

	recovery RecoveryInfo

	snapMu    sync.Mutex    // serializes snapshots
	snapBytes atomic.Int64  // size of the current snapshot (0: none)
	snapSeq   atomic.Uint64 // the op the current snapshot is as of
	// segStarts caches the first op's time of log segments (retention's
	// age), under snapMu; firstOp the log's first op, per first segment
	// (base, seq).
	segStarts map[uint64]time.Time
	firstOp   atomic.Pointer[[2]uint64]
	snapshots atomic.Int64 // written since Open
	closing   chan struct{}
	wake      chan struct{} // one slot: an automatic snapshot is due
	done      chan struct{} // closed when the snapshotter has returned
}

const (
	snapshotPrefix = "snapshot-"
	snapshotSuffix = ".ttldb"
	snapshotTemp   = "snapshot.ttldb.tmp"
	logDirName     = "log"
	lockName       = "LOCK"
)

// snapshotName is the file name of the snapshot consistent as of seq.
func snapshotName(seq uint64) string {
	return fmt.Sprintf("%s%020d%s", snapshotPrefix, seq, snapshotSuffix)
}

// parseSnapshotName returns the sequence number in a snapshot's name.
func parseSnapshotName(name string) (uint64, bool) {
	if !strings.HasPrefix(name, snapshotPrefix) || !strings.HasSuffix(name, snapshotSuffix) {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, snapshotPrefix), snapshotSuffix), 10, 64)
	return n, err == nil
}

func (p *persistence) join(name string) string {
	if _, ok := p.fs.(vfs.OS); ok {
		return filepath.Join(p.dir, name)
	}
	return path.Join(p.dir, name)
}

// openDir loads db from its data directory (or cfg.restore) and attaches
// the log. db is not yet shared: its monitor has not started.
func (db *DB) openDir(cfg durableConfig) (err error) {
	start := db.clock.Now()
	cfg.defaults()
	if cfg.fs == nil {
		cfg.fs = vfs.Default
	}
	p := &persistence{db: db, fs: cfg.fs, dir: cfg.dir, cfg: cfg, closing: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{})}
	if err := vfs.MkdirAllDurable(p.fs, p.dir); err != nil {
		return fmt.Errorf("ttldb: data directory %s: %w", p.dir, err)
	}
	lock, err := p.fs.Lock(p.join(lockName))
	if err != nil {
		return fmt.Errorf("ttldb: data directory %s: %w", p.dir, err)
	}
	p.lock = lock
	defer func() {
		if err != nil {
			if p.log != nil {
				p.log.Close()
			}
			p.lock.Close()
		}
	}()
	names, err := p.fs.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("ttldb: data directory %s: %w", p.dir, err)
	}
	var snaps []uint64
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			_ = p.fs.Remove(p.join(n)) // a snapshot cut short
		}
		if seq, ok := parseSnapshotName(n); ok {
			snaps = append(snaps, seq)
		}
	}
	slices.Sort(snaps)

	l := newLoader(db)
	l.salvage = cfg.salvage
	rec := &p.recovery
	switch {
	case cfg.restore != nil:
		if len(snaps) > 0 || slices.Contains(names, logDirName) || slices.Contains(names, markerName) {
			return fmt.Errorf("%w: WithRestore: data directory %s already holds a DB", ErrInvalidOptions, p.dir)
		}
		if err := p.loadSnapshot(l, cfg.restore, "backup"); err != nil {
			return err
		}
	case len(snaps) > 0:
		name := snapshotName(snaps[len(snaps)-1])
		f, err := p.fs.OpenFile(p.join(name), os.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("ttldb: %s: %w", p.join(name), err)
		}
		err = p.loadSnapshot(l, f, name)
		f.Close()
		if err != nil {
			return err
		}
		rec.Snapshot = name
		if size, err := fileSize(p.fs, p.join(name)); err == nil {
			p.snapBytes.Store(size)
		}
	}
	rec.SnapshotSeq, rec.SnapshotDocuments = l.lastSeq, l.docs
	p.snapSeq.Store(l.lastSeq)

	marked := slices.Contains(names, markerName)
	if rec.Snapshot != "" || marked && cfg.restore == nil {
		// A directory's snapshot is written by a DB whose log exists, and
		// the log keeps a segment after every snapshot; the marker is
		// written once the directory's first log segment is on disk:
		// either without a segment means the log was removed.
		segs, err := wal.Segments(p.fs, p.join(logDirName))
		if err != nil {
			return fmt.Errorf("ttldb: log %s: %w", p.join(logDirName), err)
		}
		if len(segs) == 0 {
			if !cfg.salvage {
				why := fmt.Sprintf("snapshot %s is as of op %d, and a log always follows a snapshot", rec.Snapshot, l.lastSeq)
				if rec.Snapshot == "" {
					why = fmt.Sprintf("%s says the directory held a DB, whose log is all it had", markerName)
				}
				return fmt.Errorf("ttldb: log %s: %w: the log is missing (%s); %s", p.join(logDirName), ErrCorrupt, why, p.hint())
			}
			l.notes = append(l.notes, "the log was missing: a new one was started")
		}
	}
	if err := p.openLog(l); err != nil {
		return err
	}
	if !marked {
		if err := p.writeMarker(); err != nil {
			return fmt.Errorf("ttldb: data directory %s: %w", p.dir, err)
		}
	}
	if err := l.finishLoad(); err != nil {
		return fmt.Errorf("ttldb: data directory %s: %w; %s", p.dir, err, p.hint())
	}
	rec.LastSeq = l.lastSeq
	rec.Duration = db.clock.Now().Sub(start)
	rec.Orphaned = l.orphans
	rec.SalvageNotes = l.notes
	if rec.TruncatedBytes > 0 || rec.SkippedLogBytes > 0 || rec.SalvagedBlocks > 0 || rec.SalvagedLogBytes > 0 || l.lossy || len(l.notes) > 0 {
		db.logger.Warn("ttldb: recovered a damaged data directory", "dir", p.dir,
			"truncated_bytes", rec.TruncatedBytes, "truncations", strings.Join(rec.Truncations, "; "),
			"skipped_log_bytes", rec.SkippedLogBytes, "skips", strings.Join(rec.Skips, "; "),
			"salvaged_blocks", rec.SalvagedBlocks, "salvaged_bytes", rec.SalvagedBytes, "salvaged_log_bytes", rec.SalvagedLogBytes,
			"orphaned", rec.Orphaned, "rebuilt_from_log", rec.RebuiltFromLog, "notes", strings.Join(rec.SalvageNotes, "; "))
	}

	p.sink = &logSink{log: p.log, always: cfg.sync == SyncAlways, versions: &db.writes, clock: db.clock,
		failedCh: make(chan struct{}), onDurable: db.ops.gateRaised}
	p.sink.durable.Store(l.lastSeq) // what was loaded is on the disk
	if !p.sink.always {
		p.sink.startWriter()
	}
	if !cfg.auto.Disabled {
		p.sink.onWrite = p.maybeSnapshot
	}
	db.persist = p
	db.ops.attach(p.sink)
	// Older snapshots (a crash after a newer one was renamed in, before
	// they were removed) go now.
	for _, s := range snaps[:max(len(snaps)-1, 0)] {
		_ = p.fs.Remove(p.join(snapshotName(s)))
	}
	if cfg.restore != nil {
		if err := p.snapshot(); err != nil {
			p.sink.stopWriter()
			db.persist = nil
			return fmt.Errorf("ttldb: writing the restored DB to %s: %w", p.dir, err)
		}
	}
	if salvaged := cfg.salvage && cfg.restore == nil && (rec.SalvagedBlocks > 0 || rec.SalvagedLogBytes > 0 || rec.SkippedLogBytes > 0 ||
		l.lossy || len(l.notes) > 0 || len(l.orphans) > 0); salvaged {
		// What salvage loaded becomes the directory's state: a snapshot
		// of it replaces the damaged one and drops the log it covers, so
		// that the next Open, without WithSalvage, finds no damage.
		if err := p.snapshot(); err != nil {
			p.sink.stopWriter()
			db.persist = nil
			return fmt.Errorf("ttldb: writing the salvaged DB to %s: %w", p.dir, err)
		}
		rec.SalvageNotes = append(rec.SalvageNotes, fmt.Sprintf("the salvaged DB was written as the directory's snapshot %s; the damaged files it replaces were removed", snapshotName(p.db.ops.lastSeq())))
	}
	go p.snapshotter()
	return nil
}

// fileSize returns the size of a file of fsys.
func fileSize(fsys vfs.FS, name string) (int64, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Size()
}

// recoverHint is what an error about a damaged directory tells the user to
// do.
const recoverHint = "the DB was not opened; copy the directory, then open the copy with WithSalvage to load what passes its checksums (see the README, Durability)"

// salvageHint is what it says when WithSalvage was given.
const salvageHint = "the DB was not opened: WithSalvage cannot load this either (see the README, Durability)"

// hint is the advice an error about a damaged directory ends with.
func (p *persistence) hint() string {
	if p.cfg.salvage {
		return salvageHint
	}
	return recoverHint
}

// loadSnapshot loads a snapshot (or a backup) from r.
func (p *persistence) loadSnapshot(l *loader, r io.Reader, name string) error {
	var sr *snapfile.Reader
	var err error
	if p.cfg.salvage {
		sr, err = snapfile.NewSalvageReader(r)
	} else {
		sr, err = snapfile.NewReader(r)
	}
	if err == nil {
		err = l.loadSnapshot(sr)
	}
	if err != nil {
		if errors.Is(err, errs.ErrCorrupt) {
			return fmt.Errorf("ttldb: %s: %w; %s", name, err, p.hint())
		}
		return fmt.Errorf("ttldb: %s: %w", name, err)
	}
	if p.cfg.salvage {
		p.recovery.SalvagedBlocks, p.recovery.SalvagedBytes = sr.Skipped()
	}
	return nil
}

// openLog opens the log, replays what follows the snapshot, and keeps it
// open for appending.
func (p *persistence) openLog(l *loader) error {
	l.startPipeline()
	defer l.endPipeline()
	dir := p.join(logDirName)
	opts := wal.Options{Sync: p.cfg.sync, SegmentSize: p.cfg.segment, NewTimer: p.db.clock.NewTimer, Now: p.db.clock.Now, NoCommitDelay: p.cfg.noDelay}
	if p.cfg.restore == nil {
		// The snapshot's directory identity is the log's; a restored DB
		// gets a new one (its log is new).
		opts.ID = l.snapshotID
		if !l.lossy {
			// A snapshot loaded whole holds every op up to its end:
			// damage in log records of those ops loses nothing.
			opts.Covered, opts.FirstSeq = l.endSeq, recordFirstSeq
		}
	}
	for attempt := 0; ; attempt++ {
		log, err := wal.Open(p.fs, dir, opts)
		if err == nil {
			p.salvageFromLog(l, log)
			before := l.lastSeq
			err = log.Replay(l.lastSeq+1, func(seq uint64, payload []byte) error {
				return decodeRecord(payload, func(v uint64) { l.maxVer = max(l.maxVer, v) }, func(op Op) error {
					if op.Seq <= l.lastSeq {
						return nil // the snapshot holds it
					}
					return l.apply(op)
				})
			})
			// The inserter's error, if any, is about an op before
			// anything the replay read since: it is the one to report.
			if serr := l.settle(); serr != nil {
				err = serr
			}
			p.recovery.LogOps += int(l.lastSeq - before)
			if err == nil {
				p.log = log
				p.id = log.ID()
				for _, c := range log.Recovery().Cuts {
					p.recovery.TruncatedBytes += c.Bytes
				}
				if s := log.Recovery().String(); s != "" {
					p.recovery.Truncations = append(p.recovery.Truncations, s)
				}
				for _, c := range log.Recovery().Skips {
					p.recovery.SkippedLogBytes += c.Bytes
					p.recovery.Skips = append(p.recovery.Skips, c.SkipString())
				}
				return nil
			}
			log.Close()
		}
		if !errors.Is(err, errs.ErrCorrupt) {
			return fmt.Errorf("ttldb: log %s: %w", dir, err)
		}
		if !p.cfg.salvage || attempt > 0 || !isLogDamage(err) {
			return fmt.Errorf("ttldb: log %s: %w; %s", dir, err, p.hint())
		}
		// Salvage: cut the log at its first damage and load it again
		// (the loader keeps what it applied: the ops after the cut are
		// beyond what Replay will give again).
		res, rerr := wal.RepairCovered(p.fs, dir, opts)
		if rerr != nil {
			return fmt.Errorf("ttldb: log %s: repair: %w", dir, rerr)
		}
		p.recovery.SalvagedLogBytes += res.DroppedBytes
	}
}

// salvageFromLog, under WithSalvage, decides where the log's replay
// starts. When the snapshot lost something and the log holds every op
// from the first up to the snapshot's end at least, the DB is rebuilt from
// the log alone: nothing is lost. When the log starts after the op that
// follows the snapshot (its oldest segments are gone), the replay starts
// at the log's first op, and the gap is reported.
func (p *persistence) salvageFromLog(l *loader, log *wal.Log) {
	if !p.cfg.salvage || p.cfg.restore != nil {
		return
	}
	if l.lossy && log.FirstSeq() == 1 && log.LastSeq() >= max(l.endSeq, l.lastSeq, 1) {
		l.reset()
		p.recovery.RebuiltFromLog = true
		p.recovery.SnapshotSeq, p.recovery.SnapshotDocuments = 0, 0
		l.notes = append(l.notes, "the snapshot was damaged and the log holds every op from the first: the DB was rebuilt from the log alone")
		return
	}
	if first := log.FirstSeq(); first > l.lastSeq+1 && first > 1 {
		l.notes = append(l.notes, fmt.Sprintf("the log starts at op %d, the snapshot ends at op %d: ops %d to %d are lost", first, l.lastSeq, l.lastSeq+1, first-1))
		l.lastSeq = first - 1
	}
}

// markerName is the file that says a directory holds a DB: written once
// its first log segment is on disk, it lets Open tell a directory whose
// whole log was removed (before any snapshot) from a new one. It holds the
// directory's identity, in hex, for people; Open reads only its presence.
const markerName = "IDENTITY"

// writeMarker writes markerName (to a temporary file, fsynced, renamed,
// the directory fsynced), after the log's first segment is durable: a
// crash before leaves a directory that opens as new, never one refused.
func (p *persistence) writeMarker() error {
	tmp := p.join(markerName + ".tmp")
	f, err := p.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, vfs.FilePerm)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%x\n", p.id[:])
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = p.fs.Rename(tmp, p.join(markerName))
	}
	if err == nil {
		err = p.fs.SyncDir(p.dir)
	}
	return err
}

// isLogDamage reports whether err is the log's own corruption (which
// Repair can cut away) rather than an op that does not apply.
func isLogDamage(err error) bool {
	var ce *wal.CorruptError
	return errors.As(err, &ce)
}

// maybeSnapshot is the sink's check after each write: it wakes the
// snapshotter once the log has grown enough.
func (p *persistence) maybeSnapshot(logBytes int64) {
	a := p.cfg.auto
	limit := max(a.MinLogBytes, int64(a.LogRatio*float64(p.snapshotBytes())))
	if logBytes < limit {
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *persistence) snapshotBytes() int64 { return p.snapBytes.Load() }

// snapshotter takes the automatic snapshots, until Close.
func (p *persistence) snapshotter() {
	defer close(p.done)
	for {
		select {
		case <-p.closing:
			return
		case <-p.wake:
			if err := p.snapshot(); err != nil && !errors.Is(err, errSnapshotClosing) {
				p.db.logger.Error("ttldb: automatic snapshot failed; the log keeps growing until one succeeds", "dir", p.dir, "err", err)
			}
		}
	}
}

// errSnapshotClosing is a snapshot's error when Close cut it short: the
// DB is closed, as for any call after Close.
var errSnapshotClosing = fmt.Errorf("%w: snapshot abandoned: the DB is closing", ErrClosed)

// snapshot writes a snapshot into the directory, then drops what it makes
// useless: the older snapshot and the log before it. The file is written
// under a temporary name, fsynced, renamed, and the directory fsynced;
// a crash at any point leaves the previous snapshot and the log intact.
func (p *persistence) snapshot() (err error) {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	if err := p.sink.err(); err != nil {
		return err
	}
	tmp := p.join(snapshotTemp)
	f, err := p.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, vfs.FilePerm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = p.fs.Remove(tmp)
		}
	}()
	info, err := p.db.writeSnapshotAbortable(f, p.closing)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Every op the snapshot holds is in the log first, fsynced: a write
	// that committed before or during the snapshot may not have reached
	// the log yet (its writer flushes after releasing its locks), and a
	// crash after the rename would otherwise leave the snapshot ahead of
	// the log: the DB whole, but those ops in no log, where a change
	// stream resumed across the restart could not find them.
	if err := p.sink.flush(info.endSeq); err != nil {
		return err
	}
	if err := p.log.Sync(); err != nil {
		return p.sink.fail(err)
	}
	name := snapshotName(info.endSeq)
	if err := p.fs.Rename(tmp, p.join(name)); err != nil {
		return err
	}
	if err := p.fs.SyncDir(p.dir); err != nil {
		return err
	}
	// The new snapshot is durable: what it covers can go.
	p.snapBytes.Store(info.bytes)
	p.snapSeq.Store(info.endSeq)
	p.snapshots.Add(1)
	p.sink.bytes.Store(0)
	names, _ := p.fs.ReadDir(p.dir)
	for _, n := range names {
		if seq, ok := parseSnapshotName(n); ok && seq != info.endSeq {
			_ = p.fs.Remove(p.join(n))
		}
	}
	_ = p.fs.SyncDir(p.dir)
	if err := p.log.TruncateFront(p.retainFrom(info.endSeq + 1)); err != nil {
		return fmt.Errorf("dropping the log before the snapshot: %w", err)
	}
	return nil
}

// Snapshot implements ttldb.DB.Snapshot, whose documentation is the contract.
func (db *DB) Snapshot(ctx context.Context) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if db.persist == nil {
		return fmt.Errorf("%w: Snapshot: the DB has no data directory (WithDir)", ErrInvalidOptions)
	}
	return db.persist.snapshot()
}

// close stops the snapshotter (abandoning a snapshot under way), writes
// and fsyncs what the log holds, and releases the directory.
func (p *persistence) close() error {
	close(p.closing)
	<-p.done
	p.snapMu.Lock() // waits for a Snapshot call under way to give up
	defer p.snapMu.Unlock()
	p.sink.stopWriter()
	// Closed first: a write that raced with Close and commits after the
	// flush below gets ErrClosed, never an acknowledgement.
	p.sink.closed.Store(true)
	err := p.sink.flush(p.sink.pendingSeq.Load())
	if cerr := p.log.Close(); err == nil && cerr != nil && !errors.Is(cerr, errs.ErrLogFailed) {
		err = cerr
	}
	if lerr := p.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// writable returns why the DB accepts no write: ErrClosed, or the log's
// failure (ErrLogFailed).
func (db *DB) writable() error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if p := db.persist; p != nil {
		return p.sink.err()
	}
	return nil
}

// durable makes the ops of a write that just returned (*err == nil) as
// durable as the sync policy promises, setting *err if the log fails. A
// write method defers it; it does nothing for an in-memory DB.
func (db *DB) durable(err *error) {
	p := db.persist
	if p == nil {
		return
	}
	if serr := p.sink.sync(); serr != nil && *err == nil {
		*err = serr
	}
}

// logErr returns the log's failure (nil for an in-memory DB).
func (db *DB) logErr() error {
	if p := db.persist; p != nil {
		return p.sink.err()
	}
	return nil
}

// syncLog makes every op committed so far as durable as the policy
// promises (nil for an in-memory DB).
func (db *DB) syncLog() error {
	if p := db.persist; p != nil {
		return p.sink.sync()
	}
	return nil
}

// metrics reads the directory's figures for Metrics.
func (p *persistence) metrics() DurabilityMetrics {
	st := p.log.Stats()
	first, retained := p.retained()
	syncs := DurationHistogram{Sum: st.SyncDurationSum, Buckets: make([]HistogramBucket, len(wal.SyncDurationBounds))}
	for i, ub := range wal.SyncDurationBounds {
		syncs.Count += st.SyncDurations[i]
		syncs.Buckets[i] = HistogramBucket{UpperBound: ub, Count: syncs.Count}
	}
	syncs.Count += st.SyncDurations[len(wal.SyncDurationBounds)]
	rec := &p.recovery
	return DurabilityMetrics{LogRecords: st.Appends, LogBytes: st.Bytes, LogSyncs: st.Syncs, LogSize: st.Size,
		Snapshots: p.snapshots.Load(), SnapshotBytes: p.snapBytes.Load(), RetainedFromSeq: first, RetainedLogBytes: retained,
		LogSegments: st.Segments, LogSyncDurations: syncs,
		RecoveredLogOps: rec.LogOps, RecoveryDuration: rec.Duration, RecoveryTruncatedBytes: rec.TruncatedBytes}
}
