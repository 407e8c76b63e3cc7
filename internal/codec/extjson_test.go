package codec

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	enc, err := Encode(map[string]any{"b": []int{1}, "_id": "k", "a": 1.5}, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"_id":"k","a":1.5,"b":[1]}`, string(AppendExtJSON(nil, enc)))
}
