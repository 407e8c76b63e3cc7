package engine

import "github.com/ttldb/ttldb/internal/ttlvalue"

// TTLValueForms says which values a TTL index reads as dates
// (ttlvalue.Forms, re-exported by ttldb).
type TTLValueForms = ttlvalue.Forms

// The TTL value forms (ttlvalue.DatesAndArango, ttlvalue.DatesOnly).
const (
	TTLValuesDatesAndArango = ttlvalue.DatesAndArango
	TTLValuesDatesOnly      = ttlvalue.DatesOnly
)
