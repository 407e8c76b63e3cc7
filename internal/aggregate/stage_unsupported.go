package aggregate

import (
	"fmt"

	"github.com/ttldb/ttldb/internal/errs"
)

// The stages ttldb knows of but does not run yet: Compile refuses them
// with errs.ErrInvalidOptions and a message that says so.
var unsupportedStages = []string{
	"$setWindowFields", "$facet", "$bucketAuto", "$densify", "$fill",
	"$geoNear", "$graphLookup", "$collStats", "$indexStats", "$currentOp",
	"$listSessions", "$planCacheStats", "$search", "$searchMeta",
	"$vectorSearch", "$changeStream", "$documents", "$listLocalSessions",
}

func init() {
	m := make(map[string]stageCompiler, len(unsupportedStages))
	for _, name := range unsupportedStages {
		m[name] = func(*compiler, *Stage, any) error {
			return fmt.Errorf("%w: the stage is not supported yet", errs.ErrInvalidOptions)
		}
	}
	registerStages(m)
}
