package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/vfs"
	"github.com/ttldb/ttldb/ttltest"
)

// The damage table: every byte of a small data directory's snapshot and
// log segments flipped, the last records truncated, foreign and missing
// files; each case opened plainly and WithSalvage, and its outcome
// checked against what the README (Durability) promises:
//
//   - a plain Open loads exactly what was written, or refuses with
//     ErrCorrupt; or, for a log whose last record is damaged (a torn tail),
//     loads the writes before it and reports the cut (TruncatedBytes);
//   - WithSalvage loads a state whose every document is one the DB held at
//     some point, whose indexes equal a rebuild, and that equals the
//     written state unless Recovery reports a loss; a later plain Open
//     of the directory loads that same state and reports nothing;
//   - never a panic, never another error than the ones named.

// damageHistory is the small DB the table damages: its image once closed,
// and the state after each op (prefix[i]: after the first i ops written
// to the directory, the last is the final state).
type damageHistory struct {
	img    dirImage
	prefix []dbDump
	seen   map[string]map[string]bool // collection -> document encodings it ever held
}

// buildDamageHistory writes three collections (one with a TTL index, one
// with a unique index) into a FaultFS directory: ops, then a snapshot
// (with keepCovered, one whose log cut fails, so that the log keeps
// records the snapshot holds, and a damaged snapshot can be rebuilt from
// the log), then ops in log segments of about segSize bytes. n is the number of
// writes after the collections are made.
func buildDamageHistory(t testing.TB, clk *ttltest.Clock, n int, segSize int64, keepCovered bool) *damageHistory {
	t.Helper()
	ctx := context.Background()
	m := vfs.NewFaultFS()
	db := mustOpenDurable(t, clk, "d", withFS(m), WithSync(SyncAlways), withLogSegmentSize(segSize))
	h := &damageHistory{seen: map[string]map[string]bool{}}
	note := func() {
		d := dumpCollections(t, db)
		h.prefix = append(h.prefix, d)
		for name, c := range d.Colls {
			if h.seen[name] == nil {
				h.seen[name] = map[string]bool{}
			}
			for _, enc := range c.Docs {
				h.seen[name][enc] = true
			}
		}
	}
	note()
	_, err := db.Collection("ttl").CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: Seconds(3600)})
	require.NoError(t, err)
	note()
	_, err = db.Collection("u").CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("k")}, Unique: true})
	require.NoError(t, err)
	note()
	_, err = db.Collection("c").CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("x")}})
	require.NoError(t, err)
	note()
	colls := []string{"c", "ttl", "u"}
	for i := range n {
		c := db.Collection(colls[i%3])
		switch {
		case i%7 == 5:
			_, err = c.UpdateOne(context.Background(), Document{"_id": i - 3}, Document{"$set": Document{"x": i}})
		case i%11 == 10:
			_, err = c.DeleteOne(context.Background(), Document{"_id": i - 9})
		default:
			_, err = c.InsertOne(context.Background(), Document{"_id": i, "x": i % 5, "k": i, "at": opEpoch.Add(time.Duration(i) * time.Minute)})
		}
		require.NoError(t, err)
		note()
		if i == n/2 && keepCovered {
			m.Inject(vfs.Fault{Op: vfs.FaultCreate, Match: func(n string) bool { return strings.Contains(n, logDirName+"/") }})
			require.Error(t, db.Snapshot(context.Background()), "the log keeps its segment: records the snapshot holds stay in it")
			m.ClearFaults()
		} else if i == n/2 {
			require.NoError(t, db.Snapshot(context.Background()))
		}
	}
	require.NoError(t, db.Close())
	h.img = imageOf(t, m, "d")
	return h
}

// final is the state written.
func (h *damageHistory) final() dbDump { return h.prefix[len(h.prefix)-1] }

// isPrefix returns the index of the prefix state d equals, or -1.
func (h *damageHistory) isPrefix(t testing.TB, d dbDump) int {
	for i := len(h.prefix) - 1; i >= 0; i-- {
		if sameDump(h.prefix[i], d) {
			return i
		}
	}
	return -1
}

func sameDump(a, b dbDump) bool {
	if !slices.Equal(sortedKeys(a.Colls), sortedKeys(b.Colls)) {
		return false
	}
	for name, ac := range a.Colls {
		bc := b.Colls[name]
		if ac.Spec != bc.Spec || !slices.Equal(ac.Indexes, bc.Indexes) || !slices.Equal(ac.Docs, bc.Docs) {
			return false
		}
	}
	return true
}

// reportsLoss reports whether a Recovery says that something was lost or
// cut.
func reportsLoss(r RecoveryInfo) bool {
	return r.TruncatedBytes > 0 || r.SalvagedBlocks > 0 || r.SalvagedLogBytes > 0 || len(r.Orphaned) > 0 || len(r.SalvageNotes) > 0
}

// damageOutcome opens a damaged image plainly and WithSalvage and checks
// the outcomes the README promises. torn says a plain Open may cut a torn
// tail (the damage is in the log's last records); cutMidRecord that such
// a cut must be reported (a log cut between two records is one that ends
// earlier: nothing tells it apart). It returns the plain
// outcome's class, for the table's tally.
func (h *damageHistory) check(t *testing.T, clk *ttltest.Clock, img dirImage, what string, torn, cutMidRecord bool) (class string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v", what, r)
		}
	}()
	// Plain.
	db, err := openDurable(t, clk, "d", withFS(img.fs(t)))
	switch {
	case err != nil:
		require.ErrorIs(t, err, ErrCorrupt, "%s: a plain Open refuses with ErrCorrupt", what)
		class = "refused"
	default:
		got := dumpCollections(t, db)
		rec := db.Recovery()
		require.NoError(t, db.Close())
		if sameDump(h.final(), got) {
			class = "whole"
			if !reportsLoss(rec) && rec.SkippedLogBytes == 0 {
				return class // nothing for salvage to do
			}
			break
		}
		require.True(t, torn, "%s: a plain Open loaded another state than the one written", what)
		require.GreaterOrEqual(t, h.isPrefix(t, got), 0, "%s: a torn tail cut leaves the writes before it", what)
		require.True(t, rec.TruncatedBytes > 0 || !cutMidRecord, "%s: a cut is reported", what)
		class = "torn tail cut"
	}

	// WithSalvage, then a plain Open of what it left.
	m := img.fs(t)
	db, err = openDurable(t, clk, "d", withFS(m), WithSalvage())
	if err != nil {
		require.ErrorIs(t, err, ErrCorrupt, "%s: salvage refuses only with ErrCorrupt", what)
		return class + "/salvage refused"
	}
	got := dumpCollections(t, db)
	rec := db.Recovery()
	requireIndexesRebuilt(t, db)
	require.NoError(t, db.Close())
	for name, c := range got.Colls {
		for _, enc := range c.Docs {
			require.True(t, h.seen[name][enc], "%s: salvage loaded a document %q never held: %v", what, name, RawDocument(enc).Document())
		}
	}
	if !sameDump(h.final(), got) && cutMidRecord {
		require.True(t, reportsLoss(rec), "%s: salvage lost writes without saying so: %+v", what, rec)
	}
	db, err = openDurable(t, clk, "d", withFS(m))
	require.NoError(t, err, "%s: after salvage, a plain Open succeeds", what)
	again := dumpCollections(t, db)
	rec2 := db.Recovery()
	require.NoError(t, db.Close())
	require.True(t, sameDump(got, again), "%s: the plain Open after salvage loads what salvage loaded", what)
	require.False(t, reportsLoss(rec2), "%s: and finds nothing damaged: %+v", what, rec2)
	if sameDump(h.final(), got) {
		return class + "/salvage whole"
	}
	return class + "/salvage lossy"
}

// damageFiles lists the image's snapshot and log segments, in order.
func (img dirImage) damageFiles() (snap string, segs []string) {
	for name := range img {
		switch {
		case strings.HasPrefix(name, "d/"+snapshotPrefix):
			snap = name
		case strings.HasPrefix(name, "d/"+logDirName+"/"):
			segs = append(segs, name)
		}
	}
	slices.Sort(segs)
	return snap, segs
}

// TestDamageTable runs the table on a small directory (a few dozen ops,
// a snapshot of about 1 KiB, three log segments); TTLDB_SOAK=1 runs it
// on a larger one.
func TestDamageTable(t *testing.T) {
	n, seg := 18, int64(400)
	if os.Getenv("TTLDB_SOAK") == "1" {
		n, seg = 300, 4096
	}
	clk := ttltest.NewClock(opEpoch)
	h := buildDamageHistory(t, clk, n, seg, true)
	snap, segs := h.img.damageFiles()
	require.NotEmpty(t, snap)
	require.GreaterOrEqual(t, len(segs), 3, "the log has several segments")
	tally := map[string]int{}

	var mu sync.Mutex
	t.Run("flip", func(t *testing.T) {
		for _, file := range append([]string{snap}, segs...) {
			t.Run(path.Base(file), func(t *testing.T) {
				t.Parallel()
				last := file == segs[len(segs)-1]
				for off := range int64(len(h.img[file])) {
					class := h.check(t, clk, h.img.flipped(file, off), fmt.Sprintf("%s byte %d flipped", file, off), last, true)
					mu.Lock()
					kind := "log"
					if file == snap {
						kind = "snapshot"
					}
					tally[kind+": "+class]++
					mu.Unlock()
				}
			})
		}
	})
	t.Run("flip snapshot, log cut", func(t *testing.T) {
		// The log no longer holds the snapshot's ops: salvage loads the
		// blocks that pass their checksums.
		h := buildDamageHistory(t, clk, n, seg, false)
		snap, _ := h.img.damageFiles()
		for off := range int64(len(h.img[snap])) {
			class := h.check(t, clk, h.img.flipped(snap, off), fmt.Sprintf("%s (log cut) byte %d flipped", snap, off), false, true)
			tally["snapshot, log cut: "+class]++
		}
	})
	t.Run("truncate", func(t *testing.T) {
		file := segs[len(segs)-1]
		b := h.img[file]
		bounds := map[int]bool{}
		for _, off := range segmentRecordEnds(b) {
			bounds[off] = true
		}
		for size := max(len(b)-300, 44); size < len(b); size++ {
			img := maps.Clone(h.img)
			img[file] = b[:size]
			class := h.check(t, clk, img, fmt.Sprintf("%s cut to %d bytes", file, size), true, !bounds[size])
			tally["truncate: "+class]++
		}
	})
	t.Run("foreign log", func(t *testing.T) {
		other := buildDamageHistory(t, clk, 12, seg, true)
		img := maps.Clone(h.img)
		for name := range img {
			if strings.HasPrefix(name, "d/"+logDirName+"/") {
				delete(img, name)
			}
		}
		for name, b := range other.img {
			if strings.HasPrefix(name, "d/"+logDirName+"/") {
				img[name] = b
			}
		}
		_, err := openDurable(t, clk, "d", withFS(img.fs(t)))
		require.ErrorIs(t, err, ErrCorrupt, "another directory's log is refused")
		require.Contains(t, err.Error(), "another data directory")
		tally["foreign log: "+h.check(t, clk, img, "foreign log", false, false)]++
	})
	t.Run("missing log", func(t *testing.T) {
		img := maps.Clone(h.img)
		for _, s := range segs {
			delete(img, s)
		}
		_, err := openDurable(t, clk, "d", withFS(img.fs(t)))
		require.ErrorIs(t, err, ErrCorrupt, "a snapshot without its log is refused")
		tally["missing log: "+h.check(t, clk, img, "missing log", false, false)]++
	})
	t.Run("missing newest segment", func(t *testing.T) {
		img := maps.Clone(h.img)
		delete(img, segs[len(segs)-1])
		_, err := openDurable(t, clk, "d", withFS(img.fs(t)))
		require.ErrorIs(t, err, ErrCorrupt, "a log missing its newest segment is refused")
		tally["missing newest segment: "+h.check(t, clk, img, "missing newest segment", false, false)]++
	})
	keys := sortedKeys(tally)
	for _, k := range keys {
		t.Logf("%-60s %5d", k, tally[k])
	}
}

// segmentRecordEnds returns where each record of a version 2 segment's
// bytes ends (its header's end first).
func segmentRecordEnds(b []byte) []int {
	ends := []int{44}
	for off := 44; off+20 <= len(b); {
		off += 20 + int(binary.LittleEndian.Uint32(b[off:]))
		ends = append(ends, off)
	}
	return ends
}

// TestSalvageLeavesCleanDirectory: a directory WithSalvage loaded opens
// again without it, with what salvage loaded and nothing reported: salvage
// wrote its state as the directory's snapshot. Cases: a damaged
// snapshot block whose ops the log no longer holds, and a damaged log
// record followed by intact ones.
func TestSalvageLeavesCleanDirectory(t *testing.T) {
	for _, file := range []string{"snapshot", "log"} {
		t.Run(file, func(t *testing.T) {
			clk := ttltest.NewClock(opEpoch)
			dir := durableWithData(t, clk, 3000, 200, file == "snapshot")
			target := newestSegment(t, dir)
			if file == "snapshot" {
				target = onlyFile(t, filepath.Join(dir, "snapshot-*.ttldb"))
			}
			flipByte(t, target, fileSizeOf(t, target)/2)
			_, err := openDurable(t, clk, dir)
			require.ErrorIs(t, err, ErrCorrupt)

			db := mustOpenDurable(t, clk, dir, WithSalvage())
			require.True(t, reportsLoss(db.Recovery()))
			salvaged := findIDs(t, db.Collection("c"), nil)
			require.NoError(t, db.Close())

			db = mustOpenDurable(t, clk, dir)
			require.False(t, reportsLoss(db.Recovery()), "%+v", db.Recovery())
			require.Equal(t, salvaged, findIDs(t, db.Collection("c"), nil))
			_, err = db.Collection("c").InsertOne(context.Background(), Document{"_id": "after"})
			require.NoError(t, err)
			require.NoError(t, db.Close())
		})
	}
}
