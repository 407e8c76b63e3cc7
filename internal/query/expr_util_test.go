package query

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// opCase is one expression evaluated against one document: the result
// it must give (its Go type included), or the error it must wrap.
type opCase struct {
	name string
	expr any // Go values, or a string of extended JSON (ej)
	doc  any // nil: {}; a string: extended JSON
	want any // Missing for a missing result
	err  error
}

// ej parses relaxed extended JSON (numbers as int32, int64 and float64,
// {"$numberDecimal": ...}, {"$date": ...}, {"$oid": ...}) into ttldb's
// values: Documents, []any, time.Time.
func ej(s string) any {
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(`{"v": `+s+`}`), false, &d); err != nil {
		panic(fmt.Sprintf("bad extended JSON %s: %v", s, err))
	}
	v, err := codec.ExprValue(d[0].Value)
	if err != nil {
		panic(err)
	}
	return fromDriver(v)
}

func fromDriver(v any) any {
	switch x := v.(type) {
	case bson.DateTime:
		return x.Time().UTC()
	case map[string]any:
		for k, e := range x {
			x[k] = fromDriver(e)
		}
	case []any:
		for i, e := range x {
			x[i] = fromDriver(e)
		}
	}
	return v
}

func dec128(s string) bson.Decimal128 {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return d
}

func isoDate(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func opEval(t *testing.T, expr, doc any) (any, error) {
	t.Helper()
	if s, ok := expr.(string); ok {
		expr = ej(s)
	}
	var d codec.Document
	switch x := doc.(type) {
	case nil:
		d = codec.Document{}
	case string:
		d = ej(x).(codec.Document)
	case codec.Document:
		d = x
	}
	e, err := CompileExprWith(expr, &ExprOptions{Now: isoDate("2024-01-02T03:04:05.678Z")})
	if err != nil {
		return nil, err
	}
	return e.Evaluate(&Env{Root: d, Current: d})
}

func runOpCases(t *testing.T, cases []opCase) {
	t.Helper()
	for _, tc := range cases {
		name := tc.name
		if name == "" {
			name = fmt.Sprint(tc.expr)
		}
		t.Run(name, func(t *testing.T) {
			got, err := opEval(t, tc.expr, tc.doc)
			if tc.err != nil {
				require.Error(t, err)
				assert.True(t, errors.Is(err, tc.err), "error %v does not wrap %v", err, tc.err)
				return
			}
			require.NoError(t, err)
			assertSameValue(t, tc.want, got)
		})
	}
}

// assertSameValue checks got is want, of the same Go type throughout;
// decimals are compared by value, NaN equals NaN.
func assertSameValue(t *testing.T, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case bson.Decimal128:
		g, ok := got.(bson.Decimal128)
		require.True(t, ok, "want decimal %v, got %T %v", w, got, got)
		assert.True(t, Equal(w, g) || w.IsNaN() && g.IsNaN(), "want %v, got %v", w, g)
		return
	case float64:
		g, ok := got.(float64)
		require.True(t, ok, "want double %v, got %T %v", w, got, got)
		if math.IsNaN(w) {
			assert.True(t, math.IsNaN(g), "want NaN, got %v", g)
			return
		}
		assert.Equal(t, w, g)
		return
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "want array %v, got %T %v", w, got, got)
		require.Len(t, g, len(w), "got %v", g)
		for i := range w {
			assertSameValue(t, w[i], g[i])
		}
		return
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "want document %v, got %T %v", w, got, got)
		require.Len(t, g, len(w), "got %v", g)
		for k := range w {
			gv, ok := g[k]
			require.True(t, ok, "field %q missing from %v", k, g)
			assertSameValue(t, w[k], gv)
		}
		return
	}
	assert.Equal(t, want, got)
}

func TestNumberValue(t *testing.T) {
	for _, tc := range []struct{ in, want any }{
		{int8(1), int32(1)}, {int16(1), int32(1)}, {uint8(1), int32(1)}, {uint16(1), int32(1)},
		{int32(1), int32(1)}, {1, int64(1)}, {int64(1), int64(1)}, {uint32(1), int64(1)},
		{uint64(math.MaxUint64), float64(math.MaxUint64)}, {float32(1.5), 1.5}, {dec128("1.5"), dec128("1.5")},
	} {
		got, ok := NumberValue(tc.in)
		require.True(t, ok)
		assert.Equal(t, tc.want, got, "%T %v", tc.in, tc.in)
	}
	_, ok := NumberValue("1")
	assert.False(t, ok)
}

func TestAddTyping(t *testing.T) {
	for _, tc := range []struct{ a, b, want any }{
		{int32(1), int32(2), int32(3)},
		{int32(math.MaxInt32), int32(1), int64(math.MaxInt32 + 1)}, // int overflows to long
		{int64(math.MaxInt64), int64(1), float64(math.MaxInt64) + 1},
		{int32(1), int64(2), int64(3)},
		{int32(1), 2.5, 3.5},
		{int64(1), dec128("0.1"), dec128("1.1")},
		{0.1, dec128("0.2"), dec128("0.3")}, // a double converts by its 15 digits
		{7, int8(1), int64(8)},
	} {
		got, err := Add(tc.a, tc.b)
		require.NoError(t, err)
		assertSameValue(t, tc.want, got)
	}
	_, err := Add("a", 1)
	assert.ErrorIs(t, err, errs.ErrExpression)
	got, err := Multiply(int64(math.MaxInt64), int32(2))
	require.NoError(t, err)
	assert.Equal(t, float64(math.MaxInt64)*2, got)
	got, err = Subtract(int32(math.MinInt32), int32(1))
	require.NoError(t, err)
	assert.Equal(t, int64(math.MinInt32-1), got)
	got, err = Divide(int32(1), int32(4))
	require.NoError(t, err)
	assert.Equal(t, 0.25, got)
	_, err = Divide(int32(1), 0.0)
	assert.ErrorIs(t, err, errs.ErrExpression)
}

func TestDecimalRounding(t *testing.T) {
	// 1/3 to 34 digits; 2/3 rounds its last digit up.
	got, err := Divide(dec128("1"), dec128("3"))
	require.NoError(t, err)
	assert.Equal(t, "0.3333333333333333333333333333333333", got.(bson.Decimal128).String())
	got, err = Divide(dec128("2"), int32(3))
	require.NoError(t, err)
	assert.Equal(t, "0.6666666666666666666666666666666667", got.(bson.Decimal128).String())
	// Half to even at the 35th digit.
	got, err = Add(dec128("1000000000000000000000000000000000"), dec128("0.5"))
	require.NoError(t, err)
	assert.Equal(t, "1000000000000000000000000000000000", got.(bson.Decimal128).String())
	got, err = Add(dec128("1000000000000000000000000000000001"), dec128("0.5"))
	require.NoError(t, err)
	assert.Equal(t, "1000000000000000000000000000000002", got.(bson.Decimal128).String())
	got, err = Multiply(dec128("1.5"), int32(2))
	require.NoError(t, err)
	assert.Equal(t, "3", got.(bson.Decimal128).String())
}
