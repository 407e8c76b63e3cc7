package engine

import (
	"fmt"
	"reflect"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

// A change stream's pipeline (Watch's pipeline argument), as the driver's
// Watch takes it: the stages MongoDB allows in a change stream, over the
// event as a document (ChangeEvent's MarshalJSON form: _id, operationType,
// clusterTime, wallTime, ns, documentKey, updateDescription, fullDocument,
// fullDocumentBeforeChange, operationDescription, and ttldb's expired,
// index, cutoff). $match takes ttldb's query language; $project,
// $addFields/$set and $replaceRoot/$replaceWith take the expression subset
// of query.Expr. A stage that removes or changes _id, the resume token, is
// refused at Watch when the stage says so ({_id: 0}, $unset: "_id", a
// computed _id), and ends the stream when an event shows it ($replaceRoot
// to a document whose _id differs), as MongoDB does: a stream whose events
// lost their token could not resume.

// MaxPipelineStages bounds the stages of a change stream's pipeline.
const MaxPipelineStages = 100

// changePipeline is a compiled pipeline. reshapes is set when a stage
// changes the event's shape (any stage but $match): ChangeStream.Current
// and Decode then give the reshaped document.
type changePipeline struct {
	stages   []changeStage
	reshapes bool
}

type stageKind uint8

const (
	stageMatch stageKind = iota
	stageProject
	stageAddFields
	stageUnset
	stageReplaceRoot
)

type changeStage struct {
	kind     stageKind
	name     string // as given: "$set", "$replaceWith"...
	filter   *query.Filter
	proj     *query.Projection // $project's 0/1 fields
	computed []computedField   // $project's computed fields, $addFields' fields
	paths    []string          // $unset
	root     *query.Expr       // $replaceRoot's newRoot
}

type computedField struct {
	path string
	expr *query.Expr
}

// pipelineStages reads a pipeline as the driver takes it: nil, or a slice
// or array (mongo.Pipeline, []bson.D, bson.A, []Document, []any...) of
// stage documents.
func pipelineStages(pipeline any) ([]Document, error) {
	if pipeline == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(pipeline)
	if _, isDoc := pipeline.(bson.D); isDoc || rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("%w: Watch: the pipeline must be a slice of stages (mongo.Pipeline, []bson.D, bson.A, []Document), not %s", ErrInvalidOptions, rv.Type())
	}
	if rv.Len() > MaxPipelineStages {
		return nil, fmt.Errorf("%w: Watch: the pipeline has %d stages, more than %d", ErrInvalidOptions, rv.Len(), MaxPipelineStages)
	}
	out := make([]Document, rv.Len())
	for i := range out {
		d, err := documentArg(fmt.Sprintf("pipeline stage %d", i), rv.Index(i).Interface(), errs.ErrInvalidOptions)
		if err != nil {
			return nil, fmt.Errorf("Watch: %w", err)
		}
		out[i] = d
	}
	return out, nil
}

// compileChangePipeline compiles Watch's pipeline (nil for none).
func compileChangePipeline(pipeline any) (*changePipeline, error) {
	docs, err := pipelineStages(pipeline)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	p := &changePipeline{}
	for i, d := range docs {
		st, err := compileStage(d)
		if err != nil {
			return nil, fmt.Errorf("%w: Watch: pipeline stage %d: %w", ErrInvalidOptions, i, err)
		}
		p.stages = append(p.stages, st)
		if st.kind != stageMatch {
			p.reshapes = true
		}
	}
	return p, nil
}

// errToken is why a stage that changes _id is refused.
const errToken = "it would remove or change _id, the event's resume token"

func compileStage(d Document) (changeStage, error) {
	if len(d) != 1 {
		return changeStage{}, fmt.Errorf("a stage is a document with one field, the stage's name; this one has %d", len(d))
	}
	var name string
	var arg any
	for k, v := range d {
		name, arg = k, v
	}
	st := changeStage{name: name}
	arg, err := codec.ExprValue(arg) // the driver's containers, at every depth
	if err != nil {
		return st, fmt.Errorf("%s: %w", name, err)
	}
	switch name {
	case "$match":
		m, ok := codec.AsDocument(arg)
		if !ok {
			return st, fmt.Errorf("$match takes a filter document, not %T", arg)
		}
		f, err := query.CompileFilter(m)
		if err != nil {
			return st, fmt.Errorf("$match: %w", err)
		}
		st.kind, st.filter = stageMatch, f
	case "$project":
		return compileProject(arg)
	case "$addFields", "$set":
		m, ok := codec.AsDocument(arg)
		if !ok || len(m) == 0 {
			return st, fmt.Errorf("%s takes a non-empty document of fields, not %v", name, arg)
		}
		st.kind = stageAddFields
		for _, path := range query.SortedKeys(m) {
			if err := checkStagePath(name, path); err != nil {
				return st, err
			}
			e, err := query.CompileExpr(m[path])
			if err != nil {
				return st, fmt.Errorf("%s: field %q: %w", name, path, err)
			}
			st.computed = append(st.computed, computedField{path, e})
		}
	case "$unset":
		st.kind = stageUnset
		switch x := arg.(type) {
		case string:
			st.paths = []string{x}
		default:
			elems, ok := codec.ArrayElements(arg)
			if !ok || len(elems) == 0 {
				return st, fmt.Errorf("$unset takes a field path or a non-empty array of them, not %v", arg)
			}
			for _, e := range elems {
				s, ok := e.(string)
				if !ok {
					return st, fmt.Errorf("$unset: %v is not a field path", e)
				}
				st.paths = append(st.paths, s)
			}
		}
		for _, p := range st.paths {
			if err := checkStagePath(name, p); err != nil {
				return st, err
			}
		}
	case "$replaceRoot", "$replaceWith":
		newRoot := arg
		if name == "$replaceRoot" {
			m, ok := codec.AsDocument(arg)
			if !ok || len(m) != 1 || m["newRoot"] == nil {
				return st, fmt.Errorf("$replaceRoot takes {newRoot: <expression>}, not %v", arg)
			}
			newRoot = m["newRoot"]
		}
		e, err := query.CompileExpr(newRoot)
		if err != nil {
			return st, fmt.Errorf("%s: %w", name, err)
		}
		st.kind, st.root = stageReplaceRoot, e
	case "$redact":
		return st, fmt.Errorf("$redact is not supported by ttldb (MongoDB allows it in change streams)")
	default:
		return st, fmt.Errorf("stage %s is not allowed in a change stream: MongoDB allows $match, $project, $addFields, $set, $unset, $replaceRoot, $replaceWith (and $redact)", name)
	}
	return st, nil
}

// checkStagePath refuses a path a stage would write that is _id or in it.
func checkStagePath(stage, path string) error {
	if path == "" || strings.HasPrefix(path, "$") {
		return fmt.Errorf("%s: field path %q", stage, path)
	}
	if path == "_id" || strings.HasPrefix(path, "_id.") {
		return fmt.Errorf("%s of %q is refused: %s", stage, path, errToken)
	}
	return nil
}

// compileProject compiles $project: fields of 0/1/true/false (query's
// projection) and, in inclusion mode, computed fields.
func compileProject(arg any) (changeStage, error) {
	st := changeStage{kind: stageProject, name: "$project"}
	m, ok := codec.AsDocument(arg)
	if !ok || len(m) == 0 {
		return st, fmt.Errorf("$project takes a non-empty document, not %v", arg)
	}
	flags := Document{}
	for _, path := range query.SortedKeys(m) {
		v := m[path]
		if isProjectFlag(v) {
			flags[path] = v
			continue
		}
		if err := checkStagePath("$project", path); err != nil {
			return st, err
		}
		e, err := query.CompileExpr(v)
		if err != nil {
			return st, fmt.Errorf("$project: field %q: %w", path, err)
		}
		st.computed = append(st.computed, computedField{path, e})
	}
	if v, ok := flags["_id"]; ok && !projectFlagOn(v) {
		return st, fmt.Errorf("$project {_id: 0} is refused: %s", errToken)
	}
	if len(st.computed) > 0 {
		for path, v := range flags {
			if path != "_id" && !projectFlagOn(v) {
				return st, fmt.Errorf("$project: field %q: exclusion with computed fields", path)
			}
		}
		if len(flags) == 0 {
			flags["_id"] = 1 // inclusion of the computed fields and _id only
		}
	}
	proj, err := query.CompileProjection(flags)
	if err != nil {
		return st, fmt.Errorf("$project: %w", err)
	}
	st.proj = proj
	return st, nil
}

// isProjectFlag reports whether a $project value is an inclusion or
// exclusion (a boolean or a number) rather than an expression.
func isProjectFlag(v any) bool {
	if _, ok := v.(bool); ok {
		return true
	}
	_, ok := query.ToNumber(v)
	return ok
}

// projectFlagOn reports whether a $project flag includes.
func projectFlagOn(v any) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	n, _ := query.ToNumber(v)
	return n.Float() != 0
}

// apply runs the pipeline over an event's document (which it may change).
// It returns the result and whether the event passed every $match; an
// error when a stage's result lost the event's _id or changed it.
func (p *changePipeline) apply(doc Document) (Document, bool, error) {
	id := doc["_id"]
	for i := range p.stages {
		st := &p.stages[i]
		switch st.kind {
		case stageMatch:
			if !st.filter.Matches(doc) {
				return nil, false, nil
			}
		case stageProject:
			out := st.proj.Apply(doc)
			for _, f := range st.computed {
				if v, ok := f.expr.Eval(doc); ok {
					query.SetPath(out, f.path, codec.CopyValue(v))
				}
			}
			doc = out
		case stageAddFields:
			vals := make([]any, len(st.computed))
			found := make([]bool, len(st.computed))
			for j, f := range st.computed { // every one against the input
				vals[j], found[j] = f.expr.Eval(doc)
				if found[j] {
					vals[j] = codec.CopyValue(vals[j])
				}
			}
			for j, f := range st.computed {
				if found[j] {
					query.SetPath(doc, f.path, vals[j])
				} else {
					query.UnsetPath(doc, f.path)
				}
			}
		case stageUnset:
			for _, path := range st.paths {
				query.UnsetPath(doc, path)
			}
		case stageReplaceRoot:
			v, ok := st.root.Eval(doc)
			m, isDoc := codec.AsDocument(v)
			if !ok || !isDoc {
				return nil, false, fmt.Errorf("%w: change stream pipeline: %s must give a document, not %v", ErrInvalidOptions, st.name, v)
			}
			doc = codec.CopyDocument(m)
		}
	}
	if got, ok := doc["_id"]; !ok || !query.Equal(got, id) {
		return nil, false, fmt.Errorf("%w: change stream pipeline: an event's _id was removed or changed by the pipeline: %s", ErrInvalidOptions, errToken)
	}
	return doc, true, nil
}
