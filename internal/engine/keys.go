package engine

// IndexKey is one field of an index key or a sort specification: a dotted
// field path and a direction, 1 for ascending or -1 for descending.
type IndexKey struct {
	Field string // dotted path, e.g. "lastModifiedDate" or "user.name"
	Order int    // 1 ascending, -1 descending
}

// Asc implements ttldb.Asc, whose documentation is the contract.
func Asc(field string) IndexKey { return IndexKey{Field: field, Order: 1} }

// Desc implements ttldb.Desc, whose documentation is the contract.
func Desc(field string) IndexKey { return IndexKey{Field: field, Order: -1} }
