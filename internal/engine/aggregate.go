package engine

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/aggregate"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// AggregateOptions adjusts Aggregate and ExplainAggregate, with the
// driver's option names where they exist. The zero value runs the
// pipeline with no variables, the planner's choice of index and the
// default memory limit of each blocking stage.
type AggregateOptions struct {
	// Let defines variables the pipeline's expressions read as $$name
	// (a Document, bson.D or bson.M of constant expressions, evaluated
	// once). Names start with a lowercase letter.
	Let any
	// Hint names the index the pipeline's leading $match is answered with
	// (see FindOptions.Hint).
	Hint any
	// MaxMemoryBytes bounds the bytes each blocking stage ($group, $sort,
	// $bucket, $sortByCount, $sample) holds, counted in the DB's memory
	// budget too; 0: 100 MiB (MongoDB's limit). ttldb keeps no spill
	// files: a stage over the limit fails with ErrMemoryLimit.
	MaxMemoryBytes int64
	// Collation must be nil or the simple collation (see Collation).
	Collation *Collation
}

func mergeAggregateOptions(opts []AggregateOptions) (AggregateOptions, error) {
	var o AggregateOptions
	for _, x := range opts {
		if x.Let != nil {
			o.Let = x.Let
		}
		if x.Hint != nil {
			o.Hint = x.Hint
		}
		if x.MaxMemoryBytes != 0 {
			o.MaxMemoryBytes = x.MaxMemoryBytes
		}
		if x.Collation != nil {
			o.Collation = x.Collation
		}
	}
	if o.MaxMemoryBytes < 0 {
		return o, fmt.Errorf("%w: Aggregate: negative MaxMemoryBytes %d", ErrInvalidOptions, o.MaxMemoryBytes)
	}
	return o, nil
}

// aggRun is one Aggregate call: its one instant ($$NOW and the expiry
// cutoff of every read, $lookup's and $unionWith's included), its
// variables, and the database its stages reach. It is the pipeline's
// aggregate.Host.
type aggRun struct {
	db   *DB
	now  time.Time
	let  map[string]any
	opts AggregateOptions
	// booked is what the run's blocking stages hold of the DB's memory
	// budget (Grow), given back when the run ends.
	booked int64
}

// pipelineArg reads a pipeline as the driver takes it: nil, or a slice or
// array (mongo.Pipeline, []bson.D, bson.A, []Document, []any...) of stage
// documents, kept as given (a $sort's bson.D keeps its order).
func pipelineArg(what string, pipeline any) ([]any, error) {
	if pipeline == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(pipeline)
	if _, isDoc := pipeline.(bson.D); isDoc || rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("%w: %s: the pipeline must be a slice of stages (mongo.Pipeline, []bson.D, bson.A, []Document), not %s", ErrInvalidOptions, what, rv.Type())
	}
	if rv.Len() > aggregate.MaxStages {
		return nil, fmt.Errorf("%w: %s: the pipeline has %d stages, more than %d", ErrInvalidOptions, what, rv.Len(), aggregate.MaxStages)
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, nil
}

// letVars evaluates the Let option: each variable's expression, once,
// with $$NOW.
func letVars(let any, now time.Time) (map[string]any, error) {
	if let == nil {
		return nil, nil
	}
	doc, err := documentArg("Let", let, ErrInvalidOptions)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(doc))
	for _, name := range query.SortedKeys(doc) {
		if err := query.CheckVarName(name); err != nil {
			return nil, fmt.Errorf("the Let option: %w", err)
		}
		e, err := query.CompileExprWith(doc[name], &query.ExprOptions{Now: now})
		if err != nil {
			return nil, fmt.Errorf("the Let option: variable %q: %w", name, err)
		}
		v, err := e.Evaluate(&query.Env{})
		if err != nil {
			return nil, fmt.Errorf("the Let option: variable %q: %w", name, err)
		}
		if !query.IsMissing(v) {
			out[name] = v
		}
	}
	return out, nil
}

// newAggRun starts an Aggregate call.
func (c *Collection) newAggRun(opts []AggregateOptions) (*aggRun, error) {
	o, err := mergeAggregateOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := checkCollation(c.name, o.Collation); err != nil {
		return nil, err
	}
	now := c.db.clock.Now()
	let, err := letVars(o.Let, now)
	if err != nil {
		return nil, fmt.Errorf("collection %q: Aggregate: %w", c.name, err)
	}
	return &aggRun{db: c.db, now: now, let: let, opts: o}, nil
}

// compile compiles a pipeline with the run's options.
func (r *aggRun) compile(stages []any) (*aggregate.Pipeline, error) {
	return aggregate.Compile(stages, aggregate.Options{Now: r.now, Let: r.let, MaxMemoryBytes: r.opts.MaxMemoryBytes})
}

// Aggregate implements ttldb.Collection.Aggregate, whose documentation is the contract.
func (c *Collection) Aggregate(ctx context.Context, pipeline any, opts ...AggregateOptions) (*Cursor, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := c.started(ctx); err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	stages, err := pipelineArg("Aggregate", pipeline)
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", c.name, err)
	}
	r, err := c.newAggRun(opts)
	if err != nil {
		return nil, err
	}
	p, err := r.compile(stages)
	if err != nil {
		return nil, fmt.Errorf("collection %q: Aggregate: %w", c.name, err)
	}
	writes := len(p.Stages) > 0 && p.Stages[len(p.Stages)-1].Writes
	if writes {
		if t := txnIn(ctx, c.db); t != nil {
			return nil, fmt.Errorf("collection %q: Aggregate: %w: %s in a transaction", c.name, ErrNotInTransaction, p.Stages[len(p.Stages)-1].Name)
		}
	}
	out, _, err := c.runPipeline(ctx, r, p, stages, r.opts.Hint)
	if err != nil {
		r.release()
		return nil, err
	}
	cur := &Cursor{src: out, srcRun: r, srcName: c.name, opts: c.db.cfg.bson}
	cur.pull(ctx) // the first batch (and, with $out or $merge, every write) now
	if cur.err != nil {
		return nil, cur.err
	}
	return cur, nil
}

// aggHead is how a pipeline's head reads the collection: the stages the
// read answers (a leading $match, $sort, $skip, $limit), and how.
type aggHead struct {
	filter Document
	opts   FindOptions
	from   int // the first stage the pipeline runs on the read's output
	// explain, set by ExplainAggregate, makes the head's read run whole
	// and keep its plan and counts in ex.
	explain bool
	ex      *Explanation
}

// planHead takes the pipeline's leading $match stages (their filters
// and-ed) for the collection's read. orderHead then adds what follows
// them when the plan can answer it: a $sort an index walk gives (with
// the $skip and $limit after it), or a $skip and $limit. A $sort no index
// gives stays a stage of the pipeline, which bounds its memory.
func planHead(p *aggregate.Pipeline) aggHead {
	h := aggHead{}
	var filters []any
	i := 0
	for ; i < len(p.Stages) && p.Stages[i].Name == "$match"; i++ {
		filters = append(filters, p.Stages[i].Filter)
	}
	switch len(filters) {
	case 0:
	case 1:
		h.filter = filters[0].(Document)
	default:
		h.filter = Document{"$and": filters}
	}
	h.from = i
	return h
}

// absorbOrder extends the head with the $sort at h.from, if any, then a
// $skip, then a $limit.
func absorbOrder(p *aggregate.Pipeline, h *aggHead) {
	i := h.from
	if i < len(p.Stages) && p.Stages[i].Name == "$sort" {
		for _, k := range p.Stages[i].Sort {
			h.opts.Sort = append(h.opts.Sort, IndexKey(k))
		}
		i++
	}
	if i < len(p.Stages) && p.Stages[i].Name == "$skip" {
		h.opts.Skip = int(p.Stages[i].N)
		i++
	}
	if i < len(p.Stages) && p.Stages[i].Name == "$limit" {
		h.opts.Limit = int(p.Stages[i].N)
		i++
	}
	h.from = i
}

// AggregateExplanation describes how Aggregate runs a pipeline: how its
// head reads the collection, and the stages run on what it reads.
type AggregateExplanation struct {
	// Read is the plan of the pipeline's head, with counts from running
	// it: the Find its leading $match amounts to (with the $sort, $skip
	// and $limit after it when an index walk gives their order; on a
	// time-series collection, the buckets the $match could not rule out).
	Read Explanation
	// Pushed names the stages the read answers, in order.
	Pushed []string
	// Stages names the stages run on the read's output, in order. A
	// $group whose input arrives ordered by its key (an index walk) is
	// "$group (streaming)": it holds one group at a time.
	Stages []string
}

// ExplainAggregate implements ttldb.Collection.ExplainAggregate, whose documentation is the contract.
func (c *Collection) ExplainAggregate(ctx context.Context, pipeline any, opts ...AggregateOptions) (AggregateExplanation, error) {
	if err := c.usable(); err != nil {
		return AggregateExplanation{}, err
	}
	if err := c.started(ctx); err != nil {
		return AggregateExplanation{}, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	stages, err := pipelineArg("ExplainAggregate", pipeline)
	if err != nil {
		return AggregateExplanation{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	r, err := c.newAggRun(opts)
	if err != nil {
		return AggregateExplanation{}, err
	}
	p, err := r.compile(stages)
	if err != nil {
		return AggregateExplanation{}, fmt.Errorf("collection %q: ExplainAggregate: %w", c.name, err)
	}
	h := planHead(p)
	h.explain = true
	if _, err := c.openHead(ctx, r, p, &h, r.opts.Hint); err != nil {
		return AggregateExplanation{}, err
	}
	var out AggregateExplanation
	if h.ex != nil {
		out.Read = *h.ex
	} else {
		out.Read = Explanation{Collection: c.name, Stage: "EOF", Filter: h.filter}
	}
	for _, st := range p.Stages[:h.from] {
		out.Pushed = append(out.Pushed, st.Name)
	}
	for _, st := range p.Stages[h.from:] {
		name := st.Name
		if st.SortedInput {
			name += " (streaming)"
		}
		out.Stages = append(out.Stages, name)
	}
	return out, nil
}

// runPipeline plans p's head on the collection, opens its read and runs
// the rest of p on it.
func (c *Collection) runPipeline(ctx context.Context, r *aggRun, p *aggregate.Pipeline, stages []any, hint any) (aggregate.Stream, *aggHead, error) {
	h := planHead(p)
	src, err := c.openHead(ctx, r, p, &h, hint)
	if cs, ok := src.(*cursorStream); ok {
		// Decode only the fields the stages after the head read.
		if fields, all := aggregate.Dependencies(stages, h.from); !all {
			cs.fields = fields
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return p.Run(ctx, r, src, h.from), &h, nil
}

// openHead opens the read of the pipeline's head: through the
// transaction ctx carries, if any; a time-series collection's buckets
// (the head's filter prunes them); else a cursor over the collection's
// plan, with the run's one cutoff.
func (c *Collection) openHead(ctx context.Context, r *aggRun, p *aggregate.Pipeline, h *aggHead, hint any) (aggregate.Stream, error) {
	exprOpts := &query.ExprOptions{Now: r.now, Vars: r.let}
	if ts := c.timeSeries(); ts != nil {
		if err := c.refuseIn(ctx, "a time-series collection"); err != nil {
			return nil, err
		}
		if hint != nil {
			return nil, fmt.Errorf("%w: collection %q: a time-series collection takes no hint", ErrInvalidOptions, c.name)
		}
		q, err := c.compileHead(h, exprOpts)
		if err != nil {
			return nil, err
		}
		q.ctx = ctx
		docs, ex, err := ts.run(q)
		if err == nil && q.err != nil {
			err = ctxError(c.name, q.err)
		}
		if err != nil {
			return nil, err
		}
		h.ex = ex
		return &aggregate.SliceStream{Docs: docs}, nil
	}
	h.opts.Hint = hint
	q, err := c.compileHead(h, exprOpts)
	if err != nil {
		return nil, err
	}
	if !h.explain { // an explanation reads outside any transaction
		if docs, inTxn, err := c.txnRun(ctx, q); inTxn {
			if err != nil {
				return nil, err
			}
			return cursorDocsStream(docs), nil
		}
	}
	s, err := c.read()
	if err != nil {
		return nil, err
	}
	if s == nil {
		return &aggregate.SliceStream{}, nil
	}
	s.rlock()
	err = s.applyHint(q)
	var pl *plan
	var docs []cursorDoc
	if err == nil {
		pl = c.orderHead(s, p, h, q)
		if h.explain {
			q.ctx = ctx
			docs, h.ex = s.runLocked(q, r.now)
			err = scanError(c.name, q.err)
		}
	}
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if h.explain {
		return cursorDocsStream(docs), nil
	}
	cur := &Cursor{s: s, q: q, p: pl, skip: q.opts.Skip, left: -1, now: r.now}
	if q.opts.Limit > 0 {
		cur.left = q.opts.Limit
	}
	return &cursorStream{cur: cur}, nil
}

// orderHead decides what of the pipeline's order the collection's plan
// gives: a $sort after the head's $match (with its $skip and $limit) when
// an index walk yields that order, else a $group on a field an index
// orders (the group then streams). It returns the plan. Call holding
// s.mu.
func (c *Collection) orderHead(s *collState, p *aggregate.Pipeline, h *aggHead, q *findQuery) *plan {
	pl := s.plan(q)
	if h.from >= len(p.Stages) {
		return pl
	}
	next := p.Stages[h.from]
	switch {
	case next.Name == "$sort":
		trial := *h
		absorbOrder(p, &trial)
		q.opts, q.sort = trial.opts, sortKeys(trial.opts.Sort)
		if tp := s.plan(q); !tp.needsSort(q) {
			*h = trial
			return tp
		}
		q.opts, q.sort = h.opts, sortKeys(h.opts.Sort)
	case next.Name == "$limit" || next.Name == "$skip":
		trial := *h
		absorbOrder(p, &trial)
		q.opts = trial.opts
		*h = trial
	case next.GroupKey != "":
		q.opts.Sort = []IndexKey{Asc(next.GroupKey)}
		q.sort = sortKeys(q.opts.Sort)
		if tp := s.plan(q); !tp.needsSort(q) {
			next.SortedInput = true
			h.opts.Sort = q.opts.Sort
			return tp
		}
		q.opts.Sort, q.sort = nil, nil
	}
	return pl
}

// compileHead compiles the head's read as a Find.
func (c *Collection) compileHead(h *aggHead, exprOpts *query.ExprOptions) (*findQuery, error) {
	q, err := c.compileQuery(Document{}, []FindOptions{h.opts})
	if err != nil {
		return nil, err
	}
	if len(h.filter) > 0 {
		f, err := query.CompileFilterWith(h.filter, exprOpts)
		if err != nil {
			return nil, fmt.Errorf("collection %q: %w", c.name, err)
		}
		q.filter, q.filterDoc = f, f.Doc()
	}
	return q, nil
}

// cursorStream streams a Cursor's results as documents: whole, or only
// fields (when not nil) of those not decoded already.
type cursorStream struct {
	cur    *Cursor
	fields []string
}

func (cs *cursorStream) Next(ctx context.Context) (Document, error) {
	if !cs.cur.Next(ctx) {
		return nil, cs.cur.Err()
	}
	d := &cs.cur.cur
	if d.doc == nil && cs.fields != nil {
		return codec.DecodeFields(d.enc, cs.fields), nil
	}
	return d.document(), nil
}

// document is the result decoded (a fresh document the caller owns).
func (d *cursorDoc) document() Document {
	if d.doc != nil {
		return d.doc
	}
	return codec.Decode(d.enc)
}

// cursorDocsStream streams results already read.
func cursorDocsStream(docs []cursorDoc) aggregate.Stream {
	out := make([]Document, len(docs))
	for i := range docs {
		out[i] = docs[i].document()
	}
	return &aggregate.SliceStream{Docs: out}
}

// release gives back what the run's stages still hold of the memory
// budget.
func (r *aggRun) release() {
	if r.booked != 0 {
		r.db.mem.Add(-r.booked)
		r.booked = 0
	}
}

// Grow implements aggregate.Host: it books n bytes of the DB's memory
// budget (WithMemoryLimit; nothing is booked without one).
func (r *aggRun) Grow(n int64) error {
	limit := r.db.cfg.memLimit
	if limit == 0 {
		return nil
	}
	if n > 0 && r.db.mem.Add(n) > limit {
		r.db.mem.Add(-n)
		return fmt.Errorf("%w: a pipeline stage needs %d bytes more, %d of the DB's %d are in use", ErrMemoryLimit, n, r.db.mem.Load(), limit)
	}
	if n < 0 {
		r.db.mem.Add(n)
	}
	r.booked += n
	return nil
}

// Lookup implements aggregate.Host: the documents of from whose
// foreignField equals value ($lookup's equality), read with the run's
// cutoff, in the transaction ctx carries if any.
func (r *aggRun) Lookup(ctx context.Context, from, foreignField string, value any) ([]Document, error) {
	var cond any
	if elems, ok := codec.ArrayElements(value); ok {
		cond = Document{"$in": elems}
	} else {
		cond = Document{"$eq": value}
	}
	p, err := r.compile([]any{Document{"$match": Document{foreignField: cond}}})
	if err != nil {
		return nil, err
	}
	c := r.db.Collection(from)
	out, _, err := c.runPipeline(ctx, r, p, nil, nil)
	if err != nil {
		return nil, err
	}
	return aggregate.Collect(ctx, out)
}

// Read implements aggregate.Host: collection coll's documents through
// pipeline ($unionWith), with the run's cutoff and variables.
func (r *aggRun) Read(ctx context.Context, coll string, pipeline []any) (aggregate.Stream, error) {
	p, err := r.compile(pipeline)
	if err != nil {
		return nil, err
	}
	if len(p.Stages) > 0 && p.Stages[len(p.Stages)-1].Writes {
		return nil, fmt.Errorf("%w: %s inside a sub-pipeline", ErrInvalidOptions, p.Stages[len(p.Stages)-1].Name)
	}
	out, _, err := r.db.Collection(coll).runPipeline(ctx, r, p, pipeline, nil)
	return out, err
}
