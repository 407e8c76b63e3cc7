package ttldb

// ThreadCPU is threadCPU for the benchmarks of package ttldb_test.
var ThreadCPU = threadCPU
