package store

// idTable is one shard's part of the _id map: an open-addressing hash
// table with linear probing, whose cells are plain integers (a 32-bit tag
// of the key's hash and the record's slot), so that the garbage collector
// never looks inside it and a key costs 11 to 21 bytes (8-byte cells,
// tables 3/8 to 3/4 full), about half of a Go map's. A cell is 0 when empty; a tag always has its top
// bit set, so a used cell never is. The tag's low bits choose the cell a
// key's probe starts at (its home), which a cell's own bits tell again:
// deleting moves the cells after it back (no tombstones), and growing or
// shrinking rehashes cells without reading the keys.
//
// The table holds at most 3/4 of its cells (probes stay short) and is
// rebuilt at twice the size beyond that, and at a quarter of the size when
// fewer than 1/16 are used (mass deletions give memory back). The writer
// builds a new table while readers still probe the old one, and swaps it
// in under the shard lock: a reader waits for the swap, never for the
// rehash.
type idTable struct {
	cells []uint64 // power-of-two length
	n     int      // used cells
}

const minTable = 16 // cells

func tagOf(h uint64) uint32               { return uint32(h) | 1<<31 }
func cellOf(tag uint32, slot Slot) uint64 { return uint64(tag)<<32 | uint64(slot) }
func cellTag(c uint64) uint32             { return uint32(c >> 32) }

func newIDTable(capacity int) idTable {
	return idTable{cells: make([]uint64, capacity)}
}

// tableFor returns the number of cells for n keys after a shrink: the
// smallest power of two that holds them at most 3/8 full (half the growth
// limit), so that a table just shrunk has room to grow and to shrink again.
// (A full table doubles instead: grownSize.)
func tableFor(n int) int {
	c := minTable
	for c*3/8 < n {
		c *= 2
	}
	return c
}

// tableHolding returns the smallest power of two of cells that holds n keys
// within the growth limit (3/4): the table of a store built for n records
// (Fork).
func tableHolding(n int) int {
	c := minTable
	for c*3 < n*4 {
		c *= 2
	}
	return c
}

// grownSize is the size a table of cells cells doubles to when one more
// key would fill it beyond 3/4: it is then just over 3/8 full. (Sizing it
// by tableFor would quadruple it, leaving it 3/16 full.)
func grownSize(cells int) int { return 2 * cells }

// home returns the cell a probe for tag starts at.
func (t *idTable) home(tag uint32) int { return int(tag) & (len(t.cells) - 1) }

// needsGrow reports whether one more key would fill the table beyond 3/4.
func (t *idTable) needsGrow() bool { return (t.n+1)*4 > len(t.cells)*3 }

// needsShrink reports whether the table is large and less than 1/16 used.
func (t *idTable) needsShrink() bool { return len(t.cells) > minTable && t.n*16 < len(t.cells) }

// rebuilt returns a copy of the table in cells cells (a power of two
// that holds its keys within the growth limit). It only reads t: the
// writer calls it with no lock held.
func (t *idTable) rebuilt(cells int) idTable {
	nt := newIDTable(cells)
	mask := len(nt.cells) - 1
	for _, c := range t.cells {
		if c == 0 {
			continue
		}
		i := nt.home(cellTag(c))
		for nt.cells[i] != 0 {
			i = (i + 1) & mask
		}
		nt.cells[i] = c
	}
	nt.n = t.n
	return nt
}

// put adds the cell of (tag, slot). The caller has made room
// (needsGrow). Call holding the shard lock for writing.
func (t *idTable) put(tag uint32, slot Slot) {
	mask := len(t.cells) - 1
	i := t.home(tag)
	for t.cells[i] != 0 {
		i = (i + 1) & mask
	}
	t.cells[i] = cellOf(tag, slot)
	t.n++
}

// remove deletes the cell of (tag, slot), which the table holds, and moves
// back the cells of its probe run that may now sit closer to their home.
// Call holding the shard lock for writing.
func (t *idTable) remove(tag uint32, slot Slot) {
	mask := len(t.cells) - 1
	want := cellOf(tag, slot)
	i := t.home(tag)
	for t.cells[i] != want {
		if t.cells[i] == 0 {
			panic("store: removing a key the _id table does not hold")
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: the hole at i is filled by the next cell of
	// the run whose home is not in (i, j], until an empty cell ends the
	// run.
	for j := i; ; {
		j = (j + 1) & mask
		c := t.cells[j]
		if c == 0 {
			break
		}
		k := t.home(cellTag(c))
		if i <= j {
			if i < k && k <= j {
				continue
			}
		} else if i < k || k <= j {
			continue
		}
		t.cells[i] = c
		i = j
	}
	t.cells[i] = 0
	t.n--
}

// touch reads the home cell of tag and returns it: the batch delete reads
// the home cells of a batch's keys before it deletes them, so that their
// cache misses overlap instead of following one another.
func (t *idTable) touch(tag uint32) uint64 { return t.cells[t.home(tag)] }
