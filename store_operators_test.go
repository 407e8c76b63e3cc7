package ttldb

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/ttltest"
)

// TestPlannerOperatorsBoundNothing checks that the array, evaluation and
// type operators give no index bounds of their own: a *regexp.Regexp given
// as a value is a pattern, not a value to look up, and $in with a pattern
// cannot be answered from point lookups.
func TestPlannerOperatorsBoundNothing(t *testing.T) {
	db, err := Open(WithClock(ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))), WithMonitor(MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer db.Close()
	c := db.Collection("c")
	_, err = c.CreateIndex(IndexModel{Keys: []IndexKey{Asc("a")}})
	require.NoError(t, err)
	_, err = c.InsertMany([]Document{{"_id": 1, "a": "apple"}, {"_id": 2, "a": "banana"}, {"_id": 3, "a": []any{"cherry", "avocado"}}})
	require.NoError(t, err)
	for _, f := range []Document{
		{"a": regexp.MustCompile("^a")},
		{"a": Document{"$in": []any{regexp.MustCompile("^a"), "zzz"}}},
		{"_id": regexp.MustCompile("1")},
		{"a": Document{"$regex": "^a"}},
		{"a": Document{"$all": []any{"cherry"}}},
		{"a": Document{"$elemMatch": Document{"$eq": "cherry"}}},
		{"a": Document{"$size": 2}},
		{"a": Document{"$type": "string"}},
	} {
		ex, err := c.Explain(f)
		require.NoError(t, err, "%v", f)
		if ex.Stage == "IXSCAN" {
			require.Equal(t, []string{"[MinKey, MaxKey]"}, ex.IndexBounds, "%v", f)
		}
	}
	docs, err := c.Find(Document{"a": regexp.MustCompile("^a")})
	require.NoError(t, err)
	require.Len(t, docs, 2) // apple, and the array holding avocado
	docs, err = c.Find(Document{"a": Document{"$in": []any{regexp.MustCompile("^b"), "cherry"}}})
	require.NoError(t, err)
	require.Len(t, docs, 2)
}
