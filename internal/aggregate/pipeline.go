package aggregate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

// Document is a document in the pipeline.
type Document = codec.Document

// MaxStages bounds a pipeline's stages (sub-pipelines included, each on
// its own).
const MaxStages = 1000

// DefaultMaxMemoryBytes is each blocking stage's memory limit when
// Options.MaxMemoryBytes is 0: MongoDB's 100 MB.
const DefaultMaxMemoryBytes = 100 << 20

// Stream is a stream of documents. Next returns the next one, or nil (and
// a nil error) at the end; after an error it is not called again. A
// Stream is for one goroutine.
type Stream interface {
	Next(ctx context.Context) (Document, error)
}

// Host is what stages that reach beyond their input need from the
// database. The engine implements it; every method reads with the
// pipeline's one expiry cutoff and within the pipeline's transaction, if
// any.
type Host interface {
	// Lookup returns the documents of collection from whose foreignField
	// (a dotted path) equals value as $lookup's equality does: a document
	// whose field holds an array matches any element; null matches null
	// and missing fields (value is null for a missing local field); an
	// array value matches any of its elements. A missing collection holds
	// nothing.
	Lookup(ctx context.Context, from, foreignField string, value any) ([]Document, error)
	// Read streams the documents of collection coll through pipeline
	// (stages as the driver gives them; nil: none), planned and run as
	// Aggregate runs one ($unionWith).
	Read(ctx context.Context, coll string, pipeline []any) (Stream, error)
	// Out replaces the documents of collection coll by those of in, all
	// or nothing ($out).
	Out(ctx context.Context, coll string, in Stream) error
	// Merge merges the documents of in into a collection ($merge).
	Merge(ctx context.Context, spec *MergeSpec, in Stream) error
	// Grow books n bytes of the DB's memory budget (negative: gives them
	// back) for a blocking stage; it fails, wrapping ErrMemoryLimit, when
	// the budget is spent.
	Grow(n int64) error
}

// MergeSpec is a $merge stage's arguments.
type MergeSpec struct {
	Into           string   // the collection
	On             []string // the fields identifying a document (default _id)
	WhenMatched    string   // "merge" (default), "replace", "keepExisting", "fail"
	WhenNotMatched string   // "insert" (default), "discard", "fail"
}

// Options are a pipeline's settings.
type Options struct {
	// Now is $$NOW: read once from the DB's clock.
	Now time.Time
	// Let are the pipeline's variables ($$name), already evaluated.
	Let map[string]any
	// MaxMemoryBytes bounds what each blocking stage ($group, $sort,
	// $bucket, $sample...) holds; 0: DefaultMaxMemoryBytes.
	MaxMemoryBytes int64
	// Seed seeds $sample's random choice (0: a random seed).
	Seed uint64
	// DB is the database's name: $out's and $merge's {db, coll} form
	// accepts only this one ("": none, only the form without db).
	DB string
}

// Stage is one compiled stage. The fields after Name describe the stage
// for the engine's planner; the stage's behaviour is run.
type Stage struct {
	Name  string // as given: "$match", "$set"...
	Index int    // its place in the pipeline, from 0

	// Filter is a $match's filter document (in the form CompileFilter
	// accepted), for the planner.
	Filter Document
	// Sort is a $sort's keys, in order.
	Sort []query.Key
	// N is a $limit's or $skip's count.
	N int64
	// GroupKey is a $group's _id when it is a plain field path ("$a"
	// gives "a"): the planner may feed the stage in that field's order
	// and set SortedInput.
	GroupKey string
	// SortedInput, set by the planner before Run, says the stage's input
	// arrives ordered by GroupKey: $group then streams (holds one group).
	SortedInput bool
	// Writes is set for $out and $merge, which must be last.
	Writes bool

	// limit is a $sort's top-k bound: the $limit that follows it
	// directly (0: none).
	limit int64

	run func(ctx context.Context, r *runner, in Stream) Stream
}

// Pipeline is a compiled pipeline. It is immutable once the planner has
// set its stages' SortedInput, and may be run once per Run call.
type Pipeline struct {
	Stages []*Stage
	opts   Options
	exprs  query.ExprOptions
}

// stageCompiler compiles one stage's argument, as given (a bson.D keeps
// its fields' order, which $sort and sortBy need): each stage converts
// the driver's containers where order does not matter (asDoc,
// codec.ExprValue).
type stageCompiler func(c *compiler, st *Stage, arg any) error

// compiler is what compiling a pipeline needs.
type compiler struct {
	opts  *Options
	exprs *query.ExprOptions
	last  bool // the stage is the pipeline's last
}

// stages holds the stage compilers, registered by the stage files' init.
var stages = map[string]stageCompiler{}

func registerStages(m map[string]stageCompiler) {
	for name, f := range m {
		if _, dup := stages[name]; dup {
			panic("aggregate: stage registered twice: " + name)
		}
		stages[name] = f
	}
}

// Compile compiles a pipeline given as the driver gives it: a slice of
// stage documents (bson.D, Document, bson.M with one field). Errors wrap
// errs.ErrInvalidOptions and name the stage (its index and name) and the
// field.
func Compile(pipeline []any, opts Options) (*Pipeline, error) {
	if len(pipeline) > MaxStages {
		return nil, fmt.Errorf("%w: the pipeline has %d stages, more than %d", errs.ErrInvalidOptions, len(pipeline), MaxStages)
	}
	if opts.MaxMemoryBytes == 0 {
		opts.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	p := &Pipeline{opts: opts, exprs: query.ExprOptions{Now: opts.Now, Vars: opts.Let}}
	c := &compiler{opts: &p.opts, exprs: &p.exprs}
	for i, raw := range pipeline {
		name, arg, err := stageParts(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: pipeline stage %d: %w", errs.ErrInvalidOptions, i, err)
		}
		f, ok := stages[name]
		if !ok {
			return nil, fmt.Errorf("%w: pipeline stage %d: unknown or unsupported stage %s", errs.ErrInvalidOptions, i, name)
		}
		st := &Stage{Name: name, Index: i}
		c.last = i == len(pipeline)-1
		if err := f(c, st, arg); err != nil {
			return nil, fmt.Errorf("%w: pipeline stage %d (%s): %w", errs.ErrInvalidOptions, i, name, err)
		}
		if st.Writes && !c.last {
			return nil, fmt.Errorf("%w: pipeline stage %d: %s must be the last stage", errs.ErrInvalidOptions, i, name)
		}
		p.Stages = append(p.Stages, st)
	}
	// A $sort followed directly by a $limit keeps only the limit's
	// documents (a top-k heap), and by a $skip then a $limit the skip's
	// and the limit's; the $skip and $limit still run after it.
	for i := 0; i+1 < len(p.Stages); i++ {
		if p.Stages[i].Name != "$sort" {
			continue
		}
		switch next := p.Stages[i+1]; {
		case next.Name == "$limit":
			p.Stages[i].limit = next.N
		case next.Name == "$skip" && i+2 < len(p.Stages) && p.Stages[i+2].Name == "$limit":
			if k := next.N + p.Stages[i+2].N; k > 0 { // no overflow
				p.Stages[i].limit = k
			}
		}
	}
	return p, nil
}

// stageParts splits a stage document into its one field's name and
// value, keeping the value as given (a bson.D stays a bson.D).
func stageParts(raw any) (string, any, error) {
	fields, ok := OrderedFields(raw)
	if !ok {
		return "", nil, fmt.Errorf("a stage is a document, not %T", raw)
	}
	if len(fields) != 1 {
		return "", nil, fmt.Errorf("a stage is a document with one field, the stage's name; this one has %d", len(fields))
	}
	return fields[0].Key, fields[0].Value, nil
}

// runner is one run's state shared by its stages.
type runner struct {
	p    *Pipeline
	host Host
	mems []*memory // the blocking stages' bookings
}

// Run streams in through the stages from index from on (the planner ran
// the stages before it), with host for what reaches beyond the stream.
// Errors of the returned stream name the stage. The memory the blocking
// stages booked with host.Grow is given back as each stage finishes, and
// all of it once the returned stream ends or fails; the stream is also an
// io.Closer whose Close gives it back, for a caller that stops reading
// before the end (Collect does so when ctx ends).
func (p *Pipeline) Run(ctx context.Context, host Host, in Stream, from int) Stream {
	if host == nil {
		host = noHost{}
	}
	r := &runner{p: p, host: host}
	s := in
	for _, st := range p.Stages[from:] {
		s = &namedStream{st: st, in: st.run(ctx, r, s)}
	}
	return &releaseStream{r: r, in: s}
}

// releaseStream gives back the run's memory at its end.
type releaseStream struct {
	r    *runner
	in   Stream
	done bool
}

func (s *releaseStream) Next(ctx context.Context) (Document, error) {
	if s.done {
		return nil, nil
	}
	d, err := s.in.Next(ctx)
	if err != nil || d == nil {
		s.done = err == nil
		_ = s.Close()
	}
	return d, err
}

// Close gives back the memory the run's stages hold; the stream is not
// to be read after it.
func (s *releaseStream) Close() error {
	for _, m := range s.r.mems {
		m.release()
	}
	return nil
}

// noHost is the Host of a run given none: no other collection, no
// writes, no DB budget (each stage's own limit still holds).
type noHost struct{}

var errNoHost = errors.New("the pipeline runs without a database: no other collection to read or write")

func (noHost) Lookup(context.Context, string, string, any) ([]Document, error) {
	return nil, errNoHost
}
func (noHost) Read(context.Context, string, []any) (Stream, error) { return nil, errNoHost }
func (noHost) Out(context.Context, string, Stream) error           { return errNoHost }
func (noHost) Merge(context.Context, *MergeSpec, Stream) error     { return errNoHost }
func (noHost) Grow(int64) error                                    { return nil }

// streamFunc is a Stream written as a function.
type streamFunc func(ctx context.Context) (Document, error)

func (f streamFunc) Next(ctx context.Context) (Document, error) { return f(ctx) }

// namedStream prefixes a stage's errors with its place and name.
type namedStream struct {
	st *Stage
	in Stream
}

func (n *namedStream) Next(ctx context.Context) (Document, error) {
	d, err := n.in.Next(ctx)
	if err != nil {
		if _, already := err.(*StageError); already {
			return nil, err
		}
		return nil, &StageError{Index: n.st.Index, Stage: n.st.Name, Err: err}
	}
	return d, nil
}

// StageError is an error of one stage of a pipeline: its index, its name
// and the cause (which names the field and operator).
type StageError struct {
	Index int
	Stage string
	Err   error
}

func (e *StageError) Error() string {
	return fmt.Sprintf("pipeline stage %d (%s): %v", e.Index, e.Stage, e.Err)
}

func (e *StageError) Unwrap() error { return e.Err }

// SliceStream streams docs.
type SliceStream struct {
	Docs []Document
	i    int
}

// Next implements Stream.
func (s *SliceStream) Next(context.Context) (Document, error) {
	if s.i >= len(s.Docs) {
		return nil, nil
	}
	d := s.Docs[s.i]
	s.Docs[s.i] = nil
	s.i++
	return d, nil
}

// Collect reads s to its end (checking ctx between documents). When ctx
// ends first, it closes s if s is an io.Closer (a pipeline's stream:
// its memory is given back).
func Collect(ctx context.Context, s Stream) ([]Document, error) {
	var out []Document
	for {
		if err := ctx.Err(); err != nil {
			if c, ok := s.(io.Closer); ok {
				_ = c.Close()
			}
			return nil, err
		}
		d, err := s.Next(ctx)
		if err != nil {
			return nil, err
		}
		if d == nil {
			return out, nil
		}
		out = append(out, d)
	}
}
