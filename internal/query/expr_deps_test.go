package query

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestExprFields(t *testing.T) {
	for _, tc := range []struct {
		expr   any
		fields []string
		all    bool
	}{
		{"$a.b", []string{"a"}, false},
		{"plain", nil, false},
		{bson.D{{Key: "$add", Value: bson.A{"$x", "$$ROOT.y.z", 1}}}, []string{"x", "y"}, false},
		{bson.D{{Key: "$literal", Value: "$notAField"}}, nil, false},
		{bson.D{{Key: "$map", Value: bson.D{{Key: "input", Value: "$arr"}, {Key: "as", Value: "e"}, {Key: "in", Value: "$$e.v"}}}}, []string{"arr"}, false},
		{"$$ROOT", nil, true},
		{bson.D{{Key: "k", Value: "$$CURRENT"}}, nil, true},
		{bson.D{{Key: "$getField", Value: "price"}}, nil, true},
		{"$$NOW", nil, false},
	} {
		var got []string
		all := ExprFields(tc.expr, func(f string) { got = append(got, f) })
		slices.Sort(got)
		assert.Equal(t, tc.all, all, "%v", tc.expr)
		if !tc.all {
			assert.Equal(t, tc.fields, got, "%v", tc.expr)
		}
	}
}
