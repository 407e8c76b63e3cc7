package query

import "slices"

// ExprOperatorNames returns the names of the expression operators ttldb
// knows ($literal included), sorted: the README's table is checked
// against it.
func ExprOperatorNames() []string {
	out := []string{"$literal"}
	for name := range exprOps {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
