package ttldb_test

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ttldb/ttldb"
)

// docBuilder turns fuzzer bytes into a document, recording whether ttldb
// must refuse it (bad) and what it must store otherwise (want).
type docBuilder struct {
	data []byte
	bad  bool
}

func (b *docBuilder) byte() byte {
	if len(b.data) == 0 {
		return 0
	}
	c := b.data[0]
	b.data = b.data[1:]
	return c
}

func (b *docBuilder) u64() uint64 {
	var buf [8]byte
	for i := range buf {
		buf[i] = b.byte()
	}
	return binary.LittleEndian.Uint64(buf[:])
}

var fuzzKeys = []string{"a", "b", "c", "_id", "long-key", "ü", "$x", "a.b", ""}

func (b *docBuilder) key() string {
	k := fuzzKeys[int(b.byte())%len(fuzzKeys)]
	if k == "" || k[0] == '$' || k == "a.b" {
		b.bad = true
	}
	return k
}

// value returns the value to insert and the value ttldb must store.
func (b *docBuilder) value(depth int) (in, want any) {
	in, want = b.rawValue(depth)
	if want != nil {
		return in, want
	}
	if p, ok := in.(*time.Time); ok && p == nil {
		return in, nil
	}
	return in, in
}

// rawValue is value with a nil want meaning "the same as in".
func (b *docBuilder) rawValue(depth int) (in, want any) {
	kind := b.byte() % 26
	if depth > 4 && kind >= 17 && kind <= 21 {
		kind = 0
	}
	switch kind {
	case 0:
		return nil, nil
	case 1:
		return b.byte()%2 == 0, nil
	case 2:
		v := int64(b.u64())
		return v, nil
	case 3:
		return int8(b.byte()), nil
	case 4:
		return uint32(b.u64()), nil
	case 5:
		return b.u64(), nil
	case 6:
		return math.Float64frombits(b.u64()), nil // NaN, ±Inf, -0 included
	case 7:
		return float32(math.Float64frombits(b.u64())), nil
	case 8:
		n := int(b.byte() % 8)
		s := make([]byte, n)
		for i := range s {
			s[i] = b.byte()
		}
		if !utf8.Valid(s) {
			b.bad = true // strings must be valid UTF-8
		}
		return string(s), nil
	case 9:
		n := int(b.byte() % 8)
		s := make([]byte, n)
		for i := range s {
			s[i] = b.byte()
		}
		return s, nil
	case 10:
		t := time.Unix(int64(b.u64()%(1<<40))-(1<<39), int64(b.byte())*1000).In(time.FixedZone("z", int(int8(b.byte()))*900))
		return t, nil
	case 11:
		t := time.Unix(int64(b.u64()%(1<<35)), 0).UTC()
		if b.byte()%2 == 0 {
			return (*time.Time)(nil), nil
		}
		return &t, t
	case 12:
		var id ttldb.ObjectID
		binary.LittleEndian.PutUint64(id[:], b.u64())
		return id, nil
	case 13:
		return []int{int(b.byte()), int(b.byte())}, nil
	case 14:
		return []string{"x", string(rune(b.byte()))}, nil
	case 15:
		return []float64{math.Float64frombits(b.u64())}, nil
	case 16:
		return []time.Time{time.Unix(int64(b.byte()), 0).UTC()}, nil
	case 17:
		n := int(b.byte() % 4)
		in, want := make([]any, n), make([]any, n)
		for i := range n {
			in[i], want[i] = b.value(depth + 1)
		}
		return in, want
	case 18, 19:
		return b.document(depth + 1)
	case 20:
		n := int(b.byte() % 3)
		in, want := make([]map[string]any, n), make([]map[string]any, n)
		for i := range n {
			d, w := b.document(depth + 1)
			in[i], want[i] = d.(ttldb.Document), w.(ttldb.Document)
		}
		return in, want
	case 21:
		// Deep nesting, far from the limit either way.
		levels := 30
		if b.byte()%2 == 0 {
			levels = 150
			b.bad = true
		}
		var in any = 1
		for range levels {
			in = ttldb.Document{"d": in}
		}
		return in, in
	}
	// Values ttldb must refuse.
	b.bad = true
	switch kind {
	case 22:
		return make(chan int), nil
	case 23:
		return func() {}, nil
	case 24:
		return struct{ A int }{1}, nil
	default:
		cyc := ttldb.Document{}
		cyc["self"] = cyc
		return cyc, nil
	}
}

func (b *docBuilder) document(depth int) (in any, want any) {
	n := int(b.byte() % 5)
	d, w := ttldb.Document{}, ttldb.Document{}
	outer := b.bad
	badKey := map[string]bool{} // a later value for a key replaces the earlier one
	for range n {
		b.bad = false
		k := b.key()
		d[k], w[k] = b.value(depth)
		badKey[k] = b.bad
	}
	b.bad = outer
	for k, bad := range badKey {
		if bad && !(depth == 0 && k == "_id") { // the top-level _id is replaced
			b.bad = true
		}
	}
	return d, w
}

// FuzzInsertDocument builds documents from the fuzzer's bytes, inserts
// them and reads them back: nothing panics, a document ttldb must refuse is
// refused with ErrInvalidDocument and not stored, and an accepted document
// comes back equal to what went in.
func FuzzInsertDocument(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {3, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8}, {4, 1, 17, 3, 0, 1, 6, 2, 18, 2, 0, 8, 3, 'a', 'b', 'c'},
		{2, 2, 21, 1, 7, 6, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, {1, 6, 22}, {1, 0, 11, 1, 2, 3, 4, 5, 6, 7, 8, 1},
		{1, 8, 0}, {1, 1, 25}, {2, 0, 20, 2, 1, 1, 9, 3, 1, 2, 3},
	} {
		f.Add(seed)
	}
	db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	c := db.Collection("fuzz")
	var next int64
	f.Fuzz(func(t *testing.T, data []byte) {
		b := &docBuilder{data: data}
		in, want := b.document(0)
		doc, wdoc := in.(ttldb.Document), want.(ttldb.Document)
		next++
		id := next
		doc["_id"], wdoc["_id"] = id, id
		_, err := c.InsertOne(doc)
		if b.bad {
			if !errors.Is(err, ttldb.ErrInvalidDocument) {
				t.Fatalf("want ErrInvalidDocument, got %v", err)
			}
			if _, err := c.FindOne(ttldb.Document{"_id": id}).Document(); !errors.Is(err, ttldb.ErrNotFound) {
				t.Fatalf("refused document was stored: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("InsertOne: %v", err)
		}
		got, err := c.FindOne(ttldb.Document{"_id": id}).Document()
		if err != nil {
			t.Fatalf("FindOne: %v", err)
		}
		if !fuzzEqual(reflect.ValueOf(got), reflect.ValueOf(map[string]any(wdoc))) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, wdoc)
		}
		if _, err := c.DeleteOne(ttldb.Document{"_id": id}); err != nil {
			t.Fatal(err)
		}
	})
}

// fuzzEqual is reflect.DeepEqual with NaN equal to NaN, and a got time
// (a) equal to a wanted one (b) when it is the same instant, in UTC.
func fuzzEqual(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Kind() == reflect.Interface {
		if a.IsNil() || b.Kind() != reflect.Interface || b.IsNil() {
			return b.Kind() == reflect.Interface && a.IsNil() == b.IsNil()
		}
		return fuzzEqual(a.Elem(), b.Elem())
	}
	if a.Type() != b.Type() {
		return false
	}
	if ta, ok := a.Interface().(time.Time); ok {
		// Stored dates come back in UTC, as MongoDB returns them.
		tb := b.Interface().(time.Time)
		return ta.Equal(tb) && ta.Location() == time.UTC
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		fa, fb := a.Float(), b.Float()
		return fa == fb && math.Signbit(fa) == math.Signbit(fb) || math.IsNaN(fa) && math.IsNaN(fb)
	case reflect.Map:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !fuzzEqual(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !fuzzEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
