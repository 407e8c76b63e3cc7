package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/btree"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/keys"
	"github.com/ttldb/ttldb/internal/query"
	"github.com/ttldb/ttldb/internal/store"
)

// IndexModel specifies an index for CreateIndex.
type IndexModel struct {
	// Keys are the indexed fields, in order, each ascending (1) or
	// descending (-1). Required. A dotted path indexes a nested field; an
	// array value is indexed by each of its distinct elements (a multikey
	// index), at most MaxIndexKeysPerDocument of them.
	Keys []IndexKey

	// Name defaults to MongoDB's name for the keys: "lastModifiedDate_1",
	// "a_1_b_-1".
	Name string

	// Unique refuses a write that would give two documents the same key
	// (ErrDuplicateKey). A missing field counts as null, unless Sparse.
	Unique bool

	// Sparse leaves out documents that have none of the indexed fields.
	Sparse bool

	// PartialFilterExpression, if set, indexes only the documents that match
	// it (a filter, as for Find). On a TTL index only the matching documents
	// expire.
	PartialFilterExpression Document

	// ExpireAfterSeconds makes the index a TTL index: a document expires
	// ExpireAfterSeconds seconds after the date in its indexed field (see
	// TTLValueForms for which values are dates). nil means no TTL; a pointer
	// to 0 means "expire at the date itself". The valid range is 0 to
	// 2147483647; a negative value is ErrInvalidTTL. Only single-field
	// indexes on a field other than _id, in a collection that is not
	// capped, may have one. Seconds(n) makes the pointer.
	ExpireAfterSeconds *int32

	// TTLValueForms says which values of the indexed field count as dates
	// for expiry. The default reads time.Time values, numbers as Unix
	// seconds and ISO 8601 strings (ArangoDB's forms);
	// TTLValuesDatesOnly is MongoDB's strict mode. Ignored without
	// ExpireAfterSeconds.
	TTLValueForms TTLValueForms
}

// Seconds implements ttldb.Seconds, whose documentation is the contract.
func Seconds(n int32) *int32 { return &n }

// IndexSpec describes an existing index, as Indexes returns it.
type IndexSpec struct {
	Name                    string
	Keys                    []IndexKey
	Unique                  bool
	Sparse                  bool
	PartialFilterExpression Document
	ExpireAfterSeconds      *int32        // nil for an index without TTL
	TTLValueForms           TTLValueForms // meaningful only with ExpireAfterSeconds
	Multikey                bool          // some document has an array in an indexed field
}

// idIndexName is the name of the implicit unique index on _id.
const idIndexName = "_id_"

// defaultIndexName is MongoDB's default name for an index on keys.
func defaultIndexName(keys []IndexKey) string {
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		parts = append(parts, k.Field, strconv.Itoa(k.Order))
	}
	return strings.Join(parts, "_")
}

// validateFieldPath refuses paths MongoDB refuses: empty, with an empty
// component, or starting with '$'.
func validateFieldPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty field path")
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("field path %q is not valid UTF-8", p)
	}
	for _, part := range strings.Split(p, ".") {
		if part == "" {
			return fmt.Errorf("field path %q has an empty component", p)
		}
		if strings.HasPrefix(part, "$") {
			return fmt.Errorf("field path %q: components may not start with '$'", p)
		}
	}
	return nil
}

// indexEntry is one key of one document in an index's B-tree: the key
// (internal/keys) of each indexed field, inverted for a descending one,
// concatenated; then the document's insertion order (the tie-break) and
// its place in the store. Trees compare keys as bytes.
type indexEntry struct {
	key  string
	seq  uint64
	slot store.Slot
}

// index is a secondary index: a B-tree of entries ordered by key (each field
// in its direction) and then by the record's insertion sequence.
//
// Its tree is changed only under the collection's write lock (see
// collState); readers iterate it under the read lock.
type index struct {
	id      uint32 // unique in the collection, never reused: its TTL entries' tag in records
	name    string
	keys    []IndexKey
	unique  bool
	sparse  bool
	partial *query.Filter
	partDoc Document
	ttl     *ttlIndex // nil unless the index has ExpireAfterSeconds
	// tree holds the index's keys. A TTL index has none unless it is
	// unique (or was made TTL by CollMod): its date tree (ttl.expiry)
	// serves both the monitor and the queries it can answer
	// (planDateTree), so an expiring document is in one tree, not two.
	tree     *btree.BTreeG[indexEntry]
	multikey bool
	keyBytes int64 // the heap the tree's keys hold, estimated (memory.go)
}

// btreeDegree is the degree of every B-tree: nodes of 63 to 127 items.
// Items are plain values, so a node is one object whatever its size.
const btreeDegree = 64

// newIndex validates m (already given its default name) and returns an
// empty index for it.
func newIndex(coll string, m IndexModel, capped bool) (*index, error) {
	where := fmt.Sprintf("collection %q index %q", coll, m.Name)
	if len(m.Keys) == 0 {
		return nil, fmt.Errorf("%w: %s: no keys", ErrInvalidIndex, where)
	}
	if !utf8.ValidString(m.Name) {
		return nil, fmt.Errorf("%w: %s: the name is not valid UTF-8", ErrInvalidIndex, where)
	}
	seen := map[string]bool{}
	for _, k := range m.Keys {
		if err := validateFieldPath(k.Field); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidIndex, where, err)
		}
		if k.Order != 1 && k.Order != -1 {
			return nil, fmt.Errorf("%w: %s: field %q: order must be 1 or -1, not %d", ErrInvalidIndex, where, k.Field, k.Order)
		}
		if seen[k.Field] {
			return nil, fmt.Errorf("%w: %s: field %q appears twice", ErrInvalidIndex, where, k.Field)
		}
		seen[k.Field] = true
	}
	ix := &index{
		name:   m.Name,
		keys:   append([]IndexKey(nil), m.Keys...),
		unique: m.Unique,
		sparse: m.Sparse,
	}
	if len(m.PartialFilterExpression) > 0 {
		// A definition the DB holds or is about to hold: a new one was
		// checked by CreateIndex with today's rules; one loaded or applied
		// keeps the meaning it was accepted with.
		f, err := query.CompileStoredFilter(m.PartialFilterExpression)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: partialFilterExpression: %w", ErrInvalidIndex, where, err)
		}
		ix.partial = f
		ix.partDoc = codec.CopyDocument(m.PartialFilterExpression)
	}
	if m.ExpireAfterSeconds != nil {
		ttl, err := newTTLIndex(where, m, capped)
		if err != nil {
			return nil, err
		}
		ix.ttl = ttl
	}
	// After the TTL checks, so that a TTL on _id is ErrInvalidTTL whatever
	// the index's name.
	if m.Name == idIndexName {
		return nil, fmt.Errorf("%w: %s: the name is reserved for the _id index", ErrInvalidIndex, where)
	}
	if ix.ttl == nil || ix.unique {
		ix.tree = btree.NewG(btreeDegree, ix.less)
	}
	return ix, nil
}

// spec describes the index for Indexes and for option comparisons.
func (ix *index) spec() IndexSpec {
	s := IndexSpec{
		Name:     ix.name,
		Keys:     append([]IndexKey(nil), ix.keys...),
		Unique:   ix.unique,
		Sparse:   ix.sparse,
		Multikey: ix.multikey,
	}
	if ix.partDoc != nil {
		s.PartialFilterExpression = codec.CopyDocument(ix.partDoc)
	}
	if ix.ttl != nil {
		s.ExpireAfterSeconds = Seconds(int32(ix.ttl.expireAfter.Load()))
		s.TTLValueForms = ix.ttl.forms
	}
	return s
}

// model returns the specification the index was created from (with its
// ExpireAfterSeconds as it is now), for its OpCreateIndex.
func (ix *index) model() IndexModel {
	sp := ix.spec()
	return IndexModel{
		Keys:                    sp.Keys,
		Name:                    sp.Name,
		Unique:                  sp.Unique,
		Sparse:                  sp.Sparse,
		PartialFilterExpression: sp.PartialFilterExpression,
		ExpireAfterSeconds:      sp.ExpireAfterSeconds,
		TTLValueForms:           sp.TTLValueForms,
	}
}

// sameKeys reports whether two key lists are identical.
func sameKeys(a, b []IndexKey) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sameOptions reports whether ix was made from the same specification as m
// (keys, name and every option), so that CreateIndex(m) is a no-op.
func (ix *index) sameOptions(m IndexModel) bool {
	if !sameKeys(ix.keys, m.Keys) || ix.name != m.Name || ix.unique != m.Unique || ix.sparse != m.Sparse {
		return false
	}
	if (ix.partDoc == nil) != (len(m.PartialFilterExpression) == 0) {
		return false
	}
	if ix.partDoc != nil && query.Compare(ix.partDoc, m.PartialFilterExpression) != 0 {
		return false
	}
	if (ix.ttl == nil) != (m.ExpireAfterSeconds == nil) {
		return false
	}
	if ix.ttl != nil {
		return ix.ttl.expireAfter.Load() == int64(*m.ExpireAfterSeconds) && ix.ttl.forms == m.TTLValueForms
	}
	return true
}

func (ix *index) less(a, b indexEntry) bool {
	if c := strings.Compare(a.key, b.key); c != 0 { // one pass over the bytes
		return c < 0
	}
	return a.seq < b.seq
}

// MaxIndexKeysPerDocument is the most keys one document may have in one
// index: the distinct elements of the array in a multikey field. A write
// of a document over it fails with ErrInvalidDocument naming the field and
// changes nothing, and CreateIndex over a stored one fails. It bounds the
// time one write holds the collection's write lock (under 100 ms at the
// limit on 2 cores: BenchmarkInsertMultikey inserts and deletes such a
// document in 85–210 ms) and the entries one document adds to an index
// tree.
const MaxIndexKeysPerDocument = 1 << 16

// keysOf returns the keys under which doc belongs in the index: none if the
// partial filter or sparseness leaves it out, one per distinct array element
// for a multikey field. It fails (ErrInvalidDocument) for a compound index
// over two array fields, which MongoDB cannot index either, and for a
// document with more than MaxIndexKeysPerDocument keys.
func (ix *index) keysOf(doc Document) (indexKeys, error) {
	if ix.partial != nil && !ix.partial.Matches(doc) {
		return indexKeys{}, nil
	}
	return ix.keysWith(func(path string) ([]any, bool) { return codec.PathValues(doc, path) })
}

// keysOfStored is keysOf for a stored document, decoding only the fields
// the index reads (the whole document only for a partial filter).
func (ix *index) keysOfStored(ref *docRef) (indexKeys, error) {
	if ix.partial != nil {
		return ix.keysOf(ref.get())
	}
	return ix.keysWith(func(path string) ([]any, bool) { return codec.EncodedPathValues(ref.rec.enc, path) })
}

// nullValues stands for a missing field: it is indexed as null.
var nullValues = []any{nil}

// keysWith computes the keys from the values each indexed path reaches.
func (ix *index) keysWith(pathValues func(string) ([]any, bool)) (indexKeys, error) {
	if len(ix.keys) == 1 {
		k := ix.keys[0]
		vals, found := pathValues(k.Field)
		if !found {
			if ix.sparse {
				return indexKeys{}, nil
			}
			vals = nullValues
		}
		ks, vals, mk, err := expandKeys(vals, k.Order < 0)
		if err == nil && len(ks) > MaxIndexKeysPerDocument {
			err = ix.tooManyKeys(k.Field, len(ks))
		}
		if err != nil {
			return indexKeys{}, ix.keyError(k.Field, err)
		}
		return indexKeys{keys: ks, vals: vals, multikey: mk}, nil
	}
	var out indexKeys
	perField := make([][]string, len(ix.keys))
	out.fields = make([][]any, len(ix.keys))
	arrays, missing, total := 0, 0, 1
	for i, k := range ix.keys {
		vals, found := pathValues(k.Field)
		if !found {
			missing++
			vals = nullValues
		}
		ks, vals, mk, err := expandKeys(vals, k.Order < 0)
		if err != nil {
			return indexKeys{}, ix.keyError(k.Field, err)
		}
		if mk {
			out.multikey = true
			arrays++
		}
		if len(ks) > MaxIndexKeysPerDocument {
			return indexKeys{}, ix.keyError(k.Field, ix.tooManyKeys(k.Field, len(ks)))
		}
		perField[i], out.fields[i] = ks, vals
		total *= len(ks) // at most one field has several keys (below)
	}
	if ix.sparse && missing == len(ix.keys) {
		return indexKeys{}, nil
	}
	if arrays > 1 {
		return indexKeys{}, fmt.Errorf("%w: index %q: cannot index parallel arrays", ErrInvalidDocument, ix.name)
	}
	// The keys are every combination of the fields' keys, the last field
	// varying fastest (indexKeys.value relies on it), all in one string.
	size := 0
	for _, ks := range perField {
		n := 0
		for _, k := range ks {
			n += len(k)
		}
		size += n * (total / len(ks))
	}
	buf := make([]byte, 0, size)
	ends := make([]int, 0, total)
	idx := make([]int, len(perField))
	for range total {
		for f, ks := range perField {
			buf = append(buf, ks[idx[f]]...)
		}
		ends = append(ends, len(buf))
		for f := len(idx) - 1; f >= 0; f-- {
			if idx[f]++; idx[f] < len(perField[f]) {
				break
			}
			idx[f] = 0
		}
	}
	out.keys = splitKeys(string(buf), ends)
	return out, nil
}

func (ix *index) tooManyKeys(field string, n int) error {
	return &codec.DocumentError{Path: field, Reason: fmt.Sprintf(
		"index %q: %d distinct keys, more than the %d one document may have in an index (MaxIndexKeysPerDocument)",
		ix.name, n, MaxIndexKeysPerDocument)}
}

// keyError names the index and field of a value that has no key (a value
// the document rules refused already: this cannot happen for a stored
// document).
func (ix *index) keyError(field string, err error) error {
	var de *codec.DocumentError
	if errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("index %q field %q: %w", ix.name, field, err)
}

// splitKeys cuts s at ends into keys that share its memory.
func splitKeys(s string, ends []int) []string {
	keys := make([]string, len(ends))
	start := 0
	for i, e := range ends {
		keys[i] = s[start:e]
		start = e
	}
	return keys
}

// testCountKeyComparisons, when set by a test, counts the key comparisons
// expandKeys makes.
var testCountKeyComparisons *int

// expandKeys turns the values found at an indexed path into index keys and
// the values they were made from: an array contributes each distinct
// element (an empty array is indexed as null, so the document is still
// found by a scan of the index). Distinct elements are found by sorting
// their keys, O(n log n) for n elements; the keys come back sorted and
// share one string.
func expandKeys(vals []any, desc bool) (ks []string, values []any, multikey bool, err error) {
	if len(vals) == 1 && !codec.IsArray(vals[0]) {
		var scratch [64]byte
		k, err := appendKey(scratch[:0], vals[0], desc)
		if err != nil {
			return nil, nil, false, err
		}
		return []string{string(k)}, vals, false, nil
	}
	multikey = len(vals) > 1
	var elems []any
	for _, v := range vals {
		es, ok := codec.ArrayElements(v)
		if !ok {
			elems = append(elems, v)
			continue
		}
		multikey = true
		if len(es) == 0 {
			elems = append(elems, nil)
		}
		if elems == nil && len(vals) == 1 {
			elems = es // the common case: one array, taken as it is
			continue
		}
		elems = append(elems, es...)
	}
	var buf []byte
	ends := make([]int, len(elems))
	for i, e := range elems {
		if buf, err = appendKey(buf, e, desc); err != nil {
			return nil, nil, false, err
		}
		ends[i] = len(buf)
	}
	at := func(i int) []byte {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return buf[start:ends[i]]
	}
	order := make([]int, len(elems))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if testCountKeyComparisons != nil {
			*testCountKeyComparisons++
		}
		return bytes.Compare(at(a), at(b))
	})
	order = slices.CompactFunc(order, func(a, b int) bool { return bytes.Equal(at(a), at(b)) })
	all := string(buf) // every key is a substring of this one allocation
	ks = make([]string, len(order))
	values = make([]any, len(order))
	for j, i := range order {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		ks[j], values[j] = all[start:ends[i]], elems[i]
	}
	return ks, values, multikey, nil
}

// appendKey appends the key of v for an ascending or descending field.
func appendKey(dst []byte, v any, desc bool) ([]byte, error) {
	if desc {
		return keys.AppendDesc(dst, v)
	}
	return keys.Append(dst, v)
}

// insertKeys adds rec under its keys. Call with the collection write lock
// held.
func (ix *index) insertKeys(rec *record, ik indexKeys) {
	if ik.multikey {
		ix.multikey = true
	}
	if ix.tree == nil {
		return
	}
	for _, k := range ik.keys {
		ix.tree.ReplaceOrInsert(indexEntry{key: k, seq: rec.seq, slot: rec.slot})
		ix.keyBytes += keyHeapBytes(k)
	}
}

// removeKeys removes rec's entries. Call with the collection write lock held.
func (ix *index) removeKeys(rec *record, ik indexKeys) {
	if ix.tree == nil {
		return
	}
	for _, k := range ik.keys {
		if _, ok := ix.tree.Delete(indexEntry{key: k, seq: rec.seq}); ok {
			ix.keyBytes -= keyHeapBytes(k)
		}
	}
}

// conflict reports whether a document other than the one with insertion
// sequence self holds key in a unique index.
func (ix *index) conflict(key string, self uint64) bool {
	found := false
	ix.tree.AscendGreaterOrEqual(indexEntry{key: key}, func(e indexEntry) bool {
		if e.key != key {
			return false
		}
		if e.seq != self {
			found = true
			return false
		}
		return true
	})
	return found
}

// CreateIndex implements ttldb.Collection.CreateIndex, whose documentation is the contract.
func (c *Collection) CreateIndex(ctx context.Context, m IndexModel) (name string, err error) {
	if err := c.db.writable(); err != nil {
		return "", err
	}
	if err := c.db.refuseTxn(ctx, "CreateIndex"); err != nil {
		return "", err
	}
	defer c.db.durable(&err)
	return replicated(c.db, func() (string, error) { return c.createIndexBegun(ctx, m) })
}

// createIndexBegun is CreateIndex once the replicator (if any) let it begin.
func (c *Collection) createIndexBegun(ctx context.Context, m IndexModel) (string, error) {
	if err := c.usable(); err != nil {
		return "", err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := checkCtx(ctx); err != nil {
		return "", ctxError(c.name, err)
	}
	if m.Name == "" && len(m.Keys) > 0 {
		m.Name = defaultIndexName(m.Keys)
	}
	if ts := c.timeSeries(); ts != nil {
		return ts.createIndex(m, nil, modeLocal) // time-series: tsindex.go
	}
	m.Keys = slices.Clone(m.Keys)
	if len(m.PartialFilterExpression) > 0 {
		// Validated and in stored form before it is compared with an
		// existing index's (a cyclic filter must not reach Compare).
		f, err := query.CompileFilter(m.PartialFilterExpression)
		if err != nil {
			return "", fmt.Errorf("%w: collection %q index %q: partialFilterExpression: %w", ErrInvalidIndex, c.name, m.Name, err)
		}
		m.PartialFilterExpression = f.Doc()
		if usesExpr(m.PartialFilterExpression) {
			return "", fmt.Errorf("%w: collection %q index %q: partialFilterExpression: $expr is not allowed in a partial index's filter (as in MongoDB)", ErrInvalidIndex, c.name, m.Name)
		}
	}
	if len(m.Keys) == 1 && m.Keys[0] == (IndexKey{Field: "_id", Order: 1}) && m.ExpireAfterSeconds == nil &&
		!m.Unique && !m.Sparse && m.PartialFilterExpression == nil && (m.Name == "_id_1" || m.Name == idIndexName) {
		if _, err := c.read(); err != nil {
			return "", err // closed DB or invalid collection name
		}
		return idIndexName, nil // the implicit _id index
	}
	return c.createIndex(ctx, m)
}

// DropIndex implements ttldb.Collection.DropIndex, whose documentation is the contract.
func (c *Collection) DropIndex(ctx context.Context, name string) (err error) {
	if err := c.db.writable(); err != nil {
		return err
	}
	if err := c.started(ctx); err != nil {
		return err
	}
	if err := c.db.refuseTxn(ctx, "DropIndex"); err != nil {
		return err
	}
	defer c.db.durable(&err)
	_, err = replicated(c.db, func() (struct{}, error) { return struct{}{}, c.dropIndexBegun(name) })
	return err
}

// dropIndexBegun is DropIndex once the replicator (if any) let it begin.
func (c *Collection) dropIndexBegun(name string) error {
	if ts := c.timeSeries(); ts != nil {
		return ts.dropIndex(name, nil) // time-series: tsindex.go
	}
	s, err := c.read()
	if err != nil {
		return err
	}
	if name == idIndexName {
		return fmt.Errorf("%w: collection %q: the _id index cannot be dropped", ErrInvalidIndex, c.name)
	}
	if s == nil {
		return fmt.Errorf("%w: collection %q: no index %q", ErrNotFound, c.name, name)
	}
	return c.write(func(s *collState) error {
		if !s.dropIndex(name) {
			return fmt.Errorf("%w: collection %q: no index %q", ErrNotFound, s.name, name)
		}
		if r := s.oprec; r != nil {
			r.add(s, Op{Kind: OpDropIndex, Index: name})
		}
		s.settleMemory(0)
		return nil
	})
}

// Indexes implements ttldb.Collection.Indexes, whose documentation is the contract.
func (c *Collection) Indexes(ctx context.Context) ([]IndexSpec, error) {
	if err := c.started(ctx); err != nil {
		return nil, err
	}
	if ts := c.timeSeries(); ts != nil {
		return ts.indexSpecs() // time-series: tsindex.go
	}
	s, err := c.read()
	if err != nil || s == nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []IndexSpec{{Name: idIndexName, Keys: []IndexKey{Asc("_id")}, Unique: true}}
	for _, ix := range s.indexes {
		out = append(out, ix.spec())
	}
	return out, nil
}

// usesExpr reports whether a filter holds a $expr anywhere.
func usesExpr(v any) bool {
	if m, ok := codec.AsDocument(v); ok {
		for k, sub := range m {
			if k == "$expr" || usesExpr(sub) {
				return true
			}
		}
		return false
	}
	if elems, ok := codec.ArrayElements(v); ok {
		for _, el := range elems {
			if usesExpr(el) {
				return true
			}
		}
	}
	return false
}
