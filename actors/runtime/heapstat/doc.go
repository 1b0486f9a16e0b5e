// Package heapstat measures the live heap, for the bench and for the tests
// that bound what a structure keeps at rest.
package heapstat
