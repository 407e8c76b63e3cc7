package aggregate

import (
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// The expression forms of $sum, $avg, $min, $max, $stdDevPop and
// $stdDevSamp ({$sum: "$scores"} in a $project): with one argument that
// is an array, over its elements; otherwise over the arguments (an array
// among several is a value like any other). They run the accumulators'
// own states, so both forms type and round alike.
func init() {
	for name, newState := range map[string]func() accState{
		"$sum":       func() accState { return &sumState{} },
		"$avg":       func() accState { return &sumState{avg: true} },
		"$min":       func() accState { return &minMaxState{sign: -1} },
		"$max":       func() accState { return &minMaxState{sign: 1} },
		"$stdDevPop": func() accState { return &stdDevState{} },
		"$stdDevSamp": func() accState {
			return &stdDevState{samp: true}
		},
	} {
		query.RegisterListOperator(name, func(_ string, vals []any) (any, error) {
			if len(vals) == 1 {
				if elems, ok := codec.ArrayElements(vals[0]); ok {
					vals = elems
				}
			}
			st := newState()
			for _, v := range vals {
				if _, err := st.add(v); err != nil {
					return nil, err
				}
			}
			return st.result()
		})
	}
}
