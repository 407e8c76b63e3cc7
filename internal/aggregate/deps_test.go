package aggregate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestDependencies(t *testing.T) {
	st := func(name string, arg any) bson.D { return bson.D{{Key: name, Value: arg}} }
	for _, tc := range []struct {
		name   string
		stages []any
		from   int
		fields []string
		all    bool
	}{
		{"group", []any{st("$match", bson.D{{Key: "s", Value: 2}}), st("$group", bson.D{{Key: "_id", Value: "$route"}, {Key: "t", Value: bson.D{{Key: "$sum", Value: "$bytes"}}}})}, 1, []string{"bytes", "route"}, false},
		{"match before group", []any{st("$match", bson.D{{Key: "a.b", Value: 1}, {Key: "$or", Value: bson.A{bson.D{{Key: "c", Value: 1}}}}}), st("$group", bson.D{{Key: "_id", Value: nil}})}, 0, []string{"a", "c"}, false},
		{"results reach the caller", []any{st("$set", bson.D{{Key: "x", Value: 1}})}, 0, nil, true},
		{"$$ROOT", []any{st("$group", bson.D{{Key: "_id", Value: nil}, {Key: "all", Value: bson.D{{Key: "$push", Value: "$$ROOT"}}}})}, 0, nil, true},
		{"inclusion project", []any{st("$sort", bson.D{{Key: "z", Value: 1}}), st("$project", bson.D{{Key: "a", Value: 1}, {Key: "b", Value: "$c.d"}})}, 0, []string{"_id", "a", "b", "c", "z"}, false},
		{"exclusion project", []any{st("$project", bson.D{{Key: "a", Value: 0}})}, 0, nil, true},
		{"count", []any{st("$unwind", "$tags"), st("$count", "n")}, 0, []string{"tags"}, false},
		{"unknown stage", []any{st("$unionWith", "x"), st("$count", "n")}, 0, nil, true},
		{"lookup", []any{st("$lookup", bson.D{{Key: "from", Value: "u"}, {Key: "localField", Value: "uid"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "u"}}), st("$group", bson.D{{Key: "_id", Value: "$u.name"}})}, 0, []string{"u", "uid"}, false},
	} {
		fields, all := Dependencies(tc.stages, tc.from)
		assert.Equal(t, tc.all, all, tc.name)
		if !tc.all {
			assert.Equal(t, tc.fields, fields, tc.name)
		}
	}
}
