package ttldb

import "time"

// Temporary stand-ins until the real files are merged.
type filter struct{}

func compileFilter(f map[string]any) (*filter, error) { return nil, nil }
func (f *filter) matches(doc map[string]any) bool     { return true }

type update struct{}

func compileUpdate(u map[string]any) (*update, error) { return nil, nil }
func (u *update) apply(doc Document, now time.Time) (Document, bool, error) {
	return doc, false, nil
}
func upsertSeed(filter map[string]any) (Document, error) { return Document{}, nil }
func validateReplacement(r map[string]any) error         { return nil }

type projection struct{}

func compileProjection(p map[string]any) (*projection, error) { return nil, nil }
func (p *projection) apply(doc Document) Document             { return doc }
func compileSort(keys []IndexKey) error                       { return nil }
func compareForSort(a, b Document, keys []IndexKey) int       { return 0 }


type TTLValueForms int

const (
	TTLValuesDatesAndArango TTLValueForms = iota
	TTLValuesDatesOnly
)

func ttlDate(vals []any, forms TTLValueForms) (time.Time, bool) {
	for _, v := range vals {
		if t, ok := v.(time.Time); ok {
			return t, true
		}
	}
	return time.Time{}, false
}
