package aggregate

import "slices"

// StageNames returns the names of the stages Compile knows, sorted: the
// README's table is checked against it.
func StageNames() []string {
	var out []string
	for name := range stages {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
