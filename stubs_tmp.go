package ttldb

// Temporary stand-ins until the real files are merged.
type filter struct{}

func compileFilter(f map[string]any) (*filter, error) { return nil, nil }
func (f *filter) matches(doc map[string]any) bool     { return true }
