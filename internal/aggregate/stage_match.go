package aggregate

import (
	"context"

	"github.com/ttldb/ttldb/internal/query"
)

func init() {
	registerStages(map[string]stageCompiler{"$match": compileMatch})
}

// compileMatch compiles {$match: filter}: the documents the filter
// matches pass.
func compileMatch(c *compiler, st *Stage, arg any) error {
	m, err := asDoc("the filter", arg)
	if err != nil {
		return err
	}
	f, err := query.CompileFilterWith(m, c.exprs)
	if err != nil {
		return err
	}
	st.Filter = f.Doc()
	st.run = func(_ context.Context, _ *runner, in Stream) Stream {
		return streamFunc(func(ctx context.Context) (Document, error) {
			for {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				d, err := in.Next(ctx)
				if d == nil || err != nil {
					return nil, err
				}
				ok, err := f.MatchesErr(d)
				if err != nil {
					return nil, err
				}
				if ok {
					return d, nil
				}
			}
		})
	}
	return nil
}
