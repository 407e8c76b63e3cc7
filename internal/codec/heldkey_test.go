package codec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// A string's or an ObjectID's held value is the very bytes a document
// holds for it, where FirstValueOffset finds them when it is the first
// field; other values have none.
func TestHeldValueIsTheDocumentsBytes(t *testing.T) {
	oid := bson.ObjectID{1, 2, 3, 11: 12}
	long := string(make([]byte, 300)) // a two-byte length
	for _, id := range []any{"doc:000000001", "", long, oid} {
		enc, err := Encode(map[string]any{"_id": id, "a": 1, "b": "x"}, nil)
		require.NoError(t, err)
		held, ok := AppendHeldValue(nil, id)
		require.True(t, ok)
		off := FirstValueOffset(enc, "_id")
		require.Positive(t, off, "%v", id)
		assert.Equal(t, held, enc[off:off+len(held)], "%v", id)
	}
	for _, v := range []any{1, int64(1), 1.0, nil, true, []byte("x"), map[string]any{"a": 1}} {
		out, ok := AppendHeldValue([]byte("p"), v)
		assert.False(t, ok, "%T", v)
		assert.Equal(t, []byte("p"), out)
	}
	a, _ := AppendHeldValue(nil, "ab")
	b, _ := AppendHeldValue(nil, "ac")
	assert.NotEqual(t, a, b)
}

// FirstValueOffset finds only a first field of that name, and reads
// nothing beyond the document.
func TestFirstValueOffset(t *testing.T) {
	enc, err := Encode(map[string]any{"_id": "x"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 5, FirstValueOffset(enc, "_id"))
	assert.Equal(t, -1, FirstValueOffset(enc, "id"))
	assert.Equal(t, -1, FirstValueOffset(enc, "_idx"))
	// {a: 1, _id: "x"}, in that order (as a bson.D or raw bytes keep it).
	notFirst := []byte{2, 1, 'a', tagInt, 2, 3, '_', 'i', 'd', tagString, 1, 'x'}
	require.NoError(t, Validate(notFirst))
	assert.Equal(t, -1, FirstValueOffset(notFirst, "_id"), "_id not first")
	empty, err := Encode(map[string]any{}, nil)
	require.NoError(t, err)
	assert.Equal(t, -1, FirstValueOffset(empty, "_id"))
	for _, b := range [][]byte{nil, {1}, {1, 3, '_', 'i', 'd'}, {1, 200}} {
		assert.Equal(t, -1, FirstValueOffset(b, "_id"), "%v", b)
	}
}
