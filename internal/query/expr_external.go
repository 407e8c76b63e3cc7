package query

// RegisterListOperator registers an expression operator computed by
// another package from its arguments' values (Missing included), taking
// any number of positional arguments: the expression forms of the
// accumulators ($sum, $avg, $min, $max, $stdDevPop, $stdDevSamp), which
// internal/aggregate owns and registers from its init. A name registered
// twice is a programming error (a panic at init).
func RegisterListOperator(name string, f func(op string, vals []any) (any, error)) {
	registerOps(map[string]opCompiler{name: fn(0, -1, f)})
}
