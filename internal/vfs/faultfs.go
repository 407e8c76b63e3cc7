package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/ttldb/ttldb/internal/errs"
)

// FaultFS is an in-memory FS for tests that knows what a power cut would
// keep. It tracks, for every file, its data as of its last successful
// Sync, and for every directory, its entries as of its last successful
// SyncDir; PowerCut drops everything else, as a machine losing power
// would with a file system that promises only what fsync promises. It also
// makes calls fail on demand (Inject, SetDiskSize) and counts them
// (Stats).
//
// Names are slash-separated; relative and absolute names both resolve
// from one root directory, which always exists. FaultFS is safe for
// concurrent use. It is for tests: it keeps everything in memory.
type FaultFS struct {
	mu       sync.Mutex
	root     *memNode
	gen      uint64 // bumped by PowerCut: handles of an older gen are dead
	locks    map[string]bool
	faults   []*faultState
	diskSize int64 // 0: unlimited
	stats    FaultStats
	syncHook func(name string)
}

// memNode is a file or a directory.
type memNode struct {
	dir  bool
	mode fs.FileMode
	// A file's data now and as of its last Sync. They never share a
	// backing array.
	data, synced []byte
	// A directory's entries now and as of its last SyncDir.
	entries, syncedEntries map[string]*memNode
}

func newDir(mode fs.FileMode) *memNode {
	return &memNode{dir: true, mode: mode, entries: map[string]*memNode{}, syncedEntries: map[string]*memNode{}}
}

// FaultStats counts the calls a FaultFS received, failed ones included.
type FaultStats struct {
	Writes       int64 // File.Write calls
	BytesWritten int64 // bytes File.Write stored
	Syncs        int64 // File.Sync calls
	DirSyncs     int64 // SyncDir calls
	Creates      int64 // files created by OpenFile or Lock
	Renames      int64 // Rename calls that succeeded
	Removes      int64 // Remove calls that succeeded
	Faults       int64 // calls an injected fault or the disk size failed
}

// FaultOp names the kind of call a Fault applies to.
type FaultOp int

// The calls a Fault can make fail.
const (
	FaultWrite   FaultOp = iota + 1 // File.Write
	FaultSync                       // File.Sync
	FaultSyncDir                    // FS.SyncDir
	FaultCreate                     // OpenFile creating a file (as in a directory not writable)
)

// Fault makes calls of one kind fail.
type Fault struct {
	// Op is the kind of call that fails.
	Op FaultOp
	// Match, when set, limits the fault to the files (for FaultSyncDir,
	// directories) whose cleaned, slash-separated name it accepts.
	Match func(name string) bool
	// After lets that many bytes (FaultWrite) or calls (FaultSync,
	// FaultSyncDir) through before the fault fires; 0 fires at the first
	// call. A write that crosses the limit stores the bytes up to it and
	// fails, as a write cut short does.
	After int64
	// Err is the error the failed call returns, wrapped in an
	// *fs.PathError; nil means syscall.EIO.
	Err error
	// Once disarms the fault after it fired once. Without it every later
	// matching call fails too, as on a disk that died.
	Once bool
}

type faultState struct {
	Fault
	used  int64 // bytes or calls let through so far
	fired bool
}

// NewFaultFS returns an empty FaultFS: a root directory and nothing else.
func NewFaultFS() *FaultFS {
	return &FaultFS{root: newDir(DirPerm), locks: map[string]bool{}}
}

// Inject arms a fault. Faults stay armed until ClearFaults (or, with
// Once, until they fired).
func (m *FaultFS) Inject(f Fault) {
	if f.Err == nil {
		f.Err = syscall.EIO
	}
	m.mu.Lock()
	m.faults = append(m.faults, &faultState{Fault: f})
	m.mu.Unlock()
}

// SetDiskSize makes the disk hold n bytes of file data in all: a write
// that would take the sum of the files' sizes past n stores what fits and
// fails with an error matching ErrNoSpace (syscall.ENOSPC). n <= 0 means
// unlimited, the default.
func (m *FaultFS) SetDiskSize(n int64) {
	m.mu.Lock()
	m.diskSize = max(n, 0)
	m.mu.Unlock()
}

// ClearFaults disarms every fault and lifts the disk size.
func (m *FaultFS) ClearFaults() {
	m.mu.Lock()
	m.faults = nil
	m.diskSize = 0
	m.mu.Unlock()
}

// SetSyncHook makes every File.Sync call hook with the file's name before
// it does anything else, without FaultFS's lock held: a test can block a
// sync there to let other goroutines pile up behind it. nil removes it.
func (m *FaultFS) SetSyncHook(hook func(name string)) {
	m.mu.Lock()
	m.syncHook = hook
	m.mu.Unlock()
}

// Stats returns the counts of calls so far.
func (m *FaultFS) Stats() FaultStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// PowerCut simulates the loss of power: every directory's entries go back
// to what they were at its last SyncDir, every file's data to what it was
// at its last Sync, and everything that is no longer reachable is gone.
// Locks are released (the process died) and every open File is dead:
// its calls fail with an error wrapping fs.ErrClosed. Faults stay armed.
func (m *FaultFS) PowerCut() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.locks = map[string]bool{}
	var revert func(d *memNode)
	revert = func(d *memNode) {
		d.entries = cloneEntries(d.syncedEntries)
		for _, n := range d.entries {
			if n.dir {
				revert(n)
			} else {
				n.data = clone(n.synced)
			}
		}
	}
	revert(m.root)
}

// Crash simulates the death of the process (SIGKILL) without a power cut:
// every open File and lock dies as at PowerCut, but everything written
// stays, synced or not, as the operating system keeps it. What the
// process kept in its own memory is what is lost.
func (m *FaultFS) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.locks = map[string]bool{}
}

// ReadFile returns a copy of the current data of file name.
func (m *FaultFS) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name, "readfile")
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: syscall.EISDIR}
	}
	return clone(n.data), nil
}

// WriteFile sets the data of file name (creating it with mode FilePerm,
// and its missing parents with DirPerm) and makes it durable at once, with
// every directory entry on its path: a test's way to lay out what a disk
// holds. No fault applies.
func (m *FaultFS) WriteFile(name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parts, ok := split(name)
	if !ok || len(parts) == 0 {
		return &fs.PathError{Op: "writefile", Path: name, Err: fs.ErrInvalid}
	}
	d := m.root
	for i, p := range parts {
		n := d.entries[p]
		last := i == len(parts)-1
		switch {
		case n == nil && last:
			n = &memNode{mode: FilePerm}
		case n == nil:
			n = newDir(DirPerm)
		case n.dir && last:
			return &fs.PathError{Op: "writefile", Path: name, Err: syscall.EISDIR}
		case !n.dir && !last:
			return &fs.PathError{Op: "writefile", Path: name, Err: syscall.ENOTDIR}
		}
		d.entries[p] = n
		d.syncedEntries[p] = n
		d = n
	}
	d.data = clone(data)
	d.synced = clone(data)
	return nil
}

// Mode returns the permission bits name was created with.
func (m *FaultFS) Mode(name string) (fs.FileMode, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name, "stat")
	if err != nil {
		return 0, err
	}
	return n.mode, nil
}

// split cleans name into its path elements; the root has none.
func split(name string) ([]string, bool) {
	p := path.Clean("/" + filepath.ToSlash(name))
	if strings.HasPrefix(filepath.ToSlash(name), "../") || name == ".." {
		return nil, false
	}
	if p == "/" {
		return nil, true
	}
	return strings.Split(p[1:], "/"), true
}

// cleanName is the name faults and locks see.
func cleanName(name string) string {
	return path.Clean("/" + filepath.ToSlash(name))
}

// lookup finds name's node among the current entries.
func (m *FaultFS) lookup(name, op string) (*memNode, error) {
	parts, ok := split(name)
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	n := m.root
	for _, p := range parts {
		if !n.dir {
			return nil, &fs.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
		}
		n = n.entries[p]
		if n == nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
	}
	return n, nil
}

// parent finds the directory that holds (or would hold) name.
func (m *FaultFS) parent(name, op string) (*memNode, string, error) {
	parts, ok := split(name)
	if !ok || len(parts) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	d, err := m.lookup(strings.Join(parts[:len(parts)-1], "/"), op)
	if err != nil {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	if !d.dir {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
	}
	return d, parts[len(parts)-1], nil
}

// OpenFile opens or creates a file; see FS.
func (m *FaultFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parent(name, "open")
	if err != nil {
		return nil, err
	}
	n := dir.entries[base]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case n == nil:
		if _, ferr := m.callFault(FaultCreate, cleanName(name), 1); ferr != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: ferr}
		}
		n = &memNode{mode: perm.Perm()}
		dir.entries[base] = n
		m.stats.Creates++
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case n.dir:
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if writable && flag&os.O_TRUNC != 0 {
		n.data = nil
	}
	return &memFile{fs: m, n: n, name: cleanName(name), gen: m.gen, flag: flag}, nil
}

// MkdirAll creates name and its missing parents; see FS.
func (m *FaultFS) MkdirAll(name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parts, ok := split(name)
	if !ok {
		return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrInvalid}
	}
	d := m.root
	for _, p := range parts {
		n := d.entries[p]
		if n == nil {
			n = newDir(perm.Perm())
			d.entries[p] = n
		} else if !n.dir {
			return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.ENOTDIR}
		}
		d = n
	}
	return nil
}

// Rename moves oldname to newname, replacing a file there; see FS.
func (m *FaultFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	od, ob, err := m.parent(oldname, "rename")
	if err != nil {
		return err
	}
	nd, nb, err := m.parent(newname, "rename")
	if err != nil {
		return err
	}
	n := od.entries[ob]
	if n == nil {
		return &fs.PathError{Op: "rename", Path: oldname, Err: fs.ErrNotExist}
	}
	if t := nd.entries[nb]; t != nil && t.dir {
		return &fs.PathError{Op: "rename", Path: newname, Err: syscall.EISDIR}
	}
	delete(od.entries, ob)
	nd.entries[nb] = n
	m.stats.Renames++
	return nil
}

// Remove removes a file or an empty directory; see FS.
func (m *FaultFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, b, err := m.parent(name, "remove")
	if err != nil {
		return err
	}
	n := d.entries[b]
	if n == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.dir && len(n.entries) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(d.entries, b)
	m.stats.Removes++
	return nil
}

// ReadDir lists a directory's current entries, sorted; see FS.
func (m *FaultFS) ReadDir(name string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.lookup(name, "readdir")
	if err != nil {
		return nil, err
	}
	if !d.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR}
	}
	names := make([]string, 0, len(d.entries))
	for n := range d.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// SyncDir makes a directory's current entries durable; see FS.
func (m *FaultFS) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.lookup(name, "syncdir")
	if err != nil {
		return err
	}
	if !d.dir {
		return &fs.PathError{Op: "syncdir", Path: name, Err: syscall.ENOTDIR}
	}
	m.stats.DirSyncs++
	if _, ferr := m.callFault(FaultSyncDir, cleanName(name), 1); ferr != nil {
		return &fs.PathError{Op: "syncdir", Path: name, Err: ferr}
	}
	d.syncedEntries = cloneEntries(d.entries)
	return nil
}

// Lock takes name's lock within this FaultFS (creating the file, which
// like any create is durable only after SyncDir); see FS. PowerCut
// releases every lock.
func (m *FaultFS) Lock(name string) (io.Closer, error) {
	f, err := m.OpenFile(name, os.O_RDWR|os.O_CREATE, FilePerm)
	if err != nil {
		return nil, err
	}
	f.Close()
	key := cleanName(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[key] {
		return nil, fmt.Errorf("%w: %s is held", errs.ErrLocked, name)
	}
	m.locks[key] = true
	return &memLock{fs: m, key: key, gen: m.gen}, nil
}

type memLock struct {
	fs   *FaultFS
	key  string
	gen  uint64
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.fs.mu.Lock()
		if l.fs.gen == l.gen {
			delete(l.fs.locks, l.key)
		}
		l.fs.mu.Unlock()
	})
	return nil
}

// callFault applies the armed faults of op to a call on name that wants n
// bytes (writes) or 1 (syncs). It returns how many of them go through and
// the error to fail with, if any. Call it holding m.mu.
func (m *FaultFS) callFault(op FaultOp, name string, n int64) (int64, error) {
	var err error
	for i := 0; i < len(m.faults); i++ {
		f := m.faults[i]
		if f.Op != op || f.Match != nil && !f.Match(name) {
			continue
		}
		if f.fired {
			n, err = 0, f.Err
			continue
		}
		if left := f.After - f.used; n > left {
			n, err = max(left, 0), f.Err
			f.fired = true
			if f.Once {
				m.faults = append(m.faults[:i], m.faults[i+1:]...)
				i--
			}
		}
		f.used += n
	}
	if err != nil {
		m.stats.Faults++
	}
	return n, err
}

// used is the sum of the sizes of the files reachable now.
func (m *FaultFS) used() int64 {
	var sum int64
	var walk func(d *memNode)
	walk = func(d *memNode) {
		for _, n := range d.entries {
			if n.dir {
				walk(n)
			} else {
				sum += int64(len(n.data))
			}
		}
	}
	walk(m.root)
	return sum
}

// memFile is an open file of a FaultFS.
type memFile struct {
	fs     *FaultFS
	n      *memNode
	name   string
	gen    uint64
	flag   int
	off    int64
	closed bool
}

// check reports whether the handle may be used. Call it holding fs.mu.
func (f *memFile) check(op string) error {
	if f.closed || f.gen != f.fs.gen {
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if f.flag&os.O_WRONLY != 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EBADF}
	}
	if f.off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[f.off:])
	f.off += int64(k)
	return k, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[off:])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	m := f.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := f.check("write"); err != nil {
		return 0, err
	}
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	m.stats.Writes++
	off := f.off
	if f.flag&os.O_APPEND != 0 {
		off = int64(len(f.n.data))
	}
	n, err := m.callFault(FaultWrite, f.name, int64(len(p)))
	if m.diskSize > 0 {
		if grow := off + n - int64(len(f.n.data)); grow > 0 {
			if free := m.diskSize - m.used(); grow > free {
				n = max(n-(grow-max(free, 0)), 0)
				if err == nil {
					m.stats.Faults++
				}
				err = ErrNoSpace
			}
		}
	}
	if end := off + n; end > int64(len(f.n.data)) {
		f.n.data = append(f.n.data, make([]byte, end-int64(len(f.n.data)))...)
	}
	copy(f.n.data[off:], p[:n])
	f.off = off + n
	m.stats.BytesWritten += n
	if err != nil {
		return int(n), &fs.PathError{Op: "write", Path: f.name, Err: err}
	}
	return int(n), nil
}

func (f *memFile) Sync() error {
	m := f.fs
	m.mu.Lock()
	hook := m.syncHook
	m.mu.Unlock()
	if hook != nil {
		hook(f.name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := f.check("sync"); err != nil {
		return err
	}
	m.stats.Syncs++
	if _, err := m.callFault(FaultSync, f.name, 1); err != nil {
		return &fs.PathError{Op: "sync", Path: f.name, Err: err}
	}
	f.n.synced = clone(f.n.data)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate"); err != nil {
		return err
	}
	if size < 0 || f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	if size <= int64(len(f.n.data)) {
		f.n.data = f.n.data[:size:size]
	} else {
		f.n.data = append(f.n.data, make([]byte, size-int64(len(f.n.data)))...)
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("stat"); err != nil {
		return 0, err
	}
	return int64(len(f.n.data)), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("close"); err != nil {
		return err
	}
	f.closed = true
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

func cloneEntries(e map[string]*memNode) map[string]*memNode {
	c := make(map[string]*memNode, len(e))
	for k, v := range e {
		c[k] = v
	}
	return c
}
