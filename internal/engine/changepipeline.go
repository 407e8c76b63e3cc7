package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ttldb/ttldb/internal/aggregate"
	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// A change stream's pipeline (Watch's pipeline argument), as the driver's
// Watch takes it: the stages MongoDB allows in a change stream ($match,
// $project, $addFields/$set, $unset, $replaceRoot/$replaceWith, $redact),
// over the event as a document (ChangeEvent's MarshalJSON form: _id,
// operationType, clusterTime, wallTime, ns, documentKey,
// updateDescription, fullDocument, fullDocumentBeforeChange,
// operationDescription, and ttldb's expired, index, cutoff). The stages
// are the aggregation pipeline's (internal/aggregate), with the whole
// expression language; $$NOW is the time Watch was called. A stage that
// removes or changes _id, the resume token, is refused at Watch when the
// stage says so ({_id: 0}, $unset: "_id", a computed _id), and ends the
// stream when an event shows it ($replaceRoot to a document whose _id
// differs, an expression that fails on an event), as MongoDB does: a
// stream whose events lost their token could not resume.

// MaxPipelineStages bounds the stages of a change stream's pipeline.
const MaxPipelineStages = 100

// changePipeline is a compiled pipeline. reshapes is set when a stage
// changes the event's shape (any stage but $match): ChangeStream.Current
// and Decode then give the reshaped document.
type changePipeline struct {
	p        *aggregate.Pipeline
	reshapes bool
}

// changeStages are the stages MongoDB allows in a change stream.
var changeStages = map[string]bool{
	"$match": true, "$project": true, "$addFields": true, "$set": true, "$unset": true,
	"$replaceRoot": true, "$replaceWith": true, "$redact": true,
}

// compileChangePipeline compiles Watch's pipeline (nil for none); now is
// $$NOW.
func compileChangePipeline(pipeline any, now time.Time) (*changePipeline, error) {
	stages, err := pipelineArg("Watch", pipeline)
	if err != nil || len(stages) == 0 {
		return nil, err
	}
	if len(stages) > MaxPipelineStages {
		return nil, fmt.Errorf("%w: Watch: the pipeline has %d stages, more than %d", ErrInvalidOptions, len(stages), MaxPipelineStages)
	}
	cp := &changePipeline{}
	for i, raw := range stages {
		d, err := documentArg(fmt.Sprintf("pipeline stage %d", i), raw, ErrInvalidOptions)
		if err != nil {
			return nil, fmt.Errorf("Watch: %w", err)
		}
		if err := checkChangeStage(d); err != nil {
			return nil, fmt.Errorf("%w: Watch: pipeline stage %d: %w", ErrInvalidOptions, i, err)
		}
		for name := range d {
			cp.reshapes = cp.reshapes || name != "$match"
		}
	}
	p, err := aggregate.Compile(stages, aggregate.Options{Now: now})
	if err != nil {
		return nil, fmt.Errorf("Watch: %w", err)
	}
	cp.p = p
	return cp, nil
}

// errToken is why a stage that changes _id is refused.
const errToken = "it would remove or change _id, the event's resume token"

// checkChangeStage refuses a stage MongoDB does not allow in a change
// stream, and one that says it removes or changes _id.
func checkChangeStage(d Document) error {
	if len(d) != 1 {
		return fmt.Errorf("a stage is a document with one field, the stage's name; this one has %d", len(d))
	}
	var name string
	var arg any
	for k, v := range d {
		name, arg = k, v
	}
	if !changeStages[name] {
		return fmt.Errorf("stage %s is not allowed in a change stream: MongoDB allows $match, $project, $addFields, $set, $unset, $replaceRoot, $replaceWith and $redact", name)
	}
	arg, err := codec.ExprValue(arg)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	switch name {
	case "$project":
		m, ok := codec.AsDocument(arg)
		if !ok {
			return nil // the stage's compiler says what is wrong
		}
		for path, v := range m {
			if path != "_id" && !strings.HasPrefix(path, "_id.") {
				continue
			}
			if isProjectFlag(v) {
				if !projectFlagOn(v) {
					return fmt.Errorf("$project {%s: 0} is refused: %s", path, errToken)
				}
				continue
			}
			return fmt.Errorf("$project of a computed %q is refused: %s", path, errToken)
		}
	case "$addFields", "$set":
		m, ok := codec.AsDocument(arg)
		if !ok {
			return nil
		}
		for path := range m {
			if err := checkStagePath(name, path); err != nil {
				return err
			}
		}
	case "$unset":
		paths := []any{arg}
		if elems, ok := codec.ArrayElements(arg); ok {
			paths = elems
		}
		for _, p := range paths {
			if s, ok := p.(string); ok {
				if err := checkStagePath(name, s); err != nil {
					return err
				}
			}
		}
	}
	return nil
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

// apply runs the pipeline over an event's document. It returns the
// result and whether the event passed every stage; an error when a stage
// failed on the event or its result lost the event's _id or changed it.
func (cp *changePipeline) apply(doc Document) (Document, bool, error) {
	id := doc["_id"]
	ctx := context.Background()
	out, err := cp.p.Run(ctx, nil, &aggregate.SliceStream{Docs: []Document{doc}}, 0).Next(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("change stream pipeline: %w", err)
	}
	if out == nil {
		return nil, false, nil
	}
	if got, ok := out["_id"]; !ok || !query.Equal(got, id) {
		return nil, false, fmt.Errorf("%w: change stream pipeline: an event's _id was removed or changed by the pipeline: %s", ErrInvalidOptions, errToken)
	}
	return out, true, nil
}
