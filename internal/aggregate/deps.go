package aggregate

import (
	"slices"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// Dependencies lists the top-level fields of the input documents that
// the stages of pipeline (stage documents as given) from index from on
// may read, so that the reader feeding them decodes only those. all is
// true when they may read whole documents: the stream reaches the caller
// (no stage replaces the documents by new ones: $group, $project in
// inclusion mode, $replaceRoot, $count...), or a stage reads anything
// ($$ROOT, $lookup's output, $unionWith...). The analysis only
// over-counts: a field it leaves out is one no stage reads.
func Dependencies(pipeline []any, from int) (fields []string, all bool) {
	need := map[string]bool{}
	add := func(f string) { need[f] = true }
	// Walk back from the end: all is what the stages after i need.
	all = true
	for i := len(pipeline) - 1; i >= from; i-- {
		name, arg, err := stageParts(pipeline[i])
		if err != nil {
			return nil, true
		}
		arg, err = codec.ExprValue(arg)
		if err != nil {
			return nil, true
		}
		switch name {
		case "$group", "$bucket":
			// A barrier: its output is new documents.
			clear(need)
			all = false
			m, ok := codec.AsDocument(arg)
			if !ok {
				return nil, true
			}
			for k, v := range m {
				if k == "output" { // $bucket's accumulators
					if query.ExprFields(v, add) {
						return nil, true
					}
					continue
				}
				if query.ExprFields(v, add) {
					return nil, true
				}
			}
		case "$sortByCount", "$replaceRoot", "$replaceWith":
			clear(need)
			all = false
			if query.ExprFields(arg, add) {
				return nil, true
			}
		case "$count":
			clear(need)
			all = false
		case "$project":
			m, ok := codec.AsDocument(arg)
			if !ok {
				return nil, true
			}
			if projectIncludes(m) {
				clear(need)
				all = false
				need["_id"] = true // kept unless excluded: decoding it is harmless
			}
			for k, v := range m {
				add(strings.SplitN(k, ".", 2)[0])
				if query.ExprFields(v, add) {
					return nil, true
				}
			}
		case "$match":
			if filterFields(arg, add) {
				return nil, true
			}
		case "$addFields", "$set":
			m, ok := codec.AsDocument(arg)
			if !ok {
				return nil, true
			}
			for _, v := range m {
				if query.ExprFields(v, add) {
					return nil, true
				}
			}
		case "$unset", "$limit", "$skip":
		case "$sort":
			m, ok := codec.AsDocument(arg)
			if !ok {
				return nil, true
			}
			for k := range m {
				add(strings.SplitN(k, ".", 2)[0])
			}
		case "$unwind":
			path := arg
			if m, ok := codec.AsDocument(arg); ok {
				path = m["path"]
			}
			if query.ExprFields(path, add) {
				return nil, true
			}
		case "$lookup":
			m, ok := codec.AsDocument(arg)
			if !ok {
				return nil, true
			}
			if query.ExprFields("$"+stringOf(m["localField"]), add) {
				return nil, true
			}
		default:
			return nil, true
		}
	}
	if all {
		return nil, true
	}
	for f := range need {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	return fields, false
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// projectIncludes reports whether a $project is in inclusion mode: some
// field is included or computed (an exclusion of _id alone aside).
func projectIncludes(m map[string]any) bool {
	for k, v := range m {
		switch x := v.(type) {
		case bool:
			if x {
				return true
			}
			continue
		}
		if n, ok := query.ToNumber(v); ok {
			if n.Float() != 0 {
				return true
			}
			continue
		}
		if k != "_id" || v != nil {
			return true // a computed field
		}
	}
	return false
}

// filterFields lists the top-level fields a filter reads; true when it
// may read anything.
func filterFields(v any, add func(string)) bool {
	m, ok := codec.AsDocument(v)
	if !ok {
		return true
	}
	for k, sub := range m {
		switch {
		case k == "$and" || k == "$or" || k == "$nor":
			elems, ok := codec.ArrayElements(sub)
			if !ok {
				return true
			}
			for _, el := range elems {
				if filterFields(el, add) {
					return true
				}
			}
		case k == "$expr":
			if query.ExprFields(sub, add) {
				return true
			}
		case k == "$comment":
		case strings.HasPrefix(k, "$"):
			return true
		default:
			add(strings.SplitN(k, ".", 2)[0])
		}
	}
	return false
}
