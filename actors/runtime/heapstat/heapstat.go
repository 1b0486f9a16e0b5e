package heapstat

import (
	"runtime"
	"runtime/metrics"
)

// liveMetric is the heap the last collection marked live.
const liveMetric = "/gc/heap/live:bytes"

// Live returns the bytes of live heap objects after two collections (the
// second frees what the first's finalizers and sweeps left): the bytes the
// second marked. Not HeapAlloc: that also counts whatever other goroutines
// allocated since the mark, and where they are busy (a fleet's agents
// heartbeating, a sync pass) it read up to twice the live heap.
func Live() uint64 {
	runtime.GC()
	runtime.GC()
	return marked()
}

// marked returns the bytes the last collection marked live.
func marked() uint64 {
	s := []metrics.Sample{{Name: liveMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return s[0].Value.Uint64()
	}
	var m runtime.MemStats // a runtime without the metric
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
