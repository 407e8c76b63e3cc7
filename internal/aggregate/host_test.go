package aggregate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

// fakeHost is an in-memory Host: collections as slices of documents.
type fakeHost struct {
	colls  map[string][]Document
	out    map[string][]Document
	merges []*MergeSpec
	merged [][]Document
	grown  int64 // booked now
	peak   int64
	budget int64 // 0: none
}

func newHost(colls map[string][]Document) *fakeHost {
	return &fakeHost{colls: colls, out: map[string][]Document{}}
}

func (h *fakeHost) Lookup(_ context.Context, from, field string, value any) ([]Document, error) {
	var out []Document
	want := []any{value}
	if elems, ok := codec.ArrayElements(value); ok {
		want = elems
	}
	for _, d := range h.colls[from] {
		vals, found := codec.PathValues(d, field)
		if !found {
			vals = []any{nil}
		}
		var cands []any
		for _, v := range vals {
			if elems, ok := codec.ArrayElements(v); ok {
				cands = append(cands, elems...)
			}
			cands = append(cands, v)
		}
	match:
		for _, w := range want {
			for _, c := range cands {
				if query.Equal(w, c) {
					out = append(out, d)
					break match
				}
			}
		}
	}
	return out, nil
}

func (h *fakeHost) Read(ctx context.Context, coll string, pipeline []any) (Stream, error) {
	docs := append([]Document(nil), h.colls[coll]...)
	p, err := Compile(pipeline, Options{})
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, h, &SliceStream{Docs: docs}, 0), nil
}

func (h *fakeHost) Out(ctx context.Context, coll string, in Stream) error {
	docs, err := Collect(ctx, in)
	if err != nil {
		return err
	}
	h.out[coll] = docs
	return nil
}

func (h *fakeHost) Merge(ctx context.Context, spec *MergeSpec, in Stream) error {
	docs, err := Collect(ctx, in)
	if err != nil {
		return err
	}
	h.merges = append(h.merges, spec)
	h.merged = append(h.merged, docs)
	return nil
}

func (h *fakeHost) Grow(n int64) error {
	if h.budget > 0 && h.grown+n > h.budget {
		return errs.ErrMemoryLimit
	}
	h.grown += n
	h.peak = max(h.peak, h.grown)
	return nil
}

// run compiles pipeline and runs it over docs with a fresh fake host.
func run(t *testing.T, pipeline []any, docs []Document) []Document {
	t.Helper()
	out, err := runWith(newHost(nil), Options{}, pipeline, docs)
	require.NoError(t, err)
	return out
}

func runWith(h *fakeHost, opts Options, pipeline []any, docs []Document) ([]Document, error) {
	p, err := Compile(pipeline, opts)
	if err != nil {
		return nil, err
	}
	in := append([]Document(nil), docs...)
	out, err := Collect(context.Background(), p.Run(context.Background(), h, &SliceStream{Docs: in}, 0))
	if err == nil && h.grown != 0 {
		return nil, errMemoryLeft
	}
	return out, err
}

var errMemoryLeft = errorString("memory left booked at the end")

type errorString string

func (e errorString) Error() string { return string(e) }

// compileErr compiles pipeline and returns its error.
func compileErr(pipeline ...any) error {
	_, err := Compile(pipeline, Options{})
	return err
}

// D is a bson.D literal's shorthand.
type D = bson.D

// od is an ordered document of key, value pairs.
func od(kv ...any) bson.D {
	var out bson.D
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, bson.E{Key: kv[i].(string), Value: kv[i+1]})
	}
	return out
}

// M is a Document literal's shorthand.
type M = Document

// A is an array literal's shorthand.
type A = []any

// requireSameDocs compares two lists of documents, in order, with
// query.Equal (numbers across types compare equal: use requireTyped
// for type checks).
func requireSameDocs(t *testing.T, want, got []Document) {
	t.Helper()
	require.Equal(t, len(want), len(got), "got %v", got)
	for i := range want {
		require.True(t, query.Equal(map[string]any(want[i]), map[string]any(got[i])), "document %d: want %v, got %v", i, want[i], got[i])
	}
}

// requireSameSet compares two lists of documents in any order.
func requireSameSet(t *testing.T, want, got []Document) {
	t.Helper()
	require.Equal(t, len(want), len(got), "got %v", got)
	used := make([]bool, len(got))
next:
	for _, w := range want {
		for j, g := range got {
			if !used[j] && query.Equal(map[string]any(w), map[string]any(g)) {
				used[j] = true
				continue next
			}
		}
		t.Fatalf("document %v not in %v", w, got)
	}
}
