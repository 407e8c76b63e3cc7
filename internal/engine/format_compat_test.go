package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// formatFixtureWorkload fills a new data directory with a small DB whose
// contents depend on nothing but this code: an ordinary collection with a
// TTL index and a unique one, a time-series collection, a snapshot, then
// writes in a log of several segments. testdata/format-v1 holds what
// format version 1 wrote for it, and what the DB held before it closed.
func formatFixtureWorkload(t testing.TB, dir string) string {
	t.Helper()
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways), withLogSegmentSize(1024))
	ctx := context.Background()
	c, err := db.CreateCollection(context.Background(), "sessions", CollectionOptions{})
	require.NoError(t, err)
	hour := int32(3600)
	_, err = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("at")}, ExpireAfterSeconds: &hour})
	require.NoError(t, err)
	_, err = c.CreateIndex(ctx, IndexModel{Keys: []IndexKey{Asc("user")}, Unique: true})
	require.NoError(t, err)
	ts, err := db.CreateCollection(context.Background(), "metrics", CollectionOptions{TimeSeries: &TimeSeriesOptions{TimeField: "t", MetaField: "m"}})
	require.NoError(t, err)
	insert := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := c.InsertOne(context.Background(), Document{"_id": i, "user": fmt.Sprintf("u%d", i), "at": opEpoch.Add(time.Duration(i) * time.Minute), "n": i})
			require.NoError(t, err)
			_, err = ts.InsertOne(context.Background(), Document{"_id": i, "t": opEpoch.Add(time.Duration(i) * time.Second), "m": Document{"sensor": i % 3}, "v": float64(i) / 4})
			require.NoError(t, err)
		}
	}
	insert(0, 40)
	require.NoError(t, db.Snapshot(context.Background()))
	insert(40, 60)
	for i := 0; i < 60; i += 7 {
		_, err := c.UpdateOne(context.Background(), Document{"_id": i}, Document{"$set": Document{"n": -i}, "$push": Document{"tags": "x"}})
		require.NoError(t, err)
	}
	for i := 3; i < 60; i += 11 {
		_, err := c.DeleteOne(context.Background(), Document{"_id": i})
		require.NoError(t, err)
	}
	want := formatFixtureDump(t, db)
	require.NoError(t, db.Close())
	return want
}

// formatFixtureDump prints what the fixture's DB holds, in natural order:
// index specifications, documents and record versions.
func formatFixtureDump(t testing.TB, db *DB) string {
	t.Helper()
	var b strings.Builder
	names, err := db.ListCollectionNames(context.Background())
	require.NoError(t, err)
	slices.Sort(names)
	for _, name := range names {
		c := db.Collection(name)
		fmt.Fprintf(&b, "collection %s\n", name)
		specs, err := c.Indexes(context.Background())
		require.NoError(t, err)
		for _, s := range specs {
			exp := "none"
			if s.ExpireAfterSeconds != nil {
				exp = fmt.Sprint(*s.ExpireAfterSeconds)
			}
			fmt.Fprintf(&b, "  index %s %v unique=%v sparse=%v expire=%s forms=%v multikey=%v\n",
				s.Name, s.Keys, s.Unique, s.Sparse, exp, s.TTLValueForms, s.Multikey)
		}
		cur, err := c.Find(context.Background(), nil)
		require.NoError(t, err)
		var docs []Document
		require.NoError(t, cur.All(context.Background(), &docs))
		for _, d := range docs {
			fmt.Fprintf(&b, "  doc %v\n", d)
		}
	}
	if s := db.collections["sessions"]; s != nil {
		s.mu.RLock()
		s.natural.Ascend(func(it natItem) bool {
			r := s.rec(it.slot)
			fmt.Fprintf(&b, "  version %v %d\n", r.id(), r.ver)
			return true
		})
		s.mu.RUnlock()
	}
	return b.String()
}

// TestWriteFormatFixture writes testdata/format-<version> anew when
// TTLDB_WRITE_FIXTURE names the directory to write (an old format's
// fixture is written once, by the code that wrote that format).
func TestWriteFormatFixture(t *testing.T) {
	out := os.Getenv("TTLDB_WRITE_FIXTURE")
	if out == "" {
		t.Skip("TTLDB_WRITE_FIXTURE is not set")
	}
	dir := filepath.Join(t.TempDir(), "dir")
	want := formatFixtureWorkload(t, dir)
	require.NoError(t, os.RemoveAll(out))
	require.NoError(t, os.MkdirAll(filepath.Join(out, "dir", logDirName), 0o700))
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Name() == lockName {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return os.WriteFile(filepath.Join(out, "dir", rel), b, 0o600)
	}))
	require.NoError(t, os.WriteFile(filepath.Join(out, "want.txt"), []byte(want), 0o600))
}

// copyDir copies the files of src (one level of subdirectories) into a new
// temporary directory and returns it.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "dir")
	require.NoError(t, filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	}))
	return dst
}

// TestFormatV1DirectoryOpens: a data directory written in format version
// 1 (testdata/format-v1, written by the ttldb of that format) opens with
// what the DB held when it closed, takes writes and snapshots, and opens
// again.
func TestFormatV1DirectoryOpens(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "format-v1", "want.txt"))
	require.NoError(t, err)
	dir := copyDir(t, filepath.Join("testdata", "format-v1", "dir"))
	clk := ttltest.NewClock(opEpoch)
	db := mustOpenDurable(t, clk, dir, WithSync(SyncAlways), withLogSegmentSize(1024))
	require.Equal(t, string(want), formatFixtureDump(t, db))
	_, err = db.Collection("sessions").InsertOne(context.Background(), Document{"_id": 1000, "user": "new", "at": opEpoch})
	require.NoError(t, err)
	after := formatFixtureDump(t, db)
	require.NoError(t, db.Close())

	db = mustOpenDurable(t, clk, dir, WithSync(SyncAlways))
	require.Equal(t, after, formatFixtureDump(t, db), "reopened after a write in the current format")
	require.NoError(t, db.Snapshot(context.Background()))
	require.NoError(t, db.Close())
	db = mustOpenDurable(t, clk, dir)
	require.Equal(t, after, formatFixtureDump(t, db), "reopened after a snapshot in the current format")
	require.NoError(t, db.Close())
}

// TestFormatFixtureWorkload: the fixture's workload, run by this build,
// leaves a directory that opens with what format version 1's did: the
// workload is deterministic, so the fixture's want.txt is this build's
// too.
func TestFormatFixtureWorkload(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "format-v1", "want.txt"))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "dir")
	require.Equal(t, string(want), formatFixtureWorkload(t, dir))
	db := mustOpenDurable(t, ttltest.NewClock(opEpoch), dir)
	require.Equal(t, string(want), formatFixtureDump(t, db))
}
