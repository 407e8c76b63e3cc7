package codec

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codecSample holds a value of every kind a document may store.
func codecSample() Document {
	return Document{
		"_id": NewObjectIDFromTime(time.Unix(1700000000, 0)),
		"nil": nil, "t": true, "f": false,
		"int": int(-7), "i8": int8(-8), "i16": int16(-16), "i32": int32(-32), "i64": int64(math.MinInt64),
		"uint": uint(7), "u8": uint8(8), "u16": uint16(16), "u32": uint32(32), "u64": uint64(math.MaxUint64),
		"f32": float32(1.5), "f64": math.Inf(-1), "nan": math.NaN(),
		"str": "héllo", "empty": "", "bin": []byte{0, 1, 2},
		"date":   time.Date(1969, 7, 20, 20, 17, 40, 123456789, time.UTC),
		"future": time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC),
		"doc":    map[string]any{"a": map[string]any{"b": []any{1, "x", nil}}},
		"arr":    []any{1, 2.5, "s", []any{true}, map[string]any{"k": "v"}},
		"docs":   []map[string]any{{"a": 1}, {"b": []string{"x"}}},
		"strs":   []string{"a", "b"}, "ints": []int{1, -2}, "i64s": []int64{3}, "bools": []bool{true, false},
		"f64s": []float64{0.5}, "f32s": []float32{0.25}, "u16s": []uint16{9}, "u64s": []uint64{math.MaxUint64},
		"times": []time.Time{time.Unix(5, 6).UTC()}, "oids": []ObjectID{{1, 2, 3}},
		"i8s": []int8{-1}, "i16s": []int16{-300}, "i32s": []int32{70000}, "uints": []uint{4}, "u32s": []uint32{5},
	}
}

func TestCodecRoundTripsEveryKind(t *testing.T) {
	in, err := CloneDocument(codecSample())
	require.NoError(t, err)
	out := Decode(mustEncode(t, in))
	// NaN != NaN, so compare it apart.
	assert.True(t, math.IsNaN(out["nan"].(float64)))
	delete(in, "nan")
	delete(out, "nan")
	assert.Equal(t, in, out)
}

func TestCodecDatesComeBackUTC(t *testing.T) {
	loc := time.FixedZone("X", 5400)
	d := time.Date(2019, 5, 27, 21, 20, 0, 0, loc)
	out := Decode(mustEncode(t, Document{"d": d}))
	assert.True(t, out["d"].(time.Time).Equal(d))
	assert.Equal(t, time.UTC, out["d"].(time.Time).Location())
}

func TestCodecFieldLookups(t *testing.T) {
	enc := mustEncode(t, mustClone(t, codecSample()))
	v, ok := EncodedField(enc, "str")
	require.True(t, ok)
	assert.Equal(t, "héllo", v)
	_, ok = EncodedField(enc, "missing")
	assert.False(t, ok)

	d, isTime, found := EncodedTime(enc, "date")
	assert.True(t, isTime && found)
	assert.True(t, d.Equal(time.Date(1969, 7, 20, 20, 17, 40, 123456789, time.UTC)))
	_, isTime, found = EncodedTime(enc, "str")
	assert.False(t, isTime)
	assert.True(t, found)

	vals, ok := EncodedPathValues(enc, "doc.a.b")
	require.True(t, ok)
	assert.Equal(t, []any{[]any{1, "x", nil}}, vals)
	vals, ok = EncodedPathValues(enc, "docs.b")
	require.True(t, ok)
	assert.Equal(t, []any{[]string{"x"}}, vals)
}

func mustEncode(t testing.TB, d Document) []byte {
	enc, err := Encode(d, nil)
	require.NoError(t, err)
	return enc
}

func mustClone(t testing.TB, d Document) Document {
	c, err := CloneDocument(d)
	require.NoError(t, err)
	return c
}

// FuzzCodec checks that every document JSON can describe survives encoding
// and that every top-level lookup agrees with the decoded document.
func FuzzCodec(f *testing.F) {
	f.Add(`{"a":1,"b":[1,"x",{"c":null}],"d":{"e":true}}`)
	f.Add(`{"":1}`)
	f.Add(`{"x":[[[]]],"y":-0.0,"z":1e308}`)
	f.Fuzz(func(t *testing.T, js string) {
		var m map[string]any
		if json.Unmarshal([]byte(js), &m) != nil || m == nil {
			return
		}
		in, err := CloneDocument(m)
		if err != nil {
			return
		}
		enc := mustEncode(t, in)
		out := Decode(enc)
		if !assert.Equal(t, in, out) {
			return
		}
		for k, v := range in {
			got, ok := EncodedField(enc, k)
			assert.True(t, ok)
			assert.Equal(t, v, got)
		}
	})
}

// A document's _id is its first encoded field, given or generated, so that
// reading it skips nothing; nested documents keep their own order.
func TestEncodeIDFirst(t *testing.T) {
	for range 20 { // map order is random: try it many times
		doc := map[string]any{"a": 1, "b": "x", "_id": "k", "z": map[string]any{"_id": 2, "y": 3}, "c": true}
		enc, err := Encode(doc, nil)
		require.NoError(t, err)
		d := decoder{b: enc}
		require.Equal(t, 5, int(d.uvarint()))
		kl := int(d.uvarint())
		require.Equal(t, "_id", string(d.b[d.i:d.i+kl]))
		assert.Equal(t, doc, Decode(enc))

		gen, err := Encode(map[string]any{"a": 1, "b": 2}, "generated")
		require.NoError(t, err)
		d = decoder{b: gen}
		require.Equal(t, 3, int(d.uvarint()))
		kl = int(d.uvarint())
		require.Equal(t, "_id", string(d.b[d.i:d.i+kl]))
		assert.Equal(t, map[string]any{"_id": "generated", "a": 1, "b": 2}, Decode(gen))
	}
}

// AppendEncode appends what Encode returns, and leaves dst as it was on
// error.
func TestAppendEncode(t *testing.T) {
	doc := map[string]any{"_id": "a", "n": 1, "s": "x"}
	want, err := Encode(doc, nil)
	require.NoError(t, err)
	dst := []byte("prefix")
	got, err := AppendEncode(dst, doc, nil)
	require.NoError(t, err)
	assert.Equal(t, "prefix", string(got[:6]))
	assert.Equal(t, doc, Decode(got[6:]))
	assert.Len(t, got, 6+len(want))
	bad, err := AppendEncode(got, map[string]any{"": 1}, nil)
	require.Error(t, err)
	assert.Equal(t, got, bad)
	assert.Equal(t, doc, Decode(got[6:]), "the earlier encoding is intact")
	allocs := testing.AllocsPerRun(100, func() {
		dst, _ = AppendEncode(dst[:0], doc, nil)
	})
	assert.Zero(t, allocs, "appending into room allocates nothing")
}

func TestDecodeFields(t *testing.T) {
	doc := Document{"_id": 1, "a": "x", "b": Document{"c": []any{1, 2}}, "d": 2.5, "e": nil}
	enc, err := Encode(doc, nil)
	require.NoError(t, err)
	assert.Equal(t, Document{"b": Document{"c": []any{1, 2}}, "e": nil}, DecodeFields(enc, []string{"b", "e", "missing"}))
	assert.Empty(t, DecodeFields(enc, nil))
	assert.Equal(t, Decode(enc), DecodeFields(enc, []string{"_id", "a", "b", "d", "e"}))
}
