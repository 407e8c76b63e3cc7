package engine

import (
	"cmp"
	"slices"
	"strings"

	"github.com/google/btree"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
)

// Indexes on measurement fields. As MongoDB does with a bucket's
// control.min and control.max, an index whose leading field is a
// measurement field keeps, per bucket, the least and the greatest key
// (internal/keys, ascending) of that field over the bucket's measurements:
// every array element, and null for a measurement without the field, as an
// ordinary index keys a document. Keys order values of different types by
// BSON type order, so one [min, max] per bucket covers a field of mixed
// types. A query bounded on the field unpacks only the buckets whose
// [min, max] overlaps its bounds, then filters their measurements exactly.
//
// The bounds are kept tight: computed for every bucket when the index is
// created, widened by an insert, recomputed when a trim (PreciseExpiry) or
// a delete by filter rewrites a bucket.

// tsBounds is a bucket's [min, max] key of an index's leading field.
type tsBounds struct{ min, max string }

// tsMeasured is the bucket-level index over the bounds of a measurement
// index: the buckets by min (tsIndex.tree) and by max (byMax), so that a
// query walks whichever side reaches fewer buckets.
type tsMeasured struct {
	bounds map[*bucket]tsBounds
	byMax  *btree.BTreeG[tsEntry]
}

// isMeasurementField reports whether path names a measurement field: not
// the time field or the meta field or a path in either.
func (ts *tsColl) isMeasurementField(path string) bool {
	for _, f := range []string{ts.opts.TimeField, ts.opts.MetaField} {
		if f != "" && (path == f || strings.HasPrefix(path, f+".")) {
			return false
		}
	}
	return true
}

// measurementKeys returns the keys of path in one measurement's encoding,
// sorted, and whether they came from an array (multikey).
func measurementKeys(enc []byte, path string) ([]string, bool) {
	vals, found := codec.EncodedPathValues(enc, path)
	if !found {
		vals = nullValues
	}
	ks, _, multi, err := expandKeys(vals, false)
	if err != nil || len(ks) == 0 {
		// A stored value always has a key; should one not, the bucket
		// stays unbounded, so that every query still finds it.
		return []string{keys.MinKey, keys.MaxKey}, multi
	}
	return ks, multi
}

// measuredBounds computes a bucket's bounds on ix's leading field from its
// measurements.
func (ix *tsIndex) measuredBounds(b *bucket) tsBounds {
	path := ix.keys[0].Field
	var out tsBounds
	for i := range b.offs {
		ks, multi := measurementKeys(b.enc(i), path)
		ix.multikey = ix.multikey || multi
		if i == 0 || ks[0] < out.min {
			out.min = ks[0]
		}
		if i == 0 || ks[len(ks)-1] > out.max {
			out.max = ks[len(ks)-1]
		}
	}
	return out
}

func (ix *tsIndex) addMeasured(b *bucket) {
	bd := ix.measuredBounds(b)
	ix.measured.bounds[b] = bd
	ix.tree.ReplaceOrInsert(tsEntry{bd.min, b})
	ix.measured.byMax.ReplaceOrInsert(tsEntry{bd.max, b})
}

func (ix *tsIndex) removeMeasured(b *bucket) {
	bd, ok := ix.measured.bounds[b]
	if !ok {
		return
	}
	delete(ix.measured.bounds, b)
	ix.tree.Delete(tsEntry{bd.min, b})
	ix.measured.byMax.Delete(tsEntry{bd.max, b})
}

// extendMeasured widens b's bounds to cover a measurement just added to
// it. Call holding the collection's mu for writing.
func (ix *tsIndex) extendMeasured(b *bucket, enc []byte) {
	bd, ok := ix.measured.bounds[b]
	if !ok {
		return // not a member (partial filter)
	}
	ks, multi := measurementKeys(enc, ix.keys[0].Field)
	ix.multikey = ix.multikey || multi
	lo, hi := min(bd.min, ks[0]), max(bd.max, ks[len(ks)-1])
	if lo != bd.min {
		ix.tree.Delete(tsEntry{bd.min, b})
		ix.tree.ReplaceOrInsert(tsEntry{lo, b})
	}
	if hi != bd.max {
		ix.measured.byMax.Delete(tsEntry{bd.max, b})
		ix.measured.byMax.ReplaceOrInsert(tsEntry{hi, b})
	}
	ix.measured.bounds[b] = tsBounds{lo, hi}
}

// overlaps reports whether bounds bd may hold a key in iv.
func (bd tsBounds) overlaps(iv interval) bool {
	if c := strings.Compare(bd.max, iv.loKey); c < 0 || c == 0 && !iv.loInc {
		return false
	}
	c := strings.Compare(bd.min, iv.hiKey)
	return c < 0 || c == 0 && iv.hiInc
}

// overlapping returns the buckets whose bounds overlap iv. It walks the
// buckets by min up from the least (stopping past iv's upper bound) and by
// max down from the greatest (stopping below iv's lower bound), in turns
// with a growing budget, and keeps the walk that ends first: its cost is
// within a constant of the shorter walk. examined counts the entries
// walked.
func (ix *tsIndex) overlapping(iv interval, examined *int) []*bucket {
	var out []*bucket
	walk := func(budget int, byMin bool) bool {
		out = out[:0]
		n := 0
		done := true
		visit := func(e tsEntry) bool {
			if n == budget {
				done = false
				return false
			}
			n++
			if byMin {
				if c := strings.Compare(e.key, iv.hiKey); c > 0 || c == 0 && !iv.hiInc {
					return false
				}
			} else if c := strings.Compare(e.key, iv.loKey); c < 0 || c == 0 && !iv.loInc {
				return false
			}
			if ix.measured.bounds[e.b].overlaps(iv) {
				out = append(out, e.b)
			}
			return true
		}
		if byMin {
			ix.tree.Ascend(visit)
		} else {
			ix.measured.byMax.Descend(visit)
		}
		*examined += n
		return done
	}
	for budget := 64; ; budget *= 4 {
		if walk(budget, true) || walk(budget, false) {
			return out
		}
	}
}

// scanMeasured visits, in creation order, the buckets whose bounds overlap
// any of the intervals, each once, until consider returns false.
func (ix *tsIndex) scanMeasured(ivs []interval, examined *int, consider func(*bucket) bool) {
	var cand []*bucket
	for _, iv := range ivs {
		cand = append(cand, ix.overlapping(iv, examined)...)
	}
	slices.SortFunc(cand, func(a, b *bucket) int { return cmp.Compare(a.seq, b.seq) })
	cand = slices.Compact(cand)
	for _, b := range cand {
		if !consider(b) {
			return
		}
	}
}

// measuredStandIn stands for a measurement index when boundsFor derives
// bounds on its field: multikey once any bucket held an array there, so
// that conditions two elements may meet are not intersected.
func (ix *tsIndex) measuredStandIn() *index {
	if ix.multikey {
		return &index{multikey: true}
	}
	return plainBounds
}
