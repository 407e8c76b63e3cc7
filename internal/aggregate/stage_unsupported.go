package aggregate

import "errors"

// The stages ttldb knows of but does not run yet: Compile refuses them
// (errs.ErrInvalidOptions) with a message that says so.
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
			return errors.New("the stage is not supported yet")
		}
	}
	registerStages(m)
}
