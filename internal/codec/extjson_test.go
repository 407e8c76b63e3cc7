package codec

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestAppendExtJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.FixedZone("x", 3600))
	for _, c := range []struct {
		v    any
		want string
	}{
		{nil, `null`},
		{true, `true`},
		{"a\"b\\c\n\t\r\x01\u2029é", `"a\"b\\c\n\t\r\u0001\u2029é"`},
		{"\xff", `"\ufffd"`},
		{int8(-8), `-8`},
		{uint64(math.MaxUint64), `18446744073709551615`},
		{int64(math.MinInt64), `-9223372036854775808`},
		{2.0, `2.0`},
		{2.5, `2.5`},
		{1e300, `1e+300`},
		{float32(0.1), `0.1`},
		{math.NaN(), `{"$numberDouble":"NaN"}`},
		{math.Inf(1), `{"$numberDouble":"Infinity"}`},
		{math.Inf(-1), `{"$numberDouble":"-Infinity"}`},
		{at, `{"$date":"2026-01-02T02:04:05.6Z"}`},
		{at.Add(1234567), `{"$date":"2026-01-02T02:04:05.601Z"}`},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), `{"$date":{"$numberLong":"253402300800000"}}`},
		{ObjectID{0xab}, `{"$oid":"ab0000000000000000000000"}`},
		{[]byte("hi"), `{"$binary":{"base64":"aGk=","subType":"00"}}`},
		{[]any{1, "x", nil}, `[1,"x",null]`},
		{[]string{"a", "b"}, `["a","b"]`},
		{[]time.Time{at}, `[{"$date":"2026-01-02T02:04:05.6Z"}]`},
		{[]bool{}, `[]`},
		{[]map[string]any{{"b": 1, "a": 2}}, `[{"a":2,"b":1}]`},
		{map[string]any{"z": 1, "_id": 2, "a": map[string]any{}}, `{"_id":2,"a":{},"z":1}`},
	} {
		got := string(AppendExtJSONValue(nil, c.v))
		assert.Equal(t, c.want, got, "%#v", c.v)
		assert.True(t, json.Valid([]byte(got)), got)
	}
	enc, _, err := EncodeValue(bson.D{{Key: "b", Value: []int{1}}, {Key: "_id", Value: "k"}, {Key: "a", Value: 1.5}}, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"_id":"k","b":[1],"a":1.5}`, string(AppendExtJSON(nil, enc)), "stored order, _id first")
}

// TestExtJSONMatchesDriver checks both modes against the driver's own
// Extended JSON writer on every BSON type ttldb stores, nested ones too.
func TestExtJSONMatchesDriver(t *testing.T) {
	dec, err := bson.ParseDecimal128("-12.3400E+5")
	require.NoError(t, err)
	doc := bson.D{
		{Key: "_id", Value: bson.ObjectID{0xab, 11: 1}},
		{Key: "i32", Value: int32(-7)}, {Key: "i64", Value: int64(1) << 40},
		{Key: "f", Value: 2.0}, {Key: "g", Value: 0.1}, {Key: "nan", Value: math.NaN()},
		{Key: "inf", Value: math.Inf(-1)}, {Key: "s", Value: `é"\<>&`}, {Key: "b", Value: true},
		{Key: "null", Value: nil},
		{Key: "date", Value: bson.DateTime(1767322245123)},
		{Key: "old", Value: bson.DateTime(-86400000)},
		{Key: "far", Value: bson.NewDateTimeFromTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))},
		{Key: "bin", Value: bson.Binary{Subtype: 4, Data: []byte{1, 2, 3}}},
		{Key: "bin0", Value: bson.Binary{Data: []byte("hi")}},
		{Key: "ts", Value: bson.Timestamp{T: 12, I: 34}},
		{Key: "re", Value: bson.Regex{Pattern: `^a\.b`, Options: "im"}},
		{Key: "dec", Value: dec},
		{Key: "min", Value: bson.MinKey{}}, {Key: "max", Value: bson.MaxKey{}},
		{Key: "$dollar", Value: bson.D{{Key: "a.b", Value: bson.A{int32(1), bson.D{{Key: "z", Value: int64(2)}, {Key: "y", Value: "x"}}}}}},
		{Key: "empty", Value: bson.A{}},
	}
	enc, _, err := EncodeValue(doc, nil)
	require.NoError(t, err)
	for _, canonical := range []bool{false, true} {
		want, err := bson.MarshalExtJSON(doc, canonical, false)
		require.NoError(t, err)
		got := AppendExtJSONMode(nil, enc, canonical)
		assert.JSONEq(t, string(want), string(got), "canonical=%v", canonical)
		assert.Equal(t, string(want), string(got), "canonical=%v: same bytes, field order included", canonical)
	}
}

// TestExtJSONDifferences pins what Extended JSON gets for the values ttldb
// keeps and the driver does not: a date's nanoseconds are cut to the
// millisecond (the specification's precision); an unsigned integer above
// 2^63−1 is a plain JSON number in both modes.
func TestExtJSONDifferences(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123_456_789, time.UTC)
	enc, err := Encode(Document{"at": at, "u": uint64(math.MaxUint64)}, nil)
	require.NoError(t, err)
	assert.Equal(t, at, Decode(enc)["at"], "the store keeps the nanoseconds")
	got := string(AppendExtJSONMode(nil, enc, false))
	assert.Contains(t, got, `"at":{"$date":"2026-01-02T03:04:05.123Z"}`)
	assert.Contains(t, got, `"u":18446744073709551615`)
	got = string(AppendExtJSONMode(nil, enc, true))
	assert.Contains(t, got, `"at":{"$date":{"$numberLong":"1767323045123"}}`)
	assert.Contains(t, got, `"u":18446744073709551615`)
}
