package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// legacyDir is a node's Config.Dir written by ttldb's replica when it
// kept raft's log in hashicorp/raft-boltdb/v2 v2.3.1 (bbolt v1.3.5): a
// one-node cluster ("n0", on the in-memory transport, the tests' raft
// configuration and clock) that created collection "s" with a 60 s TTL
// index on "at", inserted _id 0..39 (at: epoch0), took a raft snapshot,
// inserted _id 40..59 (at: epoch0 + 1h), deleted _id 7 and set _id 8's
// "v" to "updated" (every other document's "v" is "doc <_id>"). The
// inserts after the snapshot are in raft.db's log only.
const legacyDir = "testdata/raftboltdb-v2.3.1"

// copyDir copies the fixture into a temporary directory (opening writes).
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "raft")
	require.NoError(t, os.CopyFS(to, os.DirFS(from)))
	return to
}

// TestLegacyRaftDirOpens: a directory written by the earlier raft-boltdb
// store opens as it is (no migration): the node elects itself from the
// configuration in its log, replays the snapshot and the log, holds every
// document as written, expires through its TTL index, and a write made
// now survives another restart.
func TestLegacyRaftDirOpens(t *testing.T) {
	dir := copyDir(t, legacyDir)
	clk := ttltest.NewClock(epoch0)
	open := func() *Node {
		_, trans := raft.NewInmemTransport("")
		n, err := Open(Config{ID: "n0", Transport: trans, Dir: dir, Raft: testRaftConfig("n0"),
			DBOptions: []ttldb.Option{ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true})}})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			n.mu.Lock()
			defer n.mu.Unlock()
			return n.ready
		}, 10*time.Second, time.Millisecond, "the node does not lead its one-node cluster")
		return n
	}
	byID := func(n *Node) map[int]ttldb.Document {
		docs, err := n.DB().Collection("s").Find(context.Background(), ttldb.Document{})
		require.NoError(t, err)
		out := map[int]ttldb.Document{}
		for d, err := range docs.Documents(context.Background()) {
			require.NoError(t, err)
			id, err := strconv.Atoi(fmt.Sprint(d["_id"]))
			require.NoError(t, err, "_id %v", d["_id"])
			out[id] = d
		}
		return out
	}

	n := open()
	docs := byID(n)
	assert.Len(t, docs, 59)
	for i := range 60 {
		d, ok := docs[i]
		if i == 7 {
			assert.False(t, ok, "_id 7 was deleted")
			continue
		}
		if !assert.True(t, ok, "_id %d", i) {
			continue
		}
		want := fmt.Sprintf("doc %d", i)
		if i == 8 {
			want = "updated"
		}
		assert.Equal(t, want, d["v"], "_id %d", i)
		at := epoch0
		if i >= 40 {
			at = epoch0.Add(time.Hour)
		}
		assert.True(t, at.Equal(d["at"].(time.Time)), "_id %d at %v", i, d["at"])
	}

	// The TTL index came back with the collection: the first 39 expire.
	clk.Advance(2 * time.Minute)
	_, err := n.DB().RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Len(t, byID(n), 20)
	_, err = n.DB().Collection("s").InsertOne(context.Background(), ttldb.Document{"_id": 100, "at": clk.Now(), "v": "new"})
	require.NoError(t, err)
	require.NoError(t, n.Close())

	n = open()
	defer n.Close()
	docs = byID(n)
	assert.Len(t, docs, 21)
	assert.Equal(t, "new", docs[100]["v"])
	for i := range 40 {
		assert.NotContains(t, docs, i, "expired before the restart")
	}
}

// rawBucket reads every key and value of a bucket of a bbolt file.
func rawBucket(t *testing.T, path string, bucket []byte) map[string][]byte {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	out := map[string][]byte{}
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return fmt.Errorf("no bucket %q", bucket)
		}
		return b.ForEach(func(k, v []byte) error {
			out[string(k)] = bytes.Clone(v)
			return nil
		})
	}))
	return out
}

// TestBoltStoreWritesRaftBoltDBBytes: every entry and stable key of the
// legacy raft.db, read through the store and written back into a new
// file, is stored with the very bytes raft-boltdb wrote: a directory
// written now opens with the earlier ttldb too (a rollback needs nothing).
func TestBoltStoreWritesRaftBoltDBBytes(t *testing.T) {
	legacy := filepath.Join(copyDir(t, legacyDir), "raft.db")
	wantLogs, conf := rawBucket(t, legacy, bucketLogs), rawBucket(t, legacy, bucketConf)
	require.NotEmpty(t, conf)
	src, err := openBoltStore(legacy)
	require.NoError(t, err)
	got := filepath.Join(t.TempDir(), "raft.db")
	dst, err := openBoltStore(got)
	require.NoError(t, err)

	first, err := src.FirstIndex()
	require.NoError(t, err)
	last, err := src.LastIndex()
	require.NoError(t, err)
	require.NotZero(t, first)
	require.Greater(t, last, first)
	var logs []*raft.Log
	for i := first; i <= last; i++ {
		l := new(raft.Log)
		require.NoError(t, src.GetLog(i, l), "entry %d", i)
		assert.Equal(t, i, l.Index)
		logs = append(logs, l)
	}
	require.NoError(t, dst.StoreLogs(logs))
	for k := range conf {
		v, err := src.Get([]byte(k))
		require.NoError(t, err)
		require.NoError(t, dst.Set([]byte(k), v))
	}
	term, err := src.GetUint64([]byte("CurrentTerm"))
	require.NoError(t, err)
	assert.NotZero(t, term, "the legacy node's term")
	require.NoError(t, src.Close())
	require.NoError(t, dst.Close())

	assert.Len(t, wantLogs, int(last-first+1))
	assert.Equal(t, wantLogs, rawBucket(t, got, bucketLogs), "entries")
	assert.Equal(t, conf, rawBucket(t, got, bucketConf), "stable keys")
}

// TestBoltStore: the log store's and stable store's contract as raft
// uses it, across a reopen.
func TestBoltStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := openBoltStore(path)
	require.NoError(t, err)

	first, err := s.FirstIndex()
	require.NoError(t, err)
	last, err := s.LastIndex()
	require.NoError(t, err)
	assert.Zero(t, first, "empty log")
	assert.Zero(t, last, "empty log")
	var l raft.Log
	assert.ErrorIs(t, s.GetLog(1, &l), raft.ErrLogNotFound)
	_, err = s.Get([]byte("CurrentTerm"))
	// raft tells a new node from a failed read by this message.
	require.Error(t, err)
	assert.Equal(t, "not found", err.Error())
	_, err = s.GetUint64([]byte("CurrentTerm"))
	require.Error(t, err)
	assert.Equal(t, "not found", err.Error())

	at := time.Date(2026, 11, 28, 12, 0, 0, 123, time.UTC)
	entry := func(i uint64) *raft.Log {
		return &raft.Log{Index: i, Term: 1 + i/10, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", i)),
			Extensions: []byte{byte(i)}, AppendedAt: at.Add(time.Duration(i) * time.Second)}
	}
	var batch []*raft.Log
	for i := uint64(1); i <= 50; i++ {
		batch = append(batch, entry(i))
	}
	require.NoError(t, s.StoreLogs(batch))
	require.NoError(t, s.StoreLog(&raft.Log{Index: 51, Term: 6, Type: raft.LogNoop}))
	require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 6))
	require.NoError(t, s.Set([]byte("LastVoteCand"), []byte("n2")))

	// Compaction removes a prefix, a conflicting append a suffix.
	require.NoError(t, s.DeleteRange(1, 20))
	require.NoError(t, s.DeleteRange(49, 51))
	require.NoError(t, s.Close())

	s, err = openBoltStore(path)
	require.NoError(t, err)
	defer s.Close()
	first, err = s.FirstIndex()
	require.NoError(t, err)
	last, err = s.LastIndex()
	require.NoError(t, err)
	assert.Equal(t, uint64(21), first)
	assert.Equal(t, uint64(48), last)
	for i := uint64(0); i <= 52; i++ {
		var got raft.Log
		err := s.GetLog(i, &got)
		if i < 21 || i > 48 {
			assert.True(t, errors.Is(err, raft.ErrLogNotFound), "entry %d: %v", i, err)
			continue
		}
		require.NoError(t, err, "entry %d", i)
		want := entry(i)
		assert.True(t, want.AppendedAt.Equal(got.AppendedAt), "entry %d: appended at %v", i, got.AppendedAt)
		got.AppendedAt = want.AppendedAt
		assert.Equal(t, *want, got, "entry %d", i)
	}
	term, err := s.GetUint64([]byte("CurrentTerm"))
	require.NoError(t, err)
	assert.Equal(t, uint64(6), term)
	cand, err := s.Get([]byte("LastVoteCand"))
	require.NoError(t, err)
	assert.Equal(t, []byte("n2"), cand)
	_, err = s.GetUint64([]byte("LastVoteCand"))
	assert.ErrorContains(t, err, "not a number")
}

// TestDirInUse: a second node on a Dir that a running node holds is
// refused (raft.db's lock), rather than waiting for it forever.
func TestDirInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "raft")
	_, trans := raft.NewInmemTransport("")
	n, err := Open(Config{ID: "a", Transport: trans, Dir: dir, Raft: testRaftConfig("a")})
	require.NoError(t, err)
	defer n.Close()
	_, trans2 := raft.NewInmemTransport("")
	_, err = Open(Config{ID: "b", Transport: trans2, Dir: dir, Raft: testRaftConfig("b")})
	require.ErrorIs(t, err, ttldb.ErrInvalidOptions)
	assert.ErrorIs(t, err, bberrors.ErrTimeout)
	assert.ErrorContains(t, err, "in use by another node")
}
