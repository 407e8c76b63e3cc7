package ttldb

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/btree"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
	"github.com/ttldb/ttldb/internal/store"
)

// IndexModel specifies an index for CreateIndex.
type IndexModel struct {
	// Keys are the indexed fields, in order, each ascending (1) or
	// descending (-1). Required. A dotted path indexes a nested field; an
	// array value is indexed by each of its elements (a multikey index).
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

// Seconds returns a pointer to n, for IndexModel.ExpireAfterSeconds and
// CollModIndex.ExpireAfterSeconds.
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

// indexEntry is one key of one document in an index's B-tree: key is the
// field's value for a single-field index and a compoundKey for a compound
// one; seq and slot are the document's insertion order (the tie-break) and
// its place in the store.
type indexEntry struct {
	key  any
	seq  uint64
	slot store.Slot
}

// compoundKey is the key of a compound index, one value per field.
type compoundKey []any

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
		f, err := query.CompileFilter(m.PartialFilterExpression)
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

// compareKeys orders two keys of this index, each field in its direction.
func (ix *index) compareKeys(a, b any) int {
	if len(ix.keys) == 1 {
		c := query.Compare(a, b)
		if ix.keys[0].Order < 0 {
			c = -c
		}
		return c
	}
	ka, kb := a.(compoundKey), b.(compoundKey)
	for i, k := range ix.keys {
		c := query.Compare(ka[i], kb[i])
		if k.Order < 0 {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func (ix *index) less(a, b indexEntry) bool {
	if c := ix.compareKeys(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// keysOf returns the keys under which doc belongs in the index: none if the
// partial filter or sparseness leaves it out, one per distinct array element
// for a multikey field. It fails (ErrInvalidDocument) for a compound index
// over two array fields, which MongoDB cannot index either.
func (ix *index) keysOf(doc Document) (keys []any, multikey bool, err error) {
	if ix.partial != nil && !ix.partial.Matches(doc) {
		return nil, false, nil
	}
	return ix.keysWith(func(path string) ([]any, bool) { return codec.PathValues(doc, path) })
}

// keysOfStored is keysOf for a stored document, decoding only the fields
// the index reads (the whole document only for a partial filter).
func (ix *index) keysOfStored(ref *docRef) (keys []any, multikey bool, err error) {
	if ix.partial != nil {
		return ix.keysOf(ref.get())
	}
	return ix.keysWith(func(path string) ([]any, bool) { return codec.EncodedPathValues(ref.rec.enc, path) })
}

// keysWith computes the keys from the values each indexed path reaches.
func (ix *index) keysWith(pathValues func(string) ([]any, bool)) (keys []any, multikey bool, err error) {
	if len(ix.keys) == 1 {
		vals, found := pathValues(ix.keys[0].Field)
		if !found {
			if ix.sparse {
				return nil, false, nil
			}
			return []any{nil}, false, nil
		}
		keys, multikey = expandKeyValues(vals)
		return keys, multikey, nil
	}
	perField := make([][]any, len(ix.keys))
	arrays, missing := 0, 0
	for i, k := range ix.keys {
		vals, found := pathValues(k.Field)
		if !found {
			missing++
			perField[i] = []any{nil}
			continue
		}
		var mk bool
		perField[i], mk = expandKeyValues(vals)
		if mk {
			multikey = true
			arrays++
		}
	}
	if ix.sparse && missing == len(ix.keys) {
		return nil, false, nil
	}
	if arrays > 1 {
		return nil, false, fmt.Errorf("%w: index %q: cannot index parallel arrays", ErrInvalidDocument, ix.name)
	}
	keys = []any{compoundKey{}}
	for _, vals := range perField {
		next := make([]any, 0, len(keys)*len(vals))
		for _, prefix := range keys {
			for _, v := range vals {
				k := append(append(compoundKey(nil), prefix.(compoundKey)...), v)
				next = append(next, k)
			}
		}
		keys = next
	}
	return keys, multikey, nil
}

// expandKeyValues turns the values found at an indexed path into index keys:
// an array contributes each distinct element (an empty array is indexed as
// null, so the document is still found by a scan of the index).
func expandKeyValues(vals []any) (keys []any, multikey bool) {
	if len(vals) == 1 && !codec.IsArray(vals[0]) {
		return vals, false
	}
	for _, v := range vals {
		elems, ok := codec.ArrayElements(v)
		if !ok {
			keys = appendDistinct(keys, v)
			continue
		}
		multikey = true
		if len(elems) == 0 {
			keys = appendDistinct(keys, nil)
		}
		for _, e := range elems {
			keys = appendDistinct(keys, e)
		}
	}
	if len(vals) > 1 {
		multikey = true
	}
	return keys, multikey
}

func appendDistinct(keys []any, v any) []any {
	for _, k := range keys {
		if query.Compare(k, v) == 0 {
			return keys
		}
	}
	return append(keys, v)
}

// insertKeys adds rec under keys. Call with the collection write lock held.
func (ix *index) insertKeys(rec *record, keys []any, multikey bool) {
	if multikey {
		ix.multikey = true
	}
	if ix.tree == nil {
		return
	}
	for _, k := range keys {
		ix.tree.ReplaceOrInsert(indexEntry{key: k, seq: rec.seq, slot: rec.slot})
		ix.keyBytes += keyHeapBytes(k)
	}
}

// removeKeys removes rec's entries. Call with the collection write lock held.
func (ix *index) removeKeys(rec *record, keys []any) {
	if ix.tree == nil {
		return
	}
	for _, k := range keys {
		if _, ok := ix.tree.Delete(indexEntry{key: k, seq: rec.seq}); ok {
			ix.keyBytes -= keyHeapBytes(k)
		}
	}
}

// conflict reports whether a document other than the one with insertion
// sequence self holds key in a unique index.
func (ix *index) conflict(key any, self uint64) bool {
	found := false
	ix.tree.AscendGreaterOrEqual(indexEntry{key: key}, func(e indexEntry) bool {
		if ix.compareKeys(e.key, key) != 0 {
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

// CreateIndex builds an index and returns its name. Creating an index that
// exists with the same specification is a no-op that returns its name; the
// same keys (or name) with other options is ErrIndexOptionsConflict, and
// CreateIndex never changes an existing index (use CollMod to change
// ExpireAfterSeconds). A bad specification is ErrInvalidIndex or
// ErrInvalidTTL. If the documents already stored violate a unique index, or
// one cannot be indexed, nothing is created.
//
// The build runs in the background of the call, as MongoDB's hybrid index
// build does (indexbuild.go): it scans the documents holding no lock, while
// readers and writers go on, then applies the writes made meanwhile, and
// holds off writers only for a short final catch-up (at most
// finalCatchUpMax changes) before it publishes the index. Queries see the
// index once it is complete. A unique index fails with ErrDuplicateKey if
// two documents share a key when the build ends, including through writes
// made during the build; a failed build leaves nothing behind. While an
// index is being built, CreateIndex of the same keys or name waits for it,
// and DropIndex and CollMod do not see it yet (ErrNotFound).
func (c *Collection) CreateIndex(m IndexModel) (string, error) {
	if m.Name == "" && len(m.Keys) > 0 {
		m.Name = defaultIndexName(m.Keys)
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
	}
	if len(m.Keys) == 1 && m.Keys[0] == (IndexKey{Field: "_id", Order: 1}) && m.ExpireAfterSeconds == nil &&
		!m.Unique && !m.Sparse && m.PartialFilterExpression == nil && (m.Name == "_id_1" || m.Name == idIndexName) {
		if _, err := c.read(); err != nil {
			return "", err // closed DB or invalid collection name
		}
		return idIndexName, nil // the implicit _id index
	}
	return c.createIndex(m)
}

// DropIndex removes the named index. The _id index cannot be dropped
// (ErrInvalidIndex); a missing index is ErrNotFound.
func (c *Collection) DropIndex(name string) error {
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
		i := slices.IndexFunc(s.indexes, func(ix *index) bool { return ix.name == name })
		if i < 0 {
			return fmt.Errorf("%w: collection %q: no index %q", ErrNotFound, s.name, name)
		}
		s.mu.Lock()
		s.indexes = slices.Delete(slices.Clone(s.indexes), i, i+1)
		s.mu.Unlock()
		s.settleMemory(0)
		return nil
	})
}

// Indexes describes the collection's indexes, the implicit "_id_" first,
// then the others in creation order. A missing collection has none.
func (c *Collection) Indexes() ([]IndexSpec, error) {
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
