package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordLenOf returns the size of the record in slot.
func (s *Store) recordLenOf(slot Slot) int {
	_, size := s.recordSized(slot)
	return size
}

func key(i int) []byte { return []byte(fmt.Sprintf("k%07d", i)) }

// docFor makes a document whose bytes a reader can check against its key
// and version: the key, the version, then filler.
func docFor(k []byte, ver int, size int) []byte {
	d := make([]byte, 0, max(size, 0))
	d = append(d, k...)
	d = binary.LittleEndian.AppendUint64(d, uint64(ver))
	for len(d) < size {
		d = append(d, byte(len(d)))
	}
	return d
}

// check verifies the Store's invariants against a model (key -> doc).
func check(t *testing.T, s *Store, model map[string][]byte) {
	t.Helper()
	require.Equal(t, len(model), s.Len())
	for k, d := range model {
		r, ok := s.Get([]byte(k))
		require.True(t, ok, "key %q", k)
		require.Equal(t, d, r.Doc, "key %q", k)
		require.Equal(t, k, string(r.Key))
		slot, ok := s.Lookup([]byte(k))
		require.True(t, ok)
		require.Equal(t, r.Slot, slot)
	}
	n := 0
	var live int64
	s.Ascend(func(r Record) bool {
		n++
		live += int64(s.recordLenOf(r.Slot))
		require.Equal(t, model[string(r.Key)], r.Doc)
		return true
	})
	require.Equal(t, len(model), n)
	st := s.Stats()
	require.Equal(t, live, st.LiveBytes, "live bytes")
	var perChunk int
	for i, c := range s.chunks.load() {
		if c == nil {
			continue
		}
		perChunk += c.live
		require.LessOrEqual(t, c.used, len(c.buf), "chunk %d", i)
	}
	require.Equal(t, live, int64(perChunk), "chunks' live bytes")
}

func TestInsertGetUpdateDelete(t *testing.T) {
	s := New(Options{})
	v1 := uint64(1)
	slot := s.Insert([]byte("a"), []byte("doc-a"), []byte("x"), 7, v1)
	r, ok := s.Get([]byte("a"))
	require.True(t, ok)
	assert.Equal(t, Record{Slot: slot, Seq: 7, Ver: v1, Key: []byte("a"), Doc: []byte("doc-a"), Extra: []byte("x")}, r)
	_, ok = s.Get([]byte("b"))
	assert.False(t, ok)

	s.Update(slot, []byte("doc-a2"), nil, 2)
	r2, _ := s.Get([]byte("a"))
	assert.Equal(t, uint64(2), r2.Ver)
	assert.Equal(t, slot, r2.Slot, "an update keeps the slot")
	assert.Equal(t, uint64(7), r2.Seq, "and the sequence")
	assert.Equal(t, []byte("doc-a2"), r2.Doc)
	assert.Empty(t, r2.Extra)
	assert.Equal(t, []byte("doc-a"), r.Doc, "the old version read before is unchanged")

	s.Delete(slot)
	_, ok = s.Get([]byte("a"))
	assert.False(t, ok)
	assert.Equal(t, 0, s.Len())
	assert.False(t, s.Live(slot))

	slot3 := s.Insert([]byte("c"), []byte("doc-c"), nil, 8, 3)
	assert.Equal(t, slot, slot3, "a freed slot is reused")
	assert.Equal(t, uint64(3), s.Record(slot3).Ver)
}

// Appending to a returned slice never writes into the chunk.
func TestRecordSlicesAreCapped(t *testing.T) {
	s := New(Options{})
	s.Insert([]byte("a"), []byte("one"), nil, 1, 1)
	s.Insert([]byte("b"), []byte("two"), nil, 2, 2)
	r, _ := s.Get([]byte("a"))
	_ = append(r.Doc, "XXXXXXXX"...)
	_ = append(r.Key, "XXXXXXXX"...)
	rb, _ := s.Get([]byte("b"))
	assert.Equal(t, []byte("two"), rb.Doc)
	assert.Equal(t, []byte("b"), rb.Key)
}

// With a hash of one bit (two values: every key shares its tag with half
// the others), lookups, updates and deletes still find the right record:
// collisions are resolved against the stored key, and deleting a cell in
// the middle of a long probe run keeps the cells after it reachable.
func TestForcedHashCollisions(t *testing.T) {
	s := New(Options{HashBits: 1})
	model := map[string][]byte{}
	slots := map[string]Slot{}
	for i := range 50 {
		k := key(i)
		d := docFor(k, 0, 20)
		slots[string(k)] = s.Insert(k, d, nil, uint64(i), uint64(i)+1)
		model[string(k)] = d
	}
	check(t, s, model)
	// One bit of hash: one shard, two tags.
	assert.Equal(t, 50, s.shard(0).tab.n)
	tags := map[uint32]bool{}
	for _, c := range s.shard(0).tab.cells {
		if c != 0 {
			tags[cellTag(c)] = true
		}
	}
	assert.Len(t, tags, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, i := range rng.Perm(50)[:30] {
		k := string(key(i))
		s.Delete(slots[k])
		delete(model, k)
		check(t, s, model)
	}
	for k := range model {
		d := docFor([]byte(k), 1, 30)
		s.Update(slots[k], d, nil, 100)
		model[k] = d
	}
	check(t, s, model)
	_, ok := s.Get(key(1000))
	assert.False(t, ok)
}

// A seeded random mix of inserts, updates and deletes agrees with a map,
// with small chunks so that relocation runs often.
//
// With Options.KeyOffset, documents that begin with their key (two in
// three here) hold it, and the others store it: lookups, relocation and
// updates that change which it is agree with the model too.
func TestRandomOperationsAgreeWithModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, cfg := range []Options{{}, {HashBits: 2}, {KeyOffset: keyAtStart}, {HashBits: 2, KeyOffset: keyAtStart}} {
		cfg.MaxChunk = MinChunk
		s := New(cfg)
		model := map[string][]byte{}
		slots := map[string]Slot{}
		docOf := func(k []byte, ver, size int) []byte {
			d := docFor(k, ver, size)
			if rng.IntN(3) == 0 {
				d[0] = '#' // not the key: stored
			}
			return d
		}
		for step := range 20000 {
			k := key(rng.IntN(2000))
			switch d, ok := model[string(k)]; {
			case !ok:
				nd := docOf(k, step, 10+rng.IntN(300))
				slots[string(k)] = s.Insert(k, nd, []byte{byte(step)}, uint64(step), uint64(step)+1)
				model[string(k)] = nd
			case rng.IntN(3) == 0:
				nd := docOf(k, step, len(d)+rng.IntN(50)-25)
				s.Update(slots[string(k)], nd, nil, uint64(step)+1)
				model[string(k)] = nd
			default:
				s.Delete(slots[string(k)])
				delete(model, string(k))
			}
			if step%2000 == 0 {
				check(t, s, model)
			}
		}
		check(t, s, model)
		st := s.Stats()
		assert.Positive(t, st.Relocated, "small chunks get relocated")
		// Every chunk but the active one is at least half live.
		assert.LessOrEqual(t, st.ChunkBytes, 2*st.LiveBytes+2*MinChunk)
	}
}

// keyAtStart is a KeyOffset for docFor's documents: the key is at 0.
func keyAtStart([]byte) int { return 0 }

// A document that holds its key where KeyOffset says keeps it: the record
// does not store it again, and Record.Key is a view of the document,
// capped so that an append cannot write into the chunk. An offset that is
// wrong, out of the document or saves nothing leaves the key stored.
func TestKeyHeldByDocument(t *testing.T) {
	offsets := map[string]int{"at4": 4, "neg": -1, "out": 100, "mismatch": 0, "short": 0}
	s := New(Options{KeyOffset: func(doc []byte) int { return offsets[string(doc[:bytes.IndexByte(doc, ':')])] }})
	k := []byte("key-0001")
	slot := s.Insert(k, []byte("at4:key-0001 and more"), []byte("x"), 1, 1)
	r := s.Record(slot)
	assert.Equal(t, k, r.Key)
	assert.Equal(t, []byte("at4:key-0001 and more"), r.Doc)
	assert.Same(t, &r.Doc[4], &r.Key[0], "a view of the document")
	assert.Equal(t, len(r.Key), cap(r.Key))
	_ = append(r.Key, "XXXX"...)
	assert.Equal(t, []byte("at4:key-0001 and more"), s.Record(slot).Doc, "an append to the key writes nothing into the chunk")
	held := s.recordLenOf(slot)
	assert.Equal(t, recordSize(len(k), len(r.Doc), 1)-len(k)+1, held, "the key's bytes are not stored; its offset is (one byte)")
	got, ok := s.Get(k)
	require.True(t, ok)
	assert.Equal(t, slot, got.Slot)

	for i, doc := range []string{"neg:key-0002", "out:key-0003", "mismatch:key-0004 ", "short:k"} {
		kk := []byte(fmt.Sprintf("key-%04d", i+2))
		if i == 3 {
			kk = []byte("s") // one byte: an offset saves nothing
		}
		sl := s.Insert(kk, []byte(doc), nil, uint64(i+2), 1)
		assert.Equal(t, recordSize(len(kk), len(doc), 0), s.recordLenOf(sl), doc)
		rr, ok := s.Get(kk)
		require.True(t, ok, doc)
		assert.Equal(t, kk, rr.Key, doc)
	}

	// An update to a document that no longer holds the key stores it, and
	// back; the key and the old version read before stay as they were.
	s.Update(slot, []byte("neg:no key here"), nil, 2)
	r2, ok := s.Get(k)
	require.True(t, ok)
	assert.Equal(t, k, r2.Key)
	assert.Equal(t, []byte("at4:key-0001 and more"), r.Doc)
	s.Update(slot, []byte("at4:key-0001!"), nil, 3)
	r3, ok := s.Get(k)
	require.True(t, ok)
	assert.Equal(t, []byte("at4:key-0001!"), r3.Doc)
	assert.Same(t, &r3.Doc[4], &r3.Key[0])
	s.Delete(slot)
	_, ok = s.Get(k)
	assert.False(t, ok)
	st := s.Stats()
	var live int64
	s.Ascend(func(r Record) bool { live += int64(s.recordLenOf(r.Slot)); return true })
	assert.Equal(t, live, st.LiveBytes)
}

// Deleting in insertion order empties chunks nearly whole: the last
// quarter of each moves, and the chunk goes. Deleting two records in three
// leaves chunks a third live: when new records need a chunk, the live
// records of those move and the chunks go. Deleting nine in ten moves the
// survivors at once.
func TestReclaim(t *testing.T) {
	s := New(Options{})
	const n = 100_000
	slots := make([]Slot, n)
	for i := range n {
		slots[i] = s.Insert(key(i), docFor(key(i), 0, 100), nil, uint64(i), uint64(i)+1)
	}
	full := s.Stats()
	require.Greater(t, full.Chunks, 5)
	for i := range n / 2 {
		s.Delete(slots[i])
	}
	half := s.Stats()
	assert.LessOrEqual(t, half.Relocated, int64(n/2/4+n/100), "deleting in order moves at most a quarter of a chunk per chunk")
	assert.Less(t, half.ChunkBytes, full.ChunkBytes*6/10)
	assert.Positive(t, half.Dropped)
	model := map[string][]byte{}
	for i := n / 2; i < n; i++ {
		if i%3 == 2 {
			model[string(key(i))] = docFor(key(i), 0, 100)
		} else {
			s.Delete(slots[i])
		}
	}
	sparse := s.Stats()
	assert.Greater(t, sparse.ChunkBytes, 2*sparse.LiveBytes, "chunks a third live wait for a new chunk")
	for i := n; i < n+n/10; i++ {
		s.Insert(key(i), docFor(key(i), 0, 100), nil, uint64(i), uint64(i)+1)
		model[string(key(i))] = docFor(key(i), 0, 100)
	}
	after := s.Stats()
	assert.Positive(t, after.Relocated, "new chunks reclaim mostly-dead ones")
	assert.Less(t, after.ChunkBytes, sparse.ChunkBytes, "inserting 10%% more leaves the store smaller")
	check(t, s, model)

	// Reclaim moves everything reclaimable at once.
	for i := n / 2; i < n; i += 6 {
		if s.Live(slots[i]) && string(s.Record(slots[i]).Key) == string(key(i)) {
			s.Delete(slots[i])
			delete(model, string(key(i)))
		}
	}
	// Nine in ten: the survivors move at once.
	s2 := New(Options{})
	slots2 := make([]Slot, n)
	for i := range n {
		slots2[i] = s2.Insert(key(i), docFor(key(i), 0, 100), nil, uint64(i), uint64(i)+1)
	}
	for i := range n {
		if i%10 != 0 {
			s2.Delete(slots2[i])
		}
	}
	st2 := s2.Stats()
	assert.LessOrEqual(t, st2.ChunkBytes, 2*st2.LiveBytes+int64(DefaultMaxChunk), "%+v", st2)
	assert.Positive(t, st2.Relocated)

	freed := s.Reclaim()
	st := s.Stats()
	t.Logf("reclaim freed %d bytes: %d chunk bytes for %d live", freed, st.ChunkBytes, st.LiveBytes)
	assert.LessOrEqual(t, st.ChunkBytes, 2*st.LiveBytes+int64(DefaultMaxChunk))
	check(t, s, model)
}

// A record larger than a quarter of a chunk gets a chunk of its own, which
// goes as soon as the record does.
func TestLargeRecordOwnChunk(t *testing.T) {
	s := New(Options{})
	big := bytes.Repeat([]byte("b"), 3*DefaultMaxChunk)
	slot := s.Insert([]byte("big"), big, nil, 1, 1)
	s.Insert([]byte("small"), []byte("s"), nil, 2, 2)
	r, _ := s.Get([]byte("big"))
	assert.Equal(t, big, r.Doc)
	before := s.Stats()
	s.Delete(slot)
	after := s.Stats()
	assert.Equal(t, before.Chunks-1, after.Chunks)
	assert.Less(t, after.ChunkBytes, int64(MinChunk+1))
}

// The record layout holds no Go pointers: the slot table's pages and the
// map's keys and values are scanned by no garbage collector.
func TestNoPointersInLayout(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[entry](),
		reflect.TypeFor[page](),
		reflect.TypeFor[Slot](),
		reflect.TypeFor[idTable]().Field(0).Type.Elem(), // the table's cells
		reflect.TypeFor[pendingDelete](),
	} {
		assert.False(t, HasPointers(typ), "%v holds pointers", typ)
	}
	assert.True(t, HasPointers(reflect.TypeFor[struct{ b []byte }]()), "the walk finds pointers")
	assert.True(t, HasPointers(reflect.TypeFor[[2]struct{ a any }]()))
}

func TestFork(t *testing.T) {
	s := New(Options{})
	var slots []Slot
	for i := range 1000 {
		sl := s.Insert(key(i), docFor(key(i), 0, 50), []byte("e"), uint64(i), uint64(i)+1)
		slots = append(slots, sl)
	}
	for _, sl := range slots[:900] {
		s.Delete(sl)
	}
	n := s.Fork(100)
	model := map[string][]byte{}
	for _, sl := range slots[900:] {
		old := s.Record(sl)
		ns := n.CopyFrom(s, sl)
		r := n.Record(ns)
		assert.Equal(t, old.Seq, r.Seq)
		assert.Equal(t, old.Ver, r.Ver, "a copy keeps the version")
		assert.Equal(t, old.Extra, r.Extra)
		model[string(old.Key)] = old.Doc
	}
	check(t, n, model)
	assert.Equal(t, 100, n.Stats().Slots, "a copy renumbers slots densely")
}

// Readers by key run concurrently with a writer that inserts, updates,
// deletes and relocates (small chunks): each read returns a whole,
// consistent version of the document it asked for, and the bytes a reader
// holds never change. Run with -race.
func TestConcurrentReadersAndWriter(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyHeld=%v", held), func(t *testing.T) {
			opts := Options{MaxChunk: MinChunk}
			if held {
				opts.KeyOffset = keyAtStart
			}
			concurrentReadersAndWriter(t, New(opts))
		})
	}
}

func concurrentReadersAndWriter(t *testing.T, s *Store) {
	const keys = 500
	slots := make([]Slot, keys)
	for i := range keys {
		slots[i] = s.Insert(key(i), docFor(key(i), 0, 40), nil, uint64(i), uint64(i)+1)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, misses atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			var held []Record
			for !stop.Load() {
				k := key(rng.IntN(keys))
				r, ok := s.Get(k)
				if !ok {
					misses.Add(1)
					continue
				}
				reads.Add(1)
				if !bytes.Equal(r.Key, k) || !bytes.HasPrefix(r.Doc, k) {
					t.Errorf("read %q: key %q doc %q", k, r.Key, r.Doc)
					return
				}
				if len(held) < 64 {
					held = append(held, Record{Key: r.Key, Doc: r.Doc, Extra: append([]byte(nil), r.Doc...)})
				}
			}
			for _, h := range held {
				if !bytes.Equal(h.Doc, h.Extra) {
					t.Errorf("the bytes of %q changed after the read", h.Key)
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(7, 7))
	live := make([]bool, keys)
	for i := range live {
		live[i] = true
	}
	for step := 1; step <= 30000; step++ {
		i := rng.IntN(keys)
		switch {
		case !live[i]:
			slots[i] = s.Insert(key(i), docFor(key(i), step, 20+rng.IntN(200)), nil, uint64(step), uint64(step)+1)
			live[i] = true
		case rng.IntN(2) == 0:
			s.Update(slots[i], docFor(key(i), step, 20+rng.IntN(200)), nil, uint64(step))
		default:
			s.Delete(slots[i])
			live[i] = false
		}
	}
	stop.Store(true)
	wg.Wait()
	assert.Positive(t, s.Stats().Relocated)
	t.Logf("%d reads, %d misses, %d relocated", reads.Load(), misses.Load(), s.Stats().Relocated)
}

func heap() (bytes, objects uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	smp := []metrics.Sample{{Name: "/gc/heap/objects:objects"}}
	metrics.Read(smp)
	return ms.HeapAlloc, smp[0].Value.Uint64()
}

// The bytes a Store accounts are within 15% of the heap it takes, and it
// is a few objects per thousand records.
func TestAccountingMatchesHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 200k records")
	}
	const n = 200_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = key(i)
	}
	doc := docFor(key(0), 0, 90)
	b0, o0 := heap()
	s := New(Options{})
	for i := range n {
		s.Insert(keys[i], doc, nil, uint64(i), uint64(i)+1)
	}
	b1, o1 := heap()
	grown := float64(b1 - b0)
	acct := float64(s.Bytes())
	t.Logf("%d records: heap +%.0f B (%.1f B/rec), accounted %.0f B, %.4f objects/rec", n, grown, grown/n, acct, float64(o1-o0)/n)
	assert.InDelta(t, 1, acct/grown, 0.15, "accounted %.0f vs heap %.0f", acct, grown)
	assert.Less(t, float64(o1-o0)/n, 0.01)
	runtime.KeepAlive(s)
	runtime.KeepAlive(keys)
}

// MapEntryBytes is what a shard's map costs per entry, measured.
func TestMapEntryBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("measures maps")
	}
	for _, n := range []int{30_000, 100_000, 300_000} {
		b0, _ := heap()
		var ms [numShards]map[uint64]Slot
		for i := range ms {
			ms[i] = map[uint64]Slot{}
		}
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		for i := range n {
			h := rng.Uint64()
			ms[h>>58][h] = Slot(i)
		}
		b1, _ := heap()
		per := float64(b1-b0) / float64(n)
		t.Logf("%d entries: %.1f B/entry", n, per)
		assert.InDelta(t, MapEntryBytes, per, 0.35*MapEntryBytes)
		runtime.KeepAlive(ms)
	}
}

func BenchmarkGet(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			s := New(Options{})
			keys := make([][]byte, n)
			for i := range n {
				keys[i] = key(i)
				s.Insert(keys[i], docFor(keys[i], 0, 90), nil, uint64(i), uint64(i)+1)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := s.Get(keys[(i*7919)%n]); !ok {
					b.Fatal("missing")
				}
				i++
			}
		})
	}
}

// BenchmarkInsert reports the heap objects and bytes per record a Store
// of n records holds.
func BenchmarkInsert(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			keys := make([][]byte, n)
			for i := range n {
				keys[i] = key(i)
			}
			doc := docFor(key(0), 0, 90)
			b.ReportAllocs()
			var objs, byts float64
			for b.Loop() {
				b.StopTimer()
				b0, o0 := heap()
				b.StartTimer()
				s := New(Options{})
				for i := range n {
					s.Insert(keys[i], doc, nil, uint64(i), uint64(i)+1)
				}
				b.StopTimer()
				b1, o1 := heap()
				objs, byts = float64(o1-o0)/float64(n), float64(b1-b0)/float64(n)
				runtime.KeepAlive(s)
				b.StartTimer()
			}
			b.ReportMetric(objs, "objs/rec")
			b.ReportMetric(byts, "B/rec")
		})
	}
}

func BenchmarkDeleteInOrder(b *testing.B) {
	const n = 1_000_000
	doc := docFor(key(0), 0, 90)
	for b.Loop() {
		b.StopTimer()
		s := New(Options{})
		slots := make([]Slot, n)
		for i := range n {
			slots[i] = s.Insert(key(i), doc, nil, uint64(i), uint64(i)+1)
		}
		b.StartTimer()
		for _, sl := range slots {
			s.Delete(sl)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "deletes/s")
}

// A chunk dropped while listed for reclaiming lets its memory go at once:
// a store that only deletes holds no dropped chunk.
func TestDroppedChunksAreReleased(t *testing.T) {
	const n = 100_000
	b0, _ := heap()
	s := New(Options{})
	slots := make([]Slot, n)
	for i := range n {
		slots[i] = s.Insert(key(i), docFor(key(i), 0, 100), nil, uint64(i), uint64(i)+1)
	}
	for i := range n {
		if i%10 != 0 {
			s.Delete(slots[i])
		}
	}
	b1, _ := heap()
	st := s.Stats()
	t.Logf("heap +%d KiB for %d KiB of chunks (%d KiB live)", (b1-b0)>>10, st.ChunkBytes>>10, st.LiveBytes>>10)
	// Chunks, the slot table (32 B a slot) and the map (its peak).
	bound := st.ChunkBytes + n*entrySize + n*2*MapEntryBytes
	assert.Less(t, int64(b1-b0), bound)
	runtime.KeepAlive(s)
}

// InsertNew stores a new key once and finds it after, also when its hash
// collides with another key's.
func TestInsertNew(t *testing.T) {
	for _, bits := range []uint{0, 1} {
		s := New(Options{HashBits: bits})
		var slots []Slot
		for i := range 50 {
			k := []byte(fmt.Sprintf("k%d", i))
			slot, ok := s.InsertNew(k, []byte("d"), nil, uint64(i+1), uint64(i+1))
			require.True(t, ok)
			slots = append(slots, slot)
		}
		for i := range 50 {
			k := []byte(fmt.Sprintf("k%d", i))
			slot, ok := s.InsertNew(k, []byte("other"), nil, 99, 99)
			require.False(t, ok, "bits %d key %s", bits, k)
			require.Equal(t, slots[i], slot)
			got, found := s.Get(k)
			require.True(t, found)
			require.Equal(t, []byte("d"), got.Doc)
		}
		require.Equal(t, 50, s.Len())
	}
}

// TestInsertNewHashed: the hashes PrefetchHashed gives are the ones the
// store looks keys up by, with colliding hashes too: a key inserted with
// its hash is found by Get, a second insert of it finds the first, and
// the result equals InsertNew's on a twin store.
func TestInsertNewHashed(t *testing.T) {
	for _, bits := range []uint{0, 1} {
		s := New(Options{HashBits: bits})
		twin := New(Options{HashBits: bits, Seed: s.opts.Seed})
		keys := make([][]byte, 300)
		for i := range keys {
			keys[i] = key(i % 200) // the last 100 again
		}
		hashes := s.PrefetchHashed(keys, nil)
		require.Len(t, hashes, len(keys))
		for i, k := range keys {
			slot, ins := s.InsertNewHashed(hashes[i], k, []byte{byte(i)}, nil, uint64(i), uint64(i+1))
			tslot, tins := twin.InsertNew(k, []byte{byte(i)}, nil, uint64(i), uint64(i+1))
			require.Equal(t, tslot, slot)
			require.Equal(t, tins, ins)
			require.Equal(t, i < 200, ins, "key %d", i)
			r, ok := s.Get(k)
			require.True(t, ok)
			require.Equal(t, slot, r.Slot)
		}
		require.Equal(t, 200, s.Len())
	}
}

// TestInsertHashedReturnsStoredRecord: the record InsertHashed returns is
// the one Record reads back: the same slot, sequence, version and bytes,
// views of the same chunk memory with the same capacities, for a key the
// document holds, a key stored beside it, and a record large enough for a
// chunk of its own.
func TestInsertHashedReturnsStoredRecord(t *testing.T) {
	s := New(Options{KeyOffset: keyAtStart, MaxChunk: MinChunk})
	docs := [][]byte{
		[]byte("held-key:doc"),                    // holds its key at 0
		[]byte("other doc"),                       // does not
		bytes.Repeat([]byte("x"), 2*MinChunk),     // its own chunk
		[]byte("held-key-2 with extra following"), // holds it, with extra bytes
	}
	keys := [][]byte{[]byte("held-key"), []byte("stored-key"), []byte("big"), []byte("held-key-2")}
	extras := [][]byte{nil, []byte("e1"), []byte("e2"), []byte("extra")}
	hashes := s.PrefetchHashed(keys, nil)
	for i := range docs {
		got := s.InsertHashed(hashes[i], keys[i], docs[i], extras[i], uint64(10+i), uint64(20+i))
		want := s.Record(got.Slot)
		require.Equal(t, want.Slot, got.Slot)
		require.Equal(t, want.Seq, got.Seq)
		require.Equal(t, want.Ver, got.Ver)
		for j, pair := range [][2][]byte{{want.Key, got.Key}, {want.Doc, got.Doc}, {want.Extra, got.Extra}} {
			w, g := pair[0], pair[1]
			require.Equal(t, w, g, "record %d part %d", i, j)
			require.Equal(t, cap(w), cap(g), "record %d part %d: capacity", i, j)
			if len(w) > 0 {
				require.Same(t, &w[0], &g[0], "record %d part %d: the same chunk bytes", i, j)
			}
		}
		require.Equal(t, keys[i], got.Key)
		require.Equal(t, docs[i], got.Doc)
		require.Equal(t, len(extras[i]), len(got.Extra))
	}
	held := s.Record(s.InsertHashed(s.PrefetchHashed([][]byte{[]byte("held-key-3")}, nil)[0], []byte("held-key-3"), []byte("held-key-3!"), nil, 99, 99).Slot)
	require.Same(t, &held.Doc[0], &held.Key[0], "a held key is a view of its document")
}

// TestSeqAndVersionBound: a slot's entry keeps sequences and versions up
// to MaxSeq exactly (both halves of each), and refuses one above it
// rather than keep it wrapped.
func TestSeqAndVersionBound(t *testing.T) {
	s := New(Options{})
	vals := []uint64{1, 1<<32 - 1, 1 << 32, 1<<32 + 7, MaxSeq - 1, MaxSeq}
	for i, v := range vals {
		slot := s.Insert(key(i), []byte("d"), nil, v, vals[len(vals)-1-i])
		r := s.Record(slot)
		require.Equal(t, v, r.Seq)
		require.Equal(t, vals[len(vals)-1-i], r.Ver)
		s.Update(slot, []byte("e"), nil, v)
		r = s.Record(slot)
		require.Equal(t, v, r.Seq, "the sequence stays")
		require.Equal(t, v, r.Ver)
		require.True(t, s.Live(slot))
	}
	require.NoError(t, CheckSeq(MaxSeq, MaxSeq))
	require.ErrorIs(t, CheckSeq(MaxSeq+1, 1), ErrSeqRange)
	require.ErrorIs(t, CheckSeq(1, MaxSeq+1), ErrSeqRange)
	require.Panics(t, func() { s.Insert(key(100), nil, nil, MaxSeq+1, 1) })
	require.Panics(t, func() { s.Insert(key(101), nil, nil, 1, MaxSeq+1) })
	require.Panics(t, func() { s.Insert(key(102), nil, nil, 1, 0) })
	slot, _ := s.Lookup(key(0))
	require.Panics(t, func() { s.Update(slot, nil, nil, MaxSeq+1) })
	require.Panics(t, func() { s.Update(slot, nil, nil, 0) })
	// A version whose low 32 bits are 0 is a live record.
	s.Update(slot, []byte("f"), nil, 1<<32)
	require.True(t, s.Live(slot))
	require.Equal(t, len(vals), s.Len())
}
