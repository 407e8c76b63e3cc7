package store

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkTable verifies a table's invariants: n counts the used cells, and
// every cell is reachable from its home without crossing an empty cell
// (what backward-shift deletion must keep).
func checkTable(t *testing.T, tab *idTable) {
	t.Helper()
	used := 0
	mask := len(tab.cells) - 1
	for i, c := range tab.cells {
		if c == 0 {
			continue
		}
		used++
		for j := tab.home(cellTag(c)); j != i; j = (j + 1) & mask {
			require.NotZero(t, tab.cells[j], "cell %d unreachable from its home: empty cell %d on the way", i, j)
		}
	}
	require.Equal(t, used, tab.n)
	require.LessOrEqual(t, tab.n*4, len(tab.cells)*3, "at most 3/4 full")
}

// Random puts and removes in a table with few distinct homes (long probe
// runs that wrap around the end) agree with a model, and the table stays
// well formed.
func TestIDTableAgreesWithModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	tab := newIDTable(64)
	model := map[Slot]uint32{} // slot -> tag
	for step := range 20000 {
		if len(model) < 40 && (len(model) == 0 || rng.IntN(2) == 0) {
			slot := Slot(rng.Uint32() >> 1)
			if _, ok := model[slot]; ok {
				continue
			}
			// Tags whose homes crowd the last cells, so runs wrap.
			tag := tagOf(uint64(60 + rng.IntN(8)))
			tab.put(tag, slot)
			model[slot] = tag
		} else {
			for slot, tag := range model {
				tab.remove(tag, slot)
				delete(model, slot)
				break
			}
		}
		if step%100 == 0 {
			checkTable(t, &tab)
			for slot, tag := range model {
				assert.Contains(t, tab.cells, cellOf(tag, slot))
			}
		}
	}
	checkTable(t, &tab)
	require.Equal(t, len(model), tab.n)
}

// A table grows at 3/4 full and gives its memory back, shrinking, when a
// mass deletion leaves it nearly empty; the accounted bytes follow.
func TestIDTableGrowsAndShrinks(t *testing.T) {
	s := New(Options{})
	empty := s.tableBytes
	const n = 100_000
	slots := make([]Slot, n)
	for i := range n {
		slots[i] = s.Insert(key(i), []byte("d"), nil, uint64(i), uint64(i)+1)
		if i%997 == 0 {
			// A table that grew doubled: it is still over 3/8 full, and
			// inserting only fills it further.
			for j := range s.shards {
				tab := &s.shards[j].tab
				if len(tab.cells) > minTable {
					require.GreaterOrEqual(t, tab.n*8, len(tab.cells)*3,
						"after %d inserts, shard %d: %d keys in %d cells", i+1, j, tab.n, len(tab.cells))
				}
			}
		}
	}
	cells := 0
	for i := range s.shards {
		checkTable(t, &s.shards[i].tab)
		cells += len(s.shards[i].tab.cells)
	}
	assert.Equal(t, int64(cells*8), s.tableBytes)
	perKey := float64(cells*8) / n
	t.Logf("%d keys: %d cells, %.1f bytes per key", n, cells, perKey)
	assert.LessOrEqual(t, perKey, 8*8/3.0, "between 3/8 and 3/4 full")
	s.DeleteMany(slots[:n-100])
	cells = 0
	for i := range s.shards {
		checkTable(t, &s.shards[i].tab)
		cells += len(s.shards[i].tab.cells)
	}
	assert.Equal(t, int64(cells*8), s.tableBytes)
	assert.LessOrEqual(t, cells, numShards*minTable*2, "nearly empty tables shrink")
	s.DeleteMany(slots[n-100:])
	assert.Equal(t, empty, s.tableBytes, "emptied tables are as small as new ones")
}

// DeleteMany agrees with Delete: the same records go, the others stay
// readable, in stores with small chunks (relocation during the batch) and
// with a hash of two bits (long probe runs).
func TestDeleteManyAgreesWithModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	for _, bits := range []uint{0, 2} {
		s := New(Options{MaxChunk: MinChunk, HashBits: bits})
		model := map[string][]byte{}
		slots := map[string]Slot{}
		next := 0
		for round := range 40 {
			for range 300 {
				k := key(next)
				next++
				d := docFor(k, round, 20+rng.IntN(200))
				slots[string(k)] = s.Insert(k, d, nil, uint64(next), uint64(next))
				model[string(k)] = d
			}
			var batch []Slot
			for k := range model {
				if rng.IntN(3) > 0 {
					batch = append(batch, slots[k])
					delete(model, k)
				}
			}
			s.DeleteMany(batch)
			check(t, s, model)
		}
		assert.Positive(t, s.Stats().Relocated)
	}
}

// DeleteMany takes each shard's lock once for all the batch's keys in it
// (plus one hold per table it shrinks).
func TestDeleteManyOneLockPerShard(t *testing.T) {
	s := New(Options{})
	slots := make([]Slot, 4096)
	for i := range slots {
		slots[i] = s.Insert(key(i), []byte("d"), nil, uint64(i), uint64(i)+1)
	}
	before := s.shardLocks
	s.DeleteMany(slots[:1024])
	assert.LessOrEqual(t, s.shardLocks-before, int64(numShards), "1024 deletions, one hold per shard")
	before = s.shardLocks
	for _, slot := range slots[1024:1034] {
		s.Delete(slot)
	}
	assert.Equal(t, int64(10), s.shardLocks-before, "Delete: one hold each")
}

// PlanInsert bounds what a batch of inserts adds to Bytes: each record
// and slot, and exactly the bytes of the table doublings the batch causes,
// however its keys fall into shards.
func TestPlanInsertBounds(t *testing.T) {
	s := New(Options{})
	next := 0
	doc := []byte("document")
	for _, size := range []int{1, 10, 1000, 20000, 3} {
		var p InsertPlan
		var bound, records int64
		for i := range size {
			k := key(next + i)
			bound += s.PlanInsert(&p, k, len(doc), 0)
			records += int64(recordSize(len(k), len(doc), 0)) + entrySize
		}
		before := s.tableBytes
		for i := range size {
			s.Insert(key(next+i), doc, nil, uint64(next+i), 1)
		}
		next += size
		assert.Equal(t, s.tableBytes-before, bound-records, "batch of %d: the tables' growth", size)
	}
	assert.Greater(t, s.tableBytes, int64(numShards*minTable*8), "the tables grew")
}

// Batches that delete in insertion order empty chunk after chunk: nothing
// is moved (a chunk less than a quarter live is left alone while batches
// still delete from it), and every emptied chunk is dropped.
func TestDeleteManyInOrderMovesNothing(t *testing.T) {
	s := New(Options{})
	const n = 100_000
	slots := make([]Slot, n)
	for i := range n {
		slots[i] = s.Insert(key(i), docFor(key(i), 0, 100), nil, uint64(i), uint64(i)+1)
	}
	chunks := s.Stats().Chunks
	for i := 0; i < n-1000; i += 1000 {
		s.DeleteMany(slots[i : i+1000])
	}
	st := s.Stats()
	assert.Zero(t, st.Relocated, "nothing moved")
	assert.GreaterOrEqual(t, st.Dropped, int64(chunks-2))
	s.Settle()
	assert.LessOrEqual(t, s.Stats().Relocated, int64(1000), "at most the last chunk's survivors move at Settle")
}

// Batches that leave one record in ten, scattered, defer the moves while
// they delete from a chunk; the moves happen once no batch deletes from it
// any more, or at Settle: then the chunks hold at most twice what is live.
func TestDeleteManyScatteredSettles(t *testing.T) {
	s := New(Options{})
	const n = 100_000
	slots := make([]Slot, n)
	for i := range n {
		slots[i] = s.Insert(key(i), docFor(key(i), 0, 100), nil, uint64(i), uint64(i)+1)
	}
	model := map[string][]byte{}
	var doomed []Slot
	for i := range n {
		if i%10 == 0 {
			model[string(key(i))] = docFor(key(i), 0, 100)
		} else {
			doomed = append(doomed, slots[i])
		}
	}
	for i := 0; i < len(doomed); i += 1024 {
		s.DeleteMany(doomed[i:min(i+1024, len(doomed))])
	}
	s.Settle()
	st := s.Stats()
	assert.Positive(t, st.Relocated)
	assert.LessOrEqual(t, st.ChunkBytes, 2*st.LiveBytes+int64(DefaultMaxChunk), "%+v", st)
	assert.Empty(t, s.deferred)
	check(t, s, model)
}
