package ttldb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
)

// Rule: a stream resumed from a lag error's token, with the same MaxLag,
// makes progress: the backlog it resumes into is not held against it, so
// that resuming as the error says delivers every event, once and in
// order, even with no further write.
func TestChangeStreamResumeAfterLagMakesProgress(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	c := db.Collection("c")
	opts := ttldb.ChangeStreamOptions{MaxLag: 8}
	cs, err := c.Watch(ctx, opts)
	require.NoError(t, err)
	const n = 100
	for i := range n {
		_, err := c.InsertOne(ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	require.False(t, cs.Next(ctx), "100 ops behind a MaxLag of 8")
	var lag *ttldb.ChangeStreamLagError
	require.ErrorAs(t, cs.Err(), &lag)
	require.False(t, lag.Lost)
	require.NoError(t, cs.Close())

	var got []any
	resumes := 0
	for tok := lag.Resume; len(got) < n && resumes < 50; resumes++ {
		opts.ResumeAfter = &tok
		again, err := c.Watch(ctx, opts)
		require.NoError(t, err, "resume %d from %s", resumes, tok)
		for again.TryNext(ctx) {
			got = append(got, again.Event().DocumentKey.ID())
		}
		tok = again.ResumeToken()
		if err := again.Err(); err != nil {
			require.ErrorAs(t, err, &lag)
			require.False(t, lag.Lost, "resume %d", resumes)
			tok = lag.Resume
		}
		require.NoError(t, again.Close())
	}
	want := make([]any, n)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, got, "after %d resumes", resumes)
}

// Rule: a resumed stream still ends lagged when more than MaxLag ops are
// committed after it resumed and it does not read them, but only after
// reading at least the op it resumed at, so that each resume from the
// error's token moves on.
func TestChangeStreamResumeLagCountsFromResume(t *testing.T) {
	db, _ := openStore(t)
	ctx := context.Background()
	c := db.Collection("c")
	insert := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := c.InsertOne(ttldb.Document{"_id": i})
			require.NoError(t, err)
		}
	}
	first, err := c.Watch(ctx, ttldb.ChangeStreamOptions{MaxLag: 4})
	require.NoError(t, err)
	defer first.Close()
	insert(0, 20)
	require.False(t, first.Next(ctx))
	var lag *ttldb.ChangeStreamLagError
	require.ErrorAs(t, first.Err(), &lag)
	tok := lag.Resume

	// Resumed, then 4 more ops: within MaxLag of the resume, the stream
	// reads the backlog and the new ops alike.
	again, err := c.Watch(ctx, ttldb.ChangeStreamOptions{MaxLag: 4, ResumeAfter: &tok})
	require.NoError(t, err)
	defer again.Close()
	insert(20, 24)
	var got []any
	for again.TryNext(ctx) {
		got = append(got, again.Event().DocumentKey.ID())
	}
	require.NoError(t, again.Err())
	assert.Len(t, got, 24)

	// Resumed, then 10 more ops than MaxLag allows: the stream reads its
	// first op, then ends lagged with a later token.
	third, err := c.Watch(ctx, ttldb.ChangeStreamOptions{MaxLag: 4, ResumeAfter: &tok})
	require.NoError(t, err)
	defer third.Close()
	insert(24, 34)
	require.True(t, third.Next(ctx), "a resumed stream reads the op it resumed at")
	assert.Equal(t, 0, third.Event().DocumentKey.ID())
	require.False(t, third.Next(ctx))
	var lag2 *ttldb.ChangeStreamLagError
	require.ErrorAs(t, third.Err(), &lag2)
	assert.Greater(t, lag2.Resume.Seq, tok.Seq, "the error's token is past the one resumed from")
}
