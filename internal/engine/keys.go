package engine

// IndexKey is one field of an index key or a sort specification: a dotted
// field path and a direction, 1 for ascending or -1 for descending.
type IndexKey struct {
	Field string // dotted path, e.g. "lastModifiedDate" or "user.name"
	Order int    // 1 ascending, -1 descending
}

// Asc returns the ascending key on field.
func Asc(field string) IndexKey { return IndexKey{Field: field, Order: 1} }

// Desc returns the descending key on field.
func Desc(field string) IndexKey { return IndexKey{Field: field, Order: -1} }
