// Package heapstat measures the live heap, for the bench and for the tests
// that bound what a structure keeps at rest. It is for measuring only:
// nothing decides by it.
//
// See docs/performance.md#a-fleets-life-tether-bench.
package heapstat
