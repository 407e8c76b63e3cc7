package aggregate

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// valueKey agrees with query.Equal: equal values share a key, others do
// not.
func TestValueKey_agreesWithEqual(t *testing.T) {
	oid := codec.ObjectID{1, 2, 3}
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	values := []any{
		nil, query.Missing, true, false, "", "a", "b", int32(0), 0.0, math.Copysign(0, -1), 1, int64(1), 1.0, float32(1),
		dec("1"), dec("1.0"), dec("0.1"), 0.1, 1.5, dec("1.5"), math.NaN(), dec("NaN"), math.Inf(1), math.Inf(-1), dec("Infinity"),
		uint64(math.MaxUint64), float64(1 << 63), uint64(1 << 63), int64(math.MaxInt64), 1e300,
		t0, t0.Add(time.Nanosecond), oid, codec.ObjectID{1, 2, 4},
		bson.Regex{Pattern: "a", Options: "i"}, bson.Regex{Pattern: "a"}, bson.Timestamp{T: 1, I: 2}, bson.Timestamp{T: 1, I: 3},
		[]byte{1}, bson.Binary{Data: []byte{1}}, bson.Binary{Subtype: 4, Data: []byte{1}},
		query.MinKey, query.MaxKey,
		A{}, A{1}, A{1.0}, []int{1}, A{A{1}}, A{1, 2}, A{nil},
		M{}, M{"a": 1}, M{"a": 1.0}, M{"b": 1}, M{"a": M{"b": A{1}}}, M{"a": 1, "b": 2}, M{"a": nil},
	}
	for i, a := range values {
		for j, b := range values {
			ea := query.Equal(a, b)
			if query.IsMissing(a) || query.IsMissing(b) {
				ea = (a == nil || query.IsMissing(a)) && (b == nil || query.IsMissing(b))
			}
			require.Equal(t, ea, valueKey(a) == valueKey(b), "%d %v (%T) vs %d %v (%T)", i, a, a, j, b, b)
		}
	}
}

func TestNumSum(t *testing.T) {
	var s sumState
	for _, v := range []any{uint64(math.MaxUint64), int32(1)} {
		_, _ = s.add(v)
	}
	got, _ := s.result()
	require.Equal(t, float64(math.MaxUint64)+1, got)

	s = sumState{}
	for _, v := range []any{int64(math.MinInt64), int64(-1), int64(5)} {
		_, _ = s.add(v)
	}
	got, _ = s.result()
	require.Equal(t, float64(math.MinInt64)-1+5, got)

	s = sumState{}
	for _, v := range []any{dec("0.1"), dec("0.2"), 1, 0.5} {
		_, _ = s.add(v)
	}
	got, _ = s.result()
	require.IsType(t, bson.Decimal128{}, got)
	require.Equal(t, "1.8", got.(bson.Decimal128).String())

	s = sumState{}
	for _, v := range []any{dec("1"), math.Inf(-1)} {
		_, _ = s.add(v)
	}
	got, _ = s.result()
	require.Equal(t, "-Infinity", got.(bson.Decimal128).String())

	s = sumState{avg: true}
	for _, v := range []any{dec("1"), math.NaN()} {
		_, _ = s.add(v)
	}
	got, _ = s.result()
	require.Equal(t, "NaN", got.(bson.Decimal128).String())

	s = sumState{avg: true}
	for _, v := range []any{dec("2"), dec("-0.5")} {
		_, _ = s.add(v)
	}
	got, _ = s.result()
	require.Equal(t, "0.75", got.(bson.Decimal128).String())

	// Doubles add without the naive sum's rounding drift.
	s = sumState{}
	for range 10 {
		_, _ = s.add(0.1)
	}
	got, _ = s.result()
	require.Equal(t, 1.0, got)
	s = sumState{avg: true}
	for _, v := range []any{1e16, 1.0, -1e16, 1.0} {
		_, _ = s.add(v)
	}
	got, _ = s.result()
	require.Equal(t, 0.5, got)

	s = sumState{}
	_, _ = s.add(dec("0"))
	got, _ = s.result()
	require.Equal(t, "0", got.(bson.Decimal128).String())
}

func TestSizeOf(t *testing.T) {
	small := sizeOf(M{"a": 1})
	require.Greater(t, sizeOf(M{"a": 1, "b": "x"}), small)
	require.Greater(t, sizeOf(M{"a": string(make([]byte, 1000))}), int64(1000))
	require.Greater(t, sizeOf([]int{1, 2, 3}), sizeOf([]int{1}))
	require.Greater(t, sizeOf(A{M{"x": []byte{1, 2, 3}}}), sizeOf(A{}))
	for _, v := range []any{nil, true, 1, 1.5, "s", time.Now(), codec.ObjectID{}, dec("1"), bson.Timestamp{}, []byte{1}, bson.Binary{}, bson.Regex{}, query.MinKey, []string{"a"}} {
		require.Positive(t, sizeOf(v), "%T", v)
	}
}
