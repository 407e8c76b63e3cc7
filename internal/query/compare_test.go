package query

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/ttldb/ttldb/internal/codec"
)

func TestCompareValuesTypeOrder(t *testing.T) {
	ordered := []any{
		nil, math.NaN(), int64(math.MinInt64), -1.5, 0, 3, float32(3.5), uint64(math.MaxUint64),
		"", "a", "b",
		map[string]any{"a": 1},
		[]any{1, 2},
		[]byte{1},
		codec.ObjectID{1},
		false, true,
		time.Unix(0, 0), time.Unix(10, 0),
	}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			assert.Equal(t, want, Compare(ordered[i], ordered[j]), "compare(%#v, %#v)", ordered[i], ordered[j])
		}
	}
}

func TestCompareNumbersAcrossKinds(t *testing.T) {
	assert.Equal(t, 0, Compare(int(3), float64(3)))
	assert.Equal(t, 0, Compare(uint8(3), int64(3)))
	assert.Equal(t, -1, Compare(int64(math.MaxInt64), float64(math.MaxInt64))) // 2^63 as float
	assert.Equal(t, 1, Compare(3.5, 3))
	assert.Equal(t, -1, Compare(-3.5, -3))
	assert.Equal(t, 1, Compare(uint64(math.MaxUint64), int64(math.MaxInt64)))
	assert.Equal(t, 0, Compare(math.NaN(), float32(math.NaN())))
}
