package query

// Comparison operators: $eq, $ne, $gt, $gte, $lt, $lte and $cmp. They
// compare any two values in BSON order (numbers across types), with the
// aggregation's rule for a missing value: it is less than null, and
// equal only to another missing one ({$eq: ["$nofield", null]} is
// false).

func init() {
	registerOps(map[string]opCompiler{
		"$eq":  fn(2, 2, evalCompare),
		"$ne":  fn(2, 2, evalCompare),
		"$gt":  fn(2, 2, evalCompare),
		"$gte": fn(2, 2, evalCompare),
		"$lt":  fn(2, 2, evalCompare),
		"$lte": fn(2, 2, evalCompare),
		"$cmp": fn(2, 2, evalCompare),
	})
}

func evalCompare(op string, vals []any) (any, error) {
	c := aggCompare(vals[0], vals[1])
	switch op {
	case "$eq":
		return c == 0, nil
	case "$ne":
		return c != 0, nil
	case "$gt":
		return c > 0, nil
	case "$gte":
		return c >= 0, nil
	case "$lt":
		return c < 0, nil
	case "$lte":
		return c <= 0, nil
	}
	return int32(c), nil
}
