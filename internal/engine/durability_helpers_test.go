package engine

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/google/btree"
	"github.com/stretchr/testify/require"
	snapfile "github.com/ttldb/ttldb/internal/snapshot"
)

// dbDump is what a DB holds, in a comparable form: per collection, its
// options, its index definitions, and its documents in natural order.
type dbDump struct {
	Colls map[string]collDump
}

type collDump struct {
	Spec    string
	Indexes []string
	Docs    []string // encodings, natural order
	Vers    []uint64 // record versions, parallel to Docs
}

// dumpCollections reads everything db holds (under each collection's read lock).
func dumpCollections(t testing.TB, db *DB) dbDump {
	t.Helper()
	out := dbDump{Colls: map[string]collDump{}}
	for _, s := range db.snapshotCollections() {
		require.Nil(t, s.ts, "dumpDB reads ordinary collections")
		s.mu.RLock()
		c := collDump{Spec: fmt.Sprint(collectionSpec(s.opts).Document())}
		for _, ix := range s.indexes {
			c.Indexes = append(c.Indexes, fmt.Sprint(indexSpecDoc(ix.model()).Document()))
		}
		s.natural.Ascend(func(it natItem) bool {
			r := s.rec(it.slot)
			c.Docs = append(c.Docs, string(r.enc))
			c.Vers = append(c.Vers, r.ver)
			return true
		})
		s.mu.RUnlock()
		out.Colls[s.name] = c
	}
	return out
}

// requireSameDB fails unless a and b hold the same collections, indexes
// and documents in the same natural order (versions too, when vers).
func requireSameDB(t testing.TB, want, got dbDump, vers bool) {
	t.Helper()
	require.Equal(t, sortedKeys(want.Colls), sortedKeys(got.Colls), "collections")
	for name, w := range want.Colls {
		g := got.Colls[name]
		require.Equal(t, w.Spec, g.Spec, "collection %q options", name)
		require.Equal(t, w.Indexes, g.Indexes, "collection %q indexes", name)
		require.Equal(t, len(w.Docs), len(g.Docs), "collection %q document count", name)
		for i := range w.Docs {
			if w.Docs[i] != g.Docs[i] {
				require.Failf(t, "documents differ", "collection %q, natural position %d: want %v, got %v",
					name, i, RawDocument(w.Docs[i]).Document(), RawDocument(g.Docs[i]).Document())
			}
		}
		if vers {
			require.Equal(t, w.Vers, g.Vers, "collection %q record versions", name)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// requireIndexesRebuilt fails unless every index of every collection of db
// holds exactly what building it anew from the documents gives: its key
// tree, its TTL tree and backlog counts.
func requireIndexesRebuilt(t testing.TB, db *DB) {
	t.Helper()
	for _, s := range db.snapshotCollections() {
		if s.ts != nil {
			continue
		}
		s.writeMu.Lock()
		for _, ix := range s.indexes {
			fresh, err := newIndex(s.name, ix.model(), s.opts.Capped)
			require.NoError(t, err)
			fresh.id = ix.id
			s.natural.Ascend(func(it natItem) bool {
				rec := s.rec(it.slot)
				ref := &docRef{rec: rec}
				if fresh.tree != nil {
					ik, err := fresh.keysOfStored(ref)
					require.NoError(t, err)
					fresh.insertKeys(&rec, ik)
				}
				if fresh.ttl != nil {
					if k := fresh.ttlKeyOf(ref); k.ok {
						fresh.ttl.addEntry(entryFor(k.date, &rec), k)
					}
				}
				return true
			})
			require.Equal(t, treeItems(fresh.tree), treeItems(ix.tree), "collection %q index %q: key tree", s.name, ix.name)
			if ix.ttl != nil {
				require.Equal(t, expiryItems(fresh.ttl), expiryItems(ix.ttl), "collection %q index %q: TTL tree", s.name, ix.name)
				require.Equal(t, fresh.ttl.exact, ix.ttl.exact, "collection %q index %q: exact count", s.name, ix.name)
				require.Equal(t, fresh.ttl.multi, ix.ttl.multi, "collection %q index %q: multi count", s.name, ix.name)
				require.False(t, ix.ttl.counts.deferring, "collection %q index %q: backlog counts left deferring", s.name, ix.name)
				require.Equal(t, fresh.ttl.counts.total, ix.ttl.counts.total, "collection %q index %q: backlog count", s.name, ix.name)
				require.Equal(t, fresh.ttl.counts.levels, ix.ttl.counts.levels, "collection %q index %q: backlog counts", s.name, ix.name)
			}
			if ix.unique && ix.tree != nil {
				require.NoError(t, ix.checkLoadedUnique(s))
			}
		}
		s.writeMu.Unlock()
	}
}

func treeItems(tr *btree.BTreeG[indexEntry]) []string {
	var out []string
	if tr == nil {
		return nil
	}
	tr.Ascend(func(e indexEntry) bool {
		out = append(out, fmt.Sprintf("%x/%d/%d", e.key, e.seq, e.slot))
		return true
	})
	return out
}

func expiryItems(t *ttlIndex) []string {
	var out []string
	t.expiry.Ascend(func(e expiryEntry) bool {
		out = append(out, fmt.Sprintf("%d.%d/%d/%d", e.sec, e.nsec, e.seq, e.slot))
		return true
	})
	sort.Strings(out)
	return out
}

// loadBackup opens a new in-memory DB (monitor disabled) from a snapshot's
// bytes, then applies ops (those after the snapshot's end) as recovery
// does.
func loadBackup(t testing.TB, data []byte, ops []Op, opts ...Option) *DB {
	t.Helper()
	opts = append([]Option{WithMonitor(MonitorOptions{Disabled: true})}, opts...)
	db, err := Open(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	r, err := snapfile.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	l := newLoader(db)
	require.NoError(t, l.loadSnapshot(r))
	for _, op := range ops {
		if op.Seq > l.lastSeq {
			require.NoError(t, l.apply(op))
		}
	}
	require.NoError(t, l.finishLoad())
	return db
}
