package engine

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/store"
)

// collStateOf returns the collection's state, for tests of the layout.
func collStateOf(t *testing.T, c *Collection) *collState {
	t.Helper()
	s, err := c.read()
	require.NoError(t, err)
	require.NotNil(t, s)
	return s
}

func indexNamed(t *testing.T, s *collState, name string) *index {
	t.Helper()
	for _, ix := range s.indexes {
		if ix.name == name {
			return ix
		}
	}
	t.Fatalf("no index %q", name)
	return nil
}

// The items of every tree and the store's records hold no Go pointer: a
// stored document costs the garbage collector nothing to scan.
func TestRecordLayoutHasNoPointers(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[natItem](),
		reflect.TypeFor[expiryEntry](),
		reflect.TypeFor[store.Slot](),
	} {
		assert.False(t, store.HasPointers(typ), "%v holds pointers", typ)
	}
	// indexEntry's key is still an interface (until keys are bytes); its
	// document reference is a slot.
	e := reflect.TypeFor[indexEntry]()
	for i := range e.NumField() {
		if f := e.Field(i); f.Name != "key" {
			assert.False(t, store.HasPointers(f.Type), "indexEntry.%s holds pointers", f.Name)
		}
	}
}

// A TTL index keeps one tree, of (date, seq, slot), which the monitor and
// date queries share; a unique TTL index keeps its key tree as well.
func TestTTLIndexKeepsOneTree(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("events")
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("t")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("v")}, ExpireAfterSeconds: Seconds(60), Unique: true, Sparse: true})
	require.NoError(t, err)
	var docs []Document
	for i := range 100 {
		docs = append(docs, Document{"_id": i, "t": t0.Add(time.Duration(i) * time.Minute)})
	}
	mustInsertMany(t, c, docs)
	s := collStateOf(t, c)
	ix := indexNamed(t, s, "t_1")
	assert.Nil(t, ix.tree, "no key tree")
	assert.Equal(t, 100, ix.ttl.expiry.Len())
	assert.NotNil(t, indexNamed(t, s, "v_1").tree, "a unique TTL index keeps its keys for the unique check")
	_, err = c.InsertMany(context.Background(), []Document{{"_id": "x", "v": t0}, {"_id": "y", "v": t0}})
	require.ErrorIs(t, err, ErrDuplicateKey)
}

// The date tree serves date ranges, equalities and sorts on the TTL field
// where that gives a collection scan's answer: ranges bounded by dates
// while no document holds several values, ranges open below ($lt, $lte)
// always, sorts while every document holds one date.
func TestDateTreeServesQueries(t *testing.T) {
	db, _ := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("events")
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("t")}, ExpireAfterSeconds: Seconds(60)})
	require.NoError(t, err)
	day := func(d int) time.Time { return t0.AddDate(0, 0, d) }
	var docs []Document
	for i := range 20 {
		docs = append(docs, Document{"_id": i, "t": day(i % 10)})
	}
	mustInsertMany(t, c, docs)

	explain := func(f Document, o ...FindOptions) Explanation {
		t.Helper()
		ex, err := c.Explain(context.Background(), f, o...)
		require.NoError(t, err)
		return ex
	}
	ex := explain(Document{"t": Document{"$gte": day(2), "$lt": day(5)}})
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, "t_1", ex.IndexName)
	assert.Equal(t, 6, ex.NReturned)
	assert.Equal(t, 6, ex.KeysExamined, "only the range is walked")
	ex = explain(Document{"t": day(3)})
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, 2, ex.NReturned)
	assert.Equal(t, 2, ex.KeysExamined)
	ex = explain(nil, FindOptions{Sort: []IndexKey{Desc("t")}, Limit: 3})
	assert.Equal(t, "IXSCAN", ex.Stage, "every document holds one date: the tree gives the order")
	assert.False(t, ex.InMemorySort)
	assert.Equal(t, 3, ex.KeysExamined)
	got, err := findDocs(c, nil, FindOptions{Sort: []IndexKey{Desc("t")}, Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, []any{day(9), day(9), day(8)}, []any{got[0]["t"], got[1]["t"], got[2]["t"]})
	ex = explain(Document{"t": Document{"$gt": 3}})
	assert.Equal(t, "COLLSCAN", ex.Stage, "a number bound: numbers keep their own type order")

	// A document without one date: sorts go back to memory, date ranges
	// keep the tree.
	mustInsertMany(t, c, []Document{{"_id": "num", "t": float64(day(4).Unix())}})
	ex = explain(nil, FindOptions{Sort: []IndexKey{Asc("t")}})
	assert.True(t, ex.InMemorySort)
	ex = explain(Document{"t": Document{"$gte": day(2), "$lt": day(5)}})
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, 6, ex.NReturned, "the number read as a date is examined, and does not match a date range")
	assert.Equal(t, 7, ex.KeysExamined)

	// An array expires by its earliest date: a range bounded below could
	// miss it, a range open below cannot.
	mustInsertMany(t, c, []Document{{"_id": "arr", "t": []any{day(0), day(7)}}})
	ex = explain(Document{"t": Document{"$gte": day(7)}})
	assert.Equal(t, "COLLSCAN", ex.Stage)
	assert.Equal(t, 7, ex.NReturned, "days 7, 8 and 9, twice each, and the array")
	ex = explain(Document{"t": Document{"$lt": day(1)}})
	assert.Equal(t, "IXSCAN", ex.Stage)
	assert.Equal(t, 3, ex.NReturned)
	ids := intIDsOf(t, c, Document{"t": Document{"$lt": day(1)}})
	assert.Equal(t, []any{0, 10, "arr"}, ids)
}

func mustInsertMany(t *testing.T, c *Collection, docs []Document) {
	t.Helper()
	_, err := c.InsertMany(context.Background(), docs)
	require.NoError(t, err)
}

func intIDsOf(t *testing.T, c *Collection, f Document) []any {
	t.Helper()
	docs, err := findDocs(c, f)
	require.NoError(t, err)
	var out []any
	for _, d := range docs {
		out = append(out, d["_id"])
	}
	return out
}

// A document's TTL entries are kept in its record, so that removal reads
// them rather than the document; a document stored before its TTL index
// has none, and is removed through the same code computing them.
func TestTTLEntriesKeptWithRecord(t *testing.T) {
	db, clk := openMon(t, quiet(MonitorOptions{}))
	c := db.Collection("events")
	mustInsertMany(t, c, []Document{{"_id": "before", "t": t0}})
	_, err := c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("t")}, ExpireAfterSeconds: Seconds(60),
		PartialFilterExpression: Document{"keep": Document{"$exists": false}}})
	require.NoError(t, err)
	mustInsertMany(t, c, []Document{
		{"_id": "exact", "t": t0},
		{"_id": "array", "t": []any{t0.Add(time.Hour), t0}},
		{"_id": "none", "t": "not a date"},
		{"_id": "kept", "t": t0, "keep": true},
	})
	s := collStateOf(t, c)
	ix := indexNamed(t, s, "t_1")
	recOf := func(id string) record {
		k, err := appendIDKey(nil, id)
		require.NoError(t, err)
		rec, ok := s.lookup(k)
		require.True(t, ok)
		return rec
	}
	entryOf := func(ix *index, id string) (ttlKey, bool) {
		rec := recOf(id)
		return ix.extraTTL(rec.extra, rec.enc)
	}
	// Under a partial filter, a date is kept whole.
	k, found := entryOf(ix, "exact")
	assert.True(t, found)
	assert.Equal(t, ttlKey{date: t0, kind: ttlExact, ok: true}, k)
	k, found = entryOf(ix, "array")
	assert.True(t, found)
	assert.Equal(t, ttlKey{date: t0, kind: ttlMulti, ok: true}, k)
	for _, id := range []string{"none", "kept"} {
		k, found = entryOf(ix, id)
		assert.True(t, found, id)
		assert.False(t, k.ok, "%s: no entry in the tree", id)
	}
	_, found = entryOf(ix, "before")
	assert.False(t, found, "stored before the index")
	assert.Equal(t, 2, ix.ttl.exact, "before and exact")
	assert.Equal(t, 1, ix.ttl.multi)

	// A second TTL index, with no partial filter, on a top-level date:
	// the record keeps where its encoding holds the date (3 bytes, not 10
	// to 12), read back in place; a value that is not a date is kept whole.
	_, err = c.CreateIndex(context.Background(), IndexModel{Keys: []IndexKey{Asc("u")}, ExpireAfterSeconds: Seconds(7200)})
	require.NoError(t, err)
	ix2 := indexNamed(t, s, "u_1")
	mustInsertMany(t, c, []Document{
		{"_id": "plain", "u": t0.Add(time.Nanosecond), "pad": "xxxxxxxx"},
		{"_id": "arango", "u": float64(t0.Unix())},
	})
	plain := recOf("plain")
	_, at, isTime, _ := codec.EncodedTimeAt(plain.enc, "u")
	require.True(t, isTime)
	k, found = ix2.extraTTL(plain.extra, plain.enc)
	assert.True(t, found)
	assert.Equal(t, ttlKey{date: t0.Add(time.Nanosecond), kind: ttlExact, ok: true, at: int32(at)}, k, "read at its offset")
	k, found = ix.extraTTL(plain.extra, plain.enc)
	assert.True(t, found, "the partial index's entry is kept too")
	assert.False(t, k.ok, "plain has no t")
	assert.Equal(t, []byte{byte(ix.id) << 1, byte(ttlNone), byte(ix2.id)<<1 | 1, byte(at)}, []byte(plain.extra),
		"the offset form: the id times 2 plus 1, the offset")
	k, found = entryOf(ix2, "arango")
	assert.True(t, found)
	assert.Equal(t, ttlKey{date: t0, kind: ttlSingle, ok: true}, k)
	require.Equal(t, 2, ix2.ttl.expiry.Len())
	// An update that moves the date within the document keeps the new
	// offset; a stale offset (another document's) is never kept.
	_, err = c.UpdateOne(context.Background(), Document{"_id": "plain"}, Document{"$set": Document{"pad": "a much longer value than before", "u": t0}})
	require.NoError(t, err)
	plain2 := recOf("plain")
	k, found = ix2.extraTTL(plain2.extra, plain2.enc)
	assert.True(t, found)
	assert.Equal(t, t0, k.date)
	stale := ttlKey{date: t0, kind: ttlExact, ok: true, at: int32(at) + 1}
	assert.False(t, ix2.keptAt(stale, plain2.enc), "an offset where the field is not")
	require.NoError(t, c.DropIndex(context.Background(), "u_1"))
	_, err = c.DeleteMany(context.Background(), Document{"u": Document{"$exists": true}})
	require.NoError(t, err)

	clk.Advance(2 * time.Hour)
	res, err := db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, res.Deleted)
	assert.Equal(t, 0, ix.ttl.expiry.Len())
	assert.Equal(t, 0, ix.ttl.exact)
	assert.Equal(t, 0, ix.ttl.multi)
	rest := intIDsOf(t, c, nil)
	slices.SortFunc(rest, func(a, b any) int { return compareStrings(a.(string), b.(string)) })
	assert.Equal(t, []any{"kept", "none"}, rest)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
