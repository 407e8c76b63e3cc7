package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// salvageDir writes a directory holding a snapshot of two collections,
// "ttl" (a TTL index) then "plain", and later writes to both in the log.
// With fullLog the snapshot is written beside a log that keeps every op
// from the first (as a snapshot that wrote while writes went on leaves
// it: the log is not cut); without it the log holds only what followed
// the snapshot. It returns the directory, the dump of what the DB held,
// and how many documents of "ttl" the snapshot holds.
func salvageDir(t testing.TB, clk *ttltest.Clock, fullLog bool) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	ttl, err := db.CreateCollection(context.Background(), "ttl", CollectionOptions{})
	require.NoError(t, err)
	hour := int32(3600)
	_, err = ttl.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: &hour})
	require.NoError(t, err)
	plain := db.Collection("plain")
	write := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := ttl.InsertOne(context.Background(), Document{"_id": i, "at": opEpoch.Add(time.Duration(i) * time.Minute), "pad": strings.Repeat("t", 40)})
			require.NoError(t, err)
			_, err = plain.InsertOne(context.Background(), Document{"_id": i, "pad": strings.Repeat("p", 40)})
			require.NoError(t, err)
		}
	}
	write(0, 40)
	if fullLog {
		f, err := os.Create(filepath.Join(dir, snapshotName(db.LastSeq())))
		require.NoError(t, err)
		require.NoError(t, db.Backup(context.Background(), f))
		require.NoError(t, f.Close())
	} else {
		require.NoError(t, db.Snapshot(context.Background()))
	}
	write(40, 50)
	want := formatFixtureDump(t, db)
	require.NoError(t, db.Close())
	return dir, want, 40
}

// snapshotBlockOffsets returns where to flip a byte of a snapshot's
// magic, its version, its header block and the collection block of
// "ttl".
func snapshotBlockOffsets(t testing.TB, path string) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]int64{"magic": 3, "version": 8, "header block": 12 + 6}
	for at := int64(12); at < int64(len(b)); {
		n := int64(binary.LittleEndian.Uint32(b[at+1:]))
		if b[at] == 2 { // a collection block: uvarint id, bytes name, ...
			p := b[at+5 : at+5+n]
			_, k := binary.Uvarint(p)
			l, m := binary.Uvarint(p[k:])
			if string(p[k+m:k+m+int(l)]) == "ttl" {
				out["collection block"] = at + 5 + int64(k+m+int(l)) + 1
			}
		}
		at += 5 + n + 4
	}
	require.Contains(t, out, "collection block")
	return out
}

// TestSalvageDamagedSnapshotHeader: one flipped byte in a snapshot's
// magic, version field, header block or collection block fails a plain
// Open; WithSalvage loads every block that passes its checksum. When the
// log holds every op from the first, it rebuilds the DB from the log
// alone and loses nothing. Otherwise documents whose collection block was
// lost are reported (Recovery().Orphaned), never loaded without their
// collection's indexes; the other collection and the later ops load.
func TestSalvageDamagedSnapshotHeader(t *testing.T) {
	for _, fullLog := range []bool{true, false} {
		for _, where := range []string{"magic", "version", "header block", "collection block"} {
			t.Run(fmt.Sprintf("fullLog=%v/%s", fullLog, where), func(t *testing.T) {
				clk := ttltest.NewClock(opEpoch)
				dir, want, inSnapshot := salvageDir(t, clk, fullLog)
				snap := onlyFile(t, filepath.Join(dir, "snapshot-*.ttldb"))
				flipByte(t, snap, snapshotBlockOffsets(t, snap)[where])

				_, err := openDurable(t, clk, dir)
				require.ErrorIs(t, err, ErrCorrupt)
				require.Contains(t, err.Error(), filepath.Base(snap))

				db, err := openDurable(t, clk, dir, WithSalvage())
				require.NoError(t, err, "salvage refused the directory")
				defer db.Close()
				rec := db.Recovery()
				requireIndexesRebuilt(t, db)
				if fullLog || where != "collection block" {
					require.Equal(t, want, formatFixtureDump(t, db), "salvage lost something")
					require.Empty(t, rec.Orphaned)
					require.Equal(t, fullLog && (where == "header block" || where == "collection block"), rec.RebuiltFromLog)
					return
				}
				require.False(t, rec.RebuiltFromLog)
				require.Equal(t, map[string]int{"ttl": inSnapshot + 10}, rec.Orphaned, "the snapshot's documents of the lost collection, then its writes in the log")
				names, err := db.ListCollectionNames(context.Background())
				require.NoError(t, err)
				require.Equal(t, []string{"plain"}, names, "no collection without its definition")
				n, err := db.Collection("plain").CountDocuments(context.Background(), nil)
				require.NoError(t, err)
				require.EqualValues(t, 50, n)
			})
		}
	}
}

// TestSalvageErrorAdvice: an error under WithSalvage (here a log of
// another directory, which salvage does not merge) does not advise
// opening with WithSalvage.
func TestSalvageErrorAdvice(t *testing.T) {
	clk := ttltest.NewClock(opEpoch)
	a := durableWithData(t, clk, 10, 10, true)
	replaceLog(t, a, durableWithData(t, clk, 0, 10, false))
	_, err := openDurable(t, clk, a)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "open the copy with WithSalvage")
	_, err = openDurable(t, clk, a, WithSalvage())
	require.ErrorIs(t, err, ErrCorrupt)
	require.NotContains(t, err.Error(), "open the copy with WithSalvage")
	require.Contains(t, err.Error(), "WithSalvage cannot load this either")
}
