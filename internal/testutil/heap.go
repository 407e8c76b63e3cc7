package testutil

import "runtime"

// HeapAlloc returns the bytes of live heap after two collections: the
// second frees what the first's finalizers released, so that memory tests
// compare live data, not garbage not yet collected.
func HeapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
