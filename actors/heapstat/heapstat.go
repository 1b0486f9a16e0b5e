// Package heapstat measures the live heap, for the bench and for the tests
// that bound what a structure keeps at rest.
package heapstat

import "runtime"

// Live returns the bytes of live heap objects after two collections (the
// second frees what the first's finalizers and sweeps left).
func Live() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
