package heapstat

import (
	"runtime"
	"runtime/debug"
	"testing"
)

var sink []byte

// TestLiveCountsMarkedNotAllocatedSince: what is allocated after the last
// collection does not count until a collection finds it live (HeapAlloc,
// which the bench read before, counts it at once: a fleet's busy agents
// inflated the heap at rest up to twofold); Live then counts it.
func TestLiveCountsMarkedNotAllocatedSince(t *testing.T) {
	const size = 64 << 20
	// No collection but Live's: one started by the allocation would mark it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := Live()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	sink = make([]byte, size)
	runtime.ReadMemStats(&m1)
	if grew := m1.HeapAlloc - m0.HeapAlloc; grew < size-size/64 {
		t.Fatalf("HeapAlloc grew by %d bytes after a %d-byte allocation", grew, size)
	}
	if got := marked(); got >= before+size/2 {
		t.Errorf("marked = %d right after a %d-byte allocation, from %d: counts what no collection marked", got, size, before)
	}
	if got := Live(); got < before+size {
		t.Errorf("Live = %d with %d more bytes live, from %d", got, size, before)
	}
	sink = nil
	if got := Live(); got >= before+size/2 {
		t.Errorf("Live = %d after the %d bytes were dropped, from %d", got, size, before)
	}
}
