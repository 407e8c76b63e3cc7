package aggregate

import "slices"

// StageNames returns the names of the stages Compile runs, sorted: the
// README's table is checked against it.
func StageNames() []string {
	var out []string
	for name := range stages {
		if !slices.Contains(unsupportedStages, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// UnsupportedStageNames returns the stages Compile knows of and refuses
// (not supported yet), sorted.
func UnsupportedStageNames() []string {
	out := slices.Clone(unsupportedStages)
	slices.Sort(out)
	return out
}

// AccumulatorNames returns the accumulators $group and $bucket take,
// sorted.
func AccumulatorNames() []string {
	var out []string
	for name := range accumulators {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
