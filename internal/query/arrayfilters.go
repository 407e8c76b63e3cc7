package query

import (
	"fmt"
	"strings"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// Array update operators, as MongoDB's: in an update path, "$[]" stands
// for every element of the array there, and "$[id]" for the elements that
// the array filter named id matches (UpdateOptions.ArrayFilters: one
// filter per identifier, whose field paths start with it: {"id": {$gt:
// 5}}, {"id.grade": {$gte: 85}}). They nest ("a.$[i].b.$[j]") and work
// in every operator but $rename. The plain positional "$" (the element
// the query matched) is not supported and is refused.

// arrayFilters maps an identifier to its compiled filter, which matches
// the document {id: element}.
type arrayFilters map[string]*Filter

// positional reports whether a path component is an array update
// operator, and its identifier ("" for "$[]").
func positional(p string) (id string, ok bool) {
	if len(p) >= 3 && p[0] == '$' && p[1] == '[' && p[len(p)-1] == ']' {
		return p[2 : len(p)-1], true
	}
	return "", false
}

// validIdentifier is MongoDB's rule: a lowercase letter, then letters and
// digits.
func validIdentifier(id string) bool {
	if id == "" || id[0] < 'a' || id[0] > 'z' {
		return false
	}
	for i := 1; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// elementMatches reports whether the array filter id (nil for "$[]")
// matches element e.
func (af arrayFilters) elementMatches(id string, e any) bool {
	if id == "" {
		return true
	}
	return af[id].Matches(codec.Document{id: e})
}

// compileArrayFilters compiles UpdateOptions.ArrayFilters: each a filter
// document (a Document, bson.D, bson.M…) naming exactly one identifier,
// no identifier twice.
func compileArrayFilters(list []any) (arrayFilters, error) {
	af := make(arrayFilters, len(list))
	for i, raw := range list {
		v, err := codec.ExprValue(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: array filter %d: %w", errs.ErrInvalidUpdate, i, err)
		}
		doc, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: array filter %d must be a document, not %s", errs.ErrInvalidUpdate, i, describeType(raw))
		}
		id, err := filterIdentifier(doc)
		if err != nil {
			return nil, fmt.Errorf("%w: array filter %d: %w", errs.ErrInvalidUpdate, i, err)
		}
		if _, dup := af[id]; dup {
			return nil, fmt.Errorf("%w: found multiple array filters with the identifier %q", errs.ErrInvalidUpdate, id)
		}
		f, err := CompileFilter(doc)
		if err != nil {
			return nil, fmt.Errorf("%w: array filter %d: %w", errs.ErrInvalidUpdate, i, err)
		}
		af[id] = f
	}
	return af, nil
}

// filterIdentifier returns the one identifier an array filter's field
// paths start with ($and, $or and $nor looked into).
func filterIdentifier(doc map[string]any) (string, error) {
	var id string
	var walk func(m map[string]any) error
	walk = func(m map[string]any) error {
		for _, k := range SortedKeys(m) {
			switch k {
			case "$and", "$or", "$nor":
				elems, _ := codec.ArrayElements(m[k])
				for _, e := range elems {
					if sub, ok := e.(map[string]any); ok {
						if err := walk(sub); err != nil {
							return err
						}
					}
				}
				continue
			}
			if strings.HasPrefix(k, "$") {
				return fmt.Errorf("operator %s at the top level: an array filter's fields start with its identifier", k)
			}
			head, _, _ := strings.Cut(k, ".")
			if !validIdentifier(head) {
				return fmt.Errorf("the identifier %q must begin with a lowercase letter and contain only letters and digits", head)
			}
			if id != "" && id != head {
				return fmt.Errorf("expected a single identifier, found %q and %q", id, head)
			}
			id = head
		}
		return nil
	}
	if err := walk(doc); err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("an array filter needs a field starting with its identifier")
	}
	return id, nil
}

// CompileUpdateWithArrayFilters is CompileUpdate with MongoDB's
// arrayFilters: every identifier an update path uses ("$[id]") needs one
// filter, and every filter must be used; a "$[id]" path without
// arrayFilters is refused likewise. Errors wrap errs.ErrInvalidUpdate.
func CompileUpdateWithArrayFilters(u map[string]any, filters []any) (*Update, error) {
	upd, err := compileUpdateOps(u)
	if err != nil {
		return nil, err
	}
	af, err := compileArrayFilters(filters)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, op := range upd.ops {
		for _, p := range op.parts {
			if id, ok := positional(p); ok && id != "" {
				if _, has := af[id]; !has {
					return nil, fmt.Errorf("%w: %s %q: no array filter found for the identifier %q", errs.ErrInvalidUpdate, op.name, op.path, id)
				}
				used[id] = true
			}
		}
	}
	for _, id := range SortedKeys(anyMap(af)) {
		if !used[id] {
			return nil, fmt.Errorf("%w: the array filter for the identifier %q was not used in the update", errs.ErrInvalidUpdate, id)
		}
	}
	if len(af) > 0 {
		upd.filters = af
	}
	return upd, nil
}

func anyMap(af arrayFilters) map[string]any {
	m := make(map[string]any, len(af))
	for k, v := range af {
		m[k] = v
	}
	return m
}
