package codec

import (
	"errors"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/errs"
)

// priority is a named integer destination.
type priority int8

// Issue 20 item 16: a stored number that does not fit a numeric field is
// refused with an error naming the field's own type: decoding 2^64-1 into
// an int8 said "overflows int64". Every integer, unsigned and float kind
// (and a named one, and a pointer to one) is tried against numbers out of
// their range, fractional or inexact; every refusal names the destination
// and no other numeric type.
func TestDecodeNumberErrorsNameTheDestination(t *testing.T) {
	dests := []reflect.Type{
		reflect.TypeFor[int](), reflect.TypeFor[int8](), reflect.TypeFor[int16](), reflect.TypeFor[int32](), reflect.TypeFor[int64](),
		reflect.TypeFor[uint](), reflect.TypeFor[uint8](), reflect.TypeFor[uint16](), reflect.TypeFor[uint32](), reflect.TypeFor[uint64](),
		reflect.TypeFor[float32](), reflect.TypeFor[float64](),
		reflect.TypeFor[priority](), reflect.TypeFor[*int8](),
	}
	stored := []any{
		uint64(math.MaxUint64), int64(math.MaxInt64), int64(math.MinInt64), int64(-1), int64(300), int64(70000), int64(1<<53 + 1),
		1.5, -1.0, 1e300, -1e300, 0.1, math.Inf(1), math.NaN(), float32(1e30),
	}
	numeric := regexp.MustCompile(`\b(u?int(8|16|32|64)?|float(32|64))\b`)
	for _, dt := range dests {
		base := dt
		if base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		refused := 0
		for _, v := range stored {
			enc, err := Encode(Document{"v": v}, nil)
			require.NoError(t, err)
			dst := reflect.New(reflect.StructOf([]reflect.StructField{{Name: "V", Type: dt}}))
			err = DecodeInto(enc, dst.Interface())
			if err == nil {
				continue
			}
			refused++
			assert.True(t, errors.Is(err, errs.ErrDecode), "%v", err)
			msg := err.Error()
			assert.Contains(t, msg, base.String(), "%T %v into %v: %v", v, v, dt, err)
			for _, name := range numeric.FindAllString(strings.ReplaceAll(msg, base.String(), ""), -1) {
				assert.Equal(t, base.Kind().String(), name, "%T %v into %v: %v names another type", v, v, dt, err)
			}
		}
		assert.Positive(t, refused, "%v refused nothing", dt)
	}

	// The reproduction.
	enc, err := Encode(Document{"v": uint64(math.MaxUint64)}, nil)
	require.NoError(t, err)
	var dst struct{ V int8 }
	err = DecodeInto(enc, &dst)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "18446744073709551615 overflows int8")
}
