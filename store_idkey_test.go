package ttldb_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// Two _id values are one key exactly when they compare equal: embedded
// documents whose renderings look alike are different _ids.
func TestStoreIDKeyDistinctDocuments(t *testing.T) {
	cases := []struct {
		name   string
		first  any
		second any
	}{
		{"rendering of a two-field document", ttldb.Document{"a": "x b string:y"}, ttldb.Document{"a": "x", "b": "y"}},
		{"number and string in an array", ttldb.Document{"a": []any{1}}, ttldb.Document{"a": []any{"1"}}},
		{"typed array of number and of string", ttldb.Document{"k": []string{"7"}}, ttldb.Document{"k": []int{7}}},
		{"field order in names", ttldb.Document{"ab": 1}, ttldb.Document{"a": ttldb.Document{"b": 1}}},
		{"string with a NUL", ttldb.Document{"a": "x\x00"}, ttldb.Document{"a": "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openStore(t)
			c := db.Collection("ids")
			_, err := c.InsertOne(ttldb.Document{"_id": tc.first, "v": 1})
			require.NoError(t, err)
			_, err = c.InsertOne(ttldb.Document{"_id": tc.second, "v": 2})
			require.NoError(t, err, "a different _id must not be a duplicate key")
			for v, id := range map[int]any{1: tc.first, 2: tc.second} {
				got, err := c.FindOne(ttldb.Document{"_id": id}).Document()
				require.NoError(t, err)
				assert.Equal(t, v, got["v"], "FindOne(_id: %v) found the other document", id)
				n, err := c.CountDocuments(context.Background(), ttldb.Document{"_id": id})
				require.NoError(t, err)
				assert.Equal(t, 1, n, "CountDocuments(_id: %v)", id)
				_, expires, err := c.ExpiresAt(id)
				require.NoError(t, err)
				assert.False(t, expires)
			}
			assert.Equal(t, 2, count(t, c, nil))
		})
	}
}

// Equal _id values are one key whatever their Go representation: a typed
// array equals the []any with the same elements, numbers of every kind
// with the same value are equal, inside documents too.
func TestStoreIDKeyEqualValues(t *testing.T) {
	cases := []struct {
		name   string
		first  any
		second any
	}{
		{"typed and untyped array", ttldb.Document{"t": []int{1, 2}}, ttldb.Document{"t": []any{1, 2}}},
		{"number kinds in an array", ttldb.Document{"t": []any{int8(1), 2.0}}, ttldb.Document{"t": []float32{1, 2}}},
		{"typed array of documents", ttldb.Document{"t": []ttldb.Document{{"x": 1}}}, ttldb.Document{"t": []any{ttldb.Document{"x": uint64(1)}}}},
		{"negative zero", ttldb.Document{"z": 0}, ttldb.Document{"z": math.Copysign(0, -1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openStore(t)
			c := db.Collection("ids")
			_, err := c.InsertOne(ttldb.Document{"_id": tc.first, "v": 1})
			require.NoError(t, err)
			_, err = c.InsertOne(ttldb.Document{"_id": tc.second, "v": 2})
			require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "an equal _id is a duplicate key")
			got, err := c.FindOne(ttldb.Document{"_id": tc.second}).Document()
			require.NoError(t, err)
			assert.Equal(t, 1, got["v"])
			assert.Equal(t, 1, count(t, c, nil))
		})
	}
}
