package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A directory written by 3c54963 holding a partial index whose filter has
// a non-integral $size ({tags: {$size: 1.5}}, accepted then, matching
// nothing) still opens: refusing such a size is for new filters, not for
// the definitions a directory (or a leader's log) already holds. One copy
// has only the log, one a snapshot of the index.
func TestOpenKeepsStoredNonIntegralSize(t *testing.T) {
	for _, name := range []string{"log-only", "with-snapshot"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "size-partial-3c54963", name))))
			db, err := Open(WithDir(dir))
			require.NoError(t, err)
			defer db.Close()
			c := db.Collection("c")
			n, err := c.CountDocuments(context.Background(), Document{})
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			specs, err := c.Indexes(context.Background())
			require.NoError(t, err)
			require.Len(t, specs, 2, "_id_ and the partial index")
			require.Equal(t, "p", specs[1].Name)
			// The loaded index keeps its meaning: it holds no document.
			ws, _ := db.state("c", false)
			require.Equal(t, []string{"index p multikey=false"}, dumpIndexes(ws), "the partial filter matches nothing")
			// A new filter with such a size is refused, as in MongoDB.
			_, err = c.CreateIndex(context.Background(), IndexModel{Name: "q", Keys: []IndexKey{Asc("b")},
				PartialFilterExpression: Document{"tags": Document{"$size": 2.5}}})
			require.ErrorIs(t, err, ErrInvalidIndex)
			_, err = c.Find(context.Background(), Document{"tags": Document{"$size": 1.5}})
			require.ErrorIs(t, err, ErrInvalidFilter)
		})
	}
}
