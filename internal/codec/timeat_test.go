package codec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TimeAt reads a date again where EncodedTimeAt found it, and refuses an
// offset where no top-level field of that name holds a date.
func TestTimeAt(t *testing.T) {
	when := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	enc, err := Encode(map[string]any{"_id": 1, "pad": "lastModifiedDate", "lastModifiedDate": when, "n": 1}, nil)
	require.NoError(t, err)
	d, at, isTime, found := EncodedTimeAt(enc, "lastModifiedDate")
	require.True(t, isTime)
	require.True(t, found)
	assert.Equal(t, when, d)
	got, ok := TimeAt(enc, at, "lastModifiedDate")
	assert.True(t, ok)
	assert.Equal(t, when, got)
	for _, bad := range []struct {
		at   int
		name string
	}{{at - 1, "lastModifiedDate"}, {at + 1, "lastModifiedDate"}, {at, "astModifiedDate"}, {at, "pad"},
		{0, "lastModifiedDate"}, {len(enc), "lastModifiedDate"}, {at, ""}} {
		_, ok := TimeAt(enc, bad.at, bad.name)
		assert.False(t, ok, "%+v", bad)
	}
	_, _, isTime, found = EncodedTimeAt(enc, "pad")
	assert.False(t, isTime)
	assert.True(t, found)
	_, _, _, found = EncodedTimeAt(enc, "missing")
	assert.False(t, found)
}
