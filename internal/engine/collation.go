package engine

import "fmt"

// Collation is the driver's options.Collation: language-specific rules for
// comparing strings. ttldb compares strings by their UTF-8 bytes, which
// is MongoDB's "simple" collation, and refuses any other: a Collation that
// is nil, or whose Locale is "simple" with no other field set, is
// accepted; any other is an ErrInvalidOptions error, and the call reads
// and changes nothing. (Honouring one would need every string comparison
// of filters, sorts and indexes to go through a collator, and an index
// built for each collation.)
type Collation struct {
	Locale          string // "simple", or a locale such as "en_US"
	CaseLevel       bool
	CaseFirst       string
	Strength        int
	NumericOrdering bool
	Alternate       string
	MaxVariable     string
	Normalization   bool
	Backwards       bool
}

// checkCollation accepts nil and the simple collation (see Collation).
func checkCollation(coll string, c *Collation) error {
	if c == nil || *c == (Collation{Locale: "simple"}) {
		return nil
	}
	return fmt.Errorf("%w: collection %q: collation %+v: ttldb compares strings by their bytes (the \"simple\" collation) and supports no other", ErrInvalidOptions, coll, *c)
}
