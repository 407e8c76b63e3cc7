package ttldb_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/internal/aggregate"
	"github.com/ttldb/ttldb/internal/query"
)

// TestREADMEListsEveryAggregationName: the README's table of the
// aggregation pipeline names every stage, accumulator and operator ttldb
// runs, and every stage it refuses as not supported yet.
func TestREADMEListsEveryAggregationName(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(b)
	start := strings.Index(readme, "## Aggregation")
	require.GreaterOrEqual(t, start, 0)
	section := readme[start:]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	var names []string
	names = append(names, aggregate.StageNames()...)
	names = append(names, aggregate.AccumulatorNames()...)
	names = append(names, aggregate.UnsupportedStageNames()...)
	names = append(names, query.ExprOperatorNames()...)
	for _, name := range names {
		assert.Contains(t, section, "`"+name+"`", "the README's Aggregation section does not list %s", name)
	}
}
